package caskade

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestSubscribeOrigins checks that subscribers hear which commit of a
// group made each change: the origin its Batch or Tx was given, nil for
// one without, and nil for what expiry alone dropped. A server needs it
// to tell a client's own writes from the others' that shared its group
// commit (Redis CLIENT TRACKING NOLOOP).
func TestSubscribeOrigins(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1})
	type call struct{ changed, expired, origins string }
	var mu sync.Mutex
	var calls []call
	cancel := db.SubscribeOrigins(func(changed, expired [][]byte, origins []any) {
		mu.Lock()
		defer mu.Unlock()
		o := "nil"
		if origins != nil {
			o = fmt.Sprint(origins)
		}
		calls = append(calls, call{fmt.Sprintf("%s", changed), fmt.Sprintf("%s", expired), o})
	})
	defer cancel()
	take := func() []call {
		mu.Lock()
		defer mu.Unlock()
		c := calls
		calls = nil
		return c
	}
	tagged := func(origin any, f func(b *Batch)) *Batch {
		b := new(Batch)
		f(b)
		b.SetOrigin(origin)
		return b
	}
	tests := []struct {
		name  string
		write func(t *testing.T)
		want  []call
	}{
		{"one group, mixed", func(t *testing.T) {
			bs := []*Batch{
				tagged("x", func(b *Batch) { b.Set([]byte("a"), []byte("1")); b.Set([]byte("b"), []byte("1")) }),
				tagged(nil, func(b *Batch) { b.Set([]byte("a"), []byte("2")) }),
				tagged("y", func(b *Batch) { b.Delete([]byte("b")) }),
			}
			for _, err := range db.WriteBatches(bs) {
				if err != nil {
					t.Fatal(err)
				}
			}
		}, []call{{"[a b a b]", "[]", "[x x <nil> y]"}}},
		{"no origin", func(t *testing.T) {
			if err := db.Set([]byte("a"), []byte("3")); err != nil {
				t.Fatal(err)
			}
		}, []call{{"[a]", "[]", "nil"}}},
		{"reset forgets the origin", func(t *testing.T) {
			b := tagged("x", func(b *Batch) {})
			b.Reset()
			b.Set([]byte("a"), []byte("4"))
			if err := db.Write(b); err != nil {
				t.Fatal(err)
			}
		}, []call{{"[a]", "[]", "nil"}}},
		{"transaction", func(t *testing.T) {
			err := db.Transact(context.Background(), func(tx *Tx) error {
				tx.SetOrigin("t")
				tx.Set([]byte("c"), []byte("1"))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}, []call{{"[c]", "[]", "[t]"}}},
		{"delete of an expired key", func(t *testing.T) {
			if err := db.SetWithTTL([]byte("e"), []byte("1"), time.Second); err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Second)
			if err := db.Write(tagged("z", func(b *Batch) { b.Delete([]byte("e")) })); err != nil {
				t.Fatal(err)
			}
		}, []call{{"[e]", "[]", "nil"}, {"[]", "[e]", "[z]"}}},
		{"active expiry", func(t *testing.T) {
			if err := db.Write(tagged("w", func(b *Batch) { b.SetWithTTL([]byte("f"), []byte("1"), time.Second) })); err != nil {
				t.Fatal(err)
			}
			clk.Advance(2 * time.Second)
			db.expireSample()
		}, []call{{"[f]", "[]", "[w]"}, {"[]", "[f]", "nil"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			take()
			tc.write(t)
			if got := take(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("notified of %v, want %v", got, tc.want)
			}
		})
	}
}
