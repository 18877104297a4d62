package caskade

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

// TestOpenScanMemory opens a database whose data files have no hint files,
// so that Open scans them, and checks that it allocates well under the
// size of one data file: the scan reads a file a chunk at a time, instead
// of whole into a buffer per recovery worker, which made Open's peak
// memory the workers times the file size (256 MiB files by default).
func TestOpenScanMemory(t *testing.T) {
	const fileSize = 16 << 20
	fs := vfs.NewMem()
	opts := &Options{FS: fs, Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1,
		MaxFileSize: fileSize, RecoveryWorkers: 2}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	val := []byte(strings.Repeat("v", 8<<10))
	n := 0
	for n*len(val) < 2*fileSize+fileSize/2 {
		var b Batch
		for range 64 {
			b.Set(fmt.Appendf(nil, "key%06d", n), val)
			n++
		}
		if err := db.Write(&b); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, name := range names {
		switch _, kind := segment.Parse(name); kind {
		case segment.KindHint:
			if err := fs.Remove(filepath.Join("/db", name)); err != nil {
				t.Fatal(err)
			}
		case segment.KindData:
			files++
		}
	}
	if files < 3 {
		t.Fatalf("%d data files, want at least 3 for two workers to scan", files)
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	db, err = Open("/db", opts)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := db.Stats()
	if st.Recovery.Files != files || st.Recovery.FromHints != 0 {
		t.Fatalf("recovery read %d files, %d through hints; want %d scanned", st.Recovery.Files, st.Recovery.FromHints, files)
	}
	if got, err := db.Get(fmt.Appendf(nil, "key%06d", n-1)); err != nil || len(got) != len(val) {
		t.Fatalf("last key: %d bytes, %v", len(got), err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("Open scanned %d files of up to %d bytes (%d keys) allocating %d bytes", files, fileSize, n, alloc)
	if alloc >= fileSize {
		t.Fatalf("Open allocated %d bytes to scan files of %d bytes, want well under one file", alloc, fileSize)
	}
}
