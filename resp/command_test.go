package resp

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadCommand(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  [][]string
	}{
		{"multibulk", "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", [][]string{{"SET", "key", "value"}}},
		{"empty argument", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", [][]string{{"ECHO", ""}}},
		{"binary argument", "*2\r\n$4\r\nECHO\r\n$6\r\na\r\n\x00\xffb\r\n", [][]string{{"ECHO", "a\r\n\x00\xffb"}}},
		{"zero count skipped", "*0\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}}},
		{"null count skipped", "*-1\r\n*-10\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}}},
		// Redis does not check the byte after a header's \r, nor the two
		// bytes after bulk data.
		{"header terminator unchecked", "*1\rX$4\rYPING\r\n", [][]string{{"PING"}}},
		{"bulk terminator unchecked", "*2\r\n$4\r\nECHO\r\n$1\r\naXY*1\r\n$4\r\nPING\r\n", [][]string{{"ECHO", "a"}, {"PING"}}},
		{"inline", "SET key value\r\n", [][]string{{"SET", "key", "value"}}},
		{"inline LF only", "PING\n", [][]string{{"PING"}}},
		{"inline blanks", "  SET\tkey \t value  \r\n", [][]string{{"SET", "key", "value"}}},
		{"inline only one CR dropped", "GET a\r\r\n", [][]string{{"GET", "a"}}},
		{"empty lines skipped", "\r\n\n   \r\nPING\r\n", [][]string{{"PING"}}},
		{"inline then multibulk", "PING\r\n*1\r\n$4\r\nPING\r\nECHO x\n", [][]string{{"PING"}, {"PING"}, {"ECHO", "x"}}},
		{"inline star later", "ECHO *1\r\n", [][]string{{"ECHO", "*1"}}},
	}
	for _, tt := range tests {
		for how, r := range readers(tt.input, Limits{}) {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				got, err := readCommands(r)
				if err != io.EOF {
					t.Fatalf("final error %v, want io.EOF", err)
				}
				if !slices.EqualFunc(got, tt.want, slices.Equal) {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			})
		}
	}
}

// Cases follow Redis's sdssplitargs (src/sds.c).
func TestReadCommandInlineQuoting(t *testing.T) {
	tests := []struct {
		line string
		want []string // nil: unbalanced quotes
	}{
		{`SET "foo bar" 'a b'`, []string{"SET", "foo bar", "a b"}},
		{`ECHO ""`, []string{"ECHO", ""}},
		{`ECHO ''`, []string{"ECHO", ""}},
		{`ECHO "\n\r\t\b\a\\\"x"`, []string{"ECHO", "\n\r\t\b\a\\\"x"}},
		{`ECHO "\x41\x6a\x6A"`, []string{"ECHO", "Ajj"}},
		{`ECHO "\x4"`, []string{"ECHO", "x4"}},
		{`ECHO "\xZZ"`, []string{"ECHO", "xZZ"}},
		{`ECHO "\q"`, []string{"ECHO", "q"}},
		{`ECHO "\x00"`, []string{"ECHO", "\x00"}},
		{`ECHO 'it\'s'`, []string{"ECHO", "it's"}},
		{`ECHO 'a\nb\\ c'`, []string{"ECHO", `a\nb\\ c`}},
		{`ECHO 'a\\'`, nil}, // \' escapes the quote even after a backslash
		{`ECHO '"'`, []string{"ECHO", `"`}},
		{`ECHO "'"`, []string{"ECHO", `'`}},
		{`ECHO foo"bar baz"`, []string{"ECHO", "foobar baz"}},
		{`ECHO foo'bar'`, []string{"ECHO", "foobar"}},
		{`ECHO a\nb`, []string{"ECHO", `a\nb`}},
		{"ECHO \"a\"\tb", []string{"ECHO", "a", "b"}},
		{"ECHO \"a\"\vb", []string{"ECHO", "a", "b"}},
		{"ECHO a\vb\f", []string{"ECHO", "a\vb\f"}},
		{"\v\fECHO", []string{"ECHO"}},
		{`"SET" "k" "v"`, []string{"SET", "k", "v"}},
		{`ECHO "foo`, nil},
		{`ECHO 'foo`, nil},
		{`ECHO "foo"bar`, nil},
		{`ECHO 'foo'bar`, nil},
		{`ECHO "\"`, nil},
		{`ECHO "a\`, nil},
		{`set """test-key""" test-value`, nil},
	}
	for _, tt := range tests {
		for how, r := range readers(tt.line+"\r\n", Limits{}) {
			t.Run(tt.line+"/"+how, func(t *testing.T) {
				args, err := r.ReadCommand(nil)
				if tt.want == nil {
					wantProtocolError(t, err, "Protocol error: unbalanced quotes in request")
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				got := make([]string, len(args))
				for i, a := range args {
					got[i] = string(a)
				}
				if !slices.Equal(got, tt.want) {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
			})
		}
	}
}

func TestReadCommandProtocolErrors(t *testing.T) {
	const (
		invalidMbulk = "Protocol error: invalid multibulk length"
		invalidBulk  = "Protocol error: invalid bulk length"
		bigInline    = "Protocol error: too big inline request"
		bigMbulk     = "Protocol error: too big mbulk count string"
		bigBulk      = "Protocol error: too big bulk count string"
		unbalanced   = "Protocol error: unbalanced quotes in request"
	)
	payload := strings.Repeat("payload", 10000) // 70,000 bytes, no \r or \n
	tests := []struct {
		name  string
		input string
		want  string
	}{
		// From Redis's tests/unit/protocol.tcl.
		{"out of range multibulk length", "*3000000000\r\n", invalidMbulk},
		{"wrong multibulk payload header", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", "Protocol error: expected '$', got 'f'"},
		{"negative bulk length", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", invalidBulk},
		{"out of range bulk length", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2000000000\r\n", invalidBulk},
		{"non-number bulk length", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n", invalidBulk},
		{"multibulk not followed by bulk", "*1\r\nfoo\r\n", "Protocol error: expected '$', got 'f'"},
		{"unbalanced quotes", "set \"\"\"test-key\"\"\" test-value\r\nping\r\n", unbalanced},
		{"desync NUL inline", "\x00" + payload, bigInline},
		{"desync NUL mbulk", "*\x00" + payload, bigMbulk},
		{"desync NUL dollar", "$\x00" + payload, bigInline},
		// Redis's string2ll rules.
		{"count empty", "*\r\n", invalidMbulk},
		{"count leading zero", "*01\r\n", invalidMbulk},
		{"count plus", "*+1\r\n", invalidMbulk},
		{"count minus zero", "*-0\r\n", invalidMbulk},
		{"count space", "*1 \r\n", invalidMbulk},
		{"count overflow", "*99999999999999999999\r\n", invalidMbulk},
		{"count over 1024*1024", "*1048577\r\n", invalidMbulk},
		{"bulk minus zero", "*1\r\n$-0\r\n", invalidBulk},
		{"bulk leading zero", "*1\r\n$03\r\nfoo\r\n", invalidBulk},
		{"bulk over proto-max-bulk-len", "*1\r\n$536870913\r\n", invalidBulk},
		{"bulk empty", "*1\r\n$\r\n", invalidBulk},
		{"expected dollar got CR", "*1\r\n\r\n", "Protocol error: expected '$', got ' '"},
		{"expected dollar got LF", "*1\r\n\n\r\n", "Protocol error: expected '$', got ' '"},
		{"expected dollar got colon", "*1\r\n:1\r\n", "Protocol error: expected '$', got ':'"},
		{"expected dollar after args", "*2\r\n$4\r\nECHO\r\n*1\r\n", "Protocol error: expected '$', got '*'"},
		{"too big mbulk count", "*" + strings.Repeat("1", 65536), bigMbulk},
		{"too big bulk count", "*1\r\n$" + strings.Repeat("1", 65536), bigBulk},
		{"too big bulk count not dollar", "*1\r\nx" + strings.Repeat("1", 65536), bigBulk},
		{"NUL in count", "*1\x00\r\n", bigMbulk},
		{"NUL in bulk count", "*1\r\n$1\x00\r\n", bigBulk},
		{"too big inline", strings.Repeat("a", 65537), bigInline},
		{"too big inline with CR", strings.Repeat("a", 65536) + "\r\n", bigInline},
		{"NUL in inline", "GET a\x00b\r\n", bigInline},
		{"unbalanced single", "GET 'a\r\n", unbalanced},
		{"unbalanced closing", "GET \"a\"b\r\n", unbalanced},
	}
	for _, tt := range tests {
		for how, r := range readers(tt.input, Limits{}) {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				args, err := r.ReadCommand(nil)
				wantProtocolError(t, err, tt.want)
				if len(args) != 0 {
					t.Fatalf("returned %d arguments with the error", len(args))
				}
				// The error is sticky: the stream cannot be resynchronised.
				if _, err2 := r.ReadCommand(nil); err2 != err {
					t.Fatalf("second read: %v, want the same error %v", err2, err)
				}
			})
		}
	}
}

func TestReadCommandBoundaries(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		lim     Limits
		want    int   // arguments of the first command
		wantErr error // of the first command; nil means success
	}{
		// A count line of exactly MaxInlineLen bytes is not "too big".
		{"count line at limit", "*" + strings.Repeat("1", 65535) + "\r\n", Limits{}, 0, errInvalidMultibulkLen},
		{"inline at limit", strings.Repeat("a", 65536) + "\n", Limits{}, 1, nil},
		{"inline at limit CRLF", strings.Repeat("a", 65535) + "\r\n", Limits{}, 1, nil},
		{"count at 1024*1024", "*1048576\r\n", Limits{}, 0, io.ErrUnexpectedEOF},
		{"bulk at 512MiB", "*1\r\n$536870912\r\nabc", Limits{}, 0, io.ErrUnexpectedEOF},
		{"max args", "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", Limits{MaxArgs: 3}, 3, nil},
		{"over max args", "*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n", Limits{MaxArgs: 3}, 0, errInvalidMultibulkLen},
		{"inline max args", "a b c\r\n", Limits{MaxArgs: 3}, 3, nil},
		{"inline over max args", "a b c d\r\n", Limits{MaxArgs: 3}, 0, errTooBigInline},
		{"max bulk", "*1\r\n$4\r\nPING\r\n", Limits{MaxBulkLen: 4}, 1, nil},
		{"over max bulk", "*1\r\n$5\r\nPINGS\r\n", Limits{MaxBulkLen: 4}, 0, errInvalidBulkLen},
		{"small inline limit", "PING\r\n", Limits{MaxInlineLen: 5}, 1, nil},
		{"over small inline limit", "PINGS\r\n", Limits{MaxInlineLen: 5}, 0, errTooBigInline},
		{"small header limit", "*1\r\n$4\r\nPING\r\n", Limits{MaxInlineLen: 2}, 1, nil},
		{"over small header limit", "*10\r\n", Limits{MaxInlineLen: 2}, 0, errTooBigMbulkCount},
		// "*1\r\n$4\r\nPING\r\n" is 14 bytes.
		{"query at limit", "*1\r\n$4\r\nPING\r\n", Limits{MaxQueryLen: 14}, 1, nil},
		{"query over limit", "*1\r\n$4\r\nPING\r\n", Limits{MaxQueryLen: 13}, 0, ErrQueryTooBig},
		{"query over limit declared", "*2\r\n$3\r\nSET\r\n$100000\r\n", Limits{MaxQueryLen: 1000}, 0, ErrQueryTooBig},
		{"inline query over limit", "PING\r\n", Limits{MaxQueryLen: 4}, 0, ErrQueryTooBig},
		// Redis's limits before AUTH.
		{"unauth 10 args", "*10\r\n" + strings.Repeat("$1\r\na\r\n", 10), Limits{AuthRequired: true}, 10, nil},
		{"unauth 11 args", "*11\r\n", Limits{AuthRequired: true}, 0, errUnauthMultibulkLen},
		{"unauth invalid first", "*3000000000\r\n", Limits{AuthRequired: true}, 0, errInvalidMultibulkLen},
		{"unauth negative count skipped", "*-5\r\nPING\r\n", Limits{AuthRequired: true}, 1, nil},
		{"unauth bulk 16384", "*1\r\n$16384\r\n" + strings.Repeat("a", 16384) + "\r\n", Limits{AuthRequired: true}, 1, nil},
		{"unauth bulk 16385", "*1\r\n$16385\r\n", Limits{AuthRequired: true}, 0, errUnauthBulkLen},
		{"unauth bulk invalid first", "*1\r\n$600000000\r\n", Limits{AuthRequired: true}, 0, errInvalidBulkLen},
		{"unauth inline many args", strings.Repeat("a ", 20) + "\r\n", Limits{AuthRequired: true}, 20, nil},
		{"EOF in count line", "*1", Limits{}, 0, io.ErrUnexpectedEOF},
		{"EOF after count CR", "*1\r", Limits{}, 0, io.ErrUnexpectedEOF},
		{"EOF in bulk", "*1\r\n$4\r\nPI", Limits{}, 0, io.ErrUnexpectedEOF},
		{"EOF before bulk CRLF", "*1\r\n$4\r\nPING", Limits{}, 0, io.ErrUnexpectedEOF},
		{"EOF in inline", "PING", Limits{}, 0, io.ErrUnexpectedEOF},
		{"EOF at boundary", "", Limits{}, 0, io.EOF},
		{"EOF after blank lines", "\r\n\r\n*0\r\n", Limits{}, 0, io.EOF},
	}
	for _, tt := range tests {
		for how, r := range readers(tt.input, tt.lim) {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				args, err := r.ReadCommand(nil)
				if err != tt.wantErr {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				if len(args) != tt.want {
					t.Fatalf("%d arguments, want %d", len(args), tt.want)
				}
			})
		}
	}
}

func TestErrorClasses(t *testing.T) {
	if !errors.Is(ErrQueryTooBig, ErrProtocol) {
		t.Error("ErrQueryTooBig is not ErrProtocol")
	}
	var pe *ProtocolError
	if errors.As(ErrQueryTooBig, &pe) {
		t.Error("ErrQueryTooBig is a *ProtocolError; the server would reply to it")
	}
	if errors.Is(io.ErrUnexpectedEOF, ErrProtocol) || errors.Is(ErrNoBlob, ErrProtocol) {
		t.Error("non-protocol errors match ErrProtocol")
	}
	for _, err := range []error{ErrProtocol, ErrQueryTooBig, ErrNoBlob, ErrInvalidOptions} {
		if !strings.HasPrefix(err.Error(), "resp: ") {
			t.Errorf("sentinel %q lacks the resp: prefix", err)
		}
	}
}

func TestReadCommandPipeline(t *testing.T) {
	var in []byte
	var want [][]string
	for i := range 1000 {
		key := strings.Repeat("k", i%37)
		switch i % 3 {
		case 0:
			in = AppendCommandString(in, "SET", key, strings.Repeat("v", i))
			want = append(want, []string{"SET", key, strings.Repeat("v", i)})
		case 1:
			in = append(in, "GET x\r\n"...)
			want = append(want, []string{"GET", "x"})
		default:
			in = AppendCommandString(in, "PING")
			want = append(want, []string{"PING"})
		}
	}
	for how, r := range readers(string(in), Limits{}) {
		t.Run(how, func(t *testing.T) {
			got, err := readCommands(r)
			if err != io.EOF {
				t.Fatalf("final error %v", err)
			}
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("got %d commands, first difference at %d", len(got), firstDiff(got, want))
			}
		})
	}
}

func firstDiff(a, b [][]string) int {
	for i := range min(len(a), len(b)) {
		if !slices.Equal(a[i], b[i]) {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestReadCommandArgumentsIsolated(t *testing.T) {
	r := NewReader(strings.NewReader("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\nx y z\r\n"), nil)
	for range 2 {
		args, err := r.ReadCommand(nil)
		if err != nil {
			t.Fatal(err)
		}
		// Appending to one argument must not overwrite the next.
		_ = append(args[0], "XXXX"...)
		if string(args[1]) != "b" && string(args[1]) != "y" {
			t.Fatalf("argument 1 = %q after appending to argument 0", args[1])
		}
	}
}

func TestReadCommandReusesArgs(t *testing.T) {
	r := NewReader(strings.NewReader("a b c\r\nd\r\n"), nil)
	args := make([][]byte, 0, 8)
	args, err := r.ReadCommand(args)
	if err != nil {
		t.Fatal(err)
	}
	first := &args[:1][0]
	args, err = r.ReadCommand(args)
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != 1 || string(args[0]) != "d" || &args[0] != first {
		t.Fatalf("args not reused: %q", args)
	}
}

// A huge declared bulk length must not be allocated before the data
// arrives.
func TestReadCommandHugeBulkNotPreallocated(t *testing.T) {
	in := "*2\r\n$3\r\nSET\r\n$536870912\r\n" + strings.Repeat("x", 1000)
	r := NewReader(strings.NewReader(in), nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := r.ReadCommand(nil)
	runtime.ReadMemStats(&after)
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("error %v, want io.ErrUnexpectedEOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("allocated %d bytes for 1000 bytes of a declared 512 MiB argument", got)
	}
}

// Large arguments arrive intact through small reads and big buffers.
func TestReadCommandLargeArgument(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	in := AppendCommand(nil, []byte("SET"), []byte("k"), big)
	in = AppendCommand(in, []byte("GET"), []byte("k"))
	for how, r := range readers(string(in), Limits{}) {
		t.Run(how, func(t *testing.T) {
			args, err := r.ReadCommand(nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(args) != 3 || !bytes.Equal(args[2], big) {
				t.Fatalf("big argument corrupted (%d args)", len(args))
			}
			args, err = r.ReadCommand(args)
			if err != nil || len(args) != 2 || string(args[1]) != "k" {
				t.Fatalf("next command: %q, %v", args, err)
			}
		})
	}
}

func TestReadCommandAllocs(t *testing.T) {
	for name, cmd := range map[string]string{
		"multibulk": "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n",
		"inline":    "SET key \"value\"\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			r := NewReader(&loopReader{data: []byte(cmd)}, nil)
			args, _ := r.ReadCommand(nil)
			allocs := testing.AllocsPerRun(1000, func() {
				var err error
				args, err = r.ReadCommand(args)
				if err != nil || len(args) != 3 || string(args[2]) != "value" {
					t.Fatalf("%q %v", args, err)
				}
			})
			if allocs != 0 {
				t.Fatalf("%v allocations per command, want 0", allocs)
			}
		})
	}
}

func TestSetLimitsTakesEffect(t *testing.T) {
	r := NewReader(strings.NewReader("*11\r\n"+strings.Repeat("$1\r\na\r\n", 11)+"*11\r\n"), &Options{Limits: Limits{AuthRequired: true}})
	if !r.Limits().AuthRequired || r.Limits().MaxBulkLen != DefaultMaxBulkLen {
		t.Fatalf("Limits() = %+v", r.Limits())
	}
	if err := r.SetLimits(Limits{MaxArgs: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("SetLimits(invalid) = %v", err)
	}
	if !r.Limits().AuthRequired {
		t.Fatal("invalid SetLimits changed the limits")
	}
	// After AUTH the server lifts the limits.
	if err := r.SetLimits(Limits{}); err != nil {
		t.Fatal(err)
	}
	args, err := r.ReadCommand(nil)
	if err != nil || len(args) != 11 {
		t.Fatalf("after SetLimits: %d args, %v", len(args), err)
	}
	if err := r.SetLimits(Limits{MaxArgs: 10}); err != nil {
		t.Fatal(err)
	}
	_, err = r.ReadCommand(nil)
	wantProtocolError(t, err, "Protocol error: invalid multibulk length")
}

func TestOptionsValidate(t *testing.T) {
	bad := []Options{
		{BufferSize: -1},
		{Limits: Limits{MaxArgs: -1}},
		{Limits: Limits{MaxBulkLen: -1}},
		{Limits: Limits{MaxInlineLen: -1}},
		{Limits: Limits{MaxQueryLen: -1}},
		{Limits: Limits{MaxDepth: -1}},
	}
	for _, o := range bad {
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: Validate() = %v", o, err)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v: NewReader did not panic", o)
				}
			}()
			NewReader(strings.NewReader(""), &o)
		}()
	}
	if err := (&Options{}).Validate(); err != nil {
		t.Errorf("zero Options: %v", err)
	}
}

// timeoutReader fails its first Read with a timeout, then reads data.
type timeoutReader struct {
	timedOut bool
	r        io.Reader
}

func (t *timeoutReader) Read(p []byte) (int, error) {
	if !t.timedOut {
		t.timedOut = true
		return 0, os.ErrDeadlineExceeded
	}
	return t.r.Read(p)
}

func TestReadCommandIdleErrorNotSticky(t *testing.T) {
	r := NewReader(&timeoutReader{r: strings.NewReader("PING\r\n")}, nil)
	if _, err := r.ReadCommand(nil); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("first read: %v", err)
	}
	args, err := r.ReadCommand(nil)
	if err != nil || len(args) != 1 || string(args[0]) != "PING" {
		t.Fatalf("after an idle timeout: %q, %v", args, err)
	}
}

func TestResetAndBuffered(t *testing.T) {
	r := NewReader(strings.NewReader("*1\r\n$1\r\nx\r\n*1\r\n$1\r\ny\r\n"), nil)
	if _, err := r.ReadCommand(nil); err != nil {
		t.Fatal(err)
	}
	if got := r.Buffered(); got != 11 {
		t.Fatalf("Buffered() = %d, want 11", got)
	}
	r.Reset(strings.NewReader("*x\r\n"))
	if r.Buffered() != 0 {
		t.Fatal("Reset kept buffered data")
	}
	if _, err := r.ReadCommand(nil); !errors.Is(err, ErrProtocol) {
		t.Fatalf("got %v", err)
	}
	r.Reset(strings.NewReader("PING\r\n"))
	if args, err := r.ReadCommand(nil); err != nil || string(args[0]) != "PING" {
		t.Fatalf("after Reset: %q, %v", args, err)
	}
}

// ReadCommand must return as soon as a command is complete, without
// waiting for more input (a client waits for the reply before sending).
func TestReadCommandDoesNotWaitForMore(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	done := make(chan error, 1)
	go func() {
		r := NewReader(pr, nil)
		args, err := r.ReadCommand(nil)
		if err == nil && (len(args) != 1 || string(args[0]) != "PING") {
			err = errors.New("wrong command " + string(bytes.Join(args, []byte(" "))))
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		pr.Close()
		t.Fatal("ReadCommand blocked waiting for input after a complete command")
	}
}

// TestCommandBuffered checks the test that tells whether reading the next
// command would wait for input.
func TestCommandBuffered(t *testing.T) {
	for _, tc := range []struct {
		in   string
		lim  Limits
		want bool
	}{
		{in: "PING\r\n", want: true},
		{in: "PING", want: false},
		{in: "\r\n", want: false},
		{in: " \t\r\n", want: false},
		{in: "\r\n\r\nPING\r\n", want: true},
		{in: "\r\n\r\nPI", want: false},
		{in: "*0\r\n", want: false},
		{in: "*-1\r\n", want: false},
		{in: "*0\r\n*1\r\n$4\r\nPING\r\n", want: true},
		{in: "*0\r\n*1\r\n$4\r\nPI", want: false},
		{in: "*1\r\n$4\r\nPING\r\n", want: true},
		{in: "*1\r\n$4\r\nPING\r", want: false},
		{in: "*1\r\n$4\r\nPI", want: false},
		{in: "*1\r", want: false},
		{in: "*x\r\n", want: true},       // malformed: the reader fails at once
		{in: "*1\r\n+4\r\n", want: true}, // malformed
		{in: "*1\r\n$-4\r\n", want: true},
		{in: "*2\r\n$1\r\na\r\n", want: false},
		// Declared sizes over a limit fail at once, before the data.
		{in: "*1\r\n$600000000\r\n", want: true},
		{in: "*1\r\n$65\r\n", lim: Limits{MaxBulkLen: 64}, want: true},
		{in: "*1\r\n$64\r\n", lim: Limits{MaxBulkLen: 64}, want: false},
		{in: "*9\r\n", lim: Limits{MaxArgs: 8}, want: true},
		{in: "*11\r\n", lim: Limits{AuthRequired: true}, want: true},
		{in: "*1\r\n$16385\r\n", lim: Limits{AuthRequired: true}, want: true},
		{in: "*2\r\n$200\r\n", lim: Limits{MaxQueryLen: 100}, want: true},
		{in: "PING\x00", want: true},                                               // a NUL hides the line end
		{in: strings.Repeat("a", 200), lim: Limits{MaxInlineLen: 128}, want: true}, // too long already
	} {
		r := NewReader(strings.NewReader(tc.in), &Options{Limits: tc.lim})
		r.br.Peek(len(tc.in))
		if got := r.CommandBuffered(); got != tc.want {
			t.Errorf("CommandBuffered over %q (limits %+v) = %v, want %v", tc.in, tc.lim, got, tc.want)
		}
	}
}
