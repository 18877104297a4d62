package caskade

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// mustSet sets each key to value and fails t on an error.
func mustSet(t *testing.T, db *DB, value string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if err := db.Set([]byte(k), []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
}

// resetKey puts key back as the tests' setup had it: "v" if it is one of
// the keys set there, else absent.
func resetKey(t *testing.T, db *DB, key string, setUp ...string) {
	t.Helper()
	for _, k := range setUp {
		if k == key {
			mustSet(t, db, "v", key)
			return
		}
	}
	if err := db.Delete([]byte(key)); err != nil {
		t.Fatal(err)
	}
}

// mustBegin starts a transaction and fails t on an error.
func mustBegin(t *testing.T, db *DB) *Tx {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// commitVerdict commits tx and checks that it failed with a conflict if
// and only if conflict says so.
func commitVerdict(t *testing.T, tx *Tx, name string, conflict bool) {
	t.Helper()
	err := tx.Commit()
	if conflict && !errors.Is(err, ErrConflict) {
		t.Errorf("%s: want a conflict, got %v", name, err)
	}
	if !conflict && err != nil {
		t.Errorf("%s: want no conflict, got %v", name, err)
	}
}

// A range read that the caller abandons part way still read what it
// returned: a change to any of those keys must fail the commit, as a
// change to a key past where it stopped must not (as with a limit).
func TestAbandonedRangeReadConflicts(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1})
	mustSet(t, db, "v", "a1", "a2", "a3", "a4")
	for _, c := range []struct {
		reverse  bool
		writes   bool // the transaction wrote before reading: the slow path
		changed  string
		conflict bool
	}{
		{false, false, "a2", true},
		{false, true, "a2", true},
		{false, false, "a1", true},
		{false, false, "a3", false},
		{false, true, "a3", false},
		{true, false, "a3", true},
		{true, true, "a3", true},
		{true, false, "a2", false},
		{true, true, "a2", false},
	} {
		name := fmt.Sprintf("reverse=%v writes=%v changed=%s", c.reverse, c.writes, c.changed)
		tx := mustBegin(t, db)
		if c.writes {
			tx.Set([]byte("out"), []byte("x"))
		}
		it := tx.RangeIterator(FirstGreaterOrEqual([]byte("a")), FirstGreaterOrEqual([]byte("b")), &RangeOptions{Reverse: c.reverse})
		for range 2 { // two of the four keys, then the caller stops
			if !it.Next() {
				t.Fatalf("%s: iterator ended early: %v", name, it.Err())
			}
		}
		tx.Set([]byte("out"), []byte("y"))
		mustSet(t, db, "changed", c.changed)
		commitVerdict(t, tx, name, c.conflict)
	}
}

// A range read between offset-1 selectors (FirstGreaterOrEqual,
// FirstGreaterThan) read the keys from the begin key to the end key and no
// further: writes past the end key, or before the begin key, do not fail
// its commit, as in FoundationDB; writes inside it still do.
func TestRangeReadConflictBounds(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1})
	mustSet(t, db, "v", "a", "b1", "z")
	for _, c := range []struct {
		begin, end KeySelector
		limit      int
		written    string
		conflict   bool
	}{
		{FirstGreaterOrEqual([]byte("b")), FirstGreaterOrEqual([]byte("c")), 0, "c", false},
		{FirstGreaterOrEqual([]byte("b")), FirstGreaterOrEqual([]byte("c")), 0, "y", false},
		{FirstGreaterOrEqual([]byte("b")), FirstGreaterOrEqual([]byte("c")), 0, "z", false}, // the next key past the end
		{FirstGreaterOrEqual([]byte("b")), FirstGreaterOrEqual([]byte("c")), 0, "a", false}, // the key before the begin
		{FirstGreaterOrEqual([]byte("b")), FirstGreaterOrEqual([]byte("c")), 0, "b", true},
		{FirstGreaterOrEqual([]byte("b")), FirstGreaterOrEqual([]byte("c")), 0, "b1", true},
		{FirstGreaterOrEqual([]byte("b")), FirstGreaterOrEqual([]byte("c")), 0, "b\xff", true},
		{FirstGreaterThan([]byte("b1")), FirstGreaterThan([]byte("c")), 0, "b1", false},
		{FirstGreaterThan([]byte("b1")), FirstGreaterThan([]byte("c")), 0, "c", true},
		{FirstGreaterThan([]byte("b1")), FirstGreaterThan([]byte("c")), 0, "c\x00", false},
		// An empty range past the last key.
		{FirstGreaterOrEqual([]byte("zz")), FirstGreaterOrEqual([]byte("zzz")), 0, "zzzz", false},
		{FirstGreaterOrEqual([]byte("zz")), FirstGreaterOrEqual([]byte("zzz")), 0, "zz5", true},
		// Inverted: reads nothing, depends on nothing.
		{FirstGreaterOrEqual([]byte("c")), FirstGreaterOrEqual([]byte("b")), 0, "b5", false},
		// Other selectors still cover the keys between their key and their result.
		{LastLessThan([]byte("b")), FirstGreaterOrEqual([]byte("c")), 0, "a", true},
		{FirstGreaterOrEqual([]byte("b")), FirstGreaterOrEqual([]byte("c")).Add(1), 0, "y", true},
	} {
		name := fmt.Sprintf("%v..%v, write %q", c.begin, c.end, c.written)
		tx := mustBegin(t, db)
		if _, err := tx.GetRange(c.begin, c.end, &RangeOptions{Limit: c.limit}); err != nil {
			t.Fatal(err)
		}
		tx.Set([]byte("out"), []byte("x"))
		mustSet(t, db, "new", c.written)
		commitVerdict(t, tx, name, c.conflict)
		resetKey(t, db, c.written, "a", "b1", "z")
	}
}

// A key the transaction writes while a range read is under way shows in
// the read only if it is inside the range: never at or past an end key of
// FirstGreaterOrEqual.
func TestRangeReadEndWhileWriting(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	mustSet(t, db, "v", "a1", "c")
	for _, rev := range []bool{false, true} {
		tx := mustBegin(t, db)
		it := tx.RangeIterator(FirstGreaterOrEqual([]byte("a")), FirstGreaterOrEqual([]byte("b")), &RangeOptions{Reverse: rev})
		if !rev {
			if !it.Next() {
				t.Fatal(it.Err())
			}
		}
		tx.Set([]byte("a5"), []byte("in"))
		tx.Set([]byte("b"), []byte("out"))
		tx.Set([]byte("b5"), []byte("out"))
		var got []string
		if !rev {
			got = append(got, "a1")
		}
		for it.Next() {
			got = append(got, string(it.KeyValue().Key))
		}
		want := "[a1 a5]"
		if rev {
			want = "[a5 a1]"
		}
		if fmt.Sprint(got) != want {
			t.Errorf("reverse %v: %v, want %s", rev, got, want)
		}
		tx.Rollback()
	}
}

// Resolving a key selector reads the keys between its bound and its result
// and no others: FirstGreaterThan(k) and LastLessThan(k) do not depend on k
// itself, so a write to k does not fail the commit (in FoundationDB
// neither), while a change between the bound and the result, or to the
// result, does.
func TestKeySelectorConflictBounds(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1})
	mustSet(t, db, "v", "b", "d", "f")
	for _, c := range []struct {
		sel      KeySelector
		want     string // the resolved key; "<nil>" past the last key
		written  string
		conflict bool
	}{
		{FirstGreaterThan([]byte("b")), "d", "b", false},
		{FirstGreaterThan([]byte("b")), "d", "c", true},
		{FirstGreaterThan([]byte("b")), "d", "d", true},
		{FirstGreaterThan([]byte("b")), "d", "d\x00", false},
		{FirstGreaterOrEqual([]byte("c")), "d", "b", false},
		{FirstGreaterOrEqual([]byte("c")), "d", "c", true},
		{LastLessThan([]byte("d")), "b", "d", false},
		{LastLessThan([]byte("d")), "b", "c", true},
		{LastLessThan([]byte("d")), "b", "b", true},
		{LastLessThan([]byte("d")), "b", "a", false},
		{LastLessOrEqual([]byte("d")), "d", "d", true},
		{LastLessOrEqual([]byte("d")), "d", "d\x00", false},
		{LastLessOrEqual([]byte("c")).Add(-1), "", "a", true},  // clamped at the start
		{FirstGreaterThan([]byte("f")), "\xff\xff", "z", true}, // past the last key
		{FirstGreaterThan([]byte("b")).Add(1), "f", "e", true},
		{FirstGreaterThan([]byte("b")).Add(1), "f", "g", false},
		{LastLessThan(nil), "", "a", false}, // depends on nothing
	} {
		name := fmt.Sprintf("%v, write %q", c.sel, c.written)
		tx := mustBegin(t, db)
		got, err := tx.GetKey(c.sel)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil || string(got) != c.want {
			t.Fatalf("%s: resolved to %q, want %s", name, got, c.want)
		}
		tx.Set([]byte("out"), []byte("x"))
		mustSet(t, db, "new", c.written)
		commitVerdict(t, tx, name, c.conflict)
		if err := db.Delete([]byte("out")); err != nil {
			t.Fatal(err)
		}
		resetKey(t, db, c.written, "b", "d", "f")
	}
}

// TestTxKeyRange checks Tx.Range: key bounds, a nil end reaching the end of
// the key space (keys from 0xff on included), the transaction's own
// writes, the limit, and read conflicts exactly over what was read.
func TestTxKeyRange(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1})
	mustSet(t, db, "v", "a", "b", "c", "\xff", "\xff\xff")
	keys := func(kvs []KeyValue) string {
		var s []string
		for _, kv := range kvs {
			s = append(s, string(kv.Key))
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		begin, end string
		nilEnd     bool
		o          RangeOptions
		want       string
	}{
		{begin: "b", nilEnd: true, want: "b,bb,c,\xff,\xff\xff"},
		{begin: "", nilEnd: true, o: RangeOptions{Reverse: true, Limit: 2}, want: "\xff\xff,\xff"},
		{begin: "a", end: "c", want: "a,b,bb"},
		{begin: "c", end: "c", want: ""},
		{begin: "a", end: "\xff", o: RangeOptions{Limit: 2}, want: "a,b"},
	} {
		tx := mustBegin(t, db)
		tx.Set([]byte("bb"), []byte("own"))
		var end []byte
		if !c.nilEnd {
			end = []byte(c.end)
		}
		kvs, err := tx.Range([]byte(c.begin), end, &c.o)
		if err != nil {
			t.Fatal(err)
		}
		if got := keys(kvs); got != c.want {
			t.Errorf("Range(%q, %q, %+v) = %q, want %q", c.begin, end, c.o, got, c.want)
		}
		tx.Rollback()
	}

	tx := mustBegin(t, db)
	if _, err := tx.Range([]byte("c"), []byte("b"), nil); !errors.Is(err, ErrInvalidRange) {
		t.Errorf("Range(c, b): %v, want ErrInvalidRange", err)
	}
	tx.Rollback()

	// Conflicts: the whole range to the end, or up to the last key a
	// limited read returned.
	for _, c := range []struct {
		limit    int
		changed  string
		conflict bool
	}{
		{0, "\xff\xff\xff", true},
		{0, "a", false},
		{2, "bz", true}, // read b and c
		{2, "cz", false},
	} {
		tx := mustBegin(t, db)
		if _, err := tx.Range([]byte("b"), nil, &RangeOptions{Limit: c.limit}); err != nil {
			t.Fatal(err)
		}
		tx.Set([]byte("out"), []byte("x")) // not read-only
		mustSet(t, db, "changed", c.changed)
		commitVerdict(t, tx, fmt.Sprintf("limit=%d changed=%q", c.limit, c.changed), c.conflict)
		resetKey(t, db, c.changed, "a", "b", "c", "\xff", "\xff\xff")
	}
}

// A range read over what the transaction cleared before it read that from
// its own writes, not the database: as in FoundationDB, a change there by
// another transaction does not fail the commit. A change outside the
// cleared part does, and so does one in a range cleared only after the
// read, which met the database's keys there first.
func TestRangeReadOverOwnClearNoConflict(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	setUp := []string{"b", "d", "q", "x"}
	mustSet(t, db, "v", setUp...)
	for _, tc := range []struct {
		name       string
		clearFirst [2]string // cleared before the read ("" end: none)
		clearAfter [2]string // cleared after the read
		write      string    // what another transaction writes meanwhile
		conflict   bool
	}{
		{"inside the cleared range", [2]string{"a", "m"}, [2]string{}, "c", false},
		{"a key the clear removed", [2]string{"a", "m"}, [2]string{}, "b", false},
		{"past the cleared range", [2]string{"a", "m"}, [2]string{}, "r", true},
		{"before the cleared middle", [2]string{"c", "m"}, [2]string{}, "b", true},
		{"the whole range cleared", [2]string{"", "zz"}, [2]string{}, "q", false},
		{"cleared after the read", [2]string{}, [2]string{"a", "m"}, "c", true},
	} {
		tx := mustBegin(t, db)
		if tc.clearFirst[1] != "" {
			tx.ClearRange([]byte(tc.clearFirst[0]), []byte(tc.clearFirst[1]))
		}
		if _, err := tx.Range([]byte("a"), []byte("z"), nil); err != nil {
			t.Fatal(err)
		}
		if tc.clearAfter[1] != "" {
			tx.ClearRange([]byte(tc.clearAfter[0]), []byte(tc.clearAfter[1]))
		}
		mustSet(t, db, "other", tc.write)
		commitVerdict(t, tx, tc.name, tc.conflict)
		for _, k := range append([]string{tc.write}, setUp...) {
			resetKey(t, db, k, setUp...)
		}
	}
	// An iterator that met "b" in the database, then saw the transaction
	// clear it, read it all the same.
	tx := mustBegin(t, db)
	it := tx.KeyRangeIterator([]byte("a"), []byte("z"), nil)
	if !it.Next() || string(it.KeyValue().Key) != "b" {
		t.Fatalf("first pair %q, %v; want b", it.KeyValue().Key, it.Err())
	}
	tx.ClearRange([]byte("a"), []byte("m"))
	for it.Next() {
	}
	mustSet(t, db, "other", "b")
	commitVerdict(t, tx, "cleared in the middle of the read", true)
}

func TestSubtractRanges(t *testing.T) {
	kr := func(b, e string) keyRange {
		r := keyRange{begin: []byte(b)}
		if e != "~" {
			r.end = []byte(e)
		}
		return r
	}
	show := func(rs []keyRange) string {
		var parts []string
		for _, r := range rs {
			end := "~"
			if r.end != nil {
				end = string(r.end)
			}
			parts = append(parts, fmt.Sprintf("[%s,%s)", r.begin, end))
		}
		return strings.Join(parts, " ")
	}
	for _, tc := range []struct {
		r    keyRange
		cuts []keyRange
		want string
	}{
		{kr("a", "z"), nil, "[a,z)"},
		{kr("a", "z"), []keyRange{kr("c", "f")}, "[a,c) [f,z)"},
		{kr("a", "z"), []keyRange{kr("", "f")}, "[f,z)"},
		{kr("a", "z"), []keyRange{kr("m", "~")}, "[a,m)"},
		{kr("a", "~"), []keyRange{kr("m", "p")}, "[a,m) [p,~)"},
		{kr("a", "z"), []keyRange{kr("c", "f"), kr("e", "h"), kr("x", "~")}, "[a,c) [h,x)"},
		{kr("a", "z"), []keyRange{kr("z", "zz")}, "[a,z)"},
		{kr("a", "z"), []keyRange{kr("", "~")}, ""},
	} {
		if got := show(subtractRanges(tc.r, tc.cuts)); got != tc.want {
			t.Errorf("%s minus %s = %q, want %q", show([]keyRange{tc.r}), show(tc.cuts), got, tc.want)
		}
	}
}
