package memcache

import (
	"hash/maphash"
	"sync"
	"time"
)

// itemStateCapacity bounds the number of keys whose access state is kept.
const itemStateCapacity = 1 << 16

const itemStateShards = 64

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
}

// itemStates is a bounded, sharded map from key to itemState. When a shard
// is full an arbitrary entry is dropped: the states are hints (h, l, W, Z,
// X flags), and losing one only makes a key look not fetched, not won and
// not stale. They are not persisted.
type itemStates struct {
	seed     maphash.Seed
	perShard int
	shards   [itemStateShards]struct {
		mu sync.Mutex
		m  map[string]*itemState
	}
}

func newItemStates(capacity int) *itemStates {
	t := &itemStates{seed: maphash.MakeSeed(), perShard: max(1, capacity/itemStateShards)}
	for i := range t.shards {
		t.shards[i].m = map[string]*itemState{}
	}
	return t
}

func (t *itemStates) shard(key []byte) int {
	return int(maphash.Bytes(t.seed, key) % itemStateShards)
}

// get returns the state of key at version (the zero state if none is
// known).
func (t *itemStates) get(key []byte, version uint64) itemState {
	sh := &t.shards[t.shard(key)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.m[string(key)]; ok && e.version == version {
		return *e
	}
	return itemState{version: version}
}

// update applies fn to the state of key at version (creating it) and
// returns the state as it was before.
func (t *itemStates) update(key []byte, version uint64, fn func(*itemState)) itemState {
	sh := &t.shards[t.shard(key)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[string(key)]
	if !ok {
		if len(sh.m) >= t.perShard {
			for k := range sh.m {
				delete(sh.m, k)
				break
			}
		}
		e = &itemState{version: version}
		sh.m[string(key)] = e
	} else if e.version != version {
		if e.version > version {
			// A newer version's state is known; this caller read an
			// older version and must not clobber it.
			return itemState{version: version}
		}
		*e = itemState{version: version}
	}
	prev := *e
	fn(e)
	return prev
}

// accessed records a fetch of key at version and returns the state before.
func (t *itemStates) accessed(key []byte, version uint64, now time.Time) itemState {
	return t.update(key, version, func(e *itemState) {
		e.fetched = true
		e.lastAccess = now
	})
}

// reset forgets every state (flush_all).
func (t *itemStates) reset() {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		clear(sh.m)
		sh.mu.Unlock()
	}
}
