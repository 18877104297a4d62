package caskade

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/caskade/caskade/internal/keydir"
)

// FoundationDB's Clear of a key longer than any key can be does nothing,
// and ClearRange and the conflict ranges cut bounds that long down to a
// bound that orders the same against every possible key. caskade's limit
// on keys that can exist is the format's (keydir.MaxKeyLen): a key longer
// than Options.MaxKeySize may have been written under a larger one, so
// clearing such a key still clears it. Sets, atomic operations and
// watches of a key over MaxKeySize fail with ErrKeyTooLarge, as in
// FoundationDB.
func TestTxOversizedKeys(t *testing.T) {
	dir := t.TempDir()
	legacy := bytes.Repeat([]byte("L"), 100)
	db := openTest(t, dir, nil)
	for _, k := range [][]byte{legacy, []byte("a"), []byte("b"), []byte("m")} {
		if err := db.Set(k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db = openTest(t, dir, &Options{MaxKeySize: 64, TxnSizeLimit: 3 << 20})
	huge := bytes.Repeat([]byte("a"), keydir.MaxKeyLen+1) // longer than any key can be
	long := bytes.Repeat([]byte("z"), 65)                 // longer than MaxKeySize

	// Clears of keys that cannot exist: no error, nothing counted against
	// TxnSizeLimit (3 MiB here).
	tx, _ := db.Begin()
	for range 3 {
		tx.Clear(huge)
	}
	tx.Clear(long)
	tx.Set([]byte("c"), []byte("v"))
	if err := tx.Commit(); err != nil {
		t.Fatalf("Clear of oversized keys: %v, want it ignored", err)
	}

	// A key written under a larger MaxKeySize is cleared by Clear.
	tx, _ = db.Begin()
	tx.Clear(legacy)
	if _, err := tx.Get(legacy); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Clear in the transaction: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Clear of a key over MaxKeySize that exists: %v", err)
	}
	if _, err := db.Get(legacy); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the legacy key survived its Clear: %v", err)
	}

	// ClearRange from a bound longer than any key: the same as from the
	// bound cut to MaxKeyLen+1 bytes, which "a" precedes and "b" follows.
	tx, _ = db.Begin()
	tx.ClearRange(huge, []byte("c"))
	tx.ClearRange(long, append(bytes.Clone(long), 1)) // empty once cut: nothing
	if err := tx.Commit(); err != nil {
		t.Fatalf("ClearRange with oversized bounds: %v", err)
	}
	mustGet(t, db, "a", "v")
	if _, err := db.Get([]byte("b")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("b, inside the range cleared from an oversized bound: %v", err)
	}
	// An inverted range is still an error, whatever the lengths.
	tx, _ = db.Begin()
	tx.ClearRange(append(bytes.Clone(huge), 'x'), huge)
	if err := tx.Commit(); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("inverted ClearRange with oversized bounds: %v, want ErrInvalidRange", err)
	}

	// A write conflict range from an oversized bound conflicts with the
	// keys after it.
	reader, _ := db.Begin()
	reader.Get([]byte("m"))
	reader.Set([]byte("out"), []byte("1"))
	writer, _ := db.Begin()
	writer.AddWriteConflictRange(long, nil)
	writer.AddWriteConflictRange(append([]byte("l"), huge...), append([]byte("l"), huge...))
	writer.AddReadConflictKey(huge)
	if err := writer.Commit(); err != nil {
		t.Fatalf("conflict ranges with oversized bounds: %v", err)
	}
	writer, _ = db.Begin()
	writer.AddWriteConflictRange(append([]byte("l"), huge...), nil)
	if err := writer.Commit(); err != nil {
		t.Fatalf("write conflict range from an oversized bound: %v", err)
	}
	if err := reader.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("reader of m after a write conflict range from l+huge: %v, want ErrConflict", err)
	}

	// What would store an oversized key fails, as in FoundationDB.
	for name, f := range map[string]func(*Tx){
		"Set":   func(tx *Tx) { tx.Set(long, []byte("v")) },
		"Add":   func(tx *Tx) { tx.Add(long, []byte{1}) },
		"BitOr": func(tx *Tx) { tx.BitOr(long, []byte{1}) },
	} {
		tx, _ = db.Begin()
		f(tx)
		if err := tx.Commit(); !errors.Is(err, ErrKeyTooLarge) {
			t.Errorf("%s of an oversized key: %v, want ErrKeyTooLarge", name, err)
		}
	}
	tx, _ = db.Begin()
	w := tx.Watch(long)
	if err := w.Wait(context.Background()); !errors.Is(err, ErrKeyTooLarge) {
		t.Errorf("Watch of an oversized key: %v, want ErrKeyTooLarge", err)
	}
	tx.Rollback()
}
