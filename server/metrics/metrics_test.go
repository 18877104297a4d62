package metrics

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// value returns the value of a counter or gauge.
func value(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatal("not a counter or gauge")
	return 0
}

// count returns the number of series a collector has.
func count(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 1000)
	c.Collect(ch)
	close(ch)
	return len(ch)
}

func openDB(t *testing.T) *caskade.DB {
	t.Helper()
	db, err := caskade.Open(t.TempDir(), &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestCommands(t *testing.T) {
	m := New(nil)
	m.RegisterCommands(ProtocolRedis, "get", "set")
	m.RegisterCommands(ProtocolRedis, "get") // twice is harmless
	m.ObserveCommand(ProtocolRedis, "get", time.Millisecond, false)
	m.ObserveCommand(ProtocolRedis, "get", 2*time.Millisecond, true)
	m.ObserveCommand(ProtocolRedis, "flushall", time.Millisecond, false) // not registered
	m.ObserveCommand(ProtocolRedis, "\x00evil", time.Millisecond, true)  // client input
	m.ObserveCommand("gopher", "get", time.Millisecond, false)           // unknown protocol
	h := m.Command(ProtocolRedis, "set")
	h.Observe(time.Microsecond, false)

	for _, tc := range []struct {
		proto, cmd  string
		calls, errs float64
	}{
		{ProtocolRedis, "get", 2, 1},
		{ProtocolRedis, "set", 1, 0},
		{ProtocolRedis, Unknown, 2, 1},
		{Unknown, Unknown, 1, 0},
	} {
		if got := value(t, m.commands.WithLabelValues(tc.proto, tc.cmd)); got != tc.calls {
			t.Errorf("%s %s calls = %v, want %v", tc.proto, tc.cmd, got, tc.calls)
		}
		if got := value(t, m.errors.WithLabelValues(tc.proto, tc.cmd)); got != tc.errs {
			t.Errorf("%s %s errors = %v, want %v", tc.proto, tc.cmd, got, tc.errs)
		}
	}
	// Cardinality stays bounded: only declared names and "unknown".
	// redis get, set and unknown, and the unknown command of each of the
	// other protocols (created by New): nothing else.
	if n := count(m.commands); n != 6 {
		t.Errorf("%d command series", n)
	}
}

func TestConnections(t *testing.T) {
	m := New(nil)
	m.ConnOpened(ProtocolMemcache)
	m.ConnOpened(ProtocolMemcache)
	m.ConnClosed(ProtocolMemcache)
	m.ConnRejected(ProtocolMemcache)
	if got := value(t, m.conns.WithLabelValues(ProtocolMemcache)); got != 1 {
		t.Errorf("open = %v", got)
	}
	if got := value(t, m.connsTotal.WithLabelValues(ProtocolMemcache)); got != 2 {
		t.Errorf("total = %v", got)
	}
	if got := value(t, m.connsRejected.WithLabelValues(ProtocolMemcache)); got != 1 {
		t.Errorf("rejected = %v", got)
	}
}

func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.RegisterCommands(ProtocolHTTP, "x")
	m.ObserveCommand(ProtocolHTTP, "x", time.Second, true)
	m.Command(ProtocolHTTP, "x").Observe(time.Second, false)
	m.ConnOpened(ProtocolHTTP)
	m.ConnClosed(ProtocolHTTP)
	m.ConnRejected(ProtocolHTTP)
	if m.Registry() != nil {
		t.Fatal("nil Metrics has a registry")
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 404 {
		t.Fatalf("nil Metrics handler: %d", rec.Code)
	}
}

func TestDBCollectorAndHandler(t *testing.T) {
	db := openDB(t)
	m := New(db)
	for _, k := range []string{"a", "b", "c"} {
		if err := db.Set([]byte(k), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Set([]byte("a"), []byte("again")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Expire([]byte("b"), time.Hour); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		"caskade_db_keys 3\n",
		"caskade_db_expiring_keys 1\n",
		"caskade_db_watches 0\n",
		"caskade_db_writes_stopped 0\n",
		"caskade_db_merge_running 0\n",
		"caskade_merge_input_bytes_total 0\n",
		"caskade_merge_duration_seconds_count 0\n",
		"caskade_sync_errors_total 0\n",
		"caskade_db_keydir_compactions_total 0\n",
		"caskade_db_commits_total 5\n", // one apiece: nothing ran concurrently
		"caskade_db_commit_groups_total 5\n",
		"caskade_db_expired_keys_total 0\n",
		"caskade_db_merges_total 0\n",
		"caskade_db_merge_failures 0\n",
		"caskade_db_last_merge_duration_seconds 0\n",
		"caskade_db_keydir_key_bytes ",
		"caskade_db_keydir_dead_bytes ",
		"go_goroutines ",
		"process_open_fds ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	st := db.Stats()
	if !strings.Contains(body, "caskade_db_dead_bytes ") || st.DeadBytes == 0 {
		t.Errorf("dead bytes not reported (stats %d)", st.DeadBytes)
	}
	// Merges and fsyncs are the engine's, read at scrape time.
	ms, err := db.Merge(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("d"), []byte("v")); err != nil { // a new active file, which Sync syncs
		t.Fatal(err)
	}
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body = rec.Body.String()
	for _, want := range []string{
		"caskade_db_merges_total 1\n",
		"caskade_merge_duration_seconds_count 1\n",
		fmt.Sprintf("caskade_merge_input_bytes_total %d\n", ms.InputBytes),
		fmt.Sprintf("caskade_merge_records_total %d\n", ms.Records),
		"caskade_sync_errors_total 0\n",
		`caskade_sync_duration_seconds_bucket{le="+Inf"} `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape after a merge and a sync lacks %q", want)
		}
	}
	if strings.Contains(body, "caskade_sync_duration_seconds_count 0\n") {
		t.Error("the sync is not counted")
	}
	// Two Metrics in one process do not collide (no global registry).
	m2 := New(db)
	m2.ObserveCommand(ProtocolHTTP, Unknown, time.Second, false)
	if value(t, m.commands.WithLabelValues(ProtocolHTTP, Unknown)) != 0 {
		t.Fatal("metrics shared between instances")
	}
}
