package caskade

import "time"

// TurnAfter is the attempt (counted from 0) of a read-modify-write at
// which Turn.Wait starts taking turns.
const TurnAfter = 2

// A commit waits for a Turn that holds the lock for minTurnGrace, twice
// as long after each further attempt of the Turn's, up to maxTurnGrace,
// and then goes ahead anyway.
const (
	minTurnGrace = 10 * time.Millisecond
	maxTurnGrace = time.Second
)

// Turn makes read-modify-write loops that keep conflicting take turns
// instead of starving one another. Such a loop reads with Lookup, Stat or
// a snapshot, writes a Batch with Check (or CheckRange), and runs again on
// ErrConflict; under heavy contention every attempt can lose to another
// writer. Wait, called before each attempt, lets the first TurnAfter
// attempts run freely and from then on holds a lock shared by every Turn
// of the database, so whichever protocol a contender comes through
// (Redis, memcached, HTTP), the loops that keep losing run one at a time.
//
// While a Turn holds the lock, every other commit, including plain writes
// that never conflict, first waits for it to finish: for up to 10 ms, twice
// as long after each attempt the holder loses again, up to a second. A
// loop that keeps losing to a stream of writes into what it read (an EXEC
// whose KEYS range is being filled, say) thus gets a quiet moment long
// enough to commit, and a holder that blocks on something else cannot
// stop the database for more than a second. The holder writes with
// Turn.Write, which does not wait for itself. Done releases the lock.
//
//	t := db.Turn()
//	defer t.Done()
//	for attempt := 0; attempt < limit; attempt++ {
//		t.Wait(attempt)
//		... read, build a Batch with Check, t.Write(b); return unless ErrConflict
//	}
//
// A Turn belongs to one goroutine.
type Turn struct {
	db   *DB
	held bool
}

// Turn starts the turns of one read-modify-write.
func (db *DB) Turn() Turn { return Turn{db: db} }

// Wait is called before attempt (counted from 0); from attempt TurnAfter
// on it waits for the database's turn lock, and then holds it until Done.
func (t *Turn) Wait(attempt int) {
	if attempt < TurnAfter {
		return
	}
	db := t.db
	if t.held {
		// Lost again in its turn: the others wait longer.
		db.turnGrace.Store(min(2*db.turnGrace.Load(), int64(maxTurnGrace)))
		return
	}
	db.turns.Lock()
	t.held = true
	db.turnGrace.Store(int64(minTurnGrace))
	db.turnMu.Lock()
	db.turnDone = make(chan struct{})
	db.turnMu.Unlock()
	db.turnHeld.Store(true)
}

// Held reports whether the Turn holds the lock.
func (t *Turn) Held() bool { return t.held }

// Write is DB.Write for the loop: while the Turn holds the lock, its
// batch goes ahead of the commits that wait for it.
func (t *Turn) Write(b *Batch) error { return t.db.write(b, t.held) }

// Done releases the turn lock if Wait took it.
func (t *Turn) Done() {
	if !t.held {
		return
	}
	t.held = false
	db := t.db
	db.turnHeld.Store(false)
	db.turnMu.Lock()
	close(db.turnDone)
	db.turnDone = nil
	db.turnMu.Unlock()
	db.turns.Unlock()
}

// awaitTurn waits until the Turn that holds the lock is done, or its
// grace (which may grow meanwhile) has passed.
func (db *DB) awaitTurn() {
	db.turnMu.Lock()
	done := db.turnDone
	db.turnMu.Unlock()
	if done == nil {
		return
	}
	start := time.Now()
	for {
		left := time.Duration(db.turnGrace.Load()) - time.Since(start)
		if left <= 0 {
			return
		}
		t := time.NewTimer(left)
		select {
		case <-done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}
