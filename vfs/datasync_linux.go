package vfs

import (
	"os"
	"syscall"
)

// SyncData makes the data written to f so far durable, with the metadata
// needed to read it back (its size), like Sync, but without the inode's
// timestamps: fdatasync for OS files on Linux. A file whose blocks are
// already allocated (see Allocate, or written ahead with zeros) then syncs
// with no journal commit, where fsync would commit the new mtime at every
// call. Files of other file systems get their own Sync.
func SyncData(f File) error { return syncData(f, false) }

// syncData is SyncData; with hold, the calling goroutine keeps its
// processor during the call (see Syncer).
func syncData(f File, hold bool) error {
	of, ok := f.(*os.File)
	if !ok {
		return f.Sync()
	}
	rc, err := of.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if hold {
				serr = nil
				if _, _, e := syscall.RawSyscall(syscall.SYS_FDATASYNC, fd, 0, 0); e != 0 {
					serr = e
				}
			} else {
				serr = syscall.Fdatasync(int(fd))
			}
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: of.Name(), Err: serr}
	}
	return nil
}
