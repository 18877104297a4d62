package redis

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/metrics"
)

// infoSection returns the fields of an INFO section.
func infoSection(t *testing.T, c *rawConn, section string) map[string]string {
	t.Helper()
	c.send(cmd("INFO", section))
	line := c.readLine()
	var n int
	if _, err := fmt.Sscanf(line, "$%d", &n); err != nil {
		t.Fatalf("INFO reply %q", line)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(c.br, body); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for l := range strings.SplitSeq(string(body), "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// TestInfoPersistence: INFO persistence has every field of Redis 7's
// (with AOF on), and the times and counts follow the merges (our AOF
// rewrites, whichever started them) and backups (our RDB saves).
func TestInfoPersistence(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.BackupDir = t.TempDir() })
	c := ts.dial()
	info := infoSection(t, c, "persistence")
	for _, f := range strings.Fields(`loading async_loading current_cow_peak current_cow_size
		current_cow_size_age current_fork_perc current_save_keys_processed current_save_keys_total
		rdb_changes_since_last_save rdb_bgsave_in_progress rdb_last_save_time rdb_last_bgsave_status
		rdb_last_bgsave_time_sec rdb_current_bgsave_time_sec rdb_saves rdb_last_cow_size
		rdb_last_load_keys_expired rdb_last_load_keys_loaded aof_enabled aof_rewrite_in_progress
		aof_rewrite_scheduled aof_last_rewrite_time_sec aof_current_rewrite_time_sec
		aof_last_bgrewrite_status aof_rewrites aof_rewrites_consecutive_failures aof_last_write_status
		aof_last_cow_size module_fork_in_progress module_fork_last_cow_size aof_current_size
		aof_base_size aof_pending_rewrite aof_buffer_length aof_pending_bio_fsync aof_delayed_fsync`) {
		if _, ok := info[f]; !ok {
			t.Errorf("INFO persistence lacks %s", f)
		}
	}
	want := func(info map[string]string, field, v string) {
		t.Helper()
		if info[field] != v {
			t.Errorf("%s:%s, want %s", field, info[field], v)
		}
	}
	for f, v := range map[string]string{"aof_last_rewrite_time_sec": "-1", "aof_current_rewrite_time_sec": "-1",
		"aof_rewrites": "0", "rdb_last_bgsave_time_sec": "-1", "rdb_current_bgsave_time_sec": "-1",
		"rdb_saves": "0", "rdb_changes_since_last_save": "0", "aof_rewrite_in_progress": "0"} {
		want(info, f, v)
	}

	c.do(cmd("SET", "k", "1"), "+OK\r\n")
	c.do(cmd("SET", "k", "2"), "+OK\r\n")
	c.do(cmd("SET", "j", "1"), "+OK\r\n")
	info = infoSection(t, c, "persistence")
	want(info, "rdb_changes_since_last_save", "3")
	if n, _ := strconv.Atoi(info["aof_current_size"]); n <= 0 {
		t.Errorf("aof_current_size:%s after writes", info["aof_current_size"])
	}

	c.do(cmd("BGREWRITEAOF"), "+Background append only file rewriting started\r\n")
	waitFor(t, "the merge to finish", func() bool { return infoSection(t, c, "persistence")["aof_rewrites"] == "1" })
	info = infoSection(t, c, "persistence")
	want(info, "aof_last_rewrite_time_sec", "0") // a merge of a few records takes well under a second
	want(info, "aof_current_rewrite_time_sec", "-1")
	want(info, "aof_last_bgrewrite_status", "ok")
	want(info, "aof_rewrites_consecutive_failures", "0")
	// A merge the engine makes by itself counts too.
	if _, err := ts.db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	want(infoSection(t, c, "persistence"), "aof_rewrites", "2")

	c.do(cmd("SAVE"), "+OK\r\n")
	info = infoSection(t, c, "persistence")
	want(info, "rdb_saves", "1")
	want(info, "rdb_last_bgsave_time_sec", "0")
	want(info, "rdb_changes_since_last_save", "0")
	want(info, "rdb_last_bgsave_status", "ok")
}

// TestInfoExpiredKeys: INFO stats' expired_keys counts the keys dropped
// because they expired (here found expired by a DEL), once each, as
// Redis's does.
func TestInfoExpiredKeys(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	ts := startServerOpts(t, &caskade.Options{Sync: caskade.SyncNone, ExpiryPeriod: -1,
		Now: func() time.Time { return time.Unix(0, now.Load()) }})
	c := ts.dial()
	if got := infoSection(t, c, "stats")["expired_keys"]; got != "0" {
		t.Fatalf("expired_keys:%s at start", got)
	}
	c.do(cmd("SET", "k", "v", "PX", "100"), "+OK\r\n")
	now.Add(int64(time.Second))
	c.do(cmd("DEL", "k"), ":0\r\n")
	// The DEL finds k expired and writes nothing; the drop it queues is
	// made by the engine's background worker, after the reply.
	waitFor(t, "expired_keys:1", func() bool { return infoSection(t, c, "stats")["expired_keys"] == "1" })
	c.do(cmd("GET", "k"), "$-1\r\n")
	if got := infoSection(t, c, "stats")["expired_keys"]; got != "1" {
		t.Fatalf("expired_keys:%s after k was dropped and read again, want 1", got)
	}
}

// TestBgrewriteaofInMetrics: the merge BGREWRITEAOF runs shows in
// caskade_merge_duration_seconds and caskade_merge_*, which read the
// engine's merge totals; they stayed at 0 under caskade serve.
func TestBgrewriteaofInMetrics(t *testing.T) {
	var m *metrics.Metrics
	ts := startServer(t, func(s *Server) { m = metrics.New(s.DB); s.Metrics = m })
	c := ts.dial()
	c.do(cmd("SET", "k", "1"), "+OK\r\n")
	c.do(cmd("SET", "k", "2"), "+OK\r\n")
	c.do(cmd("BGREWRITEAOF"), "+Background append only file rewriting started\r\n")
	// The flag INFO reports is cleared only after the merge is recorded.
	waitFor(t, "the merge to finish", func() bool {
		info := infoSection(t, c, "persistence")
		return info["aof_rewrites"] == "1" && info["aof_rewrite_in_progress"] == "0"
	})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{"caskade_merge_duration_seconds_count 1\n", "caskade_merge_records_total 1\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("after BGREWRITEAOF, /metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "caskade_merge_input_bytes_total 0\n") {
		t.Error("after BGREWRITEAOF, caskade_merge_input_bytes_total is 0")
	}
}
