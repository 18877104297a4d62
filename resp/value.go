package resp

import (
	"bytes"
	"math"
	"slices"
	"strconv"
)

// Kind is the type of a RESP element; its value is the element's type
// byte on the wire.
type Kind byte

// The RESP2 and RESP3 kinds.
const (
	KindSimpleString Kind = '+' // +OK
	KindError        Kind = '-' // -ERR message
	KindInt          Kind = ':' // :42
	KindBulk         Kind = '$' // $5 hello; $-1 is a RESP2 null
	KindArray        Kind = '*' // *2 ...; *-1 is a RESP2 null
	KindNull         Kind = '_' // RESP3 null
	KindDouble       Kind = ',' // ,1.5 ,inf ,-inf ,nan
	KindBool         Kind = '#' // #t #f
	KindBlobError    Kind = '!' // !21 SYNTAX invalid syntax
	KindVerbatim     Kind = '=' // =15 txt:Some string
	KindBigNumber    Kind = '(' // (3492890328409238509324850943850943825024385
	KindMap          Kind = '%' // %2 then 2 keys and 2 values
	KindSet          Kind = '~' // ~3 ...
	KindAttribute    Kind = '|' // |1 then a key and a value, then the value they describe
	KindPush         Kind = '>' // >3 ... out-of-band data
	KindEnd          Kind = '.' // end of a streamed aggregate (seen only through ReadHeader)
)

// String returns the kind's name, such as "bulk" or "map".
func (k Kind) String() string {
	switch k {
	case KindSimpleString:
		return "simple string"
	case KindError:
		return "error"
	case KindInt:
		return "integer"
	case KindBulk:
		return "bulk"
	case KindArray:
		return "array"
	case KindNull:
		return "null"
	case KindDouble:
		return "double"
	case KindBool:
		return "boolean"
	case KindBlobError:
		return "blob error"
	case KindVerbatim:
		return "verbatim string"
	case KindBigNumber:
		return "big number"
	case KindMap:
		return "map"
	case KindSet:
		return "set"
	case KindAttribute:
		return "attribute"
	case KindPush:
		return "push"
	case KindEnd:
		return "end"
	}
	return "kind " + strconv.QuoteRune(rune(k))
}

// isAggregate reports whether k has elements.
func (k Kind) isAggregate() bool {
	switch k {
	case KindArray, KindMap, KindSet, KindAttribute, KindPush:
		return true
	}
	return false
}

// isBlob reports whether k has a length-prefixed body.
func (k Kind) isBlob() bool {
	return k == KindBulk || k == KindBlobError || k == KindVerbatim
}

// Value is one complete reply as read by ReadValue. Which fields are set
// depends on Kind:
//
//	KindSimpleString, KindError, KindBulk, KindBlobError: Str
//	KindBigNumber: Str (the digits, with any sign)
//	KindVerbatim: Format (such as "txt" or "mkd") and Str (the text after "txt:")
//	KindInt: Int
//	KindDouble: Float
//	KindBool: Bool
//	KindArray, KindSet, KindPush: Elems
//	KindMap: Elems, keys and values alternating (2n elements for n pairs)
//	KindNull: nothing (RESP3 _, and also RESP2 $-1 and *-1)
//
// Attrs holds the RESP3 attributes that preceded the value, keys and values
// alternating, or is nil. Empty strings and aggregates have non-nil empty
// Str and Elems. A Value read by ReadValue shares memory with its Reader:
// see ReadValue and Clone.
type Value struct {
	Kind   Kind    // the element's type; KindNull for every null
	Str    []byte  // text of string, error and big number kinds
	Int    int64   // value of a KindInt
	Float  float64 // value of a KindDouble
	Bool   bool    // value of a KindBool
	Format string  // format of a KindVerbatim, such as "txt"
	Elems  []Value // elements of aggregates; keys and values alternating for maps
	Attrs  []Value // attributes sent before the element, keys and values alternating
}

// IsNull reports whether v is a null (KindNull).
func (v Value) IsNull() bool { return v.Kind == KindNull }

// Clone returns a deep copy of v that shares no memory with v or with a
// Reader, made with at most two allocations.
func (v Value) Clone() Value {
	nb, nv := v.size()
	c := cloner{}
	if nb > 0 {
		c.bytes = make([]byte, 0, nb)
	}
	if nv > 0 {
		c.vals = make([]Value, 0, nv)
	}
	return c.clone(v)
}

// size returns the bytes and nested Values v refers to.
func (v Value) size() (nb, nv int) {
	nb = len(v.Str)
	nv = len(v.Elems) + len(v.Attrs)
	for _, e := range v.Elems {
		b, n := e.size()
		nb, nv = nb+b, nv+n
	}
	for _, e := range v.Attrs {
		b, n := e.size()
		nb, nv = nb+b, nv+n
	}
	return nb, nv
}

type cloner struct {
	bytes []byte
	vals  []Value
}

func (c *cloner) clone(v Value) Value {
	if v.Str != nil {
		if len(v.Str) == 0 {
			v.Str = emptyBytes
		} else {
			n := len(c.bytes)
			c.bytes = append(c.bytes, v.Str...)
			v.Str = c.bytes[n:len(c.bytes):len(c.bytes)]
		}
	}
	v.Elems = c.cloneSlice(v.Elems)
	v.Attrs = c.cloneSlice(v.Attrs)
	return v
}

func (c *cloner) cloneSlice(s []Value) []Value {
	if s == nil {
		return nil
	}
	if len(s) == 0 {
		return emptyValues
	}
	n := len(c.vals)
	c.vals = append(c.vals, s...)
	out := c.vals[n:len(c.vals):len(c.vals)]
	for i := range out {
		out[i] = c.clone(out[i])
	}
	return out
}

// emptyValues is the Elems of empty aggregates.
var emptyValues = []Value{}

// StreamedLen is Header.Len for a RESP3 streamed string ($?) or streamed
// aggregate (*?, %?, ~?): a string's chunks are read by ReadBlob; an
// aggregate's elements follow until a header of KindEnd.
const StreamedLen = -2

// Header is the first line of a reply element, as read by ReadHeader.
type Header struct {
	// Kind is the element's type byte.
	Kind Kind
	// Len is, for KindBulk, KindBlobError and KindVerbatim, the length of
	// the body (read it with ReadBlob); for aggregates, the element count
	// as sent (pairs, for KindMap and KindAttribute); -1 for the RESP2
	// nulls $-1 and *-1; StreamedLen for streamed strings and aggregates.
	Len int64
	// Int is the value of a KindInt.
	Int int64
	// Float is the value of a KindDouble.
	Float float64
	// Bool is the value of a KindBool.
	Bool bool
	// Line is the text after the type byte, without CRLF, for the kinds
	// that are a single line (simple string, error, integer, double,
	// boolean, big number). It is valid until the next call on the Reader.
	Line []byte
}

// IsNull reports whether h is a null: RESP3 _ or RESP2 $-1 or *-1.
func (h Header) IsNull() bool { return h.Kind == KindNull || h.Len == -1 }

// Where readHead puts Header.Line.
const (
	lineNone  = iota // not needed
	lineArena        // in the byte arena, for + - ( only (ReadValue)
	lineHdr          // in r.hdr, for every single-line kind (ReadHeader)
)

// readHead reads a type byte and its line.
func (r *Reader) readHead(h *Header, store int) error {
	c, err := r.br.ReadByte()
	if err != nil {
		return err
	}
	*h = Header{Kind: Kind(c)}
	limit := 64
	switch h.Kind {
	case KindSimpleString, KindError, KindBigNumber:
		limit = int(min(r.lim.MaxBulkLen, math.MaxInt/2))
	case KindInt, KindBulk, KindArray, KindNull, KindDouble, KindBool, KindBlobError,
		KindVerbatim, KindMap, KindSet, KindAttribute, KindPush, KindEnd:
		if r.lim.MaxInlineLen > limit {
			limit = r.lim.MaxInlineLen
		}
	default:
		return invalidTypeByte(c)
	}
	raw, adv, err := r.peekUntil('\n', limit+1, false)
	if err == errLineTooLong {
		return errReplyLineTooLong
	}
	if err != nil {
		return err
	}
	if len(raw) == 0 || raw[len(raw)-1] != '\r' {
		return errReplyNoCRLF
	}
	line := raw[:len(raw)-1]
	if err := h.parse(line); err != nil {
		return err
	}
	if h.Kind.isBlob() && h.Len > r.lim.MaxBulkLen {
		return errInvalidBulkLen
	}
	switch {
	case store == lineHdr && !h.Kind.isAggregate() && !h.Kind.isBlob():
		r.hdr = append(r.hdr[:0], line...)
		h.Line = r.hdr
	case store == lineArena && (h.Kind == KindSimpleString || h.Kind == KindError || h.Kind == KindBigNumber):
		h.Line = r.arenaBytes(len(line))
		copy(h.Line, line)
	}
	return r.discard(adv)
}

// parse fills h from the line after its type byte.
func (h *Header) parse(line []byte) error {
	var ok bool
	switch h.Kind {
	case KindInt:
		if h.Int, ok = ParseInt(line); !ok {
			return errReplyBadInt
		}
	case KindDouble:
		if h.Float, ok = parseDouble(line); !ok {
			return errReplyBadDouble
		}
	case KindBool:
		switch string(line) {
		case "t":
			h.Bool = true
		case "f":
		default:
			return errReplyBadBool
		}
	case KindNull, KindEnd:
		if len(line) != 0 {
			return errReplyBadNull
		}
	case KindBigNumber:
		if !isBigNumber(line) {
			return errReplyBadBigNumber
		}
	case KindBulk, KindBlobError, KindVerbatim:
		switch {
		case h.Kind == KindBulk && string(line) == "?":
			h.Len = StreamedLen
		default:
			if h.Len, ok = ParseInt(line); !ok || h.Len < -1 {
				return errInvalidBulkLen
			}
		}
	case KindArray, KindMap, KindSet, KindAttribute, KindPush:
		switch {
		case h.Kind != KindAttribute && h.Kind != KindPush && string(line) == "?":
			h.Len = StreamedLen
		default:
			h.Len, ok = ParseInt(line)
			if !ok || h.Len < -1 || h.Len == -1 && h.Kind == KindAttribute ||
				(h.Kind == KindMap || h.Kind == KindAttribute) && h.Len > math.MaxInt64/2 {
				return errReplyBadAggregate
			}
		}
	}
	return nil
}

// parseDouble parses a RESP3 double, accepting every NaN spelling older
// Redis versions produced ("nan", "-nan", "NAN", "nan(...)").
func parseDouble(b []byte) (float64, bool) {
	t := b
	if len(t) > 0 && (t[0] == '-' || t[0] == '+') {
		t = t[1:]
	}
	if len(t) >= 3 && bytes.EqualFold(t[:3], []byte("nan")) {
		return math.NaN(), true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}

// isBigNumber reports whether b is an optionally signed decimal integer.
func isBigNumber(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// readCRLF consumes the CRLF that ends a blob body.
func (r *Reader) readCRLF() error {
	p, err := r.br.Peek(2)
	if err != nil {
		return err
	}
	if p[0] != '\r' || p[1] != '\n' {
		return errReplyNoCRLF
	}
	return r.discard(2)
}

// readChunkHeader reads the ";<count>\r\n" line of a streamed string.
func (r *Reader) readChunkHeader() (int64, error) {
	c, err := r.br.ReadByte()
	if err != nil {
		return 0, err
	}
	if c != ';' {
		return 0, errReplyBadChunk
	}
	raw, adv, err := r.peekUntil('\n', 64, false)
	if err == errLineTooLong {
		return 0, errReplyBadChunk
	}
	if err != nil {
		return 0, err
	}
	if len(raw) == 0 || raw[len(raw)-1] != '\r' {
		return 0, errReplyNoCRLF
	}
	n, ok := ParseInt(raw[:len(raw)-1])
	if !ok || n < 0 {
		return 0, errReplyBadChunk
	}
	return n, r.discard(adv)
}

// finishBlob discards the body of a blob header that ReadBlob did not
// read.
func (r *Reader) finishBlob() error {
	if r.blob == noBlob {
		return nil
	}
	n := r.blob
	r.blob = noBlob
	if n == StreamedLen {
		for {
			n, err := r.readChunkHeader()
			if err != nil || n == 0 {
				return err
			}
			if err := r.discardBody(n); err != nil {
				return err
			}
		}
	}
	return r.discardBody(n)
}

// discardBody skips n bytes and the CRLF after them.
func (r *Reader) discardBody(n int64) error {
	for n > 0 {
		m, err := r.br.Discard(int(min(n, 1<<30)))
		n -= int64(m)
		if err != nil {
			return err
		}
	}
	return r.readCRLF()
}

// begin prepares a reply read: it returns the sticky error, or discards a
// pending blob body, or waits for the first byte. The second result tells
// whether an error is to be kept sticky.
func (r *Reader) begin() (sticky bool, err error) {
	if r.err != nil {
		return false, r.err
	}
	if err := r.finishBlob(); err != nil {
		return true, err
	}
	if _, err := r.br.Peek(1); err != nil {
		return false, err
	}
	return false, nil
}

// PeekKind returns the kind of the next reply element without consuming
// it. A pending blob body (see ReadBlob) is discarded first.
func (r *Reader) PeekKind() (Kind, error) {
	if sticky, err := r.begin(); err != nil {
		if sticky {
			err = r.fail(err)
		}
		return 0, err
	}
	p, _ := r.br.Peek(1)
	return Kind(p[0]), nil
}

// ReadHeader reads the first line of the next reply element without
// building a Value: for single-line kinds the whole element, for blobs
// the length (read the body with ReadBlob, or it is discarded by the next
// read), for aggregates the count (the elements are read next, by further
// calls; for KindMap and KindAttribute 2*Len of them; for StreamedLen up
// to a header of KindEnd). A KindAttribute header is returned like any
// other; the element it describes follows its pairs. Header.Line is valid
// until the next call on the Reader. Errors are sticky as for ReadValue.
func (r *Reader) ReadHeader() (Header, error) {
	if sticky, err := r.begin(); err != nil {
		if sticky {
			err = r.fail(err)
		}
		return Header{}, err
	}
	var h Header
	if err := r.readHead(&h, lineHdr); err != nil {
		return Header{}, r.fail(err)
	}
	if h.Kind.isBlob() && h.Len != -1 {
		r.blob = h.Len
	}
	return h, nil
}

// ReadBlob appends the body of the blob (bulk string, blob error, verbatim
// string with its "txt:" prefix, or all chunks of a streamed string) whose
// header ReadHeader just returned to dst and returns the extended slice;
// dst is grown as data arrives, never by the declared length upfront. It
// returns ErrNoBlob if there is no such body to read.
func (r *Reader) ReadBlob(dst []byte) ([]byte, error) {
	if r.err != nil {
		return dst, r.err
	}
	if r.blob == noBlob {
		return dst, ErrNoBlob
	}
	n := r.blob
	r.blob = noBlob
	var err error
	if n != StreamedLen {
		dst, err = r.appendBody(dst, n)
		if err != nil {
			return dst, r.fail(err)
		}
		return dst, nil
	}
	var total int64
	for {
		n, err := r.readChunkHeader()
		if err != nil {
			return dst, r.fail(err)
		}
		if n == 0 {
			return dst, nil
		}
		if total += n; total > r.lim.MaxBulkLen {
			return dst, r.fail(errInvalidBulkLen)
		}
		if dst, err = r.appendBody(dst, n); err != nil {
			return dst, r.fail(err)
		}
	}
}

// appendBody appends n bytes and consumes the CRLF after them.
func (r *Reader) appendBody(dst []byte, n int64) ([]byte, error) {
	if int64(r.br.Buffered()) >= n+2 {
		// Fast path: body and CRLF are buffered.
		p, _ := r.br.Peek(int(n) + 2)
		if p[n] != '\r' || p[n+1] != '\n' {
			return dst, errReplyNoCRLF
		}
		dst = append(dst, p[:n]...)
		return dst, r.discard(int(n) + 2)
	}
	for n > 0 {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, int(min(n, int64(max(cap(dst), 4096)))))
		}
		end := int(min(int64(cap(dst)), int64(len(dst))+n))
		m, err := r.br.Read(dst[len(dst):end])
		dst = dst[:len(dst)+m]
		n -= int64(m)
		if err != nil && n > 0 {
			return dst, err
		}
	}
	return dst, r.readCRLF()
}

// SkipValue reads and discards the next complete reply element, with the
// attributes before it and everything nested in it, without allocating.
func (r *Reader) SkipValue() error {
	if sticky, err := r.begin(); err != nil {
		if sticky {
			err = r.fail(err)
		}
		return err
	}
	if err := r.skipValue(0); err != nil {
		return r.fail(err)
	}
	return nil
}

func (r *Reader) skipValue(depth int) error {
	for {
		var h Header
		if err := r.readHead(&h, lineNone); err != nil {
			return err
		}
		switch {
		case h.Kind == KindEnd:
			return errReplyUnexpectedEnd
		case h.Len == -1:
			return nil
		case h.Kind.isBlob():
			r.blob = h.Len
			if err := r.finishBlob(); err != nil {
				return err
			}
			return nil
		case h.Kind.isAggregate():
			if depth+1 > r.lim.MaxDepth {
				return errReplyTooDeep
			}
			if h.Len == StreamedLen {
				n := 0
				for ; ; n++ {
					p, err := r.br.Peek(1)
					if err != nil {
						return err
					}
					if p[0] == byte(KindEnd) {
						break
					}
					if err := r.skipValue(depth + 1); err != nil {
						return err
					}
				}
				if h.Kind == KindMap && n%2 != 0 {
					return errReplyOddMap
				}
				var end Header
				if err := r.readHead(&end, lineNone); err != nil {
					return err
				}
			} else {
				n := h.Len
				if h.Kind == KindMap || h.Kind == KindAttribute {
					n *= 2
				}
				for ; n > 0; n-- {
					if err := r.skipValue(depth + 1); err != nil {
						return err
					}
				}
			}
			if h.Kind == KindAttribute {
				continue // skip the value it describes too
			}
			return nil
		default:
			return nil
		}
	}
}

// ReadValue reads the next complete reply element, with everything nested
// in it, into a Value. Attributes (RESP3 |) before an element are returned
// in its Attrs. Nesting deeper than Limits.MaxDepth, blobs longer than
// Limits.MaxBulkLen and malformed input give a *ProtocolError.
//
// The Value's byte slices and element slices point into memory the Reader
// reuses: they are valid only until the next call of a Read, Peek, Skip
// or Reset method. Use Value.Clone to keep a Value. In the steady state
// ReadValue allocates nothing. An error returned before the first byte was
// consumed (such as a read timeout) leaves the Reader usable; any other
// error is returned again by every later read until Reset.
func (r *Reader) ReadValue() (Value, error) {
	if sticky, err := r.begin(); err != nil {
		if sticky {
			err = r.fail(err)
		}
		return Value{}, err
	}
	r.resetArena()
	var v Value
	if err := r.readValue(&v, 0); err != nil {
		return Value{}, r.fail(err)
	}
	return v, nil
}

// readValue reads an element at the given nesting depth, with any
// attributes before it, into *v, which must be zero.
func (r *Reader) readValue(v *Value, depth int) error {
	var h Header
	var attrs []Value
	attrBase := len(r.stack)
	stacked := false // more than one attribute: collected on r.stack
	for {
		if err := r.readHead(&h, lineArena); err != nil {
			return err
		}
		if h.Kind != KindAttribute {
			break
		}
		elems, err := r.readElems(&h, depth+1)
		if err != nil {
			return err
		}
		switch {
		case attrs == nil && !stacked:
			attrs = elems
		case !stacked:
			r.stack = append(r.stack, attrs...)
			stacked = true
			fallthrough
		default:
			r.stack = append(r.stack, elems...)
		}
	}
	if err := r.readRest(v, &h, depth); err != nil {
		return err
	}
	if stacked {
		attrs = r.arenaValues(len(r.stack) - attrBase)
		copy(attrs, r.stack[attrBase:])
		r.stack = r.stack[:attrBase]
	}
	if len(attrs) > 0 {
		v.Attrs = attrs
	}
	return nil
}

// readRest completes in *v the element whose header is h.
func (r *Reader) readRest(v *Value, h *Header, depth int) error {
	v.Kind = h.Kind
	switch h.Kind {
	case KindSimpleString, KindError, KindBigNumber:
		v.Str = h.Line
	case KindInt:
		v.Int = h.Int
	case KindDouble:
		v.Float = h.Float
	case KindBool:
		v.Bool = h.Bool
	case KindNull:
	case KindEnd:
		return errReplyUnexpectedEnd
	case KindBulk, KindBlobError, KindVerbatim:
		if h.Len == -1 {
			v.Kind = KindNull
			return nil
		}
		s, err := r.readArenaBlob(h.Len)
		if err != nil {
			return err
		}
		v.Str = s
		if h.Kind == KindVerbatim {
			if len(s) < 4 || s[3] != ':' {
				return errReplyBadVerbatim
			}
			v.Format = verbatimFormat(s[:3])
			v.Str = s[4:]
		}
	default: // aggregates other than attributes
		if h.Len == -1 {
			v.Kind = KindNull
			return nil
		}
		elems, err := r.readElems(h, depth+1)
		if err != nil {
			return err
		}
		v.Elems = elems
	}
	return nil
}

// verbatimFormat returns the format of a verbatim string as a string,
// without allocating for the common ones.
func verbatimFormat(f []byte) string {
	switch string(f) {
	case "txt":
		return "txt"
	case "mkd":
		return "mkd"
	}
	return string(f)
}

// readArenaBlob reads a blob body (or all chunks of a streamed string)
// into the byte arena.
func (r *Reader) readArenaBlob(n int64) ([]byte, error) {
	if n != StreamedLen {
		if n > r.lim.MaxBulkLen {
			return nil, errInvalidBulkLen
		}
		if int64(r.br.Buffered()) >= n+2 {
			// Fast path: body and CRLF are buffered.
			p, _ := r.br.Peek(int(n) + 2)
			if p[n] != '\r' || p[n+1] != '\n' {
				return nil, errReplyNoCRLF
			}
			s := r.arenaBytes(int(n))
			copy(s, p)
			return s, r.discard(int(n) + 2)
		}
		s, err := r.readInto(len(r.data), int(n))
		if err != nil {
			return nil, err
		}
		return s, r.readCRLF()
	}
	s := emptyBytes
	var total int64
	for {
		n, err := r.readChunkHeader()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return s, nil
		}
		if total += n; total > r.lim.MaxBulkLen {
			return nil, errInvalidBulkLen
		}
		if s, err = r.readInto(len(r.data)-len(s), int(n)); err != nil {
			return nil, err
		}
		if err := r.readCRLF(); err != nil {
			return nil, err
		}
	}
}

// minElemSize is the size of the smallest RESP element, "_\r\n".
const minElemSize = 3

// readElems reads the elements of the aggregate whose header is h, at the
// given depth, and returns them in the Value arena.
func (r *Reader) readElems(h *Header, depth int) ([]Value, error) {
	if depth > r.lim.MaxDepth {
		return nil, errReplyTooDeep
	}
	n := h.Len
	if n != StreamedLen && (h.Kind == KindMap || h.Kind == KindAttribute) {
		n *= 2
	}
	if n == 0 {
		return emptyValues, nil
	}
	if n != StreamedLen && n <= int64(r.br.Buffered()/minElemSize) {
		// Fast path: enough bytes for n elements were received, so n
		// Values may be allocated; read each in place. The region never
		// moves: the arena grows by new chunks.
		elems := r.arenaValues(int(n))
		for i := range elems {
			if err := r.readValue(&elems[i], depth); err != nil {
				return nil, err
			}
		}
		return elems, nil
	}
	// Collect on r.stack as elements arrive, then copy to the arena.
	base := len(r.stack)
	for i := int64(0); n == StreamedLen || i < n; i++ {
		if n == StreamedLen {
			p, err := r.br.Peek(1)
			if err != nil {
				return nil, err
			}
			if p[0] == byte(KindEnd) {
				var end Header
				if err := r.readHead(&end, lineNone); err != nil {
					return nil, err
				}
				if h.Kind == KindMap && (len(r.stack)-base)%2 != 0 {
					return nil, errReplyOddMap
				}
				break
			}
		}
		var v Value
		if err := r.readValue(&v, depth); err != nil {
			return nil, err
		}
		r.stack = append(r.stack, v)
	}
	if len(r.stack) == base {
		return emptyValues, nil
	}
	elems := r.arenaValues(len(r.stack) - base)
	copy(elems, r.stack[base:])
	r.stack = r.stack[:base]
	return elems, nil
}
