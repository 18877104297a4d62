package prefetch

import (
	"testing"
	"unsafe"
)

// A prefetch must not fault on anything a caller could pass: nil, an
// empty slice, a count running past the end of an object; and it changes
// nothing.
func TestHarmless(t *testing.T) {
	Lines(nil, 40)
	Bytes(nil)
	b := []byte{42}
	Lines(unsafe.Pointer(&b[0]), 40)
	Lines(unsafe.Pointer(&b[0]), 0)
	Lines(unsafe.Pointer(&b[0]), -1)
	Bytes(b)
	if b[0] != 42 {
		t.Fatalf("prefetch changed memory: %d", b[0])
	}
}
