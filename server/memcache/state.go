package memcache

import (
	"hash/maphash"
	"sync"
	"time"
)

// itemStateCapacity bounds the number of keys whose access state is kept.
const itemStateCapacity = 1 << 16

// itemStateWays is the number of slots of a bucket: a key's state lives in
// one of the slots of the bucket its hash picks.
const itemStateWays = 4

// itemStateLocks is the number of locks, each guarding every
// itemStateLocks-th bucket.
const itemStateLocks = 64

// itemState is what memcached keeps in an item's header besides the data,
// kept here in memory only: whether it was fetched and when last, and the
// meta protocol's "win token sent" and "stale" marks. A state belongs to one
// version of the key; any write gives the key a new version and so, in
// effect, a fresh state, exactly as replacing a memcached item does.
type itemState struct {
	version    uint64
	lastAccess time.Time
	fetched    bool
	tokenSent  bool
	stale      bool
	// cas is the cas unique clients see for this version, if named:
	// touching an item rewrites it at a new version but keeps its cas
	// unique, and meta E names one (0 too, as memcached takes E0 for mg,
	// ma and md). Unnamed, the cas unique is the version.
	cas   uint64
	named bool
}

// stateSlot is one slot of the table: the state of the key whose 64-bit
// hash is hash (0: empty).
type stateSlot struct {
	hash       uint64
	version    uint64
	cas        uint64
	lastAccess int64 // Unix nanoseconds; 0: never
	fetched    bool
	tokenSent  bool
	stale      bool
	named      bool
}

// itemStates is a bounded, set-associative table from key to itemState: a
// get reads a few slots of one bucket under one of a few locks, with no map
// and no allocation. When a bucket is full, the state accessed least
// recently is dropped: the states are hints (h, l, W, Z, X flags), and
// losing one only makes a key look not fetched, not won and not stale.
// Keys are told apart by a 64-bit hash, and a state also names its version,
// so a key practically never sees another's state. They are not persisted.
type itemStates struct {
	seed    maphash.Seed
	mask    uint64 // buckets - 1
	buckets [][itemStateWays]stateSlot
	locks   [itemStateLocks]struct {
		sync.Mutex
		_ [56]byte // one lock per cache line
	}
}

func newItemStates(capacity int) *itemStates {
	n := 16
	for n*itemStateWays < capacity {
		n *= 2
	}
	return &itemStates{seed: maphash.MakeSeed(), mask: uint64(n - 1), buckets: make([][itemStateWays]stateSlot, n)}
}

// find returns key's bucket, locked, and the hash that names key in it.
func (t *itemStates) find(key []byte) (*[itemStateWays]stateSlot, *sync.Mutex, uint64) {
	h := maphash.Bytes(t.seed, key) | 1 // never 0, the empty slot
	i := h & t.mask
	mu := &t.locks[i%itemStateLocks].Mutex
	mu.Lock()
	return &t.buckets[i], mu, h
}

func (s *stateSlot) state() itemState {
	st := itemState{version: s.version, fetched: s.fetched, tokenSent: s.tokenSent, stale: s.stale, cas: s.cas, named: s.named}
	if s.lastAccess != 0 {
		st.lastAccess = time.Unix(0, s.lastAccess)
	}
	return st
}

func (s *stateSlot) set(st itemState) {
	s.version, s.fetched, s.tokenSent, s.stale, s.cas, s.named = st.version, st.fetched, st.tokenSent, st.stale, st.cas, st.named
	s.lastAccess = 0
	if !st.lastAccess.IsZero() {
		s.lastAccess = st.lastAccess.UnixNano()
	}
}

// get returns the state of key at version (the zero state if none is
// known).
func (t *itemStates) get(key []byte, version uint64) itemState {
	b, mu, h := t.find(key)
	defer mu.Unlock()
	for i := range b {
		if b[i].hash == h && b[i].version == version {
			return b[i].state()
		}
	}
	return itemState{version: version}
}

// slot returns the slot for key's state at version in bucket b, making
// one if needed; nil if a newer version's state is known (a caller that
// read an older version must not clobber it).
func slot(b *[itemStateWays]stateSlot, h, version uint64) *stateSlot {
	var s *stateSlot
	for i := range b {
		if b[i].hash == h {
			s = &b[i]
			break
		}
	}
	switch {
	case s == nil:
		// A free slot, else the one accessed least recently.
		s = &b[0]
		for i := range b {
			if b[i].hash == 0 {
				s = &b[i]
				break
			}
			if b[i].lastAccess < s.lastAccess {
				s = &b[i]
			}
		}
		*s = stateSlot{hash: h, version: version}
	case s.version > version:
		return nil
	case s.version < version:
		*s = stateSlot{hash: h, version: version}
	}
	return s
}

// update applies fn to the state of key at version (creating it) and
// returns the state as it was before.
func (t *itemStates) update(key []byte, version uint64, fn func(*itemState)) itemState {
	b, mu, h := t.find(key)
	defer mu.Unlock()
	s := slot(b, h, version)
	if s == nil {
		return itemState{version: version}
	}
	prev := s.state()
	st := prev
	fn(&st)
	s.set(st)
	return prev
}

// accessed records a fetch of key at version and returns the state before.
// (It is update with its function inlined: it runs on every get.)
func (t *itemStates) accessed(key []byte, version uint64, now time.Time) itemState {
	b, mu, h := t.find(key)
	defer mu.Unlock()
	s := slot(b, h, version)
	if s == nil {
		return itemState{version: version}
	}
	prev := s.state()
	s.fetched = true
	s.lastAccess = now.UnixNano()
	return prev
}

// reset forgets every state (flush_all).
func (t *itemStates) reset() {
	for i := range t.locks {
		t.locks[i].Lock()
	}
	clear(t.buckets)
	for i := range t.locks {
		t.locks[i].Unlock()
	}
}
