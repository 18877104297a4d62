package pario

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
)

// ReadFull reads bytes [0, size) of r into one new slice, with
// Options.Workers goroutines reading different chunks at once. The returned
// slice has length size and belongs to the caller. size must fit in an int
// (ErrTooLarge otherwise); use ReadAll or Stream for larger files. A file
// shorter than size gives an error wrapping io.ErrUnexpectedEOF. On error the
// returned slice is nil. ReadFull is safe for concurrent use if r's ReadAt
// is.
//
// Go zeroes the new slice on one core before any worker starts, which for a
// large file in the page cache can take as long as the parallel read; a
// caller reading many files one after another saves that with ReadInto and
// one buffer.
func ReadFull(ctx context.Context, r ReaderAt, size int64, opts Options) ([]byte, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := checkRange(0, size); err != nil {
		return nil, err
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, size)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	if err := ReadInto(ctx, r, buf, 0, opts); err != nil {
		return nil, err
	}
	return buf, nil
}

// ReadInto fills buf with bytes [off, off+len(buf)) of r, with
// Options.Workers goroutines reading different chunks at once: chunk i is
// buf[i*ChunkSize:], read from offset off+i*ChunkSize. It allocates
// nothing per byte, so a caller reading many files one after another can
// reuse one buffer (sliced to each file's length) and skip the zeroing of
// a new one. A file that ends before off+len(buf) gives an error wrapping
// io.ErrUnexpectedEOF; errors carry the file offset of the failing ReadAt.
// An empty buf reads nothing.
//
// buf belongs to the caller: ReadInto writes to it only until it returns
// and keeps no reference. On error the contents of buf are undefined
// (some chunks may have been read, others not). The caller must not touch
// buf during the call. ReadInto is safe for concurrent use if r's ReadAt
// is, on distinct buffers.
func ReadInto(ctx context.Context, r ReaderAt, buf []byte, off int64, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	size := int64(len(buf))
	if err := checkRange(off, size); err != nil {
		return err
	}
	cs := opts.chunkSize()
	n := chunks(size, cs)
	if n == 1 {
		// One chunk: a plain read on this goroutine, without forEach's
		// context and error plumbing (callers that read many small
		// pieces, such as record keys, pay for nothing else).
		if err := ctx.Err(); err != nil {
			return err
		}
		return readFullAt(r, buf, off)
	}
	return forEach(ctx, n, opts.workers(n), func(_ int, i int64) error {
		at, l := span(i, size, cs)
		return readFullAt(r, buf[at:at+int64(l)], off+at)
	})
}

// ReadAll reads bytes [0, size) of r into a sequence of new buffers, with
// Options.Workers goroutines reading different chunks at once. Buffer i holds
// the file bytes [i*ChunkSize, min((i+1)*ChunkSize, size)), so every buffer
// but the last has length ChunkSize; for size 0 the result is empty. Unlike
// ReadFull it works for any size, but it holds the whole file in memory; use
// Stream to bound memory. The buffers belong to the caller. A file shorter
// than size gives an error wrapping io.ErrUnexpectedEOF; on error the result
// is nil. ReadAll is safe for concurrent use if r's ReadAt is.
func ReadAll(ctx context.Context, r ReaderAt, size int64, opts Options) ([][]byte, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := checkRange(0, size); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cs := opts.chunkSize()
	n := chunks(size, cs)
	if n > math.MaxInt {
		return nil, fmt.Errorf("%w: %d chunks", ErrTooLarge, n)
	}
	bufs := make([][]byte, n)
	err := forEach(ctx, n, opts.workers(n), func(_ int, i int64) error {
		off, l := span(i, size, cs)
		b := make([]byte, l)
		if err := readFullAt(r, b, off); err != nil {
			return err
		}
		bufs[i] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return bufs, nil
}

// errSkipped marks a Stream chunk that a worker did not read because the
// call was already cancelled; it is never returned to a caller.
var errSkipped = errors.New("pario: chunk skipped")

// Stream reads bytes [0, size) of r and calls fn for each chunk in file
// order: fn(0, first chunk), fn(ChunkSize, second chunk), and so on, with
// every chunk ChunkSize bytes long except possibly the last. Meanwhile
// Options.Workers goroutines read ahead, so at most 2*Workers chunk buffers
// (2*Workers*ChunkSize bytes) exist at once, whatever the file size. fn is not
// called for size 0.
//
// fn is called on the goroutine that called Stream, one call at a time. The
// chunk belongs to Stream: it is valid only until fn returns, after which
// Stream reuses it for a later chunk; fn may modify it but must copy
// anything it keeps. If fn returns an error, Stream stops reading and
// returns that error unchanged. A read error (a file shorter than size gives
// one wrapping io.ErrUnexpectedEOF) stops delivery at once, so fn may not
// have seen every chunk before the failing offset; the chunks it did see are
// correct. Stream is safe for concurrent use if r's ReadAt is.
func Stream(ctx context.Context, r ReaderAt, size int64, opts Options, fn func(off int64, chunk []byte) error) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := checkRange(0, size); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	cs := opts.chunkSize()
	n := chunks(size, cs)
	workers := opts.workers(n)
	window := min(2*int64(workers), n)

	// Chunk i travels in slot i%window. Slot s is handed to a worker for
	// chunk i+window only after chunk i was delivered, so each slot has at
	// most one chunk in flight, its done channel (capacity 1) never blocks,
	// and jobs (capacity window) never blocks either.
	type slot struct {
		mem  []byte
		off  int64
		n    int
		done chan error
	}
	slots := make([]slot, window)
	for i := range slots {
		slots[i].done = make(chan error, 1)
	}
	jobs := make(chan *slot, window)

	inner, cancel := context.WithCancel(ctx)
	first := newFirstError(ctx, cancel)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for s := range jobs {
				if inner.Err() != nil {
					s.done <- errSkipped
					continue
				}
				err := readFullAt(r, s.mem[:s.n], s.off)
				if err != nil {
					first.set(err)
				}
				s.done <- err
			}
		})
	}
	defer func() {
		cancel()
		close(jobs)
		wg.Wait()
	}()

	chunkLen := int(min(cs, size))
	var dispatched int64
	for i := int64(0); i < n; i++ {
		for ; dispatched < n && dispatched < i+window; dispatched++ {
			s := &slots[dispatched%window]
			if s.mem == nil {
				s.mem = make([]byte, chunkLen)
			}
			s.off, s.n = span(dispatched, size, cs)
			jobs <- s
		}
		s := &slots[i%window]
		var err error
		select {
		case err = <-s.done:
		case <-inner.Done():
			err = errSkipped
		}
		if err == nil && inner.Err() != nil {
			err = errSkipped
		}
		if err == nil {
			err = fn(s.off, s.mem[:s.n:s.n])
		}
		if err != nil {
			first.set(err)
			break
		}
	}
	err := first.get()
	if errors.Is(err, errSkipped) {
		// Only a cancelled ctx makes workers skip without recording a
		// read error of their own.
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
	}
	return err
}
