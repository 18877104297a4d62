package client_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/caskade/caskade/client"
	"github.com/caskade/caskade/resp"
)

// gatedServer is a minimal RESP2 server whose replies can be held back:
// ECHO answers its argument, HELLO is unknown, any other command +OK.
// While gated is set, the replies of the commands received are written
// only once gate is closed, or, for a step server (startStepServer), one
// per token sent on release. The first argument of every command but
// HELLO is reported on got.
type gatedServer struct {
	addr    string
	got     chan string
	gated   atomic.Bool
	gate    chan struct{}
	release chan struct{} // a step server's: one token lets one held reply out, in order
}

type gatedReply struct {
	b     []byte
	gated bool
}

func startGatedServer(t *testing.T) *gatedServer {
	t.Helper()
	return startHeldServer(t, nil)
}

// startStepServer starts a gatedServer that holds every reply but HELLO's
// until the test sends a token on release.
func startStepServer(t *testing.T) *gatedServer {
	t.Helper()
	s := startHeldServer(t, make(chan struct{}, 100))
	s.gated.Store(true)
	return s
}

func startHeldServer(t *testing.T, release chan struct{}) *gatedServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &gatedServer{addr: l.Addr().String(), got: make(chan string, 100), gate: make(chan struct{}), release: release}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(done)
		l.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			replies := make(chan gatedReply, 100)
			wg.Go(func() {
				defer nc.Close()
				for r := range replies {
					if r.gated {
						hold := s.gate
						if s.release != nil {
							hold = s.release
						}
						select {
						case <-hold:
						case <-done:
							return
						}
					}
					if _, err := nc.Write(r.b); err != nil {
						return
					}
				}
			})
			wg.Go(func() {
				defer close(replies)
				go func() { <-done; nc.Close() }()
				s.serve(nc, replies, done)
			})
		}
	})
	return s
}

func (s *gatedServer) serve(nc net.Conn, replies chan<- gatedReply, done chan struct{}) {
	rd := resp.NewReader(nc, nil)
	var args [][]byte
	var err error
	for {
		if args, err = rd.ReadCommand(args); err != nil {
			return
		}
		name := string(args[0])
		if name == "HELLO" {
			replies <- gatedReply{b: resp.AppendError(nil, "ERR unknown command 'HELLO'")}
			continue
		}
		r := gatedReply{b: resp.AppendSimpleString(nil, "OK"), gated: s.gated.Load()}
		if name == "ECHO" {
			r.b = resp.AppendBulk(nil, args[1])
		}
		replies <- r
		arg := name
		if len(args) > 1 {
			arg = string(args[1])
		}
		select {
		case s.got <- arg:
		case <-done:
			return
		}
	}
}

// TestConnOwedRepliesAfterCancelledSkip cancels a Conn.Do while the
// reply of an earlier cancelled Do is still being waited for (to be
// discarded): the second Do's reply must then be discarded too, never
// handed to the next command as its own.
func TestConnOwedRepliesAfterCancelledSkip(t *testing.T) {
	s := startGatedServer(t)
	c := dial(t, s.addr, &client.Options{PoolSize: 1, ReadTimeout: -1})
	cn, err := c.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	s.gated.Store(true)
	cancelledDo := func(arg string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := cn.Do(ctx, "ECHO", arg)
			errc <- err
		}()
		if got := <-s.got; got != arg {
			t.Fatalf("server got %q, want %q", got, arg)
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Do(ECHO %s): %v", arg, err)
		}
	}
	cancelledDo("a")
	cancelledDo("b")
	s.gated.Store(false)
	close(s.gate)
	// Nothing is owed to Receive: the replies of both calls are dropped.
	if v, err := cn.Receive(context.Background()); !errors.Is(err, client.ErrNoReply) {
		t.Fatalf("Receive after two cancelled calls: %v %v, want ErrNoReply", v, err)
	}
	v, err := cn.Do(context.Background(), "ECHO", "c")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := v.Str(); got != "c" {
		t.Fatalf("ECHO c after two cancelled calls got %q", got)
	}
}
