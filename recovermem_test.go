package caskade

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

// scanMemFileSize is the size of the data files of the tests below that
// measure what scanning them allocates.
const scanMemFileSize = 12 << 20

// writeScanMemFiles writes data files 1 to files, of scanMemFileSize bytes
// each, to /db of a new memory file system (whose files are never
// mapped), without hint files; directly, since through the write path,
// under -race, they took seconds. It returns the file system and the keys,
// key000001 on, of the files' committed records of 8 KiB values.
func writeScanMemFiles(t *testing.T, files uint32) (vfs.FS, int, []byte) {
	t.Helper()
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	val := []byte(strings.Repeat("v", 8<<10))
	n := 0
	for id := uint32(1); id <= files; id++ {
		b := make([]byte, 0, scanMemFileSize+len(val)+64)
		b = record.AppendFileHeader(b)
		for len(b) < scanMemFileSize {
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
	return fs, n, val
}

// allocated returns the bytes that f allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestOpenScanMemory opens a database whose data files have no hint files,
// so that Open scans them, and checks that it allocates well under the
// size of one data file: the scan reads a file a chunk at a time, instead
// of whole into a buffer per recovery worker, which made Open's peak
// memory the workers times the file size (256 MiB files by default).
func TestOpenScanMemory(t *testing.T) {
	const files = 2
	fs, n, val := writeScanMemFiles(t, files)
	var db *DB
	var err error
	alloc := allocated(func() {
		db, err = Open("/db", &Options{FS: fs, Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1,
			MaxFileSize: scanMemFileSize, RecoveryWorkers: 2})
	})
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
	t.Logf("Open scanned %d files of %d bytes (%d keys) allocating %d bytes", files, scanMemFileSize, n, alloc)
	if alloc >= scanMemFileSize {
		t.Fatalf("Open allocated %d bytes to scan files of %d bytes, want well under one file", alloc, scanMemFileSize)
	}
}

// openScanMemFiles opens the database of writeScanMemFiles (which writes
// the hint files, as Open does for files it scans) and returns it with
// the hint file of data file 1, which it removes.
func openScanMemFiles(t *testing.T, files uint32) (*DB, []byte) {
	t.Helper()
	fs, _, _ := writeScanMemFiles(t, files)
	db, err := Open("/db", &Options{FS: fs, Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1,
		MaxFileSize: scanMemFileSize, RecoveryWorkers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	hintPath := filepath.Join("/db", segment.HintName(1))
	want, err := segment.ReadAll(fs, hintPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(hintPath); err != nil {
		t.Fatal(err)
	}
	return db, want
}

// The background hint writer reads a data file that is not mapped a
// chunk at a time, not whole into memory (data files are up to 256 MiB).
func TestHintWriterScanMemory(t *testing.T) {
	db, want := openScanMemFiles(t, 2)
	var err error
	alloc := allocated(func() { err = db.writeHint(1) })
	if err != nil {
		t.Fatal(err)
	}
	got, err := segment.ReadAll(db.fs, filepath.Join("/db", segment.HintName(1)))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("hint file written: %d bytes (%v), want the %d Open wrote", len(got), err, len(want))
	}
	t.Logf("the hint writer scanned a file of %d bytes allocating %d bytes", scanMemFileSize, alloc)
	if alloc >= scanMemFileSize*3/4 {
		t.Fatalf("the hint writer allocated %d bytes for a file of %d bytes, want well under the file", alloc, scanMemFileSize)
	}
}

// A merge of some sealed files reads the hints of each input (to carry
// its tombstones), and scans an input without a hint file that is not
// mapped a chunk at a time, not whole into memory.
func TestMergeInputScanMemory(t *testing.T) {
	for _, salvage := range []bool{false, true} {
		t.Run(fmt.Sprintf("salvage=%v", salvage), func(t *testing.T) {
			db, want := openScanMemFiles(t, 2)
			db.opts.Salvage = salvage
			db.mu.RLock()
			f := db.fset.files[1]
			db.mu.RUnlock()
			var got []byte
			var err error
			var release func()
			alloc := allocated(func() { got, release, err = db.inputHints(1, f) })
			if release != nil {
				defer release()
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("input's hints: %d bytes (%v), want the %d Open wrote", len(got), err, len(want))
			}
			t.Logf("merge scanned an input of %d bytes allocating %d bytes", scanMemFileSize, alloc)
			if alloc >= scanMemFileSize*3/4 {
				t.Fatalf("merge allocated %d bytes for an input of %d bytes, want well under the file", alloc, scanMemFileSize)
			}
		})
	}
}

// Scanning a data file of small records at Open costs less than 70 bytes
// a record more than reading its hint file: the scan packs each record
// into an index of 12 bytes plus 11 plus its key (segment.HintIndex) to
// build the hint file from, where it held a record.Hint of 64 bytes plus
// the key (52 bytes a record more now, 94 then, for 11-byte keys; the
// rest is mostly the hint file written to the memory file system, whose
// buffer doubles as it grows).
func TestOpenScanMemoryPerRecord(t *testing.T) {
	if raceEnabled {
		// It allocates about 33 bytes a record more in the scan.
		t.Skip("the race detector changes allocations")
	}
	const fileSize = 8 << 20
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/db", 0o755); err != nil {
		t.Fatal(err)
	}
	b := record.AppendFileHeader(make([]byte, 0, fileSize+64))
	val := []byte(strings.Repeat("v", 20))
	n := 0
	for len(b) < fileSize {
		n++
		b = record.AppendRecord(b, record.KindPut, true, uint64(n), 0, 0, fmt.Appendf(nil, "key%08d", n), val)
	}
	f, err := fs.Create(filepath.Join("/db", segment.DataName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b = nil
	opts := &Options{FS: fs, Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1, RecoveryWorkers: 1}
	open := func(fromHints int) uint64 {
		var db *DB
		var err error
		alloc := allocated(func() { db, err = Open("/db", opts) })
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if st := db.Stats(); st.Recovery.FromHints != fromHints || st.Keys != n {
			t.Fatalf("recovery read %d files through hints and found %d keys; want %d and %d",
				st.Recovery.FromHints, st.Keys, fromHints, n)
		}
		return alloc
	}
	scanned := open(0) // and writes the hint file
	hinted := open(1)
	// The scan's 4 MiB window, and the hint file it writes.
	const window = 4 << 20
	hintFile := uint64(n * (record.HintHeaderSize + len("key00000000")))
	perRecord := (int64(scanned) - int64(hinted) - window - int64(hintFile)) / int64(n)
	t.Logf("Open of %d records: %d bytes allocated scanning the data file, %d reading its hint file: %d more a record",
		n, scanned, hinted, perRecord)
	if perRecord >= 70 {
		t.Fatalf("scanning allocated %d bytes a record more than reading the hint file, want under 70", perRecord)
	}
}

// Open reads valid hint files through memory mappings (segment.MapAll),
// which cost no heap, and releases every one of them before it returns:
// nothing in the key directory, nor the set of expiring keys, aliases
// them. (The process's mappings are listed on Linux only.)
func TestOpenReleasesHintMappings(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/maps")
	}
	dir := t.TempDir()
	opts := &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1, MaxFileSize: 64 << 10}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	for i := range 5000 {
		k := fmt.Appendf(nil, "key%06d", i)
		if i%2 == 0 {
			b.SetWithTTL(k, k, time.Hour)
		} else {
			b.Set(k, k)
		}
		if b.Len() == 100 { // a commit stays in one file
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openTest(t, dir, opts)
	rec := db.Stats().Recovery
	if rec.Files < 2 || rec.FromHints != rec.Files {
		t.Fatalf("recovered %d files, %d through hint files; want several, all through hints", rec.Files, rec.FromHints)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(maps)) {
		if strings.Contains(line, dir) && strings.HasSuffix(strings.TrimSpace(line), ".hint") {
			t.Fatalf("a hint file is still mapped after Open: %s", strings.TrimSpace(line))
		}
	}
	for _, i := range []int{0, 1, 2500, 4999} {
		k := fmt.Appendf(nil, "key%06d", i)
		v, info, err := db.Lookup(k)
		if err != nil || !bytes.Equal(v, k) {
			t.Fatalf("%s after reopening: %q, %v", k, v, err)
		}
		if (i%2 == 0) != !info.ExpiresAt.IsZero() {
			t.Fatalf("%s after reopening: expiry %v", k, info.ExpiresAt)
		}
	}
}
