package keydir

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/caskade/caskade/internal/prefetch"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized tests (0: random)")

func seed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return s
}

func entryFor(r *rand.Rand, i int) Entry {
	e := Entry{FileID: uint32(1 + r.IntN(3)), ValLen: uint32(r.IntN(1000)), Offset: int64(r.IntN(1 << 30)), Version: uint64(1000 + i)}
	if r.IntN(4) == 0 {
		e.Expiry = int64(r.IntN(1 << 40))
	}
	return e
}

func newTestTree() *Tree {
	t := New()
	for id := uint32(1); id <= 3; id++ {
		t.SetFileBase(id, 1000)
	}
	return t
}

// check compares the whole tree, forwards and backwards, with the model,
// and checks the prefixes and hints of every node.
func check(t *testing.T, tr *Tree, m map[string]Entry, what string) {
	t.Helper()
	if tr.root != nil {
		if err := tr.checkNode(tr.root); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	keys := slices.Sorted(maps.Keys(m))
	if tr.Len() != len(keys) {
		t.Fatalf("%s: Len %d, want %d", what, tr.Len(), len(keys))
	}
	it := tr.Iter()
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(keys) || string(it.Key()) != keys[i] || it.Entry() != m[keys[i]] {
			t.Fatalf("%s: forward item %d = %q %+v", what, i, it.Key(), it.Entry())
		}
		i++
	}
	if i != len(keys) {
		t.Fatalf("%s: forward saw %d keys, want %d", what, i, len(keys))
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		if string(it.Key()) != keys[i] {
			t.Fatalf("%s: backward item %d = %q, want %q", what, i, it.Key(), keys[i])
		}
	}
	if i != 0 {
		t.Fatalf("%s: backward stopped at %d", what, i)
	}
}

// TestModel applies random sets, deletes, clones and seeks to a tree and to
// a map, comparing them throughout; clones must never change.
func TestModel(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 0))
	tr := newTestTree()
	m := map[string]Entry{}
	type clone struct {
		t *Tree
		m map[string]Entry
	}
	var clones []clone
	// Positions from Find: SetAt must use one exactly while no key was
	// deleted, no Clone happened and the key is still at that index.
	type held struct {
		pos    Pos
		key    []byte
		clones int
	}
	var found []held
	keyspace := 3000
	key := func() []byte {
		k := fmt.Appendf(nil, "%05d", r.IntN(keyspace))
		switch r.IntN(50) {
		case 0:
			k = append(k, bytes.Repeat([]byte("L"), 70000)...) // a long key
		case 1, 2:
			k = k[:r.IntN(len(k)+1)] // a prefix of other keys, maybe empty
		case 3, 4:
			k = append(k, make([]byte, 1+r.IntN(3))...) // zero bytes, equal in hints to k
		case 5:
			k = append(k, 0xff, byte(r.IntN(256)))
		case 6:
			k = append(bytes.Repeat(k[:1], 9), k...) // shares 8 bytes after a prefix
		}
		return k
	}
	for step := range 20000 {
		switch n := r.IntN(100); {
		case n < 55:
			k, e := key(), entryFor(r, step)
			old, replaced := tr.Set(k, e)
			want, had := m[string(k)]
			if replaced != had || old != want {
				t.Fatalf("step %d: Set %q replaced %v %+v, want %v %+v", step, k, replaced, old, had, want)
			}
			m[string(k)] = e
		case n < 85:
			k := key()
			old, ok := tr.Delete(k)
			want, had := m[string(k)]
			if ok != had || old != want {
				t.Fatalf("step %d: Delete %q = %v %+v, want %v %+v", step, k, ok, old, had, want)
			}
			delete(m, string(k))
		case n < 90:
			if len(found) == 0 {
				break
			}
			h := found[r.IntN(len(found))]
			k := h.key // SetAt takes the key that Find found at the Pos
			_, now, present := tr.Find(k)
			e := entryFor(r, step)
			old, ok := tr.SetAt(h.pos, k, e)
			// A leaf shared with a clone needs its path copied: Set.
			want := h.pos.dels == tr.dels && h.clones == len(clones) && h.pos.leaf.gen == tr.gen &&
				present && now.leaf == h.pos.leaf && now.i == h.pos.i && now.word == h.pos.word
			if h.pos.dels == tr.dels && h.clones == len(clones) && !present {
				t.Fatalf("step %d: %q is gone but no key was deleted", step, k)
			}
			if ok != want || (ok && old != m[string(k)]) {
				t.Fatalf("step %d: SetAt %q = %v %+v, want %v %+v", step, k, ok, old, want, m[string(k)])
			}
			if ok {
				m[string(k)] = e
			}
		case n < 92:
			clones = append(clones, clone{tr.Clone(), maps.Clone(m)})
		case n < 96:
			k := key()
			e, ok := tr.Get(k)
			want, had := m[string(k)]
			if ok != had || e != want {
				t.Fatalf("step %d: Get %q = %v %+v", step, k, ok, e)
			}
			if fe, pos, fok := tr.Find(k); fok != had || fe != want {
				t.Fatalf("step %d: Find %q = %v %+v", step, k, fok, fe)
			} else if fok {
				found = append(found[max(0, len(found)-8):], held{pos, k, len(clones)})
			}
			// Probe finds every key; for an absent key it may name a
			// candidate, but only one to verify.
			if pe, pok, verify := tr.Probe(k); had && (!pok || pe != want) {
				t.Fatalf("step %d: Probe %q = %v %+v", step, k, pok, pe)
			} else if !had && pok && !verify {
				t.Fatalf("step %d: Probe of absent %q found %+v unverified", step, k, pe)
			}
			// FindProbe is Probe with the Pos that Find gives.
			if fe, fpos, fok, fverify := tr.FindProbe(k); had && (!fok || fe != want) {
				t.Fatalf("step %d: FindProbe %q = %v %+v", step, k, fok, fe)
			} else if !had && fok && !fverify {
				t.Fatalf("step %d: FindProbe of absent %q found %+v unverified", step, k, fe)
			} else if had {
				if _, pos, _ := tr.Find(k); pos != fpos {
					t.Fatalf("step %d: FindProbe %q at %+v, Find at %+v", step, k, fpos, pos)
				}
			}
			keys := slices.Sorted(maps.Keys(m))
			i, _ := slices.BinarySearch(keys, string(k))
			it := tr.Iter()
			if ok := it.Seek(k); ok != (i < len(keys)) || (ok && string(it.Key()) != keys[i]) {
				t.Fatalf("step %d: Seek %q wrong", step, k)
			}
		case n < 97:
			if step%10 == 0 {
				check(t, tr, m, fmt.Sprintf("step %d", step))
			}
		default:
			if len(clones) > 0 && step%10 == 0 {
				c := clones[r.IntN(len(clones))]
				check(t, c.t, c.m, fmt.Sprintf("step %d clone", step))
			}
		}
		if step == 10000 {
			keyspace = 300 // shrink: deletes now empty and merge nodes
		}
	}
	check(t, tr, m, "end")
	for i, c := range clones {
		check(t, c.t, c.m, fmt.Sprintf("clone %d", i))
	}
	for k := range m {
		tr.Delete([]byte(k))
	}
	check(t, tr, map[string]Entry{}, "emptied")
}

func TestLoader(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 1))
	for _, n := range []int{0, 1, 63, 64, 65, 4096, 64*64 + 1, 300000} {
		l := NewLoader()
		for id := uint32(1); id <= 3; id++ {
			l.Tree().SetFileBase(id, 1000)
		}
		m := map[string]Entry{}
		for i := range n {
			k := fmt.Sprintf("%08d", i*3)
			e := entryFor(r, i)
			l.Add([]byte(k), e)
			m[k] = e
		}
		tr := l.Finish()
		check(t, tr, m, fmt.Sprintf("load %d", n))
		// The loaded tree takes changes like any other.
		tr.Set([]byte("00000001"), Entry{FileID: 1, Version: 1000})
		m["00000001"] = Entry{FileID: 1, Version: 1000}
		if n > 0 {
			tr.Delete([]byte("00000000"))
			delete(m, "00000000")
		}
		check(t, tr, m, fmt.Sprintf("load %d then change", n))
	}
}

func TestReadOnlyClone(t *testing.T) {
	tr := newTestTree()
	c := tr.Clone()
	defer func() {
		if recover() == nil {
			t.Fatal("Set on a clone did not panic")
		}
	}()
	c.Set([]byte("x"), Entry{FileID: 1, Version: 1000})
}

func TestExpired(t *testing.T) {
	if (Entry{}).Expired(100) {
		t.Fatal("zero expiry expired")
	}
	if !(Entry{Expiry: 100}).Expired(100) || (Entry{Expiry: 101}).Expired(100) {
		t.Fatal("expiry boundary wrong")
	}
}

func TestArenaAccounting(t *testing.T) {
	tr := newTestTree()
	for i := range 1000 {
		tr.Set(fmt.Appendf(nil, "key%04d", i), Entry{FileID: 1, Version: 1000})
	}
	live, dead := tr.ArenaBytes()
	if live != 7000 || dead != 0 {
		t.Fatalf("live %d dead %d", live, dead)
	}
	for i := range 500 {
		tr.Delete(fmt.Appendf(nil, "key%04d", i))
	}
	tr.Set([]byte("key0999"), Entry{FileID: 1, Version: 1001, Expiry: 5}) // rewrites the key with an expiry
	live, dead = tr.ArenaBytes()
	if live != 500*7+8 || dead != 500*7+7 {
		t.Fatalf("after deletes: live %d dead %d", live, dead)
	}
}

func BenchmarkGet(b *testing.B) {
	const n = 1 << 20
	l := NewLoader()
	l.Tree().SetFileBase(1, 0)
	for i := range n {
		l.Add(fmt.Appendf(nil, "key-%012d", i), Entry{FileID: 1, Version: uint64(i)})
	}
	tr := l.Finish()
	r := rand.New(rand.NewPCG(1, 1))
	key := make([]byte, 0, 16)
	b.ReportAllocs()
	for b.Loop() {
		key = fmt.Appendf(key[:0], "key-%012d", r.IntN(n))
		if _, ok := tr.Get(key); !ok {
			b.Fatal("missing")
		}
	}
}

// Loaders filling consecutive key ranges from several goroutines build one
// correct tree.
func TestParallelLoaders(t *testing.T) {
	const parts, per = 4, 20000
	ls := NewLoaders(parts)
	ls[0].Tree().SetFileBase(1, 0)
	m := map[string]Entry{}
	for p := range parts {
		for i := range per {
			m[fmt.Sprintf("%d-%06d", p, i)] = Entry{FileID: 1, Version: uint64(i), ValLen: uint32(p)}
		}
	}
	var wg sync.WaitGroup
	for p, l := range ls {
		wg.Go(func() {
			for i := range per {
				l.Add(fmt.Appendf(nil, "%d-%06d", p, i), Entry{FileID: 1, Version: uint64(i), ValLen: uint32(p)})
			}
		})
	}
	wg.Wait()
	tr := FinishAll(ls)
	check(t, tr, m, "parallel load")
	if live, _ := tr.ArenaBytes(); live != parts*per*8 {
		t.Fatalf("arena live bytes %d", live)
	}
	tr.Set([]byte("x"), Entry{FileID: 1})
}

// Splits and shifts between siblings move items but leave every leaf in
// the tree: a Pos stays good where its key's item still is, and SetAt
// declines the others, so no update is lost to a leaf that left the tree.
func TestSetAtAcrossSplits(t *testing.T) {
	seed := seed(t)
	r := rand.New(rand.NewPCG(seed, 1))
	tr := newTestTree()
	m := map[string]Entry{}
	for i := range 5000 {
		k := fmt.Appendf(nil, "k%08d", r.IntN(1<<20))
		e := entryFor(r, i)
		tr.Set(k, e)
		m[string(k)] = e
	}
	type held struct {
		pos Pos
		key []byte
	}
	var found []held
	for k := range m {
		if _, p, ok := tr.Find([]byte(k)); ok && len(found) < 500 {
			found = append(found, held{p, []byte(k)})
		}
	}
	// Inserts among the held keys: full leaves split or shift items to a
	// sibling, and items move within leaves.
	for i := range 300 {
		k := fmt.Appendf(nil, "k%08d", r.IntN(1<<20))
		e := entryFor(r, i)
		tr.Set(k, e)
		m[string(k)] = e
	}
	used := 0
	for i, h := range found {
		e := entryFor(r, 100000+i)
		_, now, _ := tr.Find(h.key)
		old, ok := tr.SetAt(h.pos, h.key, e)
		still := now.leaf == h.pos.leaf && now.i == h.pos.i && now.word == h.pos.word
		if ok != still {
			t.Fatalf("SetAt %q = %v, but the key's item is at the Pos: %v", h.key, ok, still)
		}
		if !ok {
			old, _ = tr.Set(h.key, e)
		} else {
			used++
		}
		if old != m[string(h.key)] {
			t.Fatalf("%q had %+v, want %+v", h.key, old, m[string(h.key)])
		}
		m[string(h.key)] = e
	}
	check(t, tr, m, "after SetAt")
	if used == 0 || used == len(found) {
		t.Fatalf("SetAt used %d of %d positions: the inserts should have moved some items and not others", used, len(found))
	}
	t.Logf("SetAt used %d of %d positions after 300 inserts", used, len(found))
}

// benchKeys returns n distinct 16-byte keys shaped like redis-benchmark's
// ("key:" and 12 digits drawn from a range 4x larger), in random order.
func benchKeys(n int) [][]byte {
	r := rand.New(rand.NewPCG(2, 2))
	seen := make(map[int]bool, n)
	keys := make([][]byte, 0, n)
	for len(keys) < n {
		v := r.IntN(4 * n)
		if !seen[v] {
			seen[v] = true
			keys = append(keys, fmt.Appendf(nil, "key:%012d", v))
		}
	}
	return keys
}

// randomTree builds a tree of 2M keys inserted in random order.
func randomTree() (*Tree, [][]byte) {
	keys := benchKeys(1 << 21)
	tr := New()
	tr.SetFileBase(1, 0)
	for i, k := range keys {
		tr.Set(k, Entry{FileID: 1, Version: uint64(i)})
	}
	return tr, keys
}

// BenchmarkGetRandom reads random keys of a tree built by random inserts,
// so that neither the nodes nor the arena are in key order.
func BenchmarkGetRandom(b *testing.B) {
	tr, keys := randomTree()
	r := rand.New(rand.NewPCG(1, 1))
	b.ResetTimer()
	for b.Loop() {
		if _, ok := tr.Get(keys[r.IntN(len(keys))]); !ok {
			b.Fatal("missing")
		}
	}
}

// BenchmarkSetRandom inserts keys in random order into a growing tree.
func BenchmarkSetRandom(b *testing.B) {
	keys := benchKeys(1 << 21)
	b.ResetTimer()
	for b.Loop() {
		tr := New()
		tr.SetFileBase(1, 0)
		for i, k := range keys {
			tr.Set(k, Entry{FileID: 1, Version: uint64(i)})
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
}

// checkNode verifies that every key in the subtree of n starts with its
// node's prefix and has the right hint.
func (t *Tree) checkNode(n *node) error {
	if n.leaf() {
		for i := n.n; i < maxItems; i++ {
			if n.items().keys[i] != vacant {
				return fmt.Errorf("leaf of %d items: slot %d is not vacant", n.n, i)
			}
		}
		for i := range n.n {
			k := t.keyOf(n.items().ref(i))
			if first := t.keyOf(n.items().ref(0)); len(k) < int(n.plen) || !bytes.Equal(k[:n.plen], first[:n.plen]) {
				return fmt.Errorf("leaf key %q does not share the prefix of %q (%d bytes)", k, first, n.plen)
			}
			if h := n.items().hint(i); h != hint24(k[n.plen:]) {
				return fmt.Errorf("leaf key %q (prefix length %d) has hint %x", k, n.plen, h)
			}
		}
		return nil
	}
	for i := range n.n - 1 {
		k := t.keyOf(n.keys[i])
		if !bytes.HasPrefix(k, n.pfx) {
			return fmt.Errorf("separator %q lacks prefix %q", k, n.pfx)
		}
		if n.keys[i]>>refBits != 0 || n.hints[i] != sepHintOf(k[len(n.pfx):]) {
			return fmt.Errorf("separator %q (prefix %q) has hint %x", k, n.pfx, n.hints[i])
		}
	}
	for i := range n.n {
		if err := t.checkNode(n.kids[i]); err != nil {
			return err
		}
	}
	return nil
}

// A compacted copy holds no dead arena bytes and, once caught up with the
// changes made while it was built, equals the tree it was built from.
func TestCompact(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 0))
	tr := newTestTree()
	m := map[string]Entry{}
	churn := func(steps int) {
		for i := range steps {
			k := fmt.Sprintf("%06d", r.IntN(5000))
			if r.IntN(3) == 0 {
				tr.Delete([]byte(k))
				delete(m, k)
			} else {
				e := entryFor(r, i)
				tr.Set([]byte(k), e)
				m[k] = e
			}
		}
	}
	churn(30000)
	if _, dead := tr.ArenaBytes(); dead == 0 {
		t.Fatal("churn left no dead arena bytes")
	}
	src := tr.Clone()
	srcModel := maps.Clone(m)
	tr.Track()
	c := src.Compact(func() bool { return false })
	want := int64(0) // each key, and an expiry only where there is one
	for k, e := range srcModel {
		want += int64(len(k))
		if e.Expiry != 0 {
			want += 8
		}
	}
	if live, dead := c.ArenaBytes(); live != want || dead != 0 {
		t.Fatalf("compacted arena: %d live bytes, %d dead; want %d, 0", live, dead, want)
	}
	churn(3000) // writes while the copy is built
	c.Catch(tr, tr.Tracked())
	check(t, c, m, "compacted")
	check(t, src, srcModel, "source clone")
	if tr.Tracked() != nil {
		t.Fatal("still tracking")
	}
	if c.Compact(func() bool { return true }) != nil {
		t.Fatal("a stopped compaction returned a tree")
	}
}

// BenchmarkProbeRandom is BenchmarkGetRandom through Probe, the path of
// the engine's point reads, which reads no key from the arena when the
// key's hint is unique in its leaf.
func BenchmarkProbeRandom(b *testing.B) {
	tr, keys := randomTree()
	r := rand.New(rand.NewPCG(1, 1))
	b.ResetTimer()
	for b.Loop() {
		if _, ok, _ := tr.Probe(keys[r.IntN(len(keys))]); !ok {
			b.Fatal("missing")
		}
	}
}

// BenchmarkProbeTwoFamilies is BenchmarkProbeRandom in a tree that also
// holds as many keys of another family ("counter:" and 12 digits, as
// redis-benchmark's INCR leaves them), so that the root's keys share no
// prefix.
func BenchmarkProbeTwoFamilies(b *testing.B) {
	tr, keys := randomTree()
	for i, k := range benchKeys(len(keys)) {
		tr.Set(append([]byte("counter:"), k[len("key:"):]...), Entry{FileID: 1, Version: uint64(i)})
	}
	r := rand.New(rand.NewPCG(1, 1))
	b.ResetTimer()
	for b.Loop() {
		if _, ok, _ := tr.Probe(keys[r.IntN(len(keys))]); !ok {
			b.Fatal("missing")
		}
	}
}

// Ahead lists the entries the iterator would reach next within its leaf,
// in either direction, without moving it.
func TestIterAhead(t *testing.T) {
	tr := New()
	tr.SetFileBase(1, 0)
	const n = 500
	for i := range n {
		tr.Set(fmt.Appendf(nil, "k%04d", i), Entry{FileID: 1, Version: uint64(i + 1), Offset: int64(i)})
	}
	for _, reverse := range []bool{false, true} {
		it := tr.Iter()
		ok := it.First()
		if reverse {
			ok = it.Last()
		}
		total := 0
		for ; ok; total++ {
			var dst [8]Entry
			c := it.Ahead(dst[:], reverse)
			cur := it.Entry().Offset
			for k := range c {
				want := cur + int64(k+1)
				if reverse {
					want = cur - int64(k+1)
				}
				if dst[k].Offset != want {
					t.Fatalf("reverse=%v at %d: ahead[%d] = %d, want %d", reverse, cur, k, dst[k].Offset, want)
				}
			}
			if it.Entry().Offset != cur {
				t.Fatal("Ahead moved the iterator")
			}
			f := it.leaf()
			left := f.n.n - 1 - f.i // items after this one in its leaf
			if reverse {
				left = f.i
			}
			if c != min(len(dst), left) {
				t.Fatalf("reverse=%v at %d: Ahead gave %d entries with %d left in the leaf", reverse, cur, c, left)
			}
			if reverse {
				ok = it.Prev()
			} else {
				ok = it.Next()
			}
		}
		if total != n {
			t.Fatalf("reverse=%v: walked %d keys", reverse, total)
		}
	}
}

// A leaf, with the 8-byte header Go puts before a large object that holds
// pointers, fits the 1536-byte size class; one more item, or a larger
// node, would take the 1792-byte class: about 6 more bytes per key.
func TestLeafFitsItsSizeClass(t *testing.T) {
	const header, class = 8, 1536
	if size := unsafe.Sizeof(leafNode{}); size+header > class {
		t.Fatalf("a leafNode is %d bytes; with its header it exceeds the %d-byte size class", size, class)
	}
	const itemSize = unsafe.Sizeof(uint64(0)) + unsafe.Sizeof(val{}) // a keys word and a val
	if size := unsafe.Sizeof(leafNode{}); size+itemSize+header <= class {
		t.Fatalf("a leafNode is %d bytes: another item would fit (raise maxItems)", size)
	}
}

// nodeLines, the lines searchInner prefetches from a node's address,
// must cover either kind of node however it is aligned: they cover at
// least the bytes up to (nodeLines-1)*LineSize past it.
func TestNodeLinesCoverNodes(t *testing.T) {
	for _, size := range []uintptr{unsafe.Sizeof(innerNode{}), unsafe.Sizeof(leafNode{})} {
		if uintptr(nodeLines-1)*prefetch.LineSize < size-1 {
			t.Fatalf("nodeLines %d does not cover a %d-byte node", nodeLines, size)
		}
	}
}
