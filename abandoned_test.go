package caskade

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// openReaders opens every kind of reader a caller gets and uses each; the
// caller drops them without Rollback or Close.
//
//go:noinline
func openReaders(t *testing.T, db *DB) []any {
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Get([]byte("k000")); err != nil {
		t.Fatal(err)
	}
	it := tx.RangeIterator(FirstGreaterOrEqual([]byte("k")), FirstGreaterOrEqual([]byte("l")), nil)
	if !it.Next() { // a fast-path iterator of the transaction's own
		t.Fatalf("range read: %v", it.Err())
	}
	snap, checks := db.Snapshot(), db.SnapshotForChecks()
	if _, err := snap.Get([]byte("k001")); err != nil {
		t.Fatal(err)
	}
	if _, err := checks.Get([]byte("k002")); err != nil {
		t.Fatal(err)
	}
	dbIt, err := db.NewIterator(nil)
	if err != nil || !dbIt.First() {
		t.Fatalf("iterator: %v", err)
	}
	snapIt, err := db.Snapshot().NewIterator(nil)
	if err != nil || !snapIt.First() {
		t.Fatalf("snapshot iterator: %v", err)
	}
	return []any{tx, it, snap, checks, dbIt, snapIt}
}

// A transaction, snapshot or iterator that the caller drops without
// Rollback or Close is released once the garbage collector finds it:
// before, one kept its data files on disk after a merge replaced them, its
// key directory state in memory and its reader registration, for the life
// of the process.
func TestAbandonedReadersAreReleased(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, &Options{MaxFileSize: 4 << 10, ExpiryPeriod: -1, Sync: SyncNone})
	for i := range 200 {
		if err := db.Set(fmt.Appendf(nil, "k%03d", i%50), fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	readers := openReaders(t, db)
	if n := db.Stats().OpenSnapshots; n < 5 {
		t.Fatalf("OpenSnapshots %d with the readers open, want at least 5", n)
	}
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	retired := func() (names []string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".data.tmp") {
				names = append(names, e.Name())
			}
		}
		return names
	}
	if len(retired()) == 0 {
		t.Fatal("merge deleted the files that open readers read")
	}
	runtime.KeepAlive(readers) // and from here on, dropped
	// Cleanups run on their own goroutine after a collection finds the
	// readers unreachable; no signal says when, so poll.
	deadline := time.Now().Add(20 * time.Second)
	for {
		runtime.GC()
		open, regs, left := db.Stats().OpenSnapshots, db.txns.count.Load(), retired()
		if open == 0 && regs == 0 && len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the readers were dropped: %d open snapshots, %d registered readers, retired files still on disk: %v", open, regs, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The database is unharmed.
	mustGet(t, db, "k049", "v199")
}
