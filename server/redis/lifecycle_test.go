package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade"
	goredis "github.com/redis/go-redis/v9"
)

func TestUnixSocket(t *testing.T) {
	dir := t.TempDir()
	db, err := caskade.Open(filepath.Join(dir, "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	// Protected mode does not apply to unix sockets.
	srv := &Server{DB: db, Logger: testLogger(t)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	defer func() {
		srv.Close()
		<-done
	}()
	ctx := context.Background()
	rdb := goredis.NewClient(&goredis.Options{Network: "unix", Addr: sock})
	defer rdb.Close()
	eq(t, "SET", res(t, rdb.Set(ctx, "k", "v", 0)), "OK")
	eq(t, "GET", res(t, rdb.Get(ctx, "k")), "v")
	list := res(t, rdb.ClientList(ctx))
	if !strings.Contains(list, "addr="+sock+":0") || !strings.Contains(list, "flags=U") {
		t.Fatalf("CLIENT LIST over a unix socket: %q", list)
	}
}

// TestGracefulShutdown: writes acknowledged before Shutdown survive a
// reopen of the database; Shutdown waits for commands in flight.
func TestGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	db, err := caskade.Open(dir, &caskade.Options{Sync: caskade.SyncEverySec})
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{DB: db, Logger: testLogger(t)}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	const writers = 8
	var mu sync.Mutex
	acked := map[string]string{}
	var wg sync.WaitGroup
	started := make(chan struct{}, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				return
			}
			defer nc.Close()
			br := make([]byte, 5)
			for i := 0; ; i++ {
				k, v := fmt.Sprintf("w%d:%d", w, i), fmt.Sprint(i)
				if _, err := io.WriteString(nc, cmd("SET", k, v)); err != nil {
					return
				}
				if _, err := io.ReadFull(nc, br); err != nil {
					return // the server closed the connection
				}
				if string(br) != "+OK\r\n" {
					t.Errorf("SET replied %q", br)
					return
				}
				mu.Lock()
				acked[k] = v
				mu.Unlock()
				if i == 10 {
					started <- struct{}{}
				}
			}
		}()
	}
	for range writers {
		<-started
	}
	// A command in flight during Shutdown gets its reply.
	slow, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, cmd("SET", "slow", "1"))
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	wg.Wait()
	rest, _ := io.ReadAll(slow)
	if len(rest) > 0 && string(rest) != "+OK\r\n" {
		t.Fatalf("in-flight reply %q", rest)
	}
	if string(rest) == "+OK\r\n" {
		acked["slow"] = "1"
	}
	if _, err := net.Dial("tcp", l.Addr().String()); err == nil {
		t.Fatal("listener still accepting after Shutdown")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = caskade.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if len(acked) < writers*10 {
		t.Fatalf("only %d writes acknowledged", len(acked))
	}
	for k, v := range acked {
		got, err := db.Get([]byte(k))
		if err != nil || string(got) != v {
			t.Fatalf("acknowledged %s=%s lost: %q %v", k, v, got, err)
		}
	}
}

// TestShutdownCommand: SHUTDOWN calls ShutdownFunc and closes the
// connection without a reply.
func TestShutdownCommand(t *testing.T) {
	called := make(chan struct{})
	ts := startServer(t, func(s *Server) { s.ShutdownFunc = func() { close(called) } })
	c := ts.dial()
	c.do(cmd("SHUTDOWN", "ABORT"), "-ERR No shutdown in progress.\r\n")
	// Redis refuses these combinations rather than shut down.
	c.do(cmd("SHUTDOWN", "SAVE", "NOSAVE"), "-ERR syntax error\r\n")
	c.do(cmd("SHUTDOWN", "NOSAVE", "ABORT"), "-ERR syntax error\r\n")
	c.do(cmd("SHUTDOWN", "ABORT", "NOW"), "-ERR syntax error\r\n")
	c.do(cmd("SHUTDOWN", "ABORT", "FOO"), "-ERR syntax error\r\n")
	c.do(cmd("PING"), "+PONG\r\n")
	c.send(cmd("SHUTDOWN", "NOSAVE"))
	c.expectClosed()
	<-called
}

// TestRedisCLI is a smoke test with the real redis-cli, when installed.
func TestRedisCLI(t *testing.T) {
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not on PATH")
	}
	ts := startServer(t, nil)
	host, port, _ := net.SplitHostPort(ts.addr)
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	eq(t, "PING", run("PING"), "PONG")
	eq(t, "SET", run("SET", "greeting", "hello world"), "OK")
	eq(t, "GET", run("GET", "greeting"), "hello world")
	eq(t, "GET missing", run("GET", "missing"), "")
	eq(t, "INCR", run("INCR", "n"), "1")
	eq(t, "NOPE", run("NOPE", "x"), "ERR unknown command 'NOPE', with args beginning with: 'x'")
	for i := range 20 {
		run("SET", fmt.Sprint("scan:", i), "v")
	}
	keys := strings.Fields(run("--scan", "--pattern", "scan:*"))
	eq(t, "--scan keys", len(keys), 20)
	if info := run("INFO", "server"); !strings.Contains(info, "redis_version:") {
		t.Fatalf("INFO: %s", info)
	}
	eq(t, "RESP3 GET missing", run("-3", "GET", "missing"), "")
	eq(t, "RESP3 MGET", run("-3", "MGET", "greeting", "missing"), "hello world")
	// A pipe of inline commands (redis-cli reading commands from stdin).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "-h", host, "-p", port)
	c.Stdin = strings.NewReader("SET piped 1\nINCR piped\nGET piped\n")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli stdin: %v\n%s", err, out)
	}
	eq(t, "piped", strings.Join(strings.Fields(string(out)), " "), "OK 2 2")
	// redis-benchmark, if present, exercises pipelining and many clients.
	if bench, err := exec.LookPath("redis-benchmark"); err == nil {
		out, err := exec.CommandContext(ctx, bench, "-h", host, "-p", port, "-t", "set,get,incr,mset",
			"-n", "2000", "-c", "8", "-P", "16", "-q").CombinedOutput()
		if err != nil || bytes.Contains(out, []byte("ERR")) {
			t.Fatalf("redis-benchmark: %v\n%s", err, out)
		}
	}
}
