package client_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade/client"
	"github.com/caskade/caskade/resp"
	"github.com/caskade/caskade/server/redis"
)

func TestStringHelpers(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		ctx := testCtx(t)
		c := dial(t, ts.addr, nil)
		check(t, c.Ping(ctx))

		// Get and Set.
		if _, err := c.Get(ctx, "missing"); !errors.Is(err, client.Nil) {
			t.Fatalf("Get missing: %v, want Nil", err)
		}
		old, err := c.Set(ctx, "k", []byte("v1"), client.SetArgs{})
		if err != nil || old != nil {
			t.Fatalf("Set = %q, %v", old, err)
		}
		eq(t, "Get", string(must[[]byte](t)(c.Get(ctx, "k"))), "v1")
		empty, err := c.Get(ctx, "missing2")
		if !errors.Is(err, client.Nil) || empty != nil {
			t.Fatalf("Get missing = %q, %v", empty, err)
		}
		must[[]byte](t)(c.Set(ctx, "empty", nil, client.SetArgs{}))
		v := must[[]byte](t)(c.Get(ctx, "empty"))
		if v == nil || len(v) != 0 {
			t.Fatalf("Get of empty value = %#v, want empty non-nil", v)
		}
		big := bytes.Repeat([]byte("0123456789"), 100_000)
		must[[]byte](t)(c.Set(ctx, "big", big, client.SetArgs{}))
		if got := must[[]byte](t)(c.Get(ctx, "big")); !bytes.Equal(got, big) {
			t.Fatalf("Get big: %d bytes, want %d", len(got), len(big))
		}

		// SetArgs.
		if _, err := c.Set(ctx, "k", []byte("nx"), client.SetArgs{NX: true}); !errors.Is(err, client.Nil) {
			t.Fatalf("Set NX on existing key: %v, want Nil", err)
		}
		if _, err := c.Set(ctx, "nokey", []byte("xx"), client.SetArgs{XX: true}); !errors.Is(err, client.Nil) {
			t.Fatalf("Set XX on missing key: %v, want Nil", err)
		}
		old, err = c.Set(ctx, "k", []byte("v2"), client.SetArgs{Get: true})
		if err != nil || string(old) != "v1" {
			t.Fatalf("Set GET = %q, %v", old, err)
		}
		if _, err := c.Set(ctx, "fresh", []byte("x"), client.SetArgs{Get: true}); !errors.Is(err, client.Nil) {
			t.Fatalf("Set GET of missing key: %v, want Nil", err)
		}
		must[[]byte](t)(c.Set(ctx, "ttl", []byte("x"), client.SetArgs{TTL: time.Hour}))
		ttl := must[time.Duration](t)(c.TTL(ctx, "ttl"))
		if ttl <= 59*time.Minute || ttl > time.Hour {
			t.Fatalf("TTL = %v", ttl)
		}
		must[[]byte](t)(c.Set(ctx, "ttl", []byte("y"), client.SetArgs{KeepTTL: true}))
		if ttl := must[time.Duration](t)(c.TTL(ctx, "ttl")); ttl <= 0 {
			t.Fatalf("TTL after KEEPTTL = %v", ttl)
		}
		must[[]byte](t)(c.Set(ctx, "ms", []byte("x"), client.SetArgs{TTL: 90500 * time.Millisecond}))
		if ttl := must[time.Duration](t)(c.TTL(ctx, "ms")); ttl <= 80*time.Second || ttl > 90500*time.Millisecond {
			t.Fatalf("TTL of PX key = %v", ttl)
		}
		for _, neg := range []time.Duration{-time.Second, -1500 * time.Millisecond} {
			if _, err := c.Set(ctx, "neg", []byte("x"), client.SetArgs{TTL: neg}); err == nil || !strings.Contains(err.Error(), "invalid expire time") {
				t.Fatalf("Set with TTL %v: %v, want the server's invalid expire time error", neg, err)
			}
		}
		if _, err := c.Get(ctx, "neg"); !errors.Is(err, client.Nil) {
			t.Fatalf("a refused Set with a negative TTL set the key: %v", err)
		}
		must[[]byte](t)(c.Set(ctx, "at", []byte("x"), client.SetArgs{ExpireAt: time.Now().Add(time.Hour)}))
		if ttl := must[time.Duration](t)(c.TTL(ctx, "at")); ttl <= 59*time.Minute {
			t.Fatalf("TTL of PXAT key = %v", ttl)
		}

		// TTL, Expire, Persist.
		eq(t, "TTL no expiry", must[time.Duration](t)(c.TTL(ctx, "k")), client.NoExpiry)
		if _, err := c.TTL(ctx, "missing"); !errors.Is(err, client.Nil) {
			t.Fatalf("TTL missing: %v", err)
		}
		eq(t, "Expire", must[bool](t)(c.Expire(ctx, "k", time.Minute)), true)
		eq(t, "Expire missing", must[bool](t)(c.Expire(ctx, "missing", time.Minute)), false)
		if ttl := must[time.Duration](t)(c.TTL(ctx, "k")); ttl <= 0 || ttl > time.Minute {
			t.Fatalf("TTL after Expire = %v", ttl)
		}
		eq(t, "Expire ms", must[bool](t)(c.Expire(ctx, "k", 1500*time.Millisecond)), true)
		eq(t, "Persist", must[bool](t)(c.Persist(ctx, "k")), true)
		eq(t, "Persist again", must[bool](t)(c.Persist(ctx, "k")), false)
		eq(t, "TTL after Persist", must[time.Duration](t)(c.TTL(ctx, "k")), client.NoExpiry)

		// Counters.
		eq(t, "Incr", must[int64](t)(c.Incr(ctx, "n")), 1)
		eq(t, "IncrBy", must[int64](t)(c.IncrBy(ctx, "n", 41)), 42)
		eq(t, "Decr", must[int64](t)(c.Decr(ctx, "n")), 41)
		eq(t, "DecrBy", must[int64](t)(c.DecrBy(ctx, "n", -9)), 50)
		_, err = c.Incr(ctx, "k")
		var se *client.Error
		if !errors.As(err, &se) || se.Prefix != "ERR" || !errors.Is(err, client.ErrGenericErr) {
			t.Fatalf("Incr of a non-integer: %v", err)
		}
		if se.Error() != "ERR value is not an integer or out of range" {
			t.Fatalf("error text %q", se.Error())
		}

		// Multi-key.
		check(t, c.MSet(ctx, client.KeyValue{Key: []byte("a"), Value: []byte("1")},
			client.KeyValue{Key: []byte("b"), Value: []byte("2")}))
		vals := must[[][]byte](t)(c.MGet(ctx, "a", "nope", "b"))
		if len(vals) != 3 || string(vals[0]) != "1" || vals[1] != nil || string(vals[2]) != "2" {
			t.Fatalf("MGet = %q", vals)
		}
		eq(t, "Exists", must[int64](t)(c.Exists(ctx, "a", "b", "nope", "a")), 3)
		eq(t, "Del", must[int64](t)(c.Del(ctx, "a", "nope")), 1)
		eq(t, "Exists after Del", must[int64](t)(c.Exists(ctx, "a")), 0)

		// Do and Value.
		val := must[client.Value](t)(c.Do(ctx, "ECHO", []byte("hi")))
		eq(t, "ECHO", must[string](t)(val.Str()), "hi")
		val = must[client.Value](t)(c.Do(ctx, "INCRBY", "n", 5))
		eq(t, "Do INCRBY", must[int64](t)(val.Int()), 55)
		val = must[client.Value](t)(c.Do(ctx, "GET", "missing"))
		if !val.IsNil() || val.Kind() != resp.KindNull {
			t.Fatalf("Do GET missing = %v", val)
		}
		if _, err := val.Bytes(); !errors.Is(err, client.Nil) {
			t.Fatalf("Bytes of null: %v", err)
		}
		val = must[client.Value](t)(c.Do(ctx, "INCRBYFLOAT", "f", 1.5))
		eq(t, "INCRBYFLOAT", must[float64](t)(val.Float()), 1.5)
		val = must[client.Value](t)(c.Do(ctx, "SET", "bool", true))
		eq(t, "SET bool OK", val.IsOK(), true)
		eq(t, "bool stored as 1", string(must[[]byte](t)(c.Get(ctx, "bool"))), "1")
		val = must[client.Value](t)(c.Do(ctx, "MGET", "b", "nope"))
		arr := must[[]client.Value](t)(val.Array())
		if len(arr) != 2 || must[string](t)(arr[0].Str()) != "2" || !arr[1].IsNil() {
			t.Fatalf("MGET via Do = %v", val)
		}
		if _, err := c.Do(ctx, "NOSUCHCOMMAND", "x"); !errors.Is(err, client.ErrUnknownCommand) {
			t.Fatalf("unknown command: %v", err)
		}
		if _, err := c.Do(ctx, "SET", "x", struct{}{}); !errors.Is(err, client.ErrArgType) {
			t.Fatalf("bad argument type: %v", err)
		}
		for _, stateful := range [][]any{{"SELECT", 1}, {"multi"}, {"WATCH", "k"}, {"CSK.BEGIN"}, {"client", "tracking", "on"}, {"SUBSCRIBE", "ch"}} {
			if _, err := c.Do(ctx, stateful...); !errors.Is(err, client.ErrStateful) {
				t.Fatalf("Do %v: %v, want ErrStateful", stateful, err)
			}
		}
		// The shared connections kept their state: still database 0.
		eq(t, "Get after refused SELECT", string(must[[]byte](t)(c.Get(ctx, "b"))), "2")
	})
}

func TestMapAndHello(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		ctx := testCtx(t)
		for _, proto := range []int{2, 3} {
			c := dial(t, ts.addr, &client.Options{Protocol: proto, ClientName: "probe"})
			eq(t, "Protocol", c.Protocol(), proto)
			conn := must[*client.Conn](t)(c.Conn(ctx))
			v := must[client.Value](t)(conn.Do(ctx, "HELLO"))
			m := must[map[string]client.Value](t)(v.Map())
			eq(t, "HELLO proto", must[int64](t)(m["proto"].Int()), int64(proto))
			if proto == 3 {
				eq(t, "HELLO kind", v.Kind(), resp.KindMap)
			}
			name := must[client.Value](t)(c.Do(ctx, "CLIENT", "GETNAME"))
			eq(t, "CLIENT GETNAME", must[string](t)(name.Str()), "probe")
			check(t, conn.Close())
		}
	})
}

func TestScan(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		ctx := testCtx(t)
		c := dial(t, ts.addr, nil)
		var want []string
		p := c.Pipeline()
		for i := range 500 {
			k := fmt.Sprintf("scan:%04d", i)
			want = append(want, k)
			p.Set(k, []byte("x"), client.SetArgs{})
			p.Set(fmt.Sprintf("other:%d", i), []byte("y"), client.SetArgs{})
		}
		must[[]*client.Cmd](t)(p.Exec(ctx))
		seen := map[string]bool{}
		it := c.Scan(ctx, "scan:*", 37)
		for it.Next(ctx) {
			seen[string(it.Key())] = true
		}
		check(t, it.Err())
		var got []string
		for k := range seen {
			got = append(got, k)
		}
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Fatalf("Scan returned %d keys, want %d", len(got), len(want))
		}
		if it.Next(ctx) {
			t.Fatal("Next after the end")
		}
		n := 0
		for it := c.Scan(ctx, "", 0); it.Next(ctx); {
			n++
		}
		if n < 1000 {
			t.Fatalf("Scan of everything: %d keys", n)
		}
	})
}

func TestDatabaseAndPassword(t *testing.T) {
	ts := startCaskade(t, func(s *redis.Server) { s.Password = "pw" })
	ctx := testCtx(t)
	_, err := client.Dial(ctx, ts.addr, &client.Options{Password: "bad", MaxRetries: -1})
	if !errors.Is(err, client.ErrWrongPass) {
		t.Fatalf("Dial with a wrong password: %v", err)
	}
	var ce *client.ConnError
	if !errors.As(err, &ce) || ce.Op != "handshake" || ce.MaybeExecuted {
		t.Fatalf("Dial error %#v", err)
	}
	if _, err := client.Dial(ctx, ts.addr, &client.Options{MaxRetries: -1}); !errors.Is(err, client.ErrNoAuth) {
		t.Fatalf("Dial without password: %v", err) // HELLO needs authentication
	}
	noauth := dial(t, ts.addr, &client.Options{MaxRetries: -1, Protocol: 2}) // no HELLO
	if _, err := noauth.Get(ctx, "k"); !errors.Is(err, client.ErrNoAuth) {
		t.Fatalf("Get without auth: %v", err)
	}
	for _, proto := range []int{2, 3} {
		c0 := dial(t, ts.addr, &client.Options{Password: "pw", Protocol: proto})
		c3 := dial(t, ts.addr, &client.Options{Username: "default", Password: "pw", DB: 3, Protocol: proto})
		must[[]byte](t)(c3.Set(ctx, "k", []byte("in3"), client.SetArgs{}))
		if _, err := c0.Get(ctx, "k"); !errors.Is(err, client.Nil) {
			t.Fatalf("proto %d: db 0 sees db 3's key: %v", proto, err)
		}
		eq(t, "Get in db 3", string(must[[]byte](t)(c3.Get(ctx, "k"))), "in3")
		// Dedicated connections are in the same database.
		conn := must[*client.Conn](t)(c3.Conn(ctx))
		v := must[client.Value](t)(conn.Do(ctx, "GET", "k"))
		eq(t, "Conn GET in db 3", must[string](t)(v.Str()), "in3")
		check(t, conn.Close())
		must[int64](t)(c3.Del(ctx, "k"))
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []client.Options{
		{DB: -1}, {Protocol: 1}, {Protocol: 4}, {PoolSize: -1}, {DialTimeout: -1},
		{MinRetryBackoff: time.Second, MaxRetryBackoff: time.Millisecond},
		{Username: "u"}, {WatchRetries: -2},
	}
	for _, o := range bad {
		if err := o.Validate(); !errors.Is(err, client.ErrInvalidOptions) {
			t.Errorf("Validate(%+v) = %v", o, err)
		}
		if _, err := client.Dial(testCtx(t), "127.0.0.1:1", &o); !errors.Is(err, client.ErrInvalidOptions) {
			t.Errorf("Dial with %+v: %v", o, err)
		}
	}
	var nilOpts *client.Options
	if err := nilOpts.Validate(); err != nil {
		t.Errorf("nil Options: %v", err)
	}
	good := client.Options{ReadTimeout: -1, WriteTimeout: -1, MaxRetries: -1, MaxIdleConns: -1, Protocol: 2}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate(%+v) = %v", good, err)
	}
	if _, err := client.Dial(testCtx(t), "no-port", nil); err == nil {
		t.Error("Dial of an address without a port succeeded")
	}
	// Nothing listens on port 1: the dial fails, saying nothing executed.
	_, err := client.Dial(testCtx(t), "127.0.0.1:1", &client.Options{MaxRetries: -1})
	var ce *client.ConnError
	if !errors.As(err, &ce) || ce.Op != "dial" || ce.MaybeExecuted || errors.Is(err, client.ErrMaybeExecuted) {
		t.Errorf("Dial of a closed port: %v", err)
	}
}

// TestExpireBelowAMillisecond checks that a positive TTL below a
// millisecond is sent as 1 ms, as Set does, and not as 0, which deletes the
// key at once.
func TestExpireBelowAMillisecond(t *testing.T) {
	ts := startCaskade(t, nil)
	p := startProxy(t, ts.addr)
	c := dial(t, p.addr(), nil)
	ctx := testCtx(t)
	const want = "*3\r\n$7\r\nPEXPIRE\r\n$3\r\nsub\r\n$1\r\n1\r\n"
	for _, expire := range []func() error{
		func() error { _, err := c.Expire(ctx, "sub", 500*time.Microsecond); return err },
		func() error {
			_, err := c.Pipelined(ctx, func(p *client.Pipe) error { p.Expire("sub", time.Microsecond); return nil })
			return err
		},
	} {
		must[[]byte](t)(c.Set(ctx, "sub", []byte("x"), client.SetArgs{}))
		sent := p.expect(want)
		check(t, expire())
		// The proxy signals after forwarding, which can be after the reply
		// came back, so wait for it rather than look once.
		select {
		case <-sent:
		case <-time.After(5 * time.Second):
			t.Fatalf("a TTL below a millisecond was not sent as PEXPIRE sub 1")
		}
	}
}
