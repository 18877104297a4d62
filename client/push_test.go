package client_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade/client"
	"github.com/caskade/caskade/resp"
)

// invalidated returns the keys of an invalidation push message
// (["invalidate", [keys...]]), or fails the test if v is not one.
func invalidated(t *testing.T, v client.Value) []string {
	t.Helper()
	if v.Kind() != resp.KindPush {
		t.Fatalf("push data of kind %v: %v", v.Kind(), v)
	}
	parts, err := v.Array()
	if err != nil || len(parts) != 2 {
		t.Fatalf("push message %v: want [invalidate, keys]", v)
	}
	if s, _ := parts[0].Str(); s != "invalidate" {
		t.Fatalf("push message %v: want invalidate", v)
	}
	ks, err := parts[1].Array()
	if err != nil {
		t.Fatalf("invalidated keys %v: %v", parts[1], err)
	}
	var keys []string
	for _, k := range ks {
		s, err := k.Str()
		check(t, err)
		keys = append(keys, s)
	}
	return keys
}

// A tracking Conn gets the invalidations of keys it read and another
// client changed: through ReceivePush while it owes no reply, and through
// its push handler while it reads replies.
func TestConnPushData(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		ctx := testCtx(t)
		c := dial(t, ts.addr, nil)
		other := dial(t, ts.addr, nil)
		cn := must[*client.Conn](t)(c.Conn(ctx))
		defer cn.Close()
		var mu sync.Mutex
		var handled []string
		cn.SetPushHandler(func(v client.Value) {
			keys := invalidated(t, v)
			mu.Lock()
			handled = append(handled, keys...)
			mu.Unlock()
		})
		must[client.Value](t)(cn.Do(ctx, "CLIENT", "TRACKING", "ON"))

		// Nothing to receive: the wait ends with its context, and the
		// connection goes on.
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, err := cn.ReceivePush(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ReceivePush with nothing sent: %v, want %v", err, context.DeadlineExceeded)
		}

		// While idle: ReceivePush.
		must[client.Value](t)(cn.Do(ctx, "GET", "push:a"))
		must[client.Value](t)(other.Do(ctx, "SET", "push:a", "1"))
		v, err := cn.ReceivePush(ctx)
		check(t, err)
		if keys := invalidated(t, v); !slices.Equal(keys, []string{"push:a"}) {
			t.Fatalf("ReceivePush: invalidated %q, want [push:a]", keys)
		}
		mu.Lock()
		if len(handled) != 0 {
			t.Fatalf("the handler also got %q", handled)
		}
		mu.Unlock()

		// While reading replies: the handler, before the reply that
		// follows the push message returns.
		must[client.Value](t)(cn.Do(ctx, "GET", "push:b"))
		must[client.Value](t)(other.Do(ctx, "SET", "push:b", "1"))
		for {
			must[client.Value](t)(cn.Do(ctx, "PING"))
			mu.Lock()
			got := slices.Clone(handled)
			mu.Unlock()
			if len(got) > 0 {
				if !slices.Equal(got, []string{"push:b"}) {
					t.Fatalf("handler: invalidated %q, want [push:b]", got)
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatal("the invalidation of push:b never reached the handler")
			}
		}

		// Replies owed come first.
		check(t, cn.Append("PING"))
		check(t, cn.Flush(ctx))
		if _, err := cn.ReceivePush(ctx); !errors.Is(err, client.ErrPendingReplies) {
			t.Fatalf("ReceivePush with a reply owed: %v, want %v", err, client.ErrPendingReplies)
		}
		if s, err := must[client.Value](t)(cn.Receive(ctx)).Str(); err != nil || s != "PONG" {
			t.Fatalf("Receive after ReceivePush = %q, %v", s, err)
		}
	})
}

// RESP2 has no push data.
func TestConnPushRESP2(t *testing.T) {
	ts := startCaskade(t, nil)
	ctx := testCtx(t)
	c := dial(t, ts.addr, &client.Options{Protocol: 2})
	cn := must[*client.Conn](t)(c.Conn(ctx))
	defer cn.Close()
	if _, err := cn.ReceivePush(ctx); !errors.Is(err, client.ErrNoPush) {
		t.Fatalf("ReceivePush over RESP2: %v, want %v", err, client.ErrNoPush)
	}
}
