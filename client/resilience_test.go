package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade/client"
	"github.com/caskade/caskade/internal/testcert"
	"github.com/caskade/caskade/resp"
)

// TestRestartMidStream kills the server (listener and connections) while
// goroutines run GET and SET on keys of their own, starts a new one on the
// same address, and checks that the client recovers and that every reply
// went to its caller.
func TestRestartMidStream(t *testing.T) {
	ts := startCaskade(t, nil)
	var dials atomic.Int64
	c := dial(t, ts.addr, &client.Options{
		PoolSize: 2, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 20 * time.Millisecond, MaxRetries: 5,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	})
	ctx := testCtx(t)
	const workers, before, after = 16, 100, 100
	var total atomic.Int64
	var restarted atomic.Bool
	warm := make(chan struct{})
	var warmOnce sync.Once
	var connErrs, maybeErrs atomic.Int64
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			key := "rs:" + strconv.Itoa(w)
			acked, sent := -1, -1 // highest acknowledged and highest sent sequence
			okAfter := 0
			for seq := 0; ; seq++ {
				if restarted.Load() && okAfter >= after {
					errs <- nil
					return
				}
				val := fmt.Sprintf("%s:%d", key, seq)
				sent = seq
				_, err := c.Set(ctx, key, []byte(val), client.SetArgs{})
				if err == nil {
					acked = seq
				} else if !classifyErr(err, &connErrs, &maybeErrs) {
					errs <- fmt.Errorf("SET: %w", err)
					return
				}
				got, err := c.Get(ctx, key)
				if err != nil {
					if errors.Is(err, client.Nil) && acked < 0 {
						continue
					}
					if !classifyErr(err, &connErrs, &maybeErrs) {
						errs <- fmt.Errorf("GET: %w", err)
						return
					}
					continue
				}
				prefix, num, ok := strings.Cut(string(got), ":")
				prefix2, num2, ok2 := strings.Cut(num, ":")
				n, _ := strconv.Atoi(num2)
				if !ok || !ok2 || prefix+":"+prefix2 != key || n < acked || n > sent {
					errs <- fmt.Errorf("worker %d got %q: acked %d, sent %d", w, got, acked, sent)
					return
				}
				if restarted.Load() {
					okAfter++
				}
				if total.Add(1) == workers*before {
					warmOnce.Do(func() { close(warm) })
				}
			}
		}()
	}
	select {
	case <-warm:
	case err := <-errs:
		t.Fatal(err)
	}
	initial := dials.Load()
	ts.restart(t)
	restarted.Store(true)
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if dials.Load() <= initial {
		t.Fatalf("no re-dial after the restart (%d dials)", dials.Load())
	}
	t.Logf("%d dials, %d connection errors (%d maybe executed), %d successful round trips",
		dials.Load(), connErrs.Load(), maybeErrs.Load(), total.Load())
}

// classifyErr accepts the errors a restart may cause: connection errors.
func classifyErr(err error, connErrs, maybeErrs *atomic.Int64) bool {
	var ce *client.ConnError
	if !errors.As(err, &ce) {
		return false
	}
	connErrs.Add(1)
	if ce.MaybeExecuted {
		maybeErrs.Add(1)
	}
	return true
}

func TestReconnectBeforeNextCommand(t *testing.T) {
	ts := startCaskade(t, nil)
	p := startProxy(t, ts.addr)
	c := dial(t, p.addr(), &client.Options{PoolSize: 1, MaxRetries: -1})
	ctx := testCtx(t)
	must[[]byte](t)(c.Set(ctx, "rc", []byte("1"), client.SetArgs{}))
	// The connection dies while idle; the next command (even a write, with
	// no retries allowed) runs on a new one.
	p.killAll()
	var err error
	for i := 0; i < 2; i++ {
		// The client notices the close asynchronously; a write sent in the
		// meantime is refused as not executed, never run twice.
		if _, err = c.Set(ctx, "rc", []byte("2"), client.SetArgs{}); err == nil {
			break
		}
		var ce *client.ConnError
		if !errors.As(err, &ce) {
			t.Fatalf("Set after the connection died: %v", err)
		}
	}
	check(t, err)
	eq(t, "Get", string(must[[]byte](t)(c.Get(ctx, "rc"))), "2")
	if p.dials.Load() != 2 {
		t.Fatalf("%d dials, want 2", p.dials.Load())
	}
}

// TestIdleCloseBeforeCancellableCall checks that a shared connection that
// has no reader goroutine yet (just dialed, or used only with contexts that
// cannot be cancelled) and was closed by the server while idle is replaced
// before a call with a cancellable context writes on it: the write then
// runs once, and is not failed as maybe executed.
func TestIdleCloseBeforeCancellableCall(t *testing.T) {
	ts := startCaskade(t, nil)
	p := startProxy(t, ts.addr)
	c := dial(t, p.addr(), &client.Options{PoolSize: 1, MaxRetries: -1})
	ctx := testCtx(t)
	for i, prepare := range []func(){
		func() {}, // the connection Dial opened, never used
		func() { // used sequentially with a context that cannot be cancelled
			must[[]byte](t)(c.Set(context.Background(), "ic-seq", []byte("x"), client.SetArgs{}))
		},
	} {
		prepare()
		dials := p.dials.Load()
		p.killAll()
		key := "ic-" + strconv.Itoa(i)
		n, err := c.Incr(ctx, key)
		if err != nil {
			t.Fatalf("case %d: Incr on a connection closed while idle: %v", i, err)
		}
		eq(t, "Incr", n, 1)
		eq(t, "dials", p.dials.Load(), dials+1)
		// The next call opens a fresh connection for the next case: a
		// cancellable context has started a reader goroutine on this one.
		c.Close()
		c = dial(t, p.addr(), &client.Options{PoolSize: 1, MaxRetries: -1})
	}
}

func TestMaybeExecutedAndIdempotentRetry(t *testing.T) {
	ts := startCaskade(t, nil)
	p := startProxy(t, ts.addr)
	c := dial(t, p.addr(), &client.Options{PoolSize: 1, MinRetryBackoff: time.Millisecond})
	ctx := testCtx(t)
	must[[]byte](t)(c.Set(ctx, "me", []byte("v"), client.SetArgs{}))

	// cut runs call while the proxy swallows replies, and kills the
	// connections once the request (containing marker) reached the server.
	cut := func(marker string, call func() error) error {
		p.holdReplies(true)
		fired := p.expect(marker)
		res := make(chan error, 1)
		go func() { res <- call() }()
		<-fired
		p.kill(true)
		return <-res
	}

	// A write in flight: may have executed, not retried.
	dials := p.dials.Load()
	err := cut("maybe-write", func() error {
		_, err := c.Set(ctx, "me", []byte("maybe-write"), client.SetArgs{})
		return err
	})
	var ce *client.ConnError
	if !errors.As(err, &ce) || !ce.MaybeExecuted || !errors.Is(err, client.ErrMaybeExecuted) {
		t.Fatalf("write cut in flight: %v", err)
	}
	if p.dials.Load() != dials {
		t.Fatal("the write was sent again on a new connection")
	}

	// A read in flight is retried once on a new connection.
	// (Keys of their own: the server may still run the cut write late.)
	must[[]byte](t)(c.Set(ctx, "me-read", []byte("v2"), client.SetArgs{}))
	dials = p.dials.Load()
	err = cut("GET", func() error {
		v, err := c.Get(ctx, "me-read")
		if err == nil && string(v) != "v2" {
			err = fmt.Errorf("GET = %q", v)
		}
		return err
	})
	check(t, err)
	if p.dials.Load() <= dials {
		t.Fatal("the read was not retried on a new connection")
	}

	// A write marked idempotent is retried too.
	err = cut("idem", func() error {
		_, err := c.Set(client.Idempotent(ctx), "me-idem", []byte("idem"), client.SetArgs{})
		return err
	})
	check(t, err)
	eq(t, "value after idempotent retry", string(must[[]byte](t)(c.Get(ctx, "me-idem"))), "idem")
}

func TestTimeouts(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		bg := testCtx(t)
		c := dial(t, ts.addr, &client.Options{PoolSize: 1})
		must[[]byte](t)(c.Set(bg, "to", []byte("v"), client.SetArgs{}))

		// A context deadline on a shared connection: the call gives up, the
		// connection stays in step. (The sleep is long so that a loaded
		// machine cannot hold the caller up until the reply is there too:
		// the call may then return the reply.)
		ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
		_, err := c.Do(ctx, "DEBUG", "SLEEP", "1")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, client.ErrMaybeExecuted) {
			t.Fatalf("Do past its deadline: %v", err)
		}
		var ce *client.ConnError
		if !errors.As(err, &ce) || !ce.Timeout() {
			t.Fatalf("not a timeout: %v", err)
		}
		eq(t, "Get after a timed-out call", string(must[[]byte](t)(c.Get(bg, "to"))), "v")

		// Cancellation, at any moment.
		ctx, cancel = context.WithCancel(bg)
		go cancel()
		_, err = c.Do(ctx, "DEBUG", "SLEEP", "0.2")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Do cancelled: %v", err)
		}
		eq(t, "Get after a cancelled call", string(must[[]byte](t)(c.Get(bg, "to"))), "v")
		// An already expired context sends nothing.
		ctx, cancel = context.WithCancel(bg)
		cancel()
		if _, err := c.Get(ctx, "to"); !errors.Is(err, context.Canceled) || errors.Is(err, client.ErrMaybeExecuted) {
			t.Fatalf("Get with a done context: %v", err)
		}

		// ReadTimeout: a server that does not answer in time is a dead
		// connection; the next command gets a new one.
		c2 := dial(t, ts.addr, &client.Options{PoolSize: 1, ReadTimeout: 100 * time.Millisecond})
		_, err = c2.Do(bg, "DEBUG", "SLEEP", "0.5")
		if !errors.As(err, &ce) || !ce.Timeout() || !ce.MaybeExecuted {
			t.Fatalf("Do past ReadTimeout: %v", err)
		}
		eq(t, "Get after ReadTimeout", string(must[[]byte](t)(c2.Get(bg, "to"))), "v")

		// A dedicated connection: the late reply is dropped by the next call.
		conn := must[*client.Conn](t)(c.Conn(bg))
		defer conn.Close()
		ctx, cancel = context.WithTimeout(bg, 50*time.Millisecond)
		_, err = conn.Do(ctx, "DEBUG", "SLEEP", "0.2")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Conn.Do past its deadline: %v", err)
		}
		eq(t, "Conn GET after timeout", must[string](t)(must[client.Value](t)(conn.Do(bg, "GET", "to")).Str()), "v")
		ctx, cancel = context.WithCancel(bg)
		go cancel()
		if _, err = conn.Do(ctx, "DEBUG", "SLEEP", "0.2"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Conn.Do cancelled: %v", err)
		}
		eq(t, "Conn GET after cancel", must[string](t)(must[client.Value](t)(conn.Do(bg, "GET", "to")).Str()), "v")
		// Receive: a reply that did not come in time stays owed.
		check(t, conn.Append("DEBUG", "SLEEP", "0.5"))
		check(t, conn.Append("GET", "to"))
		ctx, cancel = context.WithTimeout(bg, 20*time.Millisecond)
		_, err = conn.Receive(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Receive past its deadline: %v", err)
		}
		eq(t, "late reply", must[client.Value](t)(conn.Receive(bg)).IsOK(), true)
		eq(t, "next reply", must[string](t)(must[client.Value](t)(conn.Receive(bg)).Str()), "v")
	})
}

func TestUnixSocket(t *testing.T) {
	path := tempSocket(t)
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ts := startCaskadeOn(t, l, nil)
	if !strings.HasPrefix(ts.addr, "unix://") {
		t.Fatalf("address %q", ts.addr)
	}
	ctx := testCtx(t)
	c := dial(t, ts.addr, nil)
	must[[]byte](t)(c.Set(ctx, "unix", []byte("sock"), client.SetArgs{}))
	eq(t, "Get over a unix socket", string(must[[]byte](t)(c.Get(ctx, "unix"))), "sock")
	cmds := must[[]*client.Cmd](t)(c.Pipelined(ctx, func(p *client.Pipe) error {
		for range 100 {
			p.Incr("unix:n")
		}
		return nil
	}))
	eq(t, "last INCR", must[int64](t)(cmds[99].Int()), 100)
	conn := must[*client.Conn](t)(c.Conn(ctx))
	defer conn.Close()
	info := must[string](t)(must[client.Value](t)(conn.Do(ctx, "CLIENT", "INFO")).Str())
	if !strings.Contains(info, "flags=U") {
		t.Fatalf("CLIENT INFO over a unix socket: %q", info)
	}
}

func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := tls.NewListener(raw, &tls.Config{Certificates: []tls.Certificate{cert}})
	ts := startCaskadeOn(t, l, nil)
	ctx := testCtx(t)
	c := dial(t, ts.addr, &client.Options{TLSConfig: &tls.Config{RootCAs: pool}})
	must[[]byte](t)(c.Set(ctx, "tls", []byte("yes"), client.SetArgs{}))
	eq(t, "Get over TLS", string(must[[]byte](t)(c.Get(ctx, "tls"))), "yes")
	// Without trusting the certificate the handshake fails.
	_, err = client.Dial(ctx, ts.addr, &client.Options{TLSConfig: &tls.Config{}, MaxRetries: -1})
	var uerr x509.UnknownAuthorityError
	if !errors.As(err, &uerr) {
		t.Fatalf("Dial with an untrusted certificate: %v", err)
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	c, err := testcert.New(time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return c.TLS, c.Pool
}

// TestHelloFallback talks to a fake RESP2-only server that refuses HELLO.
func TestHelloFallback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	var seen []string
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
				for {
					if args, err = rd.ReadCommand(args); err != nil {
						return
					}
					var parts []string
					for _, a := range args {
						parts = append(parts, string(a))
					}
					mu.Lock()
					seen = append(seen, strings.Join(parts, " "))
					mu.Unlock()
					var out []byte
					switch strings.ToUpper(parts[0]) {
					case "HELLO":
						out = resp.AppendError(nil, "ERR unknown command 'HELLO', with args beginning with: '3' ")
					case "GET":
						out = resp.AppendBulkString(nil, "fake")
					default:
						out = resp.AppendSimpleString(nil, "OK")
					}
					nc.Write(out)
				}
			}()
		}
	}()
	ctx := testCtx(t)
	c := dial(t, l.Addr().String(), &client.Options{Password: "pw", DB: 2, ClientName: "me", PoolSize: 1})
	eq(t, "Protocol", c.Protocol(), 2)
	eq(t, "Get", string(must[[]byte](t)(c.Get(ctx, "k"))), "fake")
	mu.Lock()
	got := strings.Join(seen, "|")
	mu.Unlock()
	want := "HELLO 3 AUTH default pw SETNAME me|AUTH pw|CLIENT SETNAME me|SELECT 2|GET k"
	if got != want {
		t.Fatalf("commands seen:\n%s\nwant:\n%s", got, want)
	}
	// With Protocol 3 demanded, the refusal is an error.
	if _, err := client.Dial(ctx, l.Addr().String(), &client.Options{Protocol: 3, MaxRetries: -1}); !errors.Is(err, client.ErrUnknownCommand) {
		t.Fatalf("Dial demanding RESP3: %v", err)
	}
}

// TestAutoPipelining runs 64 goroutines of random commands on keys of their
// own, plus a shared counter, over two shared connections.
func TestAutoPipelining(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		ctx := testCtx(t)
		c := dial(t, ts.addr, &client.Options{PoolSize: 2})
		const goroutines, ops = 64, 300
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		var incrs atomic.Int64
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := mrand.New(mrand.NewPCG(seed, uint64(g)))
				model := map[string]string{}
				for i := range ops {
					key := fmt.Sprintf("ap:%d:%d", g, rng.IntN(8))
					var err error
					switch rng.IntN(6) {
					case 0, 1:
						val := fmt.Sprintf("%d-%d-%d", g, i, rng.Uint64())
						if _, err = c.Set(ctx, key, []byte(val), client.SetArgs{}); err == nil {
							model[key] = val
						}
					case 2, 3:
						var got []byte
						got, err = c.Get(ctx, key)
						want, ok := model[key]
						switch {
						case errors.Is(err, client.Nil) && !ok:
							err = nil
						case err == nil && (!ok || string(got) != want):
							err = fmt.Errorf("goroutine %d: GET %s = %q, want %q (present %v)", g, key, got, want, ok)
						}
					case 4:
						var n int64
						n, err = c.Del(ctx, key)
						_, ok := model[key]
						if err == nil && (n == 1) != ok {
							err = fmt.Errorf("goroutine %d: DEL %s = %d, present %v", g, key, n, ok)
						}
						delete(model, key)
					case 5:
						_, err = c.Incr(ctx, "ap:counter")
						incrs.Add(1)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		n, err := c.Get(ctx, "ap:counter")
		if incrs.Load() == 0 {
			return
		}
		check(t, err)
		eq(t, "counter", string(n), strconv.FormatInt(incrs.Load(), 10))
	})
}

// cutDuring makes the next request containing marker reach the server with
// its reply swallowed, then kills every proxied connection, so that the
// call sending it fails with the connection.
func cutDuring(p *proxy, marker string) {
	p.holdReplies(true)
	fired := p.expect(marker)
	go func() {
		<-fired
		p.kill(true)
	}()
}

// TestConnRecovers checks that a Conn that changed no connection state
// recovers from a break, as documented: closed while idle, the next
// command runs on a new connection; broken during a command (Do, or
// Append/Receive), that command fails and the next one is re-dialed.
func TestConnRecovers(t *testing.T) {
	ts := startCaskade(t, nil)
	p := startProxy(t, ts.addr)
	c := dial(t, p.addr(), &client.Options{PoolSize: 1})
	ctx := testCtx(t)
	conn := must[*client.Conn](t)(c.Conn(ctx))
	defer conn.Close()
	must[client.Value](t)(conn.Do(ctx, "PING"))

	// Closed while idle: the write runs once, on a new connection.
	dials := p.dials.Load()
	p.killAll()
	eq(t, "INCR after an idle close", must[int64](t)(must[client.Value](t)(conn.Do(ctx, "INCR", "cr:n")).Int()), 1)
	eq(t, "dials", p.dials.Load(), dials+1)

	// Broken while the reply is awaited: that command may have executed;
	// the next is sent on a new connection.
	cutDuring(p, "cr-do")
	if _, err := conn.Do(ctx, "SET", "cr:k", "cr-do"); !errors.Is(err, client.ErrMaybeExecuted) {
		t.Fatalf("Do cut in flight: %v", err)
	}
	eq(t, "ECHO after a break", must[string](t)(must[client.Value](t)(conn.Do(ctx, "ECHO", "after")).Str()), "after")

	// Append/Receive: each owed reply reports the break, then the Conn
	// works again.
	cutDuring(p, "cr-recv")
	check(t, conn.Append("ECHO", "cr-recv"))
	check(t, conn.Append("ECHO", "2"))
	for i := 0; i < 2; i++ {
		var ce *client.ConnError
		if _, err := conn.Receive(ctx); !errors.As(err, &ce) {
			t.Fatalf("Receive %d after a break: %v", i, err)
		}
	}
	if _, err := conn.Receive(ctx); !errors.Is(err, client.ErrNoReply) {
		t.Fatalf("Receive with nothing owed: %v", err)
	}
	eq(t, "ECHO after Receive's break", must[string](t)(must[client.Value](t)(conn.Do(ctx, "ECHO", "again")).Str()), "again")
	check(t, conn.Append("ECHO", "piped"))
	eq(t, "Receive after recovery", must[string](t)(must[client.Value](t)(conn.Receive(ctx)).Str()), "piped")
}

// TestNoRedialInsideTransactions checks that a connection that broke inside
// a Watch or a Transact is never replaced by a new one while the function
// goes on: a write sent there would run without the WATCH, or outside the
// transaction. The functions below ignore a read error, as careless code
// does; the commit must fail all the same.
func TestNoRedialInsideTransactions(t *testing.T) {
	ts := startCaskade(t, nil)
	p := startProxy(t, ts.addr)
	c := dial(t, p.addr(), &client.Options{PoolSize: 1})
	other := dial(t, ts.addr, nil)
	ctx := testCtx(t)
	must[[]byte](t)(other.Set(ctx, "nr:w", []byte("0"), client.SetArgs{}))

	errStop := errors.New("stop")
	runs := 0
	err := c.Watch(ctx, func(tx *client.Tx) error {
		if runs++; runs > 1 {
			return errStop
		}
		cutDuring(p, "nr:w")
		tx.Get(ctx, "nr:w") // the error is ignored
		// The watched key changes: EXEC must not run unwatched.
		must[[]byte](t)(other.Set(ctx, "nr:w", []byte("other"), client.SetArgs{}))
		_, err := tx.TxPipelined(ctx, func(p *client.Pipe) error {
			p.Set("nr:w", []byte("watch"), client.SetArgs{})
			return nil
		})
		return err
	}, "nr:w")
	if err == nil {
		t.Fatal("Watch succeeded after its connection broke")
	}
	eq(t, "watched key", string(must[[]byte](t)(other.Get(ctx, "nr:w"))), "other")

	runs = 0
	err = c.Transact(ctx, func(tx *client.Txn) error {
		if runs++; runs > 1 {
			return errStop
		}
		cutDuring(p, "nr:t")
		tx.Get([]byte("nr:t")) // the error is ignored
		tx.Set([]byte("nr:t2"), []byte("txn"))
		return nil
	})
	skipUnknown(t, err)
	if !errors.Is(err, errStop) {
		t.Fatalf("Transact: %v, want the error of its second run", err)
	}
	if v, err := other.Get(ctx, "nr:t2"); !errors.Is(err, client.Nil) {
		t.Fatalf("write of a broken transaction applied: %q %v", v, err)
	}

	// A write that fails (CSK.BEGIN and the first read are written
	// together) leaves the transaction's connection broken: the next
	// read must fail at once, not be sent on a new connection (without
	// the transaction, and waiting for replies never sent).
	var failWrite atomic.Bool
	wc := dial(t, ts.addr, &client.Options{PoolSize: 1, ReadTimeout: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			return failingConn{nc, &failWrite}, err
		}})
	check(t, wc.Transact(ctx, func(tx *client.Txn) error { return nil })) // CSK.BEGIN works
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	runs = 0
	err = wc.Transact(tctx, func(tx *client.Txn) error {
		if runs++; runs > 1 {
			return errStop
		}
		failWrite.Store(true)
		tx.Get([]byte("nr:w1")) // the error is ignored
		failWrite.Store(false)
		tx.Set([]byte("nr:t3"), []byte("txn"))
		tx.Get([]byte("nr:w2")) // the error is ignored
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Transact after a failed write: %v, want the error of its second run", err)
	}
	if v, err := other.Get(ctx, "nr:t3"); !errors.Is(err, client.Nil) {
		t.Fatalf("write of a broken transaction applied: %q %v", v, err)
	}
}

// failingConn fails every write while fail is set, closing the connection.
type failingConn struct {
	net.Conn
	fail *atomic.Bool
}

func (c failingConn) Write(b []byte) (int, error) {
	if c.fail.Load() {
		c.Conn.Close()
		return 0, errors.New("injected write failure")
	}
	return c.Conn.Write(b)
}
