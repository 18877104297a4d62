//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package vfs

import (
	"io/fs"
	"syscall"
)

func (osFS) FreeSpace(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, &fs.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
