package main

import (
	"context"
	"io"
)

// ctxReader reads from r until ctx ends. A read of a pipe or terminal can
// block for as long as the other end likes; SIGINT and SIGTERM end ctx
// (main catches them), so without this a load waiting for input would not
// stop. A read that ctx cuts short is left to finish on its own (the
// process is about to exit); its bytes are dropped.
type ctxReader struct {
	ctx  context.Context
	r    io.Reader
	buf  []byte
	done chan ioResult // the read in flight, if any
}

type ioResult struct {
	n   int
	err error
}

func newCtxReader(ctx context.Context, r io.Reader) *ctxReader {
	return &ctxReader{ctx: ctx, r: r}
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.done == nil {
		if cap(c.buf) < len(p) {
			c.buf = make([]byte, len(p))
		}
		buf := c.buf[:len(p)]
		done := make(chan ioResult, 1)
		c.done = done
		go func() {
			n, err := c.r.Read(buf)
			done <- ioResult{n, err}
		}()
	}
	select {
	case res := <-c.done:
		c.done = nil
		n := copy(p, c.buf[:res.n])
		return n, res.err
	case <-c.ctx.Done():
		// The read in flight still owns c.buf: give it up with it.
		c.buf = nil
		return 0, c.ctx.Err()
	}
}

// ctxWriter writes to w until ctx ends, for the same reason as ctxReader:
// a dump to a pipe nobody reads would otherwise not stop.
type ctxWriter struct {
	ctx  context.Context
	w    io.Writer
	buf  []byte
	done chan ioResult
}

func newCtxWriter(ctx context.Context, w io.Writer) *ctxWriter {
	return &ctxWriter{ctx: ctx, w: w}
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// The write may outlive this call, so it writes a copy of p.
	c.buf = append(c.buf[:0], p...)
	buf := c.buf
	done := make(chan ioResult, 1)
	go func() {
		n, err := c.w.Write(buf)
		done <- ioResult{n, err}
	}()
	select {
	case res := <-done:
		return res.n, res.err
	case <-c.ctx.Done():
		c.buf = nil // still owned by the write in flight
		return 0, c.ctx.Err()
	}
}
