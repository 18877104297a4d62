package memcache

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// smallBufListener gives each accepted connection a small send buffer, so
// that a large reply waits on the client instead of the kernel.
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return nc, err
}

// startSmallBufServer starts a Server with IdleTimeout idle whose
// connections have small send buffers.
func startSmallBufServer(t *testing.T, loops int, idle time.Duration) string {
	t.Helper()
	db := openDB(t)
	s := &Server{DB: db, EventLoops: loops, IdleTimeout: idle}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(smallBufListener{l}) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		<-done
		db.Close()
	})
	return l.Addr().String()
}

// TestIdleTimeoutSlowReader reads a large reply slowly but steadily: the
// client is never idle for the timeout, so the whole reply must arrive,
// intact, however long it takes in all (memcached times out only
// connections waiting for a command). On a goroutine each write was
// bounded by the timeout: a reply longer to read was cut, and the replies
// after it went on with the cut part missing.
func TestIdleTimeoutSlowReader(t *testing.T) {
	for _, mode := range []struct {
		name  string
		loops int
	}{{"goroutine", -1}, {"default", 0}} {
		t.Run(mode.name, func(t *testing.T) {
			const idle = 300 * time.Millisecond
			// The request is built before dialling: building it can take
			// longer than idle under the race detector on a loaded
			// machine, and a connection that has sent nothing for idle is
			// rightly closed.
			value := strings.Repeat("v", DefaultMaxItemSize)
			const copies = 2
			req := fmt.Sprintf("set k 0 0 %d\r\n%s\r\nget%s\r\n", len(value), value, strings.Repeat(" k", copies))
			var want strings.Builder
			want.WriteString("STORED\r\n")
			for range copies {
				fmt.Fprintf(&want, "VALUE k 0 %d\r\n%s\r\n", len(value), value)
			}
			want.WriteString("END\r\n")
			addr := startSmallBufServer(t, mode.loops, idle)
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.(*net.TCPConn).SetReadBuffer(256 << 10)
			nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(nc, req); err != nil {
				t.Fatal(err)
			}
			// About 1.6 MB/s: each 1 MiB write takes longer than idle,
			// while the client takes some every 10 ms.
			r := bufio.NewReaderSize(nc, 16<<10)
			got := make([]byte, 0, want.Len())
			buf := make([]byte, 16<<10)
			for len(got) < want.Len() {
				// A bound on each read, not on the whole reply, whose
				// time is mostly the pauses below.
				nc.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, err := r.Read(buf[:min(len(buf), want.Len()-len(got))])
				got = append(got, buf[:n]...)
				if err != nil {
					t.Fatalf("after %d of %d bytes: %v", len(got), want.Len(), err)
				}
				time.Sleep(10 * time.Millisecond) // a slow reader, not a wait for an event
			}
			if string(got) != want.String() {
				t.Fatalf("reply of %d bytes differs from the %d expected", len(got), want.Len())
			}
		})
	}
}

// TestIdleTimeoutMidDataBlock stalls in the middle of a set's data block
// for longer than the idle timeout: memcached times out only connections
// waiting for a command, so the set must complete.
func TestIdleTimeoutMidDataBlock(t *testing.T) {
	for _, mode := range []struct {
		name  string
		loops int
	}{{"goroutine", -1}, {"default", 0}} {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, func(s *Server) {
				s.EventLoops = mode.loops
				s.IdleTimeout = 100 * time.Millisecond
			})
			c := ts.dial(t)
			c.send("set k 0 0 10\r\nabcde")
			// Two connections opened after the stall began, one after the
			// other, are closed as idle: the stall has lasted longer than
			// the timeout (with room for the loops' coarse idle checks).
			for range 2 {
				idle := ts.dial(t)
				idle.do("version\r\n", "VERSION "+MemcachedVersion+"\r\n")
				idle.expectClosed("")
			}
			c.send("fghij\r\n")
			if l := c.line(); l != "STORED\r\n" {
				t.Fatalf("set after a stall in its data block: %q", l)
			}
			c.do("get k\r\n", "VALUE k 0 10\r\nabcdefghij\r\nEND\r\n")
		})
	}
}
