package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/caskade/caskade/client"
)

// TestWatchCancelledBeforeExecNoWatchPooled cancels a Watch's context
// before its EXEC is written, and runs a Watch whose TxPipelined has no
// command: the WATCH is still on, and the connection must not go back to
// the pool with it, where it would abort the next user's MULTI/EXEC.
func TestWatchCancelledBeforeExecNoWatchPooled(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		c := dial(t, ts.addr, &client.Options{PoolSize: 1, MaxIdleConns: 1, Dialer: wrappedDialer})
		bg := testCtx(t)
		ctx, cancel := context.WithCancel(bg)
		err := c.Watch(ctx, func(tx *client.Tx) error {
			cancel()
			_, err := tx.TxPipelined(ctx, func(p *client.Pipe) error {
				p.Set("wp:k", []byte("tx"), client.SetArgs{})
				return nil
			})
			return err
		}, "wp:w")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Watch cancelled before EXEC: %v", err)
		}
		must[[]byte](t)(c.Set(bg, "wp:w", []byte("changed"), client.SetArgs{}))
		cn := must[*client.Conn](t)(c.Conn(bg))
		defer cn.Close()
		cmds, err := cn.TxPipelined(bg, func(p *client.Pipe) error {
			p.Set("wp:k", []byte("conn"), client.SetArgs{})
			return nil
		})
		check(t, err)
		check(t, cmds[0].Err())
		check(t, cn.Close())

		// An empty TxPipelined sends no EXEC either.
		check(t, c.Watch(bg, func(tx *client.Tx) error {
			_, err := tx.TxPipelined(bg, func(p *client.Pipe) error { return nil })
			return err
		}, "wp:w"))
		must[[]byte](t)(c.Set(bg, "wp:w", []byte("changed again"), client.SetArgs{}))
		cn = must[*client.Conn](t)(c.Conn(bg))
		defer cn.Close()
		cmds, err = cn.TxPipelined(bg, func(p *client.Pipe) error {
			p.Set("wp:k", []byte("conn"), client.SetArgs{})
			return nil
		})
		check(t, err)
		check(t, cmds[0].Err())
	})
}
