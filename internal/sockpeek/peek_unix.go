//go:build unix

package sockpeek

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// Peeker peeks at one connection's socket. Once made, a peek allocates
// nothing. It is not safe for concurrent use, and nothing else may read
// the connection during a peek.
type Peeker struct {
	raw syscall.RawConn
	fn  func(fd uintptr) bool
	st  State
}

// New returns a Peeker for nc (for a *tls.Conn, for the connection under
// it), or nil if nc is no socket.
func New(nc net.Conn) *Peeker {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	p := &Peeker{raw: raw}
	p.fn = p.peek
	return p
}

func (p *Peeker) peek(fd uintptr) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case n > 0:
		p.st = Input
	case n == 0 && err == nil:
		p.st = Closed // end of file
	case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR):
		p.st = Empty
	default:
		p.st = Closed
	}
	return true // never wait
}

// Peek reports what waits on the socket; a nil Peeker says Unknown.
func (p *Peeker) Peek() State {
	if p == nil {
		return Unknown
	}
	if err := p.raw.Read(p.fn); err != nil {
		return Closed
	}
	return p.st
}
