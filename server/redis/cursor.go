package redis

import (
	"bytes"
	"math/rand/v2"
	"sync"
)

// scanCursors maps SCAN cursors to the key the next call resumes at.
//
// Clients parse a SCAN cursor as an unsigned 64-bit number, so the
// cursor cannot carry the key itself. A cursor is (id << 32 | the first 4
// bytes of the key): id names an entry of a bounded table holding the full
// key; if the entry is gone (evicted, or the server restarted), the scan
// resumes at the 4-byte prefix instead, which may return some keys again
// (SCAN allows duplicates) but does not skip one.
type scanCursors struct {
	mu     sync.Mutex
	nextID uint32
	m      map[uint32]cursorEntry
	ring   []uint32
	pos    int
}

type cursorEntry struct {
	key []byte // user key
	db  int
}

const scanCursorSlots = 1 << 16

func (sc *scanCursors) init() {
	sc.m = map[uint32]cursorEntry{}
	sc.ring = make([]uint32, scanCursorSlots)
	// Ids start at a random point: a cursor a client got from an earlier
	// server (before a restart) would otherwise name an entry of this one
	// made for another scan, at a key further on with the same prefix,
	// and its scan would skip the keys in between. Now that takes one of
	// the ids in use among 2^31, and the same 4-byte prefix.
	sc.nextID = rand.Uint32N(0x7fffffff)
}

// save records key (an encoded key) and returns its cursor.
func (sc *scanCursors) save(encoded []byte, db int) uint64 {
	key, _, _ := userKey(encoded)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.nextID = sc.nextID%0x7fffffff + 1
	id := sc.nextID
	if old := sc.ring[sc.pos]; old != 0 {
		delete(sc.m, old)
	}
	sc.ring[sc.pos] = id
	sc.pos = (sc.pos + 1) % len(sc.ring)
	sc.m[id] = cursorEntry{key: bytes.Clone(key), db: db}
	var pre [4]byte
	copy(pre[:], key)
	return uint64(id)<<32 | uint64(pre[0])<<24 | uint64(pre[1])<<16 | uint64(pre[2])<<8 | uint64(pre[3])
}

// resume returns the encoded key a scan of db continues at.
func (sc *scanCursors) resume(cursor uint64, db int) []byte {
	id := uint32(cursor >> 32)
	pre := []byte{byte(cursor >> 24), byte(cursor >> 16), byte(cursor >> 8), byte(cursor)}
	sc.mu.Lock()
	e, ok := sc.m[id]
	sc.mu.Unlock()
	var key []byte
	if ok && e.db == db && bytes.HasPrefix(append(bytes.Clone(e.key), 0, 0, 0, 0), pre) {
		key = e.key
	} else {
		key = bytes.TrimRight(pre, "\x00")
	}
	if db == 0 {
		if len(key) > 0 && key[0] == dbPrefixByte {
			// No key of database 0 is there; resume at the end.
			return []byte{dbPrefixByte}
		}
		return key
	}
	return append([]byte{dbPrefixByte, byte(db)}, key...)
}
