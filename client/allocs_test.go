package client_test

import (
	"context"
	"net"
	"testing"

	"github.com/caskade/caskade/client"
	"github.com/caskade/caskade/resp"
)

// startFakeServer serves a minimal RESP2 protocol that allocates nothing
// per command (unlike caskade's server, whose allocations would count in
// AllocsPerRun): GET answers a fixed value, anything else +OK.
func startFakeServer(t testing.TB, value []byte) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	get := resp.AppendBulk(nil, value)
	ok := resp.AppendSimpleString(nil, "OK")
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				rd := resp.NewReader(nc, nil)
				var args [][]byte
				var out []byte
				for {
					if args, err = rd.ReadCommand(args); err != nil {
						return
					}
					if len(args[0]) == 3 && (args[0][0]|0x20) == 'g' {
						out = append(out, get...)
					} else if len(args[0]) == 5 && (args[0][0]|0x20) == 'h' {
						out = resp.AppendError(out, "ERR unknown command 'HELLO'")
					} else {
						out = append(out, ok...)
					}
					if rd.Buffered() == 0 {
						if _, err := nc.Write(out); err != nil {
							return
						}
						out = out[:0]
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// TestAllocs checks the hot path's allocations in the steady state: one
// per Get (the returned value), none per Set.
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	val := []byte("0123456789abcdef")
	c := dial(t, startFakeServer(t, val), &client.Options{PoolSize: 1})
	ctx := context.Background()
	get := testing.AllocsPerRun(2000, func() {
		if _, err := c.Get(ctx, "alloc"); err != nil {
			t.Fatal(err)
		}
	})
	set := testing.AllocsPerRun(2000, func() {
		if _, err := c.Set(ctx, "alloc", val, client.SetArgs{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocations: Get %.2f, Set %.2f", get, set)
	if get > 1 || set > 0 {
		t.Fatalf("allocations per call: Get %v (max 1), Set %v (max 0)", get, set)
	}
}
