package client_test

import (
	"errors"
	"testing"

	"github.com/caskade/caskade/client"
)

// TestWatchLeavesNoMultiOpen returns an error from a Watch function that
// opened MULTI with Tx.Do and queued a write: the connection must not go
// back to the pool inside MULTI, where the next user's commands would be
// queued (and the abandoned write run by a later EXEC).
func TestWatchLeavesNoMultiOpen(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		c := dial(t, ts.addr, &client.Options{PoolSize: 1})
		ctx := testCtx(t)
		errStop := errors.New("stop")
		err := c.Watch(ctx, func(tx *client.Tx) error {
			if _, err := tx.Do(ctx, "MULTI"); err != nil {
				return err
			}
			if _, err := tx.Do(ctx, "SET", "wl:k", "abandoned"); err != nil {
				return err
			}
			return errStop
		}, "wl:k")
		if !errors.Is(err, errStop) {
			t.Fatalf("Watch: %v", err)
		}
		cn := must[*client.Conn](t)(c.Conn(ctx))
		defer cn.Close()
		v, err := cn.Do(ctx, "ECHO", "fresh")
		if s, _ := v.Str(); err != nil || s != "fresh" {
			t.Fatalf("ECHO on the next dedicated connection: %v %v", v, err)
		}
		if _, err := cn.Do(ctx, "EXEC"); err == nil {
			t.Fatal("EXEC on the next dedicated connection ran a transaction")
		}
		if v, err := c.Get(ctx, "wl:k"); !errors.Is(err, client.Nil) {
			t.Fatalf("abandoned write applied: %q %v", v, err)
		}
	})
}
