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
)

// TestShutdownNotHeldByStuckRedisClient stops the server while a Redis
// client leaves a big reply unread: the memcached front end must still
// stop at once (its idle connection closed, its listener shut), not wait
// for the Redis front end's shutdown deadline, accepting clients and
// running their commands meanwhile.
func TestShutdownNotHeldByStuckRedisClient(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan []net.Addr, 1)
	root := newRootCmd(&hooks{ready: func(a []net.Addr) { ready <- a }, logOut: &syncBuffer{}})
	root.SetArgs([]string{"serve", "--dir", filepath.Join(dir, "d"), "--redis-addr", "127.0.0.1:0",
		"--memcache-addr", "127.0.0.1:0", "--http-addr=", "--shutdown-timeout", "10m"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var addrs []net.Addr
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatal(err)
	}

	// A reply far bigger than the socket buffers, of which the client
	// reads the first bytes only: the rest waits in the server.
	rc, err := net.Dial("tcp", addrs[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	big := strings.Repeat("x", 16<<20)
	fmt.Fprintf(rc, "*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$%d\r\n%s\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n", len(big), big)
	head := make([]byte, len("+OK\r\n$16777216\r\n"))
	if _, err := io.ReadFull(rc, head); err != nil || string(head) != "+OK\r\n$16777216\r\n" {
		t.Fatalf("SET and GET replied %q %v", head, err)
	}

	mc, err := net.Dial("tcp", addrs[1].String())
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	io.WriteString(mc, "set k 0 0 1\r\nv\r\n")
	line := make([]byte, len("STORED\r\n"))
	if _, err := io.ReadFull(mc, line); err != nil || string(line) != "STORED\r\n" {
		t.Fatalf("memcached set: %q %v", line, err)
	}

	cancel()
	// The idle memcached connection is closed long before the shutdown
	// deadline (10 s bounds the failure, not the success).
	mc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := mc.Read(line); !errors.Is(err, io.EOF) {
		t.Fatalf("idle memcached connection during shutdown: read %q, %v; want it closed", line[:n], err)
	}
	if c, err := net.Dial("tcp", addrs[1].String()); err == nil {
		c.Close()
		t.Fatal("memcached listener still accepting during shutdown")
	}
	rc.Close() // lets the Redis front end finish
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestShutdownTimeout stops the server while a Redis client leaves a big
// reply unread and never reads again: after --shutdown-timeout the server
// closes that connection and the database, with the acknowledged write
// synced, instead of waiting for the client.
func TestShutdownTimeout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan []net.Addr, 1)
	root := newRootCmd(&hooks{ready: func(a []net.Addr) { ready <- a }, logOut: &syncBuffer{}})
	root.SetArgs([]string{"serve", "--dir", dir, "--redis-addr", "127.0.0.1:0", "--memcache-addr=", "--http-addr=",
		"--shutdown-timeout", "100ms"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var addrs []net.Addr
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	rc, err := net.Dial("tcp", addrs[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	big := strings.Repeat("x", 16<<20)
	fmt.Fprintf(rc, "*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$%d\r\n%s\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n", len(big), big)
	head := make([]byte, len("+OK\r\n"))
	if _, err := io.ReadFull(rc, head); err != nil || string(head) != "+OK\r\n" {
		t.Fatalf("SET replied %q %v", head, err)
	}
	cancel()
	select {
	case err := <-done:
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
	if v, err := db.Get([]byte("b")); err != nil || len(v) != len(big) {
		t.Fatalf("the acknowledged SET after shutdown: %d bytes, %v", len(v), err)
	}
}
