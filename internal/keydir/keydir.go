// Package keydir is caskade's in-memory key directory: an ordered map from
// key to the location, commit version and expiry of the key's newest record.
//
// It is a copy-on-write B+tree built for memory per key and for few cache
// misses per search. Items are 24 bytes and hold no pointers: the key lives
// in an append-only arena (see arena.go) and the item keeps a reference to
// it beside its search hint (the 8 bytes a search reads, see leafItems);
// the location packs the file id and offset into 8 bytes; the version is stored as a 32-bit delta from a
// per-file base version (see SetFileBase); the expiry, which few keys have,
// is stored in the arena after the key. Bulk loading (Load) fills every
// node, so a freshly opened directory costs about 24 bytes per key plus the
// key itself.
//
// Clone returns an O(1) snapshot: the two trees share every node until one
// of them changes it (path copying). A Tree is not safe for concurrent use,
// but any number of goroutines may read clones while the tree they were
// cloned from is changed. Clones are read-only.
package keydir

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/caskade/caskade/internal/prefetch"
	"github.com/caskade/caskade/internal/record"
)

// Limits of the packed item; the database keeps within them (it starts a new
// data file before an offset, a file id or a version delta would overflow).
const (
	MaxFileID       = 1<<24 - 1
	MaxOffset       = 1<<32 - 1
	MaxValLen       = 1<<30 - 1
	MaxVersionDelta = 1<<32 - 1
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

const (
	maxItems   = 62 // items per leaf: a leafNode fills a 1536-byte size class
	maxKids    = 64 // children per inner node
	flagExpiry = 1 << 30
	vlenMask   = 1<<30 - 1
)

// A leaf keeps its items as two arrays, so that a search reads only the
// first: keys, each a 24-bit search hint above the arena position of the
// key (its reference without the length byte), and vals, the rest of each
// entry, one 16-byte val per item, read once the search has found its
// item. A search then touches a third of the cache lines it would if each
// item were one 24-byte struct, and ordering an item by its hint is one
// comparison of its keys word.
type leafItems struct {
	keys [maxItems]uint64
	vals [maxItems]val
}

type val struct {
	loc  uint64 // key length byte << 56 | file id << 32 | offset
	ver  uint32 // version - base version of the file
	meta uint32 // value length | flagExpiry
}

const (
	posBits = refBits - lenBits // bits of an arena position
	posMask = 1<<posBits - 1
	locMask = 1<<56 - 1
)

// item is a leaf item to put in place: the key's arena reference, its hint
// and its entry's fields.
type item struct {
	ref  uint64
	hint uint64
	v    val
}

// ref returns the arena reference of the key of item i.
func (l *leafItems) ref(i int) uint64 {
	return (l.keys[i]&posMask)<<lenBits | l.vals[i].loc>>56
}

func (l *leafItems) hint(i int) uint64 { return l.keys[i] >> posBits }

func (l *leafItems) setHint(i int, h uint64) { l.keys[i] = l.keys[i]&posMask | h<<posBits }

// setRef makes ref the key of item i, keeping its hint.
func (l *leafItems) setRef(i int, ref uint64) {
	l.keys[i] = l.keys[i]&^posMask | (ref&refMask)>>lenBits
	l.vals[i].loc = l.vals[i].loc&locMask | (ref&longKey)<<56
}

func (l *leafItems) put(i int, it item) {
	l.keys[i] = it.hint<<posBits | (it.ref&refMask)>>lenBits
	l.vals[i] = it.v
	l.vals[i].loc = it.v.loc&locMask | (it.ref&longKey)<<56
}

// move copies count items from src at si to l at di (the ranges may
// overlap, as with copy).
func (l *leafItems) move(di int, src *leafItems, si, count int) {
	copy(l.keys[di:di+count], src.keys[si:si+count])
	copy(l.vals[di:di+count], src.vals[si:si+count])
}

// vacant is the keys word of a slot past a leaf's last item: greater than
// that of any item, so that a search may look at every slot (lowerBound).
const vacant = ^uint64(0)

// vacate marks the slots from i on as vacant.
func (l *leafItems) vacate(i int) {
	for j := i; j < maxItems; j++ {
		l.keys[j] = vacant
	}
}

// lowerBound returns the first slot whose keys word is >= k, or maxItems.
// It searches every slot, not the leaf's n: the first probe's address is
// then known before the node is read.
func (l *leafItems) lowerBound(k uint64) int {
	lo, size := 0, maxItems
	for size > 0 {
		half := size >> 1
		if l.keys[lo+half] < k {
			lo += half + 1
			size -= half + 1
		} else {
			size = half
		}
	}
	return lo
}

// A node is a leaf (a leafNode: items) or an inner node (keys, kids).
// Searching a node reads few keys from the arena, where each read is likely a cache miss:
// every key in a node starts with the node's prefix, and a hint of the
// bytes after it, kept in the node itself, orders most keys without looking
// at them. A leaf keeps the prefix length and a 24-bit hint per item (see
// leafItems); an inner node keeps the prefix (an alias of arena bytes) and a
// 64-bit hint per separator.
type node struct {
	gen    uint64 // generation of the tree that may change this node in place
	n      int    // items (leaf) or children (inner)
	plen   int32  // leaf only: length of the prefix of every key
	*inner        // nil in a leaf
}

// An innerNode is an inner node: its node and the inner data the node
// names, in one allocation, so that a search reads the node, its prefix
// and the start of its hints from neighbouring cache lines rather than
// from three places.
type innerNode struct {
	node
	in inner
}

type inner struct {
	pfx   []byte               // a prefix of every separator: in short if it fits, else arena bytes
	short [24]byte             // holds a short pfx
	hints [maxKids - 1]sepHint // sepHintOf keys[i] after pfx
	keys  [maxKids - 1]uint64  // keys[i] (an arena reference) is the least key under kids[i+1]
	kids  [maxKids]*node
}

// setPfx makes p the prefix, copied into the node if it fits.
func (in *inner) setPfx(p []byte) {
	if len(p) <= len(in.short) {
		in.pfx = in.short[:copy(in.short[:], p)]
		return
	}
	in.pfx = p
}

// A leafNode is a leaf: its node and its items in one allocation, so that
// a search can read the items' middle without waiting for the node, whose
// address gives theirs. With the 8-byte header that Go puts before a large
// object holding pointers, maxItems items fill a 1536-byte size class.
type leafNode struct {
	node
	items leafItems
}

func (n *node) leaf() bool { return n.inner == nil }

// items returns the items of the leaf n, which newLeaf allocated as a
// leafNode.
func (n *node) items() *leafItems { return &(*leafNode)(unsafe.Pointer(n)).items }

var generations atomic.Uint64

// fileBases maps file ids to base versions. Entries are written once, before
// any item of the file is inserted, and shared by clones.
type fileBases struct {
	t [1 << 12]*[1 << 12]uint64
}

func (f *fileBases) get(id uint32) uint64 {
	if l := f.t[id>>12]; l != nil {
		return l[id&(1<<12-1)]
	}
	return 0
}

func (f *fileBases) set(id uint32, base uint64) {
	if f.t[id>>12] == nil {
		f.t[id>>12] = new([1 << 12]uint64)
	}
	f.t[id>>12][id&(1<<12-1)] = base
}

// Tree is the ordered key directory.
type Tree struct {
	root     *node
	gen      uint64
	count    int
	ar       *arena
	al       *allocator // the writer's; clones share it but never allocate
	bases    *fileBases
	readOnly bool
	tracked  map[string]struct{} // keys changed since Track, if tracking
	dels     uint64              // counts deletions, which may take a leaf out of the tree (see Pos)
}

// New returns an empty Tree.
func New() *Tree {
	a := newArena()
	return &Tree{gen: generations.Add(1), ar: a, al: &allocator{a: a}, bases: new(fileBases)}
}

// SetFileBase sets the version that entries of file id are stored relative
// to: every entry of the file must have Version in [base, base+MaxVersionDelta].
// It must be called once per file, before the file's first entry.
func (t *Tree) SetFileBase(id uint32, base uint64) {
	t.mutable()
	if id > MaxFileID {
		panic(fmt.Sprintf("keydir: file id %d out of range", id))
	}
	t.bases.set(id, base)
}

// FileBase returns the base version of file id.
func (t *Tree) FileBase(id uint32) uint64 { return t.bases.get(id) }

func (t *Tree) mutable() {
	if t.readOnly {
		panic("keydir: a clone is read-only")
	}
}

// Len returns the number of keys, expired or not.
func (t *Tree) Len() int { return t.count }

// ArenaBytes reports the key bytes the arena holds for live keys and the
// bytes that deletions and rewrites left unreferenced (reclaimed by Compact).
func (t *Tree) ArenaBytes() (live, dead int64) { return t.al.live - t.ar.dead, t.ar.dead }

// Clone returns an O(1) read-only copy-on-write snapshot.
func (t *Tree) Clone() *Tree {
	c := *t
	c.gen, c.readOnly, c.tracked = generations.Add(1), true, nil
	t.gen = generations.Add(1)
	return &c
}

// entry returns the entry of item i of leaf l.
func (t *Tree) entry(l *leafItems, i int) Entry {
	v := &l.vals[i]
	fid := uint32((v.loc & locMask) >> 32)
	e := Entry{
		FileID:  fid,
		ValLen:  v.meta & vlenMask,
		Offset:  int64(v.loc & MaxOffset),
		Version: t.bases.get(fid) + uint64(v.ver),
	}
	if v.meta&flagExpiry != 0 {
		e.Expiry = t.ar.expiry(l.ref(i))
	}
	return e
}

// pack fills the fields of v from e, keeping the key length byte.
func (t *Tree) pack(v *val, e Entry) {
	base := t.bases.get(e.FileID)
	if e.FileID > MaxFileID || e.Offset < 0 || e.Offset > MaxOffset || e.ValLen > MaxValLen ||
		e.Version < base || e.Version-base > MaxVersionDelta {
		panic(fmt.Sprintf("keydir: entry %+v out of range (file base %d)", e, base))
	}
	v.loc = v.loc&^locMask | uint64(e.FileID)<<32 | uint64(e.Offset)
	v.ver = uint32(e.Version - base)
	v.meta = e.ValLen
	if e.Expiry != 0 {
		v.meta |= flagExpiry
	}
}

func (t *Tree) keyOf(ref uint64) []byte { return t.ar.key(ref) }

// hint24 and sepHintOf order the bytes of a key after its node's prefix:
// if hint(a) < hint(b) then a < b (a short key is padded with zeros, so
// equal hints say nothing and the keys themselves decide).
func hint24(s []byte) uint64 {
	var b [3]byte
	copy(b[:], s)
	return uint64(b[0])<<16 | uint64(b[1])<<8 | uint64(b[2])
}

// sepHint is a separator's hint: the first 16 bytes after its node's
// prefix, as two big-endian words. Sixteen, not eight: in a node whose
// keys share no prefix (the root over "counter:..." and "key:0000000..."
// keys, say), the separators of one family would otherwise all have the
// same hint, and a search would read a key from the arena at every step.
type sepHint struct{ hi, lo uint64 }

func sepHintOf(s []byte) sepHint {
	if len(s) >= 16 {
		return sepHint{binary.BigEndian.Uint64(s), binary.BigEndian.Uint64(s[8:])}
	}
	var b [16]byte
	copy(b[:], s)
	return sepHint{binary.BigEndian.Uint64(b[:]), binary.BigEndian.Uint64(b[8:])}
}

// outside compares key with the prefix p of every key in a node: 0 if key
// starts with p, otherwise -1 (key is less than every key in the node) or
// +1 (greater than every one).
func outside(p, key []byte) int {
	if len(key) >= len(p) && bytes.Equal(key[:len(p)], p) {
		return 0
	}
	return bytes.Compare(key, p) // cannot be 0: key does not start with p
}

// refitLeaf sets the prefix of the mutable leaf n to the longest common to
// its keys and recomputes every hint.
func (t *Tree) refitLeaf(n *node) {
	n.plen = 0
	if n.n == 0 {
		return
	}
	first := t.keyOf(n.items().ref(0))
	n.plen = int32(record.CommonPrefix(first, t.keyOf(n.items().ref(n.n-1))))
	t.rehint(n)
}

func (t *Tree) rehint(n *node) { t.rehintRange(n, 0, n.n) }

func (t *Tree) rehintRange(n *node, lo, hi int) {
	for i := lo; i < hi; i++ {
		n.items().setHint(i, hint24(t.keyOf(n.items().ref(i))[n.plen:]))
	}
}

// lcpLeaf returns the length of the longest prefix common to the keys of
// the leaf n: that of its first and last keys.
func (t *Tree) lcpLeaf(n *node) int32 {
	return int32(record.CommonPrefix(t.keyOf(n.items().ref(0)), t.keyOf(n.items().ref(n.n-1))))
}

// narrowLeaf refits the mutable leaf n if its keys share a longer prefix
// than it records (after a split, its keys span a narrower range), so
// that its hints look at the bytes that tell them apart.
func (t *Tree) narrowLeaf(n *node) {
	if p := t.lcpLeaf(n); p > n.plen {
		n.plen = p
		t.rehint(n)
	}
}

// joinLeaf fixes the prefix and hints of the mutable leaf n after the
// items [lo, hi) came to it from a leaf whose prefix length was from:
// only those items need new hints, unless the prefix must shorten.
func (t *Tree) joinLeaf(n *node, lo, hi int, from int32) {
	if p := t.lcpLeaf(n); p < n.plen {
		n.plen = p
		t.rehint(n)
	} else if from != n.plen {
		t.rehintRange(n, lo, hi)
	}
}

// hintFor returns the hint of key, which is about to join the mutable leaf
// n; if key does not start with the leaf's prefix, it first shortens the
// prefix and recomputes the other items' hints.
func (t *Tree) hintFor(n *node, key []byte) uint64 {
	if n.n > 0 {
		first := t.keyOf(n.items().ref(0))
		if l := int32(record.CommonPrefix(first[:n.plen], key)); l < n.plen {
			n.plen = l
			t.rehint(n)
		}
	} else {
		n.plen = int32(len(key))
	}
	return hint24(key[n.plen:])
}

// refitInner sets the prefix of the mutable inner node n to the longest
// common to its separators and recomputes every hint.
func (t *Tree) refitInner(n *node) {
	n.pfx = nil
	if n.n < 2 {
		return
	}
	first := t.keyOf(n.keys[0])
	n.setPfx(first[:record.CommonPrefix(first, t.keyOf(n.keys[n.n-2]))])
	for i := range n.n - 1 {
		n.hints[i] = sepHintOf(t.keyOf(n.keys[i])[len(n.pfx):])
	}
}

// setSep makes ref the separator i of the mutable inner node n.
func (t *Tree) setSep(n *node, i int, ref uint64) {
	ref &= refMask
	n.keys[i] = ref
	k := t.keyOf(ref)
	if outside(n.pfx, k) != 0 {
		t.refitInner(n)
		return
	}
	n.hints[i] = sepHintOf(k[len(n.pfx):])
}

// searchLeaf returns the index of the first item >= key and whether it is
// equal. It searches by hints as if key started with the leaf's prefix,
// then compares key with the keys of its hint, if any (usually one); it
// then checks that on the key it stops at.
func (t *Tree) searchLeaf(n *node, key []byte) (int, bool) {
	i, found, _ := t.searchLeafPfx(n, key)
	return i, found
}

// searchLeafPfx is searchLeaf, also reporting whether key starts with the
// leaf's prefix (false in an empty leaf).
func (t *Tree) searchLeafPfx(n *node, key []byte) (i int, found, inPfx bool) {
	if n.n == 0 {
		return 0, false, false
	}
	p := int(n.plen)
	var rest []byte
	if len(key) >= p {
		rest = key[p:]
	}
	h := hint24(rest)
	items := n.items()
	lo := items.lowerBound(h << posBits) // at most n.n: vacant slots are greater
	if lo < n.n && items.hint(lo) == h {
		hi := lo + 1
		for hi < n.n && items.hint(hi) == h {
			hi++
		}
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			c := bytes.Compare(t.keyOf(items.ref(m)), key)
			if c == 0 {
				return m, true, true // the usual end of a hit: one key read
			}
			if c < 0 {
				lo = m + 1
			} else {
				hi = m
			}
		}
	}
	near := lo
	if near == n.n {
		near--
	}
	k := t.keyOf(items.ref(near))
	switch outside(k[:p], key) {
	case -1:
		return 0, false, false
	case 1:
		return n.n, false, false
	}
	return lo, lo == near && items.hint(lo) == h && bytes.Equal(k[p:], rest), true
}

// searchInner returns the index of the child that may hold key, and asks
// the processor to load all of that child at once. A search reads a node
// in steps that each depend on the last (its header, then the middle of
// its hints, then a quarter...), and in a directory larger than the
// processor's caches nearly every step below the top levels is a miss:
// loaded together, the lines of a node cost about one memory latency
// instead of one per step. The few lines past a leaf's end (nodeLines is
// an inner node's size) cost bandwidth, not time. At 2M random keys this
// made BenchmarkProbeRandom about 30% faster.
func (t *Tree) searchInner(n *node, key []byte) int {
	i := t.childIndex(n, key)
	prefetch.Lines(unsafe.Pointer(n.kids[i]), nodeLines)
	return i
}

// nodeLines is the most cache lines an inner node (the larger kind) can
// span, wherever in a line it starts.
const nodeLines = int((unsafe.Sizeof(innerNode{})-1)/prefetch.LineSize + 2)

// childIndex is searchInner without the prefetch.
func (t *Tree) childIndex(n *node, key []byte) int {
	switch outside(n.pfx, key) {
	case -1:
		return 0
	case 1:
		return n.n - 1
	}
	rest := key[len(n.pfx):]
	h := sepHintOf(rest)
	lo, hi := 0, n.n-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		var le bool // separator m <= key
		if sh := &n.hints[m]; sh.hi != h.hi {
			le = sh.hi < h.hi
		} else if sh.lo != h.lo {
			le = sh.lo < h.lo
		} else {
			le = bytes.Compare(t.keyOf(n.keys[m])[len(n.pfx):], rest) <= 0
		}
		if le {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Pos is where Find found a key. While no key was deleted and no Clone
// taken since, SetAt replaces the key's entry there without searching the
// tree again, if the key is still at that index of its leaf: a
// read-modify-write (an increment, an atomic operation) then walks the
// tree once instead of twice, even after other keys were set or added.
//
// Only a deletion can take a leaf out of the tree (by emptying it, or
// merging it into a sibling) and leave it holding items that SetAt would
// then change unseen; a split or a shift of items between siblings
// leaves every leaf in the tree and moves items to other indexes or
// leaves, where the item's keys word is not found at the Pos.
type Pos struct {
	leaf *node
	i    int
	dels uint64
	word uint64 // the item's keys word: its hint and its key's arena position, unique to it
}

// Find returns the entry for key and, if key is present, its Pos.
func (t *Tree) Find(key []byte) (Entry, Pos, bool) {
	n := t.root
	if n == nil {
		return Entry{}, Pos{}, false
	}
	for !n.leaf() {
		n = n.kids[t.searchInner(n, key)]
	}
	i, ok := t.searchLeaf(n, key)
	if !ok {
		return Entry{}, Pos{}, false
	}
	return t.entry(n.items(), i), Pos{n, i, t.dels, n.items().keys[i]}, true
}

// SetAt replaces the entry of key, which Find found at p, and returns the
// entry it had, as Set does. It changes nothing and reports false if the
// tree changed shape since Find, or key's item is no longer at p (or no
// longer the same item: replaced with a new copy of its key, or given a
// new hint); call Set then. p must come from Find of this very key: SetAt
// recognises the item without reading its key.
func (t *Tree) SetAt(p Pos, key []byte, e Entry) (old Entry, ok bool) {
	t.mutable()
	if p.leaf == nil || p.dels != t.dels || p.leaf.gen != t.gen || p.i >= p.leaf.n {
		return Entry{}, false // moved, or shared with a clone (path copying needs Set)
	}
	if p.leaf.items().keys[p.i] != p.word {
		// Another item. The keys word names the item without reading its
		// key: no two items share an arena position, and a changed hint
		// or a new key copy (replace) only makes SetAt decline.
		return Entry{}, false
	}
	if t.tracked != nil {
		t.tracked[string(key)] = struct{}{}
	}
	return t.replace(p.leaf.items(), p.i, key, e), true
}

// replace sets the entry of key, item i of the mutable leaf l, and returns
// the entry it had.
func (t *Tree) replace(l *leafItems, i int, key []byte, e Entry) Entry {
	old := t.entry(l, i)
	if e.Expiry != 0 {
		// The old expiry may be read by clones: write a new key copy.
		t.ar.dead += refSize(l.ref(i), len(key), old.Expiry != 0)
		l.setRef(i, t.al.put(key, true, e.Expiry))
	}
	// Without an expiry, the old reference (with or without an expiry
	// slot) still names the key.
	t.pack(&l.vals[i], e)
	return old
}

// Get returns the entry for key.
func (t *Tree) Get(key []byte) (Entry, bool) {
	n := t.root
	if n == nil {
		return Entry{}, false
	}
	for !n.leaf() {
		n = n.kids[t.searchInner(n, key)]
	}
	i, ok := t.searchLeaf(n, key)
	if !ok {
		return Entry{}, false
	}
	return t.entry(n.items(), i), true
}

// Probe is Get for a caller that reads the key's record anyway and can
// compare the key stored there: it spares reading the key from the arena,
// a likely cache miss. When verify is true, the entry is that of the one
// key in the directory that can be key (it has key's length and hint), and
// the caller must check that the record's key is key; if it is not, key
// is absent.
func (t *Tree) Probe(key []byte) (e Entry, ok, verify bool) {
	n, i, ok, verify := t.probe(key)
	if !ok {
		return Entry{}, false, false
	}
	return t.entry(n.items(), i), true, verify
}

// FindProbe is Find as Probe is Get: with verify, the caller must check
// that the record's key is key before it uses the entry or p; if it is
// not, key is absent.
func (t *Tree) FindProbe(key []byte) (e Entry, p Pos, ok, verify bool) {
	n, i, ok, verify := t.probe(key)
	if !ok {
		return Entry{}, Pos{}, false, false
	}
	items := n.items()
	return t.entry(items, i), Pos{n, i, t.dels, items.keys[i]}, true, verify
}

// probe finds the item of key for Probe and FindProbe: leaf n, index i.
func (t *Tree) probe(key []byte) (n *node, i int, ok, verify bool) {
	n = t.root
	if n == nil {
		return nil, 0, false, false
	}
	for !n.leaf() {
		n = n.kids[t.searchInner(n, key)]
	}
	var rest []byte
	if p := int(n.plen); len(key) >= p {
		rest = key[p:]
	}
	h := hint24(rest)
	items := n.items()
	// The first item whose hint is >= h: hints never decrease, and vacant
	// slots come last.
	lo := items.lowerBound(h << posBits)
	if lo >= n.n || items.hint(lo) != h {
		return nil, 0, false, false // key has no item's hint: it is absent
	}
	kl := int(items.vals[lo].loc >> 56)
	if (lo+1 < n.n && items.hint(lo+1) == h) || kl == longKey {
		// Several keys share the hint, or the key's length is in the
		// arena: compare keys.
		i, ok := t.searchLeaf(n, key)
		return n, i, ok, false
	}
	if kl != len(key) {
		return nil, 0, false, false
	}
	return n, lo, true, true
}

func (t *Tree) newLeaf() *node {
	l := &leafNode{node: node{gen: t.gen}}
	l.items.vacate(0)
	return &l.node
}

func (t *Tree) newInner() *node {
	n := &innerNode{node: node{gen: t.gen}}
	n.inner = &n.in
	return &n.node
}

// mut returns n, or a copy of it that this tree may change.
func (t *Tree) mut(n *node) *node {
	if n.gen == t.gen {
		return n
	}
	if n.leaf() {
		c := t.newLeaf()
		c.n, c.plen = n.n, n.plen
		c.items().move(0, n.items(), 0, n.n)
		return c
	}
	c := t.newInner()
	c.n = n.n
	c.setPfx(n.pfx)
	copy(c.keys[:], n.keys[:n.n-1])
	copy(c.hints[:], n.hints[:n.n-1])
	copy(c.kids[:], n.kids[:n.n])
	return c
}

// Set stores e for key (copying key) and returns the entry it replaced.
func (t *Tree) Set(key []byte, e Entry) (old Entry, replaced bool) {
	t.mutable()
	if len(key) > MaxKeyLen {
		panic(fmt.Sprintf("keydir: key of %d bytes exceeds %d", len(key), MaxKeyLen))
	}
	if t.tracked != nil {
		t.tracked[string(key)] = struct{}{}
	}
	if t.root == nil {
		t.root = t.newLeaf()
	}
	t.root = t.mut(t.root)
	old, replaced, right, sep := t.insert(t.root, key, e)
	if right != nil {
		r := t.newInner()
		r.kids[0], r.kids[1], r.n = t.root, right, 2
		t.setSep(r, 0, sep)
		t.root = r
	}
	if !replaced {
		t.count++
	}
	return old, replaced
}

// insert adds key to the subtree of the mutable node n. If n splits, it
// returns the new right sibling and the least key under it.
func (t *Tree) insert(n *node, key []byte, e Entry) (old Entry, replaced bool, right *node, sep uint64) {
	if n.leaf() {
		i, found, inPfx := t.searchLeafPfx(n, key)
		if found {
			return t.replace(n.items(), i, key, e), true, nil, 0
		}
		it := item{ref: t.al.put(key, e.Expiry != 0, e.Expiry)}
		t.pack(&it.v, e)
		if inPfx {
			it.hint = hint24(key[n.plen:]) // the prefix stays: no key to read
		} else {
			it.hint = t.hintFor(n, key)
		}
		if n.n < maxItems {
			n.items().move(i+1, n.items(), i, n.n-i)
			n.items().put(i, it)
			n.n++
			return old, false, nil, 0
		}
		// Split. Appending at the end keeps the left node full, so keys
		// inserted in ascending order leave full leaves behind.
		mid := maxItems / 2
		if i == maxItems {
			mid = maxItems
		}
		right = t.newLeaf()
		right.items().move(0, n.items(), mid, n.n-mid)
		right.n = n.n - mid
		n.n = mid
		n.items().vacate(mid)
		if i <= mid && mid < maxItems {
			n.items().move(i+1, n.items(), i, n.n-i)
			n.items().put(i, it)
			n.n++
		} else {
			j := i - mid
			right.items().move(j+1, right.items(), j, right.n-j)
			right.items().put(j, it)
			right.n++
		}
		// Each half keeps a valid prefix, and may have a longer one.
		right.plen = n.plen
		t.narrowLeaf(n)
		t.narrowLeaf(right)
		return old, false, right, right.items().ref(0)
	}
	ci := t.searchInner(n, key)
	if c := n.kids[ci]; c.leaf() && c.n == maxItems {
		// A full leaf that gains a key gives items to a sibling with room
		// rather than split, so random inserts leave leaves fuller (as a
		// B*-tree). Replacing a key's entry moves nothing.
		i, found := t.searchLeaf(c, key)
		if found {
			c = t.mut(c)
			n.kids[ci] = c
			return t.replace(c.items(), i, key, e), true, nil, 0
		}
		if t.shiftToSibling(n, ci) {
			ci = t.searchInner(n, key)
		}
	}
	child := t.mut(n.kids[ci])
	n.kids[ci] = child
	old, replaced, r, s := t.insert(child, key, e)
	if r == nil {
		return old, replaced, nil, 0
	}
	if n.n < maxKids {
		copy(n.kids[ci+2:n.n+1], n.kids[ci+1:n.n])
		copy(n.keys[ci+1:n.n], n.keys[ci:n.n-1])
		copy(n.hints[ci+1:n.n], n.hints[ci:n.n-1])
		n.kids[ci+1] = r
		n.n++
		t.setSep(n, ci, s)
		return old, replaced, nil, 0
	}
	// Split the inner node: gather maxKids+1 children, keep the left part.
	var kids [maxKids + 1]*node
	var keys [maxKids]uint64
	copy(kids[:], n.kids[:ci+1])
	kids[ci+1] = r
	copy(kids[ci+2:], n.kids[ci+1:n.n])
	copy(keys[:], n.keys[:ci])
	keys[ci] = s
	copy(keys[ci+1:], n.keys[ci:n.n-1])
	leftN := (maxKids + 1) / 2
	if ci+1 == maxKids {
		leftN = maxKids // appending at the end: keep the left node full
	}
	right = t.newInner()
	right.n = copy(right.kids[:], kids[leftN:])
	copy(right.keys[:], keys[leftN:])
	n.n = copy(n.kids[:], kids[:leftN])
	clear(n.kids[n.n:])
	copy(n.keys[:], keys[:leftN-1])
	t.refitInner(n)
	t.refitInner(right)
	return old, replaced, right, keys[leftN-1]
}

// shiftToSibling moves items of the full leaf kids[ci] of the mutable
// inner node n into its left or right sibling, if one has room for several,
// and fixes the separator between them. It reports whether it moved any.
func (t *Tree) shiftToSibling(n *node, ci int) bool {
	const room = 4 // not worth it for fewer
	switch {
	case ci > 0 && n.kids[ci-1].n <= maxItems-room:
		left, child := t.mut(n.kids[ci-1]), t.mut(n.kids[ci])
		n.kids[ci-1], n.kids[ci] = left, child
		k := (maxItems - left.n + 1) / 2
		left.items().move(left.n, child.items(), 0, k)
		left.n += k
		child.items().move(0, child.items(), k, child.n-k)
		child.n -= k
		child.items().vacate(child.n)
		t.joinLeaf(left, left.n-k, left.n, child.plen)
		t.setSep(n, ci-1, child.items().ref(0))
		return true
	case ci+1 < n.n && n.kids[ci+1].n <= maxItems-room:
		right, child := t.mut(n.kids[ci+1]), t.mut(n.kids[ci])
		n.kids[ci+1], n.kids[ci] = right, child
		k := (maxItems - right.n + 1) / 2
		right.items().move(k, right.items(), 0, right.n)
		right.items().move(0, child.items(), child.n-k, k)
		right.n += k
		child.n -= k
		child.items().vacate(child.n)
		t.joinLeaf(right, 0, k, child.plen)
		t.setSep(n, ci, right.items().ref(0))
		return true
	}
	return false
}

// Delete removes key and returns the entry it had.
func (t *Tree) Delete(key []byte) (Entry, bool) {
	t.mutable()
	if _, ok := t.Get(key); !ok {
		return Entry{}, false
	}
	if t.tracked != nil {
		t.tracked[string(key)] = struct{}{}
	}
	// A leaf may merge into a sibling and leave the tree with its items
	// still in it: SetAt must not write there.
	t.dels++
	t.root = t.mut(t.root)
	old := t.remove(t.root, key)
	t.count--
	for !t.root.leaf() && t.root.n == 1 {
		t.root = t.root.kids[0]
	}
	if t.count == 0 {
		t.root = nil
	}
	return old, true
}

// remove deletes key, which exists, from the subtree of the mutable node n,
// merging underfull children into a sibling where they fit.
func (t *Tree) remove(n *node, key []byte) Entry {
	if n.leaf() {
		i, _ := t.searchLeaf(n, key)
		old := t.entry(n.items(), i)
		t.ar.dead += refSize(n.items().ref(i), len(key), old.Expiry != 0)
		n.items().move(i, n.items(), i+1, n.n-1-i)
		n.n--
		n.items().keys[n.n] = vacant
		return old
	}
	ci := t.searchInner(n, key)
	child := t.mut(n.kids[ci])
	n.kids[ci] = child
	old := t.remove(child, key)
	capacity := maxKids
	if child.leaf() {
		capacity = maxItems
	}
	switch {
	case child.n == 0:
		t.dropKid(n, ci)
	case child.n < capacity/4:
		if ci > 0 && n.kids[ci-1].n+child.n <= capacity {
			left := t.mut(n.kids[ci-1])
			n.kids[ci-1] = left
			t.merge(left, child, n.keys[ci-1])
			t.dropKid(n, ci)
		} else if ci+1 < n.n && n.kids[ci+1].n+child.n <= capacity {
			t.merge(child, n.kids[ci+1], n.keys[ci])
			t.dropKid(n, ci+1)
		}
	}
	return old
}

// merge appends the contents of right to the mutable node left; sep is the
// separator between them in their parent.
func (t *Tree) merge(left, right *node, sep uint64) {
	if left.leaf() {
		left.items().move(left.n, right.items(), 0, right.n)
		left.n += right.n
		t.joinLeaf(left, left.n-right.n, left.n, right.plen)
		return
	}
	left.keys[left.n-1] = sep
	copy(left.keys[left.n:], right.keys[:right.n-1])
	copy(left.kids[left.n:], right.kids[:right.n])
	left.n += right.n
	t.refitInner(left)
}

// dropKid removes child i (and the separator before it, or after it for the
// first child) from the inner node n.
func (t *Tree) dropKid(n *node, i int) {
	copy(n.kids[i:n.n-1], n.kids[i+1:n.n])
	n.kids[n.n-1] = nil
	j := max(i-1, 0) // the separator that goes
	if n.n > 1 {
		copy(n.keys[j:n.n-2], n.keys[j+1:n.n-1])
		copy(n.hints[j:n.n-2], n.hints[j+1:n.n-1])
	}
	n.n--
}

// Arena compaction. Deleted keys, and keys rewritten with a new expiry,
// leave dead bytes in the arena, which only grows. A long-running database
// with churn (a cache of keys with TTLs, say) reclaims them by building a
// compacted copy of the tree in the background and switching to it:
//
//	src := t.Clone(); t.Track()          // under the writer's lock
//	c := src.Compact(stop)                // no lock: writers go on
//	c.Catch(t, t.Tracked()); t = c        // under the lock again
//
// Clones of the old tree keep the old arena alive until they are dropped.

// Track starts recording the keys that Set and Delete change.
func (t *Tree) Track() {
	t.mutable()
	t.tracked = make(map[string]struct{})
}

// Tracked stops recording and returns the keys changed since Track.
func (t *Tree) Tracked() map[string]struct{} {
	m := t.tracked
	t.tracked = nil
	return m
}

// Compact returns a writable copy of t whose arena holds t's keys and
// nothing else; it shares t's file bases. t must not change meanwhile (use
// a clone). It returns nil if stop reports true, which it asks every few
// thousand keys (stop may also pause, to let other goroutines run).
func (t *Tree) Compact(stop func() bool) *Tree {
	l := NewLoader()
	l.t.bases = t.bases
	it := t.Iter()
	for ok := it.First(); ok; ok = it.Next() {
		if l.count%(1<<12) == 0 && stop() {
			return nil
		}
		l.Add(it.Key(), it.Entry())
	}
	return l.Finish()
}

// Catch brings the compacted copy t up to date with src for the given keys,
// the ones src changed since the copy was taken.
func (t *Tree) Catch(src *Tree, keys map[string]struct{}) {
	for k := range keys {
		key := []byte(k)
		if e, ok := src.Get(key); ok {
			t.Set(key, e)
		} else {
			t.Delete(key)
		}
	}
}
