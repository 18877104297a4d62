package keydir

import "unsafe"

// prefetch asks the processor to start loading the lines cache lines from
// p on, and returns at once: it changes nothing, and a bad address is not
// a fault.
//
//go:noescape
func prefetch(p unsafe.Pointer, lines int)
