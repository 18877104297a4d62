//go:build !((darwin || dragonfly || freebsd || linux || netbsd || openbsd) && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64 || mips64 || mips64le || ppc64))

package vfs

import "fmt"

// Map is not supported on this platform; it returns an error wrapping
// ErrUnsupported, and callers read with ReadAt instead.
func Map(f File, length int) ([]byte, error) {
	return nil, fmt.Errorf("vfs: map: %w", ErrUnsupported)
}

// Unmap is not supported on this platform.
func Unmap(b []byte) error { return fmt.Errorf("vfs: unmap: %w", ErrUnsupported) }
