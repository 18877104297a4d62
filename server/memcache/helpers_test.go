package memcache

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/internal/wiretest"
)

// testServer is a Server on 127.0.0.1:0 over a fresh database.
type testServer struct {
	s    *Server
	db   *caskade.DB
	addr string
	udp  string // empty unless started with UDP
}

type serverOpt func(*Server)

// openDB opens a database in a new temporary directory.
func openDB(t testing.TB) *caskade.DB {
	t.Helper()
	db, err := caskade.Open(t.TempDir(), &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func startServer(t testing.TB, opts ...serverOpt) *testServer {
	t.Helper()
	return startServerDB(t, openDB(t), false, opts...)
}

func startServerUDP(t testing.TB, opts ...serverOpt) *testServer {
	t.Helper()
	return startServerDB(t, openDB(t), true, opts...)
}

func startServerDB(t testing.TB, db *caskade.DB, withUDP bool, opts ...serverOpt) *testServer {
	t.Helper()
	s := &Server{DB: db, EventLoops: wiretest.EventLoops(t)}
	for _, o := range opts {
		o(s)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{s: s, db: db, addr: l.Addr().String()}
	done := make(chan error, 2)
	go func() { done <- s.Serve(l) }()
	n := 1
	if withUDP {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ts.udp = pc.LocalAddr().String()
		n++
		go func() { done <- s.ServeUDP(pc) }()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		for range n {
			if err := <-done; !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve returned %v, want ErrServerClosed", err)
			}
		}
		if err := db.Close(); err != nil {
			t.Errorf("db.Close: %v", err)
		}
	})
	return ts
}

// rawClient speaks the text protocol over a plain TCP connection.
type rawClient struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func (ts *testServer) dial(t testing.TB) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *rawClient) send(s string) {
	c.t.Helper()
	c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c.c, s); err != nil {
		c.t.Fatalf("write %q: %v", s, err)
	}
}

// read reads exactly n bytes of reply.
func (c *rawClient) read(n int) string {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(c.r, b); err != nil {
		c.t.Fatalf("read %d bytes: %v (got %q)", n, err, b)
	}
	return string(b)
}

// line reads one reply line including its CRLF.
func (c *rawClient) line() string {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	s, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read line: %v (got %q)", err, s)
	}
	return s
}

// do sends req and checks that the reply is exactly want, then that
// nothing else follows (a trailing mn must be answered by MN next).
func (c *rawClient) do(req, want string) {
	c.t.Helper()
	c.send(req + "mn\r\n")
	got := c.read(len(want))
	if got != want {
		rest := c.drain()
		c.t.Fatalf("request %q:\n got %q\nwant %q\n(then %q)", req, got, want, rest)
	}
	if l := c.line(); l != "MN\r\n" {
		c.t.Fatalf("request %q: reply %q was followed by %q before MN", req, want, l+c.drain())
	}
}

// drain returns whatever arrives within a short time (for diagnostics).
func (c *rawClient) drain() string {
	c.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	b, _ := io.ReadAll(c.r)
	return string(b)
}

// expectClosed checks that the server closes the connection (after any
// bytes in want).
func (c *rawClient) expectClosed(want string) {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c.r)
	if err != nil {
		c.t.Fatalf("waiting for close: %v (got %q)", err, b)
	}
	if string(b) != want {
		c.t.Fatalf("before close got %q, want %q", b, want)
	}
}

func lines(ls ...string) string { return strings.Join(ls, "\r\n") + "\r\n" }

// waitFor polls cond (a real condition, not a delay) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
