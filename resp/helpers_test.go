package resp

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
)

// readCommands reads commands until an error and returns them as strings
// with the final error.
func readCommands(r *Reader) ([][]string, error) {
	var out [][]string
	var args [][]byte
	for {
		var err error
		args, err = r.ReadCommand(args)
		if err != nil {
			return out, err
		}
		cmd := make([]string, len(args))
		for i, a := range args {
			cmd[i] = string(a)
		}
		out = append(out, cmd)
	}
}

// readers returns the ways the tests feed input: all at once, one byte
// per Read, and with a tiny bufio buffer.
func readers(input string, lim Limits) map[string]*Reader {
	return map[string]*Reader{
		"whole":   NewReader(strings.NewReader(input), &Options{Limits: lim}),
		"onebyte": NewReader(iotest.OneByteReader(strings.NewReader(input)), &Options{Limits: lim}),
		"buf16":   NewReader(iotest.HalfReader(strings.NewReader(input)), &Options{BufferSize: 16, Limits: lim}),
	}
}

// errText returns the error's protocol text, "EOF" and the like, or "".
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// wantProtocolError fails unless err is a *ProtocolError with text msg.
func wantProtocolError(t *testing.T, err error, msg string) {
	t.Helper()
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T), want *ProtocolError %q", err, err, msg)
	}
	if pe.Msg != msg {
		t.Fatalf("protocol error %q, want %q", pe.Msg, msg)
	}
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("errors.Is(%v, ErrProtocol) = false", err)
	}
}

// equalValue compares values deeply, NaN equal to NaN, nil and empty
// slices equal.
func equalValue(a, b Value) bool {
	if a.Kind != b.Kind || string(a.Str) != string(b.Str) || a.Int != b.Int || a.Bool != b.Bool || a.Format != b.Format {
		return false
	}
	if a.Float != b.Float && !(math.IsNaN(a.Float) && math.IsNaN(b.Float)) {
		return false
	}
	if math.Signbit(a.Float) != math.Signbit(b.Float) && !math.IsNaN(a.Float) {
		return false
	}
	if len(a.Elems) != len(b.Elems) || len(a.Attrs) != len(b.Attrs) {
		return false
	}
	for i := range a.Elems {
		if !equalValue(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	for i := range a.Attrs {
		if !equalValue(a.Attrs[i], b.Attrs[i]) {
			return false
		}
	}
	return true
}

// show renders a Value compactly for failure messages.
func show(v Value) string {
	var sb strings.Builder
	if len(v.Attrs) > 0 {
		sb.WriteString("|")
		for _, a := range v.Attrs {
			sb.WriteString(show(a) + " ")
		}
		sb.WriteString("| ")
	}
	switch v.Kind {
	case KindInt:
		fmt.Fprintf(&sb, "int(%d)", v.Int)
	case KindDouble:
		fmt.Fprintf(&sb, "double(%v)", v.Float)
	case KindBool:
		fmt.Fprintf(&sb, "bool(%v)", v.Bool)
	case KindNull:
		sb.WriteString("null")
	case KindVerbatim:
		fmt.Fprintf(&sb, "verbatim(%s:%q)", v.Format, v.Str)
	case KindArray, KindSet, KindPush, KindMap:
		sb.WriteString(v.Kind.String() + "[")
		for i, e := range v.Elems {
			if i > 0 {
				sb.WriteString(" ")
			}
			sb.WriteString(show(e))
		}
		sb.WriteString("]")
	default:
		fmt.Fprintf(&sb, "%s(%q)", v.Kind, v.Str)
	}
	return sb.String()
}

// loopReader returns the same bytes forever.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.data[l.off:])
		n += c
		l.off = (l.off + c) % len(l.data)
	}
	return n, nil
}

var _ io.Reader = (*loopReader)(nil)
