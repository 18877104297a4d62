package segment

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/vfs"
)

// ScanMode says how a scan treats damage.
type ScanMode int

const (
	// ScanStrict treats any damage, and a batch without its commit marker,
	// as an error: the rule for every data file but the newest.
	ScanStrict ScanMode = iota
	// ScanTail is for the newest data file: damage after which no valid
	// record follows is a torn tail, cut off at the end of the last committed
	// batch; damage followed by valid records is still an error.
	ScanTail
	// ScanSalvage skips damaged ranges, and batches they cut, and reports them.
	ScanSalvage
)

// Damage is a byte range a salvage scan skipped.
type Damage struct {
	Offset, End int64
	Err         error
}

// ScanResult is what a scan learned from a data file.
type ScanResult struct {
	// Hints lists the committed records in file order. Their keys alias the
	// scanned buffer (ScanData) or are their own (ScanFile).
	Hints []record.Hint
	// End is the end of the last committed batch: the length the file
	// should have.
	End int64
	// MaxVersion is the highest commit version seen in a committed batch.
	MaxVersion uint64
	// Torn is the number of bytes after End that a ScanTail scan dropped,
	// or the length of a file too short for a header that a ScanSalvage
	// scan found nothing in.
	Torn int64
	// Hole, if not 0, is where a ScanTail scan found a page of zeros
	// before valid records (see zeroPage): the tail it dropped from End on
	// holds records, which were never synced.
	Hole int64
	// TornZeros reports that the Torn bytes are all zeros: space
	// allocated ahead of the appends, never written.
	TornZeros bool
	// Damage lists the ranges a ScanSalvage scan skipped.
	Damage []Damage
}

// ErrIncompleteBatch means a batch's records are not followed by its commit
// marker.
var ErrIncompleteBatch = errors.New("segment: batch without a commit marker")

// ErrVersionMismatch means records of one batch carry different versions.
var ErrVersionMismatch = errors.New("segment: records of one batch carry different versions")

// ScanData parses the contents b of the data file at path.
func ScanData(b []byte, path string, mode ScanMode, lim record.Limits) (ScanResult, error) {
	return scanData(memWindow(b), path, mode, lim, nil)
}

// ScanFile scans the data file at path as ScanData scans its contents, but
// reads it a chunk at a time (scanChunk bytes, or one record's header and
// key if larger) into *scratch, which it grows as needed and which the
// caller may reuse for the next file (nil: a new buffer), instead of
// reading it whole: the scan needs memory for its result, not for the
// file. The keys of the result's Hints are its own, not *scratch's. It
// also returns the file's size. A file cut short while it is read, and a
// failed read, are errors that are not a *CorruptError. Unless progress
// is nil, it is called, from the calling goroutine, as the scan reads on:
// with the number of bytes read past the furthest point read before, a
// chunk or so at a time; the calls of a scan that returns no error add up
// to the file's size. Not safe for concurrent use with the same scratch.
func ScanFile(fs vfs.FS, path string, mode ScanMode, lim record.Limits, scratch *[]byte, progress func(n int64)) (ScanResult, int64, error) {
	f, err := fs.Open(path)
	if err != nil {
		return ScanResult{}, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ScanResult{}, 0, err
	}
	res, err := scanReaderAt(f, st.Size(), path, mode, lim, scratch, progress)
	return res, st.Size(), err
}

// scanReaderAt is ScanFile of the data file at path, of size bytes, that r
// reads.
func scanReaderAt(r io.ReaderAt, size int64, path string, mode ScanMode, lim record.Limits, scratch *[]byte, progress func(n int64)) (ScanResult, error) {
	w := &window{r: r, size: size, chunk: scanChunk, progress: progress}
	if scratch != nil {
		w.buf = (*scratch)[:0]
		defer func() { *scratch = w.buf[:0] }()
	}
	res, err := scanData(w, path, mode, lim, nil)
	if err == nil {
		w.moved(size) // bytes the scan had no need to read
	}
	return res, err
}

// scanData is ScanData of the file behind w; with emit set, committed
// records go to emit in file order instead of into the result's Hints,
// and their keys are valid only until emit returns.
// An error reading the file is returned as it is; damage is a
// *CorruptError.
func scanData(w *window, path string, mode ScanMode, lim record.Limits, emit func(record.Hint)) (ScanResult, error) {
	var res ScanResult
	size := w.size
	corrupt := func(off int64, err error) error { return &CorruptError{Path: path, Offset: off, Err: err} }
	hdr, err := w.at(0, record.FileHeaderSize)
	if err != nil {
		return res, err
	}
	if _, err := record.CheckFileHeader(hdr); err != nil {
		switch {
		case mode == ScanTail && size <= record.FileHeaderSize:
			// The file was being created when the process died (no
			// record fits in it).
			res.Torn = size
			res.TornZeros, err = w.allZero(0, size)
			return res, err
		case mode == ScanSalvage && size >= record.FileHeaderSize:
			res.Damage = append(res.Damage, Damage{Offset: 0, End: record.FileHeaderSize, Err: err})
		case mode == ScanSalvage && size < record.FileHeaderSize:
			// Too short for a header: nothing in it to salvage (the newest
			// file is left so when the process dies as it is created).
			res.Torn = size
			return res, nil
		default:
			return res, corrupt(0, err)
		}
	}
	// tail ends a ScanTail scan that drops the bytes from committed on.
	tail := func(committed, hole int64) (ScanResult, error) {
		res.End, res.Torn, res.Hole = committed, size-committed, hole
		var err error
		res.TornZeros, err = w.allZero(committed, size)
		return res, err
	}
	var pending []record.Hint
	pendingStart := int64(record.FileHeaderSize)
	committed := int64(record.FileHeaderSize)
	off := int64(record.FileHeaderSize)
	for off < size {
		h, key, err := w.decode(off, lim)
		if err == nil && len(pending) > 0 && h.Version != pending[0].Version {
			// The previous batch never got its commit marker.
			err = ErrVersionMismatch
		}
		if err != nil {
			if !isDamage(err) {
				return res, err
			}
			next, rerr := nextValid(w, off+1, lim)
			if rerr != nil {
				return res, rerr
			}
			switch mode {
			case ScanTail:
				if next < 0 {
					return tail(committed, 0)
				}
				hole, rerr := zeroPage(w, off, next)
				if rerr != nil {
					return res, rerr
				}
				if hole >= 0 {
					return tail(committed, hole)
				}
				return res, corrupt(off, err)
			case ScanStrict:
				return res, corrupt(off, err)
			}
			end := size
			if next >= 0 {
				end = next
			}
			res.Damage = append(res.Damage, Damage{Offset: pendingStart, End: end, Err: err})
			pending = pending[:0]
			if next < 0 {
				break
			}
			off, pendingStart = next, next
			continue
		}
		pending = append(pending, record.Hint{
			Kind: h.Kind, Version: h.Version, Expiry: h.Expiry, Offset: off, ValLen: h.ValLen, Key: w.keep(key),
		})
		off += h.Size()
		if h.Commit {
			if emit != nil {
				for _, h := range pending {
					emit(h)
				}
				// Their keys are dead now: emit keeps none.
				w.keys.reset()
			} else {
				if len(res.Hints)+len(pending) > cap(res.Hints) {
					res.Hints = growHints(res.Hints, len(pending), off, size)
				}
				res.Hints = append(res.Hints, pending...)
			}
			res.MaxVersion = max(res.MaxVersion, h.Version)
			pending = pending[:0]
			committed, pendingStart = off, off
		}
	}
	if len(pending) > 0 {
		switch mode {
		case ScanTail:
			return tail(committed, 0)
		case ScanStrict:
			return res, corrupt(pendingStart, ErrIncompleteBatch)
		case ScanSalvage:
			res.Damage = append(res.Damage, Damage{Offset: pendingStart, End: size, Err: ErrIncompleteBatch})
		}
	}
	res.End = committed
	return res, nil
}

// isDamage reports whether err, from decoding a record, says the bytes
// are damaged, rather than that they could not be read.
func isDamage(err error) bool {
	return errors.Is(err, record.ErrCorrupt) || errors.Is(err, record.ErrTruncated) || errors.Is(err, ErrVersionMismatch)
}

// holePage is the granularity at which the page cache writes a file back.
const holePage = 4096

// zeroPage returns the offset of the first whole, aligned page of zeros in
// the file's bytes [from, to), or -1. Damage in the newest file followed
// by valid records is a hole, not rot, when it holds such a page:
// writeback may store the pages of an unsynced append in any order, so a
// power cut can keep later ones and lose an earlier one (read back as
// zeros), and every record after a lost page was written after the last
// sync, since a sync makes every page before it durable. A flipped bit or
// a torn sector never zeroes a whole page.
func zeroPage(w *window, from, to int64) (int64, error) {
	for p := (from + holePage - 1) / holePage * holePage; p+holePage <= to; p += holePage {
		zero, err := w.allZero(p, p+holePage)
		if err != nil || zero {
			return p, err
		}
	}
	return -1, nil
}

// nextValid returns the first offset >= from at which a whole, valid record
// starts, or -1.
func nextValid(w *window, from int64, lim record.Limits) (int64, error) {
	for i := from; i+record.HeaderSize <= w.size; i++ {
		if _, err := w.at(i, record.HeaderSize); err != nil {
			return -1, err
		}
		// Every record has a nonzero byte (its kind, 4 bytes in), so
		// none starts 4 bytes before a zero: the zeros that a crash
		// leaves in space allocated ahead of the appends (MapAppends,
		// ZeroAhead) take no decoding attempt each.
		if z := leadingZeros(w.rest(i)[4:]); z > 0 {
			i += int64(z) - 1
			continue
		}
		_, _, err := w.decode(i, lim)
		if err == nil {
			return i, nil
		}
		if !isDamage(err) {
			return -1, err
		}
	}
	return -1, nil
}

// leadingZeros returns how many bytes at the start of b are zero.
func leadingZeros(b []byte) int {
	return len(b) - len(bytes.TrimLeft(b, "\x00"))
}

// HintInfo summarises a validated hint file.
type HintInfo struct {
	Entries    int
	MinVersion uint64
	MaxVersion uint64
	// Marks index every markEvery-th entry, so a cursor can start near a
	// key (NewHintCursorAt) and recovery can split the key space.
	Marks []HintMark
}

// HintMark is the key and offset of one hint entry.
type HintMark struct {
	Key []byte // aliases the hint file's buffer
	Off int
}

const markEvery = 256

// BuildHints returns the contents of the hint file for a data file of
// dataSize bytes whose committed records are hints, in file order: one
// entry per key (its last record in the file, tombstones included), sorted
// by key, so that opening the database can merge hint files without sorting.
// It reorders hints.
func BuildHints(hints []record.Hint, dataSize int64) []byte {
	slices.SortFunc(hints, func(a, b record.Hint) int {
		if c := bytes.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return cmp.Compare(a.Offset, b.Offset) // file order among records of one key
	})
	size := record.FileHeaderSize + record.HintHeaderSize
	for _, h := range hints {
		size += record.HintHeaderSize + len(h.Key)
	}
	buf := make([]byte, 0, size)
	buf = record.AppendHintFileHeader(buf)
	n := 0
	for i, h := range hints {
		if i+1 < len(hints) && bytes.Equal(h.Key, hints[i+1].Key) {
			continue // a later record of the same key wins
		}
		buf = record.AppendHint(buf, h)
		n++
	}
	return record.AppendHintTrailer(buf, uint64(n), dataSize)
}

// BuildHintsFromData scans the contents b of a sealed data file (strictly:
// any damage is an error) and returns its hint file, the same bytes as
// BuildHints of the scan's records.
func BuildHintsFromData(b []byte, path string, lim record.Limits) ([]byte, error) {
	var buf bytes.Buffer
	w := memWindow(b)
	err := streamHints(&buf, w, w, path, lim, nil)
	return buf.Bytes(), err
}

// BuildHintsFromFile is BuildHintsFromData of the sealed data file of size
// bytes that r reads, without reading it whole into memory (see
// WriteHintsFromFile). A failed read is returned as it is, never as a
// *CorruptError.
func BuildHintsFromFile(r io.ReaderAt, size int64, path string, lim record.Limits) ([]byte, error) {
	var buf bytes.Buffer
	seq, rnd := fileWindows(r, size)
	err := streamHints(&buf, seq, rnd, path, lim, nil)
	return buf.Bytes(), err
}

// keyChunk is how many bytes a read of one record's header and key, at
// a random offset, takes at least (streamHints of a file): a key seldom
// needs a second read, and records next to it often need none.
const keyChunk = 512

// fileWindows returns the windows streamHints reads the file of size
// bytes behind r through: one of scanChunk bytes for the scan and other
// passes in file order, one of keyChunk bytes for single records.
func fileWindows(r io.ReaderAt, size int64) (seq, rnd *window) {
	return &window{r: r, size: size, chunk: scanChunk}, &window{r: r, size: size, chunk: keyChunk}
}

// streamHints scans a sealed data file and writes its hint file to w,
// holding 12 bytes per committed record (a 256 MiB file of 140-byte records
// needs about 23 MiB): its offset and a window of its key (hintSortEntry).
// It reads the file through seq for the scan and the passes in file
// order, and through rnd for the records it reads one at a time, in key
// order; both are normally windows on the file's mapping (memWindow). On
// a file that is not mapped they read it a chunk at a time (fileWindows),
// so that memory does not grow with the file's size beyond those 12 bytes
// a record: the keys are read again from the file to sort them (only the
// keys that share their first bytes with others) and to write the hints.
func streamHints(w io.Writer, seq, rnd *window, path string, lim record.Limits, yield func()) error {
	y := yielder{fn: yield}
	// The scan: every committed record's offset and the window of its key
	// past the prefix that all keys share (the shortest common prefix of
	// a key with the first one). That prefix can only shrink as the scan
	// goes on: the windows of the records before fresh were taken deeper
	// than the final prefix, and are taken again below.
	// Sized for records of about 128 bytes, the common case, so that
	// appending seldom copies the slice (append grows a large one by a
	// quarter at a time).
	ents := make([]hintSortEntry, 0, seq.size/128)
	var first []byte
	lcp, fresh := -1, 0
	sr, err := scanData(seq, path, ScanStrict, lim, func(h record.Hint) {
		y.tick(1)
		if len(ents) == cap(ents) && h.Offset > 0 {
			// Smaller records than guessed: grow once, to what the
			// records so far say the whole file holds (and a little
			// more), not a quarter at a time, each a copy of it all.
			est := int(float64(len(ents)) * float64(seq.size) / float64(h.Offset) * 1.05)
			ents = slices.Grow(ents, est-len(ents))
		}
		switch {
		case lcp < 0:
			// h.Key lives only until the scan moves on (ScanFile's keys
			// are copied into an arena it reuses).
			first, lcp = bytes.Clone(h.Key), len(h.Key)
		case lcp > 0:
			if p := record.CommonPrefix(first[:lcp], h.Key); p < lcp {
				lcp, fresh = p, len(ents)
			}
		}
		e := hintSortEntry{off: uint32(h.Offset)}
		e.setWindow(h.Key[lcp:])
		ents = append(ents, e)
	})
	if err != nil {
		return err
	}
	lcp = max(lcp, 0)
	// In file order, so that the keys are read sequentially.
	for i := range ents[:fresh] {
		y.tick(1)
		key, err := keyAt(seq, ents[i].off, lim)
		if err != nil {
			return err
		}
		ents[i].setWindow(key[lcp:])
	}
	if err := sortByKey(ents, lcp, func(o uint32) ([]byte, error) { return keyAt(rnd, o, lim) }, &y); err != nil {
		return err
	}
	out := record.AppendHintFileHeader(make([]byte, 0, 64<<10))
	n := 0
	for _, e := range ents {
		y.tick(1)
		if e.lo&superseded != 0 {
			continue // a later record of the same key wins
		}
		o := e.off
		h, key, err := headerAt(rnd, o, lim)
		if err != nil {
			return err
		}
		out = record.AppendHint(out, record.Hint{Kind: h.Kind, Version: h.Version, Expiry: h.Expiry,
			Offset: int64(o), ValLen: h.ValLen, Key: key})
		n++
		if len(out) >= 64<<10 {
			if _, err := w.Write(out); err != nil {
				return err
			}
			out = out[:0]
		}
	}
	out = record.AppendHintTrailer(out, uint64(n), sr.End)
	_, err = w.Write(out)
	return err
}

// keyAt returns the key of the record at o, which a scan verified, through
// w; it aliases w, and is valid until w's next read.
func keyAt(w *window, o uint32, lim record.Limits) ([]byte, error) {
	if w.r == nil {
		return record.KeyOf(w.buf[o:]), nil
	}
	_, key, err := headerAt(w, o, lim)
	return key, err
}

// headerAt returns the header and key of the record at o, which a scan
// verified, through w; the key aliases w, and is valid until w's next read.
// A record that is no longer there whole (the file changed since the
// scan) is an error, but not a *CorruptError.
func headerAt(w *window, o uint32, lim record.Limits) (record.Header, []byte, error) {
	off := int64(o)
	b, err := w.at(off, record.HeaderSize)
	if err != nil {
		return record.Header{}, nil, err
	}
	h, err := record.DecodeHeader(b, lim)
	if err == nil {
		kend := record.HeaderSize + int(h.KeyLen)
		if b, err = w.at(off, kend); err == nil && len(b) == kend {
			return h, b[record.HeaderSize:kend:kend], nil
		}
	}
	if err == nil || isDamage(err) {
		err = fmt.Errorf("segment: the file changed since it was scanned: no record at offset %d: %w", off, io.ErrUnexpectedEOF)
	}
	return record.Header{}, nil, err
}

// ReadHints validates the contents b of a hint file that must describe a
// data file of dataSize bytes: header, every entry's checksum, strictly
// ascending keys, and a trailer that matches. Any damage is an error; the
// caller then scans the data file instead.
func ReadHints(b []byte, dataSize int64, lim record.Limits) (HintInfo, error) {
	var info HintInfo
	if err := record.CheckHintFileHeader(b); err != nil {
		return info, err
	}
	var prev []byte
	off := record.FileHeaderSize
	for off < len(b) {
		h, tr, n, err := record.DecodeHint(b[off:], lim)
		if err != nil {
			return info, fmt.Errorf("hint entry at offset %d: %w", off, err)
		}
		off += n
		if tr != nil {
			if off != len(b) {
				return info, fmt.Errorf("%w: data after the hint trailer", record.ErrCorrupt)
			}
			if tr.Entries != uint64(info.Entries) || tr.DataSize != dataSize {
				return info, fmt.Errorf("%w: hint trailer says %d entries for %d bytes, found %d entries for %d bytes",
					record.ErrCorrupt, tr.Entries, tr.DataSize, info.Entries, dataSize)
			}
			return info, nil
		}
		if info.Entries > 0 && bytes.Compare(prev, h.Key) >= 0 {
			return info, fmt.Errorf("%w: hint keys out of order at offset %d", record.ErrCorrupt, off-n)
		}
		if h.Offset+record.HeaderSize+int64(len(h.Key))+int64(h.ValLen) > dataSize {
			return info, fmt.Errorf("%w: hint points past the end of the data file", record.ErrCorrupt)
		}
		if info.Entries%markEvery == 0 {
			info.Marks = append(info.Marks, HintMark{Key: h.Key, Off: off - n})
		}
		if info.Entries == 0 || h.Version < info.MinVersion {
			info.MinVersion = h.Version
		}
		info.MaxVersion = max(info.MaxVersion, h.Version)
		info.Entries++
		prev = h.Key
	}
	return info, fmt.Errorf("%w: hint file has no trailer", record.ErrTruncated)
}

// HintCursor walks the entries of a hint file that ReadHints accepted.
type HintCursor struct {
	b   []byte
	off int
	cur record.Hint
	ok  bool
}

// NewHintCursor returns a cursor on the first entry of the validated hint
// file b.
func NewHintCursor(b []byte) *HintCursor {
	c := &HintCursor{b: b, off: record.FileHeaderSize}
	c.Next()
	return c
}

// NewHintCursorAt returns a cursor on the first entry with a key >= key
// of the validated hint file b, whose marks are given.
func NewHintCursorAt(b []byte, marks []HintMark, key []byte) *HintCursor {
	i := sort.Search(len(marks), func(i int) bool { return bytes.Compare(marks[i].Key, key) > 0 })
	c := &HintCursor{b: b, off: record.FileHeaderSize}
	if i > 0 {
		c.off = marks[i-1].Off
	}
	for c.Next(); c.ok && bytes.Compare(c.cur.Key, key) < 0; c.Next() {
	}
	return c
}

// Valid reports whether the cursor is at an entry.
func (c *HintCursor) Valid() bool { return c.ok }

// Hint returns the current entry; its key aliases the hint file's buffer.
func (c *HintCursor) Hint() *record.Hint { return &c.cur }

// Next moves to the next entry.
func (c *HintCursor) Next() {
	h, tr, n, err := record.DecodeHint(c.b[c.off:], record.Limits{})
	if err != nil || tr != nil {
		c.ok = false
		return
	}
	c.off += n
	c.cur, c.ok = h, true
}

// WriteHints writes buf (from BuildHints) as the hint file of data file id,
// atomically: to a temporary file, synced, renamed into place, and the
// directory synced.
func WriteHints(fs vfs.FS, dir string, id uint32, buf []byte) error {
	return writeHintFile(fs, dir, id, func(w io.Writer) error {
		_, err := w.Write(buf)
		return err
	})
}

// WriteHintsFromData writes the hint file of the sealed data file id whose
// contents are b, as WriteHints(BuildHintsFromData(b)) would, streaming the
// sorted entries to the file instead of building them in memory.
// Unless yield is nil, it calls yield every few thousand records, so that
// a caller in the background can let other goroutines run.
func WriteHintsFromData(fs vfs.FS, dir string, id uint32, b []byte, path string, lim record.Limits, yield func()) error {
	w := memWindow(b)
	return writeStreamedHints(fs, dir, id, w, w, path, lim, yield)
}

// WriteHintsFromFile is WriteHintsFromData of the sealed data file id, of
// size bytes, that r reads: for a file that is not mapped. It reads the
// file a chunk at a time (scanChunk bytes) to scan it, and again to read
// the keys it sorts and writes (a few hundred bytes at a time, in key
// order), instead of reading it whole, so that its memory is that of the
// sort, 12 bytes a record, and not the file's size. A failed read is
// returned as it is, never as a *CorruptError.
func WriteHintsFromFile(fs vfs.FS, dir string, id uint32, r io.ReaderAt, size int64, path string, lim record.Limits, yield func()) error {
	seq, rnd := fileWindows(r, size)
	return writeStreamedHints(fs, dir, id, seq, rnd, path, lim, yield)
}

func writeStreamedHints(fs vfs.FS, dir string, id uint32, seq, rnd *window, path string, lim record.Limits, yield func()) error {
	return writeHintFile(fs, dir, id, func(w io.Writer) error {
		// streamHints writes 64 KiB at a time; write the file in larger
		// pieces.
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := streamHints(bw, seq, rnd, path, lim, yield); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// yieldEvery is how many records (or sort steps) pass between two calls of
// a yielder's function.
const yieldEvery = 4096

// yielder calls fn, if not nil, every yieldEvery ticks.
type yielder struct {
	fn func()
	n  int
}

func (y *yielder) tick(k int) {
	if y.fn == nil {
		return
	}
	if y.n += k; y.n >= yieldEvery {
		y.n = 0
		y.fn()
	}
}

// writeHintFile writes a hint file atomically: to a temporary file, synced,
// renamed into place, and the directory synced.
func writeHintFile(fs vfs.FS, dir string, id uint32, write func(io.Writer) error) error {
	final := filepath.Join(dir, HintName(id))
	tmp := final + tmpExt
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		f.Close()
		fs.Remove(tmp)
		return err
	}
	if err := write(&fileWriter{f: f}); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		fs.Remove(tmp)
		return err
	}
	if err := fs.Rename(tmp, final); err != nil {
		fs.Remove(tmp)
		return err
	}
	return fs.SyncDir(dir)
}

// fileWriter writes sequentially through WriteAt.
type fileWriter struct {
	f   vfs.File
	off int64
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}

// hintSortEntry is a record to sort by key: its offset, and a window of
// its key at some depth: 7 bytes from there, zero-padded, then the length of
// the rest (8: more than 7). Windows at one depth order keys that agree
// before it as the keys do; equal windows mean equal keys if the rest is at
// most 7 bytes, and otherwise call for the next window.
type hintSortEntry struct {
	hi, lo uint32 // the window; lo's low byte is the length, and superseded
	off    uint32
}

// superseded marks, in lo, a record that a later record of its key
// follows in the sorted order.
const superseded = 0x80

func (e *hintSortEntry) setWindow(rest []byte) {
	var w [8]byte
	copy(w[:7], rest)
	w[7] = byte(min(len(rest), 8))
	v := binary.BigEndian.Uint64(w[:])
	e.hi, e.lo = uint32(v>>32), uint32(v)
}

func (x hintSortEntry) sameWindow(y hintSortEntry) bool { return x.hi == y.hi && x.lo == y.lo }

// sortByKey sorts ents, whose keys agree on their first depth bytes and
// whose windows are at depth, by key and then offset, and marks each record
// that another record of its key follows. It sorts by window and sorts
// each run of equal windows again by the keys' next window (a most
// significant digit radix sort with 7-byte digits), so each key is read
// from the file once per 7 bytes that it shares with another, instead of
// at every comparison. It returns keyAt's first error.
func sortByKey(ents []hintSortEntry, depth int, keyAt func(uint32) ([]byte, error), y *yielder) error {
	sortByWindow(ents, 0, y)
	for i := 0; i < len(ents); {
		j := i + 1
		for j < len(ents) && ents[j].sameWindow(ents[i]) {
			j++
		}
		switch {
		case j-i == 1:
		case ents[i].lo&0xff <= 7: // one key, in file order
			for k := i; k < j-1; k++ {
				ents[k].lo |= superseded
			}
		default:
			for k := i; k < j; k++ {
				key, err := keyAt(ents[k].off)
				if err != nil {
					return err
				}
				ents[k].setWindow(key[depth+7:])
			}
			if err := sortByKey(ents[i:j], depth+7, keyAt, y); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// compareEntries orders entries by window, then by offset.
func compareEntries(x, y hintSortEntry) int {
	if x.hi != y.hi {
		return cmp.Compare(x.hi, y.hi)
	}
	if x.lo != y.lo {
		return cmp.Compare(x.lo, y.lo)
	}
	return cmp.Compare(x.off, y.off)
}

// radixMin is the shortest run that sortByWindow sorts by radix; shorter
// ones are sorted by comparison.
const radixMin = 64

// sortByWindow sorts ents, whose windows and offsets agree on their first
// b bytes (the 8 of the window, then the 4 of the offset, most significant
// first), by window and then by offset (compareEntries). It is an in-place
// most significant digit radix sort (American flag sort), which needs no
// memory beyond ents and reads each entry once per byte instead of
// comparing it log n times.
func sortByWindow(ents []hintSortEntry, b int, y *yielder) {
	if len(ents) < radixMin || b == 12 {
		slices.SortFunc(ents, compareEntries)
		y.tick(len(ents))
		return
	}
	digit := func(e hintSortEntry) int {
		if b < 8 {
			return int(byte((uint64(e.hi)<<32 | uint64(e.lo)) >> (56 - 8*b)))
		}
		return int(byte(e.off >> (24 - 8*(b-8))))
	}
	var count [256]int
	for i, e := range ents {
		count[digit(e)]++
		if i%yieldEvery == yieldEvery-1 {
			y.tick(yieldEvery)
		}
	}
	if count[digit(ents[0])] == len(ents) {
		sortByWindow(ents, b+1, y) // one bucket: nothing to move
		return
	}
	var start, next [256]int
	sum := 0
	for d := range 256 {
		start[d], next[d] = sum, sum
		sum += count[d]
	}
	steps := 0
	for d := range 256 {
		for end := start[d] + count[d]; next[d] < end; {
			if steps++; steps%yieldEvery == 0 {
				y.tick(yieldEvery)
			}
			x := ents[next[d]]
			if xd := digit(x); xd != d {
				ents[next[d]], ents[next[xd]] = ents[next[xd]], x
				next[xd]++
				continue
			}
			next[d]++
		}
	}
	for d := range 256 {
		if count[d] > 1 {
			sortByWindow(ents[start[d]:start[d]+count[d]], b+1, y)
		}
	}
}

// growHints makes room in hints for n more. Past the first MiB of the
// file it sizes them for the whole file, from the records per byte so far
// (off of size bytes), so that a large file's hints (tens of MB) are
// allocated a few times rather than copied at every doubling by append:
// each such copy is one long memory move, which a garbage collection that
// must stop the goroutine waits out (Open of a 150 MB file without hints
// took twice as long).
func growHints(hints []record.Hint, n int, off, size int64) []record.Hint {
	need := len(hints) + n
	est := max(need, 2*cap(hints))
	if off >= 1<<20 {
		est = max(int(float64(need)*float64(size)/float64(off)*1.05)+16, need+need/8)
	}
	return append(make([]record.Hint, 0, est), hints...)
}
