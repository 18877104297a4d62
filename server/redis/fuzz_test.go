package redis

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/caskade/caskade"
)

// inputConn is the server's end of a net.Pipe whose reads come from a
// fixed input and then end (EOF), so that a connection handler processes
// the whole input and returns without the test guessing when it is done.
type inputConn struct {
	net.Conn
	r io.Reader
}

func (c inputConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// serveInput runs one connection over input and returns what it replied.
func serveInput(s *Server, input []byte) []byte {
	srvEnd, cliEnd := net.Pipe()
	var out bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(&out, cliEnd)
	}()
	s.ServeConn(inputConn{Conn: srvEnd, r: bytes.NewReader(input)})
	srvEnd.Close()
	wg.Wait()
	cliEnd.Close()
	return out.Bytes()
}

// FuzzDispatch feeds arbitrary bytes to a connection handler: it must
// never panic, and the database must stay usable.
func FuzzDispatch(f *testing.F) {
	for _, seed := range []string{
		cmd("SET", "k", "v") + cmd("GET", "k"),
		"PING\r\nSET a 1\r\nINCR a\r\n",
		cmd("MULTI") + cmd("SET", "a", "1") + cmd("INCRBYFLOAT", "a", "1.5") + cmd("EXEC"),
		cmd("WATCH", "a") + cmd("MULTI") + cmd("FLUSHDB") + cmd("KEYS", "*") + cmd("EXEC"),
		cmd("HELLO", "3") + cmd("CLIENT", "TRACKING", "ON", "BCAST") + cmd("MSET", "a", "1", "b", "2"),
		cmd("SCAN", "0", "MATCH", "[a-", "COUNT", "1") + cmd("SCAN", "4294967297"),
		cmd("SELECT", "3") + cmd("SET", "x", "y") + cmd("SWAPDB", "0", "3") + cmd("MOVE", "x", "0"),
		cmd("SET", "k", "v", "EX", "9223372036854775807") + cmd("EXPIRE", "k", "-9223372036854775808"),
		cmd("SETRANGE", "k", "100", "x") + cmd("GETRANGE", "k", "-9223372036854775808", "9223372036854775807"),
		cmd("CONFIG", "SET", "requirepass", "x") + cmd("AUTH", "x") + cmd("CONFIG", "GET", "*"),
		cmd("CLIENT", "KILL", "ID", "1") + cmd("CLIENT", "LIST") + cmd("INFO", "everything"),
		cmd("COMMAND", "GETKEYS", "MSET", "a", "b") + cmd("COMMAND", "DOCS") + cmd("OBJECT", "HELP"),
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$-5\r\n",
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPOST\r\n",
		"\"unbalanced\r\n",
		"*1\r\n$5\r\nRESET\r\n*1\r\n$7\r\nMONITOR\r\n*1\r\n$4\r\nPING\r\n",
		cmd("MSET", "a", "1", "b", "2") + cmd("CSK.RANGE", "FROM", "a", "TO", "c", "LIMIT", "1", "REV", "KEYSONLY") +
			cmd("CSK.RANGE", "FROM", "c", "TO", "a") + cmd("CSK.RANGE", "LIMIT", "-1"),
		cmd("SELECT", "2") + cmd("SET", "k", "v") + cmd("CSK.GETKEY", "k", "1", "-9223372036854775808") +
			cmd("CSK.RANGESEL", "", "0", "1", "\xff", "1", "9223372036854775807", "REV") + cmd("CSK.CLEARRANGE", "TO", "z"),
		cmd("CSK.ATOMIC", "ADD", "n", "\x01\x00\x00\x00") + cmd("CSK.ATOMIC", "compareandclear", "n", "") +
			cmd("CSK.ATOMIC", "nope", "n", "x") + cmd("CSK.VERSION", "n"),
		cmd("CSK.BEGIN") + cmd("GET", "a") + cmd("SET", "a", "2") + cmd("INCR", "c") + cmd("CSK.SNAPSHOT", "CSK.RANGE") +
			cmd("CSK.SNAPSHOT", "SET", "x", "y") + cmd("MULTI") + cmd("CSK.COMMIT"),
		cmd("MULTI") + cmd("CSK.BEGIN") + cmd("EXEC") + cmd("CSK.BEGIN") + cmd("CSK.BEGIN") + cmd("RESET") + cmd("CSK.ROLLBACK"),
		cmd("CSK.BEGIN") + cmd("CSK.CLEARRANGE") + cmd("CSK.ATOMIC", "APPENDIFFITS", "z", "x") + cmd("DEL", "a", "z"),
	} {
		f.Add([]byte(seed))
	}
	db, err := caskade.Open(f.TempDir(), &caskade.Options{Sync: caskade.SyncNone})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	f.Fuzz(func(t *testing.T, input []byte) {
		if bytes.Contains(bytes.ToLower(input), []byte("sleep")) {
			t.Skip("DEBUG SLEEP would only slow the fuzzer down")
		}
		s := &Server{DB: db, ProtoMaxBulkLen: 1 << 20, ShutdownFunc: func() {}}
		serveInput(s, input)
		if n := s.panics.Load(); n != 0 {
			t.Fatalf("%d connection handlers panicked", n)
		}
		// The database and a fresh server still work.
		s2 := &Server{DB: db}
		out := serveInput(s2, []byte(cmd("SET", "fuzz:probe", "ok")+cmd("GET", "fuzz:probe")))
		if string(out) != "+OK\r\n$2\r\nok\r\n" {
			t.Fatalf("database unusable after the input: %q", out)
		}
		s.Close()
		s2.Close()
	})
}
