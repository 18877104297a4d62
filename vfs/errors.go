package vfs

import (
	"errors"
)

var (
	// ErrLocked is returned (wrapped) by FS.Lock when another holder has
	// the lock.
	ErrLocked = errors.New("vfs: file is locked by another process")
	// ErrUnsupported is returned (wrapped) for operations a file system
	// cannot perform, such as Link on the memory file system.
	ErrUnsupported = errors.New("vfs: operation not supported")
	// ErrCrashed is returned by every operation of a memory file system
	// after its simulated crash point has been reached.
	ErrCrashed = errors.New("vfs: simulated crash")
)
