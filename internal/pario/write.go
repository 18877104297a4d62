package pario

import (
	"context"
	"fmt"
	"math"
)

// WriteBuffers writes the concatenation of bufs to w starting at offset 0,
// then syncs w (unless Options.NoSync). It is WriteBuffersAt with off 0;
// see there.
func WriteBuffers(ctx context.Context, w SyncWriterAt, bufs [][]byte, opts Options) error {
	return WriteBuffersAt(ctx, w, 0, bufs, opts)
}

// WriteBuffersAt writes the concatenation of bufs to w starting at offset
// off, with Options.Workers goroutines calling WriteAt on different pieces at
// once (each buffer is cut into pieces of at most ChunkSize bytes; empty
// buffers are skipped). When every write succeeded it calls w.Sync once,
// unless Options.NoSync, so on a nil return the data is durable. It neither
// truncates nor extends w beyond off plus the total length; bytes of w
// outside that range are untouched.
//
// WriteBuffersAt only reads bufs, and keeps no reference to them after it
// returns; the caller must not modify them during the call. The first failed
// WriteAt (wrapped with its offset) or Sync error is returned, and Sync is
// not called after a write error, so w's contents are then undefined in the
// target range. WriteBuffersAt is safe for concurrent use if w allows
// concurrent WriteAt on disjoint ranges; see the package doc for Workers: 1.
func WriteBuffersAt(ctx context.Context, w SyncWriterAt, off int64, bufs [][]byte, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	var total int64
	for _, b := range bufs {
		if int64(len(b)) > math.MaxInt64-total { // one buffer repeated many times
			return fmt.Errorf("%w: total length of buffers overflows", ErrInvalidSize)
		}
		total += int64(len(b))
	}
	if err := checkRange(off, total); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cs := opts.chunkSize()
	type piece struct {
		p   []byte
		off int64
	}
	var pieces []piece
	pos := off
	for _, b := range bufs {
		for len(b) > 0 {
			l := int(min(cs, int64(len(b))))
			pieces = append(pieces, piece{b[:l], pos})
			b, pos = b[l:], pos+int64(l)
		}
	}
	n := int64(len(pieces))
	err := forEach(ctx, n, opts.workers(n), func(_ int, i int64) error {
		return writeAt(w, pieces[i].p, pieces[i].off)
	})
	if err != nil {
		return err
	}
	return syncFile(w, opts)
}

// Copy copies bytes [0, size) of src to the same offsets of dst, with
// Options.Workers goroutines each reading a chunk from src and writing it to
// dst, then syncs dst (unless Options.NoSync). Memory is bounded: each worker
// reuses one buffer of at most ChunkSize bytes. Copy neither truncates nor
// shrinks dst: create or truncate it first if it may hold more than size
// bytes. A src shorter than size gives an error wrapping io.ErrUnexpectedEOF.
// The first read or write error (wrapped with its offset) or Sync error is
// returned; after an error dst's contents are undefined and it is not synced.
// Copy is safe for concurrent use if src's ReadAt and dst's WriteAt are
// (see the package doc for Workers: 1).
func Copy(ctx context.Context, dst SyncWriterAt, src ReaderAt, size int64, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := checkRange(0, size); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cs := opts.chunkSize()
	n := chunks(size, cs)
	workers := opts.workers(n)
	bufs := make([][]byte, workers) // bufs[w] is used only by worker w
	chunkLen := int(min(cs, size))
	err := forEach(ctx, n, workers, func(w int, i int64) error {
		if bufs[w] == nil {
			bufs[w] = make([]byte, chunkLen)
		}
		off, l := span(i, size, cs)
		b := bufs[w][:l]
		if err := readFullAt(src, b, off); err != nil {
			return err
		}
		return writeAt(dst, b, off)
	})
	if err != nil {
		return err
	}
	return syncFile(dst, opts)
}
