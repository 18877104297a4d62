package redis

import "bytes"

// prefixTree maps the BCAST prefixes of CLIENT TRACKING to the clients
// that registered them, as Redis's PrefixTable (a radix tree) does: the
// clients a changed key concerns are found by one walk down the key's
// bytes, whatever the number of clients and prefixes. It is a radix tree
// (each edge holds a run of bytes), so that a long prefix is a few nodes,
// not one per byte. The caller serialises access (tracker.mu).
type prefixTree struct {
	root  prefixNode
	count int // prefixes with at least one client
}

type prefixNode struct {
	label []byte // the bytes from the parent's prefix to this node's
	kids  map[byte]*prefixNode
	subs  map[*client]struct{} // the clients with this node's prefix
}

// commonLen returns the length of the longest common prefix of a and b.
func commonLen(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// add registers c under prefix p.
func (t *prefixTree) add(p []byte, c *client) {
	n := &t.root
	for len(p) > 0 {
		kid := n.kids[p[0]]
		if kid == nil {
			kid = &prefixNode{label: bytes.Clone(p)}
			if n.kids == nil {
				n.kids = map[byte]*prefixNode{}
			}
			n.kids[p[0]] = kid
			n = kid
			break
		}
		l := commonLen(kid.label, p)
		if l < len(kid.label) {
			// p ends or turns inside kid's edge: split the edge.
			mid := &prefixNode{label: kid.label[:l:l], kids: map[byte]*prefixNode{kid.label[l]: kid}}
			kid.label = kid.label[l:]
			n.kids[p[0]] = mid
			kid = mid
		}
		n = kid
		p = p[l:]
	}
	if n.subs == nil {
		n.subs = map[*client]struct{}{}
	}
	if len(n.subs) == 0 {
		t.count++
	}
	n.subs[c] = struct{}{}
}

// remove unregisters c from prefix p, and drops the nodes no longer
// needed.
func (t *prefixTree) remove(p []byte, c *client) {
	path := []*prefixNode{&t.root}
	n := &t.root
	for len(p) > 0 {
		kid := n.kids[p[0]]
		if kid == nil || !bytes.HasPrefix(p, kid.label) {
			return
		}
		p = p[len(kid.label):]
		n = kid
		path = append(path, n)
	}
	if _, ok := n.subs[c]; !ok {
		return
	}
	delete(n.subs, c)
	if len(n.subs) > 0 {
		return
	}
	n.subs = nil
	t.count--
	for i := len(path) - 1; i > 0; i-- {
		n, parent := path[i], path[i-1]
		if len(n.subs) > 0 {
			return
		}
		switch len(n.kids) {
		case 0:
			delete(parent.kids, n.label[0])
			continue // the parent may be bare now
		case 1:
			for _, kid := range n.kids {
				kid.label = append(bytes.Clone(n.label), kid.label...)
				parent.kids[n.label[0]] = kid
			}
		}
		return
	}
}

// match calls fn for each client with a prefix of key, and returns the
// number of nodes it looked at.
func (t *prefixTree) match(key []byte, fn func(*client)) (probes int) {
	n := &t.root
	for {
		probes++
		for c := range n.subs {
			fn(c)
		}
		if len(key) == 0 {
			return probes
		}
		kid := n.kids[key[0]]
		if kid == nil || !bytes.HasPrefix(key, kid.label) {
			return probes
		}
		key = key[len(kid.label):]
		n = kid
	}
}
