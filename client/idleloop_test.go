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
	"github.com/caskade/caskade/resp"
)

// TestConnectionsClosedAfterHandshake: a server that ends every
// connection as soon as its handshake is done must make a call fail after
// MaxRetries new connections, not re-dial for ever.
func TestConnectionsClosedAfterHandshake(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			wg.Go(func() {
				defer nc.Close()
				rd := resp.NewReader(nc, nil)
				args, err := rd.ReadCommand(nil)
				if err != nil || string(args[0]) != "AUTH" {
					return
				}
				// The handshake's reply, then what an idle connection
				// must not get: the client finds it unusable.
				b := resp.AppendSimpleString(nil, "OK")
				nc.Write(resp.AppendError(b, "ERR closing"))
			})
		}
	})
	c := dial(t, l.Addr().String(), &client.Options{PoolSize: 1, MaxRetries: 3, Protocol: 2, Password: "p"})
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), "k")
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case err := <-done:
		var ce *client.ConnError
		if !errors.As(err, &ce) || ce.MaybeExecuted {
			t.Fatalf("Get: %v, want a *ConnError, not executed", err)
		}
	case <-ctx.Done():
		t.Fatalf("Get still re-dialing after %d connections", accepted.Load())
	}
	if n := accepted.Load(); n > 1+4 {
		t.Fatalf("%d connections for one call with MaxRetries 3", n)
	}
}
