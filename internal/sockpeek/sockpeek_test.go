package sockpeek_test

import (
	"net"
	"testing"

	"github.com/caskade/caskade/internal/sockpeek"
)

// A peek tells an idle connection, one with input and one the peer closed
// apart, reads nothing, and (once made) allocates nothing.
func TestPeek(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	peer, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	p := sockpeek.New(nc)
	if got := p.Peek(); got != sockpeek.Empty {
		t.Fatalf("idle: %v, want Empty", got)
	}
	if n := testing.AllocsPerRun(100, func() { p.Peek() }); n != 0 {
		t.Fatalf("a peek allocates %v times", n)
	}
	peer.Write([]byte("x"))
	// Loopback delivers the byte before Write returns.
	if got := p.Peek(); got != sockpeek.Input {
		t.Fatalf("with input: %v, want Input", got)
	}
	b := make([]byte, 1)
	if n, err := nc.Read(b); n != 1 || b[0] != 'x' || err != nil {
		t.Fatalf("the peeked byte was consumed: %d %q %v", n, b[:n], err)
	}
	peer.Close()
	if got := p.Peek(); got != sockpeek.Closed {
		t.Fatalf("after the peer closed: %v, want Closed", got)
	}
	if got := sockpeek.New(nil).Peek(); got != sockpeek.Unknown {
		t.Fatalf("nil connection: %v, want Unknown", got)
	}
}
