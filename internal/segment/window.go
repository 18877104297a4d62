package segment

import (
	"context"
	"encoding/binary"

	"github.com/caskade/caskade/internal/pario"
	"github.com/caskade/caskade/internal/record"
)

// scanChunk is how many bytes a scan of a data file (ScanFile) reads at a
// time; tests shrink it.
var scanChunk = 4 << 20

// window gives a scan the bytes of a data file: all of them, held in
// memory (ScanData), or a window of them read from the file as the scan
// moves on (ScanFile), so that a scan needs memory for one chunk and not
// for the file.
type window struct {
	r     pario.ReaderAt // nil: buf holds the whole file
	size  int64          // the file's length
	buf   []byte         // the file's bytes [base, base+len(buf))
	base  int64
	chunk int
	keys  keyArena // copies of keys that outlive the window (r != nil)
	// progress, if set, is told of the bytes past seen, the end of
	// the furthest bytes read, as the window reads them.
	progress func(n int64)
	seen     int64
}

// memWindow is a window on b, which holds the whole file.
func memWindow(b []byte) *window { return &window{buf: b, size: int64(len(b)), chunk: len(b)} }

// at returns the file's bytes [off, off+n), or fewer if the file ends
// first (none at or past its end). With a file behind the window, the
// slice is valid only until the next call.
func (w *window) at(off int64, n int) ([]byte, error) {
	if off >= w.size || n <= 0 {
		return nil, nil
	}
	end := min(off+int64(n), w.size)
	if off >= w.base && end <= w.base+int64(len(w.buf)) {
		return w.buf[off-w.base : end-w.base], nil
	}
	if w.r == nil {
		panic("segment: window on a buffer moved") // a buffer window holds all
	}
	// Move the window to start at off, keeping the bytes it shares with
	// the old one, and read the rest.
	want := min(max(int64(n), int64(w.chunk)), w.size-off)
	keep := 0
	if off >= w.base && off < w.base+int64(len(w.buf)) {
		keep = copy(w.buf, w.buf[off-w.base:])
	}
	if int64(cap(w.buf)) < want {
		nb := make([]byte, want)
		copy(nb, w.buf[:keep])
		w.buf = nb
	}
	w.buf = w.buf[:want]
	w.base = off
	if err := w.read(w.buf[keep:], off+int64(keep)); err != nil {
		w.buf, w.base = w.buf[:0], 0
		return nil, err
	}
	w.moved(off + want)
	return w.buf[:end-off], nil
}

// moved tells the window's progress function that the file's bytes up
// to end have been read.
func (w *window) moved(end int64) {
	if end > w.seen {
		if w.progress != nil {
			w.progress(end - w.seen)
		}
		w.seen = end
	}
}

// readChunk is the size of the pieces a window reads in parallel (pario);
// a read of at most one piece is a plain ReadAt on the caller's goroutine.
const readChunk = 1 << 20

// read fills p with the file's bytes from off.
func (w *window) read(p []byte, off int64) error {
	return pario.ReadInto(context.Background(), w.r, p, off, pario.Options{ChunkSize: readChunk})
}

// rest returns the bytes the window holds from off, which it must hold.
func (w *window) rest(off int64) []byte { return w.buf[off-w.base:] }

// keep returns key, which the window holds, in memory of its own if the
// window will move on.
func (w *window) keep(key []byte) []byte {
	if w.r == nil {
		return key
	}
	return w.keys.copy(key)
}

// decode decodes and verifies the record at off as record.Decode does the
// file's bytes from off on, with the same errors. Its key aliases the
// window. A record larger than a chunk is checked a chunk at a time, so
// the window holds no more than its header and key.
func (w *window) decode(off int64, lim record.Limits) (record.Header, []byte, error) {
	hb, err := w.at(off, record.HeaderSize)
	if err != nil {
		return record.Header{}, nil, err
	}
	h, err := record.DecodeHeader(hb, lim)
	if err != nil {
		return record.Header{}, nil, err
	}
	n := h.Size()
	if w.size-off < n {
		return record.Header{}, nil, record.ErrTruncated
	}
	kend := record.HeaderSize + int(h.KeyLen)
	if w.r == nil || n <= int64(w.chunk) {
		b, err := w.at(off, int(n))
		if err != nil {
			return record.Header{}, nil, err
		}
		r, err := record.Decode(b, lim)
		return r.Header, r.Key, err
	}
	want := binary.LittleEndian.Uint32(hb)
	var crc uint32
	for p := off + 4; p < off+n; {
		b, err := w.at(p, int(min(int64(w.chunk), off+n-p)))
		if err != nil {
			return record.Header{}, nil, err
		}
		crc = record.UpdateChecksum(crc, b)
		p += int64(len(b))
	}
	if err := record.CompareChecksum(want, crc); err != nil {
		return record.Header{}, nil, err
	}
	b, err := w.at(off, kend)
	if err != nil {
		return record.Header{}, nil, err
	}
	return h, b[record.HeaderSize:kend:kend], nil
}

// allZero reports whether the file's bytes [from, to) are all zero.
func (w *window) allZero(from, to int64) (bool, error) {
	for p := from; p < to; {
		b, err := w.at(p, int(min(int64(w.chunk), to-p)))
		if err != nil {
			return false, err
		}
		if len(b) == 0 {
			return true, nil
		}
		for _, c := range b {
			if c != 0 {
				return false, nil
			}
		}
		p += int64(len(b))
	}
	return true, nil
}

// keyArena copies keys into large blocks, so that a scan's hints hold a
// few allocations instead of one per key.
type keyArena struct{ cur []byte }

const arenaBlock = 64 << 10

// reset lets the arena reuse its current block: the keys copied so far are
// no longer used.
func (a *keyArena) reset() { a.cur = a.cur[:0] }

func (a *keyArena) copy(k []byte) []byte {
	if len(k) > cap(a.cur)-len(a.cur) {
		if len(k) > arenaBlock/4 {
			return append([]byte(nil), k...)
		}
		a.cur = make([]byte, 0, arenaBlock)
	}
	n := len(a.cur)
	a.cur = append(a.cur, k...)
	return a.cur[n:len(a.cur):len(a.cur)]
}
