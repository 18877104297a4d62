package keydir

import (
	"bytes"
	"fmt"
)

// Iter walks a Tree in key order. The tree must not change while the
// iterator is in use; iterate a Clone for that.
type Iter struct {
	t     *Tree
	stack []frame  // from the root down to the current leaf
	buf   [8]frame // the stack's first home: 64^8 keys deep, so no allocation
}

type frame struct {
	n *node
	i int
}

// Iter returns an iterator, positioned nowhere until First, Last or Seek.
func (t *Tree) Iter() *Iter {
	it := &Iter{t: t}
	it.stack = it.buf[:0]
	return it
}

func (it *Iter) leaf() *frame { return &it.stack[len(it.stack)-1] }

// keysAhead is how many keys ahead of its position an iterator prefetches.
// The arena keeps keys in the order they were written, so one read in key
// order after random writes meets a cache (and TLB) miss at nearly every
// key; with the keys ahead on their way, those misses overlap.
const keysAhead = 8

// keyAhead prefetches the key of item i of leaf n, if there is one.
func (it *Iter) keyAhead(n *node, i int) {
	if i >= 0 && i < n.n {
		it.t.ar.prefetch(n.items().ref(i))
	}
}

// keysFrom prefetches the keysAhead keys from the current position on, in
// the direction of travel: Next and Prev then keep that many ahead.
func (it *Iter) keysFrom(reverse bool) {
	f := it.leaf()
	for k := range keysAhead {
		if reverse {
			k = -k
		}
		it.keyAhead(f.n, f.i+k)
	}
}

// descend pushes the path from n to its leftmost (first) or rightmost leaf.
func (it *Iter) descend(n *node, first bool) {
	for {
		i := 0
		if !first {
			i = n.n - 1
		}
		it.stack = append(it.stack, frame{n, i})
		if n.leaf() {
			return
		}
		n = n.kids[i]
	}
}

// First moves to the smallest key.
func (it *Iter) First() bool {
	it.stack = it.stack[:0]
	if it.t.root == nil {
		return false
	}
	it.descend(it.t.root, true)
	it.keysFrom(false)
	return true
}

// Last moves to the largest key.
func (it *Iter) Last() bool {
	it.stack = it.stack[:0]
	if it.t.root == nil {
		return false
	}
	it.descend(it.t.root, false)
	it.keysFrom(true)
	return true
}

// Seek moves to the smallest key >= key.
func (it *Iter) Seek(key []byte) bool {
	it.stack = it.stack[:0]
	n := it.t.root
	if n == nil {
		return false
	}
	for !n.leaf() {
		i := it.t.searchInner(n, key)
		it.stack = append(it.stack, frame{n, i})
		n = n.kids[i]
	}
	i, _ := it.t.searchLeaf(n, key)
	it.stack = append(it.stack, frame{n, i})
	if i < n.n {
		it.keysFrom(false)
		return true
	}
	it.leaf().i = n.n - 1
	return it.Next()
}

// Next moves to the next key.
func (it *Iter) Next() bool {
	if len(it.stack) == 0 {
		return false
	}
	if f := it.leaf(); f.i+1 < f.n.n {
		f.i++
		it.keyAhead(f.n, f.i+keysAhead)
		return true
	}
	for d := len(it.stack) - 2; d >= 0; d-- {
		if f := &it.stack[d]; f.i+1 < f.n.n {
			f.i++
			it.stack = it.stack[:d+1]
			it.descend(f.n.kids[f.i], true)
			it.keysFrom(false)
			return true
		}
	}
	it.stack = it.stack[:0]
	return false
}

// Prev moves to the previous key.
func (it *Iter) Prev() bool {
	if len(it.stack) == 0 {
		return false
	}
	if f := it.leaf(); f.i > 0 {
		f.i--
		it.keyAhead(f.n, f.i-keysAhead)
		return true
	}
	for d := len(it.stack) - 2; d >= 0; d-- {
		if f := &it.stack[d]; f.i > 0 {
			f.i--
			it.stack = it.stack[:d+1]
			it.descend(f.n.kids[f.i], false)
			it.keysFrom(true)
			return true
		}
	}
	it.stack = it.stack[:0]
	return false
}

// Key returns the current key. It aliases the directory's memory: the
// caller must not modify it. It stays valid as long as the tree does.
func (it *Iter) Key() []byte {
	f := it.leaf()
	return it.t.keyOf(f.n.items().ref(f.i))
}

// Entry returns the current entry.
func (it *Iter) Entry() Entry {
	f := it.leaf()
	return it.t.entry(f.n.items(), f.i)
}

// KeyEntry returns the current key, as Key does, and entry.
func (it *Iter) KeyEntry() ([]byte, Entry) {
	f := it.leaf()
	return it.t.keyOf(f.n.items().ref(f.i)), it.t.entry(f.n.items(), f.i)
}

// Ahead fills dst with the entries of the items that follow the current
// one in its leaf (or, with reverse, precede it), nearest first, without
// moving, and returns how many it filled: fewer than len(dst) at the
// leaf's end.
func (it *Iter) Ahead(dst []Entry, reverse bool) int {
	if len(it.stack) == 0 {
		return 0
	}
	f := it.leaf()
	c := 0
	if reverse {
		for i := f.i - 1; i >= 0 && c < len(dst); i-- {
			dst[c] = it.t.entry(f.n.items(), i)
			c++
		}
		return c
	}
	for i := f.i + 1; i < f.n.n && c < len(dst); i++ {
		dst[c] = it.t.entry(f.n.items(), i)
		c++
	}
	return c
}

// Release ends the use of the iterator. It exists for symmetry with other
// iterators; the iterator holds no resources.
func (it *Iter) Release() { it.stack = nil }

// Loader bulk-builds a tree from keys in strictly ascending order, filling
// every node. Use it to rebuild the directory at open. Several loaders
// (NewLoaders) can build disjoint, consecutive key ranges of one tree in
// parallel.
type Loader struct {
	t      *Tree
	al     *allocator
	leaves []*node
	last   []byte
	count  int
}

// NewLoader starts a bulk load into an empty tree that shares nothing with
// any other. Set the file bases on Tree() before adding entries.
func NewLoader() *Loader { return NewLoaders(1)[0] }

// NewLoaders returns n loaders building one tree: loader i takes keys that
// all sort after those of loader i-1. Each loader is used by one goroutine;
// FinishAll joins them. Set the file bases on Tree() first.
func NewLoaders(n int) []*Loader {
	t := New()
	ls := make([]*Loader, n)
	for i := range ls {
		ls[i] = &Loader{t: t, al: &allocator{a: t.ar}}
	}
	return ls
}

// Tree returns the tree being built (complete only after Finish).
func (l *Loader) Tree() *Tree { return l.t }

// Add appends key, which must be greater than every key added before.
func (l *Loader) Add(key []byte, e Entry) {
	if len(l.leaves) > 0 && bytes.Compare(key, l.last) <= 0 {
		panic(fmt.Sprintf("keydir: Loader.Add of %q after %q", key, l.last))
	}
	var cur *node
	if len(l.leaves) > 0 {
		cur = l.leaves[len(l.leaves)-1]
	}
	if cur == nil || cur.n == maxItems {
		if cur != nil {
			l.t.refitLeaf(cur)
		}
		cur = l.t.newLeaf()
		l.leaves = append(l.leaves, cur)
	}
	ref := l.al.put(key, e.Expiry != 0, e.Expiry)
	cur.items().setRef(cur.n, ref)
	l.t.pack(&cur.items().vals[cur.n], e)
	cur.n++
	l.count++
	l.last = l.t.keyOf(ref)
}

// Finish builds the inner levels and returns the tree.
func (l *Loader) Finish() *Tree { return FinishAll([]*Loader{l}) }

// FinishAll joins the leaves of loaders made by NewLoaders, in order, and
// builds the inner levels above them.
func FinishAll(ls []*Loader) *Tree {
	t := ls[0].t
	var level []*node
	for _, l := range ls {
		if len(l.leaves) > 0 {
			t.refitLeaf(l.leaves[len(l.leaves)-1])
		}
		level = append(level, l.leaves...)
		t.count += l.count
		t.al.live += l.al.live
		l.leaves = nil
	}
	firsts := make([]uint64, len(level)) // least key under each node
	for i, n := range level {
		firsts[i] = n.items().ref(0)
	}
	for len(level) > 1 {
		groups := (len(level) + maxKids - 1) / maxKids
		next := make([]*node, 0, groups)
		nextFirsts := make([]uint64, 0, groups)
		for g := range groups {
			lo, hi := g*len(level)/groups, (g+1)*len(level)/groups
			p := t.newInner()
			p.n = copy(p.kids[:], level[lo:hi])
			copy(p.keys[:], firsts[lo+1:hi])
			t.refitInner(p)
			next = append(next, p)
			nextFirsts = append(nextFirsts, firsts[lo])
		}
		level, firsts = next, nextFirsts
	}
	if len(level) == 1 {
		t.root = level[0]
	}
	return t
}
