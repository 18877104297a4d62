package client_test

import (
	"errors"
	"testing"

	"github.com/caskade/caskade/client"
)

// TestWatchRerunsAfterBreakBeforeExec: as documented, Watch runs its
// function again when the connection broke before EXEC was sent, here
// during a read (a failure that says the read may have executed, which
// does not matter as EXEC surely was not), and not once EXEC may have
// been sent.
func TestWatchRerunsAfterBreakBeforeExec(t *testing.T) {
	ts := startCaskade(t, nil)
	p := startProxy(t, ts.addr)
	c := dial(t, p.addr(), &client.Options{PoolSize: 1})
	ctx := testCtx(t)
	// cut swallows the replies until the request holding marker reached
	// the server, then kills the connections; the caller gives the
	// replies back once its call failed.
	cut := func(marker string) {
		p.holdReplies(true)
		fired := p.expect(marker)
		go func() {
			<-fired
			p.killAll()
		}()
	}
	runs := 0
	err := c.Watch(ctx, func(tx *client.Tx) error {
		if runs++; runs == 1 {
			cut("wr:k")
		}
		_, err := tx.Get(ctx, "wr:k")
		p.holdReplies(false)
		if err != nil && !errors.Is(err, client.Nil) {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p *client.Pipe) error {
			p.Set("wr:k", []byte("set"), client.SetArgs{})
			return nil
		})
		return err
	}, "wr:k")
	if err != nil {
		t.Fatalf("Watch after %d runs: %v", runs, err)
	}
	eq(t, "runs", runs, 2)
	eq(t, "value", string(must[[]byte](t)(c.Get(ctx, "wr:k"))), "set")

	// Broken once EXEC may have been sent: not run again.
	runs = 0
	err = c.Watch(ctx, func(tx *client.Tx) error {
		runs++
		cut("wr-exec")
		_, err := tx.TxPipelined(ctx, func(p *client.Pipe) error {
			p.Set("wr:k2", []byte("wr-exec"), client.SetArgs{})
			return nil
		})
		p.holdReplies(false)
		return err
	}, "wr:k2")
	if !errors.Is(err, client.ErrMaybeExecuted) {
		t.Fatalf("Watch broken during EXEC: %v", err)
	}
	eq(t, "runs", runs, 1)
}
