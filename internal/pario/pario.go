package pario

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// ReaderAt is the read side pario needs: positional reads as in io.ReaderAt.
// With Workers > 1, ReadAt is called concurrently on different offsets.
type ReaderAt interface {
	ReadAt(p []byte, off int64) (n int, err error)
}

// WriterAt is the positional write pario needs, as in io.WriterAt. With
// Workers > 1, WriteAt is called concurrently on non-overlapping regions.
type WriterAt interface {
	WriteAt(p []byte, off int64) (n int, err error)
}

// SyncWriterAt is a WriterAt whose Sync makes what was written durable
// (fsync). *os.File and vfs.File satisfy it.
type SyncWriterAt interface {
	WriterAt
	Sync() error
}

// readFullAt fills p from r at off. A failure is wrapped with the offset of
// the failing ReadAt call; EOF before len(p) bytes becomes
// io.ErrUnexpectedEOF.
func readFullAt(r ReaderAt, p []byte, off int64) error {
	for len(p) > 0 {
		n, err := r.ReadAt(p, off)
		if n < 0 || n > len(p) {
			return fmt.Errorf("pario: read at offset %d: invalid count %d from ReadAt", off, n)
		}
		p, off = p[n:], off+int64(n)
		switch {
		case len(p) == 0:
			// io.ReaderAt allows io.EOF with a full read.
			return nil
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		case err == nil && n == 0:
			err = io.ErrNoProgress
		}
		if err != nil {
			return fmt.Errorf("pario: read at offset %d: %w", off, err)
		}
	}
	return nil
}

// writeAt writes all of p to w at off.
func writeAt(w WriterAt, p []byte, off int64) error {
	n, err := w.WriteAt(p, off)
	if err == nil && n != len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if n > 0 && n < len(p) {
			off += int64(n)
		}
		return fmt.Errorf("pario: write at offset %d: %w", off, err)
	}
	return nil
}

// syncFile calls w.Sync unless opts.NoSync.
func syncFile(w SyncWriterAt, opts Options) error {
	if opts.NoSync {
		return nil
	}
	if err := w.Sync(); err != nil {
		return fmt.Errorf("pario: sync: %w", err)
	}
	return nil
}

// firstError keeps the first error reported and cancels a context when it
// arrives. It is safe for concurrent use.
type firstError struct {
	mu     sync.Mutex
	err    error
	cancel context.CancelFunc
	hook   func() // see failHookKey; nil outside tests
}

func newFirstError(ctx context.Context, cancel context.CancelFunc) *firstError {
	hook, _ := ctx.Value(failHookKey{}).(func())
	return &firstError{cancel: cancel, hook: hook}
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
		f.cancel()
		if f.hook != nil {
			f.hook()
		}
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// failHookKey is the context key under which tests store a func() that runs
// once per call, right after the first error was recorded and the other
// workers were told to stop. It lets tests hold workers inside I/O until
// then, making "the others stop" observable without timing.
type failHookKey struct{}

// forEach calls do(w, i) for every i in [0, n), on workers goroutines that
// claim indexes in ascending order; w in [0, workers) names the calling
// worker, so do may keep per-worker state indexed by it. With one worker, do
// runs on the calling goroutine. The first error (from do, or ctx.Err() if
// ctx is done before every index was handled) stops the others and is
// returned after all workers have exited.
func forEach(ctx context.Context, n int64, workers int, do func(w int, i int64) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	first := newFirstError(ctx, cancel)
	var next atomic.Int64
	work := func(w int) {
		for {
			i := next.Add(1) - 1
			if i >= n {
				return
			}
			// Checked after claiming, so once ctx is cancelled no worker
			// starts another chunk.
			if inner.Err() != nil {
				if err := ctx.Err(); err != nil {
					first.set(err)
				}
				return
			}
			if err := do(w, i); err != nil {
				first.set(err)
				return
			}
		}
	}
	if workers <= 1 {
		work(0)
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { work(w) })
		}
		wg.Wait()
	}
	return first.get()
}

// checkRange reports ErrInvalidSize for a negative off or size, or when
// off+size overflows.
func checkRange(off, size int64) error {
	if off < 0 || size < 0 {
		return fmt.Errorf("%w: offset %d, size %d", ErrInvalidSize, off, size)
	}
	if off > maxInt64-size {
		return fmt.Errorf("%w: offset %d + size %d overflows", ErrInvalidSize, off, size)
	}
	return nil
}

const maxInt64 = 1<<63 - 1
