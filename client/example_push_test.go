package client_test

import (
	"context"
	"fmt"
	"log"

	"github.com/caskade/caskade/client"
)

// A dedicated connection with CLIENT TRACKING keeps a local copy of the
// keys it read and forgets one when the server says it changed: during
// later commands through the push handler, and while idle through
// ReceivePush.
func ExampleConn_ReceivePush() {
	ctx := context.Background()
	c, err := client.Dial(ctx, "127.0.0.1:6379", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	cn, err := c.Conn(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer cn.Close()

	cache := map[string][]byte{}
	forget := func(v client.Value) { // ["invalidate", [key...]], or a nil list: everything
		parts, err := v.Array()
		if err != nil || len(parts) != 2 {
			return
		}
		if kind, _ := parts[0].Str(); kind != "invalidate" {
			return
		}
		if parts[1].IsNil() {
			clear(cache)
			return
		}
		keys, _ := parts[1].Array()
		for _, k := range keys {
			s, _ := k.Str()
			delete(cache, s)
		}
	}
	cn.SetPushHandler(forget)
	if _, err := cn.Do(ctx, "CLIENT", "TRACKING", "ON"); err != nil {
		log.Fatal(err)
	}
	v, err := cn.Do(ctx, "GET", "greeting")
	if err != nil {
		log.Fatal(err)
	}
	if b, err := v.Bytes(); err == nil {
		cache["greeting"] = b
	}

	// Idle: wait for the next invalidation (another client's SET greeting).
	push, err := cn.ReceivePush(ctx)
	if err != nil {
		log.Fatal(err)
	}
	forget(push)
	fmt.Println(len(cache))
}
