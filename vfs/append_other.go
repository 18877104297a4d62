//go:build !(linux && (amd64 || arm64 || riscv64 || ppc64le || loong64 || mips64 || mips64le || ppc64))

package vfs

import "fmt"

// MapAppend is supported on Linux only; here it returns an error wrapping
// ErrUnsupported, and callers append with WriteAt.
func MapAppend(f File, length int) ([]byte, error) {
	return nil, fmt.Errorf("vfs: map for appends: %w", ErrUnsupported)
}

// UnmapAppend unmaps part of a mapping made by MapAppend, which is never
// made here.
func UnmapAppend(b []byte, from, to int) error {
	return fmt.Errorf("vfs: unmap: %w", ErrUnsupported)
}

// Allocate is supported on Linux only; here it returns an error wrapping
// ErrUnsupported.
func Allocate(f File, off, n int64) error {
	return fmt.Errorf("vfs: allocate: %w", ErrUnsupported)
}
