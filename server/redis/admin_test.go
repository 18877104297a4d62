package redis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
