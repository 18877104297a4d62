//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package vfs

import "io/fs"

func (osFS) FreeSpace(dir string) (int64, error) {
	return 0, &fs.PathError{Op: "statfs", Path: dir, Err: ErrUnsupported}
}
