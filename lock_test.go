package caskade

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

func TestSecondOpenFails(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, nil)
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) || !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	if _, err := Open(dir, &Options{ReadOnly: true}); !errors.Is(err, ErrLocked) {
		t.Fatalf("read-only open of a directory in use: %v", err)
	}
	db.Close()
	db2, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	db2.Close()
}

// Read-only opens share the directory (check, dump and backup side by side)
// and keep a writer out while they hold it.
func TestReadOnlyOpensShare(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, nil)
	if err := db.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	r1, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("second read-only open: %v", err)
	}
	defer r2.Close()
	if v, err := r2.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("writable open while read-only opens hold the directory: %v", err)
	}
}

func TestStaleLockFile(t *testing.T) {
	dir := t.TempDir()
	// A lock file left behind by a killed process holds no lock.
	if err := os.WriteFile(filepath.Join(dir, LockFileName), []byte("12345\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := openTest(t, dir, nil)
	if err := db.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	// On the memory FS: a crash drops the lock of the dead process.
	mem := vfs.NewMem()
	live, err := Open("/db", &Options{FS: mem, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	after := mem.Crash(vfs.CrashOptions{})
	db2, err := Open("/db", &Options{FS: after, ExpiryPeriod: -1})
	if err != nil {
		t.Fatalf("open after crash: %v", err)
	}
	db2.Close()
}

func hashTree(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sums[path] = sha256.Sum256(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// TestReadOnlyChangesNothing opens, reads and closes a database read-only,
// including one with a torn tail and no hint files, and checks that every
// file is byte-for-byte unchanged and no file was added or removed.
func TestReadOnlyChangesNothing(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{MaxFileSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		db.Set(fmt.Appendf(nil, "k%02d", i), make([]byte, 60))
	}
	db.Close()
	os.Remove(filepath.Join(dir, segment.HintName(1)))
	names, _ := os.ReadDir(dir)
	newest := ""
	for _, n := range names {
		if _, kind := segment.Parse(n.Name()); kind == segment.KindData {
			newest = n.Name()
		}
	}
	f, _ := os.OpenFile(filepath.Join(dir, newest), os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte("torn tail"))
	f.Close()
	before := hashTree(t, dir)

	ro, err := Open(dir, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ro.Get([]byte("k49")); err != nil || len(v) != 60 {
		t.Fatalf("read-only get: %v", err)
	}
	if err := ro.Set([]byte("x"), nil); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("read-only set: %v", err)
	}
	if ro.Stats().Recovery.TornBytes != 9 {
		t.Fatalf("torn bytes %d", ro.Stats().Recovery.TornBytes)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	after := hashTree(t, dir)
	if len(after) != len(before) {
		t.Fatalf("read-only open changed the file set: %d files before, %d after", len(before), len(after))
	}
	for p, s := range before {
		if after[p] != s {
			t.Fatalf("read-only open changed %s", p)
		}
	}
	// A read-only open of a directory that was never a database.
	empty := filepath.Join(t.TempDir(), "none")
	ro, err = Open(empty, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of a missing directory: %v", err)
	}
	ro.Close()
	if _, err := os.Stat(empty); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("read-only open created the directory")
	}
}
