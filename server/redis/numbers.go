package redis

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/caskade/caskade/resp"
)

// string2ll parses a decimal integer exactly as Redis's string2ll does: an
// optional '-', no '+', no leading zeros, no spaces, within int64.
func string2ll(b []byte) (int64, bool) { return resp.ParseInt(b) }

// string2ull parses a SCAN cursor as Redis does, with C's strtoul in base
// 10 and nothing but the number allowed: no leading space, an optional
// sign, '-' negating modulo 2^64 as strtoul does ("-1" is the largest
// cursor), the empty string meaning 0, and no value beyond 64 bits.
func string2ull(b []byte) (uint64, bool) {
	s := cstr(b)
	if len(s) == 0 {
		return 0, true
	}
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg, s = s[0] == '-', s[1:]
	}
	if len(s) == 0 || s[0] < '0' || s[0] > '9' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS.
const maxLongDoubleChars = 5 * 1024

// INCRBYFLOAT computes, as Redis does, in the C long double of x86-64: the
// 80-bit extended format, with a 64-bit significand and binary exponents
// up to 16383, emulated here with math/big. Parsing rounds to it as strtold
// does, each sum is rounded to it, and results print as "%.17Lf" does, so
// that replies are the same bytes as Redis's: 2^63+5 is exact, 1e308*10 is
// finite, and 0.1+0.2 prints 0.3.
const (
	ldPrec    = 64     // bits of the significand
	ldMaxExp  = 16384  // big.Float exponent (0.5 <= mantissa < 1) of the largest finite values
	ldMinNorm = -16381 // exponent of the least normal values
	ldMinSub  = -16445 // log2 of the least subnormal value
)

// ldRound rounds x, already rounded to ldPrec bits, to the long double
// range: subnormal values lose precision. It reports false if x overflows
// or underflows to zero (strtold's ERANGE).
func ldRound(x *big.Float) bool {
	if x.IsInf() || x.Sign() == 0 {
		return true
	}
	e := x.MantExp(nil)
	if e < ldMinNorm {
		p := e - ldMinSub // significand bits left above the least subnormal
		if p <= 0 {
			return false
		}
		x.SetPrec(uint(p))
		e = x.MantExp(nil)
	}
	return e <= ldMaxExp
}

// string2ld parses a float as Redis's string2ld does: strtold on the whole
// string (a NUL byte ends strtold's input, and so fails the parse), no
// leading space, no NaN, no overflow and no underflow to zero. The value
// is rounded to long double.
func string2ld(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleChars || isCSpace(b[0]) {
		return nil, false
	}
	s := string(b)
	if strings.ContainsRune(s, '_') {
		return nil, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return nil, false
	}
	hex := len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')
	if hex && !strings.ContainsAny(body, "pP") {
		s += "p0"
	}
	// strconv decides what is a number, as strtold would; a range error
	// only means that float64 cannot hold it.
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(v) {
		return nil, false
	}
	x := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven)
	if c := body[0] | 0x20; c == 'i' { // inf, infinity
		return x.SetInf(v < 0), true
	}
	base := 10
	if hex {
		base = 0
	}
	if _, _, err := x.Parse(s, base); err != nil {
		return nil, false
	}
	if !ldRound(x) || x.IsInf() {
		return nil, false
	}
	return x, true
}

// ldAdd returns a+b rounded to long double, or false if that is NaN or
// infinite (where Redis replies "increment would produce NaN or
// Infinity").
func ldAdd(a, b *big.Float) (*big.Float, bool) {
	if a.IsInf() || b.IsInf() {
		return nil, false
	}
	z := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Add(a, b)
	if !ldRound(z) || z.IsInf() {
		return nil, false
	}
	return z, true
}

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// formatLongDouble formats an INCRBYFLOAT result as Redis's
// ld2string(LD_STR_HUMAN) does: "%.17Lf", without trailing zeros after the
// point, and "0" for "-0".
func formatLongDouble(x *big.Float) string {
	s := x.Text('f', 17)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		return "0"
	}
	return s
}
