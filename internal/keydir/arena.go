package keydir

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"github.com/caskade/caskade/internal/prefetch"
)

// The arena holds every key's bytes (and, for keys with a TTL, the expiry
// right after them) in large, append-only chunks, so the tree's items carry
// an 8-byte reference instead of a string: no allocation per key and no
// pointer for the garbage collector to trace.
//
// A reference packs the chunk number (16 bits), the offset in the chunk (24
// bits) and the key length (8 bits) into its low 48 bits; a key of 255
// bytes or more stores longKey in the length field and its length as 4
// bytes before the key. A leaf stores a reference in two parts: the chunk
// and offset beside a search hint, and the length byte with the entry (see
// leafItems). An arena holds up to 1 TiB of keys.
//
// Bytes are written once and never changed, so clones of a tree share the
// arena: each reads only references it holds, and the writer only appends.
const (
	offsetBits   = 24
	maxChunk     = 1 << offsetBits // 16 MiB
	firstChunk   = 64 << 10
	lenBits      = 8
	longKey      = 1<<lenBits - 1
	refBits      = 48
	refMask      = 1<<refBits - 1
	tableBits    = 8
	tableSize    = 1 << tableBits
	expirySize   = 8
	maxChunkNums = tableSize * tableSize

	// MaxKeyLen is the longest key the directory accepts.
	MaxKeyLen = 1 << 20
)

type arena struct {
	mu    sync.Mutex                    // guards chunk creation
	table [tableSize]*[tableSize][]byte // chunk number -> chunk; entries written once
	next  uint32                        // next chunk number
	live  int64                         // bytes referenced by the tree that owns the arena
	dead  int64                         // bytes no longer referenced by it
}

// allocator fills chunks of an arena for one writer; bulk loading uses one
// per goroutine.
type allocator struct {
	a    *arena
	cur  []byte // the chunk being filled
	num  uint32 // its number
	used int    // bytes used in cur
	live int64  // bytes allocated
}

func newArena() *arena { return &arena{} }

func (a *arena) chunk(n uint32) []byte {
	return a.table[n>>tableBits][n&(tableSize-1)]
}

// newChunk adds a chunk of size bytes to the arena.
func (a *arena) newChunk(size int) (uint32, []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.next
	if n >= maxChunkNums {
		panic("keydir: arena exhausted")
	}
	a.next++
	hi := n >> tableBits
	if a.table[hi] == nil {
		a.table[hi] = new([tableSize][]byte)
	}
	c := make([]byte, size)
	a.table[hi][n&(tableSize-1)] = c
	return n, c
}

// alloc reserves n bytes and returns the chunk number, offset and the bytes.
func (al *allocator) alloc(n int) (uint32, int, []byte) {
	if al.cur == nil || al.used+n > len(al.cur) {
		size := firstChunk
		if al.cur != nil {
			size = min(2*len(al.cur), maxChunk)
		}
		al.num, al.cur = al.a.newChunk(max(size, n))
		al.used = 0
	}
	off := al.used
	al.used += n
	al.live += int64(n)
	return al.num, off, al.cur[off : off+n : off+n]
}

// put stores key (and expiry, if hasExpiry) and returns its reference.
func (al *allocator) put(key []byte, hasExpiry bool, expiry int64) uint64 {
	n := len(key)
	extra := 0
	if n >= longKey {
		extra = 4
	}
	if hasExpiry {
		n += expirySize
	}
	num, off, b := al.alloc(n + extra)
	klen := uint64(len(key))
	if extra > 0 {
		binary.LittleEndian.PutUint32(b, uint32(len(key)))
		b = b[4:]
		klen = longKey
	}
	copy(b, key)
	if hasExpiry {
		binary.LittleEndian.PutUint64(b[len(key):], uint64(expiry))
	}
	return uint64(num)<<(offsetBits+lenBits) | uint64(off)<<lenBits | klen
}

// key returns the key bytes of ref; the caller must not modify them.
func (a *arena) key(ref uint64) []byte {
	c, off, n := a.locate(ref)
	return c[off : off+n : off+n]
}

// expiry returns the expiry stored after ref's key.
func (a *arena) expiry(ref uint64) int64 {
	c, off, n := a.locate(ref)
	return int64(binary.LittleEndian.Uint64(c[off+n:]))
}

// prefetch prefetches the start of ref's key.
func (a *arena) prefetch(ref uint64) {
	c := a.chunk(uint32((ref & refMask) >> (offsetBits + lenBits)))
	if off := int(ref>>lenBits) & (maxChunk - 1); off < len(c) {
		prefetch.Lines(unsafe.Pointer(&c[off]), 1)
	}
}

func (a *arena) locate(ref uint64) (chunk []byte, off, n int) {
	chunk = a.chunk(uint32((ref & refMask) >> (offsetBits + lenBits)))
	off = int(ref>>lenBits) & (maxChunk - 1)
	n = int(ref & longKey)
	if n == longKey {
		n = int(binary.LittleEndian.Uint32(chunk[off:]))
		off += 4
	}
	return chunk, off, n
}

// size is the arena space ref takes.
func refSize(ref uint64, keyLen int, hasExpiry bool) int64 {
	n := int64(keyLen)
	if ref&longKey == longKey {
		n += 4
	}
	if hasExpiry {
		n += expirySize
	}
	return n
}
