package tuple

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// unhex decodes a hex string, ignoring spaces.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// packAny packs t allowing any number of incomplete versionstamps, so that
// whatever Unpack returns can be packed again.
func packAny(t testing.TB, tup Tuple) []byte {
	t.Helper()
	e := encoder{vsPos: -1, incomplete: anyIncomplete}
	if err := e.tuple(tup, false); err != nil {
		t.Fatalf("packing %v: %v", tup, err)
	}
	return e.buf
}

// bigOf returns the value of an integer element, and whether el is one.
func bigOf(el TupleElement) (*big.Int, bool) {
	switch v := el.(type) {
	case int:
		return big.NewInt(int64(v)), true
	case int8:
		return big.NewInt(int64(v)), true
	case int16:
		return big.NewInt(int64(v)), true
	case int32:
		return big.NewInt(int64(v)), true
	case int64:
		return big.NewInt(v), true
	case uint:
		return new(big.Int).SetUint64(uint64(v)), true
	case uint8:
		return new(big.Int).SetUint64(uint64(v)), true
	case uint16:
		return new(big.Int).SetUint64(uint64(v)), true
	case uint32:
		return new(big.Int).SetUint64(uint64(v)), true
	case uint64:
		return new(big.Int).SetUint64(v), true
	case uintptr:
		return new(big.Int).SetUint64(uint64(v)), true
	case *big.Int:
		return new(big.Int).Set(v), true
	case big.Int:
		return new(big.Int).Set(&v), true
	}
	return nil, false
}

// normalize returns the element Unpack should give for el: integers as
// int64, uint64 or *big.Int by value, nested tuples normalized, nil byte
// slices as empty ones.
func normalize(el TupleElement) TupleElement {
	if x, ok := bigOf(el); ok {
		switch {
		case x.IsInt64():
			return x.Int64()
		case x.IsUint64():
			return x.Uint64()
		}
		return x
	}
	switch v := el.(type) {
	case Tuple:
		out := Tuple{}
		for _, e := range v {
			out = append(out, normalize(e))
		}
		return out
	case []byte:
		if v == nil {
			return []byte{}
		}
	}
	return el
}

// normalizeTuple is normalize for a whole tuple.
func normalizeTuple(t Tuple) Tuple { return normalize(t).(Tuple) }

// equalElem reports whether a and b have the same Go type and value; floats
// compare by bits, so NaNs equal themselves and -0 differs from +0.
func equalElem(a, b TupleElement) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	switch a := a.(type) {
	case []byte:
		return bytes.Equal(a, b.([]byte))
	case *big.Int:
		return a.Cmp(b.(*big.Int)) == 0
	case float32:
		return math.Float32bits(a) == math.Float32bits(b.(float32))
	case float64:
		return math.Float64bits(a) == math.Float64bits(b.(float64))
	case Tuple:
		return equalTuple(a, b.(Tuple))
	}
	return a == b
}

func equalTuple(a, b Tuple) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalElem(a[i], b[i]) {
			return false
		}
	}
	return true
}

// --- A model of tuple order, written from the rules, not from the encoding.

// kindRank orders element kinds as their type codes do.
func kindRank(el TupleElement) int {
	if _, ok := bigOf(el); ok {
		return 0x14
	}
	switch v := el.(type) {
	case nil:
		return 0x00
	case []byte:
		return 0x01
	case string:
		return 0x02
	case Tuple:
		return 0x05
	case float32:
		return 0x20
	case float64:
		return 0x21
	case bool:
		if v {
			return 0x27
		}
		return 0x26
	case UUID:
		return 0x30
	case Versionstamp:
		return 0x33
	}
	panic(fmt.Sprintf("kindRank: unsupported %T", el))
}

// compareTuples is the semantic tuple order: element by element, a proper
// prefix first.
func compareTuples(a, b Tuple) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareElems(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func compareElems(a, b TupleElement) int {
	if c := cmp.Compare(kindRank(a), kindRank(b)); c != 0 {
		return c
	}
	if x, ok := bigOf(a); ok {
		y, _ := bigOf(b)
		return x.Cmp(y)
	}
	switch a := a.(type) {
	case nil, bool:
		return 0
	case []byte:
		return bytes.Compare(a, b.([]byte))
	case string:
		return strings.Compare(a, b.(string))
	case Tuple:
		return compareTuples(a, b.(Tuple))
	case float32:
		return compareFloat(a, b.(float32), func(f float32) (bool, uint64) {
			u := math.Float32bits(f)
			return u>>31 != 0, uint64(u & (1<<23 - 1))
		})
	case float64:
		return compareFloat(a, b.(float64), func(f float64) (bool, uint64) {
			u := math.Float64bits(f)
			return u>>63 != 0, u & (1<<52 - 1)
		})
	case UUID:
		u := b.(UUID)
		return bytes.Compare(a[:], u[:])
	case Versionstamp:
		v := b.(Versionstamp)
		if c := bytes.Compare(a.TransactionVersion[:], v.TransactionVersion[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.UserVersion, v.UserVersion)
	}
	panic(fmt.Sprintf("compareElems: unsupported %T", a))
}

// compareFloat is the IEEE 754 total order: negative NaNs (larger payload
// first), -Inf, negative numbers, -0, +0, positive numbers, +Inf, positive
// NaNs (larger payload last). signPayload returns the sign bit and the
// significand bits.
func compareFloat[F float32 | float64](a, b F, signPayload func(F) (bool, uint64)) int {
	aNaN, bNaN := a != a, b != b
	aNeg, aPay := signPayload(a)
	bNeg, bPay := signPayload(b)
	rank := func(nan, neg bool) int {
		switch {
		case nan && neg:
			return 0
		case nan:
			return 2
		}
		return 1
	}
	if c := cmp.Compare(rank(aNaN, aNeg), rank(bNaN, bNeg)); c != 0 {
		return c
	}
	if aNaN { // both NaN of the same sign
		if aNeg {
			return cmp.Compare(bPay, aPay)
		}
		return cmp.Compare(aPay, bPay)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case aNeg && !bNeg: // -0 < +0
		return -1
	case !aNeg && bNeg:
		return 1
	}
	return 0
}

// --- Random tuples.

// gen makes random tuples biased towards the values where encodings have
// edges: zero bytes, 0xff bytes, integer size boundaries, float specials.
type gen struct {
	r *rand.Rand
}

func (g gen) tuple(maxLen, depth int) Tuple {
	n := g.r.IntN(maxLen + 1)
	t := make(Tuple, n)
	for i := range t {
		t[i] = g.element(depth)
	}
	return t
}

var (
	byteAlphabet   = []byte{0x00, 0x00, 0x01, 0x02, 0x7f, 0x80, 0xfe, 0xff, 0xff, 'a', 'b'}
	stringAlphabet = []string{"\x00", "\x00", "\x01", "a", "b", "\xff", "\u00e9", "\u4e2d", "\U0001F525", "\x00\xff"}
)

func (g gen) bytes() []byte {
	n := g.r.IntN(6)
	if g.r.IntN(8) == 0 {
		n = g.r.IntN(40)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byteAlphabet[g.r.IntN(len(byteAlphabet))]
	}
	return b
}

func (g gen) string() string {
	var sb strings.Builder
	for n := g.r.IntN(5); n > 0; n-- {
		sb.WriteString(stringAlphabet[g.r.IntN(len(stringAlphabet))])
	}
	return sb.String()
}

// bigValue returns an integer near a size boundary or of random size.
func (g gen) bigValue() *big.Int {
	var x *big.Int
	switch g.r.IntN(3) {
	case 0: // near ±2^(8k), k = 0..12
		x = new(big.Int).Lsh(big.NewInt(1), uint(8*g.r.IntN(13)))
		x.Add(x, big.NewInt(int64(g.r.IntN(5)-2)))
	case 1: // near ±2^63, ±2^64
		x = new(big.Int).Lsh(big.NewInt(1), uint(63+g.r.IntN(2)))
		x.Add(x, big.NewInt(int64(g.r.IntN(5)-2)))
	default: // random magnitude of 1..40 bytes
		mag := make([]byte, 1+g.r.IntN(40))
		for i := range mag {
			mag[i] = byte(g.r.Uint32())
		}
		x = new(big.Int).SetBytes(mag)
	}
	if g.r.IntN(2) == 0 {
		x.Neg(x)
	}
	return x
}

// integer returns an integer as one of the Go types that can hold it.
func (g gen) integer() TupleElement {
	x := g.bigValue()
	if g.r.IntN(4) == 0 {
		x = big.NewInt(int64(g.r.IntN(600) - 300))
	}
	var cands []TupleElement
	if x.IsInt64() {
		v := x.Int64()
		cands = append(cands, v, int(v))
		if v == int64(int8(v)) {
			cands = append(cands, int8(v))
		}
		if v == int64(int16(v)) {
			cands = append(cands, int16(v))
		}
		if v == int64(int32(v)) {
			cands = append(cands, int32(v))
		}
	}
	if x.IsUint64() {
		v := x.Uint64()
		cands = append(cands, v, uint(v), uintptr(v))
		if v == uint64(uint8(v)) {
			cands = append(cands, uint8(v))
		}
		if v == uint64(uint16(v)) {
			cands = append(cands, uint16(v))
		}
		if v == uint64(uint32(v)) {
			cands = append(cands, uint32(v))
		}
	}
	cands = append(cands, x, *new(big.Int).Set(x))
	return cands[g.r.IntN(len(cands))]
}

var (
	float64Specials = []float64{0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1),
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		math.Float64frombits(0x7ff8000000000000), math.Float64frombits(0xfff8000000000000),
		math.Float64frombits(0x7ff0000000000001), math.Float64frombits(0xfff0000000000001),
		math.Float64frombits(0x7fffffffffffffff), math.Float64frombits(0xffffffffffffffff), 3.14, -3.14}
	float32Specials = []uint32{0, 0x80000000, 0x3f800000, 0xbf800000, 0x7f800000, 0xff800000,
		0x7f7fffff, 0xff7fffff, 1, 0x80000001, 0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001,
		0x7fffffff, 0xffffffff}
)

func (g gen) float32() float32 {
	if g.r.IntN(2) == 0 {
		return math.Float32frombits(float32Specials[g.r.IntN(len(float32Specials))])
	}
	return math.Float32frombits(g.r.Uint32())
}

func (g gen) float64() float64 {
	if g.r.IntN(2) == 0 {
		return float64Specials[g.r.IntN(len(float64Specials))]
	}
	return math.Float64frombits(g.r.Uint64())
}

func (g gen) fixedBytes(b []byte) {
	for i := range b {
		b[i] = byteAlphabet[g.r.IntN(len(byteAlphabet))]
	}
}

func (g gen) element(depth int) TupleElement {
	switch g.r.IntN(12) {
	case 0:
		return nil
	case 1:
		return g.bytes()
	case 2:
		return g.string()
	case 3, 4:
		return g.integer()
	case 5:
		return g.float32()
	case 6:
		return g.float64()
	case 7:
		return g.r.IntN(2) == 0
	case 8:
		var u UUID
		g.fixedBytes(u[:])
		return u
	case 9:
		var v Versionstamp
		g.fixedBytes(v.TransactionVersion[:])
		if v.incomplete() {
			v.TransactionVersion[9] = 0xfe
		}
		v.UserVersion = uint16(g.r.Uint32())
		return v
	}
	if depth <= 0 {
		return g.string()
	}
	return g.tuple(4, depth-1)
}

// mutate returns a tuple near t: truncated, extended, or with one element
// replaced, so that pairs share prefixes and differ late.
func (g gen) mutate(t Tuple, depth int) Tuple {
	out := append(Tuple{}, t...)
	switch g.r.IntN(4) {
	case 0:
		if len(out) > 0 {
			return out[:g.r.IntN(len(out))]
		}
		return append(out, g.element(depth))
	case 1:
		return append(out, g.element(depth))
	}
	if len(out) == 0 {
		return append(out, g.element(depth))
	}
	i := g.r.IntN(len(out))
	if nested, ok := out[i].(Tuple); ok && g.r.IntN(2) == 0 {
		out[i] = g.mutate(nested, depth-1)
		return out
	}
	if _, ok := bigOf(out[i]); ok && g.r.IntN(2) == 0 {
		x, _ := bigOf(out[i])
		out[i] = x.Add(x, big.NewInt(int64(g.r.IntN(3)-1)))
		return out
	}
	out[i] = g.element(depth)
	return out
}

// byteSource is a rand.Source that reads the fuzzer's bytes and, once they
// run out, continues with a fixed pseudo-random sequence (a constant stream
// could make rejection sampling loop forever).
type byteSource struct {
	data  []byte
	state uint64
}

func (s *byteSource) Uint64() uint64 {
	if len(s.data) > 0 {
		var buf [8]byte
		n := copy(buf[:], s.data)
		s.data = s.data[n:]
		s.state ^= uint64(buf[0]) | uint64(buf[1])<<8 | uint64(buf[2])<<16 | uint64(buf[3])<<24 |
			uint64(buf[4])<<32 | uint64(buf[5])<<40 | uint64(buf[6])<<48 | uint64(buf[7])<<56
		return s.state
	}
	// splitmix64
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
