//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// lockFile opens (creating if needed) the named file and takes a
// non-blocking exclusive flock on it; shared, it opens the existing file
// read-only and takes a shared flock (flock needs no write access).
func lockFile(name string, shared bool) (io.Closer, error) {
	flag, how := os.O_RDWR|os.O_CREATE, syscall.LOCK_EX
	if shared {
		flag, how = os.O_RDONLY, syscall.LOCK_SH
	}
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flock(f, how|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			err = fmt.Errorf("%w (%w)", ErrLocked, err)
		}
		return nil, &fs.PathError{Op: "lock", Path: name, Err: err}
	}
	return &osLock{f: f, name: name}, nil
}

// flock calls flock(2) on f's descriptor, retrying on EINTR.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

// osLock is a held flock. Closing it unlocks and closes the file.
type osLock struct {
	name string
	mu   sync.Mutex
	f    *os.File // nil once closed
}

func (l *osLock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return &fs.PathError{Op: "unlock", Path: l.name, Err: os.ErrClosed}
	}
	f := l.f
	l.f = nil
	uerr := flock(f, syscall.LOCK_UN)
	cerr := f.Close()
	if uerr != nil {
		return &fs.PathError{Op: "unlock", Path: l.name, Err: uerr}
	}
	return cerr
}
