package resp

import (
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
)

// Value constructors for the tables.
func simple(s string) Value  { return Value{Kind: KindSimpleString, Str: []byte(s)} }
func errv(s string) Value    { return Value{Kind: KindError, Str: []byte(s)} }
func bulk(s string) Value    { return Value{Kind: KindBulk, Str: []byte(s)} }
func integer(n int64) Value  { return Value{Kind: KindInt, Int: n} }
func double(f float64) Value { return Value{Kind: KindDouble, Float: f} }
func boolean(b bool) Value   { return Value{Kind: KindBool, Bool: b} }
func null() Value            { return Value{Kind: KindNull} }
func agg(k Kind, elems ...Value) Value {
	if elems == nil {
		elems = []Value{}
	}
	return Value{Kind: k, Elems: elems}
}
func withAttrs(v Value, attrs ...Value) Value { v.Attrs = attrs; return v }

// Examples from redis-specifications protocol/RESP3.md and RESP2.md. For
// canonical ones, AppendValue must give the same bytes back.
var specExamples = []struct {
	name      string
	wire      string
	want      Value
	canonical bool
}{
	{"blob string", "$11\r\nhello world\r\n", bulk("hello world"), true},
	{"empty blob string", "$0\r\n\r\n", bulk(""), true},
	{"simple string", "+hello world\r\n", simple("hello world"), true},
	{"simple error", "-ERR this is the error description\r\n", errv("ERR this is the error description"), true},
	{"number", ":1234\r\n", integer(1234), true},
	{"null", "_\r\n", null(), true},
	{"double", ",1.23\r\n", double(1.23), true},
	{"double integer", ",10\r\n", double(10), true},
	{"double inf", ",inf\r\n", double(math.Inf(1)), true},
	{"double -inf", ",-inf\r\n", double(math.Inf(-1)), true},
	{"double nan", ",nan\r\n", double(math.NaN()), true},
	{"double -nan (before 7.2)", ",-nan\r\n", double(math.NaN()), false},
	{"double exponent", ",1.5E-3\r\n", double(0.0015), false},
	{"boolean true", "#t\r\n", boolean(true), true},
	{"boolean false", "#f\r\n", boolean(false), true},
	{"blob error", "!21\r\nSYNTAX invalid syntax\r\n", Value{Kind: KindBlobError, Str: []byte("SYNTAX invalid syntax")}, true},
	{"verbatim string", "=15\r\ntxt:Some string\r\n", Value{Kind: KindVerbatim, Format: "txt", Str: []byte("Some string")}, true},
	{"big number", "(3492890328409238509324850943850943825024385\r\n", Value{Kind: KindBigNumber, Str: []byte("3492890328409238509324850943850943825024385")}, true},
	{"array", "*3\r\n:1\r\n:2\r\n:3\r\n", agg(KindArray, integer(1), integer(2), integer(3)), true},
	{"nested array", "*2\r\n*3\r\n:1\r\n$5\r\nhello\r\n:2\r\n#f\r\n",
		agg(KindArray, agg(KindArray, integer(1), bulk("hello"), integer(2)), boolean(false)), true},
	{"map", "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", agg(KindMap, simple("first"), integer(1), simple("second"), integer(2)), true},
	{"set", "~5\r\n+orange\r\n+apple\r\n#t\r\n:100\r\n:999\r\n",
		agg(KindSet, simple("orange"), simple("apple"), boolean(true), integer(100), integer(999)), true},
	{"attribute", "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n",
		withAttrs(agg(KindArray, integer(2039123), integer(9543892)),
			simple("key-popularity"), agg(KindMap, bulk("a"), double(0.1923), bulk("b"), double(0.0012))), true},
	{"attribute on an element", "*3\r\n:1\r\n:2\r\n|1\r\n+ttl\r\n:3600\r\n:3\r\n",
		agg(KindArray, integer(1), integer(2), withAttrs(integer(3), simple("ttl"), integer(3600))), true},
	{"push", ">3\r\n+message\r\n+somechannel\r\n+this is the message\r\n",
		agg(KindPush, simple("message"), simple("somechannel"), simple("this is the message")), true},
	// The spec calls this "Hello world", but its chunks spell "Hello word".
	{"streamed string", "$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n", bulk("Hello word"), false},
	{"streamed array", "*?\r\n:1\r\n:2\r\n:3\r\n.\r\n", agg(KindArray, integer(1), integer(2), integer(3)), false},
	{"streamed map", "%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n", agg(KindMap, simple("a"), integer(1), simple("b"), integer(2)), false},
	{"streamed set empty", "~?\r\n.\r\n", agg(KindSet), false},
	// RESP2.md.
	{"resp2 ok", "+OK\r\n", simple("OK"), true},
	{"resp2 error", "-Error message\r\n", errv("Error message"), true},
	{"resp2 bulk", "$6\r\nfoobar\r\n", bulk("foobar"), true},
	{"resp2 null bulk", "$-1\r\n", null(), false},
	{"resp2 empty array", "*0\r\n", agg(KindArray), true},
	{"resp2 null array", "*-1\r\n", null(), false},
	{"resp2 array of bulks", "*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n", agg(KindArray, bulk("foo"), bulk("bar")), true},
	{"resp2 mixed", "*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n$6\r\nfoobar\r\n",
		agg(KindArray, integer(1), integer(2), integer(3), integer(4), bulk("foobar")), true},
	{"resp2 nested", "*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n*2\r\n+Foo\r\n-Bar\r\n",
		agg(KindArray, agg(KindArray, integer(1), integer(2), integer(3)), agg(KindArray, simple("Foo"), errv("Bar"))), true},
	{"resp2 null in array", "*3\r\n$3\r\nfoo\r\n$-1\r\n$3\r\nbar\r\n", agg(KindArray, bulk("foo"), null(), bulk("bar")), false},
}

func TestReadValueSpecExamples(t *testing.T) {
	for _, tt := range specExamples {
		for how, r := range readers(tt.wire+"+next\r\n", Limits{}) {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				v, err := r.ReadValue()
				if err != nil {
					t.Fatal(err)
				}
				if !equalValue(v, tt.want) {
					t.Fatalf("got %s, want %s", show(v), show(tt.want))
				}
				if tt.canonical {
					if got := string(AppendValue(nil, v)); got != tt.wire {
						t.Fatalf("AppendValue = %q, want %q", got, tt.wire)
					}
				}
				next, err := r.ReadValue()
				if err != nil || string(next.Str) != "next" {
					t.Fatalf("value after it: %s, %v", show(next), err)
				}
				if _, err := r.ReadValue(); err != io.EOF {
					t.Fatalf("at the end: %v, want io.EOF", err)
				}
			})
		}
	}
}

func TestReadValueTypes(t *testing.T) {
	tests := []struct {
		wire string
		want Value
	}{
		{"+\r\n", simple("")},
		{"+a\rb\r\n", simple("a\rb")},
		{":0\r\n", integer(0)},
		{":-1\r\n", integer(-1)},
		{":9223372036854775807\r\n", integer(math.MaxInt64)},
		{":-9223372036854775808\r\n", integer(math.MinInt64)},
		{"$4\r\na\r\nb\r\n", bulk("a\r\nb")},
		{",-0\r\n", double(math.Copysign(0, -1))},
		{",1e+20\r\n", double(1e20)},
		{",NAN\r\n", double(math.NaN())},
		{",nan(0x1)\r\n", double(math.NaN())},
		{",-Inf\r\n", double(math.Inf(-1))},
		{"(-12\r\n", Value{Kind: KindBigNumber, Str: []byte("-12")}},
		{"=4\r\nmkd:\r\n", Value{Kind: KindVerbatim, Format: "mkd", Str: []byte("")}},
		{"=7\r\nabc:xyz\r\n", Value{Kind: KindVerbatim, Format: "abc", Str: []byte("xyz")}},
		{"!-1\r\n", null()},
		{"%0\r\n", agg(KindMap)},
		{"%-1\r\n", null()},
		{"~0\r\n", agg(KindSet)},
		{">0\r\n", agg(KindPush)},
		{"|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n:3\r\n", withAttrs(integer(3), simple("a"), integer(1), simple("b"), integer(2))},
		{"|0\r\n:3\r\n", integer(3)},
		{"|1\r\n+a\r\n|1\r\n+b\r\n:2\r\n:1\r\n:3\r\n", withAttrs(integer(3), simple("a"), withAttrs(integer(1), simple("b"), integer(2)))},
		{"|1\r\n+p\r\n:1\r\n>1\r\n+x\r\n", withAttrs(agg(KindPush, simple("x")), simple("p"), integer(1))},
		{"*?\r\n*?\r\n.\r\n$?\r\n;0\r\n.\r\n", agg(KindArray, agg(KindArray), bulk(""))},
	}
	for _, tt := range tests {
		for how, r := range readers(tt.wire, Limits{}) {
			t.Run(tt.wire+"/"+how, func(t *testing.T) {
				v, err := r.ReadValue()
				if err != nil {
					t.Fatal(err)
				}
				if !equalValue(v, tt.want) {
					t.Fatalf("got %s, want %s", show(v), show(tt.want))
				}
			})
		}
	}
}

func TestReadValueEmptyNotNil(t *testing.T) {
	r := NewReader(strings.NewReader("$0\r\n\r\n*0\r\n+\r\n"), nil)
	for range 3 {
		v, err := r.ReadValue()
		if err != nil {
			t.Fatal(err)
		}
		if v.Str == nil && v.Elems == nil {
			t.Fatalf("%s: empty value has nil Str and Elems", v.Kind)
		}
	}
}

func TestReadValueErrors(t *testing.T) {
	deep := strings.Repeat("*1\r\n", DefaultMaxDepth+1) + ":1\r\n"
	tests := []struct {
		name string
		wire string
		lim  Limits
		want string // protocol error text
	}{
		{"type byte", "?\r\n", Limits{}, `Protocol error: invalid reply type byte '?'`},
		{"inline reply", "OK\r\n", Limits{}, `Protocol error: invalid reply type byte 'O'`},
		{"LF only", "+OK\n", Limits{}, "Protocol error: line not terminated by CRLF"},
		{"bad int", ":abc\r\n", Limits{}, "Protocol error: invalid integer"},
		{"empty int", ":\r\n", Limits{}, "Protocol error: invalid integer"},
		{"int overflow", ":9223372036854775808\r\n", Limits{}, "Protocol error: invalid integer"},
		{"bad double", ",abc\r\n", Limits{}, "Protocol error: invalid double"},
		{"bad bool", "#x\r\n", Limits{}, "Protocol error: invalid boolean"},
		{"bad null", "_x\r\n", Limits{}, "Protocol error: invalid null"},
		{"bad big number", "(12a\r\n", Limits{}, "Protocol error: invalid big number"},
		{"empty big number", "(\r\n", Limits{}, "Protocol error: invalid big number"},
		{"bad verbatim", "=3\r\ntxt\r\n", Limits{}, "Protocol error: invalid verbatim string"},
		{"verbatim no colon", "=5\r\ntxt-x\r\n", Limits{}, "Protocol error: invalid verbatim string"},
		{"bulk terminator", "$3\r\nfooXX", Limits{}, "Protocol error: line not terminated by CRLF"},
		{"bulk length", "$-2\r\n", Limits{}, "Protocol error: invalid bulk length"},
		{"bulk length text", "$x\r\n", Limits{}, "Protocol error: invalid bulk length"},
		{"bulk over limit", "$11\r\nhello world\r\n", Limits{MaxBulkLen: 10}, "Protocol error: invalid bulk length"},
		{"streamed over limit", "$?\r\n;6\r\nhello \r\n;5\r\nworld\r\n;0\r\n", Limits{MaxBulkLen: 10}, "Protocol error: invalid bulk length"},
		{"simple over limit", "+hello world\r\n", Limits{MaxBulkLen: 10}, "Protocol error: too big reply line"},
		{"array length", "*-2\r\n", Limits{}, "Protocol error: invalid aggregate length"},
		{"attribute null", "|-1\r\n", Limits{}, "Protocol error: invalid aggregate length"},
		{"map overflow", "%9223372036854775807\r\n", Limits{}, "Protocol error: invalid aggregate length"},
		{"streamed push", ">?\r\n", Limits{}, "Protocol error: invalid aggregate length"},
		{"end at top", ".\r\n", Limits{}, "Protocol error: unexpected end of streamed aggregate"},
		{"end in array", "*2\r\n:1\r\n.\r\n", Limits{}, "Protocol error: unexpected end of streamed aggregate"},
		{"odd streamed map", "%?\r\n+a\r\n.\r\n", Limits{}, "Protocol error: streamed map with an odd number of elements"},
		{"chunk type", "$?\r\n:1\r\n", Limits{}, "Protocol error: invalid streamed string chunk"},
		{"chunk length", "$?\r\n;x\r\n", Limits{}, "Protocol error: invalid streamed string chunk"},
		{"too deep", deep, Limits{}, "Protocol error: reply nested too deeply"},
		{"too deep small", "*1\r\n*1\r\n:1\r\n", Limits{MaxDepth: 1}, "Protocol error: reply nested too deeply"},
		{"attribute too deep", "|1\r\n+a\r\n:1\r\n:1\r\n", Limits{MaxDepth: 0 + 1}, ""},
	}
	for _, tt := range tests {
		for how, r := range readers(tt.wire, tt.lim) {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				_, err := r.ReadValue()
				if tt.want == "" {
					if err != nil {
						t.Fatal(err)
					}
					return
				}
				wantProtocolError(t, err, tt.want)
				if _, err2 := r.ReadValue(); err2 != err {
					t.Fatalf("error not sticky: %v then %v", err, err2)
				}
			})
		}
	}
}

func TestReadValueDepthLimit(t *testing.T) {
	for _, depth := range []int{1, 5, DefaultMaxDepth} {
		wire := strings.Repeat("*1\r\n", depth) + ":7\r\n"
		r := NewReader(strings.NewReader(wire+wire), &Options{Limits: Limits{MaxDepth: depth}})
		v, err := r.ReadValue()
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		for range depth {
			v = v.Elems[0]
		}
		if v.Int != 7 {
			t.Fatalf("depth %d: innermost %s", depth, show(v))
		}
		if err := r.SkipValue(); err != nil {
			t.Fatalf("SkipValue at depth %d: %v", depth, err)
		}
		r = NewReader(strings.NewReader("*1\r\n"+wire), &Options{Limits: Limits{MaxDepth: depth}})
		if err := r.SkipValue(); !errors.Is(err, ErrProtocol) {
			t.Fatalf("SkipValue at depth %d+1: %v", depth, err)
		}
	}
}

// A long chain of attributes must not recurse (no stack growth per
// attribute).
func TestReadValueLongAttributeChain(t *testing.T) {
	const n = 100000
	wire := strings.Repeat("|1\r\n+a\r\n:1\r\n", n) + ":2\r\n"
	r := NewReader(strings.NewReader(wire+wire), nil)
	v, err := r.ReadValue()
	if err != nil {
		t.Fatal(err)
	}
	if v.Int != 2 || len(v.Attrs) != 2*n {
		t.Fatalf("got %d attributes on %s", len(v.Attrs), v.Kind)
	}
	if err := r.SkipValue(); err != nil {
		t.Fatal(err)
	}
}

func TestReadValueEOF(t *testing.T) {
	for _, wire := range []string{"+OK", "$5\r\nhel", "*2\r\n:1\r\n", "$?\r\n;1\r\na\r\n", "*?\r\n:1\r\n", "|1\r\n+a\r\n:1\r\n"} {
		r := NewReader(strings.NewReader(wire), nil)
		if _, err := r.ReadValue(); err != io.ErrUnexpectedEOF {
			t.Errorf("%q: %v, want io.ErrUnexpectedEOF", wire, err)
		}
	}
	r := NewReader(strings.NewReader(""), nil)
	if _, err := r.ReadValue(); err != io.EOF {
		t.Errorf("empty input: %v, want io.EOF", err)
	}
}

func TestReadValueHugeDeclaredLengths(t *testing.T) {
	for _, wire := range []string{
		"$536870912\r\n" + strings.Repeat("x", 1000),
		"*1000000000\r\n" + strings.Repeat(":1\r\n", 100),
		"%1000000000\r\n" + strings.Repeat(":1\r\n", 100),
	} {
		r := NewReader(strings.NewReader(wire), nil)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := r.ReadValue()
		runtime.ReadMemStats(&after)
		if err != io.ErrUnexpectedEOF {
			t.Fatalf("%.20q: %v", wire, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Fatalf("%.20q: allocated %d bytes", wire, got)
		}
	}
}

func TestReadValueAllocs(t *testing.T) {
	wire := "*4\r\n$3\r\nfoo\r\n:42\r\n%1\r\n+k\r\n,1.5\r\n=7\r\ntxt:abc\r\n"
	r := NewReader(&loopReader{data: []byte(wire)}, nil)
	r.ReadValue()
	allocs := testing.AllocsPerRun(1000, func() {
		v, err := r.ReadValue()
		if err != nil || len(v.Elems) != 4 || string(v.Elems[3].Str) != "abc" {
			t.Fatalf("%s %v", show(v), err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per ReadValue, want 0", allocs)
	}
}

func TestClone(t *testing.T) {
	wire := "|1\r\n+a\r\n:1\r\n*3\r\n$3\r\nfoo\r\n%1\r\n+k\r\n$0\r\n\r\n*0\r\n" + "*3\r\n$3\r\nbar\r\n%1\r\n+x\r\n$1\r\ny\r\n*1\r\n:1\r\n"
	r := NewReader(strings.NewReader(wire), nil)
	v, err := r.ReadValue()
	if err != nil {
		t.Fatal(err)
	}
	want := withAttrs(agg(KindArray, bulk("foo"), agg(KindMap, simple("k"), bulk("")), agg(KindArray)), simple("a"), integer(1))
	c := v.Clone()
	if _, err := r.ReadValue(); err != nil { // reuses the arena v points into
		t.Fatal(err)
	}
	if !equalValue(c, want) {
		t.Fatalf("clone changed after the next read: %s", show(c))
	}
	if c.Elems[1].Elems[1].Str == nil || c.Elems[2].Elems == nil {
		t.Fatal("clone made empty values nil")
	}
	if (Value{Kind: KindInt, Int: 3}).Clone().Int != 3 {
		t.Fatal("clone of a scalar")
	}
}

func TestReadHeaderAndBlob(t *testing.T) {
	wire := "*3\r\n$3\r\nfoo\r\n:5\r\n$5\r\nskipd\r\n$?\r\n;2\r\nab\r\n;1\r\nc\r\n;0\r\n+OK\r\n$-1\r\n*-1\r\n_\r\n,2.5\r\n#t\r\n(123\r\n"
	for how, r := range readers(wire, Limits{}) {
		t.Run(how, func(t *testing.T) {
			h, err := r.ReadHeader()
			if err != nil || h.Kind != KindArray || h.Len != 3 {
				t.Fatalf("array header %+v %v", h, err)
			}
			if k, err := r.PeekKind(); err != nil || k != KindBulk {
				t.Fatalf("PeekKind = %v %v", k, err)
			}
			h, err = r.ReadHeader()
			if err != nil || h.Kind != KindBulk || h.Len != 3 {
				t.Fatalf("bulk header %+v %v", h, err)
			}
			b, err := r.ReadBlob([]byte("x"))
			if err != nil || string(b) != "xfoo" {
				t.Fatalf("ReadBlob = %q %v", b, err)
			}
			if _, err := r.ReadBlob(nil); err != ErrNoBlob {
				t.Fatalf("second ReadBlob: %v", err)
			}
			h, err = r.ReadHeader()
			if err != nil || h.Kind != KindInt || h.Int != 5 || string(h.Line) != "5" {
				t.Fatalf("int header %+v %v", h, err)
			}
			// A blob body left unread is skipped by the next read.
			if h, err = r.ReadHeader(); err != nil || h.Len != 5 {
				t.Fatalf("bulk header %+v %v", h, err)
			}
			if h, err = r.ReadHeader(); err != nil || h.Kind != KindBulk || h.Len != StreamedLen {
				t.Fatalf("streamed header %+v %v", h, err)
			}
			if b, err = r.ReadBlob(nil); err != nil || string(b) != "abc" {
				t.Fatalf("streamed ReadBlob = %q %v", b, err)
			}
			if h, err = r.ReadHeader(); err != nil || h.Kind != KindSimpleString || string(h.Line) != "OK" {
				t.Fatalf("simple header %+v %v", h, err)
			}
			for _, k := range []Kind{KindBulk, KindArray, KindNull} {
				if h, err = r.ReadHeader(); err != nil || h.Kind != k || !h.IsNull() {
					t.Fatalf("null header %+v %v", h, err)
				}
			}
			if h, err = r.ReadHeader(); err != nil || h.Float != 2.5 || string(h.Line) != "2.5" {
				t.Fatalf("double header %+v %v", h, err)
			}
			if h, err = r.ReadHeader(); err != nil || !h.Bool {
				t.Fatalf("bool header %+v %v", h, err)
			}
			if h, err = r.ReadHeader(); err != nil || h.Kind != KindBigNumber || string(h.Line) != "123" || h.IsNull() {
				t.Fatalf("big number header %+v %v", h, err)
			}
			if _, err = r.ReadHeader(); err != io.EOF {
				t.Fatalf("at the end: %v", err)
			}
		})
	}
}

func TestReadBlobGrowsAsDataArrives(t *testing.T) {
	r := NewReader(strings.NewReader("$536870912\r\n"+strings.Repeat("x", 1000)), nil)
	h, err := r.ReadHeader()
	if err != nil || h.Len != 536870912 {
		t.Fatal(h, err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b, err := r.ReadBlob(nil)
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF || len(b) != 1000 {
		t.Fatalf("ReadBlob: %d bytes, %v", len(b), err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("allocated %d bytes", got)
	}
}

func TestSkipValue(t *testing.T) {
	wire := "|1\r\n+a\r\n:1\r\n*3\r\n$3\r\nfoo\r\n%1\r\n+k\r\n~?\r\n$?\r\n;1\r\nx\r\n;0\r\n.\r\n>1\r\n_\r\n" + ":42\r\n"
	for how, r := range readers(wire, Limits{}) {
		t.Run(how, func(t *testing.T) {
			if err := r.SkipValue(); err != nil {
				t.Fatal(err)
			}
			v, err := r.ReadValue()
			if err != nil || v.Int != 42 {
				t.Fatalf("after SkipValue: %s %v", show(v), err)
			}
		})
	}
	r := NewReader(&loopReader{data: []byte(wire)}, nil)
	allocs := testing.AllocsPerRun(100, func() {
		if err := r.SkipValue(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("SkipValue allocates %v times", allocs)
	}
}

func TestReadValueIdleErrorNotSticky(t *testing.T) {
	r := NewReader(&timeoutReader{r: strings.NewReader("+OK\r\n")}, nil)
	if _, err := r.ReadValue(); err == nil {
		t.Fatal("no timeout")
	}
	if v, err := r.ReadValue(); err != nil || string(v.Str) != "OK" {
		t.Fatalf("after an idle timeout: %s %v", show(v), err)
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindBulk: "bulk", KindMap: "map", KindAttribute: "attribute", Kind('?'): "kind '?'"} {
		if got := k.String(); got != want {
			t.Errorf("%c: %q, want %q", k, got, want)
		}
	}
}
