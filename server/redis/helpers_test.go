package redis

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/internal/wiretest"
)

// testServer is a server on 127.0.0.1:0 over a database in t.TempDir().
type testServer struct {
	t    *testing.T
	srv  *Server
	db   *caskade.DB
	dir  string
	addr string
	done chan error
}

type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// startServer starts a server over a SyncNone database; configure may
// set Server fields.
func startServer(t *testing.T, configure func(*Server)) *testServer {
	t.Helper()
	return startServerOpts(t, &caskade.Options{Sync: caskade.SyncNone}, configure)
}

// startServerOpts is startServer over a database opened with opts, which
// it closes when the test ends.
func startServerOpts(t *testing.T, opts *caskade.Options, configure ...func(*Server)) *testServer {
	t.Helper()
	dir := t.TempDir()
	db, err := caskade.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // after the server's, registered next
	ts := startServerOn(t, db, configure...)
	ts.dir = dir
	return ts
}

// startServerOn starts a server over db (which the test closes);
// configure, if given, may set Server fields.
func startServerOn(t *testing.T, db *caskade.DB, configure ...func(*Server)) *testServer {
	t.Helper()
	ts := &testServer{t: t, db: db, done: make(chan error, 1)}
	ts.srv = &Server{DB: db, Logger: testLogger(t), EventLoops: wiretest.EventLoops(t)}
	for _, f := range configure {
		if f != nil {
			f(ts.srv)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = l.Addr().String()
	go func() { ts.done <- ts.srv.Serve(l) }()
	t.Cleanup(func() {
		ts.srv.Close()
		if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return ts
}

// rawConn is a client speaking raw bytes.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func (ts *testServer) dial() *rawConn {
	ts.t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(func() { nc.Close() })
	return &rawConn{t: ts.t, nc: nc, br: bufio.NewReader(nc)}
}

// hello3 switches the connection to RESP3 and reads HELLO's reply.
func (c *rawConn) hello3() {
	c.t.Helper()
	c.send(cmd("HELLO", "3"))
	if _, err := readRawReply(c.br, nil); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// expect reads exactly len(want) bytes and compares them.
func (c *rawConn) expect(want string) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c.br, got); err != nil {
		c.t.Fatalf("reading %q: %v (got %q)", want, err, got)
	}
	if string(got) != want {
		c.t.Fatalf("got %q, want %q", got, want)
	}
}

// do sends a command (inline or RESP) and expects an exact reply.
func (c *rawConn) do(cmd, want string) {
	c.t.Helper()
	c.send(cmd)
	c.expect(want)
}

// cmd encodes args as a RESP command.
func cmd(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + itoa(int64(len(args))) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + itoa(int64(len(a))) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// expectClosed asserts the server closes the connection (after any data).
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(c.br)
	if errors.Is(err, syscall.ECONNRESET) {
		err = nil // closed with our unread data pending
	}
	if err != nil {
		c.t.Fatalf("connection not closed: %v (read %q)", err, rest)
	}
	if len(rest) != 0 {
		c.t.Fatalf("unexpected data before close: %q", rest)
	}
}

func (c *rawConn) readLine() string {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := c.br.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read line: %v", err)
	}
	return line
}

// waitFor polls cond (a real condition, not a delay) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

func readDirNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, err
}

// checkBackup opens a backup read-only and checks one key.
func checkBackup(t *testing.T, dir, key, want string) {
	t.Helper()
	db, err := caskade.Open(dir, &caskade.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v, err := db.Get([]byte(key))
	if err != nil || string(v) != want {
		t.Fatalf("backup %s: %s = %q, %v; want %q", dir, key, v, err, want)
	}
}
