package redis

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// startSyncAlways starts a server over a SyncAlways database on a file
// system that counts (and can fail) syncs.
func startSyncAlways(t *testing.T) (*errorfs.FS, *caskade.DB, *testServer) {
	t.Helper()
	efs := errorfs.New(vfs.OS())
	db, err := caskade.Open(t.TempDir(), &caskade.Options{FS: efs, Sync: caskade.SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return efs, db, startServerOn(t, db)
}

// TestPipelinedBlindWrites sends one write holding a long pipeline of blind
// writes (whose commits are deferred and shared) mixed with commands that
// read them, refused commands and errors, and checks every reply in order
// and the final state.
func TestPipelinedBlindWrites(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	var req, want strings.Builder
	step := func(command, reply string) {
		req.WriteString(command)
		want.WriteString(reply)
	}
	// More than maxDeferCmds blind writes in a row, so that a run is cut
	// at its bound.
	const n = 2500
	for i := range n {
		switch i % 5 {
		case 0, 1:
			step(cmd("SET", fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)), "+OK\r\n")
		case 2:
			step(cmd("SET", fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i), "EX", "1000"), "+OK\r\n")
		case 3:
			step(cmd("SETEX", fmt.Sprintf("k%d", i), "1000", fmt.Sprintf("v%d", i)), "+OK\r\n")
		case 4:
			step(cmd("MSET", fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i), fmt.Sprintf("m%d", i), "x"), "+OK\r\n")
		}
	}
	step(cmd("GET", "k0"), "$2\r\nv0\r\n")
	step(cmd("GET", fmt.Sprintf("k%d", n-1)), fmt.Sprintf("$%d\r\nv%d\r\n", len(itoa(n-1))+1, n-1))
	// Refused and failing blind writes in the middle of a run keep their
	// place, and the writes around them are committed.
	step(cmd("SET", "a", "1"), "+OK\r\n")
	step(cmd("SET", "a"), "-ERR wrong number of arguments for 'set' command\r\n")
	step(cmd("SET", "\xffx", "1"), "-"+errReservedKey+"\r\n")
	step(cmd("SET", "a", "2", "BOGUS"), "-ERR syntax error\r\n")
	step(cmd("SET", "a", "2", "EX", "0"), "-ERR invalid expire time in 'set' command\r\n")
	step(cmd("PSETEX", "p", "100000", "pv"), "+OK\r\n")
	step(cmd("SET", "e", "ev", "PXAT", "99999999999999"), "+OK\r\n")
	step(cmd("MSET", "b", "1", "c"), "-ERR wrong number of arguments for 'mset' command\r\n")
	step(cmd("MSET", "b", "1", "c", "2"), "+OK\r\n")
	// Commands that read see the deferred writes.
	step(cmd("SET", "a", "3", "NX"), "$-1\r\n")
	step(cmd("SET", "a", "4", "GET"), "$1\r\n1\r\n")
	step(cmd("SET", "n", "10"), "+OK\r\n")
	step(cmd("INCR", "n"), ":11\r\n")
	step(cmd("SET", "d", "x"), "+OK\r\n")
	step(cmd("SET", "d2", "x"), "+OK\r\n")
	step(cmd("DEL", "d", "d2", "nokey"), ":2\r\n")
	step(cmd("SET", "t", "x", "EX", "100"), "+OK\r\n")
	step(cmd("SET", "t", "y", "KEEPTTL"), "+OK\r\n")
	step(cmd("TTL", "t"), ":100\r\n")
	step(cmd("MGET", "a", "b", "c", "p", "e"), "*5\r\n$1\r\n4\r\n$1\r\n1\r\n$1\r\n2\r\n$2\r\npv\r\n$2\r\nev\r\n")
	step(cmd("SET", "last", "1"), "+OK\r\n")
	step(cmd("SET", "last", "2"), "+OK\r\n")
	c.do(req.String(), want.String())
	// The run at the end of the pipeline was committed before its replies.
	for i := range n {
		v, err := ts.db.Get([]byte(fmt.Sprintf("k%d", i)))
		if err != nil || string(v) != fmt.Sprintf("v%d", i) {
			t.Fatalf("k%d = %q, %v", i, v, err)
		}
	}
	for k, want := range map[string]string{"a": "4", "b": "1", "c": "2", "n": "11", "p": "pv", "e": "ev", "last": "2", "m4": "x"} {
		if v, err := ts.db.Get([]byte(k)); err != nil || string(v) != want {
			t.Errorf("%s = %q, %v; want %q", k, v, err, want)
		}
	}
	for _, k := range []string{"d", "d2", "\xffx"} {
		if _, err := ts.db.Get([]byte(k)); !errors.Is(err, caskade.ErrNotFound) {
			t.Errorf("%q: %v, want not found", k, err)
		}
	}
	info, err := ts.db.Stat([]byte("k2"))
	if err != nil || info.ExpiresAt.IsZero() {
		t.Errorf("k2 (SET EX): %+v, %v; want an expiry", info, err)
	}
}

// TestPipelinedWritesInStates checks that a pipeline of blind writes in
// MULTI, after WATCH and in a CSK transaction behaves as before.
func TestPipelinedWritesInStates(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.do(cmd("MULTI")+cmd("SET", "a", "1")+cmd("SET", "b", "2")+cmd("GET", "a")+cmd("EXEC"),
		"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n+OK\r\n+OK\r\n$1\r\n1\r\n")
	c.do(cmd("WATCH", "w")+cmd("SET", "w", "1")+cmd("SET", "x", "1")+cmd("MULTI")+cmd("SET", "y", "1")+cmd("EXEC"),
		"+OK\r\n+OK\r\n+OK\r\n+OK\r\n+QUEUED\r\n*-1\r\n")
	c.do(cmd("CSK.BEGIN")+cmd("SET", "tx", "1")+cmd("SET", "tx2", "2")+cmd("SET", "tx3", "3", "EX", "10")+cmd("CSK.COMMIT"),
		"+OK\r\n+OK\r\n+OK\r\n-ERR only plain SET is supported in a caskade transaction\r\n+OK\r\n")
	for k, want := range map[string]string{"a": "1", "b": "2", "w": "1", "x": "1", "tx": "1", "tx2": "2"} {
		if v, err := ts.db.Get([]byte(k)); err != nil || string(v) != want {
			t.Errorf("%s = %q, %v; want %q", k, v, err, want)
		}
	}
	if _, err := ts.db.Get([]byte("y")); !errors.Is(err, caskade.ErrNotFound) {
		t.Errorf("y: %v, want not found (EXEC aborted)", err)
	}
}

// TestPipelinedWritesFail checks the replies of a pipeline of blind writes
// whose shared commit fails: each gets the error a single SET gets, and a
// refused command in between keeps its own reply.
func TestPipelinedWritesFail(t *testing.T) {
	efs, db, ts := startSyncAlways(t)
	c := ts.dial()
	c.do(cmd("SET", "ok", "1"), "+OK\r\n")
	efs.Inject(errorfs.OpSync, syscall.ENOSPC)
	efs.Inject(errorfs.OpWrite, syscall.ENOSPC)
	var req strings.Builder
	for i := range 16 {
		if i == 5 {
			req.WriteString(cmd("SET", "bad", "v", "BOGUS"))
		}
		req.WriteString(cmd("SET", fmt.Sprintf("k%d", i), "v"))
	}
	req.WriteString(cmd("MSET", "m1", "1", "m2", "2"))
	c.send(req.String())
	var replies []string
	for range 18 {
		replies = append(replies, c.readLine())
	}
	// A single SET now gets the error the pipelined ones got.
	c.send(cmd("SET", "alone", "v"))
	alone := c.readLine()
	if !strings.HasPrefix(alone, "-") {
		t.Fatalf("single SET after the failure: %q, want an error", alone)
	}
	t.Logf("error reply: %q", alone)
	for i, r := range replies {
		want := alone
		if i == 5 {
			want = "-ERR syntax error\r\n"
		}
		if r != want {
			t.Errorf("reply %d = %q, want %q", i, r, want)
		}
	}
	for _, k := range []string{"k0", "k15", "m1"} {
		if _, err := db.Get([]byte(k)); !errors.Is(err, caskade.ErrNotFound) {
			t.Errorf("%s: %v, want not found", k, err)
		}
	}
	efs.Reset()
}

// TestPipelinedWritesClosedDB checks the replies of a pipeline of blind
// writes to a database closed underneath the server.
func TestPipelinedWritesClosedDB(t *testing.T) {
	db, err := caskade.Open(t.TempDir(), &caskade.Options{Sync: caskade.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerOn(t, db)
	c := ts.dial()
	c.do(cmd("SET", "ok", "1"), "+OK\r\n")
	db.Close()
	c.send(cmd("SET", "alone", "v"))
	alone := c.readLine()
	if !strings.HasPrefix(alone, "-") {
		t.Fatalf("SET on a closed DB: %q, want an error", alone)
	}
	var req, want strings.Builder
	for i := range 16 {
		req.WriteString(cmd("SET", fmt.Sprintf("k%d", i), "v"))
		want.WriteString(alone)
		if i == 7 {
			req.WriteString(cmd("MSET", "a", "1", "b"))
			want.WriteString("-ERR wrong number of arguments for 'mset' command\r\n")
			req.WriteString(cmd("MSET", "a", "1", "b", "2"))
			want.WriteString(alone)
		}
	}
	c.do(req.String(), want.String())
	if got := ts.srv.cmds.m["set"].failed.Load(); got != 17 {
		t.Errorf("set failed count %d, want 17", got)
	}
}

// TestPipelineSharesFsync checks that under SyncAlways a pipeline of 16
// SETs costs about one fsync, not 16.
func TestPipelineSharesFsync(t *testing.T) {
	efs, db, ts := startSyncAlways(t)
	c := ts.dial()
	c.do(cmd("PING"), "+PONG\r\n")

	// One at a time: one fsync each.
	before := efs.Count(errorfs.OpSync)
	for i := range 16 {
		c.do(cmd("SET", fmt.Sprintf("s%d", i), "v"), "+OK\r\n")
	}
	alone := efs.Count(errorfs.OpSync) - before

	var req, want strings.Builder
	for i := range 16 {
		req.WriteString(cmd("SET", fmt.Sprintf("p%d", i), "v"))
		want.WriteString("+OK\r\n")
	}
	before = efs.Count(errorfs.OpSync)
	c.do(req.String(), want.String())
	piped := efs.Count(errorfs.OpSync) - before
	t.Logf("fsyncs: 16 SETs one at a time %d, pipelined %d", alone, piped)
	if alone < 16 {
		t.Fatalf("16 single SETs cost %d fsyncs; the count does not work", alone)
	}
	if piped > 3 { // one, unless the pipeline arrived in pieces
		t.Fatalf("a pipeline of 16 SETs cost %d fsyncs", piped)
	}
	for i := range 16 {
		if v, err := db.Get([]byte(fmt.Sprintf("p%d", i))); err != nil || string(v) != "v" {
			t.Fatalf("p%d = %q, %v", i, v, err)
		}
	}
}

// TestPipelinedWritesPartlyFail checks a run in which some commands'
// batches fail (a key over the engine's limit) and the others commit.
func TestPipelinedWritesPartlyFail(t *testing.T) {
	db, err := caskade.Open(t.TempDir(), &caskade.Options{Sync: caskade.SyncNone, MaxKeySize: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := startServerOn(t, db)
	c := ts.dial()
	long := strings.Repeat("k", 17)
	c.send(cmd("SET", long, "v"))
	alone := c.readLine()
	if !strings.HasPrefix(alone, "-ERR ") {
		t.Fatalf("SET of a long key: %q, want an error", alone)
	}
	var req, want strings.Builder
	for i := range 20 {
		switch i % 4 {
		case 1:
			req.WriteString(cmd("SET", long, "v"))
			want.WriteString(alone)
		case 2:
			req.WriteString(cmd("MSET", fmt.Sprintf("m%d", i), "v", long, "v"))
			want.WriteString(alone)
		default:
			req.WriteString(cmd("SET", fmt.Sprintf("k%d", i), "v"))
			want.WriteString("+OK\r\n")
		}
	}
	c.do(req.String()+cmd("GET", "k19"), want.String()+"$1\r\nv\r\n")
	for i := range 20 {
		_, err := db.Get([]byte(fmt.Sprintf("k%d", i)))
		if ok := i%4 == 0 || i%4 == 3; ok != (err == nil) {
			t.Errorf("k%d: %v", i, err)
		}
		if _, err := db.Get([]byte(fmt.Sprintf("m%d", i))); !errors.Is(err, caskade.ErrNotFound) {
			t.Errorf("m%d: %v, want not found (its MSET failed as a whole)", i, err)
		}
	}
}

// TestEmptyCommandsAfterWrite checks that empty commands after a write do
// not hold back its commit and reply.
func TestEmptyCommandsAfterWrite(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.do(cmd("SET", "a", "1")+cmd("SET", "b", "2")+"\r\n  \r\n*0\r\n", "+OK\r\n+OK\r\n")
	if v, err := ts.db.Get([]byte("b")); err != nil || string(v) != "2" {
		t.Fatalf("b = %q, %v", v, err)
	}
	c.do("SET c 3\r\n\r\n", "+OK\r\n")
	c.do(cmd("GET", "c"), "$1\r\n3\r\n")
}

// TestPipelinedIncrements sends a pipeline of increments mixed with blind
// writes, refusals and reads: every reply is the one the command would
// get alone, an increment of a non-integer or an overflow fails alone, and
// the pipeline shares its fsyncs.
func TestPipelinedIncrements(t *testing.T) {
	efs, db, ts := startSyncAlways(t)
	c := ts.dial()
	c.do(cmd("SET", "t", "5", "EX", "100"), "+OK\r\n")
	var req, want strings.Builder
	step := func(command, reply string) {
		req.WriteString(command)
		want.WriteString(reply)
	}
	for i := range 40 {
		step(cmd("INCR", "n"), fmt.Sprintf(":%d\r\n", i+1))
	}
	step(cmd("INCRBY", "n", "-50"), ":-10\r\n")
	step(cmd("DECR", "n"), ":-11\r\n")
	step(cmd("DECRBY", "n", "4"), ":-15\r\n")
	step(cmd("SET", "s", "abc"), "+OK\r\n")
	step(cmd("INCR", "s"), "-"+errNotInt+"\r\n")
	step(cmd("INCRBY", "n", "x"), "-"+errNotInt+"\r\n")
	step(cmd("SET", "big", "9223372036854775807"), "+OK\r\n")
	step(cmd("INCR", "big"), "-"+errOverflow+"\r\n")
	step(cmd("DECRBY", "n", "-9223372036854775808"), "-ERR decrement would overflow\r\n")
	step(cmd("INCR", "t"), ":6\r\n")
	step(cmd("INCR", "fresh"), ":1\r\n")
	step(cmd("GET", "n"), "$3\r\n-15\r\n") // a read sees the increments
	step(cmd("INCR", "n"), ":-14\r\n")
	step(cmd("TTL", "t"), ":100\r\n") // INCR keeps the TTL
	for range 20 {
		step(cmd("INCR", "end"), "")
	}
	var tail strings.Builder
	for i := range 20 {
		fmt.Fprintf(&tail, ":%d\r\n", i+1)
	}
	want.WriteString(tail.String())
	before := efs.Count(errorfs.OpSync)
	c.do(req.String(), want.String())
	if n := efs.Count(errorfs.OpSync) - before; n > 10 {
		t.Errorf("a pipeline of 70 increments and writes cost %d fsyncs", n)
	}
	for k, want := range map[string]string{"n": "-14", "s": "abc", "big": "9223372036854775807", "t": "6", "end": "20"} {
		if v, err := db.Get([]byte(k)); err != nil || string(v) != want {
			t.Errorf("%s = %q, %v; want %q", k, v, err, want)
		}
	}

	// Pipelines on many connections at once lose no increment.
	const conns, each = 8, 100
	done := make(chan struct{})
	for range conns {
		go func() {
			defer func() { done <- struct{}{} }()
			cc := ts.dial()
			var req strings.Builder
			for range each {
				req.WriteString(cmd("INCR", "shared"))
			}
			cc.send(req.String())
			for range each {
				line := cc.readLine()
				if !strings.HasPrefix(line, ":") {
					t.Errorf("INCR replied %q", line)
				}
			}
		}()
	}
	for range conns {
		<-done
	}
	if v, err := db.Get([]byte("shared")); err != nil || string(v) != fmt.Sprint(conns*each) {
		t.Fatalf("shared = %q, %v; want %d", v, err, conns*each)
	}
}

// A failed SAVE, BGSAVE or BGREWRITEAOF shows in INFO persistence as
// Redis shows it, rdb_last_bgsave_status:err and aof_last_bgrewrite_status:err,
// for monitoring to see, and the next success clears it.
func TestInfoReportsFailedSaveAndMerge(t *testing.T) {
	efs := errorfs.New(vfs.OS())
	db, err := caskade.Open(t.TempDir(), &caskade.Options{FS: efs, Sync: caskade.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ts := startServerOn(t, db, func(s *Server) { s.BackupDir = t.TempDir() })
	c := ts.dial()
	status := func(field string) string {
		t.Helper()
		v, ok := infoSection(t, c, "persistence")[field]
		if !ok {
			t.Fatalf("INFO persistence lacks %s", field)
		}
		return v
	}
	c.do(cmd("SET", "k", "1"), "+OK\r\n")
	c.do(cmd("SET", "k", "2"), "+OK\r\n") // a dead record, for merge to rewrite
	full := func(string) error { return syscall.ENOSPC }
	efs.InjectFunc(errorfs.OpWrite, full)
	c.send(cmd("SAVE"))
	if line := c.readLine(); line != "-ERR the backup failed: No space left on device (the server's log has the cause)\r\n" {
		t.Fatalf("SAVE on a full disk: %q", line)
	}
	if got := status("rdb_last_bgsave_status"); got != "err" {
		t.Fatalf("rdb_last_bgsave_status after a failed SAVE: %s", got)
	}
	c.do(cmd("BGREWRITEAOF"), "+Background append only file rewriting started\r\n")
	waitFor(t, "the merge to finish", func() bool { return !ts.srv.merging.Load() })
	if got := status("aof_last_bgrewrite_status"); got != "err" {
		t.Fatalf("aof_last_bgrewrite_status after a failed merge: %s", got)
	}
	efs.InjectFunc(errorfs.OpWrite, nil)
	c.do(cmd("BGSAVE"), "+Background saving started\r\n")
	waitFor(t, "BGSAVE to finish", func() bool { return !ts.srv.bgsave.Load() })
	if got := status("rdb_last_bgsave_status"); got != "ok" {
		t.Fatalf("rdb_last_bgsave_status after a good BGSAVE: %s", got)
	}
	c.do(cmd("BGREWRITEAOF"), "+Background append only file rewriting started\r\n")
	waitFor(t, "the merge to finish", func() bool { return !ts.srv.merging.Load() })
	if got := status("aof_last_bgrewrite_status"); got != "ok" {
		t.Fatalf("aof_last_bgrewrite_status after a good merge: %s", got)
	}
}
