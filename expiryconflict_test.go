package caskade

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A key that a transaction (or a batch's CheckRange) read live and that
// expires before the commit changed what it read: the commit conflicts,
// whether the key is still in memory, dropped by active expiry or dropped
// by a merge, and whether it expires before the commit is queued or
// between the range's precheck and the leader's check. A key that was
// already expired when read was never seen, and its drop is no conflict.
func TestExpiryBetweenReadAndCommit(t *testing.T) {
	events := []struct {
		name     string
		do       func(db *DB, clk *testClock) error
		conflict bool
	}{
		{"nothing", func(*DB, *testClock) error { return nil }, false},
		{"the key expires", func(_ *DB, clk *testClock) error { clk.Advance(3 * time.Second); return nil }, true},
		{"the key expires and is dropped", func(db *DB, clk *testClock) error {
			clk.Advance(3 * time.Second)
			if _, n := db.expireSample(); n != 2 {
				return fmt.Errorf("active expiry dropped %d keys, want 2", n)
			}
			return nil
		}, true},
		{"the key expires and a merge drops it", func(db *DB, clk *testClock) error {
			clk.Advance(3 * time.Second)
			if _, err := db.Merge(context.Background()); err != nil {
				return err
			}
			db.mu.RLock()
			_, kept := db.tree.Get([]byte("r1"))
			db.mu.RUnlock()
			if kept {
				return errors.New("the merge kept the expired key in memory")
			}
			return nil
		}, true},
		{"an expired key the read never saw is dropped", func(db *DB, _ *testClock) error {
			if _, n := db.expireSample(); n != 1 {
				return fmt.Errorf("active expiry dropped %d keys, want 1", n)
			}
			return nil
		}, false},
	}
	for _, read := range []string{"Tx point", "Tx range", "Batch.CheckRange"} {
		for _, when := range []string{"before the commit", "after the precheck"} {
			if read == "Tx point" && when == "after the precheck" {
				continue // a point read has no precheck
			}
			for _, ev := range events {
				t.Run(read+"/"+when+"/"+ev.name, func(t *testing.T) {
					clk := newTestClock()
					db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, Now: clk.Now, ExpiryPeriod: -1, MergeInterval: -1})
					db.SetWithTTL([]byte("r0"), []byte("gone"), time.Second)
					// r1 expires 2 s after the reads, well within a
					// transaction's 5 s.
					db.SetWithTTL([]byte("r1"), []byte("soon"), 4*time.Second)
					db.Set([]byte("r2"), []byte("first"))
					db.Set([]byte("r2"), []byte("plain")) // a dead record: Merge takes the active file
					clk.Advance(2 * time.Second)          // r0 has expired, unseen by every read below
					var evErr error
					hooked := false
					if when == "after the precheck" {
						testHookAfterPrecheck = func() {
							if !hooked {
								hooked, evErr = true, ev.do(db, clk)
							}
						}
						defer func() { testHookAfterPrecheck = nil }()
					}
					var err error
					if read == "Batch.CheckRange" {
						snap := db.SnapshotForChecks()
						kvs, rerr := snap.Range([]byte("r"), []byte("s"), nil)
						if rerr != nil || len(kvs) != 2 {
							t.Fatalf("range read: %d pairs, %v", len(kvs), rerr)
						}
						if when == "before the commit" {
							evErr = ev.do(db, clk)
						}
						var b Batch
						b.CheckRange([]byte("r"), []byte("s"), snap)
						b.Set([]byte("out"), []byte("x"))
						err = db.Write(&b)
						snap.Close()
					} else {
						tx, berr := db.Begin()
						if berr != nil {
							t.Fatal(berr)
						}
						if read == "Tx point" {
							if v, gerr := tx.Get([]byte("r1")); gerr != nil || string(v) != "soon" {
								t.Fatalf("point read: %q, %v", v, gerr)
							}
							if _, gerr := tx.Get([]byte("r0")); !errors.Is(gerr, ErrNotFound) {
								t.Fatalf("point read of the expired key: %v", gerr)
							}
						} else if kvs, rerr := tx.GetRange(FirstGreaterOrEqual([]byte("r")), FirstGreaterOrEqual([]byte("s")), nil); rerr != nil || len(kvs) != 2 {
							t.Fatalf("range read: %d pairs, %v", len(kvs), rerr)
						}
						if when == "before the commit" {
							evErr = ev.do(db, clk)
						}
						tx.Set([]byte("out"), []byte("x"))
						err = tx.Commit()
					}
					if evErr != nil {
						t.Fatal(evErr)
					}
					if when == "after the precheck" && !hooked {
						t.Fatal("the commit was not prechecked")
					}
					if got := errors.Is(err, ErrConflict); got != ev.conflict || (err != nil && !got) {
						t.Fatalf("commit: %v; want conflict %v", err, ev.conflict)
					}
					_, gerr := db.Get([]byte("out"))
					if committed := gerr == nil; committed == ev.conflict {
						t.Fatalf("after the commit (%v), out: %v", err, gerr)
					}
				})
			}
		}
	}
}
