// Package keydir is caskade's in-memory key directory: an ordered map from
// key to the location, commit version and expiry of the key's newest record.
// It is a B-tree (tidwall/btree) whose clones are O(1) copy-on-write
// snapshots: a clone shares every node with its source until one of them
// changes a node.
//
// A Tree is not safe for concurrent use, but a Clone may be read by any number
// of goroutines while its source (or another clone) is being changed.
package keydir

import (
	"unsafe"

	"github.com/tidwall/btree"
)

// Entry is what the directory knows about a key without a disk read.
type Entry struct {
	FileID  uint32 // data file holding the newest record
	ValLen  uint32 // length of the value
	Offset  int64  // offset of the record within the file
	Version uint64 // commit version of the record
	Expiry  int64  // Unix milliseconds; 0 means the key does not expire
}

// Expired reports whether the entry has expired at nowMs (Unix milliseconds).
func (e Entry) Expired(nowMs int64) bool { return e.Expiry != 0 && e.Expiry <= nowMs }

type item struct {
	key string
	e   Entry
}

func less(a, b item) bool { return a.key < b.key }

// Tree is the ordered key directory.
type Tree struct {
	bt *btree.BTreeG[item]
}

// New returns an empty Tree.
func New() *Tree {
	return &Tree{bt: btree.NewBTreeGOptions(less, btree.Options{NoLocks: true})}
}

// probe returns a search item whose key aliases b; it must not be stored.
func probe(b []byte) item {
	return item{key: unsafe.String(unsafe.SliceData(b), len(b))}
}

// Len returns the number of keys, expired or not.
func (t *Tree) Len() int { return t.bt.Len() }

// Get returns the entry for key.
func (t *Tree) Get(key []byte) (Entry, bool) {
	it, ok := t.bt.Get(probe(key))
	return it.e, ok
}

// Set stores e for key, copying key, and returns the entry it replaced.
func (t *Tree) Set(key []byte, e Entry) (old Entry, replaced bool) {
	prev, ok := t.bt.Set(item{key: string(key), e: e})
	return prev.e, ok
}

// SetString is Set for a key already held as a string (no copy is made).
func (t *Tree) SetString(key string, e Entry) (old Entry, replaced bool) {
	prev, ok := t.bt.Set(item{key: key, e: e})
	return prev.e, ok
}

// Load is Set optimised for keys added in ascending order, as recovery does.
func (t *Tree) Load(key string, e Entry) {
	t.bt.Load(item{key: key, e: e})
}

// Delete removes key and returns the entry it had.
func (t *Tree) Delete(key []byte) (Entry, bool) {
	prev, ok := t.bt.Delete(probe(key))
	return prev.e, ok
}

// Clone returns an O(1) copy-on-write copy. Afterwards the two trees are
// independent: changing one never changes the other.
func (t *Tree) Clone() *Tree { return &Tree{bt: t.bt.Copy()} }

// Iter returns an iterator, positioned nowhere until a First, Last or Seek.
// The tree must not change while the iterator is in use; iterate a Clone for
// that. Release the iterator when done.
func (t *Tree) Iter() *Iter {
	return &Iter{it: t.bt.Iter()}
}

// Iter walks a Tree in key order.
type Iter struct {
	it btree.IterG[item]
}

// First moves to the smallest key.
func (i *Iter) First() bool { return i.it.First() }

// Last moves to the largest key.
func (i *Iter) Last() bool { return i.it.Last() }

// Seek moves to the smallest key >= key.
func (i *Iter) Seek(key []byte) bool { return i.it.Seek(probe(key)) }

// Next moves to the next key.
func (i *Iter) Next() bool { return i.it.Next() }

// Prev moves to the previous key.
func (i *Iter) Prev() bool { return i.it.Prev() }

// Key returns the current key. The string is immutable and stays valid.
func (i *Iter) Key() string { return i.it.Item().key }

// Entry returns the current entry.
func (i *Iter) Entry() Entry { return i.it.Item().e }

// Release returns the iterator's resources; it must not be used afterwards.
func (i *Iter) Release() { i.it.Release() }
