//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || loong64 || mips64 || mips64le || ppc64)

package vfs

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
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
	// A plain mmap rather than syscall.Mmap, whose bookkeeping allows
	// only whole mappings to be unmapped: UnmapAppend unmaps parts. (The
	// build constraint leaves out s390x, whose mmap takes its arguments
	// in memory.)
	addr, _, e := syscall.Syscall6(syscall.SYS_MMAP, 0, uintptr(length),
		syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED, of.Fd(), 0)
	if e != 0 {
		return nil, &os.PathError{Op: "mmap", Path: of.Name(), Err: e}
	}
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), length), nil
}

// UnmapAppend unmaps b[from:to] of a mapping made by MapAppend; from must
// be a multiple of the page size, and so must to unless it is len(b). The
// bytes of the file stay where they are: only this view of them goes, and
// b[from:to] must not be touched again. Unmapping the pages that appends
// have filled before they are written back spares the write-back from
// write-protecting them one by one (and the processors that ran the
// appends from flushing their TLBs for each). Unmap all of b, in the
// pieces not unmapped yet, before dropping it.
func UnmapAppend(b []byte, from, to int) error {
	if from < 0 || to > len(b) || from >= to {
		return nil
	}
	if _, _, e := syscall.Syscall(syscall.SYS_MUNMAP, uintptr(unsafe.Pointer(&b[from])), uintptr(to-from), 0); e != 0 {
		return fmt.Errorf("vfs: munmap: %w", e)
	}
	return nil
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
