package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/internal/wiretest"
	goredis "github.com/redis/go-redis/v9"
)

// onLoop reports whether the server's only client is served by an event
// loop.
func onLoop(t *testing.T, s *Server) bool {
	t.Helper()
	cs := s.allClients()
	if len(cs) != 1 {
		t.Fatalf("%d clients, want 1", len(cs))
	}
	return cs[0].looped()
}

// TestLoopBigCommand checks that a command bigger than the read buffer is
// read whole (by the goroutine the client then moves to).
func TestLoopBigCommand(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServer(t, nil)
	c := ts.dial()
	c.do(cmd("PING"), "+PONG\r\n")
	if !onLoop(t, ts.srv) {
		t.Fatal("a new TCP client is not on an event loop")
	}
	big := strings.Repeat("v", 1<<20)
	c.do(cmd("SET", "k", big)+cmd("STRLEN", "k"), "+OK\r\n:1048576\r\n")
	if onLoop(t, ts.srv) {
		t.Error("still on the loop after a command bigger than its buffer")
	}
	c.do(cmd("GET", "k"), fmt.Sprintf("$%d\r\n%s\r\n", len(big), big))
}

// TestLoopSlowReader checks that a client that does not read its replies
// holds up neither the other clients of its loop nor its own replies,
// which arrive whole and in order once it reads.
func TestLoopSlowReader(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServer(t, func(s *Server) { s.EventLoops = 1 })
	val := strings.Repeat("x", 256<<10)
	setup := ts.dial()
	setup.do(cmd("SET", "big", val), "+OK\r\n")
	slow := ts.dial()
	const n = 128 // 32 MiB of replies, far more than the socket buffers hold
	var req strings.Builder
	for i := range n {
		req.WriteString(cmd("GET", "big"))
		req.WriteString(cmd("ECHO", fmt.Sprint(i)))
	}
	go slow.nc.Write([]byte(req.String()))
	// The other client, on the same loop, is served meanwhile.
	for range 100 {
		setup.do(cmd("PING"), "+PONG\r\n")
	}
	slow.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	want := fmt.Sprintf("$%d\r\n%s\r\n", len(val), val)
	got := make([]byte, len(want))
	for i := range n {
		if _, err := io.ReadFull(slow.br, got); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if string(got) != want {
			t.Fatalf("reply %d is not the value", i)
		}
		slow.expect(fmt.Sprintf("$%d\r\n%d\r\n", len(fmt.Sprint(i)), i))
	}
	slow.do(cmd("PING"), "+PONG\r\n")
}

// TestLoopSyncAlways checks that under SyncAlways reads and blind writes
// stay on the loop (the writes of a turn are committed together by a
// goroutine while the loop goes on, and their clients wait for it), that
// another write moves its client off it (its fsync would stall the loop's
// other clients), and that concurrent writers all land.
func TestLoopSyncAlways(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServerOpts(t, &caskade.Options{Sync: caskade.SyncAlways})
	srv := ts.srv
	c := ts.dial()
	c.do(cmd("GET", "a"), "$-1\r\n")
	if !onLoop(t, srv) {
		t.Fatal("a reading client is not on the loop")
	}
	c.do(cmd("SET", "a", "1")+cmd("INCR", "n")+cmd("MSET", "b", "2", "c", "3"), "+OK\r\n:1\r\n+OK\r\n")
	// A read after blind writes in one pipeline waits for their commit.
	c.do(cmd("INCR", "n")+cmd("MGET", "a", "b", "c", "n"), ":2\r\n*4\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n2\r\n")
	if !onLoop(t, srv) {
		t.Fatal("a client of reads and blind writes is not on the loop")
	}
	c.do(cmd("SETNX", "a", "2"), ":0\r\n")
	if onLoop(t, srv) {
		t.Fatal("a client that wrote with SETNX is still on the loop under SyncAlways")
	}
	c.do(cmd("DEL", "n"), ":1\r\n")
	c.nc.Close()
	rdb := goredis.NewClient(&goredis.Options{Addr: ts.addr, PoolSize: 16})
	defer rdb.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if err := rdb.Incr(ctx, "n").Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n, err := rdb.Get(ctx, "n").Int(); err != nil || n != 800 {
		t.Fatalf("n = %d, %v; want 800", n, err)
	}
}

// TestLoopClientKill checks that CLIENT KILL and Shutdown end idle
// clients on a loop at once.
func TestLoopClientKill(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServer(t, nil)
	victim := ts.dial()
	victim.do(cmd("CLIENT", "ID"), "")
	id, err := victim.br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	killer := ts.dial()
	killer.do(cmd("CLIENT", "KILL", "ID", strings.TrimSpace(strings.TrimPrefix(id, ":"))), ":1\r\n")
	victim.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := victim.br.ReadByte(); err != io.EOF {
		t.Fatalf("killed client read %v, want EOF", err)
	}
	idle := ts.dial()
	idle.do(cmd("PING"), "+PONG\r\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with an idle client on a loop: %v", err)
	}
	idle.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle.br.ReadByte(); err != io.EOF {
		t.Fatalf("idle client read %v after Shutdown, want EOF", err)
	}
}

// TestLoopTurnCommits checks the writes that clients of one loop make in
// the same turns, committed together at each turn's end: every INCR of a
// shared counter gets its own result, and each client reads its own
// writes.
func TestLoopTurnCommits(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServer(t, func(s *Server) { s.EventLoops = 1 })
	const clients, rounds = 16, 200
	results := make(chan int64, clients*rounds)
	var wg sync.WaitGroup
	for g := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := goredis.NewClient(&goredis.Options{Addr: ts.addr, PoolSize: 1})
			defer rdb.Close()
			ctx := context.Background()
			for i := range rounds {
				key := fmt.Sprintf("k%d", g)
				var incr *goredis.IntCmd
				var get *goredis.StringCmd
				// The GET reads the last round's SET; the SET and INCR,
				// blind writes at the end of the input, wait for the
				// end of the turn.
				_, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
					get = p.Get(ctx, key)
					p.Set(ctx, key, i, 0)
					incr = p.Incr(ctx, "shared")
					return nil
				})
				if err != nil && (i > 0 || err != goredis.Nil) {
					t.Error(err)
					return
				}
				if v, _ := get.Int(); i > 0 && v != i-1 {
					t.Errorf("client %d read %d after writing %d", g, v, i-1)
					return
				}
				results <- incr.Val()
			}
		}()
	}
	wg.Wait()
	close(results)
	seen := map[int64]bool{}
	for r := range results {
		if r < 1 || r > clients*rounds || seen[r] {
			t.Fatalf("INCR result %d repeated or out of range", r)
		}
		seen[r] = true
	}
	if len(seen) != clients*rounds {
		t.Fatalf("%d distinct INCR results, want %d", len(seen), clients*rounds)
	}
}

// TestLoopSyncAlwaysPipelines runs, under SyncAlways, clients that
// pipeline random mixes of blind writes (committed by a goroutine per
// turn while their client waits), reads after them (which wait for that
// commit) and other writes (which move the client off its loop), each
// on keys of its own, and checks every reply against a model. Half the
// clients never send the other writes, and stay on the loop throughout.
func TestLoopSyncAlwaysPipelines(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServerOpts(t, &caskade.Options{Sync: caskade.SyncAlways}, func(s *Server) { s.EventLoops = 1 })
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			rdb := goredis.NewClient(&goredis.Options{Addr: ts.addr, PoolSize: 1})
			defer rdb.Close()
			ctx := context.Background()
			model := map[string]int64{}
			for round := range 60 {
				type check struct {
					cmd  goredis.Cmder
					want string
				}
				var checks []check
				pipe := rdb.Pipeline()
				for range 1 + r.IntN(12) {
					k := fmt.Sprintf("g%d:k%d", g, r.IntN(4))
					n := 10
					if g%2 == 0 {
						n = 8 // no SETNX or DEL: the client stays on the loop
					}
					switch op := r.IntN(n); {
					case op < 3:
						v := r.Int64N(100)
						checks = append(checks, check{pipe.Set(ctx, k, v, 0), "OK"})
						model[k] = v
					case op < 5:
						model[k]++
						checks = append(checks, check{pipe.Incr(ctx, k), fmt.Sprint(model[k])})
					case op < 8:
						want := "<nil>"
						if v, ok := model[k]; ok {
							want = fmt.Sprint(v)
						}
						checks = append(checks, check{pipe.Get(ctx, k), want})
					case op < 9:
						_, had := model[k]
						want := "1"
						if had {
							want = "0"
						} else {
							model[k] = 7
						}
						checks = append(checks, check{pipe.SetNX(ctx, k, 7, 0), map[string]string{"1": "true", "0": "false"}[want]})
					default:
						_, had := model[k]
						delete(model, k)
						want := "0"
						if had {
							want = "1"
						}
						checks = append(checks, check{pipe.Del(ctx, k), want})
					}
				}
				pipe.Exec(ctx)
				for i, c := range checks {
					var got string
					switch cmd := c.cmd.(type) {
					case *goredis.StatusCmd:
						got = cmd.Val()
					case *goredis.IntCmd:
						got = fmt.Sprint(cmd.Val())
					case *goredis.BoolCmd:
						got = fmt.Sprint(cmd.Val())
					case *goredis.StringCmd:
						got = cmd.Val()
						if cmd.Err() == goredis.Nil {
							got = "<nil>"
						}
					}
					if err := c.cmd.Err(); err != nil && err != goredis.Nil {
						t.Errorf("client %d round %d command %d (%v): %v", g, round, i, c.cmd.Args(), err)
						return
					}
					if got != c.want {
						t.Errorf("client %d round %d command %d (%v): %q, want %q", g, round, i, c.cmd.Args(), got, c.want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestLoopFragmentedInput sends random scripts of commands to clients on
// one event loop in random fragments, from several connections at once,
// and checks every reply byte for byte against a model. Half the clients
// then shut down their side and must see every reply and then the close;
// some scripts hold values too big for the read buffer, and under
// SyncAlways every EXEC, both of which take the client off the loop
// mid-script.
func TestLoopFragmentedInput(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	for _, policy := range []caskade.SyncPolicy{caskade.SyncNone, caskade.SyncAlways} {
		t.Run(policy.String(), func(t *testing.T) {
			ts := startServerOpts(t, &caskade.Options{Sync: policy}, func(s *Server) { s.EventLoops = 1 })
			wiretest.Clients(t, ts.addr, 6, func(r *rand.Rand, g int) ([]byte, string) {
				return redisScript(r, g, g%3 == 2)
			})
		})
	}
}

// redisScript returns a random script of commands for client g, in
// RESP and inline form, with the replies a model expects; with big, some
// values are larger than the read buffer.
func redisScript(r *rand.Rand, g int, big bool) (script []byte, want string) {
	var s, w strings.Builder
	model := map[string]string{}
	bulk := func(v string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(v), v) }
	for range 200 {
		k := fmt.Sprintf("f%d:%d", g, r.IntN(5))
		switch op := r.IntN(13); {
		case op < 3:
			v := strings.Repeat(string(rune('a'+r.IntN(26))), 1+r.IntN(30))
			if big && r.IntN(15) == 0 {
				v = strings.Repeat("B", 20000+r.IntN(50000))
			}
			s.WriteString(cmd("SET", k, v))
			w.WriteString("+OK\r\n")
			model[k] = v
		case op < 6:
			s.WriteString(cmd("GET", k))
			if v, ok := model[k]; ok {
				w.WriteString(bulk(v))
			} else {
				w.WriteString("$-1\r\n")
			}
		case op < 7:
			s.WriteString(cmd("APPEND", k, "xy"))
			model[k] += "xy"
			fmt.Fprintf(&w, ":%d\r\n", len(model[k]))
		case op < 8:
			s.WriteString(cmd("DEL", k))
			if _, ok := model[k]; ok {
				w.WriteString(":1\r\n")
			} else {
				w.WriteString(":0\r\n")
			}
			delete(model, k)
		case op < 10:
			c := fmt.Sprintf("f%d:n", g)
			n, _ := strconv.Atoi(model[c])
			model[c] = strconv.Itoa(n + 1)
			if r.IntN(2) == 0 {
				s.WriteString("INCR " + c + "\r\n") // inline
			} else {
				s.WriteString(cmd("INCR", c))
			}
			fmt.Fprintf(&w, ":%d\r\n", n+1)
		case op < 11:
			// A transaction: under SyncAlways its EXEC takes the client
			// off the loop, with the rest of the script still buffered.
			s.WriteString(cmd("MULTI"))
			w.WriteString("+OK\r\n")
			var replies []string
			for range 1 + r.IntN(3) {
				v := strconv.Itoa(r.IntN(1000))
				s.WriteString(cmd("SET", k, v))
				w.WriteString("+QUEUED\r\n")
				replies = append(replies, "+OK\r\n")
				model[k] = v
			}
			s.WriteString(cmd("GET", k))
			w.WriteString("+QUEUED\r\n")
			replies = append(replies, bulk(model[k]))
			s.WriteString(cmd("EXEC"))
			fmt.Fprintf(&w, "*%d\r\n%s", len(replies), strings.Join(replies, ""))
		default:
			s.WriteString("PING\r\n")
			w.WriteString("+PONG\r\n")
		}
	}
	return []byte(s.String()), w.String()
}

// TestLoopBackloggedClientEnds checks that a client whose replies are
// queued because it does not read them, and from which the loop therefore
// reads nothing, still ends when its peer goes away, when CLIENT KILL
// closes it and when the server shuts down: it used to stay for good,
// holding its queued replies, its socket and its place under MaxClients
// (which a few such clients used up), and Shutdown waited for it forever.
func TestLoopBackloggedClientEnds(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	ts := startServer(t, func(s *Server) { s.EventLoops = 1 })
	setup := ts.dial()
	setup.do(cmd("SET", "big", strings.Repeat("x", 256<<10)), "+OK\r\n")
	// slow sends GETs for far more than the socket buffers hold and
	// reads none of the replies; it returns once the server has queued
	// some of them, and stopped reading from it.
	slow := func() (*rawConn, *client) {
		t.Helper()
		c := ts.dial()
		c.nc.(*net.TCPConn).SetReadBuffer(4096)
		go c.nc.Write([]byte(strings.Repeat(cmd("GET", "big"), 128))) // 32 MiB of replies
		var sc *client
		waitFor(t, "the slow client's replies to back up", func() bool {
			for _, x := range ts.srv.allClients() {
				if x.lc != nil && x.lc.Backlogged() {
					sc = x
					return true
				}
			}
			return false
		})
		return c, sc
	}
	gone := func(sc *client, why string) {
		t.Helper()
		waitFor(t, "the client to end after "+why, func() bool {
			return !slices.Contains(ts.srv.allClients(), sc)
		})
		if err := sc.nc.SetDeadline(time.Time{}); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("after %s, the client's socket is not closed (%v)", why, err)
		}
	}

	// The peer closes without reading: its socket resets.
	c, sc := slow()
	c.nc.(*net.TCPConn).SetLinger(0)
	c.nc.Close()
	gone(sc, "its peer reset the connection")

	_, sc = slow()
	setup.do(cmd("CLIENT", "KILL", "ID", strconv.FormatInt(sc.id, 10)), ":1\r\n")
	gone(sc, "CLIENT KILL")
	// Shutdown: a client that still does not read holds it up until the
	// deadline, when Shutdown closes it.
	slow()
	wiretest.ShutdownAtDeadline(t, ts.srv.Shutdown)
}

// TestLoopSlowReaderNotIdle checks that a client taking a big reply
// slowly, but steadily, is not closed by the idle timeout while the loop
// holds replies it has not taken: as in Redis, sending it replies is
// activity. The command pipelined after the big one must still run.
func TestLoopSlowReaderNotIdle(t *testing.T) {
	wiretest.SkipWithoutLoops(t)
	const idle = 500 * time.Millisecond
	ts := startServer(t, func(s *Server) { s.EventLoops = 1; s.IdleTimeout = idle })
	val := strings.Repeat("x", 16<<20)
	if err := ts.db.Set([]byte("big"), []byte(val)); err != nil {
		t.Fatal(err)
	}
	slow := ts.dial()
	// A small receive buffer (no autotuning) keeps most of the reply in
	// the server, queued on the loop.
	if err := slow.nc.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	slow.do(cmd("PING"), "+PONG\r\n")
	if !onLoop(t, ts.srv) {
		t.Fatal("the client is not on an event loop")
	}
	// So does a small send buffer on the server's side, which also makes
	// the socket writable again, and the loop see the client take its
	// reply, after every few kilobytes the client reads: an autotuned
	// one grows to megabytes, and is writable again only once half of it
	// has drained, which a slow reader on a loaded machine can take
	// longer than the idle timeout to do.
	if err := ts.srv.allClients()[0].nc.(*net.TCPConn).SetWriteBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	slow.send(cmd("GET", "big") + cmd("PING"))
	head := fmt.Sprintf("$%d\r\n", len(val))
	slow.expect(head)
	// Read the value in pieces, pausing between them (the pauses make
	// the reader slow; they synchronise nothing): several idle timeouts
	// pass while the loop still holds part of the reply.
	buf := make([]byte, 256<<10)
	slow.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	for left := len(val) + 2; left > 0; {
		n, err := io.ReadFull(slow.br, buf[:min(len(buf), left)])
		if err != nil {
			t.Fatalf("reading the value, %d bytes left: %v", left, err)
		}
		left -= n
		time.Sleep(idle / 25)
	}
	slow.expect("+PONG\r\n")
}
