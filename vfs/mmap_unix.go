//go:build (darwin || dragonfly || freebsd || linux || netbsd || openbsd) && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64 || mips64 || mips64le || ppc64)

package vfs

import (
	"fmt"
	"os"
	"syscall"
)

// Map maps the first length bytes of f read-only into memory, shared with
// the page cache, so that later writes to the file (through f or another
// handle) show through it. length may exceed the file's current size: the
// mapping then covers bytes appended later, and touching a page wholly past
// the end of the file raises SIGBUS, so callers read only bytes they know
// were written. Only files of the OS file system can be mapped; others
// return an error wrapping ErrUnsupported. Unmap releases the mapping; the
// bytes must not be used after that.
func Map(f File, length int) ([]byte, error) {
	of, ok := f.(*os.File)
	if !ok || length <= 0 {
		return nil, fmt.Errorf("vfs: map: %w", ErrUnsupported)
	}
	b, err := syscall.Mmap(int(of.Fd()), 0, length, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: of.Name(), Err: err}
	}
	return b, nil
}

// Unmap releases a mapping made by Map.
func Unmap(b []byte) error {
	if err := syscall.Munmap(b); err != nil {
		return fmt.Errorf("vfs: munmap: %w", err)
	}
	return nil
}
