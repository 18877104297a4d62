package segment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/vfs"
)

// mappedFile creates a data file that takes appends through a mapping of
// length bytes, or skips where the platform cannot.
func mappedFile(t *testing.T, length int64) *File {
	t.Helper()
	f, err := Create(vfs.OS(), t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	f.MapAppends(length)
	if f.w == nil {
		t.Skip("no writable mappings on this platform")
	}
	probe, err := vfs.OS().Create(filepath.Join(t.TempDir(), "probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if err := vfs.Allocate(probe, 0, 4096); err != nil {
		t.Skipf("the file system does not allocate: %v", err)
	}
	return f
}

// sealExact seals f and checks that the file ends at its last record.
func sealExact(t *testing.T, f *File) {
	t.Helper()
	if err := f.Seal(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(f.Path); err != nil || st.Size() != f.Size() {
		t.Fatalf("sealed file is %d bytes, want %d (%v)", st.Size(), f.Size(), err)
	}
}

// Appends through the mapping read back like written ones; the file is
// allocated ahead of them, and Seal cuts it back to the records.
func TestMappedAppends(t *testing.T) {
	const length = 3*appendChunk + 100
	f := mappedFile(t, length)
	val := make([]byte, 1000)
	var offs []int64
	for i := 0; f.Size()+int64(record.EncodedSize([]byte("key"), val)) <= length; i++ {
		val[0] = byte(i)
		off, err := f.Append(record.AppendRecord(nil, record.KindPut, true, uint64(i+1), 0, 0, []byte("key"), val))
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	st, err := os.Stat(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() <= f.Size()-appendChunk || st.Size() > length {
		t.Fatalf("file size %d while %d bytes are written (mapping %d)", st.Size(), f.Size(), length)
	}
	sealExact(t, f)
	for i, off := range offs {
		r, err := f.ReadRecord(off, 3, 1000, record.Limits{}, nil)
		if err != nil || r.Value[0] != byte(i) || r.Version != uint64(i+1) {
			t.Fatalf("record %d at %d: %v", i, off, err)
		}
	}
	b, err := ReadAll(vfs.OS(), f.Path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ScanData(b, f.Path, ScanStrict, record.Limits{})
	if err != nil || len(res.Hints) != len(offs) {
		t.Fatalf("scan of the sealed file: %d records, %v", len(res.Hints), err)
	}
}

// A store the file system cannot take (here: the file was cut short behind
// the writer's back) is an error, not a crash.
func TestMappedAppendFault(t *testing.T) {
	f := mappedFile(t, 1<<20)
	rec := record.AppendRecord(nil, record.KindPut, true, 1, 0, 0, []byte("k"), []byte("v"))
	if _, err := f.Append(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(f.Path, 0); err != nil {
		t.Fatal(err)
	}
	_, err := f.Append(rec)
	if err == nil {
		t.Fatal("append into a truncated mapping succeeded")
	}
	if errors.Is(err, ErrTruncateFailed) || !strings.Contains(err.Error(), "mapping") {
		t.Fatalf("unexpected error kind: %v", err)
	}
}

// A record longer than the mapping is written with WriteAt instead.
func TestMappedAppendPastMapping(t *testing.T) {
	f := mappedFile(t, 4096)
	big := record.AppendRecord(nil, record.KindPut, true, 1, 0, 0, []byte("big"), make([]byte, 5000))
	off, err := f.Append(big)
	if err != nil || off+int64(len(big)) != f.Size() {
		t.Fatalf("append past the mapping at %d: %v", off, err)
	}
	if _, err := f.ReadRecord(off, 3, 5000, record.Limits{}, nil); err != nil {
		t.Fatal(err)
	}
	sealExact(t, f)
}

// With ZeroAhead, appends land on zeros written ahead of them and never
// under them: every record survives, across several chunks, and Seal cuts
// the zeros.
func TestZeroAhead(t *testing.T) {
	f, err := Create(vfs.OS(), t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const limit = 5*zeroChunk + 123
	f.ZeroAhead(limit)
	if f.z == nil {
		t.Fatal("no zeroer for an OS file")
	}
	for more := true; more; {
		if more, err = f.z.fill(); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(f.Path); err != nil || st.Size() < 2*zeroChunk {
		t.Fatalf("file is %d bytes before any append; want two chunks of zeros (%v)", st.Size(), err)
	}
	val := make([]byte, 3000)
	n := 0
	for ; f.Size()+int64(record.EncodedSize([]byte("key"), val)) <= limit+10000; n++ {
		val[0], val[len(val)-1] = byte(n), byte(n>>8)
		if _, err := f.Append(record.AppendRecord(nil, record.KindPut, true, uint64(n+1), 0, 0, []byte("key"), val)); err != nil {
			t.Fatal(err)
		}
	}
	sealExact(t, f)
	b, err := ReadAll(vfs.OS(), f.Path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ScanData(b, f.Path, ScanStrict, record.Limits{})
	if err != nil || len(res.Hints) != n {
		t.Fatalf("scan of the sealed file: %d of %d records, %v", len(res.Hints), n, err)
	}
	for i, h := range res.Hints {
		r, err := f.ReadRecord(h.Offset, 3, 3000, record.Limits{}, nil)
		if err != nil || r.Value[0] != byte(i) || r.Value[len(r.Value)-1] != byte(i>>8) {
			t.Fatalf("record %d: %v", i, err)
		}
	}
}

// Files of other file systems get no zeroer.
func TestZeroAheadOSOnly(t *testing.T) {
	f, err := Create(vfs.NewMem(), "/", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.ZeroAhead(1 << 20)
	if f.z != nil {
		t.Fatal("zeroer on a memory file")
	}
}

// A scan of the newest file cuts the zeros allocated after its last record
// as a torn tail, without missing a record that follows zeros.
func TestScanTailZeros(t *testing.T) {
	rec := func(v uint64) []byte {
		return record.AppendRecord(nil, record.KindPut, true, v, 0, 0, []byte("key"), []byte("value"))
	}
	b := append(record.AppendFileHeader(nil), rec(1)...)
	end := int64(len(b))
	zeros := make([]byte, 4<<20)

	res, err := ScanData(append(bytes.Clone(b), zeros...), "f", ScanTail, record.Limits{})
	if err != nil || res.End != end || res.Torn != int64(len(zeros)) || len(res.Hints) != 1 {
		t.Fatalf("zeros after the last record: end %d torn %d, %d records, %v", res.End, res.Torn, len(res.Hints), err)
	}
	// A record after the zeros is data, so the zeros are damage.
	withRec := append(append(bytes.Clone(b), zeros[:1000]...), rec(2)...)
	if _, err := ScanData(withRec, "f", ScanTail, record.Limits{}); err == nil {
		t.Fatal("a record after zeros was cut as a torn tail")
	}
	// Garbage after the zeros, then zeros again: still a torn tail.
	junk := append(append(append(bytes.Clone(b), zeros[:1000]...), 0x17, 0x2a), zeros[:5000]...)
	if res, err := ScanData(junk, "f", ScanTail, record.Limits{}); err != nil || res.End != end {
		t.Fatalf("junk between zeros: end %d, %v", res.End, err)
	}
}

// Large appends are written, small ones stored through the mapping, in any
// mix, across the chunks allocated ahead.
func TestMappedAppendsMixed(t *testing.T) {
	const length = 2*appendChunk + 4096
	f := mappedFile(t, length)
	small := make([]byte, 100)
	large := make([]byte, mappedAppendMax+1000)
	var offs []int64
	var lens []uint32
	for i := 0; ; i++ {
		v := small
		if i%3 == 2 {
			v = large
		}
		r := record.AppendRecord(nil, record.KindPut, true, uint64(i+1), 0, 0, []byte("key"), v)
		if f.Size()+int64(len(r)) > length {
			break
		}
		off, err := f.Append(r)
		if err != nil {
			t.Fatal(err)
		}
		offs, lens = append(offs, off), append(lens, uint32(len(v)))
	}
	sealExact(t, f)
	for i, off := range offs {
		r, err := f.ReadRecord(off, 3, lens[i], record.Limits{}, nil)
		if err != nil || r.Version != uint64(i+1) {
			t.Fatalf("record %d at %d: %v", i, off, err)
		}
	}
}

// When the file system cannot allocate more (no space, or no fallocate),
// appends go on through WriteAt, and every record stays readable.
func TestMappedAppendAllocateFails(t *testing.T) {
	const length = 3 * appendChunk
	f := mappedFile(t, length)
	calls := 0
	allocate = func(file vfs.File, off, n int64) error {
		calls++
		if calls > 1 {
			return syscall.ENOSPC
		}
		return vfs.Allocate(file, off, n)
	}
	t.Cleanup(func() { allocate = vfs.Allocate })
	val := make([]byte, 1000)
	var offs []int64
	for i := 0; f.Size() < 2*appendChunk; i++ {
		val[0] = byte(i)
		off, err := f.Append(record.AppendRecord(nil, record.KindPut, true, uint64(i+1), 0, 0, []byte("key"), val))
		if err != nil {
			t.Fatalf("append %d at %d: %v", i, f.Size(), err)
		}
		offs = append(offs, off)
	}
	if calls != 2 || f.w != nil {
		t.Fatalf("%d allocations, mapping kept: %v", calls, f.w != nil)
	}
	sealExact(t, f)
	for i, off := range offs {
		r, err := f.ReadRecord(off, 3, 1000, record.Limits{}, nil)
		if err != nil || r.Value[0] != byte(i) {
			t.Fatalf("record %d at %d: %v", i, off, err)
		}
	}
}

// WriteBehind starts the write-back of whole pages only, unmaps them from
// the append mapping, and leaves appends (after it and across Seal)
// reading back as written.
func TestWriteBehindMapped(t *testing.T) {
	const length = 2*appendChunk + 100
	f := mappedFile(t, length)
	page := int64(os.Getpagesize())
	val := make([]byte, 700)
	var offs []int64
	appendOne := func(i int) {
		t.Helper()
		val[0], val[699] = byte(i), byte(i>>8)
		off, err := f.Append(record.AppendRecord(nil, record.KindPut, true, uint64(i+1), 0, 0, []byte("key"), val))
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	f.WriteBehind() // nothing appended: nothing to do
	if f.wb.Load() != 0 || f.WriteBehindPending() != f.Size() {
		t.Fatalf("write-behind at %d with nothing appended", f.wb.Load())
	}
	i := 0
	for ; f.Size() < 3*page+page/2; i++ {
		appendOne(i)
	}
	f.WriteBehind()
	want := f.Size() &^ (page - 1)
	if f.wb.Load() != want || f.wFrom != want || f.WriteBehindPending() != f.Size()-want {
		t.Fatalf("after WriteBehind at size %d: write-back to %d, unmapped to %d, want %d", f.Size(), f.wb.Load(), f.wFrom, want)
	}
	f.WriteBehind() // the same whole pages: no change
	if f.wb.Load() != want {
		t.Fatalf("a second WriteBehind moved the write-back to %d", f.wb.Load())
	}
	for ; f.Size() < appendChunk+page; i++ {
		appendOne(i) // into the page WriteBehind left mapped, then on
	}
	f.WriteBehind()
	if f.wFrom != f.Size()&^(page-1) {
		t.Fatalf("unmapped to %d at size %d", f.wFrom, f.Size())
	}
	for ; f.Size()+800 <= length; i++ {
		appendOne(i)
	}
	sealExact(t, f) // unmaps only what WriteBehind left mapped
	for i, off := range offs {
		r, err := f.ReadRecord(off, 3, 700, record.Limits{}, nil)
		if err != nil || r.Value[0] != byte(i) || r.Value[699] != byte(i>>8) || r.Version != uint64(i+1) {
			t.Fatalf("record %d at %d: %v", i, off, err)
		}
	}
}

// A whole page of zeros before valid records in the newest file is a page
// that never reached the disk (writeback stores the pages of unsynced
// appends in any order): ScanTail cuts the file before it, since every
// record after it was written after the last sync. Zeros that fill no
// whole aligned page are still damage, and ScanStrict accepts no hole.
func TestScanTailHole(t *testing.T) {
	b := record.AppendFileHeader(nil)
	var ends []int64
	for i := 0; len(b) < 5*holePage; i++ {
		b = record.AppendRecord(b, record.KindPut, true, uint64(i+1), 0, 0, fmt.Appendf(nil, "key%04d", i), bytes.Repeat([]byte("v"), 100))
		ends = append(ends, int64(len(b)))
	}
	for _, page := range []int64{holePage, 2 * holePage, 3 * holePage} {
		withHole := bytes.Clone(b)
		clear(withHole[page : page+holePage])
		res, err := ScanData(withHole, "f", ScanTail, record.Limits{})
		var want int64
		for _, e := range ends {
			if e <= page {
				want = e
			}
		}
		if err != nil || res.End != want || res.Hole != page || res.Torn != int64(len(b))-want {
			t.Fatalf("hole at %d: end %d hole %d torn %d, %v; want end %d", page, res.End, res.Hole, res.Torn, err, want)
		}
		if _, err := ScanData(withHole, "f", ScanStrict, record.Limits{}); err == nil {
			t.Fatalf("hole at %d: a strict scan accepted it", page)
		}
	}
	// 4000 zeros across a page boundary cover no whole page: damage.
	partial := bytes.Clone(b)
	clear(partial[2*holePage-2000 : 2*holePage+2000])
	if _, err := ScanData(partial, "f", ScanTail, record.Limits{}); err == nil {
		t.Fatal("zeros that fill no whole page were cut as a hole")
	}
}

// A process killed in the middle of a store into the mapping leaves in the
// page cache whatever part of the store was done; recovery must take that
// for a torn tail. store copies in order, in chunks too short to hold a
// record, so whichever chunk the kill interrupts, and whichever of its
// bytes it stored (one copy stores its first bytes last), no whole record
// follows the torn one. A single copy of the group used to leave its
// first record torn and the others whole after a kill, which the scan of
// the newest file takes for damage: the database did not open.
func TestMappedStoreKilled(t *testing.T) {
	f := mappedFile(t, appendChunk)
	first := record.AppendRecord(nil, record.KindPut, true, 1, 0, 0, []byte("before"), []byte("v"))
	if _, err := f.Append(first); err != nil {
		t.Fatal(err)
	}
	var group []byte
	bounds := map[int]bool{0: true} // where the group's records end, relative
	for i := range 6 {
		group = record.AppendRecord(group, record.KindPut, true, uint64(i+2), 0, 0,
			[]byte(fmt.Sprintf("key%d", i)), bytes.Repeat([]byte{'a' + byte(i)}, 20*i))
		bounds[len(group)] = true
	}
	type chunk struct {
		off int64
		n   int
	}
	var chunks []chunk
	storeHook = func(off int64, n int) { chunks = append(chunks, chunk{off, n}) }
	defer func() { storeHook = nil }()
	start, err := f.Append(group)
	if err != nil {
		t.Fatal(err)
	}
	storeHook = nil
	b, err := ReadAll(vfs.OS(), f.Path)
	if err != nil {
		t.Fatal(err)
	}
	end := start + int64(len(group))
	if len(chunks) == 0 || chunks[0].off != start {
		t.Fatalf("the group at %d was stored in chunks %v", start, chunks)
	}
	// A kill in chunk c, which stored all of it but its first byte (or
	// only its first byte), and nothing after it.
	for c := range chunks {
		for _, keepFirst := range []bool{false, true} {
			img := bytes.Clone(b)
			clear(img[chunks[c].off+int64(chunks[c].n) : end])
			if keepFirst {
				clear(img[chunks[c].off+1 : chunks[c].off+int64(chunks[c].n)])
			} else {
				img[chunks[c].off] = 0
			}
			res, err := ScanData(img, f.Path, ScanTail, record.Limits{})
			if err != nil {
				t.Fatalf("killed in the store of bytes [%d, %d) of a group at [%d, %d): the scan of the newest file fails: %v",
					chunks[c].off, chunks[c].off+int64(chunks[c].n), start, end, err)
			}
			// What it keeps ends at a record of the group, none past
			// the chunk being stored.
			if !bounds[int(res.End-start)] || res.End > chunks[c].off+int64(chunks[c].n) {
				t.Fatalf("killed in the store of bytes [%d, %d): the records end at %d", chunks[c].off, chunks[c].off+int64(chunks[c].n), res.End)
			}
		}
	}
}
