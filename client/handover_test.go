package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/caskade/caskade/client"
)

// TestReadTimeoutAfterSyncHandover: a call that reads its own reply
// (sequential use, a context that cannot be cancelled) hands the reading
// over to the reader goroutine when another call was sent meanwhile; that
// call's reply must get a whole ReadTimeout from when it was sent, not
// what was left of the first call's. The pauses let time pass; they
// synchronise nothing.
func TestReadTimeoutAfterSyncHandover(t *testing.T) {
	const rt = time.Second
	s := startStepServer(t)
	c := dial(t, s.addr, &client.Options{PoolSize: 1, ReadTimeout: rt, MaxRetries: -1})
	bg := context.Background()
	type res struct {
		v   client.Value
		err error
	}
	first, second := make(chan res, 1), make(chan res, 1)
	start := time.Now()
	go func() {
		v, err := c.Do(bg, "ECHO", "a")
		first <- res{v, err}
	}()
	eq(t, "first command", <-s.got, "a")
	time.Sleep(rt * 6 / 10)
	sent := time.Now()
	go func() {
		v, err := c.Do(bg, "ECHO", "b")
		second <- res{v, err}
	}()
	eq(t, "second command", <-s.got, "b")
	s.release <- struct{}{}
	r := <-first
	check(t, r.err)
	eq(t, "first reply", must[string](t)(r.v.Str()), "a")
	// Past the first call's timeout, well within the second's.
	time.Sleep(time.Until(start.Add(rt * 13 / 10)))
	if time.Since(sent) > rt*9/10 {
		t.Skipf("too slow a machine: %v since the second command was sent", time.Since(sent))
	}
	s.release <- struct{}{}
	r = <-second
	check(t, r.err)
	eq(t, "second reply", must[string](t)(r.v.Str()), "b")
}

// TestReceiveOwed checks that a failed Conn.Receive says whether the reply
// is still owed (errors.Is(err, ErrReplyOwed)): so after a timeout, a
// cancellation, or a Flush cut short by its context, and the next Receive
// returns the reply; not after a break, which loses every owed reply.
func TestReceiveOwed(t *testing.T) {
	s := startStepServer(t)
	c := dial(t, s.addr, &client.Options{PoolSize: 1, ReadTimeout: 100 * time.Millisecond})
	bg := testCtx(t)
	cn := must[*client.Conn](t)(c.Conn(bg))
	defer cn.Close()

	// A cancelled context before anything is written: the commands stay
	// queued.
	check(t, cn.Append("ECHO", "a"))
	done, cancel := context.WithCancel(bg)
	cancel()
	_, err := cn.Receive(done)
	if !errors.Is(err, client.ErrReplyOwed) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Receive with a done context: %v, want the reply owed", err)
	}
	// ReadTimeout, then a context deadline, before the reply comes.
	_, err = cn.Receive(context.Background())
	var ce *client.ConnError
	if !errors.Is(err, client.ErrReplyOwed) || !errors.As(err, &ce) || !ce.Timeout() || !ce.Owed {
		t.Fatalf("Receive past ReadTimeout: %v, want the reply owed", err)
	}
	eq(t, "command sent", <-s.got, "a")
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	_, err = cn.Receive(ctx)
	cancel()
	if !errors.Is(err, client.ErrReplyOwed) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive past its deadline: %v, want the reply owed", err)
	}
	s.release <- struct{}{}
	eq(t, "owed reply", must[string](t)(must[client.Value](t)(cn.Receive(bg)).Str()), "a")
	if _, err := cn.Receive(bg); !errors.Is(err, client.ErrNoReply) {
		t.Fatalf("Receive with nothing owed: %v", err)
	}

	// A break loses the reply, and the one after it.
	ts := startCaskade(t, nil)
	p := startProxy(t, ts.addr)
	c2 := dial(t, p.addr(), &client.Options{PoolSize: 1})
	cn2 := must[*client.Conn](t)(c2.Conn(bg))
	defer cn2.Close()
	cutDuring(p, "ro-cut")
	check(t, cn2.Append("ECHO", "ro-cut"))
	check(t, cn2.Append("ECHO", "2"))
	for i := 0; i < 2; i++ {
		_, err := cn2.Receive(bg)
		if !errors.As(err, &ce) || errors.Is(err, client.ErrReplyOwed) || ce.Owed {
			t.Fatalf("Receive %d after a break: %v, want a *ConnError, reply not owed", i, err)
		}
	}
	if _, err := cn2.Receive(bg); !errors.Is(err, client.ErrNoReply) {
		t.Fatalf("Receive after a break's replies: %v", err)
	}
}
