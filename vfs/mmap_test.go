package vfs_test

import (
	"errors"
	"os"
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

// A mapping for appends unmaps in pieces: stores through the part still
// mapped land in the file beside those made before the first piece went.
func TestUnmapAppendInPieces(t *testing.T) {
	f, err := vfs.OS().Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := os.Getpagesize()
	m, err := vfs.MapAppend(f, 4*page)
	if errors.Is(err, vfs.ErrUnsupported) {
		t.Skip("no mappings for appends on this platform")
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(4 * page)); err != nil {
		t.Fatal(err)
	}
	copy(m, "first")
	if err := vfs.UnmapAppend(m, 0, 2*page); err != nil {
		t.Fatal(err)
	}
	vfs.WriteBehind(f, 0, int64(2*page))
	copy(m[2*page:], "second")
	if err := vfs.UnmapAppend(m, 2*page, len(m)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4*page)
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if string(got[:5]) != "first" || string(got[2*page:2*page+6]) != "second" {
		t.Fatalf("file holds %q and %q", got[:5], got[2*page:2*page+6])
	}
	if err := vfs.UnmapAppend(m, 3*page, 3*page); err != nil { // empty: nothing to do
		t.Fatal(err)
	}
}

// WriteBehind is a hint: on files it cannot act on it does nothing.
func TestWriteBehindMemFS(t *testing.T) {
	f, err := vfs.NewMem().Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("x"), 0)
	vfs.WriteBehind(f, 0, 4096)
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 0); err != nil || b[0] != 'x' {
		t.Fatalf("read %q, %v", b, err)
	}
}
