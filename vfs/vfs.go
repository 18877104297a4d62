// Package vfs is the file system seam of caskade. Every file the engine touches
// goes through an FS: OS is the real file system;
// tests can substitute an in-memory file system that simulates crashes (see
// NewMem) or one that injects faults (package errorfs).
//
// The interface is deliberately small: it names only what a log-structured
// store needs (create, open, positional read and write, sync, truncate, rename,
// remove, list, directory sync and an exclusive advisory lock).
package vfs

import (
	"io"
	"os"
)

// File is an open file. Implementations must make ReadAt safe for concurrent
// use with other ReadAt calls and with writes to other regions of the file;
// Write, WriteAt, Truncate and Sync are called by one goroutine at a time.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	// Sync makes everything written so far durable (fsync).
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Stat reports the file's size and mode.
	Stat() (os.FileInfo, error)
}

// FS is a file system. Paths use the host's separator (path/filepath).
// Implementations are safe for concurrent use.
type FS interface {
	// Create creates or truncates the named file for reading and writing.
	// The new directory entry is durable only after SyncDir of its parent.
	Create(name string) (File, error)
	// Open opens the named file read-only.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file for reading and writing without
	// truncating it.
	OpenReadWrite(name string) (File, error)
	// Remove removes the named file or empty directory.
	Remove(name string) error
	// Rename atomically renames oldname to newname, replacing newname. The
	// change is durable only after SyncDir of the directory.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and any missing parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries in dir, sorted.
	List(dir string) ([]string, error)
	// Stat describes the named file.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory's entries (creates, renames, removes)
	// durable.
	SyncDir(dir string) error
	// Lock takes an exclusive advisory lock on the named file, creating it
	// if needed. It fails at once with an error wrapping ErrLocked if another
	// holder has the lock. Closing the returned Closer releases the lock. A
	// lock dies with the process that holds it, so a lock file left behind
	// by a crash never blocks the next Lock.
	Lock(name string) (io.Closer, error)
	// RLock takes a shared advisory lock on the named file, which must
	// exist: it opens it read-only and never creates it, so it works on a
	// read-only mount and for a user who may only read. Any number of
	// shared locks may be held at once, but none while an exclusive Lock
	// is held, and Lock fails while any is: either fails at once with an
	// error wrapping ErrLocked.
	RLock(name string) (io.Closer, error)
	// Link creates newname as a hard link to oldname where the file system
	// supports it; otherwise it returns an error wrapping ErrUnsupported.
	Link(oldname, newname string) error
}
