package resp

import (
	"strings"
	"testing"
)

func benchCommand(b *testing.B, cmd string) {
	r := NewReader(&loopReader{data: []byte(cmd)}, nil)
	var args [][]byte
	b.SetBytes(int64(len(cmd)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if args, err = r.ReadCommand(args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadCommandMultibulk(b *testing.B) {
	benchCommand(b, "*3\r\n$3\r\nSET\r\n$8\r\nkey:1234\r\n$10\r\nvalue:5678\r\n")
}

func BenchmarkReadCommandInline(b *testing.B) {
	benchCommand(b, "SET key:1234 value:5678\r\n")
}

func BenchmarkReadCommandInlineQuoted(b *testing.B) {
	benchCommand(b, "SET \"key:1234\" 'value:5678'\r\n")
}

func BenchmarkReadCommand16KiB(b *testing.B) {
	benchCommand(b, string(AppendCommandString(nil, "SET", "key", strings.Repeat("v", 16<<10))))
}

// An MGET-like reply of ten bulk strings.
var mgetReply = func() []byte {
	b := AppendArrayHeader(nil, 10)
	for range 10 {
		b = AppendBulkString(b, "value:5678")
	}
	return b
}()

func BenchmarkReadValue(b *testing.B) {
	r := NewReader(&loopReader{data: mgetReply}, nil)
	b.SetBytes(int64(len(mgetReply)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadValue(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadValueResp3Map(b *testing.B) {
	reply := AppendMapHeader(nil, 3, 3)
	reply = AppendBulkString(reply, "a")
	reply = AppendDouble(reply, 1.5, 3)
	reply = AppendBulkString(reply, "b")
	reply = AppendBool(reply, true, 3)
	reply = AppendBulkString(reply, "c")
	reply = AppendInt(reply, 42)
	r := NewReader(&loopReader{data: reply}, nil)
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadValue(); err != nil {
			b.Fatal(err)
		}
	}
}

// Decoding the MGET reply with the header API into a caller buffer.
func BenchmarkReadHeaderBlob(b *testing.B) {
	r := NewReader(&loopReader{data: mgetReply}, nil)
	var buf []byte
	b.SetBytes(int64(len(mgetReply)))
	b.ReportAllocs()
	for b.Loop() {
		h, err := r.ReadHeader()
		if err != nil {
			b.Fatal(err)
		}
		buf = buf[:0]
		for range h.Len {
			if _, err := r.ReadHeader(); err != nil {
				b.Fatal(err)
			}
			if buf, err = r.ReadBlob(buf); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkSkipValue(b *testing.B) {
	r := NewReader(&loopReader{data: mgetReply}, nil)
	b.SetBytes(int64(len(mgetReply)))
	b.ReportAllocs()
	for b.Loop() {
		if err := r.SkipValue(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendReply(b *testing.B) {
	buf := make([]byte, 0, 1024)
	val := []byte("value:5678")
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendArrayHeader(buf[:0], 10)
		for range 10 {
			buf = AppendBulk(buf, val)
		}
	}
}

func BenchmarkAppendInt(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendInt(buf[:0], 1234567890)
	}
}

func BenchmarkAppendSimpleString(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendSimpleString(buf[:0], "OK")
	}
}

func BenchmarkAppendError(b *testing.B) {
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendError(buf[:0], "WRONGTYPE Operation against a key holding the wrong kind of value")
	}
}

func BenchmarkAppendDouble(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendDouble(buf[:0], 3.14159, 2)
	}
}

func BenchmarkAppendCommand(b *testing.B) {
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendCommandString(buf[:0], "SET", "key:1234", "value:5678")
	}
}
