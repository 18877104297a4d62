package caskade

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// mustWatchCount fails the test unless want watches are outstanding.
func mustWatchCount(t *testing.T, db *DB, want int) {
	t.Helper()
	if n := db.outstandingWatches(); n != want {
		t.Fatalf("%d outstanding watches, want %d", n, want)
	}
	if n := db.Stats().Watches; n != want {
		t.Fatalf("Stats().Watches = %d, want %d", n, want)
	}
}

// At most Options.MaxWatches watches are outstanding, armed or not: one
// beyond fails with too_many_watches (1032, not retryable), as
// FoundationDB's max_watches limit does, without failing its transaction;
// once one of them ends, a new one may be set.
func TestWatchLimit(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{MaxWatches: 3})
	db.Set([]byte("a"), []byte("1"))

	// One armed by a read-only commit, one by a writing commit, and one
	// of a transaction still open: all three count.
	tx, _ := db.Begin()
	wa := tx.Watch([]byte("a"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx, _ = db.Begin()
	wb := tx.Watch([]byte("b"))
	tx.Set([]byte("x"), []byte("1"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	open, _ := db.Begin()
	wc := open.Watch([]byte("c"))
	mustWatchCount(t, db, 3)

	over := open.Watch([]byte("d"))
	if !watchFired(over) {
		t.Fatal("a watch beyond the limit is still waiting")
	}
	err := over.Wait(context.Background())
	var e *Error
	if !errors.Is(err, ErrTooManyWatches) || !errors.As(err, &e) || e.Code != 1032 || IsRetryable(err) {
		t.Fatalf("watch beyond the limit: %v, want too_many_watches (1032), not retryable", err)
	}
	mustWatchCount(t, db, 3)
	// The transaction goes on and commits, its counted watch armed.
	open.Set([]byte("y"), []byte("1"))
	if _, err := open.Get([]byte("a")); err != nil {
		t.Fatalf("read after a refused watch: %v", err)
	}
	if err := open.Commit(); err != nil {
		t.Fatalf("commit after a refused watch: %v", err)
	}
	for _, w := range []*Watch{wa, wb, wc} {
		if watchFired(w) {
			t.Fatalf("watch fired without a change: %v", w.Wait(context.Background()))
		}
	}

	// A watch that fires makes room for another.
	db.Set([]byte("a"), []byte("2"))
	if err := wa.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustWatchCount(t, db, 2)
	tx, _ = db.Begin()
	wd := tx.Watch([]byte("d"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if watchFired(wd) {
		t.Fatalf("watch within the limit: %v", wd.Wait(context.Background()))
	}
	mustWatchCount(t, db, 3)
}

func TestMaxWatchesOption(t *testing.T) {
	for _, tc := range []struct {
		n  int
		ok bool
	}{
		{0, true}, {1, true}, {1_000_000, true}, {-1, true}, {1_000_001, false},
	} {
		err := (&Options{MaxWatches: tc.n}).Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidOptions)) {
			t.Errorf("MaxWatches %d: Validate() = %v, want ok %v", tc.n, err, tc.ok)
		}
	}
	if got := (&Options{}).withDefaults().MaxWatches; got != 10_000 {
		t.Errorf("default MaxWatches %d, want 10000 (FoundationDB's)", got)
	}
}

// A negative MaxWatches allows no watch, as FoundationDB's max_watches 0
// does: each fails with too_many_watches, and its transaction goes on.
func TestNoWatches(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{MaxWatches: -1})
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	w := tx.Watch([]byte("a"))
	if !watchFired(w) {
		t.Fatal("a watch with watches disabled is waiting")
	}
	if err := w.Wait(context.Background()); !errors.Is(err, ErrTooManyWatches) {
		t.Fatalf("watch with watches disabled: %v, want %v", err, ErrTooManyWatches)
	}
	tx.Set([]byte("a"), []byte("1"))
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit after a refused watch: %v", err)
	}
	mustWatchCount(t, db, 0)
}

// Every way a watch can end stops counting it, and only once: after many
// watches fired, cancelled (perhaps twice, perhaps after firing), rolled
// back, failed with their commit or refused at the limit, none is left
// counted, and the limit still admits MaxWatches new ones.
func TestWatchCountDoesNotLeak(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	const limit = 8
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{MaxWatches: limit, MaxKeySize: 16, Now: clk.Now, ExpiryPeriod: -1})
	key := func() []byte { return fmt.Appendf(nil, "k%d", r.IntN(4)) }
	var armed []*Watch // of committed transactions, still waiting perhaps
	for range 2000 {
		tx, _ := db.Begin()
		ws := make([]*Watch, 1+r.IntN(3))
		for i := range ws {
			ws[i] = tx.Watch(key())
		}
		switch r.IntN(7) {
		case 0: // read-only commit
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			armed = append(armed, ws...)
		case 1: // writing commit, perhaps writing a watched key
			tx.Set(key(), fmt.Appendf(nil, "%d", r.IntN(3)))
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			armed = append(armed, ws...)
		case 2:
			tx.Rollback()
		case 3: // a commit failed by an invalid mutation
			tx.Set([]byte("a key longer than sixteen bytes"), nil)
			if err := tx.Commit(); !errors.Is(err, ErrKeyTooLarge) {
				t.Fatalf("commit: %v", err)
			}
		case 4: // a commit failed by a conflict
			tx.Set([]byte("x"), nil)
			tx.Get([]byte("k0"))
			db.Set([]byte("k0"), fmt.Appendf(nil, "c%d", r.Uint64()))
			if err := tx.Commit(); !errors.Is(err, ErrConflict) {
				t.Fatalf("commit: %v", err)
			}
		case 5: // a commit too old
			clk.Advance(time.Hour)
			tx.Set([]byte("x"), nil)
			if err := tx.Commit(); !errors.Is(err, ErrTransactionTooOld) {
				t.Fatalf("commit: %v", err)
			}
		case 6: // ReadTransact
			tx.Rollback()
			err := db.ReadTransact(context.Background(), func(tx *Tx) error {
				tx.Watch(key())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// Changes fire some armed watches, cancels end others.
		for range r.IntN(3) {
			db.Set(key(), fmt.Appendf(nil, "%d", r.IntN(3)))
		}
		if len(armed) > 0 && r.IntN(2) == 0 {
			w := armed[r.IntN(len(armed))]
			w.Cancel()
			w.Cancel()
		}
		kept := armed[:0]
		for _, w := range armed {
			if !watchFired(w) {
				kept = append(kept, w)
			}
		}
		armed = kept
		if n := db.outstandingWatches(); n != len(armed) || n < 0 || n > limit {
			t.Fatalf("%d outstanding watches, %d waiting", n, len(armed))
		}
	}
	for _, w := range armed {
		w.Cancel()
	}
	mustWatchCount(t, db, 0)
	tx, _ := db.Begin()
	defer tx.Rollback()
	for i := range limit {
		if w := tx.Watch([]byte("k0")); watchFired(w) {
			t.Fatalf("watch %d of %d after all ended: %v", i+1, limit, w.Wait(context.Background()))
		}
	}
}

// Closing the database ends the watches its commits armed; the watches
// of a transaction still open end when it does.
func TestWatchCountAfterClose(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{MaxWatches: 4})
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := db.Begin()
	tx.Watch([]byte("a"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	open, _ := db.Begin()
	open.Watch([]byte("b"))
	mustWatchCount(t, db, 2)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	mustWatchCount(t, db, 1)
	open.Commit() // fails or arms into a closed database: either ends it
	mustWatchCount(t, db, 0)
}

// watchAndDrop sets a watch in a transaction that it drops unfinished.
//
//go:noinline
func watchAndDrop(db *DB) *Watch {
	tx, _ := db.Begin()
	return tx.Watch([]byte("k"))
}

// The watches of a transaction dropped without Commit or Rollback end
// with transaction_cancelled once the collector finds it, as a destroyed
// FoundationDB transaction's do, rather than count for ever.
func TestWatchOfDroppedTransactionEnds(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{MaxWatches: 1})
	w := watchAndDrop(db)
	mustWatchCount(t, db, 1)
	// Cleanups run after a collection finds the transaction unreachable;
	// collect until the watch reports.
	deadline := time.After(20 * time.Second)
	for done := false; !done; {
		runtime.GC()
		select {
		case <-w.C():
			done = true
		case <-deadline:
			t.Fatal("the watch of a dropped transaction is still waiting")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := w.Wait(context.Background()); !errors.Is(err, ErrTransactionCancelled) {
		t.Fatalf("watch of a dropped transaction: %v", err)
	}
	mustWatchCount(t, db, 0)
}
