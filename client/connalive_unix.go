//go:build unix

package client

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// aliveChecker tells whether an idle connection is still open: the peer
// has neither closed it nor sent anything (which an idle connection must
// not get). It peeks at the socket without blocking and, once made, without
// allocating. It is not safe for concurrent use.
type aliveChecker struct {
	raw   syscall.RawConn
	alive bool
	fn    func(fd uintptr) bool
}

func newAliveChecker(nc net.Conn) *aliveChecker {
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
	a := &aliveChecker{raw: raw}
	a.fn = a.peek
	return a
}

func (a *aliveChecker) peek(fd uintptr) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case n > 0 || n == 0 && err == nil:
		a.alive = false // data or EOF
	case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK):
	default:
		a.alive = false
	}
	return true
}

// check reports whether the connection is still open; a nil checker
// cannot tell and says yes.
func (a *aliveChecker) check() bool {
	if a == nil {
		return true
	}
	a.alive = true
	if err := a.raw.Read(a.fn); err != nil {
		return false
	}
	return a.alive
}

// connAlive is a one-off check.
func connAlive(nc net.Conn) bool { return newAliveChecker(nc).check() }
