package caskade

import (
	"bytes"
	"errors"
	"testing"
)

// getKeyWant turns a model's resolution of a selector (nil: past the last
// key) into what GetKey returns, for a key space below "\xff\xff".
func getKeyWant(k []byte) []byte {
	if k == nil {
		return []byte("\xff\xff")
	}
	return k
}

// GetKey clamps as FoundationDB's does: before the first key to the empty
// key, past the last to the end of the key space, "\xff\xff" (where
// keys from there on exist, the key after the last of them), never nil.
// Every GetKey agrees: the DB's, a snapshot's, a transaction's and its
// snapshot reader's.
func TestGetKeyClampsAsFoundationDB(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{ExpiryPeriod: -1, MergeInterval: -1})
	getKeys := func(t *testing.T, sel KeySelector) [][]byte {
		t.Helper()
		var out [][]byte
		add := func(k []byte, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%v: %v", sel, err)
			}
			out = append(out, k)
		}
		add(db.GetKey(sel))
		snap := db.Snapshot()
		add(snap.GetKey(sel))
		snap.Close()
		tx := mustBegin(t, db)
		add(tx.GetKey(sel))
		add(tx.Snapshot().GetKey(sel))
		tx.Rollback()
		return out
	}
	check := func(t *testing.T, sel KeySelector, want string) {
		t.Helper()
		for i, got := range getKeys(t, sel) {
			if got == nil || string(got) != want {
				t.Errorf("GetKey #%d of %v = %q, want %q", i, sel, got, want)
			}
		}
	}

	// An empty database: everything clamps.
	check(t, FirstGreaterOrEqual([]byte("a")), "\xff\xff")
	check(t, LastLessThan([]byte("a")), "")
	check(t, FirstGreaterOrEqual(nil), "\xff\xff")

	for _, k := range []string{"a", "b", "\xff\x01x"} {
		mustSet(t, db, "v", k)
	}
	check(t, FirstGreaterThan([]byte("\xff\x01x")), "\xff\xff")
	check(t, FirstGreaterOrEqual([]byte("a")).Add(5), "\xff\xff")
	check(t, LastLessOrEqual([]byte("\xff\xff\xff")), "\xff\x01x")
	check(t, LastLessThan([]byte("a")).Add(-3), "")
	check(t, FirstGreaterOrEqual([]byte("\xff\xff")), "\xff\xff")

	// A range read from the end is empty; one up to it reaches the last key.
	tx := mustBegin(t, db)
	end, err := tx.GetKey(FirstGreaterThan([]byte("b")).Add(5))
	if err != nil {
		t.Fatal(err)
	}
	if kvs, err := tx.Range(end, nil, nil); err != nil || len(kvs) != 0 {
		t.Errorf("range from the end of the key space: %v, %v", kvs, err)
	}
	if kvs, err := tx.Range([]byte("b"), end, nil); err != nil || len(kvs) != 2 {
		t.Errorf("range up to the end of the key space: %v, %v", kvs, err)
	}
	// The transaction's own writes count, past "\xff\xff" too.
	tx.Set([]byte("\xff\xff\x05"), []byte("v"))
	if k, err := tx.GetKey(FirstGreaterThan([]byte("\xff\xff\x05"))); err != nil || string(k) != "\xff\xff\x05\x00" {
		t.Errorf("past a written key after \\xff\\xff: %q, %v; want the key after it", k, err)
	}
	if k, err := tx.GetKey(FirstGreaterThan([]byte("b"))); err != nil || string(k) != "\xff\x01x" {
		t.Errorf("FirstGreaterThan(b) = %q, %v", k, err)
	}
	tx.Rollback()

	// Keys from "\xff\xff" on, which FoundationDB does not allow: the end
	// is the key after the last, so it still sorts after every key.
	mustSet(t, db, "v", "\xff\xff\x01")
	check(t, FirstGreaterThan([]byte("\xff\xff\x01")), "\xff\xff\x01\x00")
	check(t, FirstGreaterOrEqual([]byte("\xff\xff")), "\xff\xff\x01")
	check(t, FirstGreaterOrEqual(nil).Add(10), "\xff\xff\x01\x00")

	// The read conflict of a resolution past the last key reaches to the
	// end of the key space: a key written after the last one fails it.
	tx = mustBegin(t, db)
	if k, err := tx.GetKey(FirstGreaterThan([]byte("\xff\xff\x01"))); err != nil || !bytes.Equal(k, []byte("\xff\xff\x01\x00")) {
		t.Fatalf("%q, %v", k, err)
	}
	tx.Set([]byte("out"), []byte("x"))
	mustSet(t, db, "v", "\xff\xff\x02")
	if err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("commit after a key was added past the end it resolved to: %v, want ErrConflict", err)
	}
}
