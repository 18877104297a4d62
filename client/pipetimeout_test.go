package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/caskade/caskade/client"
)

// TestSharedPipelineReadTimeoutPerReply: on the shared connections too, a
// pipeline's replies each get ReadTimeout (Pipe.Exec), so a pipeline whose
// replies take longer than ReadTimeout in all, each within it, is not cut
// short; with a context that cannot be cancelled (the caller reads its own
// replies) and with one that can (the reader goroutine does). The pauses
// between the replies let time pass; they synchronise nothing. Each
// reply comes rt/3 after the one before it, leaving two thirds of rt for
// the scheduling delays of a loaded machine (with rt/2 they took more
// than the rest under -race); n of them take longer than rt in all.
func TestSharedPipelineReadTimeoutPerReply(t *testing.T) {
	const rt = 600 * time.Millisecond
	const n = 4
	s := startStepServer(t)
	c := dial(t, s.addr, &client.Options{PoolSize: 1, ReadTimeout: rt, MaxRetries: -1})
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctx := range []context.Context{context.Background(), cctx} {
		name := "background"
		if ctx.Done() != nil {
			name = "cancellable"
		}
		errc := make(chan error, 1)
		go func() {
			_, err := c.Pipelined(ctx, func(p *client.Pipe) error {
				for range n {
					p.Do("ECHO", "x")
				}
				return nil
			})
			errc <- err
		}()
		for range n {
			<-s.got
		}
		for range n {
			time.Sleep(rt / 3)
			s.release <- struct{}{}
		}
		if err := <-errc; err != nil {
			t.Fatalf("%s: a pipeline longer than ReadTimeout, each reply within it: %v", name, err)
		}
	}
}
