package resp

import (
	"math"
	"strconv"
)

// ParseInt parses a decimal integer exactly as Redis's string2ll does:
// an optional '-', no '+', no leading zeros, no "-0", at most 20 bytes,
// within the int64 range. Servers use it for integer arguments so that
// they accept what Redis accepts.
func ParseInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n >= 21 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	i := 0
	neg := b[0] == '-'
	if neg {
		i++
		if i == n {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	v := uint64(b[i] - '0')
	for i++; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > math.MaxUint64/10 {
			return 0, false
		}
		v *= 10
		if v > math.MaxUint64-uint64(c-'0') {
			return 0, false
		}
		v += uint64(c - '0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(^v + 1), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// appendDouble appends f formatted as Redis's d2string does (Redis 7.2 and
// later): "nan", "inf", "-inf", "0", "-0", integers in ±2^62 as integers,
// other values as the shortest round-trip digits laid out by fpconv's
// emit_digits (plain up to 7 trailing zeros or 6 leading zeros, otherwise
// scientific with a signed exponent of 1 to 3 digits, e.g. 1e+20, 1.5e-7).
// Redis takes its digits from Grisu2, which on rare inputs returns a
// longer (still round-trip) digit string than Go's shortest formatting.
func appendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "nan"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case f == 0:
		if math.Signbit(f) {
			return append(b, "-0"...)
		}
		return append(b, '0')
	}
	// double2ll: integers in [-2^62, 2^62] print as integers.
	if f >= -(1<<62) && f <= 1<<62 {
		if i := int64(f); float64(i) == f {
			return strconv.AppendInt(b, i, 10)
		}
	}
	neg := f < 0
	if neg {
		b = append(b, '-')
		f = -f
	}
	// Shortest digits in the form d.ddde±xx.
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	var digits [20]byte
	nd := 0
	i := 0
	for ; i < len(s) && s[i] != 'e'; i++ {
		if s[i] != '.' {
			digits[nd] = s[i]
			nd++
		}
	}
	e := 0
	eneg := s[i+1] == '-'
	for _, c := range s[i+2:] {
		e = e*10 + int(c-'0')
	}
	if eneg {
		e = -e
	}
	// The value is digits * 10^k.
	k := e - (nd - 1)
	exp := abs(k + nd - 1)
	if k >= 0 && exp < nd+7 {
		b = append(b, digits[:nd]...)
		for range k {
			b = append(b, '0')
		}
		return b
	}
	if k < 0 && (k > -7 || exp < 4) {
		offset := nd - abs(k)
		if offset <= 0 {
			b = append(b, '0', '.')
			for range -offset {
				b = append(b, '0')
			}
			return append(b, digits[:nd]...)
		}
		b = append(b, digits[:offset]...)
		b = append(b, '.')
		return append(b, digits[offset:nd]...)
	}
	b = append(b, digits[0])
	if nd > 1 {
		b = append(b, '.')
		b = append(b, digits[1:nd]...)
	}
	b = append(b, 'e')
	if k+nd-1 < 0 {
		b = append(b, '-')
	} else {
		b = append(b, '+')
	}
	cent := 0
	if exp > 99 {
		cent = exp / 100
		b = append(b, byte(cent)+'0')
		exp -= cent * 100
	}
	if exp > 9 {
		dec := exp / 10
		b = append(b, byte(dec)+'0')
		exp -= dec * 10
	} else if cent != 0 {
		b = append(b, '0')
	}
	return append(b, byte(exp%10)+'0')
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
