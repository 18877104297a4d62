package caskade

import (
	"bytes"
	"fmt"
)

// KeySelector names a key by its position relative to another, as
// FoundationDB's key selectors do: find the last key < Key (<= Key if
// OrEqual), then move Offset keys forward (or back, if negative). Offset 1
// therefore means the first key after that one.
//
// Resolution clamps at the ends of the key space, as in FoundationDB: a
// selector that lands before the first key resolves to the empty key
// []byte{} (the start), and one that lands after the last key to the end
// of the key space, the key "\xff\xff" (FoundationDB's answer for a
// transaction that can read its system keys; caskade has none, and every
// key is readable). FoundationDB allows no keys from "\xff\xff" on;
// caskade does (the Redis front end keeps database 255 there), and where
// there are such keys, the end is the key just after the last of them, so
// that the end of the key space always sorts after every key. Either way
// the result works as the bound of a range read: a range from it is
// empty, and one up to it reaches the last key.
type KeySelector struct {
	Key     []byte
	OrEqual bool
	Offset  int
}

// FirstGreaterOrEqual selects the first key >= key.
func FirstGreaterOrEqual(key []byte) KeySelector { return KeySelector{Key: key, Offset: 1} }

// FirstGreaterThan selects the first key > key.
func FirstGreaterThan(key []byte) KeySelector {
	return KeySelector{Key: key, OrEqual: true, Offset: 1}
}

// LastLessThan selects the last key < key.
func LastLessThan(key []byte) KeySelector { return KeySelector{Key: key} }

// LastLessOrEqual selects the last key <= key.
func LastLessOrEqual(key []byte) KeySelector { return KeySelector{Key: key, OrEqual: true} }

// Add returns the selector moved by n more keys.
func (s KeySelector) Add(n int) KeySelector { s.Offset += n; return s }

// String formats the selector as FoundationDB's bindings do.
func (s KeySelector) String() string {
	return fmt.Sprintf("KeySelector(%q, %v, %d)", s.Key, s.OrEqual, s.Offset)
}

// keySpaceEnd is what a selector past the last key resolves to, unless
// keys from it on exist (see KeySelector).
var keySpaceEnd = []byte{0xff, 0xff}

// endAfter returns the end of the key space for a database whose last key
// is last (ok false: it has none): keySpaceEnd, or the key after last if
// that is not before it. The result is the caller's.
func endAfter(last []byte, ok bool) []byte {
	if ok && bytes.Compare(last, keySpaceEnd) >= 0 {
		return keyAfter(bytes.Clone(last))
	}
	return bytes.Clone(keySpaceEnd)
}

// getKey resolves sel for the GetKey methods: as resolve, with past the
// last key turned into the end of the key space.
func (v *view) getKey(sel KeySelector) []byte {
	if k := v.resolve(sel); k != nil {
		return k
	}
	it := newIterator(v, nil)
	defer it.close(false)
	var last []byte
	ok := it.Last()
	if ok {
		last = it.Key()
	}
	return endAfter(last, ok)
}

// resolve finds the key a selector names in the view, skipping expired
// keys: nil past the last key, which range reads take as the end of the
// key space.
func (v *view) resolve(sel KeySelector) []byte {
	it := newIterator(v, nil)
	defer it.close(false)
	// Position on the last key < Key (or <= Key).
	var ok bool
	if sel.OrEqual {
		ok = it.SeekLT(append(sel.Key[:len(sel.Key):len(sel.Key)], 0))
	} else {
		ok = it.SeekLT(sel.Key)
	}
	off := sel.Offset
	for ; off > 0; off-- {
		if ok {
			ok = it.Next()
		} else {
			ok = it.First()
		}
		if !ok {
			return nil // past the last key
		}
	}
	for ; off < 0 && ok; off++ {
		ok = it.Prev()
	}
	if !ok {
		return []byte{} // before the first key
	}
	return append([]byte{}, it.Key()...)
}
