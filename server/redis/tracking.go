package redis

import (
	"sync"
	"sync/atomic"

	"github.com/caskade/caskade/resp"
)

// Client-side caching (CLIENT TRACKING), as in Redis's tracking.c.
//
// In the default mode the server remembers, for each key a tracking
// client read, that the client may cache it; the first change of the key
// (through any protocol: the engine reports every commit to onCommit)
// sends the client an invalidation and forgets the entry. In BCAST mode
// every change of a key under one of the client's prefixes is sent.
// Invalidations go to the client itself as RESP3 push messages
// (>2 invalidate [keys]), or to the REDIRECT client: as a push if that
// client speaks RESP3. A RESP2 redirect target would need Pub/Sub, which
// caskade does not serve yet, so it receives nothing.
//
// NOLOOP spares a client the invalidations of its own writes. Redis
// decides it per write (the client running the command that changed the
// key); here one notification covers a whole group commit, in which the
// writes of several clients, and of other protocols, may be mixed. So a
// NOLOOP client tags its commits with itself (caskade.Batch.SetOrigin,
// client.origin), the engine reports each changed key with the origin of
// the commit that made it (caskade.DB.SubscribeOrigins), and the client
// is spared a key only if every write of it in the group was its own:
// had another write of the key come last, it would cache a value that is
// no longer the key's for good. A group's commits are in no order the
// client chose, so one of another client's writes anywhere in the group
// is enough (a write of the client's own that came last makes the
// invalidation one more than needed, never one too few).

// trackState is a client's tracking configuration, owned by its goroutine
// except where noted.
type trackState struct {
	on       bool
	bcast    bool
	optin    bool
	optout   bool
	noloop   bool
	caching  bool // CLIENT CACHING YES (optin) or NO (optout) for the next command
	redirect int64
	prefixes [][]byte
	p3       bool // the client speaks RESP3
}

func (t *trackState) proto() int {
	if t.p3 {
		return 3
	}
	return 2
}

// wants reports whether the keys of the command being run are tracked.
func (t *trackState) wants() bool {
	switch {
	case !t.on || t.bcast:
		return false
	case t.optin:
		return t.caching
	case t.optout:
		return !t.caching
	}
	return true
}

// afterCommand clears the one-command CLIENT CACHING flag, except after
// CLIENT CACHING itself and inside MULTI (as Redis does).
func (t *trackState) afterCommand(cmd *command, inMulti bool) {
	if inMulti || (cmd != nil && cmd.name == "client|caching") {
		return
	}
	t.caching = false
}

// tracker is the server's tracking table.
type tracker struct {
	s    *Server
	mu   sync.Mutex
	keys map[string]map[*client]struct{} // user key -> clients that may cache it
	// prefixes holds the BCAST clients under each of their prefixes
	// (Redis's PrefixTable).
	prefixes prefixTree
	clients  map[*client]struct{} // every tracking client
	// forgetting counts the disables since forget last started a scan
	// (0: none running). forgetHeld is the most keys one of its holds of
	// mu looked at, for tests.
	forgetting atomic.Int64
	forgetHeld int
	// probes counts the nodes of prefixes looked at to find the BCAST
	// clients of a changed key, for tests of how the work grows.
	probes int
}

func newTracker(s *Server) *tracker {
	return &tracker{
		s:       s,
		keys:    map[string]map[*client]struct{}{},
		clients: map[*client]struct{}{},
	}
}

// maxInvalidationKeys is the size of a commit above which every tracking
// client is told to flush its whole cache (a null invalidation, as Redis
// sends for FLUSHALL) instead of receiving the keys.
const maxInvalidationKeys = 1000

func (t *tracker) enable(c *client) {
	t.mu.Lock()
	t.clients[c] = struct{}{}
	if c.trk.bcast {
		for _, p := range c.trk.prefixes {
			t.prefixes.add(p, c) // again for those it had: a set
		}
	}
	t.mu.Unlock()
	c.startPusher()
	c.s.stats.trackingClient.Store(int64(t.count()))
}

func (t *tracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients)
}

// disable forgets everything about c (CLIENT TRACKING OFF, disconnect).
func (t *tracker) disable(c *client) {
	t.mu.Lock()
	if _, ok := t.clients[c]; !ok {
		t.mu.Unlock()
		return
	}
	delete(t.clients, c)
	if c.trk.bcast {
		for _, p := range c.trk.prefixes {
			t.prefixes.remove(p, c)
		}
	}
	n := len(t.clients)
	t.mu.Unlock()
	c.s.stats.trackingClient.Store(int64(n))
	if t.forgetting.Add(1) == 1 {
		go t.forget()
	}
}

// forgetBatch is the number of the table's keys forget looks at per hold
// of t.mu.
const forgetBatch = 1024

// forget removes the clients that no longer track from the table's key
// sets, in the background and a batch of keys per hold of t.mu: every
// commit, through any protocol, takes t.mu (onCommit), and a scan of the
// whole table (up to tracking-table-max-keys) at once held them all up
// for a second when a client that had tracked many keys disconnected. An
// entry of a client that is tracking again by the time the scan reaches
// it stays: at worst the client gets an invalidation it can ignore.
func (t *tracker) forget() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		seen := 0
		for k, set := range t.keys {
			for c := range set {
				if _, ok := t.clients[c]; !ok {
					delete(set, c)
				}
			}
			if len(set) == 0 {
				delete(t.keys, k)
			}
			if seen++; seen%forgetBatch == 0 {
				t.forgetHeld = max(t.forgetHeld, forgetBatch)
				t.mu.Unlock()
				t.mu.Lock()
			}
		}
		t.forgetHeld = max(t.forgetHeld, seen%forgetBatch)
		// Another disable during the scan: scan again for it.
		if t.forgetting.Add(-1) == 0 {
			return
		}
		t.forgetting.Store(1)
	}
}

// remember records that c may cache the keys of a read command it is
// about to run. It is called before the read, so that a change between
// the read and the registration cannot be missed.
func (t *tracker) remember(c *client, cmd *command, args [][]byte) {
	if !c.trk.wants() {
		return
	}
	idx := cmd.keyIndexes(args, nil)
	if len(idx) == 0 {
		return
	}
	t.mu.Lock()
	for _, i := range idx {
		set := t.keys[string(args[i])]
		if set == nil {
			set = map[*client]struct{}{}
			t.keys[string(args[i])] = set
		}
		set[c] = struct{}{}
	}
	if max := t.s.cfg.trackMaxAtomic.Load(); max > 0 && int64(len(t.keys)) > max {
		t.evict(max)
	}
	t.mu.Unlock()
}

// evict forgets keys, any of them, until the table holds max, as Redis
// does over tracking-table-max-keys: the clients that may cache an
// evicted key are told to drop it, since no change of it will reach them
// any more. Without the bound, a tracking client reading ever new keys
// (missing ones too) grew the table without limit. The caller holds t.mu.
func (t *tracker) evict(max int64) {
	for k, set := range t.keys {
		if int64(len(t.keys)) <= max {
			return
		}
		key := [][]byte{[]byte(k)}
		for c := range set {
			t.send(c, key, false)
		}
		delete(t.keys, k)
	}
}

// snapshotRead follows a read that a CSK transaction served from its
// snapshot: a change committed after the snapshot but before remember
// registered the key (acknowledged, perhaps, before the read was even
// sent) would otherwise never be invalidated, and the client would cache
// the snapshot's value until the key next changes. The invalidation goes
// after the read's reply, so the client drops what it just cached.
func (t *tracker) snapshotRead(c *client, cmd *command, args [][]byte) {
	if !c.trk.bcast && !c.trk.wants() {
		return
	}
	idx := cmd.keyIndexes(args, nil)
	if len(idx) == 0 {
		return
	}
	keys := make([][]byte, len(idx))
	for i, j := range idx {
		keys[i] = args[j]
	}
	t.mu.Lock()
	if _, ok := t.clients[c]; ok {
		t.send(c, keys, false)
	}
	t.mu.Unlock()
}

// totals returns the number of tracked keys, of (key, client) items and
// of distinct BCAST prefixes (Redis counts its prefix table's entries).
func (t *tracker) totals() (keys, items, prefixes int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, set := range t.keys {
		items += len(set)
	}
	return len(t.keys), items, t.prefixes.count
}

// origin is what c tags its commits with (caskade.Batch.SetOrigin,
// caskade.Tx.SetOrigin), so that onCommit can tell its own writes from
// the others': c itself if it is NOLOOP, else nil (an untagged commit
// costs nothing more).
func (c *client) origin() any {
	if c.trk.noloop {
		return c
	}
	return nil
}

// onCommit is the DB subscription: it runs on the committing goroutine
// for every group commit and queues invalidations without blocking.
// origins, unless nil, holds the origin of the commit that changed each
// key of raw (caskade.DB.SubscribeOrigins).
func (t *tracker) onCommit(raw [][]byte, origins []any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.clients) == 0 {
		return
	}
	if len(raw) > maxInvalidationKeys {
		for c := range t.clients {
			t.send(c, nil, true)
		}
		clear(t.keys)
		return
	}
	// own holds, for each key of the group, the client that made every
	// write of it, or nil if there is no such client (another writer
	// too, or one without an origin: another protocol, an expiry).
	var own map[string]*client
	if origins != nil {
		own = make(map[string]*client, len(raw))
		for i, r := range raw {
			k, _, ok := userKey(r)
			if !ok {
				continue
			}
			c, _ := origins[i].(*client)
			if o, seen := own[string(k)]; seen && o != c {
				c = nil
			}
			own[string(k)] = c
		}
	}
	var per map[*client][][]byte
	add := func(c *client, k []byte) {
		if c.trk.noloop && own != nil && own[string(k)] == c {
			return
		}
		if per == nil {
			per = map[*client][][]byte{}
		}
		per[c] = append(per[c], k)
	}
	var seen map[string]bool // a key a commit changed twice is invalidated once
	for _, r := range raw {
		k, _, ok := userKey(r)
		if !ok {
			continue
		}
		if len(raw) > 1 {
			if seen == nil {
				seen = make(map[string]bool, len(raw))
			}
			if seen[string(k)] {
				continue
			}
			seen[string(k)] = true
		}
		if set := t.keys[string(k)]; set != nil {
			for c := range set {
				add(c, k)
			}
			delete(t.keys, string(k))
		}
		if t.prefixes.count > 0 {
			t.probes += t.prefixes.match(k, func(c *client) { add(c, k) })
		}
	}
	for c, keys := range per {
		t.send(c, keys, false)
	}
}

// send queues an invalidation for c's cache (all of it if flush). The
// caller holds t.mu.
func (t *tracker) send(c *client, keys [][]byte, flush bool) {
	target := c
	if c.trk.redirect != 0 {
		target = t.s.clientByID(c.trk.redirect)
		if target == nil {
			if c.trk.proto() >= 3 {
				var b []byte
				b = resp.AppendPushHeader(b, 2, 3)
				b = resp.AppendBulkString(b, "tracking-redir-broken")
				b = resp.AppendInt(b, c.trk.redirect)
				c.push(b)
			}
			return
		}
	}
	if target.trk.proto() < 3 {
		return // RESP2 targets need Pub/Sub (not served yet)
	}
	var b []byte
	b = resp.AppendPushHeader(b, 2, 3)
	b = resp.AppendBulkString(b, "invalidate")
	if flush {
		b = resp.AppendNull(b, 3)
	} else {
		b = resp.AppendArrayHeader(b, len(keys))
		for _, k := range keys {
			b = resp.AppendBulk(b, k)
		}
	}
	if target != c {
		target.startPusher()
	}
	target.push(b)
}
