package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// TestRueidisClientSideCaching uses rueidis with client-side caching on
// (its default): a cached GET is served from the cache until a write from
// another client, or directly through the embedded DB, invalidates it.
func TestRueidisClientSideCaching(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	cli, inval := rueidisCaching(t, ts.addr)
	waitInval := func(key string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case k := <-inval:
				if k == key {
					return
				}
			case <-timeout:
				t.Fatalf("no invalidation of %q", key)
			}
		}
	}
	cached := func(key, want string, hit bool) {
		t.Helper()
		r := cli.DoCache(ctx, cli.B().Get().Key(key).Cache(), time.Minute)
		v, err := r.ToString()
		if err != nil {
			t.Fatalf("cached GET %s: %v", key, err)
		}
		if v != want || r.IsCacheHit() != hit {
			t.Fatalf("cached GET %s = %q (hit %v), want %q (hit %v)", key, v, r.IsCacheHit(), want, hit)
		}
	}
	if err := cli.Do(ctx, cli.B().Set().Key("k").Value("v1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	cached("k", "v1", false)
	cached("k", "v1", true)

	// A write from another client.
	other := ts.goRedis(nil)
	if err := other.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitInval("k")
	cached("k", "v2", false)
	cached("k", "v2", true)

	// A write through the embedded database.
	if err := ts.db.Set([]byte("k"), []byte("v3")); err != nil {
		t.Fatal(err)
	}
	waitInval("k")
	cached("k", "v3", false)

	// A key in another database invalidates the same name (as in Redis).
	other3 := ts.goRedis(&goredis.Options{DB: 3})
	cached("k", "v3", true)
	if err := other3.Set(ctx, "k", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitInval("k")
	cached("k", "v3", false)

	// Expiry set by another client invalidates too; the cache entry's TTL
	// follows the key's PTTL.
	if err := other.Expire(ctx, "k", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	waitInval("k")
	r := cli.DoCache(ctx, cli.B().Get().Key("k").Cache(), time.Minute)
	if v, _ := r.ToString(); v != "v3" || r.CacheTTL() <= 0 {
		t.Fatalf("after EXPIRE: %q ttl %d", v, r.CacheTTL())
	}
}

// TestTrackingRaw checks the push messages byte for byte.
func TestTrackingRaw(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.hello3()
	c.do(cmd("CLIENT", "TRACKING", "ON"), "+OK\r\n")
	c.do(cmd("GET", "a"), "_\r\n")
	c.do(cmd("MGET", "b", "c"), "*2\r\n_\r\n_\r\n")
	w := ts.dial()
	w.do(cmd("MSET", "a", "1", "c", "2", "z", "3"), "+OK\r\n")
	c.expect(">2\r\n$10\r\ninvalidate\r\n*2\r\n")
	keys := c.readLine() + c.readLine() + c.readLine() + c.readLine()
	if !slices.Contains([]string{"$1\r\na\r\n$1\r\nc\r\n", "$1\r\nc\r\n$1\r\na\r\n"}, keys) {
		t.Fatalf("push keys %q", keys)
	}
	// One-shot: the next write of a sends nothing until a is read again.
	w.do(cmd("SET", "a", "2"), "+OK\r\n")
	c.do(cmd("PING"), "+PONG\r\n")

	// OPTIN: only reads after CLIENT CACHING YES are tracked.
	c.do(cmd("CLIENT", "TRACKING", "OFF"), "+OK\r\n")
	c.do(cmd("CLIENT", "TRACKING", "ON", "OPTIN"), "+OK\r\n")
	c.do(cmd("GET", "a"), "$1\r\n2\r\n")
	c.do(cmd("CLIENT", "CACHING", "YES"), "+OK\r\n")
	c.do(cmd("GET", "c"), "$1\r\n2\r\n")
	w.do(cmd("MSET", "a", "3", "c", "3"), "+OK\r\n")
	c.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nc\r\n")

	// BCAST with a prefix.
	c.do(cmd("CLIENT", "TRACKING", "OFF"), "+OK\r\n")
	c.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:"), "+OK\r\n")
	w.do(cmd("SET", "other", "1"), "+OK\r\n")
	w.do(cmd("SET", "user:1", "1"), "+OK\r\n")
	c.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\nuser:1\r\n")
	c.do(cmd("CLIENT", "TRACKINGINFO"), "%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*1\r\n$5\r\nuser:\r\n")

	// FLUSHALL of many keys: a null invalidation (flush everything).
	var args []string
	args = append(args, "MSET")
	for i := range 1001 {
		args = append(args, "user:"+itoa(int64(i)), "v")
	}
	w.do(cmd(args...), "+OK\r\n")
	c.expect(">2\r\n$10\r\ninvalidate\r\n_\r\n")

	// Errors, as in Redis.
	c.do(cmd("CLIENT", "TRACKING", "ON"), "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.\r\n")
	c.do(cmd("CLIENT", "TRACKING", "OFF"), "+OK\r\n")
	c.do(cmd("CLIENT", "TRACKING", "ON", "PREFIX", "x"), "-ERR PREFIX option requires BCAST mode to be enabled\r\n")
	c.do(cmd("CLIENT", "CACHING", "YES"), "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled\r\n")
	c.do(cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "9999"), "-ERR The client ID you want redirect to does not exist\r\n")
	c.do(cmd("CLIENT", "GETREDIR"), ":-1\r\n")
}

// TestTrackingRedirect sends a RESP2 client's invalidations to a RESP3
// connection.
func TestTrackingRedirect(t *testing.T) {
	ts := startServer(t, nil)
	target := ts.dial()
	target.hello3()
	target.send(cmd("CLIENT", "ID"))
	id := target.readLine()
	c := ts.dial()
	c.do(cmd("CLIENT", "TRACKING", "ON", "REDIRECT", id[1:len(id)-2]), "+OK\r\n")
	c.do(cmd("CLIENT", "GETREDIR"), id)
	c.do(cmd("GET", "k"), "$-1\r\n")
	ts.dial().do(cmd("SET", "k", "v"), "+OK\r\n")
	target.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n")
}

// TestInvalidationBeforeLaterReplies: an invalidation for a write that
// was acknowledged before a tracking client sent a command arrives before
// that command's reply, as in Redis, so that a client never answers from
// its cache after it could know of the write.
func TestInvalidationBeforeLaterReplies(t *testing.T) {
	ts := startServer(t, nil)
	tr, other := ts.dial(), ts.dial()
	tr.hello3()
	tr.do(cmd("CLIENT", "TRACKING", "ON"), "+OK\r\n")
	for i := range 1000 {
		if i == 0 {
			tr.do(cmd("GET", "k"), "_\r\n")
		} else {
			tr.do(cmd("GET", "k"), "$1\r\nv\r\n")
		}
		other.do(cmd("SET", "k", "v"), "+OK\r\n")
		tr.send(cmd("PING"))
		if got := tr.readLine(); got != ">2\r\n" {
			t.Fatalf("round %d: %q before the invalidation", i, got)
		}
		tr.expect("$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n+PONG\r\n")
	}
}

// TestTrackingCSKSnapshotRead: a read inside a CSK transaction answers
// from the transaction's snapshot, which may predate a write already
// acknowledged to another client; the key was not tracked then, so the
// write sent no invalidation. The read's reply is therefore followed by
// an invalidation of its keys, or the client would cache the snapshot's
// value until the key next changed.
func TestTrackingCSKSnapshotRead(t *testing.T) {
	ts := startServer(t, nil)
	tr, other := ts.dial(), ts.dial()
	tr.hello3()
	other.do(cmd("SET", "k", "v1"), "+OK\r\n")
	other.do(cmd("SET", "j", "w1"), "+OK\r\n")
	tr.do(cmd("CLIENT", "TRACKING", "ON"), "+OK\r\n")
	tr.do(cmd("CSK.BEGIN"), "+OK\r\n")
	tr.do(cmd("GET", "other"), "_\r\n") // the snapshot is taken by now
	tr.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$5\r\nother\r\n")
	other.do(cmd("SET", "k", "v2"), "+OK\r\n")
	other.do(cmd("SET", "j", "w2"), "+OK\r\n")
	tr.do(cmd("GET", "k"), "$2\r\nv1\r\n")
	tr.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n")
	tr.do(cmd("CSK.SNAPSHOT", "GET", "j"), "$2\r\nw1\r\n")
	tr.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nj\r\n")
	tr.do(cmd("CSK.ROLLBACK"), "+OK\r\n")
	tr.do(cmd("PING"), "+PONG\r\n")
}

// TestTrackingExpiredOnAccess: a key found expired by a read is dropped
// and its trackers invalidated, as Redis deletes an expired key on access
// and invalidates it. Active expiry is off, so only the access can notice.
// Like Redis, the reading client's own invalidation follows its reply.
// The keys expire when the database's clock is moved past their TTL: a
// real short TTL could run out before the first read on a slow machine.
func TestTrackingExpiredOnAccess(t *testing.T) {
	var skew atomic.Int64 // the database's clock runs ahead by this much
	ts := startServerOpts(t, &caskade.Options{Sync: caskade.SyncNone, ExpiryPeriod: -1,
		Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	c, w := ts.dial(), ts.dial()
	c.hello3()
	c.do(cmd("CLIENT", "TRACKING", "ON"), "+OK\r\n")
	const push = ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"

	// Another client's read finds the key expired.
	w.do(cmd("SET", "k", "v", "EX", "100"), "+OK\r\n")
	c.do(cmd("GET", "k"), "$1\r\nv\r\n")
	skew.Store(int64(time.Hour))
	w.do(cmd("GET", "k"), "$-1\r\n")
	c.expect(push)

	// The tracking client's own read finds it expired (the key is no
	// longer tracked, so the SET sends nothing). The clock is set back
	// first: the server computes an EX from its own clock, not the
	// database's.
	skew.Store(0)
	w.do(cmd("SET", "k", "v", "EX", "100"), "+OK\r\n")
	c.do(cmd("GET", "k"), "$1\r\nv\r\n")
	skew.Store(int64(time.Hour))
	c.do(cmd("GET", "k"), "_\r\n")
	c.expect(push)
	c.do(cmd("PING"), "+PONG\r\n")
}

// TestRueidisExpiredInvalidation: rueidis caches a key with a TTL; once a
// read finds it expired, the invalidation push arrives. The key expires
// when the database's clock is moved past its TTL: a real short TTL could
// run out before the cached read on a slow machine.
func TestRueidisExpiredInvalidation(t *testing.T) {
	var skew atomic.Int64 // the database's clock runs ahead by this much
	ts := startServerOpts(t, &caskade.Options{Sync: caskade.SyncNone, ExpiryPeriod: -1,
		Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	ctx := context.Background()
	cli, inval := rueidisCaching(t, ts.addr)
	other := ts.goRedis(nil)
	if err := other.Set(ctx, "k", "v", 100*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	r := cli.DoCache(ctx, cli.B().Get().Key("k").Cache(), time.Minute)
	if v, err := r.ToString(); err != nil || v != "v" {
		t.Fatalf("cached GET = %q, %v", v, err)
	}
	skew.Store(int64(time.Hour))
	if _, err := other.Get(ctx, "k").Result(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("GET of the expired key: %v, want nil", err)
	}
	select {
	case k := <-inval:
		if k != "k" {
			t.Fatalf("invalidation of %q", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no invalidation of the expired key")
	}
}

// rueidisCaching returns a rueidis client with client-side caching on (its
// default), closed when the test ends, and a channel of the keys its
// invalidation pushes name.
func rueidisCaching(t *testing.T, addr string) (rueidis.Client, <-chan string) {
	t.Helper()
	inval := make(chan string, 100)
	cli, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{addr},
		OnInvalidations: func(ms []rueidis.RedisMessage) {
			for _, m := range ms {
				if k, err := m.ToString(); err == nil {
					inval <- k
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cli.Close)
	return cli, inval
}

// TestTrackingBcastPrefixes checks BCAST prefixes as Redis keeps them: an
// overlap (one prefix starting another, or a repeat) within the command or
// with the client's prefixes is refused with Redis's error in Redis's
// order of checks, CLIENT TRACKINGINFO lists them sorted, and ON BCAST
// without PREFIX adds the prefix "" (every key) to those already set.
func TestTrackingBcastPrefixes(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.hello3()
	const tail = ". Prefixes for a single client must not overlap.\r\n"
	for _, tc := range []struct{ args []string }{
		{[]string{"a", "a"}}, {[]string{"ab", "a"}}, {[]string{"a", "b", "ab"}},
	} {
		args := []string{"CLIENT", "TRACKING", "ON", "BCAST"}
		for _, p := range tc.args {
			args = append(args, "PREFIX", p)
		}
		want := map[string]string{
			"a a":    "-ERR Prefix 'a' overlaps with another provided prefix 'a'" + tail,
			"ab a":   "-ERR Prefix 'ab' overlaps with another provided prefix 'a'" + tail,
			"a b ab": "-ERR Prefix 'a' overlaps with another provided prefix 'ab'" + tail,
		}[strings.Join(tc.args, " ")]
		c.do(cmd(args...), want)
	}
	c.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "u:", "PREFIX", "b"), "+OK\r\n")
	c.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "u:"), "-ERR Prefix 'u:' overlaps with an existing prefix 'u:'"+tail)
	c.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x", "PREFIX", "u:1"), "-ERR Prefix 'u:1' overlaps with an existing prefix 'u:'"+tail)
	c.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"), "+OK\r\n")
	const info = "%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n"
	c.do(cmd("CLIENT", "TRACKINGINFO"), info+"*3\r\n$1\r\na\r\n$1\r\nb\r\n$2\r\nu:\r\n")
	w := ts.dial()
	// INFO counts distinct prefixes, as Redis's prefix table does.
	o := ts.dial()
	o.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a"), "+OK\r\n")
	w.send(cmd("INFO", "stats"))
	w.readLine() // the bulk header
	total := ""
	for line := w.readLine(); line != "\r\n"; line = w.readLine() {
		if v, ok := strings.CutPrefix(line, "tracking_total_prefixes:"); ok {
			total = v
		}
	}
	if total != "3\r\n" {
		t.Fatalf("tracking_total_prefixes %q, want 3", total)
	}
	// Without PREFIX: every key, besides the prefixes already set.
	c.do(cmd("CLIENT", "TRACKING", "ON", "BCAST"), "+OK\r\n")
	c.do(cmd("CLIENT", "TRACKINGINFO"), info+"*4\r\n$0\r\n\r\n$1\r\na\r\n$1\r\nb\r\n$2\r\nu:\r\n")
	w.do(cmd("SET", "zzz", "1"), "+OK\r\n")
	c.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nzzz\r\n")
	c.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "q"), "-ERR Prefix 'q' overlaps with an existing prefix ''"+tail)
}

// TestTrackingTableMaxKeys checks that the tracking table holds at most
// tracking-table-max-keys keys, as in Redis: a tracking client reading
// ever new keys (missing ones too) used to grow it without limit. The
// client is told to drop each key the table forgets.
func TestTrackingTableMaxKeys(t *testing.T) {
	ts := startServer(t, nil)
	c, w := ts.dial(), ts.dial()
	w.do(cmd("CONFIG", "GET", "tracking-table-max-keys"), "*2\r\n$23\r\ntracking-table-max-keys\r\n$7\r\n1000000\r\n")
	w.do(cmd("CONFIG", "SET", "tracking-table-max-keys", "100"), "+OK\r\n")
	c.hello3()
	c.do(cmd("CLIENT", "TRACKING", "ON"), "+OK\r\n")
	const n = 300
	args := []string{"MGET"}
	for i := range n {
		args = append(args, fmt.Sprintf("k%d", i))
	}
	c.send(cmd(args...))
	// The invalidations of the forgotten keys come before or after the
	// reply.
	evicted, replied := 0, false
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for evicted < n-100 || !replied {
		r, err := readRawReply(c.br, nil)
		if err != nil {
			t.Fatalf("after %d invalidations: %v", evicted, err)
		}
		switch {
		case strings.HasPrefix(string(r), ">2\r\n$10\r\ninvalidate\r\n*1\r\n"):
			evicted++
		case !replied && strings.HasPrefix(string(r), fmt.Sprintf("*%d\r\n", n)):
			replied = true
		default:
			t.Fatalf("unexpected reply %.60q", r)
		}
	}
	w.send(cmd("INFO", "stats"))
	r, err := readRawReply(w.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r), "tracking_total_keys:100\r\n") {
		t.Errorf("the tracking table does not hold 100 keys: %s", r)
	}
}

// TestTrackingDisconnectForgetsInBatches checks that the keys a tracking
// client leaves in the table when it goes are forgotten a batch at a time:
// the whole table was scanned under the lock that every commit takes, so
// that a client which had tracked a million keys stalled every write of
// the server for a second when it disconnected.
func TestTrackingDisconnectForgetsInBatches(t *testing.T) {
	ts := startServer(t, nil)
	c, w := ts.dial(), ts.dial()
	c.hello3()
	c.do(cmd("CLIENT", "TRACKING", "ON"), "+OK\r\n")
	w.hello3()
	w.do(cmd("CLIENT", "TRACKING", "ON"), "+OK\r\n")
	w.do(cmd("GET", "kept"), "_\r\n")
	const n, batch = 10240, 1024 // forgetBatch
	args := []string{"MGET"}
	for i := range n {
		args = append(args, fmt.Sprintf("k%d", i))
	}
	c.send(cmd(args...))
	if r, err := readRawReply(c.br, nil); err != nil || !strings.HasPrefix(string(r), fmt.Sprintf("*%d\r\n", n)) {
		t.Fatalf("MGET: %.40q %v", r, err)
	}
	c.nc.Close()
	tr := ts.srv.track
	waitFor(t, "the closed client's keys to be forgotten", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.keys) == 1 && tr.forgetting.Load() == 0
	})
	tr.mu.Lock()
	held := tr.forgetHeld
	tr.mu.Unlock()
	if held > batch {
		t.Fatalf("one hold of the tracking lock looked at %d keys", held)
	}
	// The other client's key is still tracked.
	ts.dial().do(cmd("SET", "kept", "1"), "+OK\r\n")
	w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if r, err := readRawReply(w.br, nil); err != nil || string(r) != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nkept\r\n" {
		t.Fatalf("invalidation of kept: %q %v", r, err)
	}
}

// TestTrackingBcastScales checks that finding the BCAST clients a changed
// key concerns costs what Redis's prefix table makes it cost: a walk down
// the key's bytes, not a look at every prefix of every BCAST client (a
// write cost O(clients x prefixes)). The prefixes looked at are counted,
// not timed. Overlapping prefixes of different clients all match.
func TestTrackingBcastScales(t *testing.T) {
	ts := startServer(t, nil)
	const n = 100
	subs := make([]*rawConn, n)
	for i := range subs {
		subs[i] = ts.dial()
		subs[i].hello3()
		subs[i].do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", fmt.Sprintf("p%d:", i), "PREFIX", fmt.Sprintf("q%d:", i)), "+OK\r\n")
	}
	// Prefixes that overlap across clients: "u", "us", "user:1" and "".
	over := map[string]*rawConn{}
	for _, p := range []string{"u", "us", "user:1", ""} {
		c := ts.dial()
		c.hello3()
		c.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", p), "+OK\r\n")
		over[p] = c
	}
	w := ts.dial()
	// Served clients were added under the server's lock, after Serve set
	// the tracker up.
	ts.srv.mu.Lock()
	tr := ts.srv.track
	ts.srv.mu.Unlock()
	inval := func(keys ...string) string {
		s := ">2\r\n$10\r\ninvalidate\r\n*" + itoa(int64(len(keys))) + "\r\n"
		for _, k := range keys {
			s += "$" + itoa(int64(len(k))) + "\r\n" + k + "\r\n"
		}
		return s
	}
	tr.mu.Lock()
	before := tr.probes
	tr.mu.Unlock()
	w.do(cmd("SET", "q42:x", "1"), "+OK\r\n")
	tr.mu.Lock()
	probes := tr.probes - before
	tr.mu.Unlock()
	if probes > len("q42:x")+1 {
		t.Fatalf("a write of one key looked at %d prefixes among %d clients", probes, n)
	}
	subs[42].expect(inval("q42:x"))
	over[""].expect(inval("q42:x"))
	w.do(cmd("MSET", "user:12", "1", "p7:", "2", "usa", "3"), "+OK\r\n")
	subs[7].expect(inval("p7:"))
	over["u"].expect(inval("user:12", "usa"))
	over["us"].expect(inval("user:12", "usa"))
	over["user:1"].expect(inval("user:12"))
	over[""].expect(inval("user:12", "p7:", "usa"))
	// One client going leaves the others' overlapping prefixes matching.
	over["us"].do(cmd("CLIENT", "TRACKING", "OFF"), "+OK\r\n")
	w.do(cmd("SET", "user:1", "x"), "+OK\r\n")
	over["u"].expect(inval("user:1"))
	over["user:1"].expect(inval("user:1"))
	over[""].expect(inval("user:1"))
	// Nothing else was sent: a PING's reply comes next on every client.
	for _, c := range append(subs, over["u"], over["us"], over["user:1"], over[""]) {
		c.do(cmd("PING"), "+PONG\r\n")
	}
	w.send(cmd("INFO", "stats"))
	r, err := readRawReply(w.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("tracking_total_prefixes:%d\r\n", 2*n+3); !strings.Contains(string(r), want) {
		t.Errorf("INFO does not say %q: %s", want, r)
	}
}

// TestTrackingRedirectScales checks that an invalidation for a client
// that REDIRECTs finds its target by id in one lookup: it looked at every
// connected client, under the tracker's lock, so that a write read by N
// redirecting clients cost O(N^2).
func TestTrackingRedirectScales(t *testing.T) {
	ts := startServer(t, nil)
	target := ts.dial()
	target.hello3()
	target.do(cmd("CLIENT", "ID"), "")
	id := strings.TrimSpace(strings.TrimPrefix(target.readLine(), ":"))
	const n = 100
	for range n {
		c := ts.dial()
		c.do(cmd("CLIENT", "TRACKING", "ON", "REDIRECT", id), "+OK\r\n")
		c.do(cmd("GET", "k"), "$-1\r\n")
	}
	w := ts.dial()
	w.do(cmd("PING"), "+PONG\r\n")
	ts.srv.mu.Lock()
	before := ts.srv.idProbes
	ts.srv.mu.Unlock()
	w.do(cmd("SET", "k", "1"), "+OK\r\n")
	for range n {
		target.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n")
	}
	ts.srv.mu.Lock()
	probes := ts.srv.idProbes - before
	ts.srv.mu.Unlock()
	if probes > n {
		t.Fatalf("%d invalidations looked at %d clients to find their target", n, probes)
	}
	target.do(cmd("PING"), "+PONG\r\n")
}

// TestTrackingNoloopScales checks that a large write by a NOLOOP client
// costs work in proportion to its keys under the tracker's lock (a scan
// of the keys it wrote once made an MSET of n keys cost n^2; telling its
// own keys now takes a map lookup per key, not counted in probes); the
// other clients hear of every key.
func TestTrackingNoloopScales(t *testing.T) {
	ts := startServer(t, nil)
	me, other := ts.dial(), ts.dial()
	for _, c := range []*rawConn{me, other} {
		c.hello3()
	}
	me.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"), "+OK\r\n")
	other.do(cmd("CLIENT", "TRACKING", "ON", "BCAST"), "+OK\r\n")
	ts.srv.mu.Lock()
	tr := ts.srv.track
	ts.srv.mu.Unlock()
	const n = 1000 // maxInvalidationKeys: not a flush of the whole cache
	args := []string{"MSET"}
	want := ">2\r\n$10\r\ninvalidate\r\n*" + itoa(n) + "\r\n"
	for i := range n {
		k := fmt.Sprintf("k%d", i)
		args = append(args, k, "v")
		want += "$" + itoa(int64(len(k))) + "\r\n" + k + "\r\n"
	}
	tr.mu.Lock()
	before := tr.probes
	tr.mu.Unlock()
	me.do(cmd(args...), "+OK\r\n")
	other.expect(want)
	tr.mu.Lock()
	probes := tr.probes - before
	tr.mu.Unlock()
	// Each key: a walk of the prefix tree (the root).
	if probes > 2*n {
		t.Fatalf("telling the NOLOOP client's own %d keys took %d probes", n, probes)
	}
	other.do(cmd("SET", "y", "1"), "+OK\r\n")
	// The first push the NOLOOP client gets is of the other's write.
	me.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\ny\r\n")
	other.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\ny\r\n")
	me.do(cmd("PING"), "+PONG\r\n")
}

// TestTrackingNoloopExec checks that NOLOOP covers the writes of EXEC as
// those of a command, as in Redis: they came back to the client that
// made them. In the default mode, its own write forgets the key as
// Redis's does, so that a later change by another client is not sent
// either.
func TestTrackingNoloopExec(t *testing.T) {
	ts := startServer(t, nil)
	bcast, dflt, other := ts.dial(), ts.dial(), ts.dial()
	for _, c := range []*rawConn{bcast, dflt, other} {
		c.hello3()
	}
	bcast.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"), "+OK\r\n")
	dflt.do(cmd("CLIENT", "TRACKING", "ON", "NOLOOP"), "+OK\r\n")
	dflt.do(cmd("GET", "k"), "_\r\n")
	dflt.do(cmd("GET", "j"), "_\r\n")
	for _, c := range []*rawConn{dflt, bcast} {
		c.do(cmd("MULTI"), "+OK\r\n")
		c.do(cmd("SET", "k", "1"), "+QUEUED\r\n")
		c.do(cmd("EXEC"), "*1\r\n+OK\r\n")
		if c == dflt {
			bcast.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n")
		}
	}
	other.do(cmd("SET", "k", "2"), "+OK\r\n")
	other.do(cmd("SET", "j", "2"), "+OK\r\n")
	bcast.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n")
	bcast.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nj\r\n")
	// The first push the default-mode client gets is of j, not of k.
	dflt.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nj\r\n")
	for _, c := range []*rawConn{bcast, dflt} {
		c.do(cmd("PING"), "+PONG\r\n")
	}
}

// clientOf returns the server's client behind conn.
func (ts *testServer) clientOf(conn *rawConn) *client {
	ts.t.Helper()
	conn.send(cmd("CLIENT", "ID"))
	line := conn.readLine()
	id, err := strconv.ParseInt(strings.TrimSpace(line[1:]), 10, 64)
	if err != nil {
		ts.t.Fatalf("CLIENT ID: %q", line)
	}
	c := ts.srv.clientByID(id)
	if c == nil {
		ts.t.Fatalf("no client %d", id)
	}
	return c
}

// originName names a commit's origin for a test failure.
func originName(o any) string {
	if c, ok := o.(*client); ok {
		return "client " + itoa(c.id)
	}
	return fmt.Sprint(o)
}

// TestTrackingNoloopGroup checks that a NOLOOP client is spared the
// invalidation of a key only if every write of it in the group commit
// was its own. The invalidations of a group go out together; when the
// client's write of k and another's shared a group, with the other's
// last, the client was spared (its write was in flight) and kept a value
// that was no longer k's for good. WriteBatches puts the writes in one
// group, in order, each tagged as the Redis front end tags a client's
// commits; TestTrackingNoloopOrigins checks that it does.
func TestTrackingNoloopGroup(t *testing.T) {
	modes := []struct {
		name  string
		bcast bool
		resp2 bool // the tracking client speaks RESP2 and redirects to a RESP3 connection
	}{
		{name: "resp3"},
		{name: "resp2-redirect", resp2: true},
		{name: "bcast", bcast: true},
		{name: "bcast-resp2-redirect", bcast: true, resp2: true},
	}
	const (
		self   = "A"  // the NOLOOP client
		other  = "B"  // a writer without an origin: not NOLOOP, or another protocol
		noloop = "B'" // another NOLOOP client
	)
	groups := []struct {
		writers []string // of k, in commit order
		told    bool
	}{
		{[]string{self, other}, true}, // the case that lost the invalidation
		{[]string{self, noloop}, true},
		{[]string{other, self}, true},
		{[]string{self, other, self}, true},
		{[]string{other}, true},
		{[]string{self}, false},
		{[]string{self, self}, false},
	}
	const push = ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"
	for _, m := range modes {
		for _, g := range groups {
			t.Run(m.name+"/"+strings.Join(g.writers, ","), func(t *testing.T) {
				ts := startServer(t, nil)
				a, b := ts.dial(), ts.dial()
				b.do(cmd("CLIENT", "TRACKING", "ON", "NOLOOP"), "+OK\r\n")
				recv := a
				args := []string{"CLIENT", "TRACKING", "ON", "NOLOOP"}
				if m.resp2 {
					recv = ts.dial()
					recv.hello3()
					args = append(args, "REDIRECT", itoa(ts.clientOf(recv).id))
				} else {
					a.hello3()
				}
				if m.bcast {
					args = append(args, "BCAST")
				}
				a.do(cmd(args...), "+OK\r\n")
				if !m.bcast {
					absent := "_\r\n"
					if m.resp2 {
						absent = "$-1\r\n"
					}
					a.do(cmd("GET", "k"), absent)
				}
				origins := map[string]any{self: ts.clientOf(a), other: nil, noloop: ts.clientOf(b)}
				var bs []*caskade.Batch
				for i, w := range g.writers {
					b := new(caskade.Batch)
					b.Set([]byte("k"), []byte(w+itoa(int64(i))))
					b.SetOrigin(origins[w])
					bs = append(bs, b)
				}
				for i, err := range ts.db.WriteBatches(bs) {
					if err != nil {
						t.Fatalf("batch %d: %v", i, err)
					}
				}
				// The group's invalidations are queued before WriteBatches
				// returns, so they come before PING's reply.
				recv.send(cmd("PING"))
				switch line := recv.readLine(); {
				case g.told && line != push[:4]:
					t.Fatalf("got %q, want an invalidation of k", line)
				case g.told:
					recv.expect(push[4:] + "+PONG\r\n")
				case line != "+PONG\r\n":
					t.Fatalf("got %q, want no invalidation", line)
				}
			})
		}
	}
}

// TestTrackingNoloopOrigins checks that every way a Redis client writes
// tags its commit with the client if it is NOLOOP (so that the tracker
// can tell its writes from the others' in a group commit), and with
// nothing otherwise; a range deletion is never the client's own, as
// Redis sends FLUSHALL's invalidation to every tracking client.
func TestTrackingNoloopOrigins(t *testing.T) {
	ts := startServer(t, nil)
	var mu sync.Mutex
	seen := map[string][]any{} // key -> the origins of its changes
	cancel := ts.db.SubscribeOrigins(func(changed, expired [][]byte, origins []any) {
		mu.Lock()
		defer mu.Unlock()
		for i, k := range append(changed[:len(changed):len(changed)], expired...) {
			var o any
			if origins != nil {
				o = origins[i]
			}
			seen[string(k)] = append(seen[string(k)], o)
		}
	})
	t.Cleanup(cancel)
	nl, tr, plain := ts.dial(), ts.dial(), ts.dial()
	for _, c := range []*rawConn{nl, tr} {
		c.hello3()
	}
	nl.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP", "PREFIX", "none:"), "+OK\r\n")
	tr.do(cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "none:"), "+OK\r\n")
	conns := []struct {
		name   string
		conn   *rawConn
		origin any
	}{
		{"noloop", nl, ts.clientOf(nl)},
		{"tracking", tr, nil},
		{"plain", plain, nil},
	}
	writes := []struct {
		name  string
		cmds  [][]string
		reply []string // of each of cmds
		keys  []string
		own   bool // a write of the client's own (false: a range deletion)
	}{
		{"set", [][]string{{"SET", "k", "v"}}, []string{"+OK\r\n"}, []string{"k"}, true},
		{"mset", [][]string{{"MSET", "k", "v", "j", "w"}}, []string{"+OK\r\n"}, []string{"k", "j"}, true},
		{"incr", [][]string{{"INCR", "n"}}, []string{":1\r\n"}, []string{"n"}, true},
		{"del", [][]string{{"SET", "d", "v"}, {"DEL", "d"}}, []string{"+OK\r\n", ":1\r\n"}, []string{"d"}, true},
		{"select", [][]string{{"SELECT", "2"}, {"SET", "k", "v"}, {"SELECT", "0"}}, []string{"+OK\r\n", "+OK\r\n", "+OK\r\n"}, []string{"\xff\x02k"}, true},
		{"exec", [][]string{{"MULTI"}, {"SET", "k", "v"}, {"INCR", "n"}, {"EXEC"}},
			[]string{"+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n+OK\r\n:1\r\n"}, []string{"k", "n"}, true},
		{"csk.atomic", [][]string{{"CSK.ATOMIC", "ADD", "a", "\x01\x00\x00\x00\x00\x00\x00\x00"}}, []string{"+OK\r\n"}, []string{"a"}, true},
		{"csk.commit", [][]string{{"CSK.BEGIN"}, {"SET", "k", "v"}, {"INCR", "n"}, {"CSK.COMMIT"}},
			[]string{"+OK\r\n", "+OK\r\n", ":1\r\n", "+OK\r\n"}, []string{"k", "n"}, true},
		{"flushdb", [][]string{{"SET", "f", "v"}, {"FLUSHDB"}}, []string{"+OK\r\n", "+OK\r\n"}, []string{"f"}, false},
		{"csk.clearrange", [][]string{{"SET", "r", "v"}, {"CSK.CLEARRANGE", "FROM", "r", "TO", "s"}}, []string{"+OK\r\n", "+OK\r\n"}, []string{"r"}, false},
		{"csk.commit-clearrange", [][]string{{"SET", "r", "v"}, {"CSK.BEGIN"}, {"CSK.CLEARRANGE", "FROM", "r", "TO", "s"}, {"CSK.COMMIT"}},
			[]string{"+OK\r\n", "+OK\r\n", "+OK\r\n", "+OK\r\n"}, []string{"r"}, false},
	}
	for _, c := range conns {
		for _, w := range writes {
			t.Run(c.name+"/"+w.name, func(t *testing.T) {
				plain.do(cmd("FLUSHALL"), "+OK\r\n") // its changes are heard before its reply
				mu.Lock()
				clear(seen)
				mu.Unlock()
				for i, args := range w.cmds {
					c.conn.do(cmd(args...), w.reply[i])
				}
				want := c.origin
				if !w.own {
					want = nil
				}
				mu.Lock()
				defer mu.Unlock()
				for _, k := range w.keys {
					os := seen[k]
					if len(os) == 0 {
						t.Fatalf("no change of %q seen", k)
					}
					if last := os[len(os)-1]; last != want {
						t.Fatalf("the last change of %q came from %s, want %s", k, originName(last), originName(want))
					}
				}
			})
		}
	}
}
