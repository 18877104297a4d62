//go:build linux && (amd64 || arm64 || riscv64 || loong64 || s390x)

package vfs

import (
	"os"
	"syscall"
)

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE: start writing the dirty
// pages of the range, without waiting for them.
const syncFileRangeWrite = 2

// WriteBehind starts writing the dirty pages of f in [off, off+n) to the
// device and returns without waiting for them (sync_file_range with
// SYNC_FILE_RANGE_WRITE for OS files on Linux; elsewhere, and for other
// file systems, it does nothing). It makes nothing durable by itself: a
// later Sync or SyncData still must run, but finds less left to write, so
// it is shorter. An error of the write-back is reported by that sync.
func WriteBehind(f File, off, n int64) {
	of, ok := f.(*os.File)
	if !ok || n <= 0 {
		return
	}
	rc, err := of.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		for {
			_, _, e := syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, fd, uintptr(off), uintptr(n), syncFileRangeWrite, 0, 0)
			if e != syscall.EINTR {
				return
			}
		}
	})
}
