package caskade

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// A range read that finds no keys still read something: that the range
// was empty. A key inserted into it afterwards must fail the commit.
func TestEmptyRangeReadConflicts(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1})
	db.Set([]byte("k0"), []byte("v"))
	db.Set([]byte("k5"), []byte("v"))
	for _, inserted := range []string{"k1", "k3", "k4\xff"} {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		kvs, err := tx.GetRange(FirstGreaterOrEqual([]byte("k1")), FirstGreaterOrEqual([]byte("k5")), nil)
		if err != nil || len(kvs) != 0 {
			t.Fatalf("range read: %v, %v", kvs, err)
		}
		tx.Set([]byte("x"), []byte("y"))
		if err := db.Set([]byte(inserted), []byte("new")); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); !errors.Is(err, ErrConflict) {
			t.Fatalf("commit after %q was inserted into the empty range it read: %v", inserted, err)
		}
		db.Delete([]byte(inserted))
	}
}

// A transaction that deletes a key twice still deletes it once, at its
// version: a transaction that read the key before must fail to commit.
func TestDoubleDeleteConflicts(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1})
	db.Set([]byte("k"), []byte("v"))
	reader, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := reader.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("read: %q, %v", v, err)
	}
	reader.Set([]byte("x"), []byte("y"))
	err = db.Transact(context.Background(), func(tx *Tx) error {
		tx.Clear([]byte("k"))
		tx.Clear([]byte("k"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("commit of a transaction that read a key deleted since: %v", err)
	}
}

// TestWriteConflictRangeInSameGroup checks a write conflict range against
// a later commit of the same group: a transaction that read a key the
// range covers, at a version before it, must fail, as it does when the
// two commits are in separate groups.
func TestWriteConflictRangeInSameGroup(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db := openTest(t, "/db", &Options{FS: efs, ExpiryPeriod: -1})
	reader, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Get([]byte("m1")); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	reader.Set([]byte("out"), []byte("7"))
	writer, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	writer.AddWriteConflictRange([]byte("m"), []byte("n"))

	// Hold a first group in its fsync while the two commits queue behind
	// it, writer first, so that the next group takes both.
	inSync, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	efs.InjectFunc(errorfs.OpSync, func(string) error {
		once.Do(func() { close(inSync); <-release })
		return nil
	})
	blocker := make(chan error, 1)
	go func() { blocker <- db.Set([]byte("blocker"), []byte("1")) }()
	<-inSync
	queued := func(n int) {
		for {
			db.cmu.Lock()
			q := len(db.queue)
			db.cmu.Unlock()
			if q >= n {
				return
			}
			runtime.Gosched()
		}
	}
	werr, rerr := make(chan error, 1), make(chan error, 1)
	go func() { werr <- writer.Commit() }()
	queued(1)
	go func() { rerr <- reader.Commit() }()
	queued(2)
	close(release)
	if err := <-blocker; err != nil {
		t.Fatal(err)
	}
	if err := <-werr; err != nil {
		t.Fatalf("writer: %v", err)
	}
	if err := <-rerr; !errors.Is(err, ErrConflict) {
		t.Fatalf("reader committed after a write conflict range over what it read, in the same group: %v", err)
	}
	mustMiss(t, db, "out")
}

// A Get of a key inside a range the transaction cleared is answered from
// its own writes, as after a Clear of the key: it reads nothing from the
// database, so a commit that changed the key since must not fail it (in
// FoundationDB it does not either), whether or not the key existed.
func TestGetInClearedRangeNoConflict(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1})
	for _, existed := range []bool{true, false} {
		if existed {
			mustSet(t, db, "v", "b")
		} else {
			db.Delete([]byte("b"))
		}
		tx := mustBegin(t, db)
		tx.ClearRange([]byte("a"), []byte("c"))
		if v, err := tx.Get([]byte("b")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("existed %v: get of a cleared key: %q, %v", existed, v, err)
		}
		tx.Set([]byte("x"), []byte("y"))
		mustSet(t, db, "changed", "b")
		if err := tx.Commit(); err != nil {
			t.Fatalf("existed %v: commit: %v", existed, err)
		}
		if _, err := db.Get([]byte("b")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("existed %v: the clear, committed last, left b: %v", existed, err)
		}
	}
}

// A read of an absent key whose length and search hint are those of
// another key in its leaf conflicts with a write of that key only, not of
// the other one: the commit's check probes the key directory without
// reading keys back from memory, and its candidate is another key's.
func TestConflictBesideACandidate(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, MergeInterval: -1, ExpiryPeriod: -1})
	for _, k := range []string{"k:aaaX1", "k:bbbX2"} {
		if err := db.Set([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	db.mu.RLock()
	_, ok, verify := db.tree.Probe([]byte("k:aaaZ1"))
	db.mu.RUnlock()
	if !ok || !verify {
		t.Fatalf("Probe of the absent key: ok %v, verify %v; want a candidate", ok, verify)
	}
	for _, c := range []struct {
		write    string
		conflict bool
	}{{"k:aaaX1", false}, {"k:aaaZ1", true}} {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Get([]byte("k:aaaZ1")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("read: %v", err)
		}
		tx.Set([]byte("out"), []byte("1"))
		if err := db.Set([]byte(c.write), []byte("new")); err != nil {
			t.Fatal(err)
		}
		err = tx.Commit()
		if got := errors.Is(err, ErrConflict); got != c.conflict {
			t.Fatalf("after a write of %s: commit %v, want conflict %v", c.write, err, c.conflict)
		}
		if err := db.Delete([]byte("k:aaaZ1")); err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
}
