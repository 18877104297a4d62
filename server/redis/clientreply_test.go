package redis

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade"
)

// TestClientReply checks CLIENT REPLY against what Redis 7 sends, byte for
// byte, each case sent command by command and then pipelined in one write.
// Every case ends with a command whose reply shows, so that a reply that
// should have been dropped would show before it.
func TestClientReply(t *testing.T) {
	for _, sync := range []caskade.SyncPolicy{caskade.SyncNone, caskade.SyncAlways} {
		t.Run(sync.String(), func(t *testing.T) {
			testClientReply(t, startServerOpts(t, &caskade.Options{Sync: sync}))
		})
	}
}

// clientReplyCase is a sequence of commands and the bytes Redis 7 replies.
type clientReplyCase struct {
	name string
	cmds [][]string
	want string
}

func clientReplyCases() []clientReplyCase {
	c := func(args ...string) []string { return args }
	return []clientReplyCase{
		{"off then on", [][]string{c("CLIENT", "REPLY", "OFF"), c("SET", "a", "1"), c("GET", "a"), c("CLIENT", "REPLY", "ON"), c("GET", "a")},
			"+OK\r\n$1\r\n1\r\n"},
		{"skip", [][]string{c("CLIENT", "REPLY", "SKIP"), c("SET", "a", "1"), c("GET", "a")}, "$1\r\n1\r\n"},
		{"skip skip", [][]string{c("CLIENT", "REPLY", "SKIP"), c("CLIENT", "REPLY", "SKIP"), c("PING", "a"), c("PING", "b")}, "$1\r\nb\r\n"},
		{"skip under off", [][]string{c("CLIENT", "REPLY", "OFF"), c("CLIENT", "REPLY", "SKIP"), c("PING", "a"), c("CLIENT", "REPLY", "ON"), c("PING", "b")},
			"+OK\r\n$1\r\nb\r\n"},
		{"on skipped still replies", [][]string{c("CLIENT", "REPLY", "SKIP"), c("CLIENT", "REPLY", "ON"), c("PING", "b")}, "+OK\r\n$1\r\nb\r\n"},
		{"off skipped", [][]string{c("CLIENT", "REPLY", "SKIP"), c("CLIENT", "REPLY", "OFF"), c("PING", "b"), c("CLIENT", "REPLY", "ON")}, "+OK\r\n"},
		{"errors under off", [][]string{c("CLIENT", "REPLY", "OFF"), c("CLIENT", "REPLY", "FOO"), c("CLIENT", "REPLY"), c("NOPE"), c("GET"), c("CLIENT", "REPLY", "ON")},
			"+OK\r\n"},
		{"skipped errors", [][]string{c("CLIENT", "REPLY", "SKIP"), c("NOPE"), c("CLIENT", "REPLY", "SKIP"), c("GET"), c("PING", "x")}, "$1\r\nx\r\n"},
		{"bad arguments", [][]string{c("CLIENT", "REPLY", "FOO"), c("CLIENT", "REPLY"), c("CLIENT", "REPLY", "ON", "X")},
			"-ERR syntax error\r\n-ERR wrong number of arguments for 'client|reply' command\r\n-ERR wrong number of arguments for 'client|reply' command\r\n"},
		{"off inside multi", [][]string{c("MULTI"), c("CLIENT", "REPLY", "OFF"), c("SET", "a", "3"), c("EXEC"), c("PING"), c("CLIENT", "REPLY", "ON"), c("GET", "a")},
			"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n$1\r\n3\r\n"},
		{"skip inside multi", [][]string{c("MULTI"), c("CLIENT", "REPLY", "SKIP"), c("SET", "a", "4"), c("EXEC"), c("PING", "after"), c("PING", "x")},
			"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n$1\r\nx\r\n"},
		{"skip then multi", [][]string{c("CLIENT", "REPLY", "SKIP"), c("MULTI"), c("PING"), c("EXEC"), c("PING", "y")},
			"+QUEUED\r\n*1\r\n+PONG\r\n$1\r\ny\r\n"},
		{"off around multi", [][]string{c("CLIENT", "REPLY", "OFF"), c("MULTI"), c("PING"), c("EXEC"), c("CLIENT", "REPLY", "ON"), c("PING", "y")},
			"+OK\r\n$1\r\ny\r\n"},
		{"on inside multi", [][]string{c("MULTI"), c("CLIENT", "REPLY", "ON"), c("EXEC")}, "+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n"},
		{"reset ends off", [][]string{c("CLIENT", "REPLY", "OFF"), c("RESET"), c("PING", "z")}, "+RESET\r\n$1\r\nz\r\n"},
		{"hello under off", [][]string{c("CLIENT", "REPLY", "OFF"), c("HELLO", "3"), c("CLIENT", "REPLY", "ON")}, "+OK\r\n"},
		{"pipelined blind writes", [][]string{c("SET", "p", "1"), c("INCR", "p"), c("CLIENT", "REPLY", "SKIP"), c("INCR", "p"), c("INCR", "p"), c("CLIENT", "REPLY", "OFF"), c("MSET", "q", "1"), c("INCR", "p"), c("CLIENT", "REPLY", "ON"), c("INCR", "p"), c("GET", "q")},
			"+OK\r\n:2\r\n:4\r\n+OK\r\n:6\r\n$1\r\n1\r\n"},
	}
}

func testClientReply(t *testing.T, ts *testServer) {
	for _, tc := range clientReplyCases() {
		for _, pipelined := range []bool{false, true} {
			conn := ts.dial()
			var all strings.Builder
			for _, a := range tc.cmds {
				if pipelined {
					all.WriteString(cmd(a...))
				} else {
					conn.send(cmd(a...))
				}
			}
			if pipelined {
				conn.send(all.String())
			}
			conn.expect(tc.want)
			conn.do(cmd("PING", "end"), "$3\r\nend\r\n")
		}
	}
	// QUIT under OFF closes without a reply.
	q := ts.dial()
	q.send(cmd("CLIENT", "REPLY", "OFF") + cmd("QUIT"))
	q.expectClosed()
}

// TestClientReplyPushes: invalidations are pushes, not replies: they reach
// a client whose replies are off, as in Redis 7.2 and later.
func TestClientReplyPushes(t *testing.T) {
	ts := startServer(t, nil)
	c, w := ts.dial(), ts.dial()
	c.hello3()
	c.do(cmd("CLIENT", "TRACKING", "ON"), "+OK\r\n")
	c.do(cmd("GET", "a"), "_\r\n")
	c.send(cmd("CLIENT", "REPLY", "OFF"))
	c.send(cmd("GET", "b"))
	waitFor(t, "GET b to be tracked", func() bool {
		w.send(cmd("INFO", "stats"))
		r, err := readRawReply(w.br, nil)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(r), "tracking_total_keys:2\r\n")
	})
	w.do(cmd("MSET", "a", "1", "b", "2"), "+OK\r\n")
	c.expect(">2\r\n$10\r\ninvalidate\r\n*")
	keys := c.readLine() + c.readLine() + c.readLine() + c.readLine() + c.readLine()
	if keys != "2\r\n$1\r\na\r\n$1\r\nb\r\n" && keys != "2\r\n$1\r\nb\r\n$1\r\na\r\n" {
		t.Fatalf("invalidated %q", keys)
	}
	c.do(cmd("CLIENT", "REPLY", "ON"), "+OK\r\n")
}

// TestClientReplyAgainstRedis sends the cases of TestClientReply to a real
// redis-server too, where one is installed, and compares the bytes.
func TestClientReplyAgainstRedis(t *testing.T) {
	sock := startRedis(t)
	ts := startServer(t, nil)
	for _, tc := range clientReplyCases() {
		var req strings.Builder
		for _, a := range tc.cmds {
			req.WriteString(cmd(a...))
		}
		req.WriteString(cmd("PING", "end"))
		var got [2]string
		for i, c := range []*diffConn{dialDiff(t, "tcp", ts.addr), dialDiff(t, "unix", sock)} {
			c.nc.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c.nc, req.String()); err != nil {
				t.Fatal(err)
			}
			var b []byte
			for !strings.HasSuffix(string(b), "$3\r\nend\r\n") {
				line, err := c.br.ReadBytes('\n')
				if err != nil {
					t.Fatalf("%s: %v after %q", tc.name, err, b)
				}
				b = append(b, line...)
			}
			got[i] = string(b)
		}
		if got[0] != got[1] {
			t.Errorf("%s:\ncaskade: %q\nredis:   %q", tc.name, got[0], got[1])
		}
	}
}
