package caskade

import "fmt"

// KeySelector names a key by its position relative to another, as
// FoundationDB's key selectors do: find the last key < Key (<= Key if
// OrEqual), then move Offset keys forward (or back, if negative). Offset 1
// therefore means the first key after that one.
//
// Resolution clamps at the ends of the key space: a selector that lands
// before the first key resolves to the empty key []byte{} (the start), and
// one that lands after the last key resolves to nil, which range reads take
// as the end of the key space.
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

// resolve finds the key a selector names in the view, skipping expired keys.
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
