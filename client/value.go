package client

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/caskade/caskade/resp"
)

// Kind is the RESP type of a Value (resp.KindBulk, resp.KindInt, ...).
type Kind = resp.Kind

// Value is one reply from the server, of any RESP2 or RESP3 type. It owns
// its memory: nothing in it is shared with the connection, so it may be kept
// and passed between goroutines freely; slices returned by its accessors
// are part of it (do not modify them if the Value is shared).
//
// The accessors convert as Redis clients usually do and return Nil for a
// null, the *Error for an error element (inside an EXEC or other array),
// and an error wrapping ErrUnexpectedReply for a type they cannot convert.
// The zero Value is a null.
type Value struct {
	kind   Kind
	str    []byte  // strings, errors, big numbers, verbatim text
	num    int64   // KindInt; KindBool (0/1); KindDouble (float64 bits)
	elems  []Value // aggregates; maps alternate keys and values
	format string  // KindVerbatim
}

var (
	emptyBytes = []byte{}
	okBytes    = []byte("OK")
	queuedStr  = "QUEUED"
)

// Kind returns the value's RESP type; every null (RESP3 _, RESP2 $-1 and
// *-1) is resp.KindNull.
func (v Value) Kind() Kind {
	if v.kind == 0 {
		return resp.KindNull
	}
	return v.kind
}

// IsNil reports whether v is a null.
func (v Value) IsNil() bool { return v.kind == 0 || v.kind == resp.KindNull }

// Err returns the *Error of an error element, or nil.
func (v Value) Err() error {
	if v.kind == resp.KindError || v.kind == resp.KindBlobError {
		return parseError(string(v.str))
	}
	return nil
}

// IsOK reports whether v is the simple string OK.
func (v Value) IsOK() bool {
	return v.kind == resp.KindSimpleString && string(v.str) == "OK"
}

func (v Value) typeError(want string) error {
	if v.IsNil() {
		return Nil
	}
	if err := v.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s reply, want %s", ErrUnexpectedReply, v.Kind(), want)
}

// Bytes returns the bytes of a string-like value (bulk, simple, verbatim
// text, big number digits); an integer or double is formatted in decimal.
// The slice is part of v.
func (v Value) Bytes() ([]byte, error) {
	switch v.kind {
	case resp.KindSimpleString:
		if string(v.str) == "OK" {
			// Every +OK shares okBytes: the caller gets bytes of its own.
			return []byte("OK"), nil
		}
		return v.str, nil
	case resp.KindBulk, resp.KindVerbatim, resp.KindBigNumber:
		return v.str, nil
	case resp.KindInt:
		return strconv.AppendInt(nil, v.num, 10), nil
	case resp.KindDouble:
		return strconv.AppendFloat(nil, math.Float64frombits(uint64(v.num)), 'g', -1, 64), nil
	}
	return nil, v.typeError("string")
}

// Str is Bytes as a string.
func (v Value) Str() (string, error) {
	b, err := v.Bytes()
	return string(b), err
}

// Int returns an integer value, or parses a string value in decimal; a
// boolean is 0 or 1.
func (v Value) Int() (int64, error) {
	switch v.kind {
	case resp.KindInt, resp.KindBool:
		return v.num, nil
	case resp.KindBulk, resp.KindSimpleString, resp.KindBigNumber:
		n, err := strconv.ParseInt(string(v.str), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q is not an integer", ErrUnexpectedReply, v.str)
		}
		return n, nil
	case resp.KindDouble:
		f := math.Float64frombits(uint64(v.num))
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return int64(f), nil
		}
	}
	return 0, v.typeError("integer")
}

// Float returns a double value, or an integer, or parses a string value
// (Redis's "inf", "-inf" and "nan" included).
func (v Value) Float() (float64, error) {
	switch v.kind {
	case resp.KindDouble:
		return math.Float64frombits(uint64(v.num)), nil
	case resp.KindInt:
		return float64(v.num), nil
	case resp.KindBulk, resp.KindSimpleString, resp.KindBigNumber:
		f, err := strconv.ParseFloat(string(v.str), 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q is not a number", ErrUnexpectedReply, v.str)
		}
		return f, nil
	}
	return 0, v.typeError("number")
}

// Bool returns a boolean value; an integer is true unless 0, and the simple
// string OK is true.
func (v Value) Bool() (bool, error) {
	switch v.kind {
	case resp.KindBool, resp.KindInt:
		return v.num != 0, nil
	case resp.KindSimpleString:
		if string(v.str) == "OK" {
			return true, nil
		}
	}
	return false, v.typeError("boolean")
}

// Array returns the elements of an array, set or push value, or of a map
// (keys and values alternating). The slice is part of v.
func (v Value) Array() ([]Value, error) {
	switch v.kind {
	case resp.KindArray, resp.KindSet, resp.KindPush, resp.KindMap:
		return v.elems, nil
	}
	return nil, v.typeError("array")
}

// Map returns a map value, or an array of alternating keys and values (as
// RESP2 sends maps), keyed by the keys' string form. Later duplicates win.
func (v Value) Map() (map[string]Value, error) {
	switch v.kind {
	case resp.KindMap, resp.KindArray:
		if len(v.elems)%2 != 0 {
			return nil, fmt.Errorf("%w: array of %d elements is not a map", ErrUnexpectedReply, len(v.elems))
		}
		m := make(map[string]Value, len(v.elems)/2)
		for i := 0; i < len(v.elems); i += 2 {
			k, err := v.elems[i].Str()
			if err != nil {
				return nil, err
			}
			m[k] = v.elems[i+1]
		}
		return m, nil
	}
	return nil, v.typeError("map")
}

// Format returns the format of a verbatim string, such as "txt".
func (v Value) Format() string { return v.format }

// String formats v for people, as redis-cli does roughly.
func (v Value) String() string {
	var b strings.Builder
	v.format1(&b)
	return b.String()
}

func (v Value) format1(b *strings.Builder) {
	switch v.Kind() {
	case resp.KindNull:
		b.WriteString("(nil)")
	case resp.KindInt:
		b.WriteString(strconv.FormatInt(v.num, 10))
	case resp.KindBool:
		b.WriteString(strconv.FormatBool(v.num != 0))
	case resp.KindDouble:
		b.WriteString(strconv.FormatFloat(math.Float64frombits(uint64(v.num)), 'g', -1, 64))
	case resp.KindError, resp.KindBlobError:
		b.WriteString("(error) ")
		b.Write(v.str)
	case resp.KindBulk, resp.KindVerbatim:
		b.WriteString(strconv.Quote(string(v.str)))
	case resp.KindSimpleString, resp.KindBigNumber:
		b.Write(v.str)
	default:
		b.WriteByte('[')
		for i, e := range v.elems {
			if i > 0 {
				b.WriteByte(' ')
			}
			e.format1(b)
		}
		b.WriteByte(']')
	}
}

// own converts a Value read by a resp.Reader (memory the Reader reuses) into
// a Value that owns its memory, with at most two allocations. Attributes
// are dropped.
func own(rv resp.Value) Value {
	nb, nv := ownSize(rv)
	o := owner{}
	if nb > 0 {
		o.bytes = make([]byte, 0, nb)
	}
	if nv > 0 {
		o.vals = make([]Value, 0, nv)
	}
	return o.conv(rv)
}

func ownSize(v resp.Value) (nb, nv int) {
	nb = len(v.Str)
	nv = len(v.Elems)
	for _, e := range v.Elems {
		b, n := ownSize(e)
		nb += b
		nv += n
	}
	return nb, nv
}

type owner struct {
	bytes []byte
	vals  []Value
}

func (o *owner) conv(rv resp.Value) Value {
	v := Value{kind: rv.Kind, format: rv.Format}
	switch rv.Kind {
	case resp.KindInt:
		v.num = rv.Int
	case resp.KindBool:
		if rv.Bool {
			v.num = 1
		}
	case resp.KindDouble:
		v.num = int64(math.Float64bits(rv.Float))
	case resp.KindArray, resp.KindSet, resp.KindPush, resp.KindMap:
		n := len(o.vals)
		o.vals = o.vals[:n+len(rv.Elems)]
		v.elems = o.vals[n : n+len(rv.Elems) : n+len(rv.Elems)]
		for i, e := range rv.Elems {
			v.elems[i] = o.conv(e)
		}
	case resp.KindNull:
	default:
		if len(rv.Str) == 0 {
			v.str = emptyBytes
		} else {
			n := len(o.bytes)
			o.bytes = append(o.bytes, rv.Str...)
			v.str = o.bytes[n:len(o.bytes):len(o.bytes)]
		}
	}
	return v
}

// Constructors used by the reply reader's fast paths.

func bulkValue(b []byte) Value   { return Value{kind: resp.KindBulk, str: b} }
func intValue(n int64) Value     { return Value{kind: resp.KindInt, num: n} }
func simpleValue(b []byte) Value { return Value{kind: resp.KindSimpleString, str: b} }

func floatBits(f float64) uint64 { return math.Float64bits(f) }
