package redis

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var prefixSeed = flag.Uint64("prefixtree.seed", 0, "seed of TestPrefixTreeModel (0: from the clock)")

// TestPrefixTreeModel compares the BCAST prefix tree with a list of
// (prefix, client) pairs under random adds and removes of short prefixes
// over a small alphabet (so that edges split and merge often): every key
// must match exactly the clients with one of its prefixes, and the count
// of distinct prefixes must agree.
func TestPrefixTreeModel(t *testing.T) {
	seed := *prefixSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -prefixtree.seed %d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed))
	clients := make([]*client, 5)
	for i := range clients {
		clients[i] = &client{id: int64(i)}
	}
	word := func(max int) []byte {
		b := make([]byte, r.IntN(max+1))
		for i := range b {
			b[i] = "ab\x00"[r.IntN(3)]
		}
		return b
	}
	type pair struct {
		p []byte
		c *client
	}
	var tree prefixTree
	var model []pair
	for step := range 5000 {
		c := clients[r.IntN(len(clients))]
		p := word(5)
		i := slices.IndexFunc(model, func(x pair) bool { return x.c == c && bytes.Equal(x.p, p) })
		if r.IntN(2) == 0 {
			tree.add(p, c)
			if i < 0 {
				model = append(model, pair{bytes.Clone(p), c})
			}
		} else {
			tree.remove(p, c)
			if i >= 0 {
				model = slices.Delete(model, i, i+1)
			}
		}
		distinct := map[string]bool{}
		for _, x := range model {
			distinct[string(x.p)] = true
		}
		if tree.count != len(distinct) {
			t.Fatalf("step %d: count %d, want %d", step, tree.count, len(distinct))
		}
		key := word(7)
		got := map[*client]int{}
		tree.match(key, func(c *client) { got[c]++ })
		want := map[*client]int{}
		for _, x := range model {
			if bytes.HasPrefix(key, x.p) {
				want[x.c]++
			}
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: key %q matched %v, want %v", step, key, got, want)
		}
		for c, n := range want {
			if got[c] != n {
				t.Fatalf("step %d: key %q matched client %d %d times, want %d", step, key, c.id, got[c], n)
			}
		}
	}
	// Everything removed: the tree is bare again.
	for _, x := range model {
		tree.remove(x.p, x.c)
	}
	if tree.count != 0 || len(tree.root.kids) != 0 || len(tree.root.subs) != 0 {
		t.Fatalf("empty tree keeps count %d, %d kids, %d clients", tree.count, len(tree.root.kids), len(tree.root.subs))
	}
}
