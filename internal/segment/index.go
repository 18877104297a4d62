package segment

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/vfs"
)

// HintIndex holds the committed records of a scanned data file, to build
// its hint file (Build), in less memory than the scan's Hints: a record's
// hint is a record.Hint of 64 bytes plus its key, and sorting them for the
// hint file holds the hint file too. An index holds a sort entry of 12
// bytes and the record's fields packed after its key (11 bytes plus the
// key for a record without expiry and with a short key and value).
// It is not safe for concurrent use.
type HintIndex struct {
	ents []hintSortEntry // off: where the record starts in recs
	recs []byte          // the records, in file order (see add)
	v0   uint64          // the first record's version
	n    int             // records added
}

// The first byte of a record in HintIndex.recs: its kind, and flags that
// say how the fields after its key are stored.
const (
	idxKindMask = 0x3f
	idxExpiry   = 0x40 // the expiry follows the version, 8 bytes; else it is 0
	idxVerFixed = 0x80 // the version is 8 bytes; else 4, its delta from v0
	idxMaxDelta = 1<<32 - 1
)

// maxIndexedSize is the largest data file an index takes: its offsets
// are 32-bit, as the key directory's are.
const maxIndexedSize = 1 << 32

// Len returns the number of committed records in the index.
func (x *HintIndex) Len() int { return x.n }

// add adds the hint h of a record of a file of size bytes. A record takes
// at most 31 bytes plus its key in recs (the flags byte, then the key's
// length (a uvarint, up to 5), the key, version (8, or a 4-byte delta),
// expiry (8, if not 0), value length (a uvarint, up to 5) and offset
// (4)), fewer than its 33-byte header plus key in the file, so that
// offsets into recs fit in 32 bits as the file's do. The fields of fixed
// size keep a record's size in recs the same along the file, so that
// growFor's estimate from the first MiB holds.
func (x *HintIndex) add(h record.Hint, size int64) {
	if x.n == 0 {
		x.v0 = h.Version
	}
	x.n++
	need := 31 + len(h.Key)
	if len(x.recs)+need > cap(x.recs) {
		x.recs = growFor(x.recs, need, h.Offset, size)
	}
	if len(x.ents) == cap(x.ents) {
		x.ents = growFor(x.ents, 1, h.Offset, size)
	}
	x.ents = append(x.ents, hintSortEntry{off: uint32(len(x.recs))})
	b0 := byte(h.Kind) & idxKindMask
	// A version before v0 wraps around to a delta past idxMaxDelta.
	if delta := h.Version - x.v0; delta > idxMaxDelta {
		b0 |= idxVerFixed
	}
	if h.Expiry != 0 {
		b0 |= idxExpiry
	}
	r := append(x.recs, b0)
	r = binary.AppendUvarint(r, uint64(len(h.Key)))
	r = append(r, h.Key...)
	if b0&idxVerFixed != 0 {
		r = binary.LittleEndian.AppendUint64(r, h.Version)
	} else {
		r = binary.LittleEndian.AppendUint32(r, uint32(h.Version-x.v0))
	}
	if h.Expiry != 0 {
		r = binary.LittleEndian.AppendUint64(r, uint64(h.Expiry))
	}
	r = binary.AppendUvarint(r, uint64(h.ValLen))
	x.recs = binary.LittleEndian.AppendUint32(r, uint32(h.Offset))
}

// key returns the key of the record at o in recs; it aliases recs.
func (x *HintIndex) key(o uint32) []byte {
	b := x.recs[o+1:]
	n, w := binary.Uvarint(b)
	return b[w : w+int(n) : w+int(n)]
}

// hint decodes the record at o in recs; its key aliases recs.
func (x *HintIndex) hint(o uint32) record.Hint {
	b0 := x.recs[o]
	b := x.recs[o+1:]
	kl, w := binary.Uvarint(b)
	key := b[w : w+int(kl) : w+int(kl)]
	b = b[w+int(kl):]
	h := record.Hint{Kind: record.Kind(b0 & idxKindMask), Key: key}
	if b0&idxVerFixed != 0 {
		h.Version, b = binary.LittleEndian.Uint64(b), b[8:]
	} else {
		h.Version, b = x.v0+uint64(binary.LittleEndian.Uint32(b)), b[4:]
	}
	if b0&idxExpiry != 0 {
		h.Expiry, b = int64(binary.LittleEndian.Uint64(b)), b[8:]
	}
	vl, w := binary.Uvarint(b)
	h.ValLen, h.Offset = uint32(vl), int64(binary.LittleEndian.Uint32(b[w:]))
	return h
}

// Build returns the hint file of the indexed records for a data file of
// dataSize bytes: the same bytes as BuildHints of the scan's Hints. It
// frees the index's memory as it returns; it is called once.
func (x *HintIndex) Build(dataSize int64) []byte {
	ents := x.ents
	// The sort windows, past the prefix all keys share.
	var first []byte
	lcp := -1
	for _, e := range ents {
		switch k := x.key(e.off); {
		case lcp < 0:
			first, lcp = k, len(k)
		case lcp > 0:
			lcp = record.CommonPrefix(first[:lcp], k)
		}
	}
	lcp = max(lcp, 0)
	for i := range ents {
		ents[i].setWindow(x.key(ents[i].off)[lcp:])
	}
	// recs is in file order, so sorting by key and then by place in recs
	// leaves a key's records in file order, the last one winning.
	keyAt := func(o uint32) ([]byte, error) { return x.key(o), nil }
	_ = sortByKey(ents, lcp, keyAt, &yielder{})
	size, n := record.FileHeaderSize+record.HintHeaderSize, 0
	for _, e := range ents {
		if e.lo&superseded == 0 {
			size += record.HintHeaderSize + len(x.key(e.off))
			n++
		}
	}
	buf := record.AppendHintFileHeader(make([]byte, 0, size))
	for _, e := range ents {
		if e.lo&superseded == 0 {
			buf = record.AppendHint(buf, x.hint(e.off))
		}
	}
	x.ents, x.recs = nil, nil
	return record.AppendHintTrailer(buf, uint64(n), dataSize)
}

// growFor returns s with room for n more. Past the first MiB of the file
// it sizes s for the whole file, from its length per byte so far (at off of
// size bytes), so that an index of a large file is allocated a few times
// rather than copied at every doubling by append (see growHints).
func growFor[T any](s []T, n int, off, size int64) []T {
	need := len(s) + n
	est := max(need, 2*cap(s), 64)
	if off >= 1<<20 {
		est = max(int(float64(need)*float64(size)/float64(off)*1.05)+64, need+need/8)
	}
	return slices.Grow(s, est-len(s))
}

// ScanFileIndex is ScanFile, but collects the committed records into a
// HintIndex instead of the result's Hints (which it leaves nil), to build
// the file's hint file in less memory. The index is nil if err is not.
func ScanFileIndex(fs vfs.FS, path string, mode ScanMode, lim record.Limits, scratch *[]byte, progress func(n int64)) (ScanResult, *HintIndex, int64, error) {
	f, err := fs.Open(path)
	if err != nil {
		return ScanResult{}, nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ScanResult{}, nil, 0, err
	}
	res, x, err := ScanReaderAtIndex(f, st.Size(), path, mode, lim, scratch, progress)
	return res, x, st.Size(), err
}

// ScanReaderAtIndex is ScanFileIndex of the data file at path, of size
// bytes, that r reads. A file larger than 4 GiB, more than a data file may
// hold, is an error.
func ScanReaderAtIndex(r io.ReaderAt, size int64, path string, mode ScanMode, lim record.Limits, scratch *[]byte, progress func(n int64)) (ScanResult, *HintIndex, error) {
	if size > maxIndexedSize {
		return ScanResult{}, nil, fmt.Errorf("%s: %d bytes: %w", path, size, ErrFileTooLarge)
	}
	w := &window{r: r, size: size, chunk: scanChunk, progress: progress}
	if scratch != nil {
		w.buf = (*scratch)[:0]
		defer func() { *scratch = w.buf[:0] }()
	}
	x := &HintIndex{}
	res, err := scanData(w, path, mode, lim, func(h record.Hint) { x.add(h, size) })
	if err != nil {
		return res, nil, err
	}
	w.moved(size) // bytes the scan had no need to read
	return res, x, nil
}
