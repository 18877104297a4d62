package redis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade/server/access"
	goredis "github.com/redis/go-redis/v9"
)

// INFO's avg_ttl of a database above 0 averages the keys' TTLs in
// milliseconds. It used time.Duration, which saturates 292 years ahead,
// and summed them in an int64, which overflows with a thousand keys that
// PEXPIREAT set far enough ahead.
func TestInfoAvgTTLFarAhead(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	rdb := ts.goRedis(&goredis.Options{DB: 1})
	const at = 9_000_000_000_000_000 // Unix ms, about the year 287,000
	const n = 1500                   // 1500 * 9e15 overflows an int64
	if _, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i := range n {
			p.Set(ctx, fmt.Sprint("k", i), "v", 0)
			p.Do(ctx, "PEXPIREAT", fmt.Sprint("k", i), at)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := at - time.Now().UnixMilli() // the server's clock reads later: at most this
	info, err := rdb.Info(ctx, "keyspace").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "db1:"); ok {
			var keys, expires, avg int64
			if _, err := fmt.Sscanf(rest, "keys=%d,expires=%d,avg_ttl=%d", &keys, &expires, &avg); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if keys != n || expires != n || avg < want-want/100 || avg > want+1000 { // + float rounding
				t.Fatalf("%q: want keys=expires=%d, avg_ttl about %d", line, n, want)
			}
			return
		}
	}
	t.Fatalf("no db1 line in %q", info)
}

// A SAVE or BGSAVE cut short by a kill leaves a backup directory without
// its manifest; the next one removes it, and nothing else.
func TestSaveRemovesIncompleteBackups(t *testing.T) {
	backups := t.TempDir()
	ts := startServer(t, func(s *Server) { s.BackupDir = backups })
	ctx := context.Background()
	rdb := ts.goRedis(nil)
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	complete, err := readDirNames(backups)
	if err != nil || len(complete) != 1 {
		t.Fatalf("backups after SAVE: %v %v", complete, err)
	}
	killed := "backup-20260101T000000.000000000Z"
	for _, d := range []string{killed, "backup-mine", "other"} {
		if err := os.MkdirAll(filepath.Join(backups, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(backups, d, "0000000001.data"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := readDirNames(backups)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got, killed) || !slices.Contains(got, complete[0]) || !slices.Contains(got, "backup-mine") ||
		!slices.Contains(got, "other") || len(got) != 4 {
		t.Fatalf("backups after the second SAVE: %v (the first: %s)", got, complete[0])
	}
}

// TestConfigSetAllOrNothing checks that a CONFIG SET of several
// parameters changes them all or none, as every front end sees them: the
// access settings, which the memcached and HTTP front ends read on every
// request, showed the new password of "CONFIG SET requirepass x
// maxclients bad" until the bad value rolled it back. The hook runs after
// each parameter is checked, before any is published.
func TestConfigSetAllOrNothing(t *testing.T) {
	type state struct {
		password   string
		protected  bool
		maxClients int
	}
	for _, tc := range []struct {
		args  string
		want  string // the reply
		after state  // from {"", true, 100}
		hooks int    // parameters checked before the reply
	}{
		{"requirepass x maxclients bad",
			"-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer\r\n",
			state{"", true, 100}, 1},
		{"protected-mode no requirepass y timeout -1",
			"-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument must be between 0 and 2147483647 inclusive\r\n",
			state{"", true, 100}, 2},
		{"maxclients 7 requirepass x protected-mode no", "+OK\r\n", state{"x", false, 7}, 3},
		{"requirepass z", "+OK\r\n", state{"z", true, 100}, 1},
	} {
		t.Run(tc.args, func(t *testing.T) {
			acc := access.New("", true) // shared, as caskade serve shares it
			var srv *Server
			var mu sync.Mutex // seen is written on the connection's goroutine
			var seen []string
			testHookConfigStaged = func(param string) {
				// On the connection's goroutine, which holds cfg.mu.
				mu.Lock()
				seen = append(seen, param)
				mu.Unlock()
				pw, prot := acc.Get()
				if got := (state{pw, prot, srv.cfg.maxClients}); got != (state{"", true, 100}) {
					t.Errorf("after %s was checked, the front ends see %+v", param, got)
				}
			}
			t.Cleanup(func() { testHookConfigStaged = nil }) // after the server's cleanup, registered next
			ts := startServer(t, func(s *Server) { srv, s.Access, s.MaxClients = s, acc, 100 })
			c := ts.dial()
			c.do(cmd(append([]string{"CONFIG", "SET"}, strings.Fields(tc.args)...)...), tc.want)
			mu.Lock()
			if len(seen) != tc.hooks {
				t.Errorf("parameters checked: %q, want %d", seen, tc.hooks)
			}
			mu.Unlock()
			pw, prot := acc.Get()
			srv.cfg.mu.RLock()
			got := state{pw, prot, srv.cfg.maxClients}
			srv.cfg.mu.RUnlock()
			if got != tc.after {
				t.Fatalf("after: %+v, want %+v", got, tc.after)
			}
		})
	}
}
