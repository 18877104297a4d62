package tuple

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/bits"
)

// Type codes of the FoundationDB tuple layer (design/tuple.md).
const (
	nilCode          = 0x00
	bytesCode        = 0x01
	stringCode       = 0x02
	nestedCode       = 0x05
	negBigIntCode    = 0x0b // negative integer of 9..255 bytes
	intZeroCode      = 0x14 // 0x0c..0x13 negative, 0x15..0x1c positive
	posBigIntCode    = 0x1d // positive integer of 9..255 bytes
	floatCode        = 0x20
	doubleCode       = 0x21
	falseCode        = 0x26
	trueCode         = 0x27
	uuidCode         = 0x30
	versionstampCode = 0x33

	escapeByte = 0xff // follows 0x00 inside strings, and null inside nested tuples

	maxBigIntBytes = 255
)

// Pack returns the FoundationDB tuple encoding of t in a newly allocated
// slice.
//
// Like the FoundationDB Go binding, Pack panics if t holds an element of an
// unsupported type (ErrUnsupportedType), an integer whose magnitude needs
// more than 255 bytes (ErrTooLarge), or an incomplete versionstamp
// (ErrIncompleteVersionstamp). The panic value is an error wrapping the
// sentinel. Use PackErr where the tuple's contents are not under the
// program's control.
func (t Tuple) Pack() []byte {
	b, err := t.PackErr()
	if err != nil {
		panic(err)
	}
	return b
}

// PackErr is Pack returning an error (wrapping ErrUnsupportedType,
// ErrTooLarge or ErrIncompleteVersionstamp) instead of panicking.
func (t Tuple) PackErr() ([]byte, error) {
	e := encoder{buf: make([]byte, 0, sizeHint(t)), vsPos: -1}
	if err := e.tuple(t, false); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// PackWithVersionstamp returns prefix followed by the encoding of t, followed
// by the 4-byte little-endian offset, counted from the start of the result,
// of the 10-byte placeholder of the one incomplete versionstamp in t: the
// form a set-versionstamped-key operation expects. t (including its nested
// tuples) must hold exactly one incomplete versionstamp; otherwise the error
// wraps ErrNoIncompleteVersionstamp or ErrMultipleIncompleteVersionstamps.
// Other encoding problems are returned as errors too, never as panics.
// prefix is copied, not retained; the result is newly allocated.
//
// Unlike the FoundationDB Go binding, there is no API-version switch: the
// offset is always 4 bytes (the binding's behaviour from API version 520).
func (t Tuple) PackWithVersionstamp(prefix []byte) ([]byte, error) {
	has, err := t.HasIncompleteVersionstamp()
	if err != nil {
		return nil, err
	}
	if !has {
		return nil, ErrNoIncompleteVersionstamp
	}
	e := encoder{buf: make([]byte, 0, len(prefix)+sizeHint(t)+4), vsPos: -1, incomplete: oneIncomplete}
	e.buf = append(e.buf, prefix...)
	if err := e.tuple(t, false); err != nil {
		return nil, err
	}
	if uint64(e.vsPos) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: versionstamp offset %d does not fit in 32 bits", ErrTooLarge, e.vsPos)
	}
	return binary.LittleEndian.AppendUint32(e.buf, uint32(e.vsPos)), nil
}

// HasIncompleteVersionstamp reports whether t, or a tuple nested in it, holds
// an incomplete versionstamp. If it holds more than one, it returns true and
// an error wrapping ErrMultipleIncompleteVersionstamps.
func (t Tuple) HasIncompleteVersionstamp() (bool, error) {
	n := t.countIncompleteVersionstamps()
	if n > 1 {
		return true, fmt.Errorf("%w (found %d)", ErrMultipleIncompleteVersionstamps, n)
	}
	return n == 1, nil
}

func (t Tuple) countIncompleteVersionstamps() int {
	n := 0
	for _, el := range t {
		switch el := el.(type) {
		case Versionstamp:
			if el.incomplete() {
				n++
			}
		case Tuple:
			n += el.countIncompleteVersionstamps()
		}
	}
	return n
}

// Range returns the keys bounding every tuple that has t as a strict prefix:
// begin is the packed t followed by 0x00 and end the packed t followed by
// 0xff, for the half-open range [begin, end). The packed t itself lies
// outside the range. Both slices are newly allocated and do not share
// memory. Range panics in the same cases as Pack.
func (t Tuple) Range() (begin, end []byte) {
	p := t.Pack()
	end = make([]byte, len(p)+1)
	copy(end, p)
	end[len(p)] = 0xff
	return append(p, 0x00), end
}

// encoder appends tuple encodings to buf.
type encoder struct {
	buf []byte
	// incomplete says what to do with incomplete versionstamps.
	incomplete incompleteMode
	// vsPos is the offset in buf of the (first) incomplete versionstamp's
	// placeholder, or -1.
	vsPos int
}

// incompleteMode says how an encoder treats incomplete versionstamps.
type incompleteMode int

const (
	rejectIncomplete incompleteMode = iota // Pack: an error
	oneIncomplete                          // PackWithVersionstamp: at most one
	anyIncomplete                          // tests: re-packing what Unpack returned
)

func (e *encoder) tuple(t Tuple, nested bool) error {
	if nested {
		e.buf = append(e.buf, nestedCode)
	}
	for i, el := range t {
		if err := e.element(el, nested); err != nil {
			return atIndex(i, err)
		}
	}
	if nested {
		e.buf = append(e.buf, nilCode)
	}
	return nil
}

// elementError is an encoding error with the index path of the element that
// caused it (outermost first).
type elementError struct {
	path []int
	err  error
}

func (e *elementError) Error() string { return fmt.Sprintf("%v (element %v)", e.err, e.path) }
func (e *elementError) Unwrap() error { return e.err }

// atIndex adds index i in front of err's element path.
func atIndex(i int, err error) error {
	if ee, ok := err.(*elementError); ok {
		ee.path = append([]int{i}, ee.path...)
		return ee
	}
	return &elementError{path: []int{i}, err: err}
}

// sizeHint estimates the packed size of t, to allocate once in the usual
// case.
func sizeHint(t Tuple) int {
	n := 0
	for _, el := range t {
		switch v := el.(type) {
		case []byte:
			n += len(v) + 2
		case string:
			n += len(v) + 2
		case Tuple:
			n += sizeHint(v) + 2
		case *big.Int:
			if v != nil {
				n += v.BitLen()/8 + 3
			}
		case UUID:
			n += 17
		case Versionstamp:
			n += 13
		default:
			n += 9
		}
	}
	return n
}

func (e *encoder) element(el TupleElement, nested bool) error {
	switch v := el.(type) {
	case nil:
		e.buf = append(e.buf, nilCode)
		if nested {
			e.buf = append(e.buf, escapeByte)
		}
	case []byte:
		e.bytes(bytesCode, v)
	case string:
		e.string(v)
	case Tuple:
		return e.tuple(v, true)
	case int:
		e.int(int64(v))
	case int8:
		e.int(int64(v))
	case int16:
		e.int(int64(v))
	case int32:
		e.int(int64(v))
	case int64:
		e.int(v)
	case uint:
		e.uint(uint64(v))
	case uint8:
		e.uint(uint64(v))
	case uint16:
		e.uint(uint64(v))
	case uint32:
		e.uint(uint64(v))
	case uint64:
		e.uint(v)
	case uintptr:
		e.uint(uint64(v))
	case *big.Int:
		if v == nil {
			return fmt.Errorf("%w: nil *big.Int", ErrUnsupportedType)
		}
		return e.bigInt(v)
	case big.Int:
		return e.bigInt(&v)
	case float32:
		e.buf = append(e.buf, floatCode)
		e.buf = binary.BigEndian.AppendUint32(e.buf, encodeFloat32Bits(math.Float32bits(v)))
	case float64:
		e.buf = append(e.buf, doubleCode)
		e.buf = binary.BigEndian.AppendUint64(e.buf, encodeFloat64Bits(math.Float64bits(v)))
	case bool:
		if v {
			e.buf = append(e.buf, trueCode)
		} else {
			e.buf = append(e.buf, falseCode)
		}
	case UUID:
		e.buf = append(e.buf, uuidCode)
		e.buf = append(e.buf, v[:]...)
	case Versionstamp:
		e.buf = append(e.buf, versionstampCode)
		if v.incomplete() {
			switch {
			case e.incomplete == rejectIncomplete:
				return ErrIncompleteVersionstamp
			case e.vsPos < 0:
				e.vsPos = len(e.buf)
			case e.incomplete == oneIncomplete:
				return ErrMultipleIncompleteVersionstamps
			}
		}
		e.buf = append(e.buf, v.TransactionVersion[:]...)
		e.buf = binary.BigEndian.AppendUint16(e.buf, v.UserVersion)
	default:
		return fmt.Errorf("%w: %T", ErrUnsupportedType, el)
	}
	return nil
}

// bytes appends code, b with each 0x00 escaped as 0x00 0xff, and a 0x00
// terminator.
func (e *encoder) bytes(code byte, b []byte) {
	e.buf = append(e.buf, code)
	for {
		i := bytes.IndexByte(b, 0x00)
		if i < 0 {
			break
		}
		e.buf = append(e.buf, b[:i+1]...)
		e.buf = append(e.buf, escapeByte)
		b = b[i+1:]
	}
	e.buf = append(e.buf, b...)
	e.buf = append(e.buf, 0x00)
}

// string is bytes for a string, without converting it to a []byte.
func (e *encoder) string(s string) {
	e.buf = append(e.buf, stringCode)
	for {
		i := indexByteString(s, 0x00)
		if i < 0 {
			break
		}
		e.buf = append(e.buf, s[:i+1]...)
		e.buf = append(e.buf, escapeByte)
		s = s[i+1:]
	}
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, 0x00)
}

func indexByteString(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// uint appends a non-negative integer: 0x14 for zero, else 0x14+n and the n
// big-endian bytes of its minimal form.
func (e *encoder) uint(u uint64) {
	n := (bits.Len64(u) + 7) / 8
	e.buf = append(e.buf, byte(intZeroCode+n))
	for i := n - 1; i >= 0; i-- {
		e.buf = append(e.buf, byte(u>>(8*i)))
	}
}

// int appends an integer; a negative one as 0x14-n and the one's complement
// of the n bytes of its magnitude.
func (e *encoder) int(i int64) {
	if i >= 0 {
		e.uint(uint64(i))
		return
	}
	m := -uint64(i) // magnitude, correct for math.MinInt64 too
	n := (bits.Len64(m) + 7) / 8
	c := ^m
	e.buf = append(e.buf, byte(intZeroCode-n))
	for j := n - 1; j >= 0; j-- {
		e.buf = append(e.buf, byte(c>>(8*j)))
	}
}

// bigInt appends an arbitrary-precision integer, using the 64-bit forms
// where the magnitude fits in 8 bytes and 0x0b/0x1d with a length byte
// otherwise.
func (e *encoder) bigInt(x *big.Int) error {
	if x.IsInt64() {
		e.int(x.Int64())
		return nil
	}
	if x.IsUint64() {
		e.uint(x.Uint64())
		return nil
	}
	n := (x.BitLen() + 7) / 8
	if n > maxBigIntBytes {
		return fmt.Errorf("%w: integer magnitude of %d bytes exceeds %d", ErrTooLarge, n, maxBigIntBytes)
	}
	var buf [maxBigIntBytes]byte
	mag := x.FillBytes(buf[:n]) // big-endian magnitude, no leading zeros
	if x.Sign() > 0 {
		// Not a uint64, so n >= 9.
		e.buf = append(e.buf, posBigIntCode, byte(n))
		e.buf = append(e.buf, mag...)
		return nil
	}
	if n <= 8 {
		e.buf = append(e.buf, byte(intZeroCode-n))
	} else {
		e.buf = append(e.buf, negBigIntCode, byte(n)^0xff)
	}
	for _, c := range mag {
		e.buf = append(e.buf, ^c)
	}
	return nil
}

// encodeFloat32Bits maps IEEE 754 bits to bits whose unsigned order is the
// IEEE total order: flip every bit of a negative number, only the sign bit
// of a positive one.
func encodeFloat32Bits(u uint32) uint32 {
	if u&(1<<31) != 0 {
		return ^u
	}
	return u ^ (1 << 31)
}

func decodeFloat32Bits(u uint32) uint32 {
	if u&(1<<31) != 0 {
		return u ^ (1 << 31)
	}
	return ^u
}

// encodeFloat64Bits is encodeFloat32Bits for 64-bit floats.
func encodeFloat64Bits(u uint64) uint64 {
	if u&(1<<63) != 0 {
		return ^u
	}
	return u ^ (1 << 63)
}

func decodeFloat64Bits(u uint64) uint64 {
	if u&(1<<63) != 0 {
		return u ^ (1 << 63)
	}
	return ^u
}
