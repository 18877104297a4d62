package caskade

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// A commit's range reads are checked twice: walked before the commit is
// queued (precheck), and against the keys written after that in the
// leader. A write into a range read, committed between the two, must fail
// the commit; a write elsewhere must not. Nothing is kept afterwards.
func TestPrecheckWindow(t *testing.T) {
	cases := []struct {
		name     string
		between  func(db *DB) error
		conflict bool
	}{
		{"overwrite in range", func(db *DB) error { return db.Set([]byte("r5"), []byte("new")) }, true},
		{"insert in range", func(db *DB) error { return db.Set([]byte("r55"), []byte("new")) }, true},
		{"delete in range", func(db *DB) error { return db.Delete([]byte("r3")) }, true},
		// (The end selector read up to "t", the next key after the range.)
		{"write after range", func(db *DB) error { return db.Set([]byte("u"), []byte("new")) }, false},
		{"write before range", func(db *DB) error { return db.Set([]byte("a"), []byte("new")) }, false},
		{"delete of a missing key in range", func(db *DB) error { return db.Delete([]byte("r77")) }, false},
	}
	for _, via := range []string{"Tx", "Batch.CheckRange"} {
		for _, c := range cases {
			t.Run(via+"/"+c.name, func(t *testing.T) {
				db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1})
				for i := range 10 {
					db.Set(fmt.Appendf(nil, "r%d", i), []byte("v"))
				}
				db.Set([]byte("t"), []byte("v"))
				var hookErr error
				calls := 0
				testHookAfterPrecheck = func() {
					calls++
					if calls == 1 {
						hookErr = c.between(db)
					}
				}
				defer func() { testHookAfterPrecheck = nil }()
				var err error
				switch via {
				case "Tx":
					tx, berr := db.Begin()
					if berr != nil {
						t.Fatal(berr)
					}
					kvs, rerr := tx.GetRange(FirstGreaterOrEqual([]byte("r")), FirstGreaterOrEqual([]byte("r\xff")), nil)
					if rerr != nil || len(kvs) != 10 {
						t.Fatalf("range read: %d pairs, %v", len(kvs), rerr)
					}
					tx.Set([]byte("x"), []byte("y"))
					err = tx.Commit()
				default:
					snap := db.SnapshotForChecks()
					kvs, rerr := snap.Range([]byte("r"), []byte("r\xff"), nil)
					if rerr != nil || len(kvs) != 10 {
						t.Fatalf("range read: %d pairs, %v", len(kvs), rerr)
					}
					var b Batch
					b.CheckRange([]byte("r"), []byte("r\xff"), snap)
					b.Set([]byte("x"), []byte("y"))
					err = db.Write(&b)
					snap.Close()
				}
				if hookErr != nil {
					t.Fatal(hookErr)
				}
				if calls == 0 {
					t.Fatal("the commit was not prechecked")
				}
				if got := errors.Is(err, ErrConflict); got != c.conflict {
					t.Fatalf("commit: %v; want conflict %v", err, c.conflict)
				}
				_, gerr := db.Get([]byte("x"))
				if committed := gerr == nil; committed == c.conflict {
					t.Fatalf("x committed %v after a commit that returned %v", committed, err)
				}
				db.mu.RLock()
				left, recent := len(db.pre.at), len(db.pre.recent)
				db.mu.RUnlock()
				if left != 0 || recent != 0 {
					t.Fatalf("after the commit: %d prechecks registered, %d writes kept", left, recent)
				}
			})
		}
	}
}

// A write into a range committed before the commit is queued is found by
// the precheck itself.
func TestPrecheckFindsEarlierWrites(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1})
	for i := range 10 {
		db.Set(fmt.Appendf(nil, "r%d", i), []byte("v"))
	}
	for _, change := range []func() error{
		func() error { return db.Set([]byte("r4"), []byte("new")) },
		func() error { return db.Delete([]byte("r6")) },
	} {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.GetRange(FirstGreaterOrEqual([]byte("r")), FirstGreaterOrEqual([]byte("r\xff")), nil); err != nil {
			t.Fatal(err)
		}
		tx.Set([]byte("x"), []byte("y"))
		if err := change(); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); !errors.Is(err, ErrConflict) {
			t.Fatalf("commit after a change to its range: %v", err)
		}
	}
	if err := db.Transact(context.Background(), func(tx *Tx) error {
		_, err := tx.GetRange(FirstGreaterOrEqual([]byte("r")), FirstGreaterOrEqual([]byte("r\xff")), nil)
		tx.Set([]byte("x"), []byte("y"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// Of batches written together, one whose range check fails before it is
// queued fails alone.
func TestPrecheckFailsOnlyItsBatch(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1})
	snap := db.SnapshotForChecks()
	defer snap.Close()
	db.Set([]byte("r1"), []byte("v")) // into the range, after the snapshot
	var stale, plain, checked Batch
	stale.CheckRange([]byte("r"), []byte("s"), snap)
	stale.Set([]byte("a"), []byte("1"))
	plain.Set([]byte("b"), []byte("2"))
	checked.CheckRange([]byte("x"), []byte("y"), snap)
	checked.Set([]byte("c"), []byte("3"))
	errs := db.WriteBatches([]*Batch{&stale, &plain, &checked})
	if !errors.Is(errs[0], ErrConflict) || errs[1] != nil || errs[2] != nil {
		t.Fatalf("errors %v; want a conflict for the first batch only", errs)
	}
	for k, want := range map[string]bool{"a": false, "b": true, "c": true} {
		if _, err := db.Get([]byte(k)); (err == nil) != want {
			t.Fatalf("%s written %v, want %v", k, err == nil, want)
		}
	}
}
