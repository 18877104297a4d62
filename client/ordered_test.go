package client_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/caskade/caskade/client"
)

func keysOf(kvs []client.KeyValue) string {
	var b bytes.Buffer
	for i, kv := range kvs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(kv.Key)
		if kv.Value != nil {
			b.WriteByte('=')
			b.Write(kv.Value)
		}
	}
	return b.String()
}

func TestOrderedCommands(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		ctx := testCtx(t)
		c := dial(t, ts.addr, nil)
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			must[[]byte](t)(c.Set(ctx, "o:"+k, []byte(k+k), client.SetArgs{}))
		}
		_, err := c.Range(ctx, client.RangeArgs{From: []byte("o:"), To: []byte("o;")})
		skipUnknown(t, err)
		check(t, err)

		for _, tc := range []struct {
			args client.RangeArgs
			want string
		}{
			{client.RangeArgs{From: []byte("o:"), To: []byte("o;")}, "o:a=aa,o:b=bb,o:c=cc,o:d=dd,o:e=ee"},
			{client.RangeArgs{From: []byte("o:b"), To: []byte("o:d")}, "o:b=bb,o:c=cc"},
			{client.RangeArgs{From: []byte("o:b"), To: []byte("o;"), Limit: 2}, "o:b=bb,o:c=cc"},
			{client.RangeArgs{From: []byte("o:"), To: []byte("o;"), Limit: 2, Reverse: true}, "o:e=ee,o:d=dd"},
			{client.RangeArgs{From: []byte("o:c"), To: []byte("o;"), KeysOnly: true}, "o:c,o:d,o:e"},
			{client.RangeArgs{To: []byte("o:b")}, "o:a=aa"},
			{client.RangeArgs{From: []byte("o:e")}, "o:e=ee"},
		} {
			got := keysOf(must[[]client.KeyValue](t)(c.Range(ctx, tc.args)))
			if got != tc.want {
				t.Errorf("Range(%q..%q limit %d rev %v keys %v) = %s, want %s",
					tc.args.From, tc.args.To, tc.args.Limit, tc.args.Reverse, tc.args.KeysOnly, got, tc.want)
			}
		}

		// A negative limit is the server's to refuse, not read as none.
		if _, err := c.Range(ctx, client.RangeArgs{From: []byte("o:"), To: []byte("o;"), Limit: -1}); err == nil {
			t.Error("Range with limit -1: no error")
		}
		if _, err := c.RangeSelect(ctx, client.FirstGreaterOrEqual([]byte("o:")), client.FirstGreaterOrEqual([]byte("o;")), client.RangeOptions{Limit: -3}); err == nil {
			t.Error("RangeSelect with limit -3: no error")
		}

		// Key selectors.
		for _, tc := range []struct {
			sel  client.KeySelector
			want string // "<nil>" past the end
		}{
			{client.FirstGreaterOrEqual([]byte("o:b")), "o:b"},
			{client.FirstGreaterThan([]byte("o:b")), "o:c"},
			{client.LastLessOrEqual([]byte("o:b")), "o:b"},
			{client.LastLessThan([]byte("o:b")), "o:a"},
			{client.FirstGreaterOrEqual([]byte("o:b")).Add(2), "o:d"},
			{client.FirstGreaterOrEqual([]byte("o:zz")), "<nil>"},
			{client.LastLessThan([]byte("o:a")), ""},
		} {
			k, err := c.GetKey(ctx, tc.sel)
			check(t, err)
			got := string(k)
			if k == nil {
				got = "<nil>"
			}
			if got != tc.want {
				t.Errorf("GetKey(%v) = %q, want %q", tc.sel, got, tc.want)
			}
		}
		kvs, err := c.RangeSelect(ctx, client.FirstGreaterThan([]byte("o:a")), client.FirstGreaterOrEqual([]byte("o:e")), client.RangeOptions{})
		skipUnknown(t, err)
		check(t, err)
		eq(t, "RangeSelect", keysOf(kvs), "o:b=bb,o:c=cc,o:d=dd")
		kvs = must[[]client.KeyValue](t)(c.RangeSelect(ctx, client.FirstGreaterOrEqual([]byte("o:")),
			client.FirstGreaterOrEqual([]byte("o;")), client.RangeOptions{Limit: 2, Reverse: true, KeysOnly: true}))
		eq(t, "RangeSelect rev keys", keysOf(kvs), "o:e,o:d")

		// Atomic operations and versions.
		one := binary.LittleEndian.AppendUint64(nil, 1)
		err = c.Atomic(ctx, client.AtomicAdd, []byte("o:n"), one)
		skipUnknown(t, err)
		check(t, err)
		check(t, c.Atomic(ctx, client.AtomicAdd, []byte("o:n"), binary.LittleEndian.AppendUint64(nil, 41)))
		eq(t, "ADD", binary.LittleEndian.Uint64(must[[]byte](t)(c.Get(ctx, "o:n"))), uint64(42))
		check(t, c.Atomic(ctx, client.AtomicByteMax, []byte("o:a"), []byte("zz")))
		eq(t, "BYTEMAX", string(must[[]byte](t)(c.Get(ctx, "o:a"))), "zz")
		check(t, c.Atomic(ctx, client.AtomicCompareAndClear, []byte("o:a"), []byte("zz")))
		if _, err := c.Get(ctx, "o:a"); !errors.Is(err, client.Nil) {
			t.Fatalf("after COMPAREANDCLEAR: %v", err)
		}
		v1, err := c.Version(ctx, []byte("o:b"))
		skipUnknown(t, err)
		check(t, err)
		must[[]byte](t)(c.Set(ctx, "o:b", []byte("new"), client.SetArgs{}))
		if v2 := must[uint64](t)(c.Version(ctx, []byte("o:b"))); v2 <= v1 {
			t.Fatalf("version after a write %d, before %d", v2, v1)
		}

		// ClearRange.
		err = c.ClearRange(ctx, []byte("o:b"), []byte("o:d"))
		skipUnknown(t, err)
		check(t, err)
		eq(t, "after ClearRange", keysOf(must[[]client.KeyValue](t)(c.Range(ctx, client.RangeArgs{From: []byte("o:"), To: []byte("o;"), KeysOnly: true}))), "o:d,o:e,o:n")
	})
}

func TestTransact(t *testing.T) {
	ts := startCaskade(t, nil)
	ctx := testCtx(t)
	c := dial(t, ts.addr, nil)
	err := c.Transact(ctx, func(tx *client.Txn) error { return nil })
	skipUnknown(t, err)
	check(t, err)

	// Writes are visible to the transaction's own reads and applied at commit.
	check(t, c.Transact(ctx, func(tx *client.Txn) error {
		tx.Set([]byte("t:a"), []byte("1"))
		tx.Set([]byte("t:b"), []byte("2"))
		v, err := tx.Get([]byte("t:a"))
		if err != nil || string(v) != "1" {
			return fmt.Errorf("read own write: %q %v", v, err)
		}
		if _, err := tx.Get([]byte("t:none")); !errors.Is(err, client.Nil) {
			return fmt.Errorf("missing key in a transaction: %v", err)
		}
		kvs, err := tx.Range(client.RangeArgs{From: []byte("t:"), To: []byte("t;")})
		if err != nil || keysOf(kvs) != "t:a=1,t:b=2" {
			return fmt.Errorf("Range in a transaction: %s %v", keysOf(kvs), err)
		}
		k, err := tx.GetKey(client.FirstGreaterThan([]byte("t:a")))
		if err != nil || string(k) != "t:b" {
			return fmt.Errorf("GetKey in a transaction: %q %v", k, err)
		}
		kvs, err = tx.Snapshot().GetRange(client.FirstGreaterOrEqual([]byte("t:")), client.FirstGreaterOrEqual([]byte("t;")), nil)
		if err != nil || keysOf(kvs) != "t:a=1,t:b=2" {
			return fmt.Errorf("snapshot GetRange: %s %v", keysOf(kvs), err)
		}
		tx.Atomic(client.AtomicAdd, []byte("t:n"), []byte{5})
		return nil
	}))
	eq(t, "t:b", string(must[[]byte](t)(c.Get(ctx, "t:b"))), "2")
	eq(t, "t:n", string(must[[]byte](t)(c.Get(ctx, "t:n"))), "\x05")

	// An error from fn rolls back.
	boom := errors.New("boom")
	err = c.Transact(ctx, func(tx *client.Txn) error {
		tx.Set([]byte("t:a"), []byte("rolled back"))
		tx.Clear([]byte("t:b"))
		return boom
	})
	if err != boom {
		t.Fatalf("Transact with fn error: %v", err)
	}
	eq(t, "t:a after rollback", string(must[[]byte](t)(c.Get(ctx, "t:a"))), "1")

	// A panic rolls back and is re-raised.
	func() {
		defer func() {
			if recover() != "oops" {
				t.Fatal("panic not re-raised")
			}
		}()
		c.Transact(ctx, func(tx *client.Txn) error {
			tx.Set([]byte("t:a"), []byte("panicked"))
			if _, err := tx.Get([]byte("t:a")); err != nil {
				return err
			}
			panic("oops")
		})
	}()
	eq(t, "t:a after panic", string(must[[]byte](t)(c.Get(ctx, "t:a"))), "1")

	// ClearRange in a transaction.
	check(t, c.Transact(ctx, func(tx *client.Txn) error {
		tx.ClearRange([]byte("t:"), []byte("t:b"))
		return nil
	}))
	if _, err := c.Get(ctx, "t:a"); !errors.Is(err, client.Nil) {
		t.Fatalf("t:a after ClearRange: %v", err)
	}

	// A conflict is retried: fn sees the other writer's value the second time.
	other := dial(t, ts.addr, nil)
	runs := 0
	check(t, c.Transact(ctx, func(tx *client.Txn) error {
		runs++
		v, err := tx.Get([]byte("t:c"))
		if err != nil && !errors.Is(err, client.Nil) {
			return err
		}
		if runs == 1 {
			must[[]byte](t)(other.Set(ctx, "t:c", []byte("7"), client.SetArgs{}))
		}
		n, _ := strconv.Atoi(string(v))
		tx.Set([]byte("t:c"), []byte(strconv.Itoa(n+1)))
		return nil
	}))
	eq(t, "runs", runs, 2)
	eq(t, "t:c", string(must[[]byte](t)(c.Get(ctx, "t:c"))), "8")
}

func TestTransactContention(t *testing.T) {
	ts := startCaskade(t, nil)
	ctx := testCtx(t)
	c := dial(t, ts.addr, nil)
	skipUnknown(t, c.Transact(ctx, func(tx *client.Txn) error { return nil }))
	const workers, each = 8, 40
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for range each {
				err := c.Transact(ctx, func(tx *client.Txn) error {
					v, err := tx.Get([]byte("tc"))
					if err != nil && !errors.Is(err, client.Nil) {
						return err
					}
					n, _ := strconv.Atoi(string(v))
					tx.Set([]byte("tc"), []byte(strconv.Itoa(n+1)))
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		check(t, <-errs)
	}
	eq(t, "counter", string(must[[]byte](t)(c.Get(ctx, "tc"))), strconv.Itoa(workers*each))
}

func TestTransactUnsupported(t *testing.T) {
	ts := startRedis(t)
	c := dial(t, ts.addr, nil)
	ran := false
	err := c.Transact(context.Background(), func(tx *client.Txn) error {
		ran = true
		tx.Set([]byte("x"), []byte("y"))
		return nil
	})
	if !errors.Is(err, client.ErrUnknownCommand) || ran {
		t.Fatalf("Transact on redis-server: %v (fn ran: %v)", err, ran)
	}
	if _, err := c.Get(context.Background(), "x"); !errors.Is(err, client.Nil) {
		t.Fatalf("a write ran outside a transaction: %v", err)
	}
}
