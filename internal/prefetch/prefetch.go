// Package prefetch asks the processor to start loading memory that a
// search is about to read, so that several cache misses overlap instead of
// following one another.
//
// On this project's machines a load that misses every cache and the TLB
// waits 180-370 ns, and a search through data larger than the caches is a
// chain of such loads, each needing the last one's result: a B-tree
// search, then the record it points to. Prefetching a whole node as soon
// as its address is known turns the misses of a search within it into one
// wave. (Prefetching for many searches at once gained nothing more: the
// processor here takes few TLB misses at a time.)
//
// A prefetch is only a hint: it changes no memory, never faults (on nil,
// on an unmapped address, or past the end of an object), and may be
// dropped by the processor.
package prefetch

import "unsafe"

// LineSize is the cache line size assumed.
const LineSize = 64

// Bytes prefetches the cache lines that b spans.
func Bytes(b []byte) {
	if len(b) == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	first := uintptr(p) &^ (LineSize - 1)
	last := (uintptr(p) + uintptr(len(b)) - 1) &^ (LineSize - 1)
	Lines(p, int((last-first)/LineSize)+1)
}
