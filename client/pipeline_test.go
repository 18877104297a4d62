package client_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/caskade/caskade/client"
)

func TestPipeline10000(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		ctx := testCtx(t)
		c := dial(t, ts.addr, nil)
		const n = 10000
		cmds, err := c.Pipelined(ctx, func(p *client.Pipe) error {
			for i := range n {
				p.Set("p:"+strconv.Itoa(i), []byte("v"+strconv.Itoa(i)), client.SetArgs{})
			}
			return nil
		})
		check(t, err)
		eq(t, "commands", len(cmds), n)
		for i, cmd := range cmds {
			if ok, err := cmd.Bool(); err != nil || !ok {
				t.Fatalf("SET %d: %v %v", i, ok, err)
			}
		}
		p := c.Pipeline()
		gets := make([]*client.Cmd, n)
		for i := range n {
			gets[i] = p.Get("p:" + strconv.Itoa(i))
		}
		missing := p.Get("p:missing")
		incr := p.Incr("p:counter")
		eq(t, "Len", p.Len(), n+2)
		_, err = p.Exec(ctx)
		check(t, err) // a null is not an error of Exec
		eq(t, "Len after Exec", p.Len(), 0)
		for i, g := range gets {
			if v, err := g.Str(); err != nil || v != "v"+strconv.Itoa(i) {
				t.Fatalf("GET %d = %q, %v", i, v, err)
			}
		}
		if _, err := missing.Bytes(); !errors.Is(err, client.Nil) {
			t.Fatalf("GET missing in a pipeline: %v", err)
		}
		eq(t, "INCR", must[int64](t)(incr.Int()), 1)

		// The same on a dedicated connection, and a server error inside.
		conn := must[*client.Conn](t)(c.Conn(ctx))
		defer conn.Close()
		cmds, err = conn.Pipelined(ctx, func(p *client.Pipe) error {
			for i := range n {
				p.Get("p:" + strconv.Itoa(i))
			}
			p.Do("INCR", "p:0") // not an integer
			p.Do("ECHO", "after")
			return nil
		})
		var se *client.Error
		if !errors.As(err, &se) || se.Prefix != "ERR" {
			t.Fatalf("Exec error %v, want the INCR error", err)
		}
		eq(t, "last GET", must[string](t)(cmds[n-1].Str()), "v"+strconv.Itoa(n-1))
		if cmds[n].Err() == nil {
			t.Fatal("INCR of a non-integer succeeded")
		}
		eq(t, "ECHO after the error", must[string](t)(cmds[n+1].Str()), "after")

		// fn's error sends nothing.
		boom := errors.New("boom")
		if _, err := c.Pipelined(ctx, func(p *client.Pipe) error { p.Incr("p:counter"); return boom }); err != boom {
			t.Fatalf("Pipelined with fn error: %v", err)
		}
		eq(t, "counter untouched", string(must[[]byte](t)(c.Get(ctx, "p:counter"))), "1")

		// Stateful commands are refused on the shared connections.
		p.Do("SELECT", 2)
		if _, err := p.Exec(ctx); !errors.Is(err, client.ErrStateful) {
			t.Fatalf("pipeline with SELECT: %v", err)
		}
		// An empty pipeline.
		if cmds, err := c.Pipeline().Exec(ctx); err != nil || len(cmds) != 0 {
			t.Fatalf("empty Exec = %v, %v", cmds, err)
		}
	})
}

func TestTxPipelined(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		ctx := testCtx(t)
		c := dial(t, ts.addr, nil)
		cmds, err := c.TxPipelined(ctx, func(p *client.Pipe) error {
			p.Set("tx:a", []byte("1"), client.SetArgs{})
			p.Incr("tx:a")
			p.Get("tx:a")
			return nil
		})
		check(t, err)
		eq(t, "INCR in MULTI", must[int64](t)(cmds[1].Int()), 2)
		eq(t, "GET in MULTI", must[string](t)(cmds[2].Str()), "2")

		// A runtime error inside EXEC fails only its command.
		cmds, err = c.TxPipelined(ctx, func(p *client.Pipe) error {
			p.Set("tx:s", []byte("x"), client.SetArgs{})
			p.Incr("tx:s")
			p.Incr("tx:a")
			return nil
		})
		if err == nil || cmds[1].Err() == nil || cmds[0].Err() != nil {
			t.Fatalf("EXEC with a failing INCR: %v / %v", err, cmds[1].Err())
		}
		eq(t, "INCR after the failure", must[int64](t)(cmds[2].Int()), 3)

		// A command rejected while queuing aborts the whole transaction.
		cmds, err = c.TxPipelined(ctx, func(p *client.Pipe) error {
			p.Incr("tx:a")
			p.Do("GET") // wrong number of arguments
			return nil
		})
		if !errors.Is(err, client.ErrExecAbort) {
			t.Fatalf("EXECABORT: %v", err)
		}
		if cmds[0].Err() == nil {
			t.Fatal("a command of an aborted transaction succeeded")
		}
		eq(t, "tx:a untouched", string(must[[]byte](t)(c.Get(ctx, "tx:a"))), "3")
		// The shared connection is out of MULTI: plain commands work.
		eq(t, "Incr after EXECABORT", must[int64](t)(c.Incr(ctx, "tx:a")), 4)
	})
}

func TestConnAppendReceive(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		ctx := testCtx(t)
		c := dial(t, ts.addr, nil)
		conn := must[*client.Conn](t)(c.Conn(ctx))
		if _, err := conn.Receive(ctx); !errors.Is(err, client.ErrNoReply) {
			t.Fatalf("Receive with nothing sent: %v", err)
		}
		const n = 1000
		for i := range n {
			check(t, conn.Append("SET", "ar:"+strconv.Itoa(i), i))
		}
		check(t, conn.Flush(ctx))
		check(t, conn.Append("GET", "ar:7"))
		check(t, conn.Append("NOSUCH"))
		check(t, conn.Append("GET", "ar:999"))
		if _, err := conn.Do(ctx, "PING"); !errors.Is(err, client.ErrPendingReplies) {
			t.Fatalf("Do with pending replies: %v", err)
		}
		for i := range n {
			v, err := conn.Receive(ctx)
			if err != nil || !v.IsOK() {
				t.Fatalf("reply %d: %v %v", i, v, err)
			}
		}
		eq(t, "GET ar:7", must[string](t)(must[client.Value](t)(conn.Receive(ctx)).Str()), "7")
		if _, err := conn.Receive(ctx); !errors.Is(err, client.ErrUnknownCommand) {
			t.Fatalf("unknown command: %v", err)
		}
		eq(t, "GET ar:999", must[string](t)(must[client.Value](t)(conn.Receive(ctx)).Str()), "999")
		if _, err := conn.Receive(ctx); !errors.Is(err, client.ErrNoReply) {
			t.Fatalf("Receive after all replies: %v", err)
		}
		// State-changing commands are allowed on a Conn.
		eq(t, "SELECT", must[client.Value](t)(conn.Do(ctx, "SELECT", 5)).IsOK(), true)
		must[client.Value](t)(conn.Do(ctx, "SET", "ar:7", "db5"))
		eq(t, "GET in db 5", must[string](t)(must[client.Value](t)(conn.Do(ctx, "GET", "ar:7")).Str()), "db5")
		check(t, conn.Close())
		if _, err := conn.Do(ctx, "PING"); !errors.Is(err, client.ErrClosed) {
			t.Fatalf("Do after Close: %v", err)
		}
		// The Conn that SELECTed was not returned to the pool: a new Conn is
		// in database 0.
		conn2 := must[*client.Conn](t)(c.Conn(ctx))
		defer conn2.Close()
		eq(t, "GET in db 0", must[string](t)(must[client.Value](t)(conn2.Do(ctx, "GET", "ar:7")).Str()), "7")

		// WATCH/MULTI/EXEC by hand on a Conn.
		must[client.Value](t)(conn2.Do(ctx, "WATCH", "ar:1"))
		cmds, err := conn2.TxPipelined(ctx, func(p *client.Pipe) error {
			p.Incr("ar:1")
			return nil
		})
		check(t, err)
		eq(t, "INCR in EXEC", must[int64](t)(cmds[0].Int()), 2)
	})
}

func TestWatch(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		ctx := testCtx(t)
		c := dial(t, ts.addr, nil)
		other := dial(t, ts.addr, nil)
		// A watched key changed by someone else makes EXEC fail once; Watch
		// runs fn again.
		runs := 0
		err := c.Watch(ctx, func(tx *client.Tx) error {
			runs++
			v, err := tx.Get(ctx, "w")
			if err != nil && !errors.Is(err, client.Nil) {
				return err
			}
			if runs == 1 {
				must[[]byte](t)(other.Set(ctx, "w", []byte("10"), client.SetArgs{}))
			}
			n, _ := strconv.Atoi(string(v))
			_, err = tx.TxPipelined(ctx, func(p *client.Pipe) error {
				p.Set("w", []byte(strconv.Itoa(n+1)), client.SetArgs{})
				return nil
			})
			return err
		}, "w")
		check(t, err)
		eq(t, "runs", runs, 2)
		eq(t, "w", string(must[[]byte](t)(c.Get(ctx, "w"))), "11")

		// An error from fn is returned as is, without retrying.
		boom := errors.New("boom")
		runs = 0
		if err := c.Watch(ctx, func(tx *client.Tx) error { runs++; return boom }, "w"); err != boom {
			t.Fatalf("Watch with fn error: %v", err)
		}
		eq(t, "runs after error", runs, 1)

		// Bounded retries.
		c2 := dial(t, ts.addr, &client.Options{WatchRetries: 3})
		runs = 0
		err = c2.Watch(ctx, func(tx *client.Tx) error {
			runs++
			must[int64](t)(other.Incr(ctx, "w"))
			_, err := tx.TxPipelined(ctx, func(p *client.Pipe) error { p.Incr("w"); return nil })
			return err
		}, "w")
		if !errors.Is(err, client.ErrTxFailed) || runs != 3 {
			t.Fatalf("Watch always conflicting: %v after %d runs", err, runs)
		}

		// A panic leaves no watching connection behind for later use.
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("panic not re-raised")
				}
			}()
			c.Watch(ctx, func(tx *client.Tx) error { panic("oops") }, "w")
		}()
		check(t, c.Watch(ctx, func(tx *client.Tx) error {
			_, err := tx.TxPipelined(ctx, func(p *client.Pipe) error { p.Set("w", []byte("0"), client.SetArgs{}); return nil })
			return err
		}, "w"))
	})
}

func TestWatchContention(t *testing.T) {
	forEachServer(t, func(t *testing.T, ts *testServer) {
		ctx := testCtx(t)
		c := dial(t, ts.addr, &client.Options{WatchRetries: 10000})
		const workers, each = 8, 40
		errs := make(chan error, workers)
		for range workers {
			go func() {
				for range each {
					err := c.Watch(ctx, func(tx *client.Tx) error {
						v, err := tx.Get(ctx, "counter")
						if err != nil && !errors.Is(err, client.Nil) {
							return err
						}
						n, _ := strconv.Atoi(string(v))
						_, err = tx.TxPipelined(ctx, func(p *client.Pipe) error {
							p.Set("counter", []byte(strconv.Itoa(n+1)), client.SetArgs{})
							return nil
						})
						return err
					}, "counter")
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
		eq(t, "counter", string(must[[]byte](t)(c.Get(ctx, "counter"))), strconv.Itoa(workers*each))
	})
}

func TestPipelineContextDeadline(t *testing.T) {
	ts := startCaskade(t, nil)
	c := dial(t, ts.addr, &client.Options{PoolSize: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	p := c.Pipeline()
	p.Do("DEBUG", "SLEEP", "0.3")
	get := p.Get("pd")
	_, err := p.Exec(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, client.ErrMaybeExecuted) {
		t.Fatalf("pipeline past its deadline: %v", err)
	}
	if !errors.Is(get.Err(), context.DeadlineExceeded) {
		t.Fatalf("command of the pipeline: %v", get.Err())
	}
	// The connection stays in step: the next reply is this call's.
	bg := testCtx(t)
	must[[]byte](t)(c.Set(bg, "pd", []byte(fmt.Sprint("after")), client.SetArgs{}))
	eq(t, "Get after the timed-out pipeline", string(must[[]byte](t)(c.Get(bg, "pd"))), "after")
}
