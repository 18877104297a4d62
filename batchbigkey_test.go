package caskade

import (
	"bytes"
	"errors"
	"testing"

	"github.com/caskade/caskade/internal/keydir"
)

// Deletes without a transaction (Batch.Delete and DeleteRange, DB.Delete
// and DeleteRange) treat long keys as Tx.Clear and Tx.ClearRange do: a
// key over Options.MaxKeySize, written under a larger one, can still be
// deleted (it used to fail with ErrKeyTooLarge, leaving no way but a
// transaction to delete it); a key longer than any key can be is no
// error and costs nothing; range bounds that long are cut. Writes that
// store a key over MaxKeySize still fail.
func TestPlainDeletesOfOversizedKeys(t *testing.T) {
	legacy := bytes.Repeat([]byte("L"), 100)
	huge := bytes.Repeat([]byte("a"), keydir.MaxKeyLen+1) // longer than any key can be
	deletes := []struct {
		name string
		del  func(db *DB) error
	}{
		{"Batch.Delete", func(db *DB) error {
			var b Batch
			b.Delete(legacy)
			b.Set([]byte("x"), []byte("1"))
			return db.Write(&b)
		}},
		{"Batch.DeleteRange", func(db *DB) error {
			var b Batch
			b.DeleteRange(legacy, append(bytes.Clone(legacy), 0))
			return db.Write(&b)
		}},
		{"DB.Delete", func(db *DB) error { return db.Delete(legacy) }},
		{"DB.DeleteRange", func(db *DB) error { return db.DeleteRange(legacy, append(bytes.Clone(legacy), 0)) }},
		{"WriteBatches", func(db *DB) error {
			var b Batch
			b.Delete(legacy)
			return db.WriteBatches([]*Batch{&b})[0]
		}},
	}
	for _, d := range deletes {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openTest(t, dir, nil)
			for _, k := range [][]byte{legacy, []byte("a"), []byte("b")} {
				if err := db.Set(k, []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()
			opts := &Options{MaxKeySize: 64, MaxBatchSize: 64 << 10}
			db = openTest(t, dir, opts)
			if err := d.del(db); err != nil {
				t.Fatalf("delete of a key over MaxKeySize: %v", err)
			}
			if _, err := db.Get(legacy); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the key survived its delete: %v", err)
			}
			db.Close()
			db = openTest(t, dir, opts)
			if _, err := db.Get(legacy); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the key is back after a reopen: %v", err)
			}
			mustGet(t, db, "a", "v")
		})
	}

	db := openTest(t, t.TempDir(), &Options{MaxKeySize: 64, MaxBatchSize: 3 << 20})
	for _, k := range []string{"a", "b"} {
		if err := db.Set([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	// A key that cannot exist: no error, and nothing counted against
	// MaxBatchSize (3 MiB here); a range from a bound that long is the
	// range from it cut to MaxKeyLen+1 bytes (which count, as in Tx,
	// rather than the 3 MiB given), which "a" precedes.
	var b Batch
	for range 3 {
		b.Delete(huge)
	}
	b.DeleteRange(bytes.Repeat([]byte("a"), 3<<20), []byte("c"))
	if err := db.Write(&b); err != nil {
		t.Fatalf("deletes with keys longer than any key: %v", err)
	}
	if err := db.Delete(huge); err != nil {
		t.Fatalf("DB.Delete of a key longer than any key: %v", err)
	}
	mustGet(t, db, "a", "v")
	if _, err := db.Get([]byte("b")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("b, inside the range deleted from an oversized bound: %v", err)
	}
	// An inverted range is still an error, whatever the lengths.
	b.Reset()
	b.DeleteRange(append(bytes.Clone(huge), 'x'), huge)
	if err := db.Write(&b); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("inverted DeleteRange with oversized bounds: %v, want ErrInvalidRange", err)
	}
	// What would store a key over MaxKeySize still fails.
	long := bytes.Repeat([]byte("z"), 65)
	for name, f := range map[string]func(b *Batch){
		"Set":    func(b *Batch) { b.Set(long, []byte("v")) },
		"AddInt": func(b *Batch) { b.AddInt(long, 1) },
	} {
		b.Reset()
		f(&b)
		if err := db.Write(&b); !errors.Is(err, ErrKeyTooLarge) {
			t.Errorf("%s of a key over MaxKeySize: %v, want ErrKeyTooLarge", name, err)
		}
	}
}
