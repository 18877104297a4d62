package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
)

// Defaults applied to zero fields of Options and Limits.
const (
	// DefaultBufferSize is the size of the bufio.Reader a Reader wraps
	// (Redis reads 16 KiB at a time: PROTO_IOBUF_LEN).
	DefaultBufferSize = 16 << 10
	// DefaultMaxArgs is the largest multibulk count accepted.
	DefaultMaxArgs = 1024 * 1024
	// DefaultMaxBulkLen is Redis's default proto-max-bulk-len, 512 MiB.
	DefaultMaxBulkLen = 512 << 20
	// DefaultMaxInlineLen is Redis's PROTO_INLINE_MAX_SIZE, 64 KiB.
	DefaultMaxInlineLen = 64 << 10
	// DefaultMaxQueryLen is Redis's default client-query-buffer-limit, 1 GiB.
	DefaultMaxQueryLen = 1 << 30
	// DefaultMaxDepth is the deepest nesting of aggregates a reply may have.
	DefaultMaxDepth = 128
)

// Redis's fixed limits for a connection that has not authenticated yet,
// applied by ReadCommand while Limits.AuthRequired is set.
const (
	UnauthMaxArgs     = 10
	UnauthMaxBulkLen  = 16384
	UnauthMaxQueryLen = 1 << 20
)

// Limits bounds what a Reader accepts. The zero value of a field means its
// default. Limits can be changed at any time between reads with
// Reader.SetLimits, for example when a client authenticates.
type Limits struct {
	// MaxArgs is the largest number of arguments of one command
	// (default DefaultMaxArgs). A larger multibulk count gets "Protocol
	// error: invalid multibulk length"; an inline command with more
	// arguments gets "Protocol error: too big inline request".
	MaxArgs int
	// MaxBulkLen is the largest bulk string accepted, Redis's
	// proto-max-bulk-len (default DefaultMaxBulkLen). In a command, a
	// larger declared length gets "Protocol error: invalid bulk length".
	// In a reply it bounds blob strings, simple strings and errors.
	MaxBulkLen int64
	// MaxInlineLen is the longest inline command line and the longest
	// multibulk or bulk header line (default DefaultMaxInlineLen). Longer
	// lines get "Protocol error: too big inline request", "... too big
	// mbulk count string" and "... too big bulk count string".
	MaxInlineLen int
	// MaxQueryLen is the largest encoded size of one command, framing
	// included (default DefaultMaxQueryLen). A command that would exceed
	// it gets ErrQueryTooBig as soon as its declared lengths show it.
	MaxQueryLen int64
	// MaxDepth is the deepest nesting of aggregates in a reply read by
	// ReadValue or SkipValue (default DefaultMaxDepth).
	MaxDepth int
	// AuthRequired applies, on top of the limits above, Redis's limits
	// for a connection that has not authenticated: multibulk counts above
	// UnauthMaxArgs get "Protocol error: unauthenticated multibulk
	// length", bulk lengths above UnauthMaxBulkLen get "Protocol error:
	// unauthenticated bulk length", and commands above UnauthMaxQueryLen
	// get ErrQueryTooBig. Like Redis, it does not limit inline commands
	// beyond MaxInlineLen.
	AuthRequired bool
}

// Validate reports a negative field.
func (l Limits) Validate() error {
	switch {
	case l.MaxArgs < 0:
		return fmt.Errorf("%w: MaxArgs %d is negative", ErrInvalidOptions, l.MaxArgs)
	case l.MaxBulkLen < 0:
		return fmt.Errorf("%w: MaxBulkLen %d is negative", ErrInvalidOptions, l.MaxBulkLen)
	case l.MaxInlineLen < 0:
		return fmt.Errorf("%w: MaxInlineLen %d is negative", ErrInvalidOptions, l.MaxInlineLen)
	case l.MaxQueryLen < 0:
		return fmt.Errorf("%w: MaxQueryLen %d is negative", ErrInvalidOptions, l.MaxQueryLen)
	case l.MaxDepth < 0:
		return fmt.Errorf("%w: MaxDepth %d is negative", ErrInvalidOptions, l.MaxDepth)
	}
	return nil
}

// withDefaults returns l with zero fields set to their defaults.
func (l Limits) withDefaults() Limits {
	if l.MaxArgs == 0 {
		l.MaxArgs = DefaultMaxArgs
	}
	if l.MaxBulkLen == 0 {
		l.MaxBulkLen = DefaultMaxBulkLen
	}
	if l.MaxInlineLen == 0 {
		l.MaxInlineLen = DefaultMaxInlineLen
	}
	if l.MaxQueryLen == 0 {
		l.MaxQueryLen = DefaultMaxQueryLen
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	// Lengths are handled as int internally.
	if l.MaxBulkLen > math.MaxInt32 && math.MaxInt == math.MaxInt32 {
		l.MaxBulkLen = math.MaxInt32
	}
	return l
}

// Options configures NewReader. The zero value means all defaults.
type Options struct {
	// BufferSize is the size of the bufio.Reader (default
	// DefaultBufferSize). If the io.Reader given to NewReader already is a
	// *bufio.Reader at least this large, it is used as it is.
	BufferSize int
	// Limits are the initial limits; change them later with SetLimits.
	Limits Limits
}

// Validate reports a negative field.
func (o *Options) Validate() error {
	if o.BufferSize < 0 {
		return fmt.Errorf("%w: BufferSize %d is negative", ErrInvalidOptions, o.BufferSize)
	}
	return o.Limits.Validate()
}

// Reader reads RESP commands (server side) and replies (client side) from
// a buffered stream. Byte slices it returns are owned by the Reader and
// valid only until the next call of one of its Read, Peek, Skip or Reset
// methods. A Reader is not safe for concurrent use.
type Reader struct {
	br  *bufio.Reader
	lim Limits // with defaults applied
	err error  // sticky error

	data  []byte  // byte arena for returned slices
	vals  []Value // Value arena for ReadValue
	stack []Value // children of aggregates being read
	line  []byte  // scratch for lines that span buffer fills
	hdr   []byte  // Header.Line storage for ReadHeader
	blob  int64   // body bytes pending after ReadHeader, or noBlob/StreamedLen
}

// noBlob marks that no blob body is pending.
const noBlob = -1

// NewReader returns a Reader reading from r through a bufio.Reader of
// opts.BufferSize bytes. opts may be nil for all defaults. NewReader panics
// if opts does not pass Validate.
func NewReader(r io.Reader, opts *Options) *Reader {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.Validate(); err != nil {
		panic(err)
	}
	if o.BufferSize == 0 {
		o.BufferSize = DefaultBufferSize
	}
	return &Reader{
		br:   bufio.NewReaderSize(r, o.BufferSize),
		lim:  o.Limits.withDefaults(),
		blob: noBlob,
	}
}

// Reset discards buffered data and any sticky error and makes the Reader
// read from rd, keeping its buffers and limits. It lets a Reader be reused
// for another connection.
func (r *Reader) Reset(rd io.Reader) {
	r.br.Reset(rd)
	r.err = nil
	r.blob = noBlob
	r.resetArena()
}

// SetLimits replaces the Reader's limits (zero fields meaning defaults),
// effective from the next read. It returns an error, and changes nothing,
// if l does not pass Validate.
func (r *Reader) SetLimits(l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	r.lim = l.withDefaults()
	return nil
}

// Limits returns the Reader's limits, with defaults filled in.
func (r *Reader) Limits() Limits { return r.lim }

// Buffered returns the number of bytes already received and not yet
// consumed. A server can use it to tell whether more pipelined commands
// are waiting before it flushes replies.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// fail records err as the sticky error, turning io.EOF into
// io.ErrUnexpectedEOF (the caller has consumed part of an element).
func (r *Reader) fail(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	r.err = err
	return err
}

// Arena sizes above which a buffer that the last read barely used is
// released instead of kept.
const (
	keepBytes  = 64 << 10
	keepValues = 1024
)

// resetArena makes the arenas reusable, releasing large ones the last
// read used less than a quarter of.
func (r *Reader) resetArena() {
	if cap(r.data) > keepBytes && len(r.data) < cap(r.data)/4 {
		r.data = nil
	}
	r.data = r.data[:0]
	if cap(r.vals) > keepValues && len(r.vals) < cap(r.vals)/4 {
		r.vals = nil
	}
	r.vals = r.vals[:0]
	if cap(r.stack) > keepValues {
		r.stack = nil
	}
	r.stack = r.stack[:0]
	if cap(r.line) > keepBytes {
		r.line = nil
	}
	if cap(r.hdr) > keepBytes {
		r.hdr = nil
	}
}

// emptyBytes is returned for empty strings so that they are non-nil.
var emptyBytes = []byte{}

// arenaBytes returns a slice of n bytes from the byte arena; n must
// already have been received (it is not a declared length).
func (r *Reader) arenaBytes(n int) []byte {
	if n == 0 {
		return emptyBytes
	}
	if cap(r.data)-len(r.data) < n {
		r.data = make([]byte, 0, max(2*cap(r.data), n, 4096))
	}
	s := r.data[len(r.data) : len(r.data)+n : len(r.data)+n]
	r.data = r.data[:len(r.data)+n]
	return s
}

// arenaValues returns a slice of n Values from the Value arena.
func (r *Reader) arenaValues(n int) []Value {
	if cap(r.vals)-len(r.vals) < n {
		r.vals = make([]Value, 0, max(2*cap(r.vals), n, 16))
	}
	s := r.vals[len(r.vals) : len(r.vals)+n : len(r.vals)+n]
	r.vals = r.vals[:len(r.vals)+n]
	clear(s) // reused from an earlier read
	return s
}

// readInto appends exactly n bytes from the stream to the byte arena and
// returns the arena slice that starts at start (a position in r.data
// whose bytes belong to the same string; pass len(r.data) for a new
// string). The arena grows only as data arrives, never by n upfront.
func (r *Reader) readInto(start, n int) ([]byte, error) {
	for n > 0 {
		if len(r.data) == cap(r.data) {
			// Grow geometrically from what was received or allocated
			// before, never from the declared n.
			part := r.data[start:]
			extra := min(n, max(cap(r.data), len(part)))
			nd := make([]byte, len(part), max(len(part)+extra, 2*cap(r.data), 4096))
			copy(nd, part)
			r.data = nd
			start = 0
		}
		end := min(cap(r.data), len(r.data)+n)
		m, err := r.br.Read(r.data[len(r.data):end])
		r.data = r.data[:len(r.data)+m]
		n -= m
		if err != nil && n > 0 {
			return nil, err
		}
	}
	if start == len(r.data) {
		return emptyBytes, nil
	}
	return r.data[start:len(r.data):len(r.data)], nil
}

var errLineTooLong = errors.New("resp: line too long")

// peekUntil finds the next delim byte. It returns the bytes before it and
// the number of bytes (delim included) the caller must Discard once done
// with line. line is valid until the next operation on r.br. If more than
// limit bytes come before delim, it returns errLineTooLong as soon as
// limit+1 bytes have arrived without one, whatever the read sizes.
//
// With cString set it treats the stream as Redis does when it looks for a
// line end with strchr: a NUL byte before delim hides delim for good, so
// Redis would wait for more input and fail once the limit is passed;
// peekUntil fails with errLineTooLong at once.
func (r *Reader) peekUntil(delim byte, limit int, cString bool) (line []byte, adv int, err error) {
	r.line = r.line[:0]
	for {
		n := r.br.Buffered()
		if n == 0 {
			if _, err := r.br.Peek(1); err != nil {
				return nil, 0, err
			}
			n = r.br.Buffered()
		}
		p, _ := r.br.Peek(n)
		window := p
		if room := limit + 1 - len(r.line); len(window) > room {
			window = window[:room]
		}
		i := bytes.IndexByte(window, delim)
		if cString {
			end := i
			if end < 0 {
				end = len(p)
			}
			if bytes.IndexByte(p[:end], 0) >= 0 {
				return nil, 0, errLineTooLong
			}
		}
		if i >= 0 {
			if len(r.line) == 0 {
				return p[:i], i + 1, nil
			}
			r.line = append(r.line, p[:i]...)
			r.br.Discard(i + 1)
			return r.line, 0, nil
		}
		if len(r.line)+len(p) > limit {
			return nil, 0, errLineTooLong
		}
		r.line = append(r.line, p...)
		r.br.Discard(len(p))
	}
}

// discard skips n buffered or incoming bytes.
func (r *Reader) discard(n int) error {
	if n == 0 {
		return nil
	}
	_, err := r.br.Discard(n)
	return err
}
