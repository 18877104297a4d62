package caskade

// TurnAfter is the attempt (counted from 0) of a read-modify-write at
// which Turn.Wait starts taking turns.
const TurnAfter = 2

// Turn makes read-modify-write loops that keep conflicting take turns
// instead of starving one another. Such a loop reads with Lookup or Stat,
// writes a Batch with Check, and runs again on ErrConflict; under heavy
// contention on one key every attempt can lose to another writer. Wait,
// called before each attempt, lets the first TurnAfter attempts run freely
// and from then on holds a lock shared by every Turn of the database, so
// whichever protocol a contender comes through (Redis, memcached, HTTP),
// the loops that keep losing run one at a time. Done releases it.
//
//	t := db.Turn()
//	defer t.Done()
//	for attempt := 0; attempt < limit; attempt++ {
//		t.Wait(attempt)
//		... read, build a Batch with Check, Write; return unless ErrConflict
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
	if attempt >= TurnAfter && !t.held {
		t.db.turns.Lock()
		t.held = true
	}
}

// Done releases the turn lock if Wait took it.
func (t *Turn) Done() {
	if t.held {
		t.held = false
		t.db.turns.Unlock()
	}
}
