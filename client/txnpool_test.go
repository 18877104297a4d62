package client_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/caskade/caskade/client"
)

// wrappedDialer dials connections of a type of its own, which the client
// cannot peek at to see whether an idle one is still open (as on systems
// without that check, or with a Dialer adding a layer of its own).
func wrappedDialer(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return struct{ net.Conn }{nc}, nil
}

// TestTransactCancelledNoOpenTxnPooled cancels a Transact's context after
// a read has opened the transaction on the server: the commit then cannot
// be sent, and the connection, still in the transaction, must not go back
// to the pool, where the next user's writes would join a transaction that
// is never committed.
func TestTransactCancelledNoOpenTxnPooled(t *testing.T) {
	ts := startCaskade(t, nil)
	c := dial(t, ts.addr, &client.Options{PoolSize: 1, MaxIdleConns: 1, Dialer: wrappedDialer})
	bg := testCtx(t)
	check(t, c.Transact(bg, func(tx *client.Txn) error { return nil })) // CSK.BEGIN works
	ctx, cancel := context.WithCancel(bg)
	err := c.Transact(ctx, func(tx *client.Txn) error {
		if _, err := tx.Get([]byte("tp:r")); !errors.Is(err, client.Nil) {
			return err
		}
		cancel()
		return nil
	})
	skipUnknown(t, err)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Transact cancelled before its commit: %v", err)
	}
	cn := must[*client.Conn](t)(c.Conn(bg))
	defer cn.Close()
	must[client.Value](t)(cn.Do(bg, "SET", "tp:k", "v"))
	eq(t, "value set on a Conn", string(must[[]byte](t)(c.Get(bg, "tp:k"))), "v")
}
