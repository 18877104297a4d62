package subspace

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/caskade/caskade/tuple"
)

// TestString uses the FoundationDB Go binding's TestSubspaceString vector.
func TestString(t *testing.T) {
	got := fmt.Sprint(Sub([]byte("hello"), "world", 42, 0x99))
	const want = `Subspace(rawPrefix=\x01hello\x00\x02world\x00\x15*\x15\x99)`
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if got := fmt.Sprint(FromBytes([]byte(`a\`))); got != `Subspace(rawPrefix=a\\)` {
		t.Fatalf("got %s", got)
	}
}

func TestConstructors(t *testing.T) {
	tests := []struct {
		name string
		s    Subspace
		want []byte
	}{
		{"AllKeys", AllKeys(), nil},
		{"Sub()", Sub(), nil},
		{"FromBytes(nil)", FromBytes(nil), nil},
		{"Sub", Sub("app", 1), tuple.Tuple{"app", 1}.Pack()},
		{"Sub.Sub", Sub("app").Sub(1), tuple.Tuple{"app", 1}.Pack()},
		{"FromBytes.Sub", FromBytes([]byte{0xfe}).Sub("x"), append([]byte{0xfe}, tuple.Tuple{"x"}.Pack()...)},
		{"AllKeys.Sub", AllKeys().Sub(nil, true), tuple.Tuple{nil, true}.Pack()},
		{"FromBytes raw", FromBytes([]byte{0x00, 0xff}), []byte{0x00, 0xff}},
	}
	for _, tc := range tests {
		if got := tc.s.Bytes(); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: Bytes() = % x, want % x", tc.name, got, tc.want)
		}
	}
}

func TestPackUnpack(t *testing.T) {
	s := Sub("users", 42)
	tup := tuple.Tuple{"alice", nil, tuple.Tuple{1, "x"}, []byte{0, 0xff}}
	k := s.Pack(tup)
	if want := append(s.Bytes(), tup.Pack()...); !bytes.Equal(k, want) {
		t.Fatalf("Pack = % x, want % x", k, want)
	}
	if full := (tuple.Tuple{"users", 42, "alice", nil, tuple.Tuple{1, "x"}, []byte{0, 0xff}}).Pack(); !bytes.Equal(k, full) {
		t.Fatalf("Pack = % x, want the packed concatenation % x", k, full)
	}
	if !s.Contains(k) {
		t.Fatal("Contains(Pack(t)) = false")
	}
	got, err := s.Unpack(k)
	if err != nil {
		t.Fatal(err)
	}
	want := tuple.Tuple{"alice", nil, tuple.Tuple{int64(1), "x"}, []byte{0, 0xff}}
	if got.String() != want.String() || len(got) != len(want) {
		t.Fatalf("Unpack = %v, want %v", got, want)
	}

	// Keys outside the subspace.
	for _, k := range [][]byte{nil, {}, tuple.Tuple{"users"}.Pack(), tuple.Tuple{"users", 43, "alice"}.Pack(), s.Bytes()[:len(s.Bytes())-1]} {
		if s.Contains(k) {
			t.Errorf("Contains(% x) = true", k)
		}
		if _, err := s.Unpack(k); !errors.Is(err, ErrNotInSubspace) {
			t.Errorf("Unpack(% x) error = %v, want ErrNotInSubspace", k, err)
		}
	}

	// A malformed suffix keeps the tuple package's error.
	bad := append(s.Bytes(), 0x02, 'x')
	_, err = s.Unpack(bad)
	var de *tuple.DecodeError
	if !errors.Is(err, tuple.ErrMalformed) || !errors.As(err, &de) || de.Offset != 0 {
		t.Fatalf("Unpack(malformed) error = %v", err)
	}
	if errors.Is(err, ErrNotInSubspace) {
		t.Fatal("malformed suffix reported as not in subspace")
	}

	// A raw prefix need not be a tuple.
	raw := FromBytes([]byte{0xff, 0x00})
	got, err = raw.Unpack(append([]byte{0xff, 0x00}, tuple.Tuple{"k"}.Pack()...))
	if err != nil || len(got) != 1 || got[0] != "k" {
		t.Fatalf("raw prefix Unpack = %v, %v", got, err)
	}
}

// TestBarePrefix pins FoundationDB's semantics for the prefix key itself: it
// is contained and unpacks to the empty tuple, but lies outside Range.
func TestBarePrefix(t *testing.T) {
	for _, s := range []Subspace{Sub("p"), FromBytes([]byte("raw")), AllKeys()} {
		p := s.Bytes()
		if !s.Contains(p) {
			t.Errorf("%v: Contains(prefix) = false", s)
		}
		got, err := s.Unpack(p)
		if err != nil || len(got) != 0 {
			t.Errorf("%v: Unpack(prefix) = %v, %v; want empty tuple", s, got, err)
		}
		begin, end := s.Range()
		if bytes.Compare(p, begin) >= 0 && bytes.Compare(p, end) < 0 {
			t.Errorf("%v: prefix % x inside Range [% x, % x)", s, p, begin, end)
		}
	}
}

func TestRange(t *testing.T) {
	s := Sub("r", 1)
	begin, end := s.Range()
	p := s.Bytes()
	if !bytes.Equal(begin, append(s.Bytes(), 0x00)) || !bytes.Equal(end, append(s.Bytes(), 0xff)) {
		t.Fatalf("Range = % x, % x for prefix % x", begin, end, p)
	}
	tb, te := tuple.Tuple{"r", 1}.Range()
	if !bytes.Equal(begin, tb) || !bytes.Equal(end, te) {
		t.Fatalf("Range differs from tuple Range: % x % x vs % x % x", begin, end, tb, te)
	}
	in := []tuple.Tuple{{nil}, {tuple.Tuple{}}, {[]byte{}}, {""}, {-1 << 62}, {0}, {1.5}, {false}, {true},
		{tuple.UUID{}}, {tuple.Versionstamp{UserVersion: 1}}, {"zzz", 9, []byte{0xff}}}
	for _, tup := range in {
		k := s.Pack(tup)
		if bytes.Compare(k, begin) < 0 || bytes.Compare(k, end) >= 0 {
			t.Errorf("Pack(%v) = % x outside [% x, % x)", tup, k, begin, end)
		}
		if !s.Contains(k) {
			t.Errorf("Contains(Pack(%v)) = false", tup)
		}
	}
	for _, k := range [][]byte{Sub("r", 0).Pack(tuple.Tuple{"x"}), Sub("r", 2).Bytes(), Sub("q").Bytes(), Sub("r").Bytes()} {
		if bytes.Compare(k, begin) >= 0 && bytes.Compare(k, end) < 0 {
			t.Errorf("% x inside [% x, % x)", k, begin, end)
		}
	}
	b, e := AllKeys().Range()
	if !bytes.Equal(b, []byte{0x00}) || !bytes.Equal(e, []byte{0xff}) {
		t.Errorf("AllKeys().Range() = % x, % x", b, e)
	}
}

func TestPackWithVersionstamp(t *testing.T) {
	// The Java TuplePackingTest case: the offset counts the prefix.
	s := Sub("prefix")
	k, err := s.PackWithVersionstamp(tuple.Tuple{tuple.IncompleteVersionstamp(1)})
	if err != nil {
		t.Fatal(err)
	}
	off := int(k[len(k)-4]) | int(k[len(k)-3])<<8 | int(k[len(k)-2])<<16 | int(k[len(k)-1])<<24
	if want := 1 + len(s.Bytes()); off != want {
		t.Fatalf("offset = %d, want %d", off, want)
	}
	got, err := tuple.Unpack(k[:len(k)-4])
	if err != nil || len(got) != 2 || got[0] != "prefix" || got[1] != tuple.IncompleteVersionstamp(1) {
		t.Fatalf("Unpack = %v, %v", got, err)
	}
	if _, err := s.PackWithVersionstamp(tuple.Tuple{"none"}); !errors.Is(err, tuple.ErrNoIncompleteVersionstamp) {
		t.Fatalf("error = %v, want tuple.ErrNoIncompleteVersionstamp", err)
	}
}

func TestPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"Sub":           func() { Sub(struct{}{}) },
		"Subspace.Sub":  func() { AllKeys().Sub(make(chan int)) },
		"Subspace.Pack": func() { Sub("a").Pack(tuple.Tuple{tuple.IncompleteVersionstamp(0)}) },
	} {
		func() {
			defer func() {
				r := recover()
				err, ok := r.(error)
				if !ok || !(errors.Is(err, tuple.ErrUnsupportedType) || errors.Is(err, tuple.ErrIncompleteVersionstamp)) {
					t.Errorf("%s: panic value %v", name, r)
				}
			}()
			f()
		}()
	}
}

// TestOwnership checks that a Subspace neither aliases what it is given nor
// lets callers change it through what it returns, and that subspaces compare
// by prefix.
func TestOwnership(t *testing.T) {
	b := []byte("abc")
	s := FromBytes(b)
	b[0] = 'X'
	if got := s.Bytes(); string(got) != "abc" {
		t.Fatalf("FromBytes aliased its input: %q", got)
	}
	got := s.Bytes()
	got[0] = 'Y'
	_ = append(got[:1], 'Z')
	if string(s.Bytes()) != "abc" {
		t.Fatal("Bytes exposed the prefix")
	}
	begin, end := s.Range()
	begin[0], end[0] = 'Q', 'Q'
	k := s.Pack(tuple.Tuple{1})
	k[0] = 'R'
	if string(s.Bytes()) != "abc" || !s.Contains([]byte("abc\x15\x01")) {
		t.Fatal("returned slices share the prefix")
	}

	if FromBytes([]byte("abc")) != s {
		t.Fatal("equal prefixes compare unequal")
	}
	if Sub("a", 1) != Sub("a").Sub(1) || Sub("a") == Sub("b") {
		t.Fatal("== does not follow the prefix")
	}
	m := map[Subspace]int{Sub("x"): 1}
	if m[FromBytes(tuple.Tuple{"x"}.Pack())] != 1 {
		t.Fatal("Subspace is not usable as a map key")
	}
}
