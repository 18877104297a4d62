package client_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/client"
	"github.com/caskade/caskade/server/redis"
)

// testServer is a server the tests talk to: caskade's, in-process over a
// database in t.TempDir(), or a redis-server process.
type testServer struct {
	t       *testing.T
	name    string
	addr    string
	caskade bool

	// caskade only
	mu   sync.Mutex
	db   *caskade.DB
	srv  *redis.Server
	done chan error
}

type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startCaskade starts caskade's server on 127.0.0.1:0 (or the listener l
// if not nil).
func startCaskade(t testing.TB, configure func(*redis.Server)) *testServer {
	t.Helper()
	return startCaskadeOn(t, nil, configure)
}

func startCaskadeOn(t testing.TB, l net.Listener, configure func(*redis.Server)) *testServer {
	t.Helper()
	dir := t.TempDir()
	db, err := caskade.Open(filepath.Join(dir, "db"), &caskade.Options{Sync: caskade.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	if l == nil {
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	ts := &testServer{name: "caskade", db: db, addr: l.Addr().String(), caskade: true}
	if tt, ok := t.(*testing.T); ok {
		ts.t = tt
	}
	if l.Addr().Network() == "unix" {
		ts.addr = "unix://" + l.Addr().String()
	}
	ts.serve(l, configure)
	t.Cleanup(func() {
		ts.mu.Lock()
		srv, done := ts.srv, ts.done
		ts.mu.Unlock()
		srv.Close()
		if err := <-done; !errors.Is(err, redis.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
		db.Close()
	})
	return ts
}

func (ts *testServer) serve(l net.Listener, configure func(*redis.Server)) {
	srv := &redis.Server{DB: ts.db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if configure != nil {
		configure(srv)
	}
	done := make(chan error, 1)
	ts.mu.Lock()
	ts.srv, ts.done = srv, done
	ts.mu.Unlock()
	go func() { done <- srv.Serve(l) }()
}

// restart shuts the caskade server down (listener and connections) and
// starts a new one on the same address over the same database.
func (ts *testServer) restart(t *testing.T) {
	t.Helper()
	ts.mu.Lock()
	srv, done := ts.srv, ts.done
	ts.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-done; !errors.Is(err, redis.ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	l, err := net.Listen("tcp", ts.addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", ts.addr, err)
	}
	done2 := make(chan error, 1)
	ts.mu.Lock()
	ts.done = done2
	ts.mu.Unlock()
	ts.serve(l, nil)
}

// startRedis starts redis-server on a free loopback port, or skips the
// test if redis-server is not installed.
func startRedis(t testing.TB) *testServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not on PATH")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--enable-debug-command", "local")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan struct{})
	var log bytes.Buffer
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if log.Len() < 1<<16 {
				log.WriteString(line + "\n")
			}
			if strings.Contains(line, "Ready to accept connections") {
				close(ready)
				io.Copy(io.Discard, out)
				return
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("redis-server did not start")
	}
	return &testServer{name: "redis", addr: "127.0.0.1:" + strconv.Itoa(port)}
}

// forEachServer runs f against caskade's server and against redis-server
// (skipped when not installed).
func forEachServer(t *testing.T, f func(t *testing.T, ts *testServer)) {
	t.Run("caskade", func(t *testing.T) { f(t, startCaskade(t, nil)) })
	t.Run("redis", func(t *testing.T) { f(t, startRedis(t)) })
}

// dial connects a client and closes it at cleanup.
func dial(t testing.TB, addr string, opts *client.Options) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr, opts)
	if err != nil {
		t.Fatalf("Dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testCtx is a context bounded well within the test timeout.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// skipUnknown skips the test if err says the server lacks the command
// (caskade commands being added, or redis-server).
func skipUnknown(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, client.ErrUnknownCommand) {
		t.Skipf("server lacks the command: %v", err)
	}
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// proxy forwards TCP connections to a server and lets a test cut them at
// chosen moments, or stop the replies.
type proxy struct {
	t      *testing.T
	l      net.Listener
	target string
	dials  atomic.Int64

	chaos *chaos // if set, replies are chopped and connections cut at random

	mu      sync.Mutex
	conns   []net.Conn
	n       uint64 // connections accepted
	trigger string
	fired   chan struct{}
	hold    bool // swallow replies
}

// chaos is how a chaos proxy (startChaosProxy) mangles replies: each
// connection draws from its own random source, seeded from seed and the
// connection's number.
type chaos struct {
	seed  uint64
	killP float64 // chance per reply piece to cut the connection
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	return newProxy(t, target, nil)
}

func newProxy(t *testing.T, target string, ch *chaos) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, l: l, target: target, chaos: ch}
	go p.accept()
	t.Cleanup(func() {
		l.Close()
		p.killAll()
	})
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) accept() {
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		p.dials.Add(1)
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.n++
		var rng *rand.Rand
		if p.chaos != nil {
			rng = rand.New(rand.NewPCG(p.chaos.seed, p.n))
		}
		p.mu.Unlock()
		go p.pump(in, out, true, nil)
		go p.pump(out, in, false, rng)
	}
}

// pump forwards from one side to the other; rng, for replies through a
// chaos proxy, chops them (see chaos).
func (p *proxy) pump(from, to net.Conn, request bool, rng *rand.Rand) {
	defer from.Close()
	defer to.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			p.mu.Lock()
			hold := p.hold && !request
			p.mu.Unlock()
			switch {
			case hold:
			case rng != nil:
				if !p.chop(to, buf[:n], rng) {
					return
				}
			default:
				if _, err := to.Write(buf[:n]); err != nil {
					return
				}
			}
			if request {
				p.mu.Lock()
				if p.trigger != "" && bytes.Contains(buf[:n], []byte(p.trigger)) {
					close(p.fired)
					p.trigger = ""
				}
				p.mu.Unlock()
			}
		}
		if err != nil {
			return
		}
	}
}

// chop writes b to c in random pieces of 1 to 16 bytes, pausing now and
// then, and reports false if it cut the connection (or the write failed).
func (p *proxy) chop(c net.Conn, b []byte, rng *rand.Rand) bool {
	for len(b) > 0 {
		k := min(len(b), 1+rng.IntN(16))
		if rng.Float64() < p.chaos.killP {
			return false
		}
		if _, err := c.Write(b[:k]); err != nil {
			return false
		}
		b = b[k:]
		if rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
		}
	}
	return true
}

// expect returns a channel closed once a request chunk containing s has
// been forwarded to the server.
func (p *proxy) expect(s string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trigger = s
	p.fired = make(chan struct{})
	return p.fired
}

// holdReplies makes the proxy swallow (or again forward) server replies.
func (p *proxy) holdReplies(on bool) {
	p.mu.Lock()
	p.hold = on
	p.mu.Unlock()
}

// killAll closes every proxied connection.
func (p *proxy) killAll() { p.kill(false) }

// kill closes every proxied connection and, if release, stops swallowing
// replies, in one step: a reply read before it is swallowed, one read
// after it finds its connection closed, so none from the killed
// connections gets through, and none on a new connection is swallowed.
func (p *proxy) kill(release bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if release {
		p.hold = false
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func tempSocket(t *testing.T) string {
	dir, err := os.MkdirTemp("", "csk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s.sock")
}
