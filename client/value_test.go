package client

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/caskade/caskade/resp"
)

func readOne(t *testing.T, wire string) result {
	t.Helper()
	rd := resp.NewReader(bufio.NewReader(bytes.NewReader([]byte(wire))), nil)
	var res result
	if err := readResult(rd, &res); err != nil {
		t.Fatalf("readResult(%q): %v", wire, err)
	}
	return res
}

func TestReadResultAndAccessors(t *testing.T) {
	for _, tc := range []struct {
		wire  string
		kind  Kind
		str   string // Str(), or "" if it fails
		num   int64  // Int(), if intOK
		intOK bool
		err   string // server error text
		isNil bool
	}{
		{wire: "+OK\r\n", kind: resp.KindSimpleString, str: "OK"},
		{wire: "+PONG\r\n", kind: resp.KindSimpleString, str: "PONG"},
		{wire: "$5\r\nhello\r\n", kind: resp.KindBulk, str: "hello"},
		{wire: "$0\r\n\r\n", kind: resp.KindBulk, str: ""},
		{wire: "$2\r\n42\r\n", kind: resp.KindBulk, str: "42", num: 42, intOK: true},
		{wire: ":-7\r\n", kind: resp.KindInt, str: "-7", num: -7, intOK: true},
		{wire: "$-1\r\n", kind: resp.KindNull, isNil: true},
		{wire: "*-1\r\n", kind: resp.KindNull, isNil: true},
		{wire: "_\r\n", kind: resp.KindNull, isNil: true},
		{wire: ",1.5\r\n", kind: resp.KindDouble, str: "1.5"},
		{wire: ",3\r\n", kind: resp.KindDouble, str: "3", num: 3, intOK: true},
		{wire: "#t\r\n", kind: resp.KindBool, num: 1, intOK: true},
		{wire: "(123456789012345678901234567890\r\n", kind: resp.KindBigNumber, str: "123456789012345678901234567890"},
		{wire: "=7\r\ntxt:abc\r\n", kind: resp.KindVerbatim, str: "abc"},
		{wire: "$?\r\n;3\r\nabc\r\n;2\r\nde\r\n;0\r\n", kind: resp.KindBulk, str: "abcde"},
		{wire: "-WRONGTYPE Operation against a key\r\n", err: "WRONGTYPE Operation against a key"},
		{wire: "!10\r\nCONFLICT x\r\n", err: "CONFLICT x"},
		{wire: "|1\r\n+key\r\n+val\r\n$1\r\nx\r\n", kind: resp.KindBulk, str: "x"},
	} {
		res := readOne(t, tc.wire)
		if tc.err != "" {
			if res.err == nil || res.err.Error() != tc.err {
				t.Errorf("%q: error %v, want %q", tc.wire, res.err, tc.err)
			}
			continue
		}
		v := res.val
		if res.err != nil || v.Kind() != tc.kind || v.IsNil() != tc.isNil {
			t.Errorf("%q: %v %v (nil %v), want kind %v", tc.wire, v.Kind(), res.err, v.IsNil(), tc.kind)
			continue
		}
		s, err := v.Str()
		if tc.str != "" && (err != nil || s != tc.str) {
			t.Errorf("%q: Str = %q, %v, want %q", tc.wire, s, err, tc.str)
		}
		if tc.isNil && !errors.Is(err, Nil) {
			t.Errorf("%q: Str of null: %v", tc.wire, err)
		}
		n, err := v.Int()
		if tc.intOK != (err == nil) || tc.intOK && n != tc.num {
			t.Errorf("%q: Int = %d, %v", tc.wire, n, err)
		}
	}
}

func TestAggregates(t *testing.T) {
	res := readOne(t, "%2\r\n+a\r\n:1\r\n+b\r\n*2\r\n$1\r\nx\r\n-ERR inner\r\n")
	m, err := res.val.Map()
	if err != nil || len(m) != 2 {
		t.Fatalf("Map = %v, %v", m, err)
	}
	if n, _ := m["a"].Int(); n != 1 {
		t.Fatalf("a = %v", m["a"])
	}
	arr, err := m["b"].Array()
	if err != nil || len(arr) != 2 {
		t.Fatalf("b = %v, %v", m["b"], err)
	}
	var e *Error
	if !errors.As(arr[1].Err(), &e) || e.Prefix != "ERR" || e.Msg != "inner" {
		t.Fatalf("nested error %v", arr[1].Err())
	}
	if _, err := arr[1].Str(); !errors.As(err, &e) {
		t.Fatalf("Str of an error element: %v", err)
	}
	if got := res.val.String(); got != `[a 1 b ["x" (error) ERR inner]]` {
		t.Fatalf("String = %s", got)
	}
	// A flat RESP2 array as a map; an odd one is not.
	res = readOne(t, "*4\r\n$1\r\nk\r\n$1\r\nv\r\n$1\r\nj\r\n:2\r\n")
	if m, err := res.val.Map(); err != nil || must(m["k"].Str()) != "v" {
		t.Fatalf("RESP2 map: %v %v", m, err)
	}
	res = readOne(t, "*1\r\n$1\r\nk\r\n")
	if _, err := res.val.Map(); !errors.Is(err, ErrUnexpectedReply) {
		t.Fatalf("odd array as map: %v", err)
	}
	if _, err := res.val.Int(); !errors.Is(err, ErrUnexpectedReply) {
		t.Fatalf("array as int: %v", err)
	}
	// Owned values do not share memory with the reader.
	rd := resp.NewReader(bytes.NewReader([]byte("*2\r\n$3\r\nabc\r\n$3\r\ndef\r\n*1\r\n$3\r\nxyz\r\n")), nil)
	var r1, r2 result
	if readResult(rd, &r1) != nil || readResult(rd, &r2) != nil {
		t.Fatal("read failed")
	}
	if r1.val.String() != `["abc" "def"]` {
		t.Fatalf("first value overwritten: %s", r1.val)
	}
	f, _ := readOne(t, ",inf\r\n").val.Float()
	if !math.IsInf(f, 1) {
		t.Fatalf("inf = %v", f)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestErrorIs(t *testing.T) {
	e := parseError("CONFLICT transaction not committed (1020)")
	if !errors.Is(e, ErrConflict) || errors.Is(e, ErrTooOld) || !e.Retryable() {
		t.Fatalf("%#v", e)
	}
	if e.Prefix != "CONFLICT" || e.Msg != "transaction not committed (1020)" || e.Error() != "CONFLICT transaction not committed (1020)" {
		t.Fatalf("%#v", e)
	}
	u := parseError("ERR unknown command 'CSK.BEGIN', with args beginning with: ")
	if !errors.Is(u, ErrUnknownCommand) || !errors.Is(u, ErrGenericErr) || u.Retryable() {
		t.Fatalf("%#v", u)
	}
	ce := &ConnError{Op: "read", Addr: "x", MaybeExecuted: true, Err: errors.New("eof")}
	if !errors.Is(ce, ErrMaybeExecuted) {
		t.Fatal("MaybeExecuted not matched")
	}
	ce.MaybeExecuted = false
	if errors.Is(ce, ErrMaybeExecuted) {
		t.Fatal("MaybeExecuted matched")
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		args []any
		want class
	}{
		{[]any{"GET", "k"}, classRead},
		{[]any{[]byte("get"), "k"}, classRead},
		{[]any{"SET", "k", "v"}, classWrite},
		{[]any{"select", 1}, classStateful},
		{[]any{"Csk.Begin"}, classStateful},
		{[]any{"CLIENT", "TRACKING", "on"}, classStateful},
		{[]any{"CLIENT", "getname"}, classRead},
		{[]any{"CLIENT", "KILL", "ID", 3}, classWrite},
		{[]any{"BLPOP", "l", 0}, classBlocking},
		{[]any{"csk.range"}, classRead},
		{[]any{42}, classWrite},
	} {
		if got := classify(tc.args); got != tc.want {
			t.Errorf("classify(%v) = %d, want %d", tc.args, got, tc.want)
		}
	}
}

// FuzzReadResult feeds arbitrary bytes to the reply reader: it must not
// panic, and what it accepts must convert without panicking.
func FuzzReadResult(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "$3\r\nabc\r\n", "*2\r\n:1\r\n%1\r\n+a\r\n_\r\n", "-ERR x\r\n", "$?\r\n;1\r\na\r\n;0\r\n", "|1\r\n+a\r\n+b\r\n#t\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := resp.NewReader(bytes.NewReader(data), nil)
		for range 4 {
			var res result
			if readResult(rd, &res) != nil {
				return
			}
			v := res.val
			_ = v.String()
			v.Bytes()
			v.Int()
			v.Float()
			v.Bool()
			v.Map()
			v.Err()
		}
	})
}
