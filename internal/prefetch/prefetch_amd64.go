package prefetch

import "unsafe"

// Lines prefetches n cache lines from p on, into every cache level
// (PREFETCHT0).
//
//go:noescape
func Lines(p unsafe.Pointer, n int)
