package caskade

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// A key set with SetVersionstampedValue cannot be read in its transaction,
// whose versionstamp is not known until commit: FoundationDB fails the read
// with accessed_unreadable (1036), and so does caskade, for point reads,
// range reads and key selectors that reach the key, until a Set or Clear of
// it. Atomic operations after it apply at commit to the stamped value.
func TestVersionstampedValueUnreadable(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	mustSet(t, db, "v", "a")
	stamped := append(append([]byte("at:"), make([]byte, 10)...), 3, 0, 0, 0)
	unreadable := func(what string, err error) {
		t.Helper()
		var e *Error
		if !errors.Is(err, ErrAccessedUnreadable) || !errors.As(err, &e) || e.Code != 1036 {
			t.Errorf("%s: %v, want accessed_unreadable", what, err)
		}
	}
	tx := mustBegin(t, db)
	tx.SetVersionstampedValue([]byte("k"), stamped)
	v, err := tx.Get([]byte("k"))
	unreadable("get", err)
	if v != nil {
		t.Errorf("get returned %q", v)
	}
	_, err = tx.Snapshot().Get([]byte("k"))
	unreadable("snapshot get", err)
	_, err = tx.GetRange(FirstGreaterOrEqual(nil), FirstGreaterOrEqual([]byte("z")), nil)
	unreadable("range", err)
	_, err = tx.GetRange(FirstGreaterOrEqual(nil), FirstGreaterOrEqual([]byte("z")), &RangeOptions{KeysOnly: true, Reverse: true})
	unreadable("reverse keys-only range", err)
	_, err = tx.GetKey(FirstGreaterThan([]byte("a")))
	unreadable("selector", err)
	// Keys beside it read as usual.
	if kvs, err := tx.GetRange(FirstGreaterOrEqual(nil), FirstGreaterOrEqual([]byte("k")), nil); err != nil || len(kvs) != 1 {
		t.Errorf("range before the key: %q %v", kvs, err)
	}
	tx.AppendIfFits([]byte("k"), []byte("!")) // still unreadable, applied at commit
	_, err = tx.Get([]byte("k"))
	unreadable("get after an atomic operation", err)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	vs, err := tx.Versionstamp()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("at:" + string(vs) + "!")
	if got, err := db.Get([]byte("k")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("committed %q, %v; want %q", got, err, want)
	}
	if binary.BigEndian.Uint64(vs) != tx.CommittedVersion() {
		t.Fatalf("versionstamp %x", vs)
	}

	// A Set afterwards leaves it unreadable, as in FoundationDB (the
	// commit stores the plain value); a Clear makes it readable again.
	tx = mustBegin(t, db)
	tx.SetVersionstampedValue([]byte("k"), stamped)
	tx.Set([]byte("k"), []byte("plain"))
	_, err = tx.Get([]byte("k"))
	unreadable("get after a set", err)
	tx.Clear([]byte("k"))
	tx.Set([]byte("k"), []byte("plain"))
	if v, err := tx.Get([]byte("k")); err != nil || string(v) != "plain" {
		t.Errorf("after a clear and a set: %q %v", v, err)
	}
	tx.SetVersionstampedValue([]byte("k"), stamped)
	tx.ClearRange([]byte("j"), []byte("l"))
	if _, err := tx.Get([]byte("k")); !errors.Is(err, ErrNotFound) {
		t.Errorf("after a range clear: %v", err)
	}
	tx.Rollback()
	tx = mustBegin(t, db)
	tx.SetVersionstampedValue([]byte("k"), stamped)
	tx.Set([]byte("k"), []byte("plain"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get([]byte("k")); err != nil || string(v) != "plain" {
		t.Errorf("committed after a set: %q %v", v, err)
	}
}

// A versionstamp offset outside the key or value fails the commit with
// FoundationDB's client_invalid_operation (2000).
func TestVersionstampOffsetInvalid(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	for _, b := range [][]byte{
		{1, 2, 3},
		append(make([]byte, 10), 1, 0, 0, 0),
		append(make([]byte, 10), 0xff, 0xff, 0xff, 0xff),
	} {
		for _, key := range []bool{true, false} {
			tx := mustBegin(t, db)
			if key {
				tx.SetVersionstampedKey(b, []byte("v"))
			} else {
				tx.SetVersionstampedValue([]byte("k"), b)
			}
			err := tx.Commit()
			var e *Error
			if !errors.Is(err, ErrInvalidOperation) || !errors.As(err, &e) || e.Code != 2000 {
				t.Errorf("%x (key %v): %v, want client_invalid_operation", b, key, err)
			}
		}
	}
}

// A key set with SetVersionstampedKey lands, at commit, somewhere in the
// range of keys its versionstamp can take: from the first version after the
// read version to the all-0xff stamp. As in FoundationDB, a read whose
// result depends on that range fails with accessed_unreadable (point reads
// inside it, range reads that cover part of it, selectors that pass over
// it), until a Set or Clear makes that part known.
func TestVersionstampedKeyUnreadable(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	mustSet(t, db, "v", "a", "r", "z")
	unreadable := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrAccessedUnreadable) {
			t.Errorf("%s: %v, want accessed_unreadable", what, err)
		}
	}
	readable := func(what string, err error) {
		t.Helper()
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v, want a result", what, err)
		}
	}
	stampAt := func(v uint64) []byte {
		k := append([]byte("q:"), make([]byte, 10)...)
		binary.BigEndian.PutUint64(k[2:], v)
		return k
	}
	tx := mustBegin(t, db)
	rv := tx.ReadVersion()
	tx.SetVersionstampedKey(append(append([]byte("q:"), make([]byte, 10)...), 2, 0, 0, 0), []byte("item"))

	_, err := tx.Get(stampAt(rv + 1))
	unreadable("get where the key may land", err)
	_, err = tx.Snapshot().Get(stampAt(rv + 5))
	unreadable("snapshot get where the key may land", err)
	_, err = tx.Get(stampAt(rv))
	readable("get below the range (an older stamp)", err)
	_, err = tx.Get([]byte("q:old"))
	unreadable("get of a key in the range (any byte after the stamp's first)", err)
	_, err = tx.Get([]byte("r"))
	readable("get after the range", err)
	_, err = tx.Range([]byte("q:"), []byte("q;"), nil)
	unreadable("range over the prefix", err)
	_, err = tx.Range([]byte("q:"), []byte("q;"), &RangeOptions{Reverse: true})
	unreadable("reverse range over the prefix", err)
	_, err = tx.Range([]byte("q:"), nil, &RangeOptions{Limit: 1})
	unreadable("limited range that reaches the range first", err)
	kvs, err := tx.Range([]byte(""), []byte("q:"), nil)
	readable("range before", err)
	if len(kvs) != 1 {
		t.Errorf("range before: %q", kvs)
	}
	_, err = tx.Range([]byte("a"), nil, &RangeOptions{Limit: 1})
	readable("range stopped by its limit before the range", err)
	_, err = tx.GetKey(FirstGreaterOrEqual([]byte("q:")))
	unreadable("selector passing over the range", err)
	_, err = tx.GetKey(LastLessOrEqual([]byte("z")))
	readable("selector landing after the range", err)
	_, err = tx.GetKey(LastLessThan([]byte("r")))
	unreadable("selector going back over the range", err)
	_, err = tx.GetKey(FirstGreaterOrEqual([]byte("r")))
	readable("selector after the range", err)

	// A Set leaves its key unreadable, as in FoundationDB; a Clear makes
	// it known, a ClearRange its range.
	tx.Set(stampAt(rv+1), []byte("mine"))
	_, err = tx.Get(stampAt(rv + 1))
	unreadable("get of a key set since", err)
	tx.Clear(stampAt(rv + 1))
	tx.Set(stampAt(rv+1), []byte("mine"))
	if v, err := tx.Get(stampAt(rv + 1)); err != nil || string(v) != "mine" {
		t.Errorf("get of a key cleared and set since: %q %v", v, err)
	}
	_, err = tx.Range([]byte("q:"), []byte("q;"), nil)
	unreadable("range after one key was cleared", err)
	tx.ClearRange([]byte("q:"), []byte("q;"))
	kvs, err = tx.Range([]byte("q:"), []byte("q;"), nil)
	if err != nil || len(kvs) != 0 {
		t.Errorf("range after the clear: %q %v", kvs, err)
	}
	tx.Rollback()

	// The key is readable once committed.
	tx = mustBegin(t, db)
	tx.SetVersionstampedKey(append(append([]byte("q:"), make([]byte, 10)...), 2, 0, 0, 0), []byte("item"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	vs, err := tx.Versionstamp()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get(append([]byte("q:"), vs...)); err != nil || string(v) != "item" {
		t.Fatalf("committed key: %q %v", v, err)
	}
}

// Selectors that cannot have a key between them (the begin at or after the
// end, in key and in offset) read nothing, as in FoundationDB's getRange,
// which returns at once without resolving them: no read conflict, and no
// accessed_unreadable from a resolution that walks over where a
// versionstamped key may land.
func TestSelectorRangeInvertedReadsNothing(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	mustSet(t, db, "v", "a", "z")
	tx := mustBegin(t, db)
	defer tx.Rollback()
	tx.SetVersionstampedKey(append(append([]byte("q:"), make([]byte, 10)...), 2, 0, 0, 0), []byte("item"))
	for _, c := range []struct{ begin, end KeySelector }{
		{LastLessThan([]byte("r")), LastLessThan([]byte("b"))},
		{LastLessOrEqual([]byte("r")), LastLessThan([]byte("r"))},
		{KeySelector{Key: []byte("r"), Offset: 2}, KeySelector{Key: []byte("b"), Offset: -1}},
		{FirstGreaterOrEqual([]byte("r")), LastLessThan([]byte("q"))},
	} {
		for _, reverse := range []bool{false, true} {
			kvs, err := tx.GetRange(c.begin, c.end, &RangeOptions{Reverse: reverse})
			if err != nil || len(kvs) != 0 {
				t.Errorf("%v .. %v reverse %v: %q %v, want nothing", c.begin, c.end, reverse, kvs, err)
			}
		}
	}
	if len(tx.reads) != 0 {
		t.Errorf("read conflicts %q, want none", tx.reads)
	}
}
