package caskade

import (
	"errors"
	"strconv"
	"sync"
	"testing"
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
					err = db.Write(&b)
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
