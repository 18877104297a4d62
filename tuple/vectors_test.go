package tuple

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"testing"
)

// Golden vectors: the test cases of design/tuple.md and of the Java binding's
// TupleSerializationTest (apple/foundationdb), transcribed as data.
var packVectors = []struct {
	name  string
	tuple Tuple
	hex   string
}{
	// design/tuple.md
	{"spec/bytes", Tuple{[]byte("foo\x00bar")}, "01 666f6f 00ff 626172 00"},
	{"spec/string", Tuple{"F\u00d4O\u0000bar"}, "02 46c3944f 00ff 626172 00"},
	{"spec/nested", Tuple{Tuple{[]byte("foo\x00bar"), nil, Tuple{}}}, "05 01666f6f00ff62617200 00ff 0500 00"},
	{"spec/int", Tuple{-5551212}, "11 ab4b93"},
	{"spec/float", Tuple{float32(-42)}, "20 3dd7ffff"},
	{"spec/empty nested", Tuple{Tuple{}}, "05 00"},
	{"spec/nested null", Tuple{Tuple{nil}}, "05 00ff 00"},

	// Java TupleSerializationTest
	{"java/empty", Tuple{}, ""},
	{"java/0", Tuple{0}, "14"},
	{"java/big 0", Tuple{big.NewInt(0)}, "14"},
	{"java/1", Tuple{1}, "15 01"},
	{"java/big 1", Tuple{big.NewInt(1)}, "15 01"},
	{"java/-1", Tuple{-1}, "13 fe"},
	{"java/big -1", Tuple{big.NewInt(-1)}, "13 fe"},
	{"java/255", Tuple{255}, "15 ff"},
	{"java/big 255", Tuple{big.NewInt(255)}, "15 ff"},
	{"java/-255", Tuple{-255}, "13 00"},
	{"java/big -255", Tuple{big.NewInt(-255)}, "13 00"},
	{"java/256", Tuple{256}, "16 0100"},
	{"java/big 256", Tuple{big.NewInt(256)}, "16 0100"},
	{"java/-256", Tuple{-256}, "12 feff"},
	{"java/big -256", Tuple{big.NewInt(-256)}, "12 feff"},
	{"java/65536", Tuple{65536}, "17 010000"},
	{"java/-65536", Tuple{-65536}, "11 feffff"},
	{"java/MaxInt64", Tuple{int64(math.MaxInt64)}, "1c 7fffffffffffffff"},
	{"java/big MaxInt64", Tuple{big.NewInt(math.MaxInt64)}, "1c 7fffffffffffffff"},
	{"java/MaxInt64+1", Tuple{bigPow2(63, 0)}, "1c 8000000000000000"},
	{"java/2^64-1", Tuple{bigPow2(64, -1)}, "1c ffffffffffffffff"},
	{"java/2^64", Tuple{bigPow2(64, 0)}, "1d 09 010000000000000000"},
	{"java/-(2^32-1)", Tuple{-(1<<32 - 1)}, "10 00000000"},
	{"java/big -(2^32-1)", Tuple{new(big.Int).Neg(bigPow2(32, -1))}, "10 00000000"},
	{"java/MinInt64+2", Tuple{int64(math.MinInt64 + 2)}, "0c 8000000000000001"},
	{"java/MinInt64+1", Tuple{int64(math.MinInt64 + 1)}, "0c 8000000000000000"},
	{"java/big MinInt64+1", Tuple{big.NewInt(math.MinInt64 + 1)}, "0c 8000000000000000"},
	{"java/MinInt64", Tuple{int64(math.MinInt64)}, "0c 7fffffffffffffff"},
	{"java/big MinInt64", Tuple{big.NewInt(math.MinInt64)}, "0c 7fffffffffffffff"},
	{"java/MinInt64-1", Tuple{new(big.Int).Neg(bigPow2(63, 1))}, "0c 7ffffffffffffffe"},
	{"java/-(2^64-1)", Tuple{new(big.Int).Neg(bigPow2(64, -1))}, "0c 0000000000000000"},
	{"java/3.14f", Tuple{float32(3.14)}, "20 c048f5c3"},
	{"java/-3.14f", Tuple{float32(-3.14)}, "20 3fb70a3c"},
	{"java/3.14", Tuple{3.14}, "21 c0091eb851eb851f"},
	{"java/-3.14", Tuple{-3.14}, "21 3ff6e147ae147ae0"},
	{"java/0.0f", Tuple{float32(0)}, "20 80000000"},
	{"java/-0.0f", Tuple{float32(math.Copysign(0, -1))}, "20 7fffffff"},
	{"java/0.0", Tuple{0.0}, "21 8000000000000000"},
	{"java/-0.0", Tuple{math.Copysign(0, -1)}, "21 7fffffffffffffff"},
	{"java/+Inf f", Tuple{float32(math.Inf(1))}, "20 ff800000"},
	{"java/-Inf f", Tuple{float32(math.Inf(-1))}, "20 007fffff"},
	{"java/+Inf", Tuple{math.Inf(1)}, "21 fff0000000000000"},
	{"java/-Inf", Tuple{math.Inf(-1)}, "21 000fffffffffffff"},
	{"java/NaN f 7fffffff", Tuple{math.Float32frombits(0x7fffffff)}, "20 ffffffff"},
	{"java/NaN 7fff...", Tuple{math.Float64frombits(0x7fffffffffffffff)}, "21 ffffffffffffffff"},
	{"java/NaN f ffffffff", Tuple{math.Float32frombits(0xffffffff)}, "20 00000000"},
	{"java/NaN ffff...", Tuple{math.Float64frombits(0xffffffffffffffff)}, "21 0000000000000000"},
	{"java/empty bytes", Tuple{[]byte{}}, "01 00"},
	{"java/bytes", Tuple{[]byte{1, 2, 3}}, "01 010203 00"},
	{"java/bytes nulls", Tuple{[]byte{0, 0, 0, 4}}, "01 00ff00ff00ff04 00"},
	{"java/empty string", Tuple{""}, "02 00"},
	{"java/hello", Tuple{"hello"}, "02 68656c6c6f 00"},
	{"java/chinese", Tuple{"\u4e2d\u6587"}, "02 e4b8ade69687 00"},
	{"java/greek", Tuple{"\u03bc\u03ac\u03b8\u03b7\u03bc\u03b1"}, "02 cebcceacceb8ceb7cebcceb1 00"},
	{"java/fire", Tuple{"\U0001F525"}, "02 f09f94a5 00"},
	{"java/bagel", Tuple{"\U0001F96F"}, "02 f09fa5af 00"},
	{"java/sloth", Tuple{"\U0001F9A5"}, "02 f09fa6a5 00"},
	{"java/max code point", Tuple{"\U0010FFFF"}, "02 f48fbfbf 00"},
	{"java/nested null", Tuple{Tuple{nil}}, "05 00ff 00"},
	{"java/nested null hello", Tuple{Tuple{nil, "hello"}}, "05 00ff 0268656c6c6f00 00"},
	{"java/nested null hell0", Tuple{Tuple{nil, "hell\x00"}}, "05 00ff 0268656c6c00ff00 00"},
	{"java/nested then string", Tuple{Tuple{nil}, "hello"}, "05 00ff 00 0268656c6c6f00"},
	{"java/nested then more", Tuple{Tuple{nil}, "hello", []byte{1, 0}, []byte{}},
		"05 00ff 00 0268656c6c6f00 010100ff00 0100"},
	{"java/uuid", Tuple{UUID{0xff, 0xff, 0xff, 0xff, 0xba, 0x5e, 0xba, 0x11, 0, 0, 0, 0, 0x5c, 0xa1, 0xab, 0x1e}},
		"30 ffffffffba5eba11000000005ca1ab1e"},
	{"java/false", Tuple{false}, "26"},
	{"java/true", Tuple{true}, "27"},
	{"java/short", Tuple{int16(0x3019)}, "16 3019"},
	{"java/byte", Tuple{int8(3)}, "15 03"},
	{"java/versionstamp", Tuple{Versionstamp{TransactionVersion: [10]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0, 1, 2, 3}}},
		"33 aabbccddeeff00010203 0000"},
	{"java/versionstamp 657", Tuple{Versionstamp{[10]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 657}},
		"33 0102030405060708090a 0291"},

	// Ours: every Go integer type, and edges of the arbitrary-precision forms.
	{"go/int8", Tuple{int8(-128)}, "13 7f"},
	{"go/int16", Tuple{int16(-32768)}, "12 7fff"},
	{"go/int32", Tuple{int32(math.MaxInt32)}, "18 7fffffff"},
	{"go/uint", Tuple{uint(1)}, "15 01"},
	{"go/uint8", Tuple{uint8(255)}, "15 ff"},
	{"go/uint16", Tuple{uint16(65535)}, "16 ffff"},
	{"go/uint32", Tuple{uint32(math.MaxUint32)}, "18 ffffffff"},
	{"go/uint64 max", Tuple{uint64(math.MaxUint64)}, "1c ffffffffffffffff"},
	{"go/uintptr", Tuple{uintptr(258)}, "16 0102"},
	{"go/big.Int value", Tuple{*big.NewInt(-2)}, "13 fd"},
	{"go/-2^64", Tuple{new(big.Int).Neg(bigPow2(64, 0))}, "0b f6 feffffffffffffffff"},
	{"go/-(2^64+1)", Tuple{new(big.Int).Neg(bigPow2(64, 1))}, "0b f6 fefffffffffffffffe"},
	{"go/2^72", Tuple{bigPow2(72, 0)}, "1d 0a 01000000000000000000"},
	{"go/-(2^72-1)", Tuple{new(big.Int).Neg(bigPow2(72, -1))}, "0b f6 000000000000000000"},
	{"go/nested nested", Tuple{Tuple{Tuple{nil}, nil}, nil}, "05 05 00ff 00 00ff 00 00"},
	{"go/top-level nulls", Tuple{nil, nil}, "00 00"},
	{"go/nil Tuple nested", Tuple{Tuple(nil)}, "05 00"},
	{"go/invalid utf-8 kept", Tuple{"\xff\xfe"}, "02 fffe 00"},
}

// bigPow2 returns 2^n + d.
func bigPow2(n uint, d int64) *big.Int {
	x := new(big.Int).Lsh(big.NewInt(1), n)
	return x.Add(x, big.NewInt(d))
}

func TestPackVectors(t *testing.T) {
	for _, tc := range packVectors {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, tc.hex)
			got := tc.tuple.Pack()
			if !bytes.Equal(got, want) {
				t.Fatalf("Pack(%v) = % x, want % x", tc.tuple, got, want)
			}
			back, err := Unpack(want)
			if err != nil {
				t.Fatalf("Unpack(% x): %v", want, err)
			}
			if wantT := normalizeTuple(tc.tuple); !equalTuple(back, wantT) {
				t.Fatalf("Unpack(% x) = %#v, want %#v", want, back, wantT)
			}
		})
	}
}

// TestUnpackIntegerForms covers the integer forms Pack does not write but
// other bindings do (the Python binding writes 0x1d/0x0b for magnitudes of
// exactly 2^64-1), and non-minimal forms: all decode by value to int64,
// uint64 or *big.Int, and re-pack canonically.
func TestUnpackIntegerForms(t *testing.T) {
	tests := []struct {
		name  string
		hex   string
		want  TupleElement
		canon string // canonical re-packing; "" if the input is canonical
	}{
		{"python 2^64-1", "1d 08 ffffffffffffffff", uint64(math.MaxUint64), "1c ffffffffffffffff"},
		{"python -(2^64-1)", "0b f7 0000000000000000", new(big.Int).Neg(bigPow2(64, -1)), "0c 0000000000000000"},
		{"1d small", "1d 01 05", int64(5), "15 05"},
		{"1d zero length", "1d 00", int64(0), "14"},
		{"0b zero length", "0b ff", int64(0), "14"},
		{"1d leading zeros", "1d 09 00ffffffffffffffff", uint64(math.MaxUint64), "1c ffffffffffffffff"},
		{"0b leading ff", "0b f6 ff0000000000000000", new(big.Int).Neg(bigPow2(64, -1)), "0c 0000000000000000"},
		{"1d 2^64 with padding", "1d 0a 00010000000000000000", bigPow2(64, 0), "1d 09 010000000000000000"},
		{"1d MaxInt64", "1d 08 7fffffffffffffff", int64(math.MaxInt64), "1c 7fffffffffffffff"},
		{"0b MinInt64", "0b f7 7fffffffffffffff", int64(math.MinInt64), "0c 7fffffffffffffff"},
		{"positive leading zero", "16 0005", int64(5), "15 05"},
		{"positive zero", "15 00", int64(0), "14"},
		{"negative leading ff", "12 fffa", int64(-5), "13 fa"},
		{"negative zero", "13 ff", int64(0), "14"},
		{"8-byte negative zero", "0c ffffffffffffffff", int64(0), "14"},
		{"uint64 boundary", "1c 8000000000000000", uint64(1 << 63), ""},
		{"int64 max", "1c 7fffffffffffffff", int64(math.MaxInt64), ""},
		{"int64 min", "0c 7fffffffffffffff", int64(math.MinInt64), ""},
		{"below int64", "0c 7ffffffffffffffe", new(big.Int).Neg(bigPow2(63, 1)), ""},
		{"2^64", "1d 09 010000000000000000", bigPow2(64, 0), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := unhex(t, tc.hex)
			got, canonical, err := unpack(in)
			if err != nil {
				t.Fatalf("Unpack(% x): %v", in, err)
			}
			if len(got) != 1 || !equalElem(got[0], tc.want) {
				t.Fatalf("Unpack(% x) = %#v, want (%T)(%v)", in, got, tc.want, tc.want)
			}
			if canonical != (tc.canon == "") {
				t.Errorf("canonical = %v, want %v", canonical, tc.canon == "")
			}
			wantPack := in
			if tc.canon != "" {
				wantPack = unhex(t, tc.canon)
			}
			if p := got.Pack(); !bytes.Equal(p, wantPack) {
				t.Errorf("re-Pack = % x, want % x", p, wantPack)
			}
		})
	}
}

func TestBigIntLimits(t *testing.T) {
	max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 2040), big.NewInt(1))
	for _, x := range []*big.Int{max, new(big.Int).Neg(max)} {
		p, err := Tuple{x}.PackErr()
		if err != nil {
			t.Fatalf("PackErr(%d-byte integer): %v", len(x.Bytes()), err)
		}
		if len(p) != 2+255 {
			t.Fatalf("len = %d, want 257", len(p))
		}
		back, err := Unpack(p)
		if err != nil || len(back) != 1 || back[0].(*big.Int).Cmp(x) != 0 {
			t.Fatalf("round trip of 255-byte integer: %v, %v", back, err)
		}
	}
	tooBig := new(big.Int).Lsh(big.NewInt(1), 2040)
	for _, x := range []*big.Int{tooBig, new(big.Int).Neg(tooBig)} {
		if _, err := (Tuple{"a", Tuple{x}}).PackErr(); !errors.Is(err, ErrTooLarge) {
			t.Errorf("PackErr(2^2040 sign %d) error = %v, want ErrTooLarge", x.Sign(), err)
		}
		assertPanicsWith(t, ErrTooLarge, func() { Tuple{x}.Pack() })
	}
}

// assertPanicsWith checks that f panics with an error matching want.
func assertPanicsWith(t *testing.T, want error, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		err, ok := r.(error)
		if !ok || !errors.Is(err, want) {
			t.Errorf("panic value = %v, want error matching %v", r, want)
		}
	}()
	f()
}

func TestUnsupportedTypes(t *testing.T) {
	type myString string
	for _, el := range []TupleElement{
		myString("x"), []string{"a"}, []TupleElement{1}, map[string]int{}, struct{}{}, (*big.Int)(nil),
		complex(1, 2), &UUID{}, func() {},
	} {
		tup := Tuple{1, Tuple{"nested", el}}
		if _, err := tup.PackErr(); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("PackErr with %T: error = %v, want ErrUnsupportedType", el, err)
		}
		assertPanicsWith(t, ErrUnsupportedType, func() { tup.Pack() })
		assertPanicsWith(t, ErrUnsupportedType, func() { tup.Range() })
		if _, err := append(tup, IncompleteVersionstamp(0)).PackWithVersionstamp(nil); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("PackWithVersionstamp with %T: error = %v, want ErrUnsupportedType", el, err)
		}
	}
}

func TestRange(t *testing.T) {
	tup := Tuple{"a", 1}
	begin, end := tup.Range()
	p := tup.Pack()
	if !bytes.Equal(begin, append(p[:len(p):len(p)], 0x00)) || !bytes.Equal(end, append(p[:len(p):len(p)], 0xff)) {
		t.Fatalf("Range = % x, % x for packed % x", begin, end, p)
	}
	begin[len(begin)-1] = 0x42 // must not affect end
	if end[len(end)-1] != 0xff {
		t.Fatal("begin and end share memory")
	}
	begin, end = tup.Range()
	inside := [][]byte{Tuple{"a", 1, nil}.Pack(), Tuple{"a", 1, Tuple{}}.Pack(), Tuple{"a", 1, "zzz", 5}.Pack(),
		Tuple{"a", 1, Versionstamp{[10]byte{0xff, 0xff}, 7}}.Pack()}
	for _, k := range inside {
		if bytes.Compare(k, begin) < 0 || bytes.Compare(k, end) >= 0 {
			t.Errorf("% x not in [% x, % x)", k, begin, end)
		}
	}
	outside := [][]byte{p, Tuple{"a", 2}.Pack(), Tuple{"a", 0, "x"}.Pack(), Tuple{"a"}.Pack(), Tuple{"b"}.Pack()}
	for _, k := range outside {
		if bytes.Compare(k, begin) >= 0 && bytes.Compare(k, end) < 0 {
			t.Errorf("% x in [% x, % x)", k, begin, end)
		}
	}
	b, e := Tuple{}.Range()
	if !bytes.Equal(b, []byte{0x00}) || !bytes.Equal(e, []byte{0xff}) {
		t.Errorf("empty Range = % x, % x", b, e)
	}
	assertPanicsWith(t, ErrIncompleteVersionstamp, func() { Tuple{IncompleteVersionstamp(1)}.Range() })
}

// TestString uses the Go binding's TestTupleString vectors, plus ours.
func TestString(t *testing.T) {
	testUUID := UUID{0x11, 0x00, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF, 0x11, 0x00, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF}
	tests := []struct {
		in   Tuple
		want string
	}{
		{Tuple{[]byte("hello"), "world", 42, 0x99}, `(b"hello", "world", 42, 153)`},
		{Tuple{nil, Tuple{"Ok", Tuple{1, 2}, "Go"}, 42, 0x99}, `(<nil>, ("Ok", (1, 2), "Go"), 42, 153)`},
		{Tuple{"Bool", true, false}, `("Bool", true, false)`},
		{Tuple{"UUID", testUUID}, `("UUID", UUID(1100aabb-ccdd-eeff-1100-aabbccddeeff))`},
		{Tuple{"Versionstamp", Versionstamp{[10]byte{0, 0, 0, 0xaa, 0, 0xbb, 0, 0xcc, 0, 0xdd}, 620}},
			`("Versionstamp", Versionstamp(\x00\x00\x00\xaa\x00\xbb\x00\xcc\x00\xdd, 620))`},
		// ours
		{Tuple{}, `()`},
		{Tuple{[]byte("a\\b\x00\xff\x7f")}, `(b"a\\b\x00\xff\x7f")`},
		{Tuple{"q\"\x00"}, `("q\"\x00")`},
		{Tuple{bigPow2(64, 0), *big.NewInt(-7), 1.5, float32(2.5), uint64(math.MaxUint64)},
			`(18446744073709551616, -7, 1.5, 2.5, 18446744073709551615)`},
		{Tuple{Tuple{}, Tuple(nil)}, `((), ())`},
	}
	for _, tc := range tests {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("String() = %s, want %s", got, tc.want)
		}
	}
}

func TestVersionstampBytes(t *testing.T) {
	v := Versionstamp{[10]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0x0291}
	if got, want := v.Bytes(), unhex(t, "0102030405060708090a0291"); !bytes.Equal(got, want) {
		t.Errorf("Bytes() = % x, want % x", got, want)
	}
	iv := IncompleteVersionstamp(5)
	if got, want := iv.Bytes(), unhex(t, "ffffffffffffffffffff0005"); !bytes.Equal(got, want) {
		t.Errorf("incomplete Bytes() = % x, want % x", got, want)
	}
}

// TestPackWithVersionstamp follows the Java TuplePackingTest cases: the
// offset of the placeholder, with and without a prefix, and the errors for
// zero or two incomplete versionstamps.
func TestPackWithVersionstamp(t *testing.T) {
	got, err := Tuple{IncompleteVersionstamp(1)}.PackWithVersionstamp(nil)
	if want := unhex(t, "33 ffffffffffffffffffff 0001 01000000"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("PackWithVersionstamp = % x, %v; want % x", got, err, want)
	}

	prefix := Tuple{"prefix"}.Pack()
	tup := Tuple{"a", Tuple{nil, IncompleteVersionstamp(2)}, 3}
	got, err = tup.PackWithVersionstamp(prefix)
	if err != nil {
		t.Fatal(err)
	}
	body := got[:len(got)-4]
	off := int(got[len(got)-4]) | int(got[len(got)-3])<<8 | int(got[len(got)-2])<<16 | int(got[len(got)-1])<<24
	// prefix, 02 'a' 00, 05, 00 ff, 33 -> placeholder
	if want := len(prefix) + 3 + 1 + 2 + 1; off != want {
		t.Fatalf("offset = %d, want %d", off, want)
	}
	if !bytes.Equal(body[off:off+10], bytes.Repeat([]byte{0xff}, 10)) {
		t.Fatalf("no placeholder at offset %d in % x", off, body)
	}
	back, err := Unpack(body)
	if err != nil {
		t.Fatal(err)
	}
	if want := normalizeTuple(append(Tuple{"prefix"}, tup...)); !equalTuple(back, want) {
		t.Fatalf("Unpack = %v, want %v", back, want)
	}
	if !bytes.Equal(prefix, Tuple{"prefix"}.Pack()) {
		t.Fatal("prefix modified")
	}

	complete := Versionstamp{[10]byte{1}, 1}
	for _, tc := range []struct {
		tup  Tuple
		want error
	}{
		{Tuple{}, ErrNoIncompleteVersionstamp},
		{Tuple{"a", complete, Tuple{complete}}, ErrNoIncompleteVersionstamp},
		{Tuple{IncompleteVersionstamp(1), IncompleteVersionstamp(2)}, ErrMultipleIncompleteVersionstamps},
		{Tuple{Tuple{IncompleteVersionstamp(3)}, Tuple{IncompleteVersionstamp(4)}}, ErrMultipleIncompleteVersionstamps},
		{Tuple{IncompleteVersionstamp(0), 3, IncompleteVersionstamp(0)}, ErrMultipleIncompleteVersionstamps},
		{Tuple{Tuple{IncompleteVersionstamp(0)}, "dummy_string", Tuple{IncompleteVersionstamp(0)}}, ErrMultipleIncompleteVersionstamps},
	} {
		if _, err := tc.tup.PackWithVersionstamp([]byte("p")); !errors.Is(err, tc.want) {
			t.Errorf("PackWithVersionstamp(%v) error = %v, want %v", tc.tup, err, tc.want)
		}
		has, err := tc.tup.HasIncompleteVersionstamp()
		if wantHas := tc.want == ErrMultipleIncompleteVersionstamps; has != wantHas {
			t.Errorf("HasIncompleteVersionstamp(%v) = %v, want %v", tc.tup, has, wantHas)
		}
		if tc.want == ErrMultipleIncompleteVersionstamps && !errors.Is(err, ErrMultipleIncompleteVersionstamps) {
			t.Errorf("HasIncompleteVersionstamp(%v) error = %v", tc.tup, err)
		}
		if tc.want == ErrMultipleIncompleteVersionstamps {
			if _, err := tc.tup.PackErr(); !errors.Is(err, ErrIncompleteVersionstamp) {
				t.Errorf("PackErr(%v) error = %v, want ErrIncompleteVersionstamp", tc.tup, err)
			}
		}
	}

	for _, tup := range []Tuple{{IncompleteVersionstamp(1)}, {"x", Tuple{IncompleteVersionstamp(2)}}} {
		if has, err := tup.HasIncompleteVersionstamp(); !has || err != nil {
			t.Errorf("HasIncompleteVersionstamp(%v) = %v, %v", tup, has, err)
		}
		if _, err := tup.PackErr(); !errors.Is(err, ErrIncompleteVersionstamp) {
			t.Errorf("PackErr(%v) error = %v, want ErrIncompleteVersionstamp", tup, err)
		}
		assertPanicsWith(t, ErrIncompleteVersionstamp, func() { tup.Pack() })
	}

	// A complete versionstamp packs normally, and an incomplete one decodes
	// back to IncompleteVersionstamp.
	p := Tuple{complete}.Pack()
	if back, err := Unpack(p); err != nil || back[0] != complete {
		t.Errorf("round trip of %v: %v, %v", complete, back, err)
	}
	got, _ = Tuple{IncompleteVersionstamp(9)}.PackWithVersionstamp(nil)
	if back, err := Unpack(got[:len(got)-4]); err != nil || back[0] != IncompleteVersionstamp(9) {
		t.Errorf("Unpack of placeholder = %v, %v", back, err)
	}
}

func TestUnpackDoesNotAlias(t *testing.T) {
	in := Tuple{[]byte("abc"), []byte("a\x00b"), Tuple{[]byte("xyz")}}.Pack()
	back, err := Unpack(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 0xee
	}
	want := Tuple{[]byte("abc"), []byte("a\x00b"), Tuple{[]byte("xyz")}}
	if !equalTuple(back, want) {
		t.Fatalf("decoded tuple changed with its input: %v", back)
	}
}

func TestPackDoesNotModifyInput(t *testing.T) {
	b := []byte{0, 1, 0}
	tup := Tuple{b, "s\x00"}
	_ = tup.Pack()
	if !bytes.Equal(b, []byte{0, 1, 0}) {
		t.Fatal("Pack modified its input")
	}
}

func TestUnpackEmpty(t *testing.T) {
	for _, in := range [][]byte{nil, {}} {
		got, err := Unpack(in)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("Unpack(%v) = %#v, %v; want empty non-nil Tuple", in, got, err)
		}
	}
}
