// Package wiretest holds what the tests of the front ends share: a client
// that drives a server the way an unruly client does (a script of
// requests in random fragments, replies compared byte for byte,
// optionally a half-close), the tests' choice of event loops (Redis and
// memcached), and a log buffer to read a server's log from.
package wiretest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Exchange dials addr, writes script in fragments of random sizes (drawn
// from r; mostly up to 300 bytes, now and then up to 40000) while reading
// the replies, and fails t unless they are exactly want. With halfClose it
// then shuts down its side, and the server must close the connection with
// nothing more sent. It calls only t.Errorf, so it may run on any
// goroutine; label names the client in messages.
func Exchange(t testing.TB, addr string, r *rand.Rand, script []byte, want string, halfClose bool, label string) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Errorf("%s: %v", label, err)
		return
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(want))
		n, err := io.ReadFull(nc, b)
		if halfClose && err == nil {
			var rest []byte
			if rest, err = io.ReadAll(nc); err != nil {
				t.Errorf("%s: waiting for the close after the replies: %v", label, err)
			}
			b = append(b[:n], rest...)
			n = len(b)
		}
		got <- b[:n]
	}()
	for len(script) > 0 {
		n := min(len(script), 1+r.IntN(300))
		if r.IntN(20) == 0 {
			n = min(len(script), 1+r.IntN(40000))
		}
		if _, err := nc.Write(script[:n]); err != nil {
			t.Errorf("%s: write: %v", label, err)
			break
		}
		script = script[n:]
	}
	if halfClose {
		if err := nc.(*net.TCPConn).CloseWrite(); err != nil {
			t.Errorf("%s: %v", label, err)
		}
	}
	if b := <-got; string(b) != want {
		i := 0
		for i < len(b) && i < len(want) && b[i] == want[i] {
			i++
		}
		t.Errorf("%s (half-close %v): %d bytes of replies, want %d; first difference at byte %d: got %q, want %q",
			label, halfClose, len(b), len(want), i, b[i:min(len(b), i+40)], want[i:min(len(want), i+40)])
	}
}

// Clients runs Exchange for n clients at once, client g with the script
// and replies that script(r, g) returns, drawn from a generator seeded by
// the clock (the seed is logged) and g; the even-numbered clients
// half-close.
func Clients(t *testing.T, addr string, n int, script func(r *rand.Rand, g int) ([]byte, string)) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			s, want := script(r, g)
			Exchange(t, addr, r, s, want, g%2 == 0, fmt.Sprintf("client %d", g))
		})
	}
	wg.Wait()
}

// EventLoops returns the Server.EventLoops that the front ends' tests use:
// 0 (the default), unless the environment variable
// CASKADE_TEST_EVENT_LOOPS says otherwise (CI runs those packages once more
// with -1, a goroutine per connection).
func EventLoops(t testing.TB) int {
	v := os.Getenv("CASKADE_TEST_EVENT_LOOPS")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("CASKADE_TEST_EVENT_LOOPS=%q: %v", v, err)
	}
	return n
}

// SkipWithoutLoops skips a test of the event loops where there are none:
// off Linux, or when CASKADE_TEST_EVENT_LOOPS asks for goroutines.
func SkipWithoutLoops(t *testing.T) {
	if runtime.GOOS != "linux" || EventLoops(t) < 0 {
		t.Skip("no event loops here")
	}
}

// ShutdownAtDeadline checks what a graceful shutdown does while a
// connection that reads none of its replies is attached: it waits for it
// until its context's deadline (100 ms here), then returns that error,
// having closed the connection, rather than wait on.
func ShutdownAtDeadline(t testing.TB, shutdown func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- shutdown(ctx) }()
	select {
	case err := <-ended:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown: %v, want the deadline exceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown still waits for a connection that does not read, 10 s past its deadline")
	}
}
