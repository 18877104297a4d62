package client

import (
	"net"

	"github.com/caskade/caskade/internal/sockpeek"
)

// aliveChecker tells whether an idle connection is still open: the peer
// has neither closed it nor sent anything (which an idle connection must
// not get). It peeks at the socket without blocking and, once made, without
// allocating; where it cannot peek, a dead idle connection is found by its
// first use. It is not safe for concurrent use.
type aliveChecker struct{ p *sockpeek.Peeker }

func newAliveChecker(nc net.Conn) *aliveChecker {
	p := sockpeek.New(nc)
	if p == nil {
		return nil
	}
	return &aliveChecker{p}
}

// check reports whether the connection is still open; a nil checker
// cannot tell and says yes.
func (a *aliveChecker) check() bool {
	if a == nil {
		return true
	}
	return a.p.Peek() == sockpeek.Empty
}

// connAlive is a one-off check.
func connAlive(nc net.Conn) bool { return newAliveChecker(nc).check() }
