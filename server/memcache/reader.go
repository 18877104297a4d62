package memcache

import (
	"bytes"
	"io"
)

// reader is the buffered input of one connection (or one UDP datagram). It
// hands out slices of its buffer, valid until the next call that reads.
type reader struct {
	src  io.Reader // nil for a datagram: the buffer is all there is
	buf  []byte
	r, w int
	// before is called before every blocking read of src (deadlines,
	// shutdown checks), with data true when the read is for a data block
	// rather than a command line; an error from it is returned instead of
	// reading.
	before func(data bool) error
	// nread counts bytes read from src.
	nread int64
}

func newReader(src io.Reader, size int) *reader {
	return &reader{src: src, buf: make([]byte, size)}
}

// reset makes the reader serve exactly b (a datagram), with no source.
func (b *reader) reset(data []byte) {
	b.src, b.buf, b.r, b.w = nil, data, 0, len(data)
}

func (b *reader) buffered() int { return b.w - b.r }

// fill reads more input after the buffered bytes, compacting and growing
// the buffer (up to max) when it is full; data tells before whether the
// input is a data block.
func (b *reader) fill(max int, data bool) error {
	if b.src == nil {
		return io.EOF
	}
	if b.r > 0 && (b.w == len(b.buf) || b.r == b.w) {
		n := copy(b.buf, b.buf[b.r:b.w])
		b.r, b.w = 0, n
	}
	if b.w == len(b.buf) {
		if len(b.buf) >= max {
			return errLineTooLong
		}
		nb := make([]byte, min(max, 2*len(b.buf)))
		copy(nb, b.buf[b.r:b.w])
		b.w -= b.r
		b.r = 0
		b.buf = nb
	}
	if b.before != nil {
		if err := b.before(data); err != nil {
			return err
		}
	}
	n, err := b.src.Read(b.buf[b.w:])
	b.w += n
	b.nread += int64(n)
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// readLine returns the next line including its '\n'. A line without '\n'
// in its first limit bytes is an error (errLineTooLong) unless long accepts
// its start, in which case it may grow to longLimit bytes.
func (b *reader) readLine(limit int, long func([]byte) bool, longLimit int) ([]byte, error) {
	scanned := 0
	max := limit
	for {
		if i := bytes.IndexByte(b.buf[b.r+scanned:b.w], '\n'); i >= 0 {
			end := b.r + scanned + i + 1
			line := b.buf[b.r:end]
			b.r = end
			return line, nil
		}
		scanned = b.w - b.r
		if scanned > max {
			if max == limit && long != nil && long(b.buf[b.r:b.w]) {
				max = longLimit
			} else {
				return nil, errLineTooLong
			}
		}
		if err := b.fill(max+1, false); err != nil {
			if err == errLineTooLong {
				return nil, errLineTooLong
			}
			if err == io.EOF && b.buffered() > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// readFull returns the next n bytes. The slice is the reader's (valid until
// the next read) when they fit its buffer, else newly allocated.
func (b *reader) readFull(n int) ([]byte, error) {
	if b.buffered() >= n {
		p := b.buf[b.r : b.r+n]
		b.r += n
		return p, nil
	}
	if n <= len(b.buf) {
		if b.r > 0 {
			c := copy(b.buf, b.buf[b.r:b.w])
			b.r, b.w = 0, c
		}
		for b.buffered() < n {
			if err := b.fill(len(b.buf), true); err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return nil, err
			}
		}
		p := b.buf[b.r : b.r+n]
		b.r += n
		return p, nil
	}
	p := make([]byte, n)
	c := copy(p, b.buf[b.r:b.w])
	b.r = b.w
	for c < n {
		if b.src == nil {
			return nil, io.ErrUnexpectedEOF
		}
		if b.before != nil {
			if err := b.before(true); err != nil {
				return nil, err
			}
		}
		m, err := b.src.Read(p[c:])
		c += m
		b.nread += int64(m)
		if m == 0 {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return p, nil
}

// discard skips the next n bytes (memcached's "swallow").
func (b *reader) discard(n int) error {
	for n > 0 {
		if b.buffered() == 0 {
			if b.src == nil {
				return io.ErrUnexpectedEOF
			}
			b.r, b.w = 0, 0
			if err := b.fill(len(b.buf), true); err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
		}
		k := min(n, b.buffered())
		b.r += k
		n -= k
	}
	return nil
}
