package caskade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

// Appends to the active file go through a shared mapping where the OS
// allows (SyncNone, SyncEverySec) or land on zeros written ahead of them
// (SyncAlways): a process that dies without closing leaves every
// acknowledged write in the page cache, even under SyncNone, and the zeros
// allocated after the last record are cut at the next open. Sealed and
// closed files end exactly at their last record.
func TestProcessCrashKeepsAcknowledgedWrites(t *testing.T) {
	for _, sync := range []SyncPolicy{SyncNone, SyncAlways} {
		t.Run(sync.String(), func(t *testing.T) { testProcessCrash(t, sync) })
	}
}

func testProcessCrash(t *testing.T, sync SyncPolicy) {
	// Write-behind every 8 KiB: it unmaps the pages appends have filled
	// while they go on, and must lose none of them.
	defer func(v int64) { writeBehindBytes = v }(writeBehindBytes)
	writeBehindBytes = 8 << 10
	dir := t.TempDir()
	opts := &Options{Sync: sync, MaxFileSize: 64 << 10, ExpiryPeriod: -1, MergeInterval: -1}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte("v"), 100)
	n := 2000 // about five files
	if sync == SyncAlways {
		n = 1500 // each write waits for its fsync
	}
	for i := range n {
		if err := db.Set(fmt.Appendf(nil, "key-%05d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	// The process dies: its files are what the page cache holds now.
	crashed := t.TempDir()
	names, err := vfs.OS().List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if _, kind := segment.Parse(name); kind != segment.KindData {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	after := openTest(t, crashed, opts)
	for i := range n {
		mustGet(t, after, fmt.Sprintf("key-%05d", i), string(val))
	}
	if torn := after.Stats().Recovery.TornBytes; sync == SyncNone && canAllocate(t, t.TempDir()) && torn == 0 {
		t.Fatal("no allocated zeros after the last record: appends were not mapped")
	}

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ = vfs.OS().List(dir)
	files := 0
	for _, name := range names {
		if _, kind := segment.Parse(name); kind != segment.KindData {
			continue
		}
		files++
		path := filepath.Join(dir, name)
		b, err := segment.ReadAll(vfs.OS(), path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := segment.ScanData(b, path, segment.ScanStrict, db.lim)
		if err != nil || res.End != int64(len(b)) {
			t.Fatalf("%s: records end at %d of %d bytes: %v", name, res.End, len(b), err)
		}
	}
	if files < 3 {
		t.Fatalf("%d data files; the test wants several sealed ones", files)
	}
}

// canAllocate reports whether appends in dir's file system can go through
// a mapping: the platform maps files for writing and the file system
// allocates.
func canAllocate(t *testing.T, dir string) bool {
	f, err := vfs.OS().Create(filepath.Join(dir, "allocate-probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := vfs.MapAppend(f, 4096)
	if err != nil {
		return false
	}
	vfs.UnmapAppend(m, 0, len(m))
	return vfs.Allocate(f, 0, 4096) == nil
}

// DiskBytes counts the space the active file reserves ahead of its records,
// as the file system does, and Close gives it back; it counts hint files.
func TestDiskBytesCountsReservedSpace(t *testing.T) {
	for _, sync := range []SyncPolicy{SyncEverySec, SyncAlways} {
		t.Run(sync.String(), func(t *testing.T) {
			dir := t.TempDir()
			db := openTest(t, dir, &Options{Sync: sync})
			for i := range 100 {
				if err := db.Set(fmt.Appendf(nil, "key-%03d", i), make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
			}
			onDisk := func() int64 {
				names, _ := vfs.OS().List(dir)
				var n int64
				for _, name := range names {
					if _, kind := segment.Parse(name); kind == segment.KindData || kind == segment.KindHint {
						fi, err := os.Stat(filepath.Join(dir, name))
						if err != nil {
							t.Fatal(err)
						}
						n += fi.Size()
					}
				}
				return n
			}
			// Under SyncAlways the zero-filler may extend the file between
			// the two readings, never shrink it: bracket Stats.
			before := onDisk()
			st := db.Stats()
			after := onDisk()
			var records int64
			for _, f := range st.Files {
				records += f.Size
			}
			if st.DiskBytes < before || st.DiskBytes > after {
				t.Fatalf("DiskBytes %d, files on disk %d then %d bytes", st.DiskBytes, before, after)
			}
			if sync == SyncEverySec && canAllocate(t, t.TempDir()) && st.DiskBytes <= records {
				t.Fatalf("DiskBytes %d, records %d: no space reserved for mapped appends", st.DiskBytes, records)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openTest(t, dir, &Options{Sync: sync, ReadOnly: true})
			st = db.Stats()
			if st.DiskBytes != onDisk() {
				t.Fatalf("after Close: DiskBytes %d, files on disk %d bytes", st.DiskBytes, onDisk())
			}
			hints := int64(0)
			for _, f := range st.Files {
				hints += f.HintBytes
			}
			if hints == 0 {
				t.Fatal("no hint file counted after Close sealed the file")
			}
		})
	}
}

// Reads through a file's mapping check each record against the key
// directory and its checksum: with one bit flipped anywhere in a record of
// a sealed file (opened through its hint file, so no scan has read it),
// Get, an iterator and a transaction's range read all fail with ErrCorrupt
// and never return a wrong value.
func TestMappedReadsCheckRecords(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{MaxFileSize: 4 << 10, ExpiryPeriod: -1, MergeInterval: -1}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "key-%02d", i) }
	val := func(i int) []byte { return fmt.Appendf(nil, "value-%02d-%s", i, bytes.Repeat([]byte("v"), 90)) }
	for i := range 60 { // about two files
		if err := db.Set(key(i), val(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, segment.DataName(1))
	orig, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	// The file's first record is key-00's.
	ro := &Options{ReadOnly: true, ExpiryPeriod: -1, MergeInterval: -1}
	first, end := record.FileHeaderSize, record.FileHeaderSize+record.EncodedSize(key(0), val(0))
	for pos := first; pos <= end; pos++ {
		b := bytes.Clone(orig)
		if pos < end {
			b[pos] ^= 1 << (pos % 8)
		}
		if err := os.WriteFile(data, b, 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := Open(dir, ro)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, v []byte, err error) {
			t.Helper()
			switch {
			case pos == end && (err != nil || !bytes.Equal(v, val(0))):
				t.Fatalf("intact file: %s: %q, %v", what, v, err)
			case pos < end && !errors.Is(err, ErrCorrupt):
				t.Fatalf("byte %d flipped: %s: %q, %v; want ErrCorrupt", pos, what, v, err)
			}
		}
		v, err := db.Get(key(0))
		check("Get", v, err)
		it, err := db.NewIterator(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !it.First() {
			t.Fatal("no first key")
		}
		v = bytes.Clone(it.Value())
		check("Iterator.Value", v, it.Err())
		it.Close()
		err = db.ReadTransact(context.Background(), func(tx *Tx) error {
			kvs, err := tx.GetRange(FirstGreaterOrEqual(key(0)), FirstGreaterOrEqual(key(1)), nil)
			if err == nil && len(kvs) == 1 {
				v = kvs[0].Value
			}
			return err
		})
		check("Tx.GetRange", v, err)
		db.Close()
	}
}
