package redis

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/caskade/caskade"
	goredis "github.com/redis/go-redis/v9"
)

// Inside EXEC a range read (KEYS, SCAN, DBSIZE, RANDOMKEY) is checked at
// commit like a point read: a key set or deleted in the range after the
// snapshot makes the commit conflict (and EXEC run again), one outside it
// does not.
func TestExecRangeReadsAreChecked(t *testing.T) {
	db, err := caskade.Open(t.TempDir(), &caskade.Options{Sync: caskade.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"k1", "k2", "z1"} {
		db.Set([]byte(k), []byte("v"))
	}
	for _, c := range []struct {
		name   string
		change func() error
		ok     bool
	}{
		{"untouched", func() error { return nil }, true},
		{"set outside", func() error { return db.Set([]byte("z2"), []byte("v")) }, true},
		{"set inside", func() error { return db.Set([]byte("k3"), []byte("v")) }, false},
		{"delete inside", func() error { return db.Delete([]byte("k1")) }, false},
	} {
		var st store
		st.begin(db, true)
		st.checkRanges = true
		st.useSnapshot()
		n := 0
		if err := st.scan([]byte("k"), []byte("l"), func([]byte, entry) bool { n++; return true }); err != nil {
			t.Fatal(err)
		}
		st.set([]byte("out"), []byte("x"), 0)
		if err := c.change(); err != nil {
			t.Fatal(err)
		}
		err := st.commit()
		st.end()
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, caskade.ErrConflict)) {
			t.Fatalf("%s: commit after reading %d keys = %v, want ok=%v", c.name, n, err, c.ok)
		}
	}
}

// EXECs that read a range other clients keep writing to still commit (they
// run again on conflict), with go-redis.
func TestExecRangeReadsUnderWrites(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	writer := goredis.NewClient(&goredis.Options{Addr: ts.addr})
	defer writer.Close()
	// An EXEC may run several times, each scanning every key written so
	// far; the race detector makes that slow.
	rdb := goredis.NewClient(&goredis.Options{Addr: ts.addr, ReadTimeout: time.Minute})
	defer rdb.Close()
	stop := make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				wrote <- nil
				return
			default:
			}
			if err := writer.Set(ctx, fmt.Sprintf("w:%06d", i), "v", 0).Err(); err != nil {
				wrote <- err
				return
			}
		}
	}()
	const execs = 100
	last := 0
	for i := range execs {
		var keys *goredis.StringSliceCmd
		var size *goredis.IntCmd
		_, err := rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			keys = p.Keys(ctx, "w:*")
			size = p.DBSize(ctx)
			p.Incr(ctx, "execs")
			return nil
		})
		if err != nil {
			t.Fatalf("EXEC %d: %v", i, err)
		}
		// Keys are only added, so each EXEC sees at least as many, and
		// DBSIZE counts them, the counter and (from the second) nothing
		// else.
		n := len(keys.Val())
		if n < last {
			t.Fatalf("EXEC %d saw %d keys after %d", i, n, last)
		}
		if want := int64(n + min(i, 1)); size.Val() != want {
			t.Fatalf("EXEC %d: DBSIZE %d with %d keys", i, size.Val(), n)
		}
		last = n
	}
	close(stop)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(ctx, "execs").Int(); err != nil || got != execs {
		t.Fatalf("execs = %d, %v", got, err)
	}
}

// A command that panics while it holds the database's turn lock closes its
// connection and releases the lock: otherwise every later commit would
// wait for it.
func TestPanicInTurnReleasesIt(t *testing.T) {
	testSpecs = []spec{{name: "testpanicinturn", arity: 1, acl: "keyspace", fn: func(c *client, args [][]byte) {
		c.turn.Wait(caskade.TurnAfter)
		panic("test: a command panics in its turn")
	}}}
	t.Cleanup(func() { testSpecs = nil })
	ts := startServer(t, nil)
	rc := ts.dial()
	rc.send("TESTPANICINTURN\r\n")
	rc.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := rc.br.ReadString('\n'); err == nil {
		t.Fatalf("the connection stayed open after a panic; it replied %q", line)
	}
	if n := ts.srv.panics.Load(); n != 1 {
		t.Fatalf("%d panics recorded", n)
	}
	free := make(chan struct{})
	go func() {
		turn := ts.db.Turn()
		turn.Wait(caskade.TurnAfter)
		turn.Done()
		close(free)
	}()
	select {
	case <-free:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn lock is still held after the panic")
	}
}
