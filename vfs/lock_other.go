//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package vfs

import (
	"io"
	"io/fs"
)

// lockFile reports that this system has no flock.
func lockFile(name string, shared bool) (io.Closer, error) {
	return nil, &fs.PathError{Op: "lock", Path: name, Err: ErrUnsupported}
}
