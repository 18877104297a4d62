package caskade

import (
	"bytes"
	"runtime"

	"github.com/caskade/caskade/internal/keydir"
	"github.com/caskade/caskade/internal/prefetch"
	"github.com/caskade/caskade/internal/segment"
)

// IterOptions bound an iterator to [LowerBound, UpperBound). A nil bound is
// open. Prefix, if set, narrows the bounds to the keys with that prefix.
type IterOptions struct {
	LowerBound []byte
	UpperBound []byte
	Prefix     []byte
}

// Iterator walks the keys of a snapshot in order, pull-style:
//
//	for ok := it.First(); ok; ok = it.Next() { use(it.Key(), it.Value()) }
//	if err := it.Err(); err != nil { ... }
//
// It reads values lazily, on the first call to Value at a position. Key and
// Value return slices owned by the iterator, valid until it moves. It is not
// safe for concurrent use. Close it when done.
type Iterator struct {
	v      *view
	it     *keydir.Iter
	lo, hi []byte
	valid  bool
	raw    []byte // the current key, in the key directory's memory
	key    []byte // its copy for Key, made on first use
	copied bool   // key holds raw
	entry  keydir.Entry
	val    []byte
	buf    []byte        // reused for values
	file   *segment.File // the file of the last value read
	// wantValues is set once Value is called: the iterator then
	// prefetches records ahead of it (readAhead); ahead counts those left.
	wantValues bool
	ahead      int
	// near counts the values read in a row whose records lay within
	// nearRecord bytes of the one read before, in the same file (lastOff).
	near      int
	lastOff   int64
	back      bool // the last move was backwards
	flags     uint32
	valLoaded bool
	err       error
	closed    bool
	ownsView  bool
	cleanup   runtime.Cleanup // guard's
}

func newIterator(v *view, opts *IterOptions) *Iterator {
	it := &Iterator{v: v, it: v.tree.Iter(), ownsView: true}
	if opts != nil {
		it.lo, it.hi = opts.LowerBound, opts.UpperBound
		if opts.Prefix != nil {
			if bytes.Compare(opts.Prefix, it.lo) > 0 {
				it.lo = opts.Prefix
			}
			if pe := PrefixEnd(opts.Prefix); pe != nil && (it.hi == nil || bytes.Compare(pe, it.hi) < 0) {
				it.hi = pe
			}
		}
	}
	return it
}

// guard registers the cleanup that releases the iterator's view if the
// caller drops it open (see readerHold). Iterators that the package
// closes itself go without.
func (i *Iterator) guard() {
	i.cleanup = runtime.AddCleanup(i, (*readerHold).release, &readerHold{v: i.v})
}

// settle validates the position after a move of the underlying iterator,
// skipping expired keys in the direction of travel.
func (i *Iterator) settle(ok, forward bool) bool {
	i.valid, i.valLoaded, i.val, i.flags = false, false, nil, 0
	if i.closed {
		i.err = ErrClosed
		return false
	}
	for ok {
		k, e := i.it.KeyEntry()
		if forward && i.hi != nil && bytes.Compare(k, i.hi) >= 0 {
			break
		}
		if !forward && bytes.Compare(k, i.lo) < 0 {
			break
		}
		if !e.Expired(i.v.nowMs) {
			i.valid, i.entry, i.back = true, e, !forward
			i.raw, i.copied = k, false
			if i.wantValues {
				i.readAhead(!forward)
			}
			return true
		}
		// Skipped: dropped soon if anyone subscribes (see DB.Subscribe),
		// as a point read that finds a key expired has it dropped.
		i.v.db.expiredOnRead(k, e.Version)
		if forward {
			ok = i.it.Next()
		} else {
			ok = i.it.Prev()
		}
	}
	return false
}

// nearRecord is how close (in bytes) two records read one after the other
// must be for readAhead to count them as read in file order.
const nearRecord = 4 << 10

// readAheadBatch is how many records an iterator that reads values
// prefetches at a time ahead of its position.
const readAheadBatch = 8

// readAhead prefetches the records of the next few keys in the current
// leaf once those prefetched before are used up. Their values are wherever
// they were written, so a range read meets a cache (and TLB) miss at
// nearly every record; prefetching a batch at once lets the CPU take
// those misses in parallel, before the records are decoded one by one. (A
// prefetch, unlike the load that did this before, holds up nothing while
// it waits, and cannot fault: a page not yet mapped is left to the read.)
func (i *Iterator) readAhead(reverse bool) {
	if i.near >= readAheadBatch {
		// The records are being read in file order (written in key
		// order, by a load or a merge): the CPU streams them by itself.
		return
	}
	if i.ahead > 0 {
		i.ahead--
		return
	}
	var ents [readAheadBatch]keydir.Entry
	n := i.it.Ahead(ents[:], reverse)
	i.ahead = n
	var m []byte
	fid := ^uint32(0)
	for k := range n {
		e := &ents[k]
		if e.FileID != fid {
			fid, m = e.FileID, nil
			if f := i.v.files.files[fid]; f != nil {
				m = f.Mapped()
			}
		}
		if e.Offset < int64(len(m)) {
			// Two lines: the header, key and CRC-checked value of a
			// small record often straddle a line boundary.
			prefetch.Bytes(m[e.Offset:min(e.Offset+2*prefetch.LineSize, int64(len(m)))])
		}
	}
}

// First moves to the first key in bounds.
func (i *Iterator) First() bool {
	if i.lo != nil {
		return i.settle(i.it.Seek(i.lo), true)
	}
	return i.settle(i.it.First(), true)
}

// Last moves to the last key in bounds.
func (i *Iterator) Last() bool { return i.seekLT(i.hi, true) }

// Seek moves to the first key >= key (and in bounds).
func (i *Iterator) Seek(key []byte) bool {
	if bytes.Compare(key, i.lo) < 0 {
		key = i.lo
	}
	return i.settle(i.it.Seek(key), true)
}

// SeekLT moves to the last key < key (and in bounds).
func (i *Iterator) SeekLT(key []byte) bool {
	if key == nil {
		key = []byte{}
	}
	return i.seekLT(key, false)
}

// seekLT moves to the last key < key; a nil key with toEnd means the last
// key of all.
func (i *Iterator) seekLT(key []byte, toEnd bool) bool {
	if i.hi != nil && (key == nil || bytes.Compare(key, i.hi) > 0) {
		key = i.hi
	}
	var ok bool
	switch {
	case key == nil && toEnd:
		ok = i.it.Last()
	case i.it.Seek(key):
		ok = i.it.Prev()
	default:
		ok = i.it.Last()
	}
	return i.settle(ok, false)
}

// Next moves to the next key.
func (i *Iterator) Next() bool {
	if !i.valid {
		return false
	}
	return i.settle(i.it.Next(), true)
}

// Prev moves to the previous key.
func (i *Iterator) Prev() bool {
	if !i.valid {
		return false
	}
	return i.settle(i.it.Prev(), false)
}

func (i *Iterator) step(reverse bool) bool {
	if reverse {
		return i.Prev()
	}
	return i.Next()
}

// Valid reports whether the iterator is at a key.
func (i *Iterator) Valid() bool { return i.valid }

// Key returns the current key, valid until the iterator moves.
func (i *Iterator) Key() []byte {
	if !i.valid {
		return nil
	}
	if !i.copied {
		// A copy, so that a caller who changes it cannot change the
		// key directory.
		i.key, i.copied = append(i.key[:0], i.raw...), true
	}
	return i.key
}

// keyView is Key without the copy, for callers in this package that copy
// it at once (and never modify it).
func (i *Iterator) keyView() []byte {
	if !i.valid {
		return nil
	}
	return i.raw
}

// Info returns what the key directory knows about the current key, and
// its flags once Value has read the record.
func (i *Iterator) Info() KeyInfo {
	if !i.valid {
		return KeyInfo{}
	}
	info := infoOf(i.entry)
	info.Flags = i.flags
	return info
}

// Value returns the current value, reading it from disk on first use. The
// slice is the iterator's and valid until it moves; copy it to keep it. On a
// read error it returns nil and Err reports the error.
func (i *Iterator) Value() []byte { return i.value(false) }

// value is Value; with view, the value may alias the file's read-only
// mapping instead of the iterator's buffer, for callers that copy it at
// once (and never modify it).
func (i *Iterator) value(view bool) []byte {
	if !i.valid {
		return nil
	}
	if !i.valLoaded {
		i.valLoaded = true
		if !i.wantValues {
			i.wantValues = true
			i.readAhead(i.back)
		}
		// The view's file set keeps the file open while the iterator
		// lives, so no per-read reference is needed; the value goes into
		// a buffer the iterator reuses.
		f := i.file
		if f != nil && f.ID == i.entry.FileID && max(i.entry.Offset-i.lastOff, i.lastOff-i.entry.Offset) < nearRecord {
			i.near++
		} else {
			i.near = 0
		}
		i.lastOff = i.entry.Offset
		if f == nil || f.ID != i.entry.FileID {
			if f = i.v.files.files[i.entry.FileID]; f == nil {
				i.val, i.err = nil, i.v.db.fileGone(i.entry.FileID)
				return nil
			}
			i.file = f // neighbouring keys are often in one file
		}
		if view {
			i.val, i.flags, i.err = i.v.db.viewFrom(f, i.raw, i.entry, &i.buf)
		} else {
			i.val, i.flags, i.err = i.v.db.readFrom(f, i.raw, i.entry, &i.buf)
		}
		if i.err != nil {
			i.val = nil
		}
	}
	return i.val
}

// Err returns the first error the iterator met.
func (i *Iterator) Err() error { return i.err }

// Close releases the iterator. Closing twice returns ErrClosed.
func (i *Iterator) Close() error { return i.close(true) }

func (i *Iterator) close(release bool) error {
	if i.closed {
		return ErrClosed
	}
	i.closed, i.valid = true, false
	i.cleanup.Stop()
	i.it.Release()
	if release && i.ownsView {
		i.v.release()
	}
	return nil
}
