package keydir

import (
	"testing"
	"unsafe"
)

// A prefetch is only a hint: it must not fault on any address a search
// could pass, nor on nil, nor past the end of an object, and it changes
// nothing it touches.
func TestPrefetchIsHarmless(t *testing.T) {
	prefetch(nil, nodeLines)
	b := []byte{42}
	prefetch(unsafe.Pointer(&b[0]), nodeLines)
	prefetch(unsafe.Pointer(&b[0]), 0)
	if b[0] != 42 {
		t.Fatalf("prefetch changed memory: %d", b[0])
	}
	if nodeLines*64 < int(unsafe.Sizeof(innerNode{})) || nodeLines*64 < int(unsafe.Sizeof(leafNode{})) {
		t.Fatalf("nodeLines %d does not cover a node (%d and %d bytes)", nodeLines, unsafe.Sizeof(innerNode{}), unsafe.Sizeof(leafNode{}))
	}
}
