package resp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// fuzzCommandLimits are small so that fuzzing reaches every limit.
var fuzzCommandLimits = []Limits{
	{MaxArgs: 8, MaxBulkLen: 64, MaxInlineLen: 128, MaxQueryLen: 512},
	{AuthRequired: true},
}

type commandResult struct {
	cmds [][][]byte
	err  error
}

func readAllCommands(r *Reader) commandResult {
	var res commandResult
	var args [][]byte
	for {
		var err error
		args, err = r.ReadCommand(args)
		if err != nil {
			res.err = err
			return res
		}
		cp := make([][]byte, len(args))
		for i, a := range args {
			cp[i] = bytes.Clone(a)
		}
		res.cmds = append(res.cmds, cp)
	}
}

func FuzzReadCommand(f *testing.F) {
	for _, s := range []string{
		"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n",
		"PING\r\n*1\r\n$4\r\nPING\r\n",
		"SET \"a\\x41\\n\" 'b\\'c' d\r\n",
		"*0\r\n*-1\r\n\r\n\n",
		"*2\r\n$3\r\nGET\r\n$-1\r\n",
		"*1\r\nfoo\r\n",
		"*11\r\n",
		"*1\r\n$16385\r\n",
		"set \"\"\"test-key\"\"\" test-value\r\n",
		"\x00payload",
		"*1\rX$1\rYaZZ",
		// Edges of the buffered fast path (bufferedMultibulk).
		"*2\r\n$0\r\n\r\n$3\r\nGET\r\n",
		"*1\r\n$03\r\nabc\r\n*01\r\n$1\r\na\r\n",
		"*99999999999\r\n*999999999999\r\n",
		"*2\r\n$3\r\nGET\r\n$3\r\nab",
		"*2\r\n$3\r\nGET\r\n$65\r\n" + strings.Repeat("k", 65) + "\r\n",
		"*1\r\n$3\nGET\r\n*1\r\n$3\rGETxx",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lim := range fuzzCommandLimits {
			whole := readAllCommands(NewReader(bytes.NewReader(data), &Options{Limits: lim}))
			one := readAllCommands(NewReader(iotest.OneByteReader(bytes.NewReader(data)), &Options{BufferSize: 16, Limits: lim}))
			if errText(whole.err) != errText(one.err) || len(whole.cmds) != len(one.cmds) {
				t.Fatalf("read sizes change the result: %d commands, %v vs %d commands, %v",
					len(whole.cmds), whole.err, len(one.cmds), one.err)
			}
			var pe *ProtocolError
			if whole.err != io.EOF && whole.err != io.ErrUnexpectedEOF && whole.err != ErrQueryTooBig && !errors.As(whole.err, &pe) {
				t.Fatalf("unexpected error %v", whole.err)
			}
			eff := lim.withDefaults()
			maxArgs := eff.MaxArgs
			for i, cmd := range whole.cmds {
				if len(cmd) == 0 || len(cmd) > maxArgs {
					t.Fatalf("command %d has %d arguments, limit %d", i, len(cmd), maxArgs)
				}
				if !equalArgs(cmd, one.cmds[i]) {
					t.Fatalf("command %d differs between read sizes: %q vs %q", i, cmd, one.cmds[i])
				}
				size := 0
				for _, a := range cmd {
					if int64(len(a)) > max(eff.MaxBulkLen, int64(eff.MaxInlineLen)) {
						t.Fatalf("argument of %d bytes over the limits", len(a))
					}
					size += len(a)
				}
				if int64(size) > eff.MaxQueryLen {
					t.Fatalf("command of %d bytes over MaxQueryLen", size)
				}
				// Round trip through AppendCommand.
				enc := AppendCommand(nil, cmd...)
				back, err := NewReader(bytes.NewReader(enc), nil).ReadCommand(nil)
				if err != nil || !equalArgs(back, cmd) {
					t.Fatalf("round trip of %q: %q, %v", cmd, back, err)
				}
			}
			checkCommandBuffered(t, data, lim)
		}
	})
}

// errWaited is what the input of checkCommandBuffered returns past the
// bytes it has.
var errWaited = errors.New("the reader waited for more input")

// checkCommandBuffered checks CommandBuffered against ReadCommand on every
// prefix of data: where it reports a command ready, reading it must not
// ask for more input; where it does not, reading must.
func checkCommandBuffered(t *testing.T, data []byte, lim Limits) {
	for n := range len(data) + 1 {
		r := NewReader(io.MultiReader(bytes.NewReader(data[:n]), iotest.ErrReader(errWaited)),
			&Options{BufferSize: max(n, 16), Limits: lim})
		if n > 0 {
			r.br.Peek(n)
		}
		for {
			ready := r.CommandBuffered()
			_, err := r.ReadCommand(nil)
			if ready && errors.Is(err, errWaited) {
				t.Fatalf("%q: CommandBuffered reported a command, and ReadCommand waited for more input", data[:n])
			}
			if !ready && err != nil && !errors.Is(err, errWaited) {
				t.Fatalf("%q: CommandBuffered reported no command, and ReadCommand failed at once: %v", data[:n], err)
			}
			if err != nil || !ready {
				break
			}
		}
	}
}

func equalArgs(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func depth(v Value) int {
	d := 0
	for _, e := range v.Elems {
		d = max(d, depth(e))
	}
	for _, e := range v.Attrs {
		d = max(d, depth(e))
	}
	if v.Elems != nil || v.Attrs != nil {
		d++
	}
	return d
}

func readAllValues(r *Reader) ([][]byte, error) {
	var encs [][]byte
	for {
		v, err := r.ReadValue()
		if err != nil {
			return encs, err
		}
		encs = append(encs, AppendValue(nil, v))
		if depth(v) > r.Limits().MaxDepth {
			return encs, errors.New("value deeper than MaxDepth")
		}
		if c := v.Clone(); !equalValue(c, v) {
			return encs, errors.New("Clone differs")
		}
	}
}

func FuzzReadValue(f *testing.F) {
	for _, ex := range specExamples {
		f.Add([]byte(ex.wire))
	}
	for _, s := range []string{
		"*?\r\n*?\r\n.\r\n$?\r\n;0\r\n.\r\n",
		"|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n:3\r\n",
		",nan(1)\r\n,-0\r\n,1e400\r\n",
		"*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
		"=4\r\ntxt:\r\n$-1\r\n*-1\r\n",
	} {
		f.Add([]byte(s))
	}
	lim := Limits{MaxDepth: 8, MaxBulkLen: 1 << 12}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, werr := readAllValues(NewReader(bytes.NewReader(data), &Options{Limits: lim}))
		one, oerr := readAllValues(NewReader(iotest.OneByteReader(bytes.NewReader(data)), &Options{BufferSize: 16, Limits: lim}))
		if errText(werr) != errText(oerr) || !equalArgs(whole, one) {
			t.Fatalf("read sizes change the result: %q, %v vs %q, %v", whole, werr, one, oerr)
		}
		var pe *ProtocolError
		if werr != io.EOF && werr != io.ErrUnexpectedEOF && !errors.As(werr, &pe) {
			t.Fatalf("unexpected error %v", werr)
		}
		for _, enc := range whole {
			// AppendValue output reads back to the same encoding.
			r := NewReader(bytes.NewReader(enc), &Options{Limits: lim})
			v, err := r.ReadValue()
			if err != nil {
				t.Fatalf("re-reading %q: %v", enc, err)
			}
			if again := AppendValue(nil, v); !bytes.Equal(again, enc) {
				t.Fatalf("re-encoding differs:\n%q\n%q", enc, again)
			}
		}
		if werr == io.EOF {
			// SkipValue sees the same elements.
			r := NewReader(bytes.NewReader(data), &Options{Limits: lim})
			for i := range whole {
				if err := r.SkipValue(); err != nil {
					t.Fatalf("SkipValue %d: %v", i, err)
				}
			}
			if err := r.SkipValue(); err != io.EOF {
				t.Fatalf("SkipValue at the end: %v", err)
			}
		}
	})
}
