package redis

import (
	"context"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/internal/wiretest"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
	goredis "github.com/redis/go-redis/v9"
)

// TestStorageErrorReplies fills the disk and then fails an fsync under a
// server, and checks that the error replies say what happened as Redis
// says it (MISCONF, with the system's reason) without naming the server's
// files, that the log has the cause with the file, and that a write
// refused for lack of space leaves writes going once there is room.
func TestStorageErrorReplies(t *testing.T) {
	dir := t.TempDir()
	efs := errorfs.New(vfs.NewMem()) // as in TestInfoLastWriteStatus
	logs := &wiretest.LogBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	db, err := caskade.Open(dir, &caskade.Options{FS: efs, Sync: caskade.SyncAlways, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ts := startServerOn(t, db, func(s *Server) { s.Logger = logger })
	c := ts.dial()
	c.do(cmd("SET", "before", "1"), "+OK\r\n")
	noPath := func(what, line string) {
		t.Helper()
		if strings.Contains(line, dir) || strings.Contains(line, ".data") {
			t.Errorf("%s: the reply names a file: %q", what, line)
		}
	}

	const noSpace = "-MISCONF Errors writing to the data files: No space left on device" +
		" (the write was refused; writes resume once there is room)\r\n"
	early := ts.dial()
	early.do(cmd("MULTI"), "+OK\r\n")
	early.do(cmd("SET", "m", "1"), "+QUEUED\r\n") // while writes went through
	efs.Inject(errorfs.OpWrite, syscall.ENOSPC)
	for _, step := range []struct {
		what, req string
		replies   int
	}{
		{"SET", cmd("SET", "k", "v"), 1},
		{"MSET", cmd("MSET", "a", "1", "b", "2"), 1},
		{"INCR", cmd("INCR", "n"), 1},
		{"pipelined SET", cmd("SET", "p1", "v") + cmd("SET", "p2", "v"), 2},
	} {
		c.send(step.req)
		for range step.replies {
			line := c.readLine()
			noPath(step.what, line)
			if line != noSpace {
				t.Errorf("%s on a full disk: %q, want %q", step.what, line, noSpace)
			}
		}
	}
	// An EXEC whose commit is refused gets the error itself, as Redis
	// refuses EXEC; a write queued while writes fail is refused at once,
	// and its EXEC aborts, as in Redis.
	early.do(cmd("EXEC"), noSpace)
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("GET", "m"), "+QUEUED\r\n")
	c.do(cmd("SET", "m", "1"), noSpace)
	c.do(cmd("EXEC"), "-EXECABORT Transaction discarded because of previous errors.\r\n")
	if !strings.Contains(logs.String(), dir) || !strings.Contains(logs.String(), "no space left on device") {
		t.Errorf("the log lacks the cause with its file:\n%s", logs.String())
	}

	// Room again: writes go on.
	efs.Inject(errorfs.OpWrite, nil)
	c.do(cmd("SET", "k", "v"), "+OK\r\n")

	// A failed fsync stops writes; the reply gives the system's reason.
	// The commit whose fsync failed may be on disk, and says so.
	c.do(cmd("CSK.BEGIN"), "+OK\r\n")
	c.do(cmd("SET", "t", "0"), "+OK\r\n")
	efs.Inject(errorfs.OpSync, syscall.EIO)
	c.do(cmd("CSK.COMMIT"), "-MISCONF Errors writing to the data files: Input/output error"+
		" (the transaction may or may not have committed; writes are stopped until the server restarts; its log has the cause)\r\n")
	const stopped = "-MISCONF Errors writing to the data files: Input/output error" +
		" (writes are stopped until the server restarts; its log has the cause)\r\n"
	c.do(cmd("SET", "k", "w"), stopped)
	c.do(cmd("SET", "k", "x"), stopped)
	c.do(cmd("GET", "k"), "$1\r\nv\r\n") // reads go on
	c.do(cmd("CSK.BEGIN"), "+OK\r\n")
	c.do(cmd("SET", "t", "1"), "+OK\r\n")
	c.send(cmd("CSK.COMMIT"))
	// Refused before anything was written: surely not committed, so not
	// the "may or may not have committed" reply of a failed commit.
	if line := c.readLine(); line != stopped {
		t.Errorf("CSK.COMMIT after writes stopped: %q, want %q", line, stopped)
	}
}

// TestInfoLastWriteStatus checks INFO persistence's aof_last_write_status
// as Redis keeps it: err from a write refused for lack of space until a
// write succeeds, and err for good once a failed fsync stopped writes.
func TestInfoLastWriteStatus(t *testing.T) {
	// The memory file system cannot tell its free space, so nothing but a
	// write clears a refusal (caskade.DB clears it once the disk reports
	// room, which a real one with an injected ENOSPC always does).
	efs := errorfs.New(vfs.NewMem())
	db, err := caskade.Open(t.TempDir(), &caskade.Options{FS: efs, Sync: caskade.SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ts := startServerOn(t, db)
	c := ts.dial()
	status := func(want string) {
		t.Helper()
		if got := infoSection(t, c, "persistence")["aof_last_write_status"]; got != want {
			t.Fatalf("aof_last_write_status = %q, want %q", got, want)
		}
	}
	c.do(cmd("SET", "k", "1"), "+OK\r\n")
	status("ok")
	efs.Inject(errorfs.OpWrite, syscall.ENOSPC)
	c.send(cmd("SET", "k", "2"))
	if line := c.readLine(); !strings.HasPrefix(line, "-MISCONF ") {
		t.Fatalf("SET on a full disk: %q", line)
	}
	status("err")
	c.do(cmd("GET", "k"), "$1\r\n1\r\n") // a read changes nothing
	status("err")
	efs.Inject(errorfs.OpWrite, nil)
	c.do(cmd("SET", "k", "3"), "+OK\r\n")
	status("ok")
	efs.Inject(errorfs.OpSync, syscall.EIO)
	c.send(cmd("SET", "k", "4"))
	if line := c.readLine(); !strings.HasPrefix(line, "-MISCONF ") {
		t.Fatalf("SET with fsync failing: %q", line)
	}
	status("err")
	efs.Inject(errorfs.OpSync, nil) // stopped writes stay stopped
	c.send(cmd("SET", "k", "5"))
	c.readLine()
	status("err")
}

// TestPingWhileWritesFail checks PING as Redis answers it while it cannot
// persist writes (processCommand's deny_write_type): with the MISCONF
// error a write gets, in RESP2 and RESP3, and queued in MULTI (which
// then aborts), whether the disk refused the last write or a failed
// fsync stopped writes; PONG again once a write goes through. HELLO,
// AUTH, INFO and reads go on, and a PING queued before the failure runs
// in EXEC, as in Redis, whose EXEC of no write is not refused.
func TestPingWhileWritesFail(t *testing.T) {
	efs := errorfs.New(vfs.NewMem()) // as in TestInfoLastWriteStatus
	db, err := caskade.Open(t.TempDir(), &caskade.Options{FS: efs, Sync: caskade.SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ts := startServerOn(t, db, func(s *Server) { s.Password = "pw" })
	c, c3, early := ts.dial(), ts.dial(), ts.dial()
	c.do(cmd("AUTH", "pw"), "+OK\r\n")
	c3.do(cmd("AUTH", "pw"), "+OK\r\n")
	c3.hello3()
	early.do(cmd("AUTH", "pw"), "+OK\r\n")
	early.do(cmd("MULTI"), "+OK\r\n")
	early.do(cmd("PING"), "+QUEUED\r\n")
	c.do(cmd("PING"), "+PONG\r\n")

	const (
		noSpace = "-MISCONF Errors writing to the data files: No space left on device" +
			" (the write was refused; writes resume once there is room)\r\n"
		stopped = "-MISCONF Errors writing to the data files: Input/output error" +
			" (writes are stopped until the server restarts; its log has the cause)\r\n"
	)
	refused := func(want string) {
		t.Helper()
		c.do(cmd("PING"), want)
		c.do(cmd("PING", "hi"), want)
		c3.do(cmd("PING"), want)
		c.do("PING\r\n", want) // inline
		c.do(cmd("MULTI"), "+OK\r\n")
		c.do(cmd("PING"), want)
		c.do(cmd("GET", "k"), "+QUEUED\r\n")
		c.do(cmd("EXEC"), "-EXECABORT Transaction discarded because of previous errors.\r\n")
		c.do(cmd("MULTI"), "+OK\r\n")
		c.do(cmd("INCR", "k"), want) // a write, refused before it is queued
		c.do(cmd("EXEC"), "-EXECABORT Transaction discarded because of previous errors.\r\n")
		// Not authenticated: NOAUTH first, as in Redis.
		anon := ts.dial()
		anon.do(cmd("PING"), "-NOAUTH Authentication required.\r\n")
		anon.do(cmd("AUTH", "pw"), "+OK\r\n")
		anon.do(cmd("PING"), want)
		anon.send(cmd("HELLO", "3"))
		if line := anon.readLine(); !strings.HasPrefix(line, "%") {
			t.Fatalf("HELLO 3 while writes fail: %q", line)
		}
		if got := infoSection(t, c, "persistence")["aof_last_write_status"]; got != "err" {
			t.Fatalf("aof_last_write_status = %q, want err", got)
		}
		c.do(cmd("GET", "k"), "$1\r\n1\r\n")
	}

	c.do(cmd("SET", "k", "1"), "+OK\r\n")
	efs.Inject(errorfs.OpWrite, syscall.ENOSPC)
	c.do(cmd("SET", "k", "2"), noSpace)
	refused(noSpace)
	// Queued while writes went through: EXEC runs it.
	early.do(cmd("EXEC"), "*1\r\n+PONG\r\n")
	ctx := context.Background()
	rdb := ts.goRedis(&goredis.Options{Password: "pw", MaxRetries: -1})
	if err := rdb.Ping(ctx).Err(); err == nil || err.Error() != strings.TrimSuffix(noSpace[1:], "\r\n") {
		t.Fatalf("go-redis PING on a full disk: %v", err)
	}

	// Room again: the next write goes through, and PING answers.
	efs.Inject(errorfs.OpWrite, nil)
	c.do(cmd("PING"), noSpace) // no write has tried yet
	c.do(cmd("SET", "k", "1"), "+OK\r\n")
	c.do(cmd("PING"), "+PONG\r\n")
	c3.do(cmd("PING"), "+PONG\r\n")
	if got := res(t, rdb.Ping(ctx)); got != "PONG" {
		t.Fatalf("go-redis PING: %q", got)
	}

	efs.Inject(errorfs.OpSync, syscall.EIO)
	c.send(cmd("SET", "k", "3"))
	if line := c.readLine(); !strings.HasPrefix(line, "-MISCONF ") {
		t.Fatalf("SET with fsync failing: %q", line)
	}
	efs.Inject(errorfs.OpSync, nil)
	refused(stopped)
	if err := rdb.Ping(ctx).Err(); err == nil || err.Error() != strings.TrimSuffix(stopped[1:], "\r\n") {
		t.Fatalf("go-redis PING with writes stopped: %v", err)
	}
}
