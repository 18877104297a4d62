//go:build unix

package redis

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// peerGone reports whether the peer of nc has closed the connection (or
// it failed), without reading anything from it or blocking: it peeks at
// the socket. Input waiting to be read means the peer may still be there.
// The caller must be the only reader of nc meanwhile.
func peerGone(nc net.Conn) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case n > 0:
		case n == 0 && err == nil:
			gone = true // end of file
		case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR):
		default:
			gone = true
		}
		return true // never wait
	})
	return gone || err != nil
}
