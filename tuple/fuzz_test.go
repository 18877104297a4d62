package tuple

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// FuzzUnpack feeds arbitrary bytes to Unpack. It must never panic; an error
// must be a well-formed *DecodeError; a success must pack back to the same
// bytes when the input is canonical, and in any case to bytes that unpack to
// an equal tuple and are a fixed point of Unpack-then-Pack.
func FuzzUnpack(f *testing.F) {
	for _, tc := range packVectors {
		f.Add(unhex(f, tc.hex))
	}
	for _, tc := range malformedVectors {
		f.Add(unhex(f, tc.hex))
	}
	for _, h := range []string{
		"1d 08 ffffffffffffffff", "0b f7 0000000000000000", "16 0005", "13 ff", "1d 00",
		"05 05 00ff 00 00ff 00 00", "33 ffffffffffffffffffff 0001 33 ffffffffffffffffffff 0002",
	} {
		f.Add(unhex(f, h))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		tup, canonical, err := unpack(in)
		if err != nil {
			checkDecodeError(t, in, err)
			if tup != nil {
				t.Fatalf("Unpack returned %v with error %v", tup, err)
			}
			return
		}
		if pub, err := Unpack(in); err != nil || !equalTuple(pub, tup) {
			t.Fatalf("Unpack and unpack disagree: %v, %v", pub, err)
		}
		p := packAny(t, tup)
		if canonical && !bytes.Equal(p, in) {
			t.Fatalf("canonical input % x re-packs to % x", in, p)
		}
		back, canonical2, err := unpack(p)
		if err != nil {
			t.Fatalf("re-packed % x does not unpack: %v", p, err)
		}
		if !canonical2 {
			t.Fatalf("re-packed % x is not canonical", p)
		}
		if !equalTuple(back, tup) {
			t.Fatalf("value changed through re-packing:\n%v\n%v", tup, back)
		}
		if p2 := packAny(t, back); !bytes.Equal(p2, p) {
			t.Fatalf("packing is not a fixed point: % x then % x", p, p2)
		}
	})
}

// FuzzPackOrder builds two tuples from the fuzzer's bytes and checks the
// round trip of each and that their byte order matches the model order.
func FuzzPackOrder(f *testing.F) {
	f.Add([]byte{}, []byte{})
	f.Add([]byte("tuple"), []byte("tuplf"))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{1, 2, 3, 4, 5, 6, 7, 9})
	f.Fuzz(func(t *testing.T, x, y []byte) {
		gx := gen{rand.New(&byteSource{data: x})}
		gy := gen{rand.New(&byteSource{data: y})}
		a := gx.tuple(5, 3)
		b := gy.tuple(5, 3)
		if len(y) > 0 && y[0]&1 == 1 {
			b = gy.mutate(a, 3)
		}
		for _, tup := range []Tuple{a, b} {
			back, err := Unpack(tup.Pack())
			if err != nil || !equalTuple(back, normalizeTuple(tup)) {
				t.Fatalf("round trip of %v: %v, %v", tup, back, err)
			}
		}
		checkOrder(t, a, b)
	})
}
