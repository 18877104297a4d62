package resp_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/caskade/caskade/resp"
)

// A server connection loop: read commands, reply, and close after a
// protocol error as Redis does.
func ExampleReader_ReadCommand() {
	conn := strings.NewReader("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nPING\r\n*1\r\nfoo\r\n")
	r := resp.NewReader(conn, nil)
	var (
		args [][]byte
		out  []byte
		err  error
	)
	for {
		args, err = r.ReadCommand(args)
		if err != nil {
			break
		}
		switch strings.ToUpper(string(args[0])) {
		case "PING":
			out = resp.AppendSimpleString(out, "PONG")
		case "ECHO":
			out = resp.AppendBulk(out, args[1])
		}
	}
	var pe *resp.ProtocolError
	if errors.As(err, &pe) {
		out = resp.AppendError(out, "ERR "+pe.Msg)
		// ... write out, then close the connection.
	}
	fmt.Printf("%q\n", out)
	// Output: "$2\r\nhi\r\n+PONG\r\n-ERR Protocol error: expected '$', got 'f'\r\n"
}

// A client reading replies as Values.
func ExampleReader_ReadValue() {
	conn := strings.NewReader("%2\r\n+first\r\n:1\r\n+second\r\n,2.5\r\n_\r\n")
	r := resp.NewReader(conn, nil)
	for {
		v, err := r.ReadValue()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		switch v.Kind {
		case resp.KindMap:
			for i := 0; i < len(v.Elems); i += 2 {
				k, val := v.Elems[i], v.Elems[i+1]
				fmt.Printf("%s => %s %d %g\n", k.Str, val.Kind, val.Int, val.Float)
			}
		default:
			fmt.Println(v.Kind, v.IsNull())
		}
	}
	// Output:
	// first => integer 1 0
	// second => double 0 2.5
	// null true
}

// Decoding an MGET reply without building a tree.
func ExampleReader_ReadHeader() {
	conn := strings.NewReader("*3\r\n$1\r\na\r\n$-1\r\n$3\r\nccc\r\n")
	r := resp.NewReader(conn, nil)
	h, err := r.ReadHeader()
	if err != nil || h.Kind != resp.KindArray {
		fmt.Println("unexpected reply", h.Kind, err)
		return
	}
	var buf []byte
	for range h.Len {
		e, err := r.ReadHeader()
		if err != nil {
			fmt.Println(err)
			return
		}
		if e.IsNull() {
			fmt.Println("(nil)")
			continue
		}
		buf, err = r.ReadBlob(buf[:0])
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s\n", buf)
	}
	// Output:
	// a
	// (nil)
	// ccc
}

func ExampleAppendCommandString() {
	fmt.Printf("%q\n", resp.AppendCommandString(nil, "SET", "k", "v"))
	// Output: "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
}

func ExampleAppendMapHeader() {
	for _, proto := range []int{2, 3} {
		b := resp.AppendMapHeader(nil, 1, proto)
		b = resp.AppendBulkString(b, "proto")
		b = resp.AppendInt(b, int64(proto))
		fmt.Printf("%q\n", b)
	}
	// Output:
	// "*2\r\n$5\r\nproto\r\n:2\r\n"
	// "%1\r\n$5\r\nproto\r\n:3\r\n"
}
