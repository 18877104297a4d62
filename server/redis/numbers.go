package redis

import (
	"math"
	"strconv"
	"strings"

	"github.com/caskade/caskade/resp"
)

// string2ll parses a decimal integer exactly as Redis's string2ll does: an
// optional '-', no '+', no leading zeros, no spaces, within int64.
func string2ll(b []byte) (int64, bool) { return resp.ParseInt(b) }

func string2ull(b []byte) (uint64, bool) {
	if v, ok := string2ll(b); ok {
		if v < 0 {
			return 0, false
		}
		return uint64(v), true
	}
	s := strings.TrimLeft(string(cstr(b)), " \t\n\v\f\r")
	s = strings.TrimPrefix(s, "+")
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS.
const maxLongDoubleChars = 5 * 1024

// string2ld parses a float as Redis's string2ld does (strtold on the whole
// string, no leading space, no NaN, no overflow). Redis computes in long
// double; caskade in float64.
func string2ld(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleChars {
		return 0, false
	}
	b = cstr(b)
	if len(b) == 0 || isCSpace(b[0]) {
		return 0, false
	}
	s := string(b)
	if strings.ContainsRune(s, '_') {
		return 0, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false
	}
	if len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') && !strings.ContainsAny(body, "pP") {
		s += "p0"
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// formatFloatHuman formats an INCRBYFLOAT result the way Redis's
// ld2string(LD_STR_HUMAN) does for the values float64 can hold: plain
// decimal notation, no exponent, no trailing zeros, no "-0". Digits
// beyond the 16th significant one, which float64 arithmetic makes up
// (0.1+0.2 = 0.30000000000000004), are rounded away, as Redis's long
// double arithmetic does.
func formatFloatHuman(v float64) string {
	if v == 0 {
		return "0"
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if sigDigits(s) > 16 {
		r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'e', 15, 64), 64)
		if err == nil {
			s = strconv.FormatFloat(r, 'f', -1, 64)
		}
	}
	if s == "-0" {
		return "0"
	}
	return s
}

func sigDigits(s string) int {
	n, started := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		if c != '0' {
			started = true
		}
		if started {
			n++
		}
	}
	// Trailing zeros of an integer part are not significant here.
	if !strings.Contains(s, ".") {
		n -= len(s) - len(strings.TrimRight(s, "0"))
	}
	return n
}
