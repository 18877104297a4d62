//go:build !amd64

package prefetch

import "unsafe"

// Lines does nothing on this architecture: only amd64 has the assembly so
// far.
func Lines(p unsafe.Pointer, n int) {}
