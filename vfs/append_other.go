//go:build !(linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64 || mips64 || mips64le || ppc64))

package vfs

import "fmt"

// MapAppend is supported on Linux only; here it returns an error wrapping
// ErrUnsupported, and callers append with WriteAt.
func MapAppend(f File, length int) ([]byte, error) {
	return nil, fmt.Errorf("vfs: map for appends: %w", ErrUnsupported)
}

// Allocate is supported on Linux only; here it returns an error wrapping
// ErrUnsupported.
func Allocate(f File, off, n int64) error {
	return fmt.Errorf("vfs: allocate: %w", ErrUnsupported)
}
