package httpapi

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	gomc "github.com/bradfitz/gomemcache/memcache"
	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/memcache"
)

// TestCrossProtocol writes through memcached and reads through HTTP and the
// DB (which is what Redis database 0 reads), and checks that cas uniques,
// HTTP versions and direct writes are one and the same notion of version.
func TestCrossProtocol(t *testing.T) {
	ts := startServer(t)
	mcs := &memcache.Server{DB: ts.db}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mcs.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		mcs.Shutdown(ctx)
		<-done
	})
	mc := gomc.New(l.Addr().String())
	mc.Timeout = 5 * time.Second

	// memcached → HTTP and DB: the same bytes; flags beside the value.
	if err := mc.Set(&gomc.Item{Key: "user:1", Value: []byte("alice\r\n\x00"), Flags: 99}); err != nil {
		t.Fatal(err)
	}
	r := ts.do(t, "GET", "/v1/kv/user:1", "").want(t, 200, "")
	if r.body != "alice\r\n\x00" || r.header.Get(HeaderFlags) != "99" {
		t.Fatalf("HTTP sees %q flags %s", r.body, r.header.Get(HeaderFlags))
	}
	if v, err := ts.db.Get([]byte("user:1")); err != nil || string(v) != "alice\r\n\x00" {
		t.Fatalf("DB sees %q %v", v, err)
	}

	// The memcached cas unique is the HTTP version.
	it, err := mc.Get("user:1")
	if err != nil {
		t.Fatal(err)
	}
	_, info, err := ts.db.Lookup([]byte("user:1"))
	if err != nil {
		t.Fatal(err)
	}
	if r.header.Get(HeaderVersion) != strconv.FormatUint(info.Version, 10) {
		t.Fatalf("HTTP version %s, DB version %d", r.header.Get(HeaderVersion), info.Version)
	}

	// A direct write (as a Redis SET does) invalidates the cas token:
	// memcached cas then answers EXISTS.
	if err := ts.db.Set([]byte("user:1"), []byte("bob")); err != nil {
		t.Fatal(err)
	}
	it.Value = []byte("mallory")
	if err := mc.CompareAndSwap(it); !errors.Is(err, gomc.ErrCASConflict) {
		t.Fatalf("cas after a direct write: %v", err)
	}
	// So does an HTTP PUT, and HTTP If-Match fails after a memcached set.
	it, err = mc.Get("user:1")
	if err != nil {
		t.Fatal(err)
	}
	etag := ts.do(t, "GET", "/v1/kv/user:1", "").header.Get("ETag")
	ts.do(t, "PUT", "/v1/kv/user:1", "carol").want(t, 204, "")
	if err := mc.CompareAndSwap(it); !errors.Is(err, gomc.ErrCASConflict) {
		t.Fatalf("cas after an HTTP PUT: %v", err)
	}
	if err := mc.Set(&gomc.Item{Key: "user:1", Value: []byte("dave")}); err != nil {
		t.Fatal(err)
	}
	ts.do(t, "PUT", "/v1/kv/user:1", "eve", "If-Match", etag).want(t, 412, "precondition_failed")

	// HTTP → memcached: an HTTP PUT clears flags; a value written with
	// flags over HTTP is seen with them over memcached.
	ts.do(t, "PUT", "/v1/kv/user:2?flags=7&ttl=100", "frank").want(t, 201, "")
	if it, err := mc.Get("user:2"); err != nil || string(it.Value) != "frank" || it.Flags != 7 {
		t.Fatalf("memcached sees %+v %v", it, err)
	}
	// A cas with the HTTP version succeeds over memcached.
	it, err = mc.Get("user:2")
	if err != nil {
		t.Fatal(err)
	}
	it.Value = []byte("grace")
	if err := mc.CompareAndSwap(it); err != nil {
		t.Fatalf("cas: %v", err)
	}
	if v, _ := ts.db.Get([]byte("user:2")); string(v) != "grace" {
		t.Fatalf("after cas: %q", v)
	}
	// A memcached incr and an HTTP transaction see each other.
	if err := mc.Set(&gomc.Item{Key: "n", Value: []byte("41")}); err != nil {
		t.Fatal(err)
	}
	if n, err := mc.Increment("n", 1); err != nil || n != 42 {
		t.Fatalf("incr: %d %v", n, err)
	}
	tr := ts.txn(t, `{"compare":[{"key":"n","target":"value","result":"==","value":"42"}],"success":[{"put":{"key":"n","value":"100"}}]}`)
	if !tr.Succeeded {
		t.Fatal("txn did not see the memcached incr")
	}
	if n, err := mc.Increment("n", 1); err != nil || n != 101 {
		t.Fatalf("incr after txn: %d %v", n, err)
	}
	// Keys of other Redis databases are out of reach of both.
	if err := ts.db.Set([]byte("\xff\x01secret"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	ts.do(t, "GET", "/v1/kv/%FF%01secret", "").want(t, 400, "reserved_key")
	if _, err := mc.Get("\xff\x01secret"); err == nil || errors.Is(err, gomc.ErrCacheMiss) {
		t.Fatalf("memcached get of a reserved key: %v", err)
	}
	if err := mc.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if v, err := ts.db.Get([]byte("\xff\x01secret")); err != nil || string(v) != "x" {
		t.Fatalf("flush_all reached Redis database 1: %q %v", v, err)
	}
	if _, err := ts.db.Get([]byte("user:2")); !errors.Is(err, caskade.ErrNotFound) {
		t.Fatalf("flush_all left user:2: %v", err)
	}
}
