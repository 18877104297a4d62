package tuple

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"strings"
)

// Unpack decodes a packed tuple. The result never aliases b: byte strings
// are copied out of it. An empty input gives an empty (non-nil) Tuple; an
// empty nested tuple decodes to an empty non-nil Tuple too.
//
// Unpack never panics. Malformed input (truncated elements, unterminated
// strings or nested tuples, unknown type codes such as 0xff, big-integer
// lengths running past the end) gives a *DecodeError, which matches
// ErrMalformed under errors.Is. See the package documentation for the types
// elements decode to and the non-canonical integer forms accepted.
//
// Unpack keeps no state between calls and is safe for concurrent use.
func Unpack(b []byte) (Tuple, error) {
	t, _, err := unpack(b)
	return t, err
}

// unpack is Unpack that also reports whether b is in the canonical form that
// Pack writes (only integers have other forms). Decoding is iterative, so
// deeply nested input cannot exhaust the stack.
func unpack(b []byte) (t Tuple, canonical bool, err error) {
	canonical = true
	cur := Tuple{}
	var outer []Tuple // enclosing tuples of cur
	var opened []int  // offsets of the 0x05 codes that opened them
	i := 0
	for i < len(b) {
		code := b[i]
		switch code {
		case nilCode:
			if len(outer) == 0 {
				cur = append(cur, nil)
				i++
				continue
			}
			if i+1 < len(b) && b[i+1] == escapeByte {
				cur = append(cur, nil)
				i += 2
				continue
			}
			// End of a nested tuple.
			parent := outer[len(outer)-1]
			outer = outer[:len(outer)-1]
			opened = opened[:len(opened)-1]
			cur = append(parent, cur)
			i++
			continue
		case nestedCode:
			outer = append(outer, cur)
			opened = append(opened, i)
			cur = Tuple{}
			i++
			continue
		}
		el, n, canon, derr := decodeElement(b[i:])
		if derr != nil {
			derr.Offset += i
			return nil, false, derr
		}
		canonical = canonical && canon
		cur = append(cur, el)
		i += n
	}
	if len(outer) > 0 {
		return nil, false, &DecodeError{Offset: opened[len(opened)-1], Code: nestedCode, Err: ErrTruncated}
	}
	return cur, canonical, nil
}

// decodeElement decodes the element, other than null or a nested tuple,
// starting at b[0]. It returns the element, the number of bytes it used and
// whether its encoding is canonical; a returned error has an offset relative
// to b.
func decodeElement(b []byte) (el TupleElement, n int, canonical bool, err *DecodeError) {
	code := b[0]
	need := func(size int) bool { return len(b) >= 1+size }

	switch {
	case code == bytesCode || code == stringCode:
		end, escapes, ok := findTerminator(b, 1)
		if !ok {
			return nil, 0, false, truncatedError(code)
		}
		if code == bytesCode {
			return unescapeBytes(b[1:end], escapes), end + 1, true, nil
		}
		return unescapeString(b[1:end], escapes), end + 1, true, nil

	case code == intZeroCode:
		return int64(0), 1, true, nil

	case code > intZeroCode && code < posBigIntCode:
		size := int(code - intZeroCode)
		if !need(size) {
			return nil, 0, false, truncatedError(code)
		}
		var u uint64
		for _, c := range b[1 : 1+size] {
			u = u<<8 | uint64(c)
		}
		return intFromUint64(false, u), 1 + size, b[1] != 0x00, nil

	case code > negBigIntCode && code < intZeroCode:
		size := int(intZeroCode - code)
		if !need(size) {
			return nil, 0, false, truncatedError(code)
		}
		var m uint64 // magnitude: one's complement of the stored bytes
		for _, c := range b[1 : 1+size] {
			m = m<<8 | uint64(^c)
		}
		return intFromUint64(true, m), 1 + size, b[1] != 0xff, nil

	case code == posBigIntCode || code == negBigIntCode:
		if !need(1) {
			return nil, 0, false, truncatedError(code)
		}
		neg := code == negBigIntCode
		size := int(b[1])
		if neg {
			size ^= 0xff
		}
		if len(b) < 2+size {
			return nil, 0, false, truncatedError(code)
		}
		stored := b[2 : 2+size]
		canonical := size > 8
		if canonical {
			if neg {
				canonical = stored[0] != 0xff
			} else {
				canonical = stored[0] != 0x00
			}
		}
		if !neg {
			return intFromMagnitude(false, stored), 2 + size, canonical, nil
		}
		mag := make([]byte, size)
		for j, c := range stored {
			mag[j] = ^c
		}
		return intFromMagnitude(true, mag), 2 + size, canonical, nil

	case code == floatCode:
		if !need(4) {
			return nil, 0, false, truncatedError(code)
		}
		u := decodeFloat32Bits(binary.BigEndian.Uint32(b[1:]))
		return math.Float32frombits(u), 5, true, nil

	case code == doubleCode:
		if !need(8) {
			return nil, 0, false, truncatedError(code)
		}
		u := decodeFloat64Bits(binary.BigEndian.Uint64(b[1:]))
		return math.Float64frombits(u), 9, true, nil

	case code == falseCode:
		return false, 1, true, nil

	case code == trueCode:
		return true, 1, true, nil

	case code == uuidCode:
		if !need(16) {
			return nil, 0, false, truncatedError(code)
		}
		var u UUID
		copy(u[:], b[1:17])
		return u, 17, true, nil

	case code == versionstampCode:
		if !need(versionstampLength) {
			return nil, 0, false, truncatedError(code)
		}
		var v Versionstamp
		copy(v.TransactionVersion[:], b[1:11])
		v.UserVersion = binary.BigEndian.Uint16(b[11:13])
		return v, 1 + versionstampLength, true, nil
	}
	return nil, 0, false, &DecodeError{Code: code, Err: ErrUnknownTypeCode}
}

// truncatedError reports an element cut short, at offset 0 of the slice
// given to decodeElement.
func truncatedError(code byte) *DecodeError {
	return &DecodeError{Code: code, Err: ErrTruncated}
}

// findTerminator finds the 0x00 ending the escaped string that starts at
// b[start]: the first 0x00 not followed by 0xff. It returns the terminator's
// index and the number of escaped 0x00 bytes before it.
func findTerminator(b []byte, start int) (end, escapes int, ok bool) {
	i := start
	for {
		j := bytes.IndexByte(b[i:], 0x00)
		if j < 0 {
			return 0, 0, false
		}
		i += j
		if i+1 < len(b) && b[i+1] == escapeByte {
			escapes++
			i += 2
			continue
		}
		return i, escapes, true
	}
}

// unescapeBytes returns a new slice holding s with each 0x00 0xff replaced by
// 0x00; escapes is the number of such pairs.
func unescapeBytes(s []byte, escapes int) []byte {
	out := make([]byte, 0, len(s)-escapes)
	for escapes > 0 {
		i := bytes.IndexByte(s, 0x00)
		out = append(out, s[:i+1]...)
		s = s[i+2:]
		escapes--
	}
	return append(out, s...)
}

// unescapeString is unescapeBytes returning a string, with one allocation.
func unescapeString(s []byte, escapes int) string {
	if escapes == 0 {
		return string(s)
	}
	var sb strings.Builder
	sb.Grow(len(s) - escapes)
	for escapes > 0 {
		i := bytes.IndexByte(s, 0x00)
		sb.Write(s[:i+1])
		s = s[i+2:]
		escapes--
	}
	sb.Write(s)
	return sb.String()
}

// intFromUint64 returns the integer with sign neg and magnitude m as int64
// if it fits, else as uint64 if it fits, else as *big.Int.
func intFromUint64(neg bool, m uint64) TupleElement {
	switch {
	case !neg && m <= math.MaxInt64:
		return int64(m)
	case !neg:
		return m
	case m <= 1<<63:
		return int64(-m) // two's complement negation; -2^63 wraps to MinInt64
	}
	x := new(big.Int).SetUint64(m)
	return x.Neg(x)
}

// intFromMagnitude is intFromUint64 for a big-endian magnitude of any
// length, possibly with leading zero bytes.
func intFromMagnitude(neg bool, mag []byte) TupleElement {
	for len(mag) > 0 && mag[0] == 0 {
		mag = mag[1:]
	}
	if len(mag) <= 8 {
		var m uint64
		for _, c := range mag {
			m = m<<8 | uint64(c)
		}
		return intFromUint64(neg, m)
	}
	x := new(big.Int).SetBytes(mag)
	if neg {
		x.Neg(x)
	}
	return x
}
