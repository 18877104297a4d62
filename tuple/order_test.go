package tuple

import (
	"bytes"
	"cmp"
	"flag"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// seedFlag replays TestOrderProperty and TestRoundTripProperty:
//
//	go test ./tuple -run 'Property' -seed=N
var seedFlag = flag.Uint64("seed", 0, "seed for the randomized tuple tests (0: pick one and log it)")

func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed=%d (replay: go test ./tuple -run '^%s$' -seed=%d)", seed, t.Name(), seed)
	return seed
}

// signum maps a comparison result to -1, 0 or 1.
func signum(c int) int { return cmp.Compare(c, 0) }

// checkOrder compares a and b by the model and by their packed bytes.
func checkOrder(t *testing.T, a, b Tuple) {
	t.Helper()
	pa, pb := a.Pack(), b.Pack()
	if want, got := signum(compareTuples(a, b)), signum(bytes.Compare(pa, pb)); want != got {
		t.Fatalf("order mismatch: model says %d, bytes say %d\na = %v\n    % x\nb = %v\n    % x", want, got, a, pa, b, pb)
	}
}

// The Java binding's TupleComparisonTest list; every pair must order the
// same semantically and bytewise.
func TestOrderJavaComparisons(t *testing.T) {
	const (
		floatNaN  = uint32(0x7fc00000)         // Float.floatToIntBits(Float.NaN)
		doubleNaN = uint64(0x7ff8000000000000) // Double.doubleToLongBits(Double.NaN)
	)
	f32 := math.Float32frombits
	f64 := math.Float64frombits
	vs := [10]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x01, 0x02, 0x03}
	ff8 := [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	uuid := func(hi, lo [8]byte) UUID {
		var u UUID
		copy(u[:8], hi[:])
		copy(u[8:], lo[:])
		return u
	}
	one := [8]byte{7: 1}
	var zero8 [8]byte
	list := []Tuple{
		{0}, {big.NewInt(0)}, {1}, {big.NewInt(1)}, {-1}, {big.NewInt(-1)},
		{int64(math.MaxInt64)}, {int64(math.MinInt64)},
		{new(big.Int).Sub(big.NewInt(math.MinInt64), big.NewInt(1))},
		{new(big.Int).Lsh(big.NewInt(math.MinInt64), 1)},
		{float32(math.Copysign(0, -1))}, {float32(0)}, {math.Copysign(0, -1)}, {0.0},
		{float32(math.Inf(-1))}, {math.Inf(-1)},
		{f32(floatNaN)}, {f64(doubleNaN)},
		{f32(floatNaN + 1)}, {f64(doubleNaN + 1)},
		{f32(floatNaN + 2)}, {f64(doubleNaN + 2)},
		{f32(floatNaN ^ 0x80000000)}, {f64(doubleNaN ^ 0x8000000000000000)},
		{f32(floatNaN ^ 0x80000001)}, {f64(doubleNaN ^ 0x8000000000000001)},
		{float32(math.Inf(1))}, {math.Inf(1)},
		{[]byte{}}, {[]byte{0x00}}, {[]byte{0x00, 0xff}}, {[]byte{0x7f}}, {[]byte{0x80}},
		{nil, []byte{}}, {nil, []byte{0x00}}, {nil, []byte{0x00, 0xff}}, {nil, []byte{0x7f}}, {nil, []byte{0x80}},
		{Tuple{nil, []byte{}}}, {Tuple{nil, []byte{0x00}}}, {Tuple{nil, []byte{0x00, 0xff}}},
		{Tuple{nil, []byte{0x7f}}}, {Tuple{nil, []byte{0x80}}},
		{"a"}, {"\u03bc\u03ac\u03b8\u03b7\u03bc\u03b1"}, {"\u03bc\u03b1\u0301\u03b8\u03b7\u03bc\u03b1"},
		{"\u4e2d\u6587"}, {"\u4e2d\u570B"}, {"\U0001F525"}, {"\U0001F96F"}, {"a\U0001F525"},
		{"\ufb49"}, {"\U0001F525\ufb49"},
		{uuid(ff8, zero8)}, {uuid(ff8, ff8)}, {uuid(one, ff8)}, {uuid(one, one)},
		{false}, {true},
		{Tuple{0, 1, 2}}, {Tuple{0, 1}, "hello"}, {Tuple{0, 1}, "help"},
		{Versionstamp{[10]byte{0x0a, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x01, 0x02, 0x03}, 0}},
		{Versionstamp{vs, 0}}, {Versionstamp{vs, 1}}, {Versionstamp{vs, 0xa101}}, {Versionstamp{vs, 65535}},
	}
	for _, a := range list {
		for _, b := range list {
			checkOrder(t, a, b)
		}
	}
}

// TestOrderProperty checks, on random tuples, that bytes.Compare of packed
// tuples agrees with the model order in helpers_test.go: element by element
// with a proper prefix first; kinds by type code (null, bytes, string,
// nested, integer, float32, float64, false, true, UUID, versionstamp);
// integers by value across all Go integer types and *big.Int; floats by IEEE
// total order (NaN payloads and -0 included); strings, byte strings, UUIDs
// and versionstamps bytewise; nested tuples recursively, with nil inside.
// Pairs are made both independently and by mutating one tuple (truncate,
// extend, replace or nudge an element), so that they share long prefixes.
func TestOrderProperty(t *testing.T) {
	seed := testSeed(t)
	g := gen{rand.New(rand.NewPCG(seed, 0x7475706c65))}
	n := 10000
	if testing.Short() {
		n = 300
	}
	var all []Tuple
	for range n {
		a := g.tuple(5, 3)
		b := g.mutate(a, 3)
		checkOrder(t, a, b)
		checkOrder(t, a, g.tuple(5, 3))
		all = append(all, a, b)
	}
	// Sorting by the model must sort the packed forms too.
	slices.SortStableFunc(all, compareTuples)
	prev := all[0].Pack()
	for i := 1; i < len(all); i++ {
		p := all[i].Pack()
		c := bytes.Compare(prev, p)
		if c > 0 || (c == 0) != (compareTuples(all[i-1], all[i]) == 0) {
			t.Fatalf("sorted tuples out of byte order:\n%v\n% x\n%v\n% x", all[i-1], prev, all[i], p)
		}
		prev = p
	}
}

// TestRoundTripProperty checks on random tuples that Unpack(Pack(t)) is t
// with integers normalized, that the packing is canonical, and that packing
// a prefix and a suffix separately and concatenating them equals packing
// the whole.
func TestRoundTripProperty(t *testing.T) {
	seed := testSeed(t)
	g := gen{rand.New(rand.NewPCG(seed, 0x726f756e64))}
	n := 10000
	if testing.Short() {
		n = 300
	}
	for range n {
		tup := g.tuple(6, 3)
		p := tup.Pack()
		back, canonical, err := unpack(p)
		if err != nil {
			t.Fatalf("Unpack(Pack(%v)) = %v\n% x", tup, err, p)
		}
		if !canonical {
			t.Fatalf("Pack(%v) = % x is not canonical", tup, p)
		}
		if want := normalizeTuple(tup); !equalTuple(back, want) {
			t.Fatalf("Unpack(Pack(%v)) = %v", want, back)
		}
		k := g.r.IntN(len(tup) + 1)
		if joined := append(tup[:k].Pack(), tup[k:].Pack()...); !bytes.Equal(joined, p) {
			t.Fatalf("Pack(%v) = % x, but the halves give % x", tup, p, joined)
		}
	}
}
