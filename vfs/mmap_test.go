package vfs_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/caskade/caskade/vfs"
)

func TestMapSeesLaterWrites(t *testing.T) {
	fs := vfs.OS()
	f, err := fs.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteAt([]byte("hello"), 0)
	m, err := vfs.Map(f, 1<<20)
	if errors.Is(err, vfs.ErrUnsupported) {
		t.Skip("no mmap on this platform")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer vfs.Unmap(m)
	if string(m[:5]) != "hello" {
		t.Fatalf("mapped %q", m[:5])
	}
	f.WriteAt([]byte(" world"), 5) // an append after mapping shows through
	if string(m[:11]) != "hello world" {
		t.Fatalf("mapped %q after append", m[:11])
	}
}

func TestMapMemFSUnsupported(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vfs.Map(f, 10); !errors.Is(err, vfs.ErrUnsupported) {
		t.Fatalf("map of a memory file: %v", err)
	}
}
