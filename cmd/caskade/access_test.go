package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// TestServeConfigSetAccessAppliesToAll: Redis's CONFIG SET requirepass
// and protected-mode change the password and protected mode of the
// memcached and HTTP front ends too, as the README says --requirepass and
// --protected-mode do.
func TestServeConfigSetAccessAppliesToAll(t *testing.T) {
	r, err := start(t, "--dir", filepath.Join(t.TempDir(), "d"),
		"--redis-addr", "0.0.0.0:0", "--memcache-addr", "0.0.0.0:0", "--http-addr", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	port := func(i int) string { return strconv.Itoa(r.addrs[i].(*net.TCPAddr).Port) }
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:" + port(0)})
	defer rdb.Close()
	config := func(name, value string) {
		t.Helper()
		if err := rdb.ConfigSet(ctx, name, value).Err(); err != nil {
			t.Fatalf("CONFIG SET %s %s: %v", name, value, err)
		}
	}
	// httpStatus is the status of GET /v1/kv/k from host, with token as
	// the bearer token if it is not empty.
	httpStatus := func(host, token string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+net.JoinHostPort(host, port(2))+"/v1/kv/k", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	// memcached sends request on a new connection from host and returns
	// the first line of the reply.
	memcached := func(host, request string) string {
		t.Helper()
		c, err := net.Dial("tcp", net.JoinHostPort(host, port(1)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte(request))
		line, _ := bufio.NewReader(c).ReadString('\n')
		return line
	}

	config("requirepass", "s3cret")
	if got := httpStatus("127.0.0.1", ""); got != http.StatusUnauthorized {
		t.Errorf("HTTP without the token after CONFIG SET requirepass: %d, want 401", got)
	}
	if got := httpStatus("127.0.0.1", "s3cret"); got != http.StatusNotFound {
		t.Errorf("HTTP with the token: %d, want 404", got)
	}
	if got := memcached("127.0.0.1", "get k\r\n"); got != "CLIENT_ERROR unauthenticated\r\n" {
		t.Errorf("memcached without authenticating: %q", got)
	}
	if got := memcached("127.0.0.1", "set auth 0 0 11\r\nuser s3cret\r\n"); got != "STORED\r\n" {
		t.Errorf("memcached authentication with the new password: %q", got)
	}
	rdb.Close()
	rdb = goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:" + port(0), Password: "s3cret"})
	config("requirepass", "")
	if got := httpStatus("127.0.0.1", ""); got != http.StatusNotFound {
		t.Errorf("HTTP without a token once the password is removed: %d, want 404", got)
	}

	t.Run("protected-mode", func(t *testing.T) {
		ip := nonLoopbackIP(t).String()
		if got := httpStatus(ip, ""); got != http.StatusForbidden {
			t.Fatalf("HTTP from %s in protected mode: %d, want 403", ip, got)
		}
		config("protected-mode", "no")
		if got := httpStatus(ip, ""); got != http.StatusNotFound {
			t.Errorf("HTTP from %s after CONFIG SET protected-mode no: %d, want 404", ip, got)
		}
		if got := memcached(ip, "version\r\n"); !strings.HasPrefix(got, "VERSION ") {
			t.Errorf("memcached from %s after CONFIG SET protected-mode no: %q", ip, got)
		}
		config("protected-mode", "yes")
		if got := httpStatus(ip, ""); got != http.StatusForbidden {
			t.Errorf("HTTP from %s after CONFIG SET protected-mode yes: %d, want 403", ip, got)
		}
		if got := memcached(ip, "version\r\n"); !strings.HasPrefix(got, "SERVER_ERROR protected mode") {
			t.Errorf("memcached from %s after CONFIG SET protected-mode yes: %q", ip, got)
		}
	})
}
