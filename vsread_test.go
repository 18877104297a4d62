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

	// A Set or Clear afterwards makes it readable again.
	tx = mustBegin(t, db)
	tx.SetVersionstampedValue([]byte("k"), stamped)
	tx.Set([]byte("k"), []byte("plain"))
	if v, err := tx.Get([]byte("k")); err != nil || string(v) != "plain" {
		t.Errorf("after a set: %q %v", v, err)
	}
	tx.SetVersionstampedValue([]byte("k"), stamped)
	tx.ClearRange([]byte("j"), []byte("l"))
	if _, err := tx.Get([]byte("k")); !errors.Is(err, ErrNotFound) {
		t.Errorf("after a range clear: %v", err)
	}
	tx.Rollback()
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
