package caskade

import (
	"context"
	"errors"
	"testing"
	"time"
)

// watchFired reports whether w has fired (or failed) by now.
func watchFired(w *Watch) bool {
	select {
	case <-w.C():
		return true
	default:
		return false
	}
}

// A watch fires when the key's value differs from the one its transaction
// saw, as FoundationDB's does, not whenever a commit touches the key: a
// Set of the same value, a Clear of a key that was absent or the drop of
// one that had already expired when it was read change nothing.
func TestWatchFiresOnValueChangeOnly(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1})
	db.Set([]byte("k"), []byte("v1"))
	watch := func(key string) *Watch {
		t.Helper()
		tx, _ := db.Begin()
		w := tx.Watch([]byte(key))
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return w
	}

	w := watch("k")
	db.Set([]byte("k"), []byte("v1"))
	if watchFired(w) {
		t.Error("a Set of the value the watch saw fired it")
	}
	db.Set([]byte("k"), []byte("v2"))
	if !watchFired(w) {
		t.Error("a Set of another value did not fire the watch")
	}

	w = watch("absent")
	tx, _ := db.Begin()
	tx.Clear([]byte("absent"))
	tx.Set([]byte("other"), []byte("x"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if watchFired(w) {
		t.Error("a Clear of an absent key fired its watch")
	}

	// A key that had expired when the watch read it is absent to it: its
	// drop changes nothing.
	db.SetWithTTL([]byte("ttl"), []byte("x"), time.Second)
	clk.Advance(2 * time.Second)
	w = watch("ttl")
	if err := db.Delete([]byte("ttl")); err != nil {
		t.Fatal(err)
	}
	if watchFired(w) {
		t.Error("the drop of a key expired when the watch read it fired the watch")
	}
	// One live when read fires once it expires and is dropped.
	db.SetWithTTL([]byte("ttl"), []byte("x"), time.Second)
	w = watch("ttl")
	clk.Advance(2 * time.Second)
	if err := db.Delete([]byte("ttl")); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A writing transaction's watch compares with the value the transaction
// saw when it set the watch up: its own write after the watch fires it
// only if it changed the value, and a later commit of the value it wrote
// before the watch does not.
func TestWatchOfWriterComparesValues(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	db.Set([]byte("k"), []byte("v1"))

	tx, _ := db.Begin()
	w := tx.Watch([]byte("k"))
	tx.Set([]byte("k"), []byte("v1"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if watchFired(w) {
		t.Error("the transaction's own write of the same value fired its watch")
	}
	db.Set([]byte("k"), []byte("v2"))
	if !watchFired(w) {
		t.Error("a later change did not fire the watch")
	}

	tx, _ = db.Begin()
	tx.Set([]byte("k"), []byte("v3"))
	w = tx.Watch([]byte("k"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Set([]byte("k"), []byte("v3"))
	if watchFired(w) {
		t.Error("a Set of the value the transaction wrote before the watch fired it")
	}
	tx, _ = db.Begin()
	tx.CompareAndClear([]byte("k"), []byte("v2"))
	tx.Set([]byte("k"), []byte("v3"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if watchFired(w) {
		t.Error("a commit that left the value alone fired the watch")
	}
	db.Delete([]byte("k"))
	if !watchFired(w) {
		t.Error("a Clear did not fire the watch")
	}
}

// A watch of a key whose value the transaction cannot read (a
// versionstamped value) has no value to compare with: it fails with
// accessed_unreadable, as FoundationDB's does.
func TestWatchOfUnreadableKey(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	tx, _ := db.Begin()
	tx.SetVersionstampedValue([]byte("k"), append(make([]byte, 10), 0, 0, 0, 0))
	w := tx.Watch([]byte("k"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if !watchFired(w) {
		t.Fatal("the watch of an unreadable key is waiting")
	}
	if err := w.Wait(context.Background()); !errors.Is(err, ErrAccessedUnreadable) {
		t.Fatalf("watch of an unreadable key: %v", err)
	}
}

// A watch that fired or was cancelled leaves nothing behind for its key:
// a program that watches many keys in turn does not grow the table.
func TestWatchLeavesNoEntry(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	for i := range 3 {
		key := []byte{'k', byte('0' + i)}
		tx, _ := db.Begin()
		w1, w2 := tx.Watch(key), tx.Watch(key)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		w1.Cancel()
		if i%2 == 0 {
			w2.Cancel()
		} else {
			db.Set(key, []byte("v"))
		}
		if err := w2.Wait(context.Background()); err != nil && !errors.Is(err, ErrOperationCancelled) {
			t.Fatal(err)
		}
	}
	db.watchMu.Lock()
	n := len(db.watches)
	db.watchMu.Unlock()
	if n != 0 {
		t.Fatalf("%d keys left in the watch table", n)
	}
}

// Close fails the watches still waiting, and those armed after it, with
// ErrClosed: no commit could fire them any more, and a goroutine waiting
// for one would wait for good.
func TestWatchFailsOnClose(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := db.Begin()
	w := tx.Watch([]byte("k"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	late, _ := db.Begin()
	lw := late.Watch([]byte("k"))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	late.Commit()
	for _, w := range []*Watch{w, lw} {
		if !watchFired(w) {
			t.Fatal("a watch is still waiting after Close")
		}
		if err := w.Wait(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("watch after Close: %v", err)
		}
	}
}

// FoundationDB's watch reads its key as a Get does, without Snapshot: the
// key joins the transaction's read conflict ranges, unless the
// transaction's own write answers the read. A read-only transaction has
// no conflict check, so its watch just fires.
func TestWatchAddsReadConflict(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	db.Set([]byte("k"), []byte("v1"))

	tx, _ := db.Begin()
	w := tx.Watch([]byte("k"))
	tx.Set([]byte("other"), []byte("x"))
	db.Set([]byte("k"), []byte("v2"))
	if err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("commit after another transaction changed the watched key: %v, want ErrConflict", err)
	}
	if err := w.Wait(context.Background()); !errors.Is(err, ErrConflict) {
		t.Fatalf("watch of the failed commit: %v, want ErrConflict", err)
	}

	// Answered by the transaction's own writes: no read conflict.
	for name, write := range map[string]func(*Tx){
		"set":        func(tx *Tx) { tx.Set([]byte("k"), []byte("mine")) },
		"clear":      func(tx *Tx) { tx.Clear([]byte("k")) },
		"clearrange": func(tx *Tx) { tx.ClearRange([]byte("j"), []byte("l")) },
	} {
		tx, _ = db.Begin()
		write(tx)
		w = tx.Watch([]byte("k"))
		db.Set([]byte("k"), []byte("other "+name))
		if err := tx.Commit(); err != nil {
			t.Fatalf("%s before the watch, then a change by another: %v, want no conflict", name, err)
		}
		w.Cancel()
	}

	// An atomic operation on a value not read yet reads the database's.
	tx, _ = db.Begin()
	tx.Add([]byte("n"), []byte{1})
	w = tx.Watch([]byte("n"))
	db.Set([]byte("n"), []byte{5})
	if err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("watch of a key with a pending atomic operation, changed by another: %v, want ErrConflict", err)
	}

	// A read-only transaction commits without a check; its watch fires.
	tx, _ = db.Begin()
	w = tx.Watch([]byte("k"))
	db.Set([]byte("k"), []byte("v3"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A snapshot read does not stand in for the watch's own read.
	tx, _ = db.Begin()
	tx.Snapshot().Get([]byte("k"))
	w = tx.Watch([]byte("k"))
	tx.Set([]byte("other"), []byte("y"))
	db.Set([]byte("k"), []byte("v4"))
	if err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("after a snapshot read: %v, want ErrConflict", err)
	}
}
