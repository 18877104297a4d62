package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// OS returns the operating system's file system.
//
// Files it returns are *os.File values, so everything os.File documents about
// ownership and concurrency applies: ReadAt and WriteAt are safe for
// concurrent use, Read and Write share one file position. Errors are the os
// package's own (*fs.PathError, *os.LinkError, *os.SyscallError), so
// errors.Is(err, fs.ErrNotExist) and errors.Is(err, syscall.ENOSPC) work.
//
// Details:
//   - Create opens with O_RDWR|O_CREATE|O_TRUNC and mode 0644; Open is
//     read-only; OpenReadWrite is O_RDWR without O_CREATE.
//   - MkdirAll fsyncs the parent of every directory it creates, so, as on
//     the memory file system, directories made by MkdirAll are durable when
//     it returns.
//   - SyncDir opens the directory and fsyncs it.
//   - Lock takes flock(LOCK_EX|LOCK_NB) on the named file, creating it with
//     mode 0644 if it is missing. flock locks belong to an open file
//     description, so a second Lock of the same file conflicts even inside
//     one process. The kernel drops the lock when the process dies, so a
//     lock file left behind by a crash does not block a new Lock. On systems
//     without flock, Lock returns an error wrapping ErrUnsupported.
//   - List returns the sorted names of the directory's entries.
//
// The returned FS is safe for concurrent use.
func OS() FS { return osFS{} }

// osFS implements FS on the operating system's file system.
type osFS struct{}

func (osFS) Create(name string) (File, error) {
	return openOSFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

func (osFS) Open(name string) (File, error) {
	return openOSFile(name, os.O_RDONLY, 0)
}

func (osFS) OpenReadWrite(name string) (File, error) {
	return openOSFile(name, os.O_RDWR, 0)
}

// openOSFile opens a file, taking care never to return a non-nil File
// interface holding a nil *os.File.
func openOSFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) MkdirAll(dir string, perm os.FileMode) error {
	// Find the directories that do not exist yet, deepest first.
	var missing []string
	for d := filepath.Clean(dir); ; {
		_, err := os.Stat(d)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	// Make each new entry durable, outermost first.
	for i := len(missing) - 1; i >= 0; i-- {
		if err := syncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

func (osFS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (osFS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

func (osFS) SyncDir(dir string) error { return syncDir(dir) }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

func (osFS) Lock(name string) (io.Closer, error) { return lockFile(name, false) }

func (osFS) RLock(name string) (io.Closer, error) { return lockFile(name, true) }

func (osFS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

// Native reports whether f is a file of the operating system's file system
// (opened through OS), for optimisations that only pay on a real disk.
func Native(f File) bool {
	_, ok := f.(*os.File)
	return ok
}
