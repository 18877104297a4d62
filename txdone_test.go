package caskade

import (
	"context"
	"errors"
	"testing"
)

// A write is never lost without an error: one made after Commit or
// Rollback fails the next call that can report it (a read, Commit), and
// one made in ReadTransact, whose transaction never commits, fails
// ReadTransact, where FoundationDB's bindings refuse it at compile time.
func TestTxWritesAfterEndAreReported(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	writes := map[string]func(tx *Tx){
		"Set":                   func(tx *Tx) { tx.Set([]byte("k"), []byte("v")) },
		"SetEntry":              func(tx *Tx) { tx.SetEntry([]byte("k"), []byte("v"), SetOptions{}) },
		"Clear":                 func(tx *Tx) { tx.Clear([]byte("k")) },
		"ClearRange":            func(tx *Tx) { tx.ClearRange([]byte("a"), []byte("b")) },
		"Add":                   func(tx *Tx) { tx.Add([]byte("k"), []byte{1}) },
		"SetVersionstampedKey":  func(tx *Tx) { tx.SetVersionstampedKey(append(make([]byte, 10), 0, 0, 0, 0), nil) },
		"AddWriteConflictRange": func(tx *Tx) { tx.AddWriteConflictRange([]byte("a"), []byte("b")) },
		"AddReadConflictRange":  func(tx *Tx) { tx.AddReadConflictRange([]byte("a"), []byte("b")) },
	}
	for name, write := range writes {
		for _, end := range []string{"commit", "rollback"} {
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if end == "commit" {
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			} else {
				tx.Rollback()
			}
			reads := len(tx.reads)
			write(tx)
			if len(tx.reads) != reads || len(tx.ops) != 0 {
				t.Errorf("%s after %s kept %d read ranges and %d mutations, want %d and none", name, end, len(tx.reads), len(tx.ops), reads)
			}
			if _, err := tx.Get([]byte("k")); !errors.Is(err, ErrTransactionDone) {
				t.Errorf("%s after %s: Get = %v", name, end, err)
			}
			if err := tx.Commit(); !errors.Is(err, ErrTransactionDone) {
				t.Errorf("%s after %s: Commit = %v", name, end, err)
			}
		}
		err := db.ReadTransact(context.Background(), func(tx *Tx) error {
			write(tx)
			return nil
		})
		if name == "AddReadConflictRange" {
			if err != nil {
				t.Errorf("ReadTransact with %s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidOperation) {
			t.Errorf("ReadTransact with %s: %v, want %v", name, err, ErrInvalidOperation)
		}
	}
}

// An invalid mutation fails the transaction at once, as FoundationDB's
// deferred error does: every read after it, and Commit, return its error,
// so a program that goes on reading learns its write was refused.
func TestTxInvalidMutationFailsLaterReads(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{MaxKeySize: 8})
	db.Set([]byte("k"), []byte("v"))
	tx, _ := db.Begin()
	if _, err := tx.Get([]byte("k")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Err(); err != nil {
		t.Fatalf("Err before an invalid Set: %v", err)
	}
	tx.Set([]byte("a key too long"), []byte("v"))
	if err := tx.Err(); !errors.Is(err, ErrKeyTooLarge) {
		t.Errorf("Err after an invalid Set: %v", err)
	}
	if _, err := tx.Get([]byte("k")); !errors.Is(err, ErrKeyTooLarge) {
		t.Errorf("Get after an invalid Set: %v", err)
	}
	if _, err := tx.Snapshot().Get([]byte("k")); !errors.Is(err, ErrKeyTooLarge) {
		t.Errorf("snapshot Get after an invalid Set: %v", err)
	}
	if _, err := tx.GetKey(FirstGreaterOrEqual([]byte("k"))); !errors.Is(err, ErrKeyTooLarge) {
		t.Errorf("GetKey after an invalid Set: %v", err)
	}
	if _, err := tx.Range([]byte("a"), nil, nil); !errors.Is(err, ErrKeyTooLarge) {
		t.Errorf("Range after an invalid Set: %v", err)
	}
	if w := tx.Watch([]byte("k")); !watchFired(w) {
		t.Error("Watch after an invalid Set is waiting")
	} else if err := w.Wait(context.Background()); !errors.Is(err, ErrKeyTooLarge) {
		t.Errorf("Watch after an invalid Set: %v", err)
	}
	if err := tx.Commit(); !errors.Is(err, ErrKeyTooLarge) {
		t.Errorf("Commit after an invalid Set: %v", err)
	}

	// In ReadTransact, the read after the write fails.
	var readErr error
	err := db.ReadTransact(context.Background(), func(tx *Tx) error {
		tx.Set([]byte("k"), []byte("w"))
		_, readErr = tx.Get([]byte("k"))
		return nil
	})
	if !errors.Is(readErr, ErrInvalidOperation) || !errors.Is(err, ErrInvalidOperation) {
		t.Errorf("ReadTransact with a write: read %v, ReadTransact %v", readErr, err)
	}
}
