package segment

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/vfs"
)

func TestReadAll(t *testing.T) {
	fs := vfs.OS()
	dir := t.TempDir()
	for _, size := range []int{0, 1, parallelReadSize - 1, parallelReadSize + 12345} {
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(i * 7)
		}
		path := filepath.Join(dir, "f")
		f, err := fs.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt(want, 0)
		f.Close()
		got, err := ReadAll(fs, path)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("size %d: %v", size, err)
		}
	}
}

// TestReadAllInto reads files of falling and rising sizes, the large ones
// in parallel, through one scratch buffer: each result is exactly its
// file, with no byte of a longer file read before, and it reuses the
// scratch once that is large enough.
func TestReadAllInto(t *testing.T) {
	fs := vfs.OS()
	dir := t.TempDir()
	var scratch []byte
	sizes := []int{parallelReadSize + 12345, 1, parallelReadSize - 1, 0, 100, parallelReadSize + 12345, parallelReadSize + 999999}
	for i, size := range sizes {
		want := make([]byte, size)
		for j := range want {
			want[j] = byte(j*7 + i + 1)
		}
		path := filepath.Join(dir, fmt.Sprintf("f%d", i))
		f, err := fs.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(want, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		before := cap(scratch)
		got, err := ReadAllInto(fs, path, &scratch)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("file %d of %d bytes: read %d bytes that differ, err %v", i, size, len(got), err)
		}
		if size > 0 && &got[0] != &scratch[:1][0] {
			t.Errorf("file %d of %d bytes: result does not alias the scratch", i, size)
		}
		if size <= before && cap(scratch) != before {
			t.Errorf("file %d of %d bytes: scratch of capacity %d regrown to %d", i, size, before, cap(scratch))
		}
	}
}

// Hint files hold one entry per key, sorted, and survive a round trip;
// damage, disorder and a wrong data size are refused.
func TestHints(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var hints []record.Hint
	off := int64(record.FileHeaderSize)
	for i := range 500 {
		k := []byte{byte('a' + r.IntN(26)), byte('a' + r.IntN(26))}
		hints = append(hints, record.Hint{Kind: record.KindPut, Version: uint64(i + 1), Offset: off, ValLen: 3, Key: k})
		off += record.HeaderSize + 2 + 3
	}
	b := BuildHints(hints, off)
	info, err := ReadHints(b, off, record.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]uint64{}
	var prev []byte
	for c := NewHintCursor(b); c.Valid(); c.Next() {
		h := c.Hint()
		if prev != nil && bytes.Compare(prev, h.Key) >= 0 {
			t.Fatal("hints out of order")
		}
		prev = bytes.Clone(h.Key)
		seen[string(h.Key)] = h.Version
	}
	if len(seen) != info.Entries {
		t.Fatalf("%d entries, info says %d", len(seen), info.Entries)
	}
	for _, h := range hints { // the last record of each key wins
		if h.Version > seen[string(h.Key)] {
			t.Fatalf("key %q: hint version %d, a later record has %d", h.Key, seen[string(h.Key)], h.Version)
		}
	}
	if _, err := ReadHints(b, off+1, record.Limits{}); err == nil {
		t.Fatal("hint accepted for a data file of another size")
	}
	for i := record.FileHeaderSize; i < len(b); i += 7 {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if _, err := ReadHints(c, off, record.Limits{}); err == nil {
			t.Fatalf("damage at %d accepted", i)
		}
	}
}

func TestHintCursorAt(t *testing.T) {
	var hints []record.Hint
	for i := range 3000 {
		hints = append(hints, record.Hint{Kind: record.KindPut, Version: 1, Offset: record.FileHeaderSize, Key: fmt.Appendf(nil, "k%05d", i*2)})
	}
	b := BuildHints(hints, 1<<20)
	info, err := ReadHints(b, 1<<20, record.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, probe := range []int{-1, 0, 1, 511, 512, 513, 2999, 5997, 5998, 5999, 7000} {
		c := NewHintCursorAt(b, info.Marks, fmt.Appendf(nil, "k%05d", probe))
		want := probe + probe%2
		if probe < 0 {
			c = NewHintCursorAt(b, info.Marks, nil)
			want = 0
		}
		if want > 5998 {
			if c.Valid() {
				t.Fatalf("seek %d found %q", probe, c.Hint().Key)
			}
			continue
		}
		if !c.Valid() || string(c.Hint().Key) != fmt.Sprintf("k%05d", want) {
			t.Fatalf("seek %d: valid %v", probe, c.Valid())
		}
	}
}

// BuildHintsFromData gives exactly what BuildHints of a scan gives, for
// keys of several shapes: short ones after a common prefix, long ones whose
// 7-byte sort windows tie (some prefixes of others, some with zero bytes),
// and keys with no common prefix.
func TestBuildHintsFromData(t *testing.T) {
	shapes := map[string]func(r *rand.Rand) []byte{
		"short": func(r *rand.Rand) []byte { return fmt.Appendf(nil, "k%03d", r.IntN(500)) },
		"long": func(r *rand.Rand) []byte {
			k := fmt.Appendf(nil, "tenant/42/%03d", r.IntN(40))
			for range r.IntN(12) {
				k = append(k, "\x00ab"[r.IntN(3)])
			}
			return k
		},
		"mixed": func(r *rand.Rand) []byte {
			k := []byte{byte(r.IntN(4))}
			for range r.IntN(10) {
				k = append(k, byte(r.IntN(3)))
			}
			return k
		},
	}
	// Keys that share a long prefix until late in the file, so that the
	// prefix the sort skips shrinks after thousands of records.
	late := 0
	shapes["late"] = func(r *rand.Rand) []byte {
		late++
		if late > 4000 && r.IntN(4) == 0 {
			return fmt.Appendf(nil, "tenant/4/%03d", r.IntN(40))
		}
		return fmt.Appendf(nil, "tenant/42/%03d", r.IntN(40))
	}
	for name, key := range shapes {
		t.Run(name, func(t *testing.T) { testBuildHintsFromData(t, key) })
	}
}

func testBuildHintsFromData(t *testing.T, key func(r *rand.Rand) []byte) {
	r := rand.New(rand.NewPCG(3, 4))
	b := record.AppendFileHeader(nil)
	for v := uint64(1); v < 3000; v++ {
		n := 1 + r.IntN(3) // a batch of n records
		for j := range n {
			k := key(r)
			kind, val, exp := record.KindPut, []byte("value"), int64(0)
			if r.IntN(3) == 0 {
				exp = 1e12 + int64(r.IntN(1e6))
			}
			if r.IntN(5) == 0 {
				kind, val, exp = record.KindDelete, nil, 0
			}
			b = record.AppendRecord(b, kind, j == n-1, v, exp, 0, k, val)
		}
	}
	sr, err := ScanData(b, "f", ScanStrict, record.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := BuildHints(sr.Hints, sr.End)
	got, err := BuildHintsFromData(b, "f", record.Limits{})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("differs (%d vs %d bytes): %v", len(got), len(want), err)
	}
	// Written to a file with a yield function, the hints are the same,
	// and the function is called every yieldEvery records or sort steps.
	fs := vfs.NewMem()
	yields := 0
	if err := WriteHintsFromData(fs, "/", 1, b, "f", record.Limits{}, func() { yields++ }); err != nil {
		t.Fatal(err)
	}
	written, err := ReadAll(fs, "/"+HintName(1))
	if err != nil || !bytes.Equal(written, want) {
		t.Fatalf("hint file written with yields differs (%d vs %d bytes): %v", len(written), len(want), err)
	}
	if min := 3 * len(sr.Hints) / yieldEvery; yields < min {
		t.Fatalf("yield called %d times for %d records, want at least %d", yields, len(sr.Hints), min)
	}
	// Read from a file that is not mapped, a chunk at a time (chunks
	// smaller than a record too), the hints are the same.
	for _, chunk := range []int{40, 1000, 64 << 10, len(b) + 1} {
		withScanChunk(t, chunk)
		got, err := BuildHintsFromFile(bytes.NewReader(b), int64(len(b)), "f", record.Limits{})
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("chunk %d: BuildHintsFromFile differs (%d vs %d bytes): %v", chunk, len(got), len(want), err)
		}
		fs.Remove("/" + HintName(1))
		if err := WriteHintsFromFile(fs, "/", 1, bytes.NewReader(b), int64(len(b)), "f", record.Limits{}, nil); err != nil {
			t.Fatal(err)
		}
		if written, err := ReadAll(fs, "/"+HintName(1)); err != nil || !bytes.Equal(written, want) {
			t.Fatalf("chunk %d: WriteHintsFromFile differs (%d vs %d bytes): %v", chunk, len(written), len(want), err)
		}
	}
	// A read that fails is returned as itself, not taken for damage, in
	// the scan and in the reads of keys after it.
	for _, at := range []int64{int64(len(b)) / 2, int64(len(b)) + 1} {
		r := &failingReader{b: b, failAfter: at}
		_, err := BuildHintsFromFile(r, int64(len(b)), "f", record.Limits{})
		var ce *CorruptError
		if !errors.Is(err, errReadFailed) || errors.As(err, &ce) {
			t.Fatalf("read failing after %d bytes read: %v, want errReadFailed and no *CorruptError", at, err)
		}
	}
	b[len(b)/2] ^= 1
	if _, err := BuildHintsFromData(b, "f", record.Limits{}); err == nil {
		t.Fatal("damage not reported")
	}
	var ce *CorruptError
	if _, err := BuildHintsFromFile(bytes.NewReader(b), int64(len(b)), "f", record.Limits{}); !errors.As(err, &ce) {
		t.Fatalf("damage read from a file: %v, want a *CorruptError", err)
	}
}

var errReadFailed = errors.New("read failed")

// failingReader reads b until it has read failAfter bytes in all, then
// fails every read.
type failingReader struct {
	b         []byte
	failAfter int64
	read      int64
}

func (r *failingReader) ReadAt(p []byte, off int64) (int, error) {
	if r.read+int64(len(p)) > r.failAfter {
		return 0, errReadFailed
	}
	n, err := bytes.NewReader(r.b).ReadAt(p, off)
	r.read += int64(n)
	return n, err
}

// BenchmarkBuildHintsFromData builds the hint file of a data file of 1M
// records of keys shaped like redis-benchmark's ("key:" or "counter:" and
// 12 digits, drawn from 700k, so some repeat), written in random key
// order, with 100-byte values and with redis-benchmark's default of 3
// bytes (records far smaller than the scan's first guess).
func BenchmarkBuildHintsFromData(b *testing.B) {
	for _, size := range []int{100, 3} {
		b.Run(fmt.Sprintf("value=%d", size), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			data := record.AppendFileHeader(nil)
			val := make([]byte, size)
			for v := uint64(1); v <= 1_000_000; v++ {
				k := fmt.Appendf(nil, "%s:%012d", [2]string{"key", "counter"}[r.IntN(2)], r.IntN(350_000))
				data = record.AppendRecord(data, record.KindPut, true, v, 0, 0, k, val)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := BuildHintsFromData(data, "f", record.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// MapAll maps a file of the OS file system, so that reading it allocates
// nothing of its size, and reads one of another file system; both give
// the file's bytes until release.
func TestMapAll(t *testing.T) {
	want := bytes.Repeat([]byte("hint bytes "), 100_000) // about 1 MiB
	osDir := t.TempDir()
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		fs     vfs.FS
		dir    string
		mapped bool
	}{
		{"os", vfs.OS(), osDir, canMap(t)},
		{"mem", mem, "/d", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(tc.dir, "f")
			f, err := tc.fs.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(want); err != nil {
				t.Fatal(err)
			}
			f.Close()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b, release, err := MapAll(tc.fs, path)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, want) {
				t.Fatalf("MapAll gave %d bytes, not the file's %d", len(b), len(want))
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			if tc.mapped && alloc >= uint64(len(want))/4 {
				t.Errorf("mapping a %d-byte file allocated %d bytes", len(want), alloc)
			}
			if !tc.mapped && alloc < uint64(len(want)) {
				t.Errorf("reading a %d-byte file allocated only %d bytes: mapped?", len(want), alloc)
			}
			release()
		})
	}
	// An empty file cannot be mapped; it reads as empty.
	path := filepath.Join(osDir, "empty")
	f, err := vfs.OS().Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, release, err := MapAll(vfs.OS(), path)
	if err != nil || len(b) != 0 {
		t.Fatalf("MapAll of an empty file = %d bytes, %v", len(b), err)
	}
	release()
	if _, _, err := MapAll(vfs.OS(), filepath.Join(osDir, "missing")); err == nil {
		t.Fatal("MapAll of a missing file succeeded")
	}
}

// canMap reports whether this platform maps files of the OS file system.
func canMap(t *testing.T) bool {
	path := filepath.Join(t.TempDir(), "probe")
	f, err := vfs.OS().Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	m, err := vfs.Map(f, 1)
	if err != nil {
		return false
	}
	vfs.Unmap(m)
	return true
}

// A fault reading a mapping (here a file cut short under it) is an error
// of ReadingMapped, not a crash; any other panic goes on.
func TestReadingMappedFault(t *testing.T) {
	if !canMap(t) {
		t.Skip("no mappings here")
	}
	path := filepath.Join(t.TempDir(), "f")
	f, err := vfs.OS().Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 3*4096)); err != nil {
		t.Fatal(err)
	}
	b, release, err := MapAll(vfs.OS(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	var sum byte
	err = ReadingMapped(path, func() error {
		for _, c := range b {
			sum += c
		}
		return nil
	})
	if err == nil {
		t.Fatal("reading a mapping past the end of its file succeeded")
	}
	t.Log(err)
	defer func() {
		if r := recover(); r != "not a fault" {
			t.Fatalf("recovered %v, want the panic to go on", r)
		}
	}()
	ReadingMapped(path, func() error { panic("not a fault") })
}
