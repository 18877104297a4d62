package caskade

import (
	"context"
	"errors"
	"testing"
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
