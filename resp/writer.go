package resp

import "strconv"

// appendLine appends prefix, s with every \r and \n replaced by a space
// (as Redis does for error texts), and CRLF.
func appendLine[S ~string | ~[]byte](b []byte, prefix byte, s S) []byte {
	b = append(b, prefix)
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] != '\r' && s[j] != '\n' {
			j++
		}
		b = append(b, s[i:j]...)
		if j < len(s) {
			b = append(b, ' ')
			j++
		}
		i = j
	}
	return append(b, '\r', '\n')
}

// appendPrefixed appends prefix, n in decimal and CRLF.
func appendPrefixed(b []byte, prefix byte, n int64) []byte {
	b = append(b, prefix)
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

// AppendSimpleString appends the simple string reply +s. Any \r or \n in s
// is replaced by a space, so the reply cannot break framing; use a bulk
// string for arbitrary bytes.
func AppendSimpleString(b []byte, s string) []byte {
	return appendLine(b, '+', s)
}

// AppendError appends the error reply -s. s is the full text including
// its upper-case code word, such as "ERR syntax error" or "WRONGTYPE
// Operation against a key holding the wrong kind of value"; nothing is
// added to it. Any \r or \n in s is replaced by a space, as Redis does.
func AppendError(b []byte, s string) []byte {
	return appendLine(b, '-', s)
}

// AppendInt appends the integer reply :n.
func AppendInt(b []byte, n int64) []byte {
	return appendPrefixed(b, ':', n)
}

// AppendBulk appends p as a bulk string, $len CRLF p CRLF. A nil p is
// written as an empty bulk string; use AppendNull for a null.
func AppendBulk(b []byte, p []byte) []byte {
	b = appendPrefixed(b, '$', int64(len(p)))
	b = append(b, p...)
	return append(b, '\r', '\n')
}

// AppendBulkString appends s as a bulk string.
func AppendBulkString(b []byte, s string) []byte {
	b = appendPrefixed(b, '$', int64(len(s)))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendNull appends a null: $-1 (the RESP2 null bulk string) if proto is
// below 3, _ otherwise.
func AppendNull(b []byte, proto int) []byte {
	if proto >= 3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "$-1\r\n"...)
}

// AppendNullArray appends a null aggregate: *-1 (the RESP2 null array, as
// EXEC sends when a WATCHed key changed) if proto is below 3, _ otherwise.
func AppendNullArray(b []byte, proto int) []byte {
	if proto >= 3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "*-1\r\n"...)
}

// AppendArrayHeader appends *n; n elements must follow.
func AppendArrayHeader(b []byte, n int) []byte {
	return appendPrefixed(b, '*', int64(n))
}

// AppendMapHeader appends the header of a map of n key-value pairs: %n
// for RESP3, *2n (a flat array of keys and values) for RESP2. 2n elements
// must follow, keys and values alternating.
func AppendMapHeader(b []byte, n int, proto int) []byte {
	if proto >= 3 {
		return appendPrefixed(b, '%', int64(n))
	}
	return appendPrefixed(b, '*', 2*int64(n))
}

// AppendSetHeader appends ~n for RESP3, *n for RESP2; n elements must
// follow.
func AppendSetHeader(b []byte, n int, proto int) []byte {
	if proto >= 3 {
		return appendPrefixed(b, '~', int64(n))
	}
	return appendPrefixed(b, '*', int64(n))
}

// AppendPushHeader appends >n for RESP3, *n for RESP2 (how Redis sends
// Pub/Sub messages to RESP2 clients); n elements must follow, the first a
// string naming the kind of push data.
func AppendPushHeader(b []byte, n int, proto int) []byte {
	if proto >= 3 {
		return appendPrefixed(b, '>', int64(n))
	}
	return appendPrefixed(b, '*', int64(n))
}

// AppendAttributeHeader appends the RESP3 attribute header |n; n
// key-value pairs must follow, then the element they describe. RESP2 has
// no attributes: never send one to a RESP2 client.
func AppendAttributeHeader(b []byte, n int) []byte {
	return appendPrefixed(b, '|', int64(n))
}

// AppendDouble appends f formatted as Redis does (d2string: "1.5",
// "3", "1e+20", "inf", "-inf", "nan"), as a RESP3 double ,f or, for
// RESP2, as a bulk string.
func AppendDouble(b []byte, f float64, proto int) []byte {
	if proto >= 3 {
		b = append(b, ',')
		b = appendDouble(b, f)
		return append(b, '\r', '\n')
	}
	var buf [40]byte
	s := appendDouble(buf[:0], f)
	return AppendBulk(b, s)
}

// AppendBool appends #t or #f for RESP3, :1 or :0 for RESP2.
func AppendBool(b []byte, v bool, proto int) []byte {
	switch {
	case proto >= 3 && v:
		return append(b, "#t\r\n"...)
	case proto >= 3:
		return append(b, "#f\r\n"...)
	case v:
		return append(b, ":1\r\n"...)
	default:
		return append(b, ":0\r\n"...)
	}
}

// AppendVerbatim appends text as a RESP3 verbatim string =len
// CRLF format:text CRLF, or for RESP2 as a bulk string of text alone.
// format names the text's format, "txt" or "mkd"; it is cut or padded
// with spaces to exactly three bytes.
func AppendVerbatim(b []byte, format string, text []byte, proto int) []byte {
	if proto < 3 {
		return AppendBulk(b, text)
	}
	b = appendVerbatimHeader(b, format, len(text))
	b = append(b, text...)
	return append(b, '\r', '\n')
}

// AppendVerbatimString is AppendVerbatim for a string text.
func AppendVerbatimString(b []byte, format string, text string, proto int) []byte {
	if proto < 3 {
		return AppendBulkString(b, text)
	}
	b = appendVerbatimHeader(b, format, len(text))
	b = append(b, text...)
	return append(b, '\r', '\n')
}

func appendVerbatimHeader(b []byte, format string, n int) []byte {
	b = appendPrefixed(b, '=', int64(n)+4)
	for i := range 3 {
		if i < len(format) {
			b = append(b, format[i])
		} else {
			b = append(b, ' ')
		}
	}
	return append(b, ':')
}

// AppendBigNumber appends the decimal integer s (digits with an optional
// sign, not checked) as a RESP3 big number (s, or for RESP2 as a bulk
// string, as Redis does.
func AppendBigNumber(b []byte, s string, proto int) []byte {
	if proto < 3 {
		return AppendBulkString(b, s)
	}
	return appendLine(b, '(', s)
}

// AppendBlobError appends s (the full text with its code word, as for
// AppendError) as a RESP3 blob error !len CRLF s CRLF, binary safe. For
// RESP2, which has no blob errors, it appends AppendError(b, s).
func AppendBlobError(b []byte, s string, proto int) []byte {
	if proto < 3 {
		return AppendError(b, s)
	}
	b = appendPrefixed(b, '!', int64(len(s)))
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendCommand appends a command as a client sends it: a multibulk array
// of bulk strings, *N CRLF then $len CRLF arg CRLF for each argument.
func AppendCommand(b []byte, args ...[]byte) []byte {
	b = appendPrefixed(b, '*', int64(len(args)))
	for _, a := range args {
		b = AppendBulk(b, a)
	}
	return b
}

// AppendCommandString is AppendCommand for string arguments.
func AppendCommandString(b []byte, args ...string) []byte {
	b = appendPrefixed(b, '*', int64(len(args)))
	for _, a := range args {
		b = AppendBulkString(b, a)
	}
	return b
}

// AppendValue appends v in its RESP3 encoding, its Attrs first; it is the
// inverse of ReadValue (a null is written as _, a verbatim string with its
// Format, a map with len(v.Elems)/2 pairs). Simple strings and errors get
// \r and \n replaced by spaces. To answer a RESP2 client, use the
// proto-aware Append functions instead.
func AppendValue(b []byte, v Value) []byte {
	if len(v.Attrs) > 0 {
		b = AppendAttributeHeader(b, len(v.Attrs)/2)
		for _, a := range v.Attrs[:len(v.Attrs)/2*2] {
			b = AppendValue(b, a)
		}
	}
	switch v.Kind {
	case KindSimpleString, KindError, KindBigNumber:
		b = appendLine(b, byte(v.Kind), v.Str)
	case KindInt:
		b = AppendInt(b, v.Int)
	case KindBulk, KindBlobError:
		b = appendPrefixed(b, byte(v.Kind), int64(len(v.Str)))
		b = append(b, v.Str...)
		b = append(b, '\r', '\n')
	case KindVerbatim:
		b = AppendVerbatim(b, v.Format, v.Str, 3)
	case KindDouble:
		b = AppendDouble(b, v.Float, 3)
	case KindBool:
		b = AppendBool(b, v.Bool, 3)
	case KindMap:
		b = appendPrefixed(b, '%', int64(len(v.Elems)/2))
		for _, e := range v.Elems[:len(v.Elems)/2*2] {
			b = AppendValue(b, e)
		}
	case KindArray, KindSet, KindPush:
		b = appendPrefixed(b, byte(v.Kind), int64(len(v.Elems)))
		for _, e := range v.Elems {
			b = AppendValue(b, e)
		}
	default: // KindNull, and anything unknown
		b = append(b, "_\r\n"...)
	}
	return b
}
