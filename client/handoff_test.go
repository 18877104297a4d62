package client_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade/client"
)

// lateDeadlineConn holds back a deadline in the past (the dial context's
// interruption) until the connection's deadline is cleared or it is
// closed, so that the interruption lands after the handshake finished: the
// widest form of the race between a dial context ending and the handshake
// succeeding.
type lateDeadlineConn struct {
	net.Conn
	onWrite func()
	release chan struct{}
	once    sync.Once
	applied chan struct{} // closed once the held deadline was set
}

func (c *lateDeadlineConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if c.onWrite != nil {
		c.onWrite()
	}
	return n, err
}

func (c *lateDeadlineConn) SetDeadline(t time.Time) error {
	if !t.IsZero() && time.Until(t) < 0 {
		<-c.release
		err := c.Conn.SetDeadline(t)
		close(c.applied)
		return err
	}
	err := c.Conn.SetDeadline(t)
	if t.IsZero() {
		c.once.Do(func() { close(c.release) })
	}
	return err
}

func (c *lateDeadlineConn) Close() error {
	c.once.Do(func() { close(c.release) })
	return c.Conn.Close()
}

// TestDialContextEndsAsHandshakeSucceeds checks that a connection whose
// dial context ends just as its handshake succeeds is either given up or
// handed out with no deadline left on it, never with the past deadline
// that interrupts the handshake (its first command would then fail).
func TestDialContextEndsAsHandshakeSucceeds(t *testing.T) {
	ts := startCaskade(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var dials atomic.Int64
	var first *lateDeadlineConn
	c, err := client.Dial(ctx, ts.addr, &client.Options{PoolSize: 1, ReadTimeout: -1, WriteTimeout: -1,
		Dialer: func(dctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := (&net.Dialer{}).DialContext(dctx, network, addr)
			if err != nil {
				return nil, err
			}
			lc := &lateDeadlineConn{Conn: nc, release: make(chan struct{}), applied: make(chan struct{})}
			if dials.Add(1) == 1 {
				// The dial context ends once HELLO is sent.
				lc.onWrite = cancel
				first = lc
			}
			return lc, nil
		}})
	<-first.applied
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Dial: %v, want a success or context.Canceled", err)
		}
		return
	}
	defer c.Close()
	bg := testCtx(t)
	must[[]byte](t)(c.Set(bg, "hs", []byte("v"), client.SetArgs{}))
	// The connection handed out works: the command needed no new one.
	eq(t, "dials", dials.Load(), int64(1))
}
