package redis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/internal/wiretest"
	"github.com/caskade/caskade/server/metrics"
)

// TestReplies checks replies byte for byte against Redis's.
func TestReplies(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	steps := []struct{ cmd, want string }{
		{cmd("PING"), "+PONG\r\n"},
		{cmd("PING", "hi"), "$2\r\nhi\r\n"},
		{cmd("PING", "a", "b"), "-ERR wrong number of arguments for 'ping' command\r\n"},
		{cmd("ECHO", "x y"), "$3\r\nx y\r\n"},
		{cmd("GET", "nokey"), "$-1\r\n"},
		{cmd("GET"), "-ERR wrong number of arguments for 'get' command\r\n"},
		{cmd("NOPE", "a"), "-ERR unknown command 'NOPE', with args beginning with: 'a' \r\n"},
		{cmd("NOPE"), "-ERR unknown command 'NOPE', with args beginning with: \r\n"},
		{cmd("SET", "k", "v"), "+OK\r\n"},
		{cmd("SET", "k", "v", "BOGUS"), "-ERR syntax error\r\n"},
		{cmd("SET", "k", "v", "NX", "XX"), "-ERR syntax error\r\n"},
		{cmd("SET", "k", "v", "EX", "0"), "-ERR invalid expire time in 'set' command\r\n"},
		{cmd("SET", "k", "v", "EX", "x"), "-ERR value is not an integer or out of range\r\n"},
		{cmd("SETEX", "k", "-1", "v"), "-ERR invalid expire time in 'setex' command\r\n"},
		{cmd("GET", "k"), "$1\r\nv\r\n"},
		{cmd("SET", "k", "w", "GET"), "$1\r\nv\r\n"},
		{cmd("SET", "k", "x", "NX"), "$-1\r\n"},
		{cmd("SET", "k2", "x", "XX"), "$-1\r\n"},
		{cmd("SET", "k2", "x", "NX", "GET"), "$-1\r\n"},
		{cmd("SETNX", "k2", "y"), ":0\r\n"},
		{cmd("SETNX", "k3", "y"), ":1\r\n"},
		{cmd("INCR", "k"), "-ERR value is not an integer or out of range\r\n"},
		{cmd("INCR", "n"), ":1\r\n"},
		{cmd("INCRBY", "n", "9223372036854775806"), ":9223372036854775807\r\n"},
		{cmd("INCR", "n"), "-ERR increment or decrement would overflow\r\n"},
		{cmd("DECRBY", "n", "-9223372036854775808"), "-ERR decrement would overflow\r\n"},
		{cmd("SET", "f", "10.5"), "+OK\r\n"},
		{cmd("INCRBYFLOAT", "f", "0.1"), "$4\r\n10.6\r\n"},
		{cmd("INCRBYFLOAT", "f", "-10.6"), "$1\r\n0\r\n"},
		{cmd("INCRBYFLOAT", "f", "abc"), "-ERR value is not a valid float\r\n"},
		{cmd("INCRBYFLOAT", "k", "1"), "-ERR value is not a valid float\r\n"},
		{cmd("INCRBYFLOAT", "f", "inf"), "-ERR increment would produce NaN or Infinity\r\n"},
		{cmd("SET", "f", "0.1"), "+OK\r\n"},
		{cmd("INCRBYFLOAT", "f", "0.2"), "$3\r\n0.3\r\n"},
		{cmd("INCRBYFLOAT", "f", "5.0e3"), "$22\r\n5000.29999999999999982\r\n"}, // as Redis: long double
		{cmd("APPEND", "k", "yz"), ":3\r\n"},
		{cmd("STRLEN", "k"), ":3\r\n"},
		{cmd("GETRANGE", "k", "0", "-1"), "$3\r\nwyz\r\n"},
		{cmd("GETRANGE", "k", "5", "10"), "$0\r\n\r\n"},
		{cmd("GETRANGE", "nokey", "0", "-1"), "$0\r\n\r\n"},
		{cmd("SETRANGE", "k", "5", "!"), ":6\r\n"},
		{cmd("GET", "k"), "$6\r\nwyz\x00\x00!\r\n"},
		{cmd("SETRANGE", "k", "-1", "x"), "-ERR offset is out of range\r\n"},
		{cmd("MSET", "a", "1", "b"), "-ERR wrong number of arguments for 'mset' command\r\n"},
		{cmd("MSET", "a", "1", "b", "2"), "+OK\r\n"},
		{cmd("MGET", "a", "nokey", "b"), "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n"},
		{cmd("MSETNX", "a", "3", "c", "4"), ":0\r\n"},
		{cmd("MSETNX", "c", "3", "d", "4"), ":1\r\n"},
		{cmd("GETSET", "a", "9"), "$1\r\n1\r\n"},
		{cmd("GETDEL", "a"), "$1\r\n9\r\n"},
		{cmd("GETDEL", "a"), "$-1\r\n"},
		{cmd("EXISTS", "b", "b", "nokey"), ":2\r\n"},
		{cmd("DEL", "b", "b", "c"), ":2\r\n"},
		{cmd("TYPE", "d"), "+string\r\n"},
		{cmd("TYPE", "nokey"), "+none\r\n"},
		{cmd("TTL", "d"), ":-1\r\n"},
		{cmd("TTL", "nokey"), ":-2\r\n"},
		{cmd("EXPIRE", "d", "100"), ":1\r\n"},
		{cmd("TTL", "d"), ":100\r\n"},
		{cmd("EXPIRE", "d", "50", "GT"), ":0\r\n"},
		{cmd("EXPIRE", "d", "50", "LT"), ":1\r\n"},
		{cmd("EXPIRE", "d", "50", "NX"), ":0\r\n"},
		{cmd("EXPIRE", "d", "50", "NX", "XX"), "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"},
		{cmd("EXPIRE", "d", "50", "GT", "LT"), "-ERR GT and LT options at the same time are not compatible\r\n"},
		{cmd("EXPIRE", "d", "50", "FOO"), "-ERR Unsupported option FOO\r\n"},
		{cmd("PERSIST", "d"), ":1\r\n"},
		{cmd("PERSIST", "d"), ":0\r\n"},
		{cmd("EXPIRE", "nokey", "10"), ":0\r\n"},
		{cmd("PEXPIREAT", "d", "1"), ":1\r\n"},
		{cmd("EXISTS", "d"), ":0\r\n"},
		{cmd("RENAME", "nokey", "x"), "-ERR no such key\r\n"},
		{cmd("RENAME", "k", "k"), "+OK\r\n"},
		{cmd("RENAME", "k", "k9"), "+OK\r\n"},
		{cmd("RENAMENX", "k9", "k3"), ":0\r\n"},
		{cmd("COPY", "k9", "k9"), "-ERR source and destination objects are the same\r\n"},
		{cmd("COPY", "k9", "k3"), ":0\r\n"},
		{cmd("COPY", "k9", "k3", "REPLACE"), ":1\r\n"},
		{cmd("COPY", "k9", "k3", "DB", "99"), "-ERR DB index is out of range\r\n"},
		{cmd("SELECT", "16"), "-ERR DB index is out of range\r\n"},
		{cmd("SELECT", "x"), "-ERR value is not an integer or out of range\r\n"},
		{cmd("GET", "\xffk"), "-ERR keys beginning with byte 0xff are reserved for other databases\r\n"},
		{cmd("OBJECT", "ENCODING", "n"), "$3\r\nint\r\n"},
		{cmd("OBJECT", "ENCODING", "k3"), "$6\r\nembstr\r\n"},
		{cmd("OBJECT", "ENCODING", "nokey"), "$-1\r\n"},
		{cmd("OBJECT", "NOPE"), "-ERR unknown subcommand 'NOPE'. Try OBJECT HELP.\r\n"},
		{cmd("CLIENT", "NOPE"), "-ERR unknown subcommand 'NOPE'. Try CLIENT HELP.\r\n"},
		{cmd("CLIENT"), "-ERR wrong number of arguments for 'client' command\r\n"},
		{cmd("CLIENT", "SETNAME"), "-ERR wrong number of arguments for 'client|setname' command\r\n"},
		{cmd("CLIENT", "SETNAME", "a b"), "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"},
		{cmd("CLIENT", "SETINFO", "lib-ver", "a b"), "-ERR lib-ver cannot contain spaces, newlines or special characters.\r\n"},
		{cmd("CLIENT", "SETNAME", "me"), "+OK\r\n"},
		{cmd("CLIENT", "GETNAME"), "$2\r\nme\r\n"},
		{cmd("CLIENT", "MAINT_NOTIFICATIONS", "ON"), "-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.\r\n"},
		{cmd("AUTH", "x"), "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"},
		{cmd("HELLO", "4"), "-NOPROTO unsupported protocol version\r\n"},
		{cmd("DEBUG", "SEGFAULT"), "-ERR DEBUG subcommand not allowed\r\n"},
		{cmd("DEBUG", "SLEEP", "0"), "+OK\r\n"},
		{cmd("FLUSHDB", "NOW"), "-ERR syntax error\r\n"},
		{cmd("LPUSH", "l", "x"), "-ERR unknown command 'LPUSH', with args beginning with: 'l' 'x' \r\n"},
		{cmd("SCAN", "x"), "-ERR invalid cursor\r\n"},
		{cmd("SCAN", "0", "COUNT", "0"), "-ERR syntax error\r\n"},
		{cmd("SCAN", "0", "TYPE", "nope"), "-ERR unknown type name 'nope'\r\n"},
		{cmd("SCAN", "0", "TYPE", "list\x00x"), "*2\r\n$1\r\n0\r\n*0\r\n"}, // a C string: "list"
		{cmd("SWAPDB", "x", "1"), "-ERR invalid first DB index\r\n"},
		{cmd("MOVE", "k3", "0"), "-ERR source and destination objects are the same\r\n"},
		{cmd("FLUSHALL", "ASYNC"), "+OK\r\n"},
		{cmd("DBSIZE"), ":0\r\n"},
		// SCAN's cursor is read as strtoul reads it: no leading space, a
		// sign allowed ('-' wraps modulo 2^64), the empty string is 0.
		{cmd("SCAN", ""), "*2\r\n$1\r\n0\r\n*0\r\n"},
		{cmd("SCAN", "-0"), "*2\r\n$1\r\n0\r\n*0\r\n"},
		{cmd("SCAN", "-18446744073709551615"), "*2\r\n$1\r\n0\r\n*0\r\n"},
		{cmd("SCAN", " 0"), "-ERR invalid cursor\r\n"},
		{cmd("SCAN", "\t0"), "-ERR invalid cursor\r\n"},
		{cmd("SCAN", "-"), "-ERR invalid cursor\r\n"},
		{cmd("SCAN", "- 1"), "-ERR invalid cursor\r\n"},
		{cmd("SCAN", "-18446744073709551616"), "-ERR invalid cursor\r\n"},
		{cmd("QUIT"), "+OK\r\n"},
	}
	for _, s := range steps {
		c.do(s.cmd, s.want)
	}
	c.expectClosed()
}

// TestOptionsAreCStrings: Redis compares option names and keywords with
// strcasecmp, as C strings, so an argument ends at its first NUL byte.
func TestOptionsAreCStrings(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	for _, s := range []struct{ cmd, want string }{
		{cmd("SET", "k", "v", "NX\x00x"), "+OK\r\n"},
		{cmd("SET", "k", "w", "GET\x00", "KEEPTTL\x00"), "$1\r\nv\r\n"},
		{cmd("SET", "k", "v", "EX\x00", "100"), "+OK\r\n"},
		{cmd("EXPIRE", "k", "200", "GT\x00a"), ":1\r\n"},
		{cmd("GETEX", "k", "PERSIST\x00"), "$1\r\nv\r\n"},
		{cmd("TTL", "k"), ":-1\r\n"},
		{cmd("COPY", "k", "k2", "DB\x00", "1", "REPLACE\x00"), ":1\r\n"},
		{cmd("SCAN", "0", "MATCH\x00", "k", "COUNT\x00", "5"), "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n"},
		{cmd("CLIENT", "REPLY", "ON\x00"), "+OK\r\n"},
		{cmd("CLIENT", "LIST", "TYPE", "pubsub\x00"), "$0\r\n\r\n"},
		{cmd("CLIENT", "KILL", "TYPE\x00", "pubsub\x00", "SKIPME", "yes\x00"), ":0\r\n"},
		{cmd("CLIENT", "PAUSE", "0", "WRITE\x00"), "+OK\r\n"},
		{cmd("CONFIG", "SET", "protected-mode", "yes\x00"), "+OK\r\n"},
		{cmd("FLUSHALL", "ASYNC\x00"), "+OK\r\n"},
		{cmd("DBSIZE"), ":0\r\n"},
	} {
		c.do(s.cmd, s.want)
	}
}

func TestEngineLimits(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.send(cmd("SET", strings.Repeat("k", 70000), "v"))
	if l := c.readLine(); !strings.HasPrefix(l, "-ERR key too large") {
		t.Fatalf("oversized key: %q", l)
	}
	c.do(cmd("PING"), "+PONG\r\n")
}

func TestRESP3Replies(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.send(cmd("HELLO", "3"))
	c.expect("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n" + RedisVersion + "\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:")
	c.readLine()
	c.expect("$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n")
	c.do(cmd("GET", "x"), "_\r\n")
	c.do(cmd("MGET", "x"), "*1\r\n_\r\n")
	c.do(cmd("CONFIG", "GET", "databases"), "%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n")
	c.do(cmd("WATCH", "w"), "+OK\r\n")
	other := ts.dial()
	other.do(cmd("SET", "w", "1"), "+OK\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("GET", "w"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "_\r\n")
}

func TestInlineCommands(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.do("PING\r\n", "+PONG\r\n")
	c.do("SET greeting \"hello world\"\n", "+OK\r\n")
	c.do("GET greeting\r\n", "$11\r\nhello world\r\n")
	c.do("\r\n\r\nEXISTS greeting 'greeting'\r\n", ":2\r\n")
	c.do("SET \"unbalanced\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n")
	c.expectClosed()
}

func TestPipeline10000(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	var req, want strings.Builder
	for i := range 10000 {
		switch i % 3 {
		case 0:
			req.WriteString(cmd("SET", fmt.Sprint("k", i), fmt.Sprint(i)))
			want.WriteString("+OK\r\n")
		case 1:
			req.WriteString(cmd("GET", fmt.Sprint("k", i-1)))
			v := fmt.Sprint(i - 1)
			want.WriteString(fmt.Sprintf("$%d\r\n%s\r\n", len(v), v))
		case 2:
			req.WriteString(cmd("INCR", "counter"))
			want.WriteString(fmt.Sprintf(":%d\r\n", i/3+1))
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		c.nc.Write([]byte(req.String()))
	}()
	c.expect(want.String())
	<-done
}

// TestPartialCommandFlushes checks that replies are sent while the rest of
// a pipeline is still on its way.
func TestPartialCommandFlushes(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.send("PING\r\n*2\r\n$3\r\nGET\r\n$")
	c.expect("+PONG\r\n")
	c.send("1\r\nx\r\nPING\r\nPI")
	c.expect("$-1\r\n+PONG\r\n")
	c.send("NG\r\n")
	c.expect("+PONG\r\n")
}

func TestProtocolErrors(t *testing.T) {
	ts := startServer(t, nil)
	for _, tc := range []struct{ req, want string }{
		{"*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"*1\r\n+PING\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"},
		{"*1\r\n$600000000\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"PING\r\n*2\r\n$3\r\nGET\r\n!\r\n", "+PONG\r\n-ERR Protocol error: expected '$', got '!'\r\n"},
	} {
		c := ts.dial()
		c.do(tc.req, tc.want)
		c.expectClosed()
	}
	// The server is unaffected.
	ts.dial().do(cmd("PING"), "+PONG\r\n")
}

func TestAuthAndPreAuthLimits(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.Password = "sekret" })
	c := ts.dial()
	c.do(cmd("GET", "x"), "-NOAUTH Authentication required.\r\n")
	c.do(cmd("NOPE"), "-ERR unknown command 'NOPE', with args beginning with: \r\n")
	c.do(cmd("AUTH", "wrong"), "-WRONGPASS invalid username-password pair or user is disabled.\r\n")
	c.do(cmd("AUTH", "bob", "sekret"), "-WRONGPASS invalid username-password pair or user is disabled.\r\n")
	c.do(cmd("HELLO", "3"), "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n")
	c.do(cmd("AUTH", "default", "sekret"), "+OK\r\n")
	c.do(cmd("SET", "x", strings.Repeat("v", 20000)), "+OK\r\n")

	// Before AUTH: at most 10 arguments and 16 KiB per argument.
	c2 := ts.dial()
	args := []string{"MGET"}
	for i := range 11 {
		args = append(args, fmt.Sprint(i))
	}
	c2.do(cmd(args...), "-ERR Protocol error: unauthenticated multibulk length\r\n")
	c2.expectClosed()
	c3 := ts.dial()
	c3.do(cmd("AUTH", strings.Repeat("p", 16385)), "-ERR Protocol error: unauthenticated bulk length\r\n")
	c3.expectClosed()

	// HELLO AUTH authenticates and switches protocol.
	c4 := ts.dial()
	c4.send(cmd("HELLO", "3", "AUTH", "default", "sekret", "SETNAME", "n"))
	c4.expect("%7\r\n")
	c4.do(cmd("CLIENT", "GETNAME"), "") // drain below
	// Skip the rest of HELLO's map, then read GETNAME.
	for {
		if l := c4.readLine(); l == "*0\r\n" {
			break
		}
	}
	c4.expect("$1\r\nn\r\n")
	c4.do(cmd("GET", "nokey"), "_\r\n")

	// RESET de-authenticates.
	c4.do(cmd("RESET"), "+RESET\r\n")
	c4.do(cmd("GET", "x"), "-NOAUTH Authentication required.\r\n")
}

func TestSecurityAttackCloses(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.send("POST / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	c.expectClosed()
	c = ts.dial()
	c.do(cmd("PING"), "+PONG\r\n")
	c.send("Host: example.com\r\n")
	c.expectClosed()
}

func TestMaxClients(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.MaxClients = 2 })
	a, b := ts.dial(), ts.dial()
	a.do(cmd("PING"), "+PONG\r\n")
	b.do(cmd("PING"), "+PONG\r\n")
	c := ts.dial()
	c.expect("-ERR max number of clients reached\r\n")
	c.expectClosed()
	a.nc.Close()
	waitFor(t, "a slot to free up", func() bool { return ts.srv.nclients.Load() < 2 })
	ts.dial().do(cmd("PING"), "+PONG\r\n")
}

func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.IdleTimeout = 50 * time.Millisecond })
	c := ts.dial()
	c.do(cmd("PING"), "+PONG\r\n")
	start := time.Now()
	c.expectClosed()
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", d)
	}
	// CONFIG SET timeout 0 disables it for new waits.
	c = ts.dial()
	c.do(cmd("CONFIG", "SET", "timeout", "0"), "+OK\r\n")
	c.do(cmd("CONFIG", "GET", "timeout"), "*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n")
}

func TestProtectedModeDecision(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 1234} }
	for _, tc := range []struct {
		addr        net.Addr
		protected   bool
		hasPassword bool
		refuse      bool
	}{
		{tcp("127.0.0.1"), true, false, false},
		{tcp("127.8.9.10"), true, false, false},
		{tcp("::1"), true, false, false},
		{tcp("10.0.0.1"), true, false, true},
		{tcp("192.168.1.5"), true, false, true},
		{tcp("8.8.8.8"), true, false, true},
		{tcp("::ffff:10.0.0.1"), true, false, true},
		{tcp("fe80::1"), true, false, true},
		{tcp("10.0.0.1"), true, true, false},
		{tcp("10.0.0.1"), false, false, false},
		{&net.UnixAddr{Name: "/tmp/x.sock", Net: "unix"}, true, false, false},
		{&net.UnixAddr{Name: "", Net: "unix"}, true, false, false},
	} {
		if got := protectedModeRefuses(tc.protected, tc.hasPassword, tc.addr); got != tc.refuse {
			t.Errorf("protectedModeRefuses(%v, %v, %v) = %v, want %v", tc.protected, tc.hasPassword, tc.addr, got, tc.refuse)
		}
	}
	if !strings.HasPrefix(deniedProtectedMode, "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user.") ||
		!strings.HasSuffix(deniedProtectedMode, "\r\n") {
		t.Fatalf("bad DENIED text %q", deniedProtectedMode)
	}
}

func TestDatabasesAreKeyPrefixes(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.do(cmd("SET", "k", "zero"), "+OK\r\n")
	c.do(cmd("SELECT", "3"), "+OK\r\n")
	c.do(cmd("GET", "k"), "$-1\r\n")
	c.do(cmd("SET", "k", "three"), "+OK\r\n")
	c.do(cmd("SET", "\xffok", "x"), "+OK\r\n") // allowed outside db 0
	c.do(cmd("DBSIZE"), ":2\r\n")
	c.do(cmd("KEYS", "*"), "*2\r\n$1\r\nk\r\n$3\r\n\xffok\r\n")
	c.do(cmd("MOVE", "k", "0"), ":0\r\n")
	c.do(cmd("MOVE", "k", "5"), ":1\r\n")
	c.do(cmd("SWAPDB", "0", "5"), "+OK\r\n")
	c.do(cmd("SELECT", "0"), "+OK\r\n")
	c.do(cmd("GET", "k"), "$5\r\nthree\r\n")
	c.do(cmd("DBSIZE"), ":1\r\n")
	c.do(cmd("SELECT", "5"), "+OK\r\n")
	c.do(cmd("GET", "k"), "$4\r\nzero\r\n")
	c.do(cmd("COPY", "k", "k", "DB", "0", "REPLACE"), ":1\r\n")
	c.do(cmd("FLUSHDB"), "+OK\r\n")
	c.do(cmd("DBSIZE"), ":0\r\n")
	c.do(cmd("SELECT", "0"), "+OK\r\n")
	c.do(cmd("GET", "k"), "$4\r\nzero\r\n")
	// The engine sees database 0's keys as they are, the others prefixed.
	if v, err := ts.db.Get([]byte("k")); err != nil || string(v) != "zero" {
		t.Fatalf("db 0 key: %q %v", v, err)
	}
	if v, err := ts.db.Get([]byte("\xff\x03k")); err == nil {
		t.Fatalf("db 3 key still there: %q", v)
	}
	if v, err := ts.db.Get([]byte("\xff\x03\xffok")); err != nil || string(v) != "x" {
		t.Fatalf("db 3 key: %q %v", v, err)
	}
	c.do(cmd("KEYS", "*"), "*1\r\n$1\r\nk\r\n")

	// Nor can SWAPDB bring a key beginning with 0xff into database 0,
	// where it would be another database's key ("\xff\x01ab" is database
	// 1's "ab"): it is refused, whichever side database 0 is on, and
	// nothing moves.
	c.do(cmd("SELECT", "2"), "+OK\r\n")
	c.do(cmd("SET", "\xff\x01ab", "x"), "+OK\r\n")
	c.do(cmd("SWAPDB", "2", "0"), "-ERR keys beginning with byte 0xff are reserved for other databases\r\n")
	c.do(cmd("SWAPDB", "0", "2"), "-ERR keys beginning with byte 0xff are reserved for other databases\r\n")
	c.do(cmd("SWAPDB", "2", "1"), "+OK\r\n") // elsewhere such keys move as any other
	c.do(cmd("DBSIZE"), ":0\r\n")
	c.do(cmd("SELECT", "1"), "+OK\r\n")
	c.do(cmd("KEYS", "*"), "*1\r\n$4\r\n\xff\x01ab\r\n")
	c.do(cmd("SELECT", "0"), "+OK\r\n")
	c.do(cmd("KEYS", "*"), "*1\r\n$1\r\nk\r\n")
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"*", "", false /* as in Redis; KEYS * matches all anyway */}, {"*", "abc", true}, {"a*", "abc", true}, {"a*c", "abc", true},
		{"a*d", "abc", false}, {"?", "a", true}, {"?", "", false}, {"a?c", "abc", true},
		{"[abc]", "b", true}, {"[abc]", "d", false}, {"[^abc]", "d", true}, {"[^abc]", "a", false},
		{"[a-c]", "b", true}, {"[c-a]", "b", true}, {"[a-c]", "d", false},
		{"\\*", "*", true}, {"\\*", "a", false}, {"[\\]]", "]", true}, {"[abc", "a", true},
		{"[abc", "ab", false}, {"h*llo", "heeeello", true}, {"h[ae]llo", "hello", true},
		{"*a*a*a*a*a*a*a*b", strings.Repeat("a", 40), false}, {"a**", "a", true}, {"", "", true},
		{"", "a", false}, {"abc*", "ab", false}, {"ab\\", "ab\\", true},
	} {
		if got := globMatch([]byte(tc.pat), []byte(tc.s), false); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
	if !globMatch([]byte("MAX*"), []byte("maxclients"), true) {
		t.Error("nocase match failed")
	}
}

func TestNumberFormats(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"0", true}, {"-1", true}, {"+1", false}, {"01", false}, {" 1", false}, {"", false},
		{"9223372036854775807", true}, {"9223372036854775808", false}, {"-9223372036854775808", true}, {"-0", false}} {
		if _, ok := string2ll([]byte(tc.in)); ok != tc.ok {
			t.Errorf("string2ll(%q) ok = %v", tc.in, ok)
		}
	}
	// Sums as Redis 7.0.15 computes them in long double (checked with
	// redis-cli INCRBYFLOAT).
	for _, tc := range []struct{ a, b, want string }{
		{"10.5", "0.1", "10.6"}, {"0.1", "0.2", "0.3"}, {"-0.0", "0", "0"}, {"3.0", "0", "3"},
		{"9223372036854775808", "5", "9223372036854775813"},
		{"1e308", "1e308", "199999999999999999993371759311691291321120199694831134415594095989843469737676123744200253843777078640893494450108026446304269499187921167194841628860392837535918200039206381557326219209014213335878306791577877829121087126122536729803237260434173178506889763247582601711514636284849020905456510092687857156096"},
		{"1", "1e-20", "1"}, {"17179869185.5", "0", "17179869185.5"}, {"1.5e20", "0", "150000000000000000000"},
		{"0x1.8p1", "0.25", "3.25"}, {"5", "-5.0000000000000000001", "0"},
	} {
		a, okA := string2ld([]byte(tc.a))
		b, okB := string2ld([]byte(tc.b))
		sum, ok := ldAdd(a, b)
		if !okA || !okB || !ok {
			t.Errorf("%s + %s: parse %v %v, add %v", tc.a, tc.b, okA, okB, ok)
			continue
		}
		if got := formatLongDouble(sum); got != tc.want {
			t.Errorf("%s + %s = %s, want %s", tc.a, tc.b, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{{"1.5", true}, {" 1", false}, {"1 ", false}, {"nan", false}, {"inf", true}, {"0x10", true}, {"1e999", true}, {"1e4933", false}, {"1e-4940", true}, {"1e-4960", false},
		{"Infinity", true}, {"0x", false}, {"1e", false}, {"0b1", false}, {"1p3", false}, {"1_0", false}} {
		if _, ok := string2ld([]byte(tc.in)); ok != tc.ok {
			t.Errorf("string2ld(%q) ok = %v", tc.in, ok)
		}
	}
}

// TestHalfClose checks that a client that sends its commands and then
// shuts down its side of the connection gets every reply and then the
// connection closed, as from Redis: with the end of its input read in the
// same event as its last bytes, the event loop must still come back for
// that end. Under SyncAlways the replies also wait for commits.
func TestHalfClose(t *testing.T) {
	for _, sync := range []caskade.SyncPolicy{caskade.SyncNone, caskade.SyncAlways} {
		for _, n := range []int{1, 3000} {
			t.Run(fmt.Sprintf("%s/%d", sync, n), func(t *testing.T) {
				ts := startServerOpts(t, &caskade.Options{Sync: sync})
				var req, want strings.Builder
				for i := range n {
					req.WriteString(cmd("SET", fmt.Sprint("k", i), "v"))
					req.WriteString(cmd("GET", fmt.Sprint("k", i)))
					want.WriteString("+OK\r\n$1\r\nv\r\n")
				}
				wiretest.Exchange(t, ts.addr, rand.New(rand.NewPCG(uint64(n), 1)), []byte(req.String()), want.String(), true, "client")
			})
		}
	}
}

// TestClientListCommand checks the cmd= field of CLIENT INFO and CLIENT
// LIST, which, as in Redis, names the command being run (so CLIENT INFO
// names itself), or queued, or refused, and is NULL after an unknown
// command; it used to name the command before.
func TestClientListCommand(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	other := ts.dial()
	cmdField := func(c *rawConn, args ...string) string {
		t.Helper()
		c.send(cmd(args...))
		c.readLine() // the bulk string's length
		line := c.readLine()
		c.expect("\r\n") // the bulk string's end, after the line's \n
		_, rest, ok := strings.Cut(line, " cmd=")
		if !ok {
			t.Fatalf("%q: no cmd= field", line)
		}
		name, _, _ := strings.Cut(rest, " ")
		return name
	}
	if got := cmdField(c, "CLIENT", "INFO"); got != "client|info" {
		t.Errorf("CLIENT INFO as the first command: cmd=%s, want client|info", got)
	}
	c.send(cmd("CLIENT", "ID"))
	id := strings.TrimSpace(strings.TrimPrefix(c.readLine(), ":"))
	c.do(cmd("SET", "k", "v"), "+OK\r\n")
	if got := cmdField(other, "CLIENT", "INFO"); got != "client|info" {
		t.Errorf("CLIENT INFO: cmd=%s, want client|info", got)
	}
	for _, step := range []struct {
		args []string
		want string
		cmd  string
	}{
		{[]string{"GET", "k"}, "$1\r\nv\r\n", "get"},
		{[]string{"GET"}, "-ERR wrong number of arguments for 'get' command\r\n", "get"},
		{[]string{"NOPE"}, "-ERR unknown command 'NOPE', with args beginning with: \r\n", "NULL"},
		{[]string{"MULTI"}, "+OK\r\n", "multi"},
		{[]string{"INCR", "n"}, "+QUEUED\r\n", "incr"},
		{[]string{"EXEC"}, "*1\r\n:1\r\n", "exec"},
	} {
		c.do(cmd(step.args...), step.want)
		other.send(cmd("CLIENT", "LIST", "ID", id))
		other.readLine()
		line := other.readLine()
		other.expect("\r\n")
		_, rest, _ := strings.Cut(line, " cmd=")
		if got, _, _ := strings.Cut(rest, " "); got != step.cmd {
			t.Errorf("after %q: cmd=%s, want %s", step.args, got, step.cmd)
		}
	}
}

// TestCommandGetkeys checks COMMAND GETKEYS's errors as Redis 7.2+ gives
// them: one argument after GETKEYS suffices (arity -3; Redis 7.0 wanted
// two), and a command without key arguments is refused before its own
// arity is checked.
func TestCommandGetkeys(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "-ERR The command has no key arguments\r\n"},
		{[]string{"PING", "a", "b"}, "-ERR The command has no key arguments\r\n"},
		{[]string{"GET"}, "-ERR Invalid number of arguments specified for command\r\n"},
		{[]string{"SET", "k"}, "-ERR Invalid number of arguments specified for command\r\n"},
		{[]string{"NOPE", "k"}, "-ERR Invalid command specified\r\n"},
		{[]string{"OBJECT", "ENCODING", "k"}, "*1\r\n$1\r\nk\r\n"},
		{[]string{"GET", "k"}, "*1\r\n$1\r\nk\r\n"},
		{[]string{"MSET", "a", "1", "b"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{nil, "-ERR wrong number of arguments for 'command|getkeys' command\r\n"},
	} {
		c.do(cmd(append([]string{"COMMAND", "GETKEYS"}, tc.args...)...), tc.want)
	}
}

// TestConfigSetNumbers checks CONFIG SET's parsing and bounds of numbers
// as Redis 7.4 has them: integers as string2ll reads them, memory values
// with units for proto-max-bulk-len, each parameter's own bounds, and
// CONFIG GET naming a parameter given without glob characters as given.
func TestConfigSetNumbers(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	fail := func(name, why string) string {
		return "-ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + why + "\r\n"
	}
	const notInt = "argument couldn't be parsed into an integer"
	get := func(name, val string) string {
		return "*2\r\n$" + itoa(int64(len(name))) + "\r\n" + name + "\r\n$" + itoa(int64(len(val))) + "\r\n" + val + "\r\n"
	}
	for _, tc := range []struct{ args, want string }{
		{"timeout 1.0", fail("timeout", notInt)},
		{"timeout 1e3", fail("timeout", notInt)},
		{"maxclients 4294967295", "+OK\r\n"},
		{"maxclients 4294967296", fail("maxclients", "argument must be between 1 and 4294967295 inclusive")},
		{"maxclients 10000", "+OK\r\n"},
		{"slowlog-max-len -1", fail("slowlog-max-len", "argument must be between 0 and 9223372036854775807 inclusive")},
		{"slowlog-max-len 2147483648", "+OK\r\n"},
		{"slowlog-log-slower-than 9223372036854775807", "+OK\r\n"},
		{"slowlog-log-slower-than -2", fail("slowlog-log-slower-than", "argument must be between -1 and 9223372036854775807 inclusive")},
		{"proto-max-bulk-len 1mb", "+OK\r\n"},
		{"proto-max-bulk-len 2G", "+OK\r\n"},
		{"proto-max-bulk-len 1kb", fail("proto-max-bulk-len", "argument must be between 1048576 and 9223372036854775807 inclusive")},
		{"proto-max-bulk-len 1.5mb", fail("proto-max-bulk-len", "argument must be a memory value")},
		{"proto-max-bulk-len -1", fail("proto-max-bulk-len", "argument must be a memory value")},
		{"proto-max-bulk-len 99999999999gb", fail("proto-max-bulk-len", "argument must be between 1048576 and 9223372036854775807 inclusive")},
	} {
		c.do(cmd(append([]string{"CONFIG", "SET"}, strings.Fields(tc.args)...)...), tc.want)
	}
	c.do(cmd("CONFIG", "GET", "proto-max-bulk-len"), get("proto-max-bulk-len", "2000000000"))
	c.do(cmd("CONFIG", "GET", "slowlog-log-slower-than"), get("slowlog-log-slower-than", "9223372036854775807"))
	c.do(cmd("CONFIG", "GET", "slowlog-max-len"), get("slowlog-max-len", "2147483648"))
	c.do(cmd("CONFIG", "GET", "TimeOut", "tim*"), get("TimeOut", "0"))
	c.do(cmd("CONFIG", "GET", `time\out`), "*0\r\n")
}

// TestCommandInfoAsRedis checks COMMAND INFO of commands without key
// specs byte for byte against Redis 7.4's replies: the flags Redis shows
// (not sentinel, protected or touches_arbitrary_keys) in its order, the
// ACL categories, explicit and implied, in the order of Redis's category
// table, the tips, and RESP3 sets for empty key specs and subcommands.
// COMMAND LIST FILTERBY ACLCAT and COMMAND DOCS's group follow the same
// categories.
func TestCommandInfoAsRedis(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.do(cmd("COMMAND", "INFO", "keys", "save", "client|list"), "*3\r\n"+
		"*10\r\n$4\r\nkeys\r\n:2\r\n*1\r\n+readonly\r\n:0\r\n:0\r\n:0\r\n*4\r\n+@keyspace\r\n+@read\r\n+@slow\r\n+@dangerous\r\n"+
		"*2\r\n$25\r\nrequest_policy:all_shards\r\n$29\r\nnondeterministic_output_order\r\n*0\r\n*0\r\n"+
		"*10\r\n$4\r\nsave\r\n:1\r\n*4\r\n+admin\r\n+noscript\r\n+no_async_loading\r\n+no_multi\r\n:0\r\n:0\r\n:0\r\n"+
		"*3\r\n+@admin\r\n+@slow\r\n+@dangerous\r\n*0\r\n*0\r\n*0\r\n"+
		"*10\r\n$11\r\nclient|list\r\n:-2\r\n*4\r\n+admin\r\n+noscript\r\n+loading\r\n+stale\r\n:0\r\n:0\r\n:0\r\n"+
		"*4\r\n+@admin\r\n+@slow\r\n+@dangerous\r\n+@connection\r\n*1\r\n$23\r\nnondeterministic_output\r\n*0\r\n*0\r\n")
	c.hello3()
	c.do(cmd("COMMAND", "INFO", "ping"), "*1\r\n*10\r\n$4\r\nping\r\n:-1\r\n~1\r\n+fast\r\n:0\r\n:0\r\n:0\r\n"+
		"~2\r\n+@fast\r\n+@connection\r\n~2\r\n$25\r\nrequest_policy:all_shards\r\n$29\r\nresponse_policy:all_succeeded\r\n~0\r\n~0\r\n")
	c.send(cmd("COMMAND", "LIST", "FILTERBY", "ACLCAT", "dangerous"))
	n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(c.readLine(), "*")))
	got := map[string]bool{}
	for range n {
		c.readLine()
		got[strings.TrimSpace(c.readLine())] = true
	}
	for _, want := range []string{"keys", "flushall", "lastsave", "swapdb", "info", "client|kill", "config|get"} {
		if !got[want] {
			t.Errorf("COMMAND LIST FILTERBY ACLCAT dangerous: %v lacks %q", got, want)
		}
	}
	if got["get"] || got["client|id"] {
		t.Errorf("COMMAND LIST FILTERBY ACLCAT dangerous: %v", got)
	}
	c.do(cmd("COMMAND", "DOCS", "flushall"), "%1\r\n$8\r\nflushall\r\n%3\r\n$7\r\nsummary\r\n$0\r\n\r\n$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nserver\r\n")
}

// TestServeConnMaxClients: ServeConn applies MaxClients as Serve does.
func TestServeConnMaxClients(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.MaxClients = 1 })
	a := ts.dial()
	a.do(cmd("PING"), "+PONG\r\n")
	srvEnd, cliEnd := net.Pipe()
	defer cliEnd.Close()
	served := make(chan error, 1)
	go func() { served <- ts.srv.ServeConn(srvEnd) }()
	c := &rawConn{t: t, nc: cliEnd, br: bufio.NewReader(cliEnd)}
	c.expect("-ERR max number of clients reached\r\n")
	c.expectClosed()
	<-served
}

// TestServeSeveralListeners serves two listeners at once, as caskade
// serve does for TCP, unix socket and TLS: Serve for one must not race
// with the other's setting up of the Server (go test -race).
func TestServeSeveralListeners(t *testing.T) {
	ts := startServer(t, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- ts.srv.Serve(l) }()
	ts.dial().do(cmd("SELECT", "15"), "+OK\r\n")
	second := &testServer{t: t, addr: l.Addr().String()}
	c := second.dial()
	c.do(cmd("SELECT", "15"), "+OK\r\n")
	c.do(cmd("SELECT", "16"), "-ERR DB index is out of range\r\n")
	ts.srv.Close()
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
}

// TestIdleTimeoutSpareSlowCommand sends a big command in pieces, pausing
// between them (the pauses make the client slow; they synchronise
// nothing), so that it takes several idle timeouts to arrive whole: a
// client sending is not idle (Redis counts every read), so the command
// must run, in both connection modes (a command bigger than the read
// buffer moves a client off its event loop).
func TestIdleTimeoutSpareSlowCommand(t *testing.T) {
	for _, loops := range []int{-1, 1} {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			const idle = 200 * time.Millisecond
			ts := startServer(t, func(s *Server) { s.EventLoops = loops; s.IdleTimeout = idle })
			c := ts.dial()
			val := strings.Repeat("v", 256<<10)
			c.send(fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n", len(val)))
			for i := 0; i < len(val); i += len(val) / 16 {
				time.Sleep(idle / 4)
				c.send(val[i : i+len(val)/16])
			}
			c.send("\r\n")
			c.expect("+OK\r\n")
			c.do(cmd("STRLEN", "k"), fmt.Sprintf(":%d\r\n", len(val)))
		})
	}
}

// TestMaxClientsConcurrentAccepts admits connections from many goroutines
// at once (ServeConn on each, as several listeners or a custom transport
// would): the check against MaxClients and the count are one step, so
// never more than MaxClients are served.
func TestMaxClientsConcurrentAccepts(t *testing.T) {
	const maxc, dials = 4, 48
	ts := startServer(t, func(s *Server) { s.MaxClients = maxc })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go ts.srv.ServeConn(nc)
		}
	}()
	var served atomic.Int64
	var wg sync.WaitGroup
	conns := make([]net.Conn, dials)
	for i := range dials {
		wg.Go(func() {
			nc, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			conns[i] = nc
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(nc, "PING\r\n")
			line, _ := bufio.NewReader(nc).ReadString('\n')
			switch line {
			case "+PONG\r\n":
				served.Add(1)
			case "-ERR max number of clients reached\r\n":
			default:
				t.Errorf("PING: %q", line)
			}
		})
	}
	wg.Wait()
	if n := served.Load(); n > maxc {
		t.Fatalf("%d of %d clients dialling at once were served, MaxClients is %d", n, dials, maxc)
	}
	for _, nc := range conns {
		if nc != nil {
			nc.Close()
		}
	}
	waitFor(t, "every slot to free up", func() bool { return ts.srv.nclients.Load() == 0 })
}

// remoteConn is a connection that reports another peer address.
type remoteConn struct {
	net.Conn
	remote net.Addr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.remote }

// A client refused in protected mode is counted as rejected, in INFO's
// rejected_connections and in caskade_connections_rejected_total, as one
// refused beyond maxclients is (and as the memcached and HTTP front ends
// count theirs): the metric used to leave it out, and ServeConn both.
func TestProtectedModeRefusalCounted(t *testing.T) {
	m := metrics.New(nil)
	ts := startServer(t, func(s *Server) { s.Metrics = m })
	srvEnd, cliEnd := net.Pipe()
	defer cliEnd.Close()
	served := make(chan error, 1)
	go func() {
		served <- ts.srv.ServeConn(remoteConn{srvEnd, &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 5555}})
	}()
	c := &rawConn{t: t, nc: cliEnd, br: bufio.NewReader(cliEnd)}
	c.expect(deniedProtectedMode)
	c.expectClosed()
	<-served
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `caskade_connections_rejected_total{protocol="redis"} 1`) {
		t.Error("the protected-mode refusal is not in caskade_connections_rejected_total")
	}
	ic := ts.dial()
	ic.send(cmd("INFO", "stats"))
	n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(ic.readLine(), "$")))
	info := make([]byte, n)
	if _, err := io.ReadFull(ic.br, info); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(info), "rejected_connections:1\r\n") {
		t.Errorf("INFO stats after a protected-mode refusal:\n%s", info)
	}
}
