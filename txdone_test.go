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
			write(tx)
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
