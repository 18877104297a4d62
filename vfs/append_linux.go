//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64 || mips64 || mips64le || ppc64)

package vfs

import (
	"fmt"
	"os"
	"syscall"
)

// MapAppend maps the first length bytes of f for reading and writing,
// shared with the page cache, so that a store to the mapping is a write to
// the file: visible to every reader of the file at once and durable after
// f.Sync, exactly as if it had been written with WriteAt. Only the bytes
// below the file's size may be touched; use Allocate to extend the file
// first. A store to a page the file system cannot provide (an I/O error,
// or a file cut short by someone else) raises SIGBUS, which callers turn
// into an error with runtime/debug.SetPanicOnFault.
//
// It is supported for files of the OS file system on Linux; elsewhere, and
// for other file systems, it returns an error wrapping ErrUnsupported.
func MapAppend(f File, length int) ([]byte, error) {
	of, ok := f.(*os.File)
	if !ok || length <= 0 {
		return nil, fmt.Errorf("vfs: map for appends: %w", ErrUnsupported)
	}
	b, err := syscall.Mmap(int(of.Fd()), 0, length, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: of.Name(), Err: err}
	}
	return b, nil
}

// Allocate reserves disk blocks for the n bytes of f at off and extends the
// file's size to cover them (fallocate with mode 0); the new bytes read as
// zeros. Once it succeeds, stores through MapAppend into that range cannot
// fail for lack of space. Files that are not OS files, and file systems
// without fallocate, get an error wrapping ErrUnsupported.
func Allocate(f File, off, n int64) error {
	of, ok := f.(*os.File)
	if !ok {
		return fmt.Errorf("vfs: allocate: %w", ErrUnsupported)
	}
	for {
		err := syscall.Fallocate(int(of.Fd()), 0, off, n)
		switch err {
		case nil:
			return nil
		case syscall.EINTR:
			continue
		case syscall.EOPNOTSUPP, syscall.ENOSYS:
			return fmt.Errorf("vfs: allocate %s: %w", of.Name(), ErrUnsupported)
		}
		return &os.PathError{Op: "fallocate", Path: of.Name(), Err: err}
	}
}
