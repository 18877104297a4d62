package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/vfs"
)

// stuckRedisClient sets a value far bigger than the socket buffers and
// asks for it back, reading only the first bytes of the reply: the rest
// waits in the server, as for a client that stopped reading.
func stuckRedisClient(t *testing.T, addr string) (net.Conn, int) {
	t.Helper()
	rc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	big := strings.Repeat("x", 16<<20)
	fmt.Fprintf(rc, "*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$%d\r\n%s\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n", len(big), big)
	head := make([]byte, len("+OK\r\n$16777216\r\n"))
	if _, err := io.ReadFull(rc, head); err != nil || string(head) != "+OK\r\n$16777216\r\n" {
		t.Fatalf("SET and GET replied %q %v", head, err)
	}
	return rc, len(big)
}

// TestShutdownNotHeldByStuckRedisClient stops the server while a Redis
// client leaves a big reply unread: the memcached front end must still
// stop at once (its idle connection closed, its listener shut), not wait
// for the Redis front end's shutdown deadline, accepting clients and
// running their commands meanwhile.
func TestShutdownNotHeldByStuckRedisClient(t *testing.T) {
	r, err := start(t, "--dir", filepath.Join(t.TempDir(), "d"), "--redis-addr", "127.0.0.1:0",
		"--memcache-addr", "127.0.0.1:0", "--shutdown-timeout", "10m")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := stuckRedisClient(t, r.addr)
	mc, err := net.Dial("tcp", r.addrs[1].String())
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	io.WriteString(mc, "set k 0 0 1\r\nv\r\n")
	line := make([]byte, len("STORED\r\n"))
	if _, err := io.ReadFull(mc, line); err != nil || string(line) != "STORED\r\n" {
		t.Fatalf("memcached set: %q %v", line, err)
	}

	r.interrupt()
	// The idle memcached connection is closed long before the shutdown
	// deadline (10 s bounds the failure, not the success).
	mc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := mc.Read(line); !errors.Is(err, io.EOF) {
		t.Fatalf("idle memcached connection during shutdown: read %q, %v; want it closed", line[:n], err)
	}
	if c, err := net.Dial("tcp", r.addrs[1].String()); err == nil {
		c.Close()
		t.Fatal("memcached listener still accepting during shutdown")
	}
	rc.Close() // lets the Redis front end finish
	if err := <-r.done; err != nil {
		t.Fatal(err)
	}
}

// TestShutdownTimeout stops the server while a Redis client leaves a big
// reply unread and never reads again: after --shutdown-timeout the server
// closes that connection and the database, with the acknowledged write
// synced, instead of waiting for the client.
func TestShutdownTimeout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	r, err := start(t, "--dir", dir, "--redis-addr", "127.0.0.1:0", "--shutdown-timeout", "100ms")
	if err != nil {
		t.Fatal(err)
	}
	_, size := stuckRedisClient(t, r.addr)
	r.interrupt()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second): // bounds the failure, not the success
		t.Fatal("the server still waits for a client that does not read, 20 s after a shutdown with --shutdown-timeout 100ms")
	}
	db, err := caskade.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Get([]byte("b")); err != nil || len(v) != size {
		t.Fatalf("the acknowledged SET after shutdown: %d bytes, %v", len(v), err)
	}
}

// --maxclients bounds HTTP connections too (for HTTP alone, as for each
// front end): it used to leave HTTP unbounded.
func TestMaxClientsHTTP(t *testing.T) {
	r, err := start(t, "--dir", filepath.Join(t.TempDir(), "d"), "--redis-addr", "", "--http-addr", "127.0.0.1:0", "--maxclients", "1")
	if err != nil {
		t.Fatal(err)
	}
	get := func(c net.Conn) string {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		line := make([]byte, len("HTTP/1.1 200"))
		if _, err := io.ReadFull(c, line); err != nil {
			t.Fatal(err)
		}
		return string(line)
	}
	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	if got := get(conns[0]); got != "HTTP/1.1 200" {
		t.Fatalf("first connection: %q", got)
	}
	if got := get(conns[1]); got != "HTTP/1.1 503" {
		t.Fatalf("second connection with --maxclients 1: %q, want 503", got)
	}
}

// TestShutdownSyncsBeforeWaitingForClients: a shutdown that waits for a
// client that does not read (up to --shutdown-timeout, longer than the
// grace period a supervisor may give before SIGKILL) first makes every
// write acknowledged before it durable, at once, whatever the sync policy.
// The database runs on a memory file system whose crash image holds only
// what was synced: a machine crash or SIGKILL followed by one, at any
// point of the wait.
func TestShutdownSyncsBeforeWaitingForClients(t *testing.T) {
	for _, sync := range []string{"none", "everysec"} {
		t.Run(sync, func(t *testing.T) {
			mem := vfs.NewMem()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			ready := make(chan []net.Addr, 1)
			log := &syncBuffer{}
			root := newRootCmd(&hooks{
				ready:   func(a []net.Addr) { ready <- a },
				logOut:  log,
				options: func(o *caskade.Options) { o.FS = mem },
			})
			root.SetArgs([]string{"serve", "--dir", "/db", "--sync", sync, "--redis-addr", "127.0.0.1:0",
				"--memcache-addr=", "--http-addr=", "--shutdown-timeout", "10m"})
			go func() { done <- root.ExecuteContext(ctx) }()
			var addr string
			select {
			case a := <-ready:
				addr = a[0].String()
			case err := <-done:
				cancel()
				t.Fatalf("serve: %v", err)
			}
			rc, _ := stuckRedisClient(t, addr) // acknowledged SET b, then a GET it does not read
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(c, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
			ok := make([]byte, 5)
			if _, err := io.ReadFull(c, ok); err != nil || string(ok) != "+OK\r\n" {
				t.Fatalf("SET k: %q %v", ok, err)
			}
			c.Close()

			cancel() // SIGTERM
			// Poll the crash image (a condition, not a delay) for 2 s.
			deadline := time.Now().Add(2 * time.Second)
			for {
				db, err := caskade.Open("/db", &caskade.Options{FS: mem.Crash(vfs.CrashOptions{}), ReadOnly: true})
				if err == nil {
					v, gerr := db.Get([]byte("k"))
					db.Close()
					if gerr == nil && string(v) == "v" {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("2 s into a shutdown held by a client that does not read, the write acknowledged before it is not durable (open %v)\nlog:\n%s", err, log)
				}
				select {
				case err := <-done:
					t.Fatalf("serve ended while the client still held it: %v", err)
				case <-time.After(20 * time.Millisecond):
				}
			}
			rc.Close() // lets the shutdown end
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
