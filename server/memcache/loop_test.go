package memcache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/internal/wiretest"
)

// onLoop reports whether the server's only connection is served by an
// event loop.
func onLoop(t *testing.T, s *Server) bool {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) != 1 {
		t.Fatalf("%d connections, want 1", len(s.conns))
	}
	for c := range s.conns {
		return c.looped()
	}
	return false
}

// TestLoopLargeValues checks that values larger than the read buffer,
// arriving in pieces, are stored whole by the loop (whose buffer grows
// for them and shrinks back), and that a data block over the item size
// limit is refused and skipped.
func TestLoopLargeValues(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServer(t)
	c := ts.dial(t)
	for _, n := range []int{100, 20 << 10, 300 << 10, DefaultMaxItemSize} {
		v := strings.Repeat(string(rune('a'+n%26)), n)
		req := fmt.Sprintf("set k%d 0 0 %d\r\n%s\r\n", n, n, v)
		// In pieces, so that the loop sees the command arrive partly.
		for i := 0; i < len(req); i += 7000 {
			c.send(req[i:min(i+7000, len(req))])
		}
		if l := c.line(); l != "STORED\r\n" {
			t.Fatalf("set of %d bytes: %q", n, l)
		}
		c.do(fmt.Sprintf("get k%d\r\n", n), fmt.Sprintf("VALUE k%d 0 %d\r\n%s\r\nEND\r\n", n, n, v))
	}
	if !onLoop(t, ts.s) {
		t.Error("a value within the item size limit moved the connection off its loop")
	}
	big := strings.Repeat("x", DefaultMaxItemSize+1)
	c.do(fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", len(big), big), "SERVER_ERROR object too large for cache\r\n")
	c.do("get big\r\n", "END\r\n")
}

// TestLoopSlowReader checks that a connection that does not read its
// replies holds up neither the other connections of its loop nor its own
// replies, which arrive whole and in order once it reads.
func TestLoopSlowReader(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServer(t, func(s *Server) { s.EventLoops = 1 })
	other, v := storeBig(t, ts, 512<<10)
	slow := ts.dial(t)
	const n = 64 // 32 MiB of replies
	slow.send(strings.Repeat("get big\r\nmn\r\n", n))
	for range 100 {
		other.do("version\r\n", "VERSION "+MemcachedVersion+"\r\n")
	}
	want := fmt.Sprintf("VALUE big 0 %d\r\n%s\r\nEND\r\nMN\r\n", len(v), v)
	for i := range n {
		if got := slow.read(len(want)); got != want {
			t.Fatalf("reply %d differs", i)
		}
	}
}

// TestLoopBackloggedConnEnds checks that a connection whose replies are
// queued because it does not read them, and from which the loop therefore
// reads nothing, still ends when its peer goes away and when the server
// shuts down: it used to stay for good, holding its queued replies, its
// socket and its place under MaxConns, and Shutdown waited for it forever.
func TestLoopBackloggedConnEnds(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServer(t, func(s *Server) { s.EventLoops = 1 })
	storeBig(t, ts, 256<<10) // what slow asks for
	// slow asks for far more than the socket buffers hold and reads none
	// of it; it returns once the server has queued some of the replies.
	slow := func() (*rawClient, *conn) {
		t.Helper()
		c := ts.dial(t)
		c.c.(*net.TCPConn).SetReadBuffer(4096)
		go c.c.Write([]byte(strings.Repeat("get big\r\n", 128))) // 32 MiB of replies
		var sc *conn
		waitFor(t, "the slow connection's replies to back up", func() bool {
			ts.s.mu.Lock()
			defer ts.s.mu.Unlock()
			for x := range ts.s.conns {
				if x.lc != nil && x.lc.Backlogged() {
					sc = x
					return true
				}
			}
			return false
		})
		return c, sc
	}
	c, sc := slow()
	c.c.(*net.TCPConn).SetLinger(0) // closing resets the connection
	c.c.Close()
	waitFor(t, "the connection to end after its peer reset it", func() bool {
		ts.s.mu.Lock()
		defer ts.s.mu.Unlock()
		_, ok := ts.s.conns[sc]
		return !ok
	})
	if err := sc.nc.SetDeadline(time.Time{}); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the reset connection's socket is not closed (%v)", err)
	}

	// Shutdown: a connection that still does not read holds it up until
	// the deadline, when Shutdown closes it.
	slow()
	wiretest.ShutdownAtDeadline(t, ts.s.Shutdown)
}

// TestLoopSyncAlways checks that under SyncAlways reads stay on the loop,
// that a write moves its connection off it, and that concurrent writers
// through gomemcache all land.
func TestLoopSyncAlways(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	db, err := caskade.Open(t.TempDir(), &caskade.Options{Sync: caskade.SyncAlways, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerDB(t, db, false)
	c := ts.dial(t)
	c.do("get a\r\n", "END\r\n")
	if !onLoop(t, ts.s) {
		t.Fatal("a reading connection is not on the loop")
	}
	c.do("set a 0 0 1\r\nx\r\nset b 0 0 1 noreply\r\ny\r\nget a b\r\n", "STORED\r\nVALUE a 0 1\r\nx\r\nVALUE b 0 1\r\ny\r\nEND\r\n")
	if onLoop(t, ts.s) {
		t.Fatal("a writing connection is still on the loop under SyncAlways")
	}
	c.c.Close()
	mc := memcache.New(ts.addr)
	mc.MaxIdleConns = 16
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if err := mc.Set(&memcache.Item{Key: fmt.Sprintf("g%d-%d", g, i), Value: []byte("v")}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for g := range 16 {
		for i := range 20 {
			if _, err := mc.Get(fmt.Sprintf("g%d-%d", g, i)); err != nil {
				t.Fatalf("g%d-%d: %v", g, i, err)
			}
		}
	}
}

// TestLoopCloseConns checks that Close ends idle connections on a loop.
func TestLoopCloseConns(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServer(t)
	c := ts.dial(t)
	c.do("version\r\n", "VERSION "+MemcachedVersion+"\r\n")
	if err := ts.s.Close(); err != nil {
		t.Fatal(err)
	}
	c.expectClosed("")
}

// TestHalfClose checks that a client that sends its requests and then
// shuts down its side of the connection gets every reply and then the
// connection closed, as from memcached, also when the end of its input
// comes in the same event as its last bytes.
func TestHalfClose(t *testing.T) {
	for _, n := range []int{1, 3000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ts := startServer(t)
			var req, want strings.Builder
			for i := range n {
				fmt.Fprintf(&req, "set k%d 0 0 1\r\nx\r\nget k%d\r\n", i, i)
				fmt.Fprintf(&want, "STORED\r\nVALUE k%d 0 1\r\nx\r\nEND\r\n", i)
			}
			wiretest.Exchange(t, ts.addr, rand.New(rand.NewPCG(uint64(n), 1)), []byte(req.String()), want.String(), true, "client")
		})
	}
}

// TestLoopFragmentedInput sends random scripts of requests to clients on
// one event loop in random fragments, from several connections at once,
// and checks every reply byte for byte against a model. Half the clients
// then shut down their side and must see every reply and then the close;
// some scripts hold values larger than the loop's first read buffer. The
// scripts mix the text and meta protocols.
func TestLoopFragmentedInput(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	for _, policy := range []caskade.SyncPolicy{caskade.SyncNone, caskade.SyncAlways} {
		t.Run(policy.String(), func(t *testing.T) {
			db, err := caskade.Open(t.TempDir(), &caskade.Options{Sync: policy, MergeInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			ts := startServerDB(t, db, false, func(s *Server) { s.EventLoops = 1 })
			wiretest.Clients(t, ts.addr, 6, func(r *rand.Rand, g int) ([]byte, string) {
				return memcacheScript(r, g, g%3 == 2)
			})
		})
	}
}

// memcacheScript returns a random script of requests for client g with
// the replies a model expects; with big, some values are larger than the
// loop's first read buffer.
func memcacheScript(r *rand.Rand, g int, big bool) (script []byte, want string) {
	var s, w strings.Builder
	model := map[string]string{}
	for range 200 {
		k := fmt.Sprintf("f%d:%d", g, r.IntN(5))
		switch op := r.IntN(13); {
		case op < 3:
			v := strings.Repeat(string(rune('a'+r.IntN(26))), 1+r.IntN(30))
			if big && r.IntN(15) == 0 {
				v = strings.Repeat("B", 20000+r.IntN(50000))
			}
			if r.IntN(3) == 0 {
				fmt.Fprintf(&s, "set %s 0 0 %d noreply\r\n%s\r\n", k, len(v), v)
			} else {
				fmt.Fprintf(&s, "set %s 0 0 %d\r\n%s\r\n", k, len(v), v)
				w.WriteString("STORED\r\n")
			}
			model[k] = v
		case op < 6:
			fmt.Fprintf(&s, "get %s\r\n", k)
			if v, ok := model[k]; ok {
				fmt.Fprintf(&w, "VALUE %s 0 %d\r\n%s\r\n", k, len(v), v)
			}
			w.WriteString("END\r\n")
		case op < 7:
			fmt.Fprintf(&s, "append %s 0 0 2\r\nxy\r\n", k)
			if v, ok := model[k]; ok {
				model[k] = v + "xy"
				w.WriteString("STORED\r\n")
			} else {
				w.WriteString("NOT_STORED\r\n")
			}
		case op < 8:
			fmt.Fprintf(&s, "delete %s\r\n", k)
			if _, ok := model[k]; ok {
				w.WriteString("DELETED\r\n")
			} else {
				w.WriteString("NOT_FOUND\r\n")
			}
			delete(model, k)
		case op < 10:
			c := fmt.Sprintf("f%d:n", g)
			if _, ok := model[c]; !ok {
				fmt.Fprintf(&s, "set %s 0 0 1\r\n0\r\n", c)
				w.WriteString("STORED\r\n")
				model[c] = "0"
			}
			n, _ := strconv.Atoi(model[c])
			model[c] = strconv.Itoa(n + 1)
			fmt.Fprintf(&s, "incr %s 1\r\n", c)
			fmt.Fprintf(&w, "%d\r\n", n+1)
		case op < 11:
			// The meta protocol: a set, then a get or a delete.
			v := strings.Repeat(string(rune('A'+r.IntN(26))), 1+r.IntN(40))
			fmt.Fprintf(&s, "ms %s %d\r\n%s\r\n", k, len(v), v)
			w.WriteString("HD\r\n")
			model[k] = v
			if r.IntN(2) == 0 {
				fmt.Fprintf(&s, "mg %s v\r\n", k)
				fmt.Fprintf(&w, "VA %d\r\n%s\r\n", len(v), v)
			} else {
				fmt.Fprintf(&s, "md %s\r\nmg %s v\r\n", k, k)
				w.WriteString("HD\r\nEN\r\n")
				delete(model, k)
			}
		default:
			s.WriteString("mn\r\n")
			w.WriteString("MN\r\n")
		}
	}
	return []byte(s.String()), w.String()
}

// storeBig stores a value of size bytes under the key big through a new
// connection, and returns the connection and the value.
func storeBig(t *testing.T, ts *testServer, size int) (*rawClient, string) {
	t.Helper()
	v := strings.Repeat("v", size)
	c := ts.dial(t)
	c.send(fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", len(v), v))
	if l := c.line(); l != "STORED\r\n" {
		t.Fatal(l)
	}
	return c, v
}

// TestLoopMultiGetSlowReader checks that a multi-get whose client does not
// read its reply does not pile the whole reply up on the event loop: one
// get line of a few hundred bytes naming many large values (or a cursor
// page of them) made the loop queue every item, as large as the keys times
// the item size (GiBs), where memcached holds only references to them.
// The loop now stops after an item once the client falls behind and the
// connection's goroutine finishes the reply, whole and in order.
func TestLoopMultiGetSlowReader(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServer(t, func(s *Server) { s.EventLoops = 1 })
	const size, n = 256 << 10, 40 // 20 MiB of replies in all
	_, v := storeBig(t, ts, size)
	w := ts.dial(t)
	var want strings.Builder
	for i := range n {
		w.send(fmt.Sprintf("set c:%02d 0 0 %d\r\n%s\r\n", i, size, v))
		if l := w.line(); l != "STORED\r\n" {
			t.Fatal(l)
		}
		fmt.Fprintf(&want, "VALUE c:%02d 0 %d\r\n%s\r\n", i, size, v)
	}
	for range n {
		fmt.Fprintf(&want, "VALUE big 0 %d\r\n%s\r\n", size, v)
	}
	want.WriteString("END\r\nVERSION " + MemcachedVersion + "\r\n")
	w.c.Close()

	slow := ts.dial(t)
	slow.send("get ?type=cursor&prefix=c:&limit=100" + strings.Repeat(" big", n) + "\r\nversion\r\n")
	var sc *conn
	waitFor(t, "the slow connection's reply to back up", func() bool {
		ts.s.mu.Lock()
		defer ts.s.mu.Unlock()
		for x := range ts.s.conns {
			sc = x
		}
		return sc != nil && (!sc.looped() || sc.lc.Queued() > 4<<20)
	})
	if q := sc.lc.Queued(); q > 4<<20 {
		t.Fatalf("the loop queued %d bytes of one multi-get's reply", q)
	}
	if got := slow.read(want.Len()); got != want.String() {
		t.Fatal("the multi-get's reply differs")
	}
}
