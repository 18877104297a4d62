package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade"
)

// forEachServing runs f on a server whose clients are served by event
// loops, then on one with a goroutine per client.
func forEachServing(t *testing.T, f func(t *testing.T, ts *testServer)) {
	for _, loops := range []int{0, -1} {
		t.Run("loops="+strconv.Itoa(loops), func(t *testing.T) {
			f(t, startServer(t, func(s *Server) { s.EventLoops = loops }))
		})
	}
}

// TestClientPauseWrite: under CLIENT PAUSE WRITE, a client's reads before
// a write get their replies, the write and everything after it wait (not
// refused) until CLIENT UNPAUSE, while other clients' reads go on. Writes
// are held where MULTI would queue them; EXEC of reads only is not held.
func TestClientPauseWrite(t *testing.T) {
	forEachServing(t, func(t *testing.T, ts *testServer) {
		admin, w, r := ts.dial(), ts.dial(), ts.dial()
		admin.do(cmd("CLIENT", "PAUSE", "600000", "WRITE"), "+OK\r\n")
		w.send(cmd("GET", "x") + cmd("SET", "x", "1") + cmd("GET", "x"))
		w.expect("$-1\r\n") // the SET is held by now: the replies went out before it
		r.do(cmd("GET", "x"), "$-1\r\n")
		r.do(cmd("MULTI"), "+OK\r\n")
		r.do(cmd("GET", "x"), "+QUEUED\r\n")
		r.do(cmd("EXEC"), "*1\r\n$-1\r\n")
		r.do(cmd("NOPE"), "-ERR unknown command 'NOPE', with args beginning with: \r\n")
		r.do(cmd("SET", "x"), "-ERR wrong number of arguments for 'set' command\r\n")
		r.do(cmd("CLIENT", "UNBLOCK", "1"), ":0\r\n")
		admin.do(cmd("CLIENT", "UNPAUSE"), "+OK\r\n")
		w.expect("+OK\r\n$1\r\n1\r\n")

		// In MULTI, the write is held where it would be queued, and an
		// EXEC with a write queued is held too.
		admin.do(cmd("CLIENT", "PAUSE", "600000", "WRITE"), "+OK\r\n")
		w.send(cmd("MULTI") + cmd("GET", "x") + cmd("INCR", "x") + cmd("EXEC"))
		w.expect("+OK\r\n+QUEUED\r\n")
		r.do(cmd("GET", "x"), "$1\r\n1\r\n")
		admin.do(cmd("CLIENT", "UNPAUSE"), "+OK\r\n")
		w.expect("+QUEUED\r\n*2\r\n$1\r\n1\r\n:2\r\n")
		w.do(cmd("MULTI"), "+OK\r\n")
		w.do(cmd("SET", "y", "1"), "+QUEUED\r\n")
		admin.do(cmd("CLIENT", "PAUSE", "600000", "WRITE"), "+OK\r\n")
		w.send(cmd("EXEC") + cmd("PING"))
		r.do(cmd("EXISTS", "y"), ":0\r\n")
		admin.do(cmd("CLIENT", "UNPAUSE"), "+OK\r\n")
		w.expect("*1\r\n+OK\r\n+PONG\r\n")

		// CSK.COMMIT is held; the writes it buffers are not.
		admin.do(cmd("CLIENT", "PAUSE", "600000", "WRITE"), "+OK\r\n")
		w.do(cmd("CSK.BEGIN"), "+OK\r\n")
		w.do(cmd("SET", "z", "1"), "+OK\r\n")
		w.send(cmd("CSK.COMMIT"))
		r.do(cmd("EXISTS", "z"), ":0\r\n")
		admin.do(cmd("CLIENT", "UNPAUSE"), "+OK\r\n")
		w.expect("+OK\r\n")
		r.do(cmd("EXISTS", "z"), ":1\r\n")
	})
}

// TestClientPauseAll: CLIENT PAUSE ALL holds every command but QUIT, even
// CLIENT UNPAUSE (as in Redis), after the checks that refuse a command;
// the pause ends by itself at its timeout.
func TestClientPauseAll(t *testing.T) {
	forEachServing(t, func(t *testing.T, ts *testServer) {
		admin, c := ts.dial(), ts.dial()
		start := time.Now()
		admin.do(cmd("CLIENT", "PAUSE", "200", "ALL"), "+OK\r\n")
		c.send(cmd("NOPE") + cmd("GET") + cmd("PING") + cmd("GET", "k"))
		c.expect("-ERR unknown command 'NOPE', with args beginning with: \r\n-ERR wrong number of arguments for 'get' command\r\n")
		admin.send(cmd("CLIENT", "UNPAUSE"))
		c.expect("+PONG\r\n$-1\r\n")
		admin.expect("+OK\r\n")
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Fatalf("the pause ended after %v", d)
		}
		q := ts.dial()
		admin.do(cmd("CLIENT", "PAUSE", "600000"), "+OK\r\n")
		q.send(cmd("QUIT"))
		q.expect("+OK\r\n")
		q.expectClosed()
	})
}

// TestClientPauseArgs checks the errors against Redis 7's texts.
func TestClientPauseArgs(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "PAUSE"}, "-ERR wrong number of arguments for 'client|pause' command\r\n"},
		{[]string{"CLIENT", "PAUSE", "abc"}, "-ERR timeout is not an integer or out of range\r\n"},
		{[]string{"CLIENT", "PAUSE", "1.5"}, "-ERR timeout is not an integer or out of range\r\n"},
		{[]string{"CLIENT", "PAUSE", "-1"}, "-ERR timeout is negative\r\n"},
		{[]string{"CLIENT", "PAUSE", "abc", "foo"}, "-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n"},
		{[]string{"CLIENT", "PaUsE", "10", "write", "x"}, "-ERR unknown subcommand or wrong number of arguments for 'PaUsE'. Try CLIENT HELP.\r\n"},
		{[]string{"CLIENT", "UNPAUSE", "x"}, "-ERR wrong number of arguments for 'client|unpause' command\r\n"},
		{[]string{"CLIENT", "UNBLOCK"}, "-ERR wrong number of arguments for 'client|unblock' command\r\n"},
		{[]string{"CLIENT", "UNBLOCK", "abc"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"CLIENT", "UNBLOCK", "abc", "foo"}, "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"},
		{[]string{"CLIENT", "UNBLOCK", "99", "TIMEOUT", "x"}, "-ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP.\r\n"},
		{[]string{"CLIENT", "UNBLOCK", "99", "error"}, ":0\r\n"},
		{[]string{"CLIENT", "UNBLOCK", "99", "timeout"}, ":0\r\n"},
		{[]string{"CLIENT", "PAUSE", "9223372036854775807", "WRITE"}, "-ERR timeout is out of range\r\n"},
		{[]string{"CLIENT", "PAUSE", "9223372036854775807"}, "-ERR timeout is out of range\r\n"},
		{[]string{"CLIENT", "PAUSE", "9000000000000000000", "WRITE"}, "+OK\r\n"},
		{[]string{"CLIENT", "UNPAUSE"}, "+OK\r\n"},
		{[]string{"CLIENT", "PAUSE", "0"}, "+OK\r\n"},
		{[]string{"PING"}, "+PONG\r\n"},
	} {
		c.do(cmd(tc.args...), tc.want)
	}
}

// TestShutdownNotHeldByPause: Shutdown and Close end clients whose
// commands a pause holds, without running them, and return at once.
func TestShutdownNotHeldByPause(t *testing.T) {
	for _, loops := range []int{0, -1} {
		for _, how := range []string{"shutdown", "close", "kill"} {
			t.Run(how+"/loops="+strconv.Itoa(loops), func(t *testing.T) {
				dir := t.TempDir()
				db, err := caskade.Open(dir, &caskade.Options{Sync: caskade.SyncNone})
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				srv := &Server{DB: db, Logger: testLogger(t), EventLoops: loops}
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- srv.Serve(l) }()
				ts := &testServer{t: t, srv: srv, db: db, addr: l.Addr().String()}
				admin, w, r := ts.dial(), ts.dial(), ts.dial()
				admin.do(cmd("CLIENT", "PAUSE", "3600000", "WRITE"), "+OK\r\n")
				w.send(cmd("CLIENT", "ID") + cmd("SET", "k", "v"))
				id := w.readLine()
				r.do(cmd("PING"), "+PONG\r\n") // r is idle, not held
				switch how {
				case "shutdown":
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if err := srv.Shutdown(ctx); err != nil {
						t.Fatalf("Shutdown: %v", err)
					}
				case "close":
					srv.Close()
				case "kill":
					admin.do(cmd("CLIENT", "KILL", "ID", id[1:len(id)-2]), ":1\r\n")
				}
				w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
				if rest, err := io.ReadAll(w.br); err != nil || len(rest) > 0 {
					t.Fatalf("held client: read %q, %v; want a closed connection", rest, err)
				}
				if how == "kill" {
					admin.do(cmd("CLIENT", "UNPAUSE"), "+OK\r\n")
					srv.Close()
				}
				if err := <-done; !errors.Is(err, ErrServerClosed) {
					t.Fatalf("Serve returned %v", err)
				}
				if _, err := db.Get([]byte("k")); !errors.Is(err, caskade.ErrNotFound) {
					t.Fatalf("the held SET ran: %v", err)
				}
			})
		}
	}
}

// TestClientPauseDeferred: pipelined blind writes before a pause, and a
// held command after it, are committed and acknowledged, and the held
// write runs after UNPAUSE.
func TestClientPauseDeferred(t *testing.T) {
	for _, sync := range []caskade.SyncPolicy{caskade.SyncNone, caskade.SyncAlways} {
		t.Run(sync.String(), func(t *testing.T) {
			ts := startServerOpts(t, &caskade.Options{Sync: sync})
			admin, w, r := ts.dial(), ts.dial(), ts.dial()
			w.send(cmd("SET", "a", "1") + cmd("SET", "b", "2") + cmd("CLIENT", "PAUSE", "600000", "WRITE") +
				cmd("DEL", "a") + cmd("GET", "a"))
			w.expect("+OK\r\n+OK\r\n+OK\r\n")
			r.do(cmd("MGET", "a", "b"), "*2\r\n$1\r\n1\r\n$1\r\n2\r\n")
			admin.do(cmd("CLIENT", "UNPAUSE"), "+OK\r\n")
			w.expect(":1\r\n$-1\r\n")
		})
	}
}

// TestClientPauseMuted: a command held while replies are off still drops
// its reply when it runs, after the replies before it went out.
func TestClientPauseMuted(t *testing.T) {
	forEachServing(t, func(t *testing.T, ts *testServer) {
		admin, w := ts.dial(), ts.dial()
		admin.do(cmd("CLIENT", "PAUSE", "600000", "WRITE"), "+OK\r\n")
		w.send(cmd("PING") + cmd("CLIENT", "REPLY", "SKIP") + cmd("SET", "x", "1") + cmd("CLIENT", "REPLY", "OFF") +
			cmd("SET", "y", "1") + cmd("CLIENT", "REPLY", "ON") + cmd("MGET", "x", "y"))
		w.expect("+PONG\r\n")
		admin.do(cmd("CLIENT", "UNPAUSE"), "+OK\r\n")
		w.expect("+OK\r\n*2\r\n$1\r\n1\r\n$1\r\n1\r\n")
		w.do(cmd("PING"), "+PONG\r\n")
	})
}

// TestClientPauseLoopedInputWhileHeld: a looped client holding a command
// that keeps sending is not run again, nor listed again in the pause, for
// every arrival: its loop leaves it alone until the pause ends. (Each
// arrival used to add it to the pause's list, without bound.)
func TestClientPauseLoopedInputWhileHeld(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.EventLoops = 1 })
	admin, w := ts.dial(), ts.dial()
	// Served once, so that the loop has taken w on: a connection the
	// server has not accepted yet would not be served by the PINGs below.
	w.do(cmd("PING"), "+PONG\r\n")
	admin.do(cmd("CLIENT", "PAUSE", "600000", "WRITE"), "+OK\r\n")
	w.send(cmd("SET", "x", "1"))
	for i := 0; i < 50; i++ {
		w.send(cmd("GET", "x"))
		// One loop serves both: the reply to admin comes after the loop
		// served w's arrival.
		admin.do(cmd("PING"), "+PONG\r\n")
	}
	ts.srv.pause.mu.Lock()
	n := len(ts.srv.pause.waiting)
	ts.srv.pause.mu.Unlock()
	if n != 1 {
		t.Errorf("the pause lists %d held clients, want 1", n)
	}
	admin.do(cmd("CLIENT", "UNPAUSE"), "+OK\r\n")
	w.expect("+OK\r\n" + strings.Repeat("$1\r\n1\r\n", 50))
}

// TestClientPausePeerGone: a client whose command a pause holds and whose
// peer closes the connection ends then, as in Redis, and its held write
// never runs: it used to stay, with its place under MaxClients, and run
// the write when the pause ended. An event loop sees the hang-up at once;
// a client on its own goroutine (EventLoops -1) looks for it while it
// waits.
func TestClientPausePeerGone(t *testing.T) {
	for _, loops := range []int{1, -1} {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			ts := startServer(t, func(s *Server) { s.EventLoops = loops })
			admin := ts.dial()
			admin.do(cmd("CLIENT", "PAUSE", "600000", "WRITE"), "+OK\r\n")
			for i := 0; i < 3; i++ {
				w := ts.dial()
				w.send(cmd("GET", "x") + cmd("SET", "k"+strconv.Itoa(i), "v") + cmd("GET", "x"))
				w.expect("$-1\r\n") // the SET is held by now
				w.nc.Close()
			}
			if loops < 0 {
				waitFor(t, "the held clients to end", func() bool { return ts.srv.nclients.Load() == 1 })
			} else {
				// One loop serves them all: its reply to admin comes
				// after the loop saw every hang-up.
				admin.send(cmd("CLIENT", "LIST"))
				n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(admin.readLine(), "$"), "\r\n"))
				if err != nil {
					t.Fatal(err)
				}
				list := make([]byte, n+2)
				if _, err := io.ReadFull(admin.br, list); err != nil {
					t.Fatal(err)
				}
				if strings.Count(string(list), "id=") != 1 {
					t.Fatalf("clients after the held ones hung up:\n%s", list)
				}
			}
			admin.do(cmd("CLIENT", "UNPAUSE"), "+OK\r\n")
			admin.do(cmd("SET", "after", "1"), "+OK\r\n")
			admin.do(cmd("EXISTS", "k0", "k1", "k2"), ":0\r\n")
		})
	}
}
