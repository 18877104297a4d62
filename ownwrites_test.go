package caskade

import (
	"fmt"
	"testing"
)

// FoundationDB leaves out of a read's conflict ranges the keys that the
// transaction's own writes decided before the read (a Set or a Clear, or
// a ClearRange): what the read returns there cannot depend on the
// database (RYW's updateConflictMap skips them). Keys with atomic
// operations on the database's value still count, and so do keys written
// after an iterator began: it may have read the database's value first.
func TestOwnWritesLeaveReadConflicts(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{ExpiryPeriod: -1, MergeInterval: -1})
	setUp := []string{"a", "b", "c", "d"}
	mustSet(t, db, "v", setUp...)
	for _, c := range []struct {
		name     string
		run      func(tx *Tx)
		written  string
		conflict bool
	}{
		{"selector over a set key", func(tx *Tx) {
			tx.Set([]byte("b"), []byte("mine"))
			tx.GetKey(FirstGreaterThan([]byte("a")).Add(1))
		}, "b", false},
		{"selector over a set key, another key", func(tx *Tx) {
			tx.Set([]byte("b"), []byte("mine"))
			tx.GetKey(FirstGreaterThan([]byte("a")).Add(1))
		}, "b1", true},
		{"selector back over a cleared key", func(tx *Tx) {
			tx.Clear([]byte("c"))
			tx.GetKey(LastLessThan([]byte("d")))
		}, "c", false},
		{"selector over a cleared range", func(tx *Tx) {
			tx.ClearRange([]byte("b"), []byte("c\x00"))
			tx.GetKey(FirstGreaterThan([]byte("a")))
		}, "b5", false},
		{"range over a set key", func(tx *Tx) {
			tx.Set([]byte("b"), []byte("mine"))
			tx.Range([]byte("a"), []byte("z"), nil)
		}, "b", false},
		{"range over a set key, another key", func(tx *Tx) {
			tx.Set([]byte("b"), []byte("mine"))
			tx.Range([]byte("a"), []byte("z"), nil)
		}, "c", true},
		{"selector range over a cleared key", func(tx *Tx) {
			tx.Clear([]byte("c"))
			tx.GetRange(FirstGreaterOrEqual([]byte("a")), FirstGreaterOrEqual([]byte("z")), nil)
		}, "c", false},
		{"range over an atomic operation", func(tx *Tx) {
			tx.Add([]byte("b"), []byte{1})
			tx.Range([]byte("a"), []byte("z"), nil)
		}, "b", true},
		{"range over an atomic operation on a set key", func(tx *Tx) {
			tx.Set([]byte("b"), []byte{1})
			tx.Add([]byte("b"), []byte{1})
			tx.Range([]byte("a"), []byte("z"), nil)
		}, "b", false},
		{"iterator over a key set after it began", func(tx *Tx) {
			it := tx.KeyRangeIterator([]byte("a"), []byte("z"), nil)
			it.Next()
			tx.Set([]byte("c"), []byte("mine"))
			for it.Next() {
			}
		}, "c", true},
	} {
		name := fmt.Sprintf("%s, write %q", c.name, c.written)
		tx := mustBegin(t, db)
		c.run(tx)
		if err := tx.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tx.Set([]byte("out"), []byte("x"))
		mustSet(t, db, "outside", c.written)
		commitVerdict(t, tx, name, c.conflict)
		resetKey(t, db, c.written, setUp...)
	}
}
