//go:build linux

package netloop

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echo is a Handler that answers each line with the line in upper case,
// written at the end of the turn; a line "detach" hands the connection
// to a goroutine that answers in lower case; a line "big N" answers N
// bytes of a repeating pattern.
type echo struct {
	t       *testing.T
	nc      net.Conn
	c       *Conn
	in      []byte
	out     []byte
	serves  atomic.Int64
	idle    chan struct{}
	closed  chan struct{}
	endTurn atomic.Int64
	// blocking is closed when a line "block" starts to hold the loop,
	// which goes on once release is closed.
	blocking, release chan struct{}
}

func (e *echo) Serve() {
	e.serves.Add(1)
	var buf [4096]byte
	n, err := e.c.Read(buf[:])
	if errors.Is(err, ErrWouldBlock) {
		return
	}
	if err != nil {
		e.close()
		return
	}
	e.in = append(e.in, buf[:n]...)
	for {
		i := bytes.IndexByte(e.in, '\n')
		if i < 0 {
			return
		}
		line := string(e.in[:i])
		e.in = e.in[i+1:]
		switch {
		case line == "block":
			close(e.blocking)
			<-e.release
			e.out = append(e.out, "BLOCK\n"...)
		case line == "detach":
			// The new owner writes what the socket has not taken, then
			// the answers of this turn, then its own.
			rest := append(e.c.Detach(), e.out...)
			pending := append([]byte(nil), e.in...)
			go e.goroutine(rest, pending)
			return
		case strings.HasPrefix(line, "big "):
			var n int
			for _, ch := range line[4:] {
				n = n*10 + int(ch-'0')
			}
			e.out = append(e.out, pattern(n)...)
		default:
			e.out = append(e.out, strings.ToUpper(line)+"\n"...)
		}
	}
}

func (e *echo) EndTurn() {
	e.endTurn.Add(1)
	if len(e.out) > 0 {
		if err := e.c.Write(e.out); err != nil {
			e.close()
			return
		}
		e.out = e.out[:0]
	}
}

func (e *echo) Idle() {
	close(e.idle)
	e.close()
}

func (e *echo) close() {
	e.c.Detach()
	e.nc.Close()
	close(e.closed)
}

// goroutine serves the connection after "detach" with blocking reads.
func (e *echo) goroutine(rest, pending []byte) {
	if len(rest) > 0 {
		e.nc.Write(rest)
	}
	r := bufio.NewReader(io.MultiReader(bytes.NewReader(pending), e.nc))
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			e.nc.Close()
			close(e.closed)
			return
		}
		e.nc.Write([]byte(strings.ToLower(line)))
	}
}

// waitClosed fails t with msg unless the connection's handler or goroutine
// closes it within 10 seconds.
func (e *echo) waitClosed(t *testing.T, msg string) {
	t.Helper()
	select {
	case <-e.closed:
	case <-time.After(10 * time.Second):
		t.Fatal(msg)
	}
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// setup starts a loop and a listener whose connections it serves with
// echo handlers, sent on the returned channel.
func setup(t *testing.T, opts Options) (net.Listener, chan *echo) {
	t.Helper()
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	handlers := make(chan *echo, 64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			c, err := Wrap(nc)
			if err != nil {
				t.Error(err)
				return
			}
			e := &echo{t: t, nc: nc, c: c, idle: make(chan struct{}), closed: make(chan struct{}),
				blocking: make(chan struct{}), release: make(chan struct{})}
			if err := l.Attach(c, e); err != nil {
				t.Error(err)
				return
			}
			handlers <- e
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		l.Close()
	})
	return ln, handlers
}

func dial(t *testing.T, ln net.Listener) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return nc, bufio.NewReader(nc)
}

// served connects to a new loop and exchanges one line, so that the loop
// serves the connection and its handler is known.
func served(t *testing.T) (net.Conn, *bufio.Reader, *echo) {
	t.Helper()
	ln, handlers := setup(t, Options{})
	nc, r := dial(t, ln)
	nc.Write([]byte("hi\n"))
	expectLine(t, r, "HI")
	return nc, r, <-handlers
}

func expectLine(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	got, err := r.ReadString('\n')
	if err != nil || got != want+"\n" {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

// TestManyConnections checks that a loop serves many connections, each
// in order, with one write per turn.
func TestManyConnections(t *testing.T) {
	ln, _ := setup(t, Options{})
	const conns, lines = 20, 200
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, r := dial(t, ln)
			for j := range lines {
				// Pipelined in pairs: two lines, then both answers.
				if _, err := nc.Write([]byte(strings.Repeat("x", i) + "a\nb" + string(rune('a'+j%26)) + "\n")); err != nil {
					t.Error(err)
					return
				}
				for _, want := range []string{strings.Repeat("X", i) + "A", "B" + string(rune('A'+j%26))} {
					got, err := r.ReadString('\n')
					if err != nil || got != want+"\n" {
						t.Errorf("conn %d line %d: %q, %v; want %q", i, j, got, err, want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestBacklog checks that output the socket does not take is queued and
// sent in order once the client reads, and that the handler sees the
// backlog meanwhile.
func TestBacklog(t *testing.T) {
	ln, handlers := setup(t, Options{})
	nc, r := dial(t, ln)
	e := <-handlers
	const size = 32 << 20 // far more than the socket buffers hold
	if _, err := nc.Write([]byte("big 33554432\nping\n")); err != nil {
		t.Fatal(err)
	}
	// Wait until the loop has queued output: the client reads nothing.
	deadline := time.Now().Add(10 * time.Second)
	for !e.c.Backlogged() {
		if time.Now().After(deadline) {
			t.Fatal("no backlog after a 32 MiB reply that nobody reads")
		}
		time.Sleep(time.Millisecond)
	}
	got := make([]byte, size)
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, pattern(size)) {
		t.Fatal("the big reply arrived damaged or out of order")
	}
	expectLine(t, r, "PING")
	// Input is served again once the backlog has drained.
	nc.Write([]byte("again\n"))
	expectLine(t, r, "AGAIN")
	if e.c.Backlogged() {
		t.Error("still backlogged after the client read everything")
	}
}

// TestKick checks that Kick makes the loop serve a connection without
// input.
func TestKick(t *testing.T) {
	_, _, e := served(t)
	before := e.serves.Load()
	e.c.Kick()
	deadline := time.Now().Add(10 * time.Second)
	for e.serves.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("Kick did not make the loop serve the connection")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestIdle checks that a connection that sends nothing for the idle
// timeout gets Idle, and one that keeps talking does not.
func TestIdle(t *testing.T) {
	const idle = 100 * time.Millisecond
	ln, handlers := setup(t, Options{IdleTimeout: func() time.Duration { return idle }})
	quiet, _ := dial(t, ln)
	eq := <-handlers
	busy, rb := dial(t, ln)
	eb := <-handlers
	// The busy connection's claim holds only if it was never silent for
	// nearly the idle timeout: on a loaded machine this goroutine may not
	// run for that long, and the loop is then right to call it idle.
	var maxGap time.Duration
	last := time.Now()
	stop := time.After(3 * idle)
	for talking := true; talking; {
		select {
		case <-stop:
			talking = false
		case <-time.After(idle / 5):
			// The loop may call the connection idle only if it saw no
			// input for the idle timeout: from one line sent to the next.
			now := time.Now()
			maxGap, last = max(maxGap, now.Sub(last)), now
			busy.Write([]byte("x\n"))
			got, err := rb.ReadString('\n')
			if err != nil || got != "X\n" {
				if err != nil && maxGap >= idle*3/4 {
					t.Skipf("the busy connection was closed after it was silent for %v: the machine is too loaded to check it", maxGap)
				}
				t.Fatalf("read %q, %v; want %q (longest silence: %v)", got, err, "X", maxGap)
			}
		}
	}
	select {
	case <-eq.idle:
	case <-time.After(10 * time.Second):
		t.Fatal("the quiet connection got no Idle")
	}
	select {
	case <-eb.idle:
		maxGap = max(maxGap, time.Since(last)) // and since its last line
		if maxGap < idle*3/4 {
			t.Fatalf("the busy connection got Idle (its longest silence: %v)", maxGap)
		}
		t.Skipf("the busy connection got Idle after it was silent for %v: the machine is too loaded to check it", maxGap)
	default:
	}
	if _, err := quiet.Read(make([]byte, 1)); err == nil {
		t.Error("the idle connection is still open")
	}
}

// TestIdleAfterLongTurn holds the loop in one connection's turn for longer
// than the idle timeout while another connection, quiet until then, sends
// a line: once the loop goes on, that line must be served, not the
// connection closed as idle. (The expired poll deadline used to end the
// wait for events before it looked at them, and the idle check then ran
// on activity times that did not count the input waiting.)
func TestIdleAfterLongTurn(t *testing.T) {
	const idle = 100 * time.Millisecond
	ln, handlers := setup(t, Options{IdleTimeout: func() time.Duration { return idle }})
	a, ra := dial(t, ln)
	ea := <-handlers
	b, rb := dial(t, ln)
	eb := <-handlers
	a.Write([]byte("block\n"))
	<-ea.blocking
	b.Write([]byte("late\n"))
	time.Sleep(3 * idle) // the long turn: not a wait for an event
	close(ea.release)
	expectLine(t, ra, "BLOCK")
	expectLine(t, rb, "LATE")
	select {
	case <-eb.idle:
		t.Fatal("the connection that sent a line during the long turn got Idle")
	default:
	}
}

// TestDetach checks that a detached connection is served by its new
// owner only, from the first byte the loop did not consume.
func TestDetach(t *testing.T) {
	ln, handlers := setup(t, Options{})
	nc, r := dial(t, ln)
	nc.Write([]byte("one\ndetach\nTwo\n"))
	expectLine(t, r, "ONE")
	expectLine(t, r, "two")
	nc.Write([]byte("Three\n"))
	expectLine(t, r, "three")
	e := <-handlers
	if e.c.Attached() {
		t.Error("still attached after Detach")
	}
	nc.Close()
	e.waitClosed(t, "the goroutine did not see the close")
}

// TestCloseFromOutside checks that closing a connection from another
// goroutine, then kicking it, lets its handler see the close.
func TestCloseFromOutside(t *testing.T) {
	_, _, e := served(t)
	e.nc.Close()
	e.c.Kick()
	e.waitClosed(t, "the handler did not see its connection closed")
}

// TestKickedWhileDrained checks that input arriving after the loop found
// a connection's socket empty is still served, with kicks (which serve the
// connection without an input event, and so without a read system call)
// coming in between from another goroutine.
func TestKickedWhileDrained(t *testing.T) {
	nc, r, e := served(t)
	stop := make(chan struct{})
	kicked := make(chan struct{})
	go func() {
		defer close(kicked)
		for {
			select {
			case <-stop:
				return
			default:
				e.c.Kick()
			}
		}
	}()
	for i := range 300 {
		line := strings.Repeat("k", 1+i%7)
		if _, err := nc.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		expectLine(t, r, strings.ToUpper(line))
	}
	close(stop)
	<-kicked
}

// TestHalfClose checks that the handler of a connection whose peer sends
// its last line and shuts down its side reads that line and then the end
// of the input, although both may come with one event.
func TestHalfClose(t *testing.T) {
	ln, handlers := setup(t, Options{})
	for i := range 20 {
		nc, r := dial(t, ln)
		e := <-handlers
		line := strings.Repeat("h", 1+i)
		nc.Write([]byte(line + "\n"))
		if err := nc.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		expectLine(t, r, strings.ToUpper(line))
		e.waitClosed(t, "the handler did not see the end of the input")
	}
}

// Read and Write allocate nothing in the steady state: they run once per
// request on a busy server.
func TestReadWriteAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := Wrap(nc)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("ping")
	in := make([]byte, len(msg))
	out := make([]byte, len(msg))
	allocs := testing.AllocsPerRun(200, func() {
		if err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(peer, out); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Write(msg); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < len(in); {
			n, err := c.Read(in[got:])
			switch {
			case err == ErrWouldBlock:
				// Not arrived yet. Only a loop's input event clears
				// drained; there is no loop here.
				c.drained = false
			case err != nil:
				t.Fatal(err)
			}
			got += n
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Write and Read, want 0", allocs)
	}
}
