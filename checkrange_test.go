package caskade

import (
	"context"
	"errors"
	"testing"
)

// A batch conditional on a range read commits only if no key in the range
// was set or deleted after the snapshot it was read from.
func TestBatchCheckRange(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone})
	for _, k := range []string{"a1", "b1", "b2", "c1"} {
		if err := db.Set([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	write := func(s *Snapshot, begin, end string) error {
		var b Batch
		var e []byte
		if end != "" {
			e = []byte(end)
		}
		b.CheckRange([]byte(begin), e, s)
		b.Set([]byte("out"), []byte("x"))
		return db.Write(&b)
	}
	cases := []struct {
		name   string
		change func() error
		begin  string
		end    string
		ok     bool
	}{
		{"nothing changed", func() error { return nil }, "b", "c", true},
		{"a set outside", func() error { return db.Set([]byte("a2"), []byte("v")) }, "b", "c", true},
		{"a set inside", func() error { return db.Set([]byte("b3"), []byte("v")) }, "b", "c", false},
		{"an overwrite inside", func() error { return db.Set([]byte("b1"), []byte("w")) }, "b", "c", false},
		{"a delete inside", func() error { return db.Delete([]byte("b2")) }, "b", "c", false},
		{"a delete outside", func() error { return db.Delete([]byte("c1")) }, "b", "c", true},
		{"a set at the end bound", func() error { return db.Set([]byte("c"), []byte("v")) }, "b", "c", true},
		{"to the end of the key space", func() error { return db.Set([]byte("zz"), []byte("v")) }, "b", "", false},
	}
	for _, c := range cases {
		s := db.SnapshotForChecks()
		if err := c.change(); err != nil {
			t.Fatal(err)
		}
		err := write(s, c.begin, c.end)
		s.Close()
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrConflict)) {
			t.Fatalf("%s: write = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	// The snapshots are no longer registered: nothing keeps history.
	if n := db.txns.count.Load(); n != 0 {
		t.Fatalf("%d live readers after closing every snapshot", n)
	}
	var b Batch
	b.CheckRange([]byte("b"), []byte("a"), db.Snapshot())
	if err := db.Write(&b); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("inverted range: %v", err)
	}
}

// A read-only transaction, which never commits, reads its snapshot
// without making commits keep history for it.
func TestReadTransactKeepsNoHistory(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone})
	if err := db.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	err := db.ReadTransact(context.Background(), func(tx *Tx) error {
		if err := db.Delete([]byte("k")); err != nil {
			return err
		}
		db.mu.RLock()
		kept := len(db.hist.queue)
		db.mu.RUnlock()
		if n := db.txns.count.Load(); n != 0 || kept != 0 {
			t.Errorf("%d live transactions and %d deletions kept for a read-only one", n, kept)
		}
		v, err := tx.Get([]byte("k"))
		if err != nil || string(v) != "v" {
			t.Errorf("read at the snapshot: %q, %v", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
