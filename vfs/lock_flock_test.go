//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package vfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A shared lock holds the file through a read-only descriptor, so it needs
// no write access (a read-only mount, a user who may only read): checked
// on the descriptor itself, as root may open any file for writing.
func TestRLockOpensReadOnly(t *testing.T) {
	name := filepath.Join(t.TempDir(), "LOCK")
	if err := os.WriteFile(name, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	l, err := OS().RLock(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f := l.(*osLock).f
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	if mode := flags & syscall.O_ACCMODE; mode != syscall.O_RDONLY {
		t.Fatalf("the lock's descriptor has access mode %#o, want O_RDONLY", mode)
	}
}
