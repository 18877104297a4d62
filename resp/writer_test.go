package resp

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestAppendGolden(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"simple", AppendSimpleString(nil, "OK"), "+OK\r\n"},
		{"simple empty", AppendSimpleString(nil, ""), "+\r\n"},
		{"simple CRLF", AppendSimpleString(nil, "a\r\nb\nc\r"), "+a  b c \r\n"},
		{"error", AppendError(nil, "ERR syntax error"), "-ERR syntax error\r\n"},
		{"error wrongtype", AppendError(nil, "WRONGTYPE Operation against a key holding the wrong kind of value"),
			"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{"error unknown command trailing space", AppendError(nil, "ERR unknown command 'NOPE', with args beginning with: 'a' "),
			"-ERR unknown command 'NOPE', with args beginning with: 'a' \r\n"},
		{"error CRLF", AppendError(nil, "ERR bad\r\ninjected"), "-ERR bad  injected\r\n"},
		{"int", AppendInt(nil, 1234), ":1234\r\n"},
		{"int zero", AppendInt(nil, 0), ":0\r\n"},
		{"int min", AppendInt(nil, math.MinInt64), ":-9223372036854775808\r\n"},
		{"bulk", AppendBulk(nil, []byte("hello world")), "$11\r\nhello world\r\n"},
		{"bulk empty", AppendBulk(nil, nil), "$0\r\n\r\n"},
		{"bulk binary", AppendBulk(nil, []byte("a\r\n\x00")), "$4\r\na\r\n\x00\r\n"},
		{"bulk string", AppendBulkString(nil, "foobar"), "$6\r\nfoobar\r\n"},
		{"null resp2", AppendNull(nil, 2), "$-1\r\n"},
		{"null resp3", AppendNull(nil, 3), "_\r\n"},
		{"null array resp2", AppendNullArray(nil, 2), "*-1\r\n"},
		{"null array resp3", AppendNullArray(nil, 3), "_\r\n"},
		{"array header", AppendArrayHeader(nil, 3), "*3\r\n"},
		{"empty array", AppendArrayHeader(nil, 0), "*0\r\n"},
		{"map resp3", AppendMapHeader(nil, 2, 3), "%2\r\n"},
		{"map resp2", AppendMapHeader(nil, 2, 2), "*4\r\n"},
		{"set resp3", AppendSetHeader(nil, 5, 3), "~5\r\n"},
		{"set resp2", AppendSetHeader(nil, 5, 2), "*5\r\n"},
		{"push resp3", AppendPushHeader(nil, 3, 3), ">3\r\n"},
		{"push resp2", AppendPushHeader(nil, 3, 2), "*3\r\n"},
		{"attribute", AppendAttributeHeader(nil, 1), "|1\r\n"},
		{"double resp3", AppendDouble(nil, 1.23, 3), ",1.23\r\n"},
		{"double resp3 inf", AppendDouble(nil, math.Inf(1), 3), ",inf\r\n"},
		{"double resp3 -inf", AppendDouble(nil, math.Inf(-1), 3), ",-inf\r\n"},
		{"double resp3 nan", AppendDouble(nil, math.NaN(), 3), ",nan\r\n"},
		{"double resp3 integral", AppendDouble(nil, 10, 3), ",10\r\n"},
		{"double resp2", AppendDouble(nil, 1.5, 2), "$3\r\n1.5\r\n"},
		{"double resp2 inf", AppendDouble(nil, math.Inf(1), 2), "$3\r\ninf\r\n"},
		{"double resp2 long", AppendDouble(nil, 1.0/3, 2), "$18\r\n0.3333333333333333\r\n"},
		{"bool resp3", AppendBool(nil, true, 3), "#t\r\n"},
		{"bool resp3 false", AppendBool(nil, false, 3), "#f\r\n"},
		{"bool resp2", AppendBool(nil, true, 2), ":1\r\n"},
		{"bool resp2 false", AppendBool(nil, false, 2), ":0\r\n"},
		{"verbatim resp3", AppendVerbatim(nil, "txt", []byte("Some string"), 3), "=15\r\ntxt:Some string\r\n"},
		{"verbatim resp2", AppendVerbatim(nil, "txt", []byte("Some string"), 2), "$11\r\nSome string\r\n"},
		{"verbatim string", AppendVerbatimString(nil, "mkd", "# x", 3), "=7\r\nmkd:# x\r\n"},
		{"verbatim string resp2", AppendVerbatimString(nil, "mkd", "# x", 2), "$3\r\n# x\r\n"},
		{"verbatim short format", AppendVerbatimString(nil, "t", "x", 3), "=5\r\nt  :x\r\n"},
		{"verbatim long format", AppendVerbatimString(nil, "text", "x", 3), "=5\r\ntex:x\r\n"},
		{"big number resp3", AppendBigNumber(nil, "3492890328409238509324850943850943825024385", 3),
			"(3492890328409238509324850943850943825024385\r\n"},
		{"big number resp2", AppendBigNumber(nil, "-12", 2), "$3\r\n-12\r\n"},
		{"blob error resp3", AppendBlobError(nil, "SYNTAX invalid syntax", 3), "!21\r\nSYNTAX invalid syntax\r\n"},
		{"blob error resp2", AppendBlobError(nil, "SYNTAX invalid\r\nsyntax", 2), "-SYNTAX invalid  syntax\r\n"},
		{"command", AppendCommand(nil, []byte("LLEN"), []byte("mylist")), "*2\r\n$4\r\nLLEN\r\n$6\r\nmylist\r\n"},
		{"command string", AppendCommandString(nil, "SET", "k", ""), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"},
		{"command empty", AppendCommand(nil), "*0\r\n"},
		{"appends", AppendInt([]byte("+OK\r\n"), 1), "+OK\r\n:1\r\n"},
	}
	for _, tt := range tests {
		if string(tt.got) != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// Redis's d2string (src/util.c) with fpconv_dtoa's layout (Redis 7.2+).
func TestAppendDoubleRedisFormat(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "-0"},
		{1, "1"},
		{-3, "-3"},
		{1.5, "1.5"},
		{-1.5, "-1.5"},
		{0.1, "0.1"},
		{123.456, "123.456"},
		{1.0 / 3, "0.3333333333333333"},
		{0.000001, "0.000001"},
		{0.0000015, "1.5e-6"},
		{0.000015, "0.000015"},
		{1e-7, "1e-7"},
		{1.5e-7, "1.5e-7"},
		{1.5e-10, "1.5e-10"},
		{5e-324, "5e-324"},
		{1 << 62, "4611686018427387904"},
		{-(1 << 62), "-4611686018427387904"},
		{1e19, "1e+19"},
		{4.7e18, "4.7e+18"},
		{1e20, "1e+20"},
		{1e105, "1e+105"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{1.2345678901234569e+23, "123456789012345690000000"},
		{1.2345678, "1.2345678"},
		{12345678.5, "12345678.5"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{math.NaN(), "nan"},
	}
	for _, tt := range tests {
		got := string(appendDouble(nil, tt.f))
		if got != tt.want {
			t.Errorf("%v: got %q, want %q", tt.f, got, tt.want)
		}
		if f, ok := parseDouble([]byte(got)); !ok || (f != tt.f && !math.IsNaN(f)) {
			t.Errorf("%q does not parse back to %v", got, tt.f)
		}
	}
}

func TestAppendDoubleRoundTrip(t *testing.T) {
	for i := range 20000 {
		// Spread over magnitudes and mantissas deterministically.
		bits := uint64(i)*0x9e3779b97f4a7c15 + 12345
		f := math.Float64frombits(bits)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := appendDouble(nil, f)
		g, err := strconv.ParseFloat(string(s), 64)
		if err != nil || g != f {
			t.Fatalf("%v formatted as %q, parsed back as %v (%v)", f, s, g, err)
		}
	}
}

func TestAppendValueRoundTrip(t *testing.T) {
	v := withAttrs(agg(KindMap,
		simple("s"), errv("ERR x"),
		bulk("b"), integer(-5),
		double(2.5), boolean(true),
		Value{Kind: KindVerbatim, Format: "txt", Str: []byte("v")}, Value{Kind: KindBigNumber, Str: []byte("123")},
		Value{Kind: KindBlobError, Str: []byte("E\r\nx")}, null(),
		agg(KindSet, bulk("")), agg(KindPush, agg(KindArray)),
	), simple("a"), integer(1))
	wire := AppendValue(nil, v)
	for how, r := range readers(string(wire), Limits{}) {
		got, err := r.ReadValue()
		if err != nil || !equalValue(got, v) {
			t.Fatalf("%s: %s, %v\nwant %s", how, show(got), err, show(v))
		}
	}
}

func TestAppendCommandRoundTrip(t *testing.T) {
	args := [][]byte{[]byte("SET"), []byte(""), []byte("\r\n\x00 \"'"), []byte(strings.Repeat("x", 70000))}
	r := NewReader(strings.NewReader(string(AppendCommand(nil, args...))), nil)
	got, err := r.ReadCommand(nil)
	if err != nil || len(got) != len(args) {
		t.Fatalf("%d args, %v", len(got), err)
	}
	for i := range args {
		if string(got[i]) != string(args[i]) {
			t.Fatalf("argument %d differs", i)
		}
	}
}

func TestAppendAllocs(t *testing.T) {
	buf := make([]byte, 0, 4096)
	val := []byte("value")
	allocs := testing.AllocsPerRun(1000, func() {
		b := buf[:0]
		b = AppendSimpleString(b, "OK")
		b = AppendError(b, "ERR x\r\ny")
		b = AppendInt(b, -12345)
		b = AppendBulk(b, val)
		b = AppendBulkString(b, "value")
		b = AppendNull(b, 2)
		b = AppendNullArray(b, 3)
		b = AppendArrayHeader(b, 3)
		b = AppendMapHeader(b, 3, 2)
		b = AppendSetHeader(b, 3, 3)
		b = AppendPushHeader(b, 3, 3)
		b = AppendAttributeHeader(b, 1)
		b = AppendDouble(b, 1.0/3, 2)
		b = AppendDouble(b, 1e-7, 3)
		b = AppendBool(b, true, 3)
		b = AppendVerbatim(b, "txt", val, 3)
		b = AppendVerbatimString(b, "txt", "value", 3)
		b = AppendBigNumber(b, "123", 3)
		b = AppendBlobError(b, "ERR x", 3)
		b = AppendCommand(b, val, val)
		b = AppendCommandString(b, "GET", "k")
		b = AppendValue(b, Value{Kind: KindInt, Int: 1})
		if len(b) == 0 {
			t.Fatal("nothing appended")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations, want 0", allocs)
	}
}
