package caskade

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

// TestOpenScanMemory opens a database whose data files have no hint files,
// so that Open scans them, and checks that it allocates well under the
// size of one data file: the scan reads a file a chunk at a time, instead
// of whole into a buffer per recovery worker, which made Open's peak
// memory the workers times the file size (256 MiB files by default).
func TestOpenScanMemory(t *testing.T) {
	const fileSize, files = 12 << 20, 2
	// The data files, written directly (through the write path, under
	// -race, they took seconds): committed records of 8 KiB values.
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	val := []byte(strings.Repeat("v", 8<<10))
	n := 0
	for id := uint32(1); id <= files; id++ {
		b := make([]byte, 0, fileSize+len(val)+64)
		b = record.AppendFileHeader(b)
		for len(b) < fileSize {
			n++
			b = record.AppendRecord(b, record.KindPut, true, uint64(n), 0, 0, fmt.Appendf(nil, "key%06d", n), val)
		}
		f, err := fs.Create(filepath.Join("/db", segment.DataName(id)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(b, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	db, err := Open("/db", &Options{FS: fs, Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1,
		MaxFileSize: fileSize, RecoveryWorkers: 2})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := db.Stats()
	if st.Recovery.Files != files || st.Recovery.FromHints != 0 {
		t.Fatalf("recovery read %d files, %d through hints; want %d scanned", st.Recovery.Files, st.Recovery.FromHints, files)
	}
	if got, err := db.Get(fmt.Appendf(nil, "key%06d", n)); err != nil || len(got) != len(val) {
		t.Fatalf("last key: %d bytes, %v", len(got), err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("Open scanned %d files of %d bytes (%d keys) allocating %d bytes", files, fileSize, n, alloc)
	if alloc >= fileSize {
		t.Fatalf("Open allocated %d bytes to scan files of %d bytes, want well under one file", alloc, fileSize)
	}
}
