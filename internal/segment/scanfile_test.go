package segment

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

var scanSeed = flag.Uint64("scanseed", 0, "seed of TestScanFileChunks and TestHintIndex (0: random; or CASKADE_SCAN_SEED)")

// withScanChunk sets scanChunk to n for the rest of the test.
func withScanChunk(t *testing.T, n int) {
	t.Helper()
	old := scanChunk
	scanChunk = n
	t.Cleanup(func() { scanChunk = old })
}

// randomDataFile returns a data file of committed batches of one to four
// records, puts and deletes, whose keys and values are up to maxVal bytes,
// so that records straddle chunk boundaries and some are larger than a
// chunk.
func randomDataFile(r *rand.Rand, size, maxVal int) []byte {
	b := record.AppendFileHeader(nil)
	for v := uint64(1); len(b) < size; v++ {
		n := 1 + r.IntN(4)
		for i := range n {
			key := fmt.Appendf(nil, "k%d-%s", r.IntN(100), bytes.Repeat([]byte{'k'}, r.IntN(40)))
			if r.IntN(5) == 0 {
				b = record.AppendRecord(b, record.KindDelete, i == n-1, v, 0, 0, key, nil)
				continue
			}
			val := make([]byte, r.IntN(maxVal+1))
			for j := range val {
				val[j] = byte(r.Uint32())
			}
			b = record.AppendRecord(b, record.KindPut, i == n-1, v, int64(r.IntN(3)), 0, key, val)
		}
	}
	return b
}

// scanReport is a scan's result and error in a form to compare.
type scanReport struct {
	Res    ScanResult
	Size   int64
	Damage []string
	Err    string
}

func report(res ScanResult, size int64, err error) scanReport {
	rep := scanReport{Res: res, Size: size}
	for _, d := range res.Damage {
		rep.Damage = append(rep.Damage, fmt.Sprintf("%d-%d: %v", d.Offset, d.End, d.Err))
	}
	rep.Res.Damage = nil
	if err != nil {
		rep.Err = err.Error()
	}
	return rep
}

// TestScanFileChunks checks that a scan that reads the file a chunk at a
// time (ScanFile) finds what a scan of the whole file in memory (ScanData)
// finds, in every mode: the same records, end, torn tail, hole and damage
// ranges, and the same error, for intact files, torn tails, damage in the
// middle, pages of zeros, and zeros allocated ahead, with chunks smaller
// than one record as well as larger than the file.
func TestScanFileChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(scanTestSeed(t), 26))

	base := randomDataFile(r, 3*holePage+r.IntN(4*holePage), 1500)
	images := map[string][]byte{"intact": base}
	for i := range 4 {
		cut := record.FileHeaderSize + r.IntN(len(base)-record.FileHeaderSize)
		images[fmt.Sprintf("torn at %d (%d)", cut, i)] = base[:cut]
	}
	for i := range 6 {
		img := bytes.Clone(base)
		at := r.IntN(len(img))
		img[at] ^= byte(1 + r.IntN(255))
		images[fmt.Sprintf("flipped byte %d (%d)", at, i)] = img
		// The same damage, then a torn tail after it.
		if cut := at + 1 + r.IntN(len(img)-at); cut < len(img) {
			images[fmt.Sprintf("flipped byte %d, torn at %d (%d)", at, cut, i)] = img[:cut]
		}
	}
	for _, page := range []int{holePage, 2 * holePage} {
		img := bytes.Clone(base)
		clear(img[page : page+holePage])
		images[fmt.Sprintf("hole at %d", page)] = img
	}
	images["zeros ahead"] = append(bytes.Clone(base), make([]byte, 3*holePage+100)...)
	junk := append(bytes.Clone(base), make([]byte, 1000)...)
	junk = append(append(junk, 0x17, 0x2a, 0x81, 0x02), make([]byte, 2000)...)
	images["junk between zeros"] = junk
	images["no header"] = append(make([]byte, record.FileHeaderSize), base[record.FileHeaderSize:]...)
	images["short header"] = base[:record.FileHeaderSize-3]

	fs := vfs.NewMem()
	for name, img := range images {
		path := "/" + name
		f, err := fs.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(img, 0); err != nil {
			t.Fatal(err)
		}
		f.Close()
		for _, mode := range []ScanMode{ScanStrict, ScanTail, ScanSalvage} {
			want := report(func() (ScanResult, int64, error) {
				res, err := ScanData(img, path, mode, record.Limits{})
				return res, int64(len(img)), err
			}())
			var scratch []byte
			for _, chunk := range []int{50, 700, 5000, 1 << 20} {
				withScanChunk(t, chunk)
				got := report(ScanFile(fs, path, mode, record.Limits{}, &scratch, nil))
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, mode %d, chunk %d:\n got %+v\nwant %+v", name, mode, chunk, got, want)
				}
				if chunk < len(img) && cap(scratch) > max(chunk, record.HeaderSize+100) {
					t.Fatalf("%s, mode %d, chunk %d: the scan held %d bytes of a %d-byte file at once",
						name, mode, chunk, cap(scratch), len(img))
				}
				checkIndex(t, fmt.Sprintf("%s, mode %d, chunk %d", name, mode, chunk), fs, path, mode, want)
			}
		}
	}
}

// scanTestSeed returns the seed of a randomized scan test, which it logs:
// -scanseed or CASKADE_SCAN_SEED, else a random one.
func scanTestSeed(t *testing.T) uint64 {
	t.Helper()
	seed := *scanSeed
	if s := os.Getenv("CASKADE_SCAN_SEED"); s != "" && seed == 0 {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -scanseed=%d)", seed, seed)
	return seed
}

// A scan that hands its records to a function (as streamHints and
// ScanFileIndex do) reuses the memory of their keys once they are handed
// over, rather than holding a copy of every key of the file.
func TestScanEmitReusesKeys(t *testing.T) {
	b := record.AppendFileHeader(nil)
	for v := uint64(1); v <= 60000; v++ {
		b = record.AppendRecord(b, record.KindPut, true, v, 0, 0, fmt.Appendf(nil, "key-%030d", v), []byte("v"))
	}
	withScanChunk(t, 64<<10)
	keys := 0
	allocs := testing.AllocsPerRun(3, func() {
		keys = 0
		w := &window{r: bytes.NewReader(b), size: int64(len(b)), chunk: scanChunk}
		if _, err := scanData(w, "f", ScanStrict, record.Limits{}, func(h record.Hint) { keys += len(h.Key) }); err != nil {
			t.Fatal(err)
		}
	})
	// The window, the arena's block, a few small things: not one block
	// per 64 KiB of keys.
	if allocs > 10 {
		t.Fatalf("the scan made %v allocations for %d bytes of keys", allocs, keys)
	}
}

// checkIndex checks that ScanFileIndex of the file at path finds what a
// scan that returns want finds, and that its index builds the hint file
// BuildHints builds of want's hints.
func checkIndex(t *testing.T, what string, fs vfs.FS, path string, mode ScanMode, want scanReport) {
	t.Helper()
	res, x, size, err := ScanFileIndex(fs, path, mode, record.Limits{}, nil, nil)
	got := report(res, size, err)
	wantHints := want.Res.Hints
	want.Res.Hints = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: ScanFileIndex:\n got %+v\nwant %+v", what, got, want)
	}
	if err != nil {
		if x != nil {
			t.Fatalf("%s: ScanFileIndex returned an index with %v", what, err)
		}
		return
	}
	if x.Len() != len(wantHints) {
		t.Fatalf("%s: index of %d records, want %d", what, x.Len(), len(wantHints))
	}
	for _, dataSize := range []int64{res.End, size} {
		wantFile := BuildHints(slices.Clone(wantHints), dataSize)
		x2 := *x // Build frees the index
		if gotFile := x2.Build(dataSize); !bytes.Equal(gotFile, wantFile) {
			t.Fatalf("%s: index builds a hint file of %d bytes, BuildHints one of %d", what, len(gotFile), len(wantFile))
		}
	}
}

// TestHintIndex checks that a HintIndex builds the hint file BuildHints
// builds, for records of every shape the index packs: versions after the
// first one, before it (a merged file's records are in key order) and
// far from it; no expiry, an expiry, a negative one; keys and values of
// lengths that take one to three varint bytes; keys repeated, with
// tombstones among them.
func TestHintIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(scanTestSeed(t), 27))
	b := record.AppendFileHeader(nil)
	v := uint64(1) << 40
	for len(b) < 300<<10 {
		switch r.IntN(6) {
		case 0:
			v -= uint64(r.IntN(1000)) // below the first version too
		case 1:
			v += uint64(r.Int64N(1 << 40)) // past a 4-byte varint
		case 2:
			v = r.Uint64() // anywhere
		default:
			v++
		}
		n := 1 + r.IntN(3)
		for i := range n {
			kl := []int{0, 3, 20, 200, 20000}[r.IntN(5)]
			key := fmt.Appendf(nil, "k%d", r.IntN(300))
			key = append(key, bytes.Repeat([]byte{byte(r.IntN(3))}, kl)...)
			exp := []int64{0, 0, 1, 1 << 45, -1, math.MinInt64, math.MaxInt64}[r.IntN(7)]
			if r.IntN(5) == 0 {
				b = record.AppendRecord(b, record.KindDelete, i == n-1, v, exp, 0, key, nil)
				continue
			}
			val := make([]byte, []int{0, 100, 200, 20000}[r.IntN(4)])
			b = record.AppendRecord(b, record.KindPut, i == n-1, v, exp, uint32(r.IntN(3)), key, val)
		}
	}
	fs := vfs.NewMem()
	f, _ := fs.Create("/f")
	f.WriteAt(b, 0)
	f.Close()
	for _, chunk := range []int{100, 64 << 10} {
		withScanChunk(t, chunk)
		want := report(func() (ScanResult, int64, error) {
			res, err := ScanData(b, "/f", ScanStrict, record.Limits{})
			return res, int64(len(b)), err
		}())
		if want.Err != "" {
			t.Fatal(want.Err)
		}
		checkIndex(t, fmt.Sprintf("chunk %d", chunk), fs, "/f", ScanStrict, want)
	}
	// Offsets past 4 GiB do not fit an index (nor the key directory).
	if _, _, err := ScanReaderAtIndex(bytes.NewReader(b), 1<<32+1, "/f", ScanStrict, record.Limits{}, nil, nil); !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("a file of 4 GiB and a byte: %v, want ErrFileTooLarge", err)
	}
}

// A record larger than a chunk is verified a chunk at a time: damage in
// its value, well past the first chunk, is found, and the window never
// holds the whole record.
func TestScanFileLargeRecord(t *testing.T) {
	withScanChunk(t, 4096)
	b := record.AppendFileHeader(nil)
	b = record.AppendRecord(b, record.KindPut, true, 1, 0, 0, []byte("small"), []byte("v"))
	big := bytes.Repeat([]byte("0123456789"), 10000)
	start := int64(len(b))
	b = record.AppendRecord(b, record.KindPut, true, 2, 0, 0, []byte("big"), big)
	b = record.AppendRecord(b, record.KindPut, true, 3, 0, 0, []byte("after"), []byte("v"))
	fs := vfs.NewMem()
	write := func(img []byte) {
		f, err := fs.Create("/f")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt(img, 0)
		f.Close()
	}
	write(b)
	var scratch []byte
	res, size, err := ScanFile(fs, "/f", ScanStrict, record.Limits{}, &scratch, nil)
	if err != nil || size != int64(len(b)) || len(res.Hints) != 3 || string(res.Hints[1].Key) != "big" ||
		res.Hints[1].ValLen != uint32(len(big)) || string(res.Hints[2].Key) != "after" {
		t.Fatalf("intact: %+v, %d bytes, %v", res.Hints, size, err)
	}
	if cap(scratch) > 4096 {
		t.Fatalf("the scan held %d bytes at once, more than a chunk", cap(scratch))
	}
	img := bytes.Clone(b)
	img[start+record.HeaderSize+3+50000] ^= 1
	write(img)
	_, _, err = ScanFile(fs, "/f", ScanStrict, record.Limits{}, &scratch, nil)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Offset != start || !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("flipped bit in a large value: %v, want damage at %d", err, start)
	}
}

// ScanFile tells its progress function of the bytes it reads as it goes, a
// chunk or so at a time, each byte once, adding up to the file's size:
// for intact, damaged and torn files, in every mode, and for files with
// records larger than a chunk.
func TestScanFileProgress(t *testing.T) {
	const chunk = 1000
	withScanChunk(t, chunk)
	r := rand.New(rand.NewPCG(7, 8))
	intact := randomDataFile(r, 50000, 3000)
	flipped := bytes.Clone(intact)
	flipped[len(flipped)/3] ^= 1
	torn := intact[:len(intact)-100]
	padded := append(bytes.Clone(intact), make([]byte, 5000)...)
	files := []struct {
		name string
		b    []byte
	}{{"intact", intact}, {"flipped", flipped}, {"torn", torn}, {"padded", padded}}
	for _, file := range files {
		fs := vfs.NewMem()
		f, _ := fs.Create("/f")
		f.WriteAt(file.b, 0)
		f.Close()
		for _, mode := range []ScanMode{ScanStrict, ScanTail, ScanSalvage} {
			var calls []int64
			var sum int64
			_, size, err := ScanFile(fs, "/f", mode, record.Limits{}, nil, func(n int64) {
				if n <= 0 {
					t.Errorf("%s, mode %d: progress told of %d bytes", file.name, mode, n)
				}
				sum += n
				calls = append(calls, n)
			})
			if sum > size {
				t.Errorf("%s, mode %d: progress told of %d bytes of a file of %d", file.name, mode, sum, size)
			}
			if err != nil {
				continue // the rest of the file is not read
			}
			if sum != size {
				t.Errorf("%s, mode %d: progress told of %d bytes of a file of %d", file.name, mode, sum, size)
			}
			if min := int(size / (4 * chunk)); len(calls) < min {
				t.Errorf("%s, mode %d: %d progress calls for %d bytes in chunks of %d, want at least %d",
					file.name, mode, len(calls), size, chunk, min)
			}
		}
	}
}

// A failed read is reported as itself, not taken for damage (and, in the
// newest file, cut off as a torn tail).
func TestScanFileReadError(t *testing.T) {
	withScanChunk(t, 1000)
	r := rand.New(rand.NewPCG(1, 2))
	b := randomDataFile(r, 20000, 300)
	mem := vfs.NewMem()
	f, _ := mem.Create("/f")
	f.WriteAt(b, 0)
	f.Close()
	eio := errors.New("injected EIO")
	fs := errorfs.New(mem)
	for _, mode := range []ScanMode{ScanStrict, ScanTail, ScanSalvage} {
		fs.InjectAfter(errorfs.OpRead, 3, eio) // the fourth chunk
		_, _, err := ScanFile(fs, "/f", mode, record.Limits{}, nil, nil)
		var ce *CorruptError
		if !errors.Is(err, eio) || errors.As(err, &ce) {
			t.Fatalf("mode %d: %v, want the read error", mode, err)
		}
	}
}

// FuzzScanFile checks that ScanFile, reading small chunks, reports on any
// bytes what ScanData reports on them in memory.
func FuzzScanFile(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	b := randomDataFile(r, 2000, 300)
	f.Add(b, uint16(40))
	f.Add(b[:1500], uint16(100))
	f.Add(append(bytes.Clone(b), make([]byte, holePage)...), uint16(33))
	fs := vfs.NewMem()
	f.Fuzz(func(t *testing.T, img []byte, chunk uint16) {
		if len(img) > 16<<10 {
			return // chunks of a few bytes make a scan of a large file slow
		}
		old := scanChunk
		scanChunk = 16 + int(chunk%2048)
		defer func() { scanChunk = old }()
		w, err := fs.Create("/f")
		if err != nil {
			t.Fatal(err)
		}
		w.WriteAt(img, 0)
		w.Close()
		for _, mode := range []ScanMode{ScanStrict, ScanTail, ScanSalvage} {
			res, err := ScanData(img, "/f", mode, record.Limits{MaxKey: 1 << 20})
			want := report(res, int64(len(img)), err)
			got := report(ScanFile(fs, "/f", mode, record.Limits{MaxKey: 1 << 20}, nil, nil))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("mode %d, chunk %d:\n got %+v\nwant %+v", mode, scanChunk, got, want)
			}
		}
	})
}

// TestGrowHints checks growHints' room: always enough for what is added,
// doubling over the first MiB, and sized for the whole file after it.
func TestGrowHints(t *testing.T) {
	h := growHints(nil, 3, 100, 1<<30)
	if len(h) != 0 || cap(h) != 3 {
		t.Fatalf("first growth: len %d cap %d, want 0 and 3", len(h), cap(h))
	}
	h = append(h, make([]record.Hint, 3)...)
	if h = growHints(h, 1, 200, 1<<30); cap(h) != 6 || len(h) != 3 {
		t.Fatalf("within the first MiB: len %d cap %d, want 3 and 6 (doubling)", len(h), cap(h))
	}
	// 10,000 records in the first 2 MiB of an 8 MiB file: about 40,000.
	h = growHints(make([]record.Hint, 10000), 10, 2<<20, 8<<20)
	if want := 42000; cap(h) < 40040 || cap(h) > want+100 {
		t.Fatalf("past the first MiB: cap %d, want about %d", cap(h), want)
	}
	// An estimate below what is needed still makes room.
	h = growHints(make([]record.Hint, 1000), 5000, 8<<20, 8<<20)
	if cap(h) < 6000 {
		t.Fatalf("cap %d, less than the 6000 needed", cap(h))
	}
}
