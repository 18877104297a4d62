package tuple

import (
	"bytes"
	"errors"
	"math/big"
	"strings"
	"testing"
)

// Malformed input: the Java binding's TuplePackingTest.malformedSequences
// (except its invalid UTF-8 cases, see TestUnpackInvalidUTF8), and ours.
// offset is the DecodeError's expected Offset.
var malformedVectors = []struct {
	name   string
	hex    string
	want   error
	offset int
}{
	// Java
	{"java/bytes no terminator", "01 deadc0de", ErrTruncated, 0},
	{"java/bytes no terminator, null inside", "01 dead00ffc0de", ErrTruncated, 0},
	{"java/string no terminator", "02 68656c6c6f", ErrTruncated, 0},
	{"java/string no terminator, null inside", "02 68656c00ff6c6f", ErrTruncated, 0},
	{"java/nested no terminator", "05 0268656c6c6f00", ErrTruncated, 0},
	{"java/nested no terminator, null inside", "05 0268656c6c6f00 00ff 027468657265 00", ErrTruncated, 0},
	{"java/int truncated positive", "16 01", ErrTruncated, 0},
	{"java/int truncated negative", "12 01", ErrTruncated, 0},
	{"java/big positive truncated", "1d 09 0102030405060708", ErrTruncated, 0},
	{"java/big negative truncated", "0b f6 0102030405060708", ErrTruncated, 0},
	{"java/float truncated", "20 010203", ErrTruncated, 0},
	{"java/double truncated", "21 01020304050607", ErrTruncated, 0},
	{"java/uuid truncated", "30 0102030405060708090a0b0c0d0e", ErrTruncated, 0},
	{"java/versionstamp truncated", "33 0102030405060708090a0b", ErrTruncated, 0},
	{"java/0xff", "ff", ErrUnknownTypeCode, 0},

	// Ours: reserved, deprecated and unused codes.
	{"deprecated nested 03", "03 04", ErrUnknownTypeCode, 0},
	{"deprecated nested end 04", "04", ErrUnknownTypeCode, 0},
	{"reserved 0a", "0a 00", ErrUnknownTypeCode, 0},
	{"reserved 1e", "1e 00", ErrUnknownTypeCode, 0},
	{"long double 22", "22 00000000000000000000", ErrUnknownTypeCode, 0},
	{"decimal 23", "23 00", ErrUnknownTypeCode, 0},
	{"deprecated true 25", "25", ErrUnknownTypeCode, 0},
	{"64-bit id 31", "31 0000000000000000", ErrUnknownTypeCode, 0},
	{"80-bit versionstamp 32", "32 00000000000000000000", ErrUnknownTypeCode, 0},
	{"length-prefixed 34", "34 01 00", ErrUnknownTypeCode, 0},
	{"user type 40", "40", ErrUnknownTypeCode, 0},
	{"end of tuple f0", "f0", ErrUnknownTypeCode, 0},
	{"top-level 00 ff", "00 ff", ErrUnknownTypeCode, 1},
	{"ff after element", "15 01 ff", ErrUnknownTypeCode, 2},
	{"ff inside nested", "02 6100 05 15 01 ff 00", ErrUnknownTypeCode, 6},

	// Ours: truncation in every position.
	{"big positive no length", "1d", ErrTruncated, 0},
	{"big negative no length", "0b", ErrTruncated, 0},
	{"big positive length 255, 3 bytes", "1d ff 010203", ErrTruncated, 0},
	{"big negative length 255, 0 bytes", "0b 00", ErrTruncated, 0},
	{"8-byte negative truncated", "0c 00000000000000", ErrTruncated, 0},
	{"8-byte positive truncated", "1c ffffffffffffff", ErrTruncated, 0},
	{"bytes escape at end", "01 6100ff", ErrTruncated, 0},
	{"bytes only code", "01", ErrTruncated, 0},
	{"string only code", "02", ErrTruncated, 0},
	{"nested only code", "05", ErrTruncated, 0},
	{"nested null at end", "05 00ff", ErrTruncated, 0},
	{"inner nested unterminated", "05 05 00", ErrTruncated, 0},
	{"second nested unterminated", "05 00 14 05 05 00", ErrTruncated, 3},
	{"element after good ones", "14 15 01 02 6100 21 00", ErrTruncated, 6},
	{"nested string unterminated", "05 02 61", ErrTruncated, 1},
	{"nested string consumes terminator", "05 02 61 00 ff", ErrTruncated, 1},
}

func TestUnpackMalformed(t *testing.T) {
	for _, tc := range malformedVectors {
		t.Run(tc.name, func(t *testing.T) {
			in := unhex(t, tc.hex)
			got, err := Unpack(in)
			if err == nil {
				t.Fatalf("Unpack(% x) = %v, want error", in, got)
			}
			if got != nil {
				t.Errorf("Unpack returned %v with the error", got)
			}
			checkDecodeError(t, in, err)
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v does not match %v", err, tc.want)
			}
			var de *DecodeError
			errors.As(err, &de)
			if de.Offset != tc.offset {
				t.Errorf("Offset = %d, want %d (%v)", de.Offset, tc.offset, err)
			}
		})
	}
}

// checkDecodeError checks the shape every Unpack error must have.
func checkDecodeError(t testing.TB, in []byte, err error) {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
	}
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("error %v does not match ErrMalformed", err)
	}
	if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrUnknownTypeCode) {
		t.Fatalf("error %v matches neither ErrTruncated nor ErrUnknownTypeCode", err)
	}
	if de.Offset < 0 || de.Offset >= len(in) || in[de.Offset] != de.Code {
		t.Fatalf("error %v: Offset %d / Code 0x%02x do not point into % x", err, de.Offset, de.Code, in)
	}
	if !strings.HasPrefix(err.Error(), "tuple: ") {
		t.Fatalf("error text %q lacks the package prefix", err)
	}
}

func TestDecodeErrorText(t *testing.T) {
	_, err := Unpack([]byte{0x14, 0x20, 0x01})
	const want = "tuple: malformed encoding at offset 1 (type code 0x20): truncated element"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

// TestUnpackTruncations follows the Java binding's
// cantUnpackSequencesWithLastCharacter, extended to every proper prefix:
// cutting a single non-nested element anywhere after its type code must
// fail. (Not for "hell\x00": cut before its escape byte it is "hell".)
func TestUnpackTruncations(t *testing.T) {
	if _, err := Unpack(unhex(t, "02 68656c6c00ff")); !errors.Is(err, ErrTruncated) {
		t.Errorf(`"hell\x00" without its last byte: error %v, want ErrTruncated`, err)
	}
	twoTo65 := new(big.Int).Lsh(big.NewInt(1), 65)
	for _, tup := range []Tuple{
		{[]byte{1, 2}}, {"hello"}, {1066}, {-1066},
		{twoTo65}, {new(big.Int).Neg(twoTo65)},
		{float32(-3.14)}, {2.71828},
		{UUID{0, 0, 0, 0, 0, 0, 0x04, 0x2a, 0, 0, 0, 0, 0, 0, 0x05, 0x87}},
		{Versionstamp{[10]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0x0b0c}},
	} {
		p := tup.Pack()
		for n := 1; n < len(p); n++ {
			got, err := Unpack(p[:n])
			if err == nil {
				t.Errorf("Unpack(% x), a prefix of %v, = %v; want error", p[:n], tup, got)
				continue
			}
			checkDecodeError(t, p[:n], err)
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("Unpack(% x): %v, want ErrTruncated", p[:n], err)
			}
		}
	}
}

// TestUnpackInvalidUTF8 documents a deliberate difference from the Java
// binding, which rejects these (from its malformedSequences): like the Go
// binding, Unpack returns the bytes as a Go string, and Pack gives them back.
func TestUnpackInvalidUTF8(t *testing.T) {
	for _, h := range []string{
		"02 757466 08 80 00",
		"02 757466 08 c001 00",
		"02 757466 10 eda0bd 00",
		"02 757466 10 edb4a5 00",
		"02 757466 10 eda0bdedb4a5 00",
	} {
		in := unhex(t, h)
		got, err := Unpack(in)
		if err != nil {
			t.Fatalf("Unpack(% x): %v", in, err)
		}
		if want := string(in[1 : len(in)-1]); len(got) != 1 || got[0] != want {
			t.Fatalf("Unpack(% x) = %q, want %q", in, got, want)
		}
		if p := got.Pack(); !bytes.Equal(p, in) {
			t.Fatalf("re-Pack = % x, want % x", p, in)
		}
	}
}

// TestUnpackDeepNesting checks that hostile nesting depth neither exhausts
// the stack nor takes long.
func TestUnpackDeepNesting(t *testing.T) {
	const depth = 1 << 20
	open := bytes.Repeat([]byte{nestedCode}, depth)
	if _, err := Unpack(open); !errors.Is(err, ErrTruncated) {
		t.Fatalf("unterminated deep nesting: %v", err)
	}
	in := append(append(open[:depth:depth], 0x27), bytes.Repeat([]byte{0x00}, depth)...)
	got, err := Unpack(in)
	if err != nil {
		t.Fatal(err)
	}
	d := 0
	for cur := got; ; d++ {
		if len(cur) != 1 {
			t.Fatalf("depth %d: %d elements", d, len(cur))
		}
		next, ok := cur[0].(Tuple)
		if !ok {
			if cur[0] != true {
				t.Fatalf("innermost element %v", cur[0])
			}
			break
		}
		cur = next
	}
	if d != depth {
		t.Fatalf("depth = %d, want %d", d, depth)
	}
}
