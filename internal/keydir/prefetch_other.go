//go:build !amd64

package keydir

import "unsafe"

// prefetch does nothing here: only amd64 has the assembly so far.
func prefetch(p unsafe.Pointer, lines int) {}
