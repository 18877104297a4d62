package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade"
	goredis "github.com/redis/go-redis/v9"
)

func TestMultiExecRaw(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.do(cmd("EXEC"), "-ERR EXEC without MULTI\r\n")
	c.do(cmd("DISCARD"), "-ERR DISCARD without MULTI\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("MULTI"), "-ERR MULTI calls can not be nested\r\n")
	c.do(cmd("WATCH", "x"), "-ERR WATCH inside MULTI is not allowed\r\n")
	c.do(cmd("SET", "a", "1"), "+QUEUED\r\n")
	c.do(cmd("INCR", "a"), "+QUEUED\r\n")
	c.do(cmd("GET", "a"), "+QUEUED\r\n")
	c.do(cmd("SET", "s", "x"), "+QUEUED\r\n")
	c.do(cmd("INCR", "s"), "+QUEUED\r\n")
	c.do(cmd("KEYS", "*"), "+QUEUED\r\n")
	c.do(cmd("DEL", "a"), "+QUEUED\r\n")
	c.do(cmd("EXISTS", "a"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*8\r\n+OK\r\n:2\r\n$1\r\n2\r\n+OK\r\n-ERR value is not an integer or out of range\r\n*2\r\n$1\r\na\r\n$1\r\ns\r\n:1\r\n:0\r\n")

	// A command refused while queueing aborts the transaction.
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("SET", "q", "1"), "+QUEUED\r\n")
	c.do(cmd("NOPE"), "-ERR unknown command 'NOPE', with args beginning with: \r\n")
	c.do(cmd("GET"), "-ERR wrong number of arguments for 'get' command\r\n")
	c.do(cmd("SAVE"), "-ERR Command not allowed inside a transaction\r\n")
	c.do(cmd("EXEC"), "-EXECABORT Transaction discarded because of previous errors.\r\n")
	c.do(cmd("EXISTS", "q"), ":0\r\n")

	// MONITOR in a transaction is refused when it runs, and the
	// connection stays an ordinary one.
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("MONITOR"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*1\r\n-ERR MONITOR isn't allowed for DENY BLOCKING client\r\n")
	c.do(cmd("PING"), "+PONG\r\n")

	// DISCARD.
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("SET", "q", "1"), "+QUEUED\r\n")
	c.do(cmd("DISCARD"), "+OK\r\n")
	c.do(cmd("EXISTS", "q"), ":0\r\n")

	// WATCH: a change from another client makes EXEC return the null array.
	c.do(cmd("SET", "w", "1"), "+OK\r\n")
	c.do(cmd("WATCH", "w", "absent"), "+OK\r\n")
	ts.dial().do(cmd("SET", "w", "2"), "+OK\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("SET", "q", "1"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*-1\r\n")
	c.do(cmd("EXISTS", "q"), ":0\r\n")

	// A key created after WATCH, while it was absent, counts as a change.
	c.do(cmd("WATCH", "absent"), "+OK\r\n")
	ts.dial().do(cmd("SET", "absent", "now"), "+OK\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("PING"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*-1\r\n")

	// Unchanged watched keys: EXEC runs; UNWATCH forgets.
	c.do(cmd("WATCH", "w"), "+OK\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("GET", "w"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*1\r\n$1\r\n2\r\n")
	c.do(cmd("WATCH", "w"), "+OK\r\n")
	ts.dial().do(cmd("SET", "w", "3"), "+OK\r\n")
	c.do(cmd("UNWATCH"), "+OK\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("GET", "w"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*1\r\n$1\r\n3\r\n")

	// SELECT inside MULTI applies to the commands after it.
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("SELECT", "2"), "+QUEUED\r\n")
	c.do(cmd("SET", "in2", "x"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*2\r\n+OK\r\n+OK\r\n")
	c.do(cmd("EXISTS", "in2"), ":1\r\n")
	c.do(cmd("SELECT", "0"), "+OK\r\n")
	c.do(cmd("EXISTS", "in2"), ":0\r\n")
	c.do(cmd("SELECT", "2"), "+OK\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("SELECT", "0"), "+QUEUED\r\n")
	c.do(cmd("SET", "\xff\x05k", "x"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*2\r\n+OK\r\n-ERR keys beginning with byte 0xff are reserved for other databases\r\n")

	// FLUSHDB inside MULTI, then reads see the transaction's own state.
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("FLUSHDB"), "+QUEUED\r\n")
	c.do(cmd("SET", "n", "1"), "+QUEUED\r\n")
	c.do(cmd("DBSIZE"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*3\r\n+OK\r\n+OK\r\n:1\r\n")
	c.do(cmd("DBSIZE"), ":1\r\n")
}

// TestWatchRetryLoop runs go-redis's optimistic-locking loop from many
// clients: every increment lands exactly once.
func TestWatchRetryLoop(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	const clients, each = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := goredis.NewClient(&goredis.Options{Addr: ts.addr, PoolSize: 2})
			defer rdb.Close()
			for range each {
				for {
					err := rdb.Watch(ctx, func(tx *goredis.Tx) error {
						n, err := tx.Get(ctx, "n").Int()
						if err != nil && !errors.Is(err, goredis.Nil) {
							return err
						}
						_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
							p.Set(ctx, "n", n+1, 0)
							return nil
						})
						return err
					}, "n")
					if errors.Is(err, goredis.TxFailedErr) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	eq(t, "n", resInt(t, ts.goRedis(nil).Get(ctx, "n")), int64(clients*each))
}

// TestExecAtomic: transactions that move value between two keys never
// show a reader an intermediate state, and lose no update.
func TestExecAtomic(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	const writers, each = 6, 100
	var wg sync.WaitGroup
	stop := make(chan struct{})
	readerErr := make(chan error, 1)
	go func() {
		rdb := goredis.NewClient(&goredis.Options{Addr: ts.addr})
		defer rdb.Close()
		for {
			select {
			case <-stop:
				readerErr <- nil
				return
			default:
			}
			cmds, err := rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Get(ctx, "a")
				p.Get(ctx, "b")
				return nil
			})
			if err != nil && !errors.Is(err, goredis.Nil) {
				readerErr <- err
				return
			}
			a, _ := cmds[0].(*goredis.StringCmd).Int()
			b, _ := cmds[1].(*goredis.StringCmd).Int()
			if a+b != 0 {
				readerErr <- fmt.Errorf("saw a=%d b=%d", a, b)
				return
			}
		}
	}()
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := goredis.NewClient(&goredis.Options{Addr: ts.addr, PoolSize: 1})
			defer rdb.Close()
			for range each {
				_, err := rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
					p.IncrBy(ctx, "a", 1)
					p.DecrBy(ctx, "b", 1)
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := <-readerErr; err != nil {
		t.Fatal(err)
	}
	rdb := ts.goRedis(nil)
	eq(t, "a", resInt(t, rdb.Get(ctx, "a")), int64(writers*each))
	eq(t, "b", resInt(t, rdb.Get(ctx, "b")), int64(-writers*each))
}

// TestWatchKeySetAndDeletedAgain: a key absent at WATCH and absent again at
// EXEC has no new version, but it was changed in between, which fails EXEC
// in Redis. The change may come from this client, another, or the embedded
// API.
func TestWatchKeySetAndDeletedAgain(t *testing.T) {
	ts := startServer(t, nil)
	c, other := ts.dial(), ts.dial()
	changes := map[string]func(){
		"this client": func() {
			c.do(cmd("SET", "w", "1"), "+OK\r\n")
			c.do(cmd("DEL", "w"), ":1\r\n")
		},
		"another client": func() {
			other.do(cmd("SET", "w", "1"), "+OK\r\n")
			other.do(cmd("DEL", "w"), ":1\r\n")
		},
		"the embedded API": func() {
			if err := ts.db.Set([]byte("w"), []byte("1")); err != nil {
				t.Fatal(err)
			}
			if err := ts.db.Delete([]byte("w")); err != nil {
				t.Fatal(err)
			}
		},
		"an expiry": func() {
			other.do(cmd("SET", "w", "1"), "+OK\r\n")
			other.do(cmd("PEXPIREAT", "w", "1"), ":1\r\n")
		},
	}
	for name, change := range changes {
		c.do(cmd("WATCH", "w"), "+OK\r\n")
		change()
		c.do(cmd("MULTI"), "+OK\r\n")
		c.do(cmd("SET", "out", name), "+QUEUED\r\n")
		c.do(cmd("EXEC"), "*-1\r\n")
		c.do(cmd("EXISTS", "out"), ":0\r\n")
	}
	// Unchanged, or unwatched after the change, EXEC runs.
	c.do(cmd("WATCH", "w"), "+OK\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("SET", "out", "1"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*1\r\n+OK\r\n")
	c.do(cmd("WATCH", "w"), "+OK\r\n")
	changes["another client"]()
	c.do(cmd("UNWATCH"), "+OK\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("SET", "out", "2"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*1\r\n+OK\r\n")
	if n := ts.srv.watchReg.n.Load(); n != 0 {
		t.Errorf("%d keys still registered after EXEC and UNWATCH", n)
	}
}

// TestWatchKeyExpiredBeforeWatch: as in Redis, WATCH of a key that has
// expired already is not disturbed when the key is dropped later (here
// at once, by the read WATCH makes, since active expiry is off); a key
// that expires after WATCH fails EXEC.
func TestWatchKeyExpiredBeforeWatch(t *testing.T) {
	var skew atomic.Int64 // the database's clock runs ahead by this much
	ts := startServerOpts(t, &caskade.Options{Sync: caskade.SyncNone, ExpiryPeriod: -1,
		Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	c := ts.dial()
	c.do(cmd("SET", "k", "v", "EX", "100"), "+OK\r\n")
	c.do(cmd("SET", "j", "v", "EX", "100"), "+OK\r\n")
	c.do(cmd("WATCH", "j"), "+OK\r\n")
	skew.Store(int64(time.Hour)) // both expire
	c.do(cmd("WATCH", "k"), "+OK\r\n")
	waitFor(t, "the expired keys to be dropped", func() bool {
		ts.db.Has([]byte("j"))
		return ts.db.Stats().Keys == 0
	})
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("SET", "x", "1"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*-1\r\n") // j expired after WATCH
	skew.Store(0)
	c.do(cmd("SET", "k", "v", "EX", "100"), "+OK\r\n")
	skew.Store(int64(time.Hour))
	c.do(cmd("WATCH", "k"), "+OK\r\n")
	waitFor(t, "the expired key to be dropped", func() bool { return ts.db.Stats().Keys == 0 })
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("SET", "x", "1"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*1\r\n+OK\r\n")
}

// TestClientListMultiWatch checks CLIENT LIST's multi= and watch= fields
// as Redis keeps them: the commands queued so far, the keys watched now,
// and during EXEC the MULTI state (flags x, multi= the commands run) with
// no watches left.
func TestClientListMultiWatch(t *testing.T) {
	ts := startServer(t, nil)
	a, b := ts.dial(), ts.dial()
	// The fields of a's line (the first) of CLIENT LIST, sent on c.
	fields := func(c *rawConn) string {
		c.send(cmd("CLIENT", "LIST"))
		c.readLine() // the bulk string's header
		line := c.readLine()
		c.readLine() // b's line
		c.readLine() // the bulk string's end
		var out []string
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "flags=") || strings.HasPrefix(f, "multi=") || strings.HasPrefix(f, "watch=") {
				out = append(out, f)
			}
		}
		return strings.Join(out, " ")
	}
	a.do(cmd("CLIENT", "SETNAME", "a"), "+OK\r\n")
	a.do(cmd("WATCH", "x", "y"), "+OK\r\n")
	if got := fields(b); got != "flags=N multi=-1 watch=2" {
		t.Fatalf("after WATCH x y: %s", got)
	}
	a.do(cmd("MULTI"), "+OK\r\n")
	a.do(cmd("SET", "x", "1"), "+QUEUED\r\n")
	a.do(cmd("CLIENT", "INFO"), "+QUEUED\r\n")
	if got := fields(b); got != "flags=x multi=2 watch=2" {
		t.Fatalf("in MULTI: %s", got)
	}
	a.send(cmd("EXEC"))
	a.expect("*2\r\n+OK\r\n")
	a.readLine()
	info := a.readLine()
	if !strings.Contains(info, " flags=x ") || !strings.Contains(info, " multi=2 watch=0 ") {
		t.Fatalf("CLIENT INFO in EXEC: %s", info)
	}
	a.readLine()
	if got := fields(b); got != "flags=N multi=-1 watch=0" {
		t.Fatalf("after EXEC: %s", got)
	}
}

// An EXEC that a conflict makes run again runs its admin commands (here
// CLIENT KILL), whose effects lie outside the transaction, only once: the
// retry sends their first replies. Before, the second CLIENT KILL found
// the client gone and EXEC answered 0 for a kill that had happened.
func TestExecRetryRunsAdminCommandsOnce(t *testing.T) {
	var db atomic.Pointer[caskade.DB]
	var attempts atomic.Int32
	// Set before the server starts, so that its goroutines see it; a
	// write into the key the transaction read makes its first commit
	// conflict.
	testHookExecAttempt = func(attempt int) {
		attempts.Add(1)
		if attempt == 0 {
			if err := db.Load().Set([]byte("n"), []byte("10")); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { testHookExecAttempt = nil }) // after the server's cleanup, registered next
	ts := startServer(t, nil)
	db.Store(ts.db)
	victim := ts.dial()
	victim.send(cmd("CLIENT", "ID"))
	victim.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := victim.br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, ":") {
		t.Fatalf("CLIENT ID: %q %v", line, err)
	}
	id := strings.TrimSpace(line[1:])

	c := ts.dial()
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("INCR", "n"), "+QUEUED\r\n")
	c.do(cmd("CLIENT", "KILL", "ID", id), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*2\r\n:11\r\n:1\r\n")
	if n := attempts.Load(); n != 2 {
		t.Fatalf("EXEC ran %d attempts, want 2 (the first one conflicting)", n)
	}
	// The reply alone may not tell: the killed connection can still be
	// listed when the retry kills it again.
	kill, _, _ := ts.srv.cmds.lookup([][]byte{[]byte("client"), []byte("kill")}, nil)
	if kill == nil || kill.name != "client|kill" {
		t.Fatalf("no CLIENT KILL in the command table (%v)", kill)
	}
	if n := kill.calls.Load(); n != 1 {
		t.Fatalf("CLIENT KILL ran %d times, want once", n)
	}
	victim.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := victim.br.ReadByte(); err == nil {
		t.Fatal("the killed client's connection is still open")
	}
}

// TestWatchScales checks that WATCH costs what Redis's watched_keys dict
// makes it cost: registering a key looks at the client's watches once, not
// at every key it watched before (WATCH of many keys was quadratic), and a
// write looks only at the clients watching the keys it changed. The work
// is counted by the registry's probes, not timed.
func TestWatchScales(t *testing.T) {
	ts := startServer(t, nil)
	reg := &ts.srv.watchReg
	c := ts.dial()
	const n = 20000
	args := []string{"WATCH"}
	for i := range n {
		args = append(args, fmt.Sprintf("k%d", i))
	}
	before := reg.probes.Load()
	c.do(cmd(args...), "+OK\r\n")
	// Again, and with repeats within the command: each key counts once.
	c.do(cmd("WATCH", "k0", "k1", "k1", "new"), "+OK\r\n")
	if p := reg.probes.Load() - before; p > 2*(n+4) {
		t.Fatalf("WATCH of %d keys looked at %d watches", n, p)
	}
	w := ts.dial()
	w.send(cmd("CLIENT", "LIST"))
	r, err := readRawReply(w.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(" watch=%d ", n+1); !strings.Contains(string(r), want) {
		t.Fatalf("CLIENT LIST does not say%q: %s", want, r)
	}

	// Many clients, each watching its own key and the shared one.
	const clients = 50
	others := make([]*rawConn, clients)
	for i := range others {
		others[i] = ts.dial()
		others[i].do(cmd("WATCH", fmt.Sprintf("own%d", i), "shared"), "+OK\r\n")
	}
	before = reg.probes.Load()
	w.do(cmd("SET", "own7", "x"), "+OK\r\n")
	if p := reg.probes.Load() - before; p > 1 {
		t.Fatalf("a write of one key watched by one client looked at %d watches", p)
	}
	w.do(cmd("SET", "k5", "x"), "+OK\r\n")
	for i, o := range others {
		o.do(cmd("MULTI"), "+OK\r\n")
		o.do(cmd("PING"), "+QUEUED\r\n")
		want := "*1\r\n+PONG\r\n"
		if i == 7 {
			want = "*-1\r\n"
		}
		o.do(cmd("EXEC"), want)
	}
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("PING"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*-1\r\n")
	// EXEC forgot the watches: nothing is left registered.
	reg.mu.Lock()
	left := len(reg.keys)
	reg.mu.Unlock()
	if left != 0 || reg.n.Load() != 0 {
		t.Fatalf("%d keys (n=%d) still registered after every EXEC", left, reg.n.Load())
	}
}

// TestExecRetryCountsOnce checks that INFO's statistics count the
// commands of an EXEC once, however many attempts it took: each attempt
// counted them, so an EXEC run again after a conflict showed two INCRs
// in cmdstat_incr and total_commands_processed.
func TestExecRetryCountsOnce(t *testing.T) {
	var db atomic.Pointer[caskade.DB]
	testHookExecAttempt = func(attempt int) {
		if attempt == 0 {
			if err := db.Load().Set([]byte("n"), []byte("10")); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { testHookExecAttempt = nil }) // after the server's cleanup, registered next
	ts := startServer(t, nil)
	db.Store(ts.db)
	c := ts.dial()
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("INCR", "n"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*1\r\n:11\r\n")
	c.send(cmd("INFO", "commandstats"))
	r, err := readRawReply(c.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r), "cmdstat_incr:calls=1,") {
		t.Fatalf("one INCR in an EXEC run twice: %s", r)
	}

	// An error reply of an attempt run again counts once in errorstats
	// (and in total_error_replies), as the command does in commandstats.
	if err := ts.db.Set([]byte("s"), []byte("abc")); err != nil {
		t.Fatal(err)
	}
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("INCR", "n"), "+QUEUED\r\n")
	c.do(cmd("INCR", "s"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*2\r\n:11\r\n-ERR value is not an integer or out of range\r\n")
	c.send(cmd("INFO", "errorstats"))
	if r, err = readRawReply(c.br, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r), "errorstat_ERR:count=1\r\n") {
		t.Fatalf("one error reply in an EXEC run twice: %s", r)
	}
}
