package caskade

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Read-modify-writes that wait for their turn all commit, however many
// contend for one key, and a Turn that never waited holds nothing.
func TestTurnContendedIncrements(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone})
	const workers, each = 16, 200
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range each {
				turn := db.Turn()
				committed := false
				for attempt := 0; attempt < 10000 && !committed; attempt++ {
					turn.Wait(attempt)
					v, info, err := db.Lookup([]byte("n"))
					n := 0
					if err == nil {
						n, _ = strconv.Atoi(string(v))
					} else if !errors.Is(err, ErrNotFound) {
						errs <- err
						turn.Done()
						return
					}
					var b Batch
					b.Check([]byte("n"), info.Version)
					b.Set([]byte("n"), strconv.AppendInt(nil, int64(n+1), 10))
					err = turn.Write(&b) // db.Write would wait for our own turn
					if err != nil && !errors.Is(err, ErrConflict) {
						errs <- err
						turn.Done()
						return
					}
					committed = err == nil
				}
				turn.Done()
				if !committed {
					errs <- errors.New("an increment never committed")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustGet(t, db, "n", strconv.Itoa(workers*each))

	idle := db.Turn()
	idle.Wait(TurnAfter - 1)
	if idle.held {
		t.Fatal("a Turn took the lock before its turn")
	}
	idle.Done()
	if !db.turns.TryLock() {
		t.Fatal("the turn lock is still held")
	}
	db.turns.Unlock()
}

// While a Turn holds the lock, other commits wait for it, and the
// holder's own Turn.Write does not.
func TestTurnHolderGoesFirst(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone})
	turn := db.Turn()
	turn.Wait(TurnAfter)
	if !turn.Held() {
		t.Fatal("no turn at attempt TurnAfter")
	}
	db.turnGrace.Store(int64(time.Hour)) // the others wait for Done
	other := make(chan error, 1)
	go func() { other <- db.Set([]byte("other"), []byte("1")) }()
	var b Batch
	b.Set([]byte("holder"), []byte("1"))
	if err := turn.Write(&b); err != nil { // waiting for itself would hang
		t.Fatal(err)
	}
	turn.Done()
	if err := <-other; err != nil {
		t.Fatal(err)
	}
	h, _ := db.Stat([]byte("holder"))
	o, _ := db.Stat([]byte("other"))
	if h.Version >= o.Version {
		t.Fatalf("the holder committed at %d, after the other write at %d", h.Version, o.Version)
	}
}
