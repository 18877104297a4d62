package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/internal/testcert"
	goredis "github.com/redis/go-redis/v9"
)

// running is a serve command running in-process.
type running struct {
	addr   string     // the first listener's
	addrs  []net.Addr // every listener's, as serve reports them
	cancel context.CancelFunc
	done   chan error
	log    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs "caskade serve args..." and waits until it listens, or
// returns the error it stopped with.
func start(t *testing.T, args ...string) (*running, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1), log: &syncBuffer{}}
	ready := make(chan []net.Addr, 1)
	root := newRootCmd(&hooks{ready: func(a []net.Addr) { ready <- a }, logOut: r.log})
	// The memcached and HTTP listeners are off unless a test asks: their
	// default ports may be taken on the machine running the tests.
	root.SetArgs(append([]string{"serve", "--memcache-addr=", "--http-addr="}, args...))
	go func() { r.done <- root.ExecuteContext(ctx) }()
	select {
	case addrs := <-ready:
		r.addr, r.addrs = addrs[0].String(), addrs
		t.Cleanup(func() { r.stop(t) })
		return r, nil
	case err := <-r.done:
		cancel()
		return nil, err
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("serve did not start")
	}
	return nil, nil
}

// interrupt stops serve as SIGINT does, without waiting: its result
// comes on r.done (and stop no longer waits for it).
func (r *running) interrupt() {
	r.cancel()
	r.cancel = nil
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil {
		t.Fatalf("serve returned %v\nlog:\n%s", err, r.log.String())
	}
}

func TestServeFlagEnvFilePrecedence(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "caskade.conf")
	os.WriteFile(conf, []byte(strings.Join([]string{
		"# settings",
		"dir " + filepath.Join(dir, "data"),
		"redis-addr 127.0.0.1:0",
		"databases 5",
		"maxclients 7",
		"timeout 3",
		`requirepass ""`,
		"sync always",
		"",
	}, "\n")), 0o644)
	t.Setenv("CASKADE_CONFIG", conf)
	t.Setenv("CASKADE_DATABASES", "6")
	t.Setenv("CASKADE_MAXCLIENTS", "8")
	r, err := start(t, "--maxclients", "9")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rdb := goredis.NewClient(&goredis.Options{Addr: r.addr})
	defer rdb.Close()
	cfg, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"maxclients":  "9", // flag over environment
		"databases":   "6", // environment over file
		"timeout":     "3", // file over default
		"appendfsync": "always",
		"dir":         filepath.Join(dir, "data"),
	} {
		if cfg[k] != want {
			t.Errorf("%s = %q, want %q", k, cfg[k], want)
		}
	}
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// A second server on the same directory fails with a clear reason.
	_, err = start(t, "--redis-addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "is in use by a running caskade") {
		t.Fatalf("second server: %v", err)
	}
	r.stop(t)
	// The acknowledged write is in the directory after the shutdown.
	db, err := caskade.Open(filepath.Join(dir, "data"), &caskade.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("after shutdown: %q %v", v, err)
	}
}

func TestServeErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sync", "sometimes"}, `--sync "sometimes"`},
		{[]string{"--databases", "300"}, "--databases 300"},
		{[]string{"--redis-addr", "", "--redis-socket", ""}, "nothing to serve"},
		{[]string{"--tls-addr", "127.0.0.1:0"}, "--tls-addr needs --tls-cert and --tls-key"},
		{[]string{"--redis-addr", "256.0.0.1:1"}, "--redis-addr"},
		{[]string{"--config", filepath.Join(dir, "missing.conf")}, "config file"},
		{[]string{"--bogus"}, "unknown flag"},
	} {
		_, err := start(t, append([]string{"--dir", filepath.Join(dir, "d")}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	// A data directory that cannot be opened: one line, which main
	// prefixes with "caskade: " once.
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	_, err := start(t, "--dir", file)
	if err == nil || !strings.HasPrefix(err.Error(), "open "+file+": ") || strings.Contains(err.Error(), "caskade: ") {
		t.Errorf("serve --dir on a file: %v", err)
	}
	bad := filepath.Join(dir, "bad.conf")
	os.WriteFile(bad, []byte("nosuchsetting 1\n"), 0o644)
	_, err = start(t, "--dir", filepath.Join(dir, "d"), "--config", bad)
	if err == nil || !strings.Contains(err.Error(), `unknown setting "nosuchsetting"`) {
		t.Fatalf("bad config: %v", err)
	}
}

// Every numeric flag out of its range, and a TLS setting that would be
// ignored, is refused with one line naming the flag, before anything is
// opened or listened on, whether it comes from a flag, the environment or
// the config file.
func TestServeRefusesOutOfRangeAndPartialSettings(t *testing.T) {
	dir := t.TempDir()
	cert, key, _ := writeCert(t, dir, "ok", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--event-loops", "-5"}, "--event-loops -5: want -1 (a goroutine per connection), 0 (one per processor) or 1 to 1024"},
		{[]string{"--event-loops", "-2"}, "--event-loops -2: "},
		{[]string{"--event-loops", "100000"}, "--event-loops 100000: "},
		{[]string{"--maxclients", "0"}, "--maxclients 0: want 1 to 2147483647"},
		{[]string{"--maxclients", "-3"}, "--maxclients -3: "},
		{[]string{"--maxclients", "2147483648"}, "--maxclients 2147483648: "},
		{[]string{"--timeout", "-1"}, "--timeout -1: want 0 (never) to 2147483647 seconds"},
		{[]string{"--timeout", "9999999999"}, "--timeout 9999999999: "},
		{[]string{"--databases", "0"}, "--databases 0: want 1 to 256"},
		{[]string{"--databases", "-1"}, "--databases -1: "},
		{[]string{"--maxclients", "99999999999999999999"}, `invalid argument "99999999999999999999" for "--maxclients" flag`},
		{[]string{"--tls-cert", cert, "--tls-key", key}, "--tls-cert and --tls-key need --tls-addr (TLS is served only with all three"},
		{[]string{"--tls-cert", cert}, "--tls-cert needs --tls-addr and --tls-key"},
		{[]string{"--tls-key", key}, "--tls-key needs --tls-addr and --tls-cert"},
		{[]string{"--tls-addr", "127.0.0.1:0", "--tls-cert", cert}, "--tls-addr and --tls-cert need --tls-key"},
		{[]string{"--tls-addr", "127.0.0.1:0", "--tls-key", key}, "--tls-addr and --tls-key need --tls-cert"},
	} {
		args := append([]string{"--dir", filepath.Join(dir, "d"), "--redis-addr", "127.0.0.1:0"}, tc.args...)
		_, err := start(t, args...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("serve %v: %v, want one line starting %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused serve created the data directory: %v", err)
	}
	// The same from the environment and the config file.
	t.Setenv("CASKADE_EVENT_LOOPS", "-7")
	if _, err := start(t, "--dir", filepath.Join(dir, "d"), "--redis-addr", "127.0.0.1:0"); err == nil || !strings.HasPrefix(err.Error(), "--event-loops -7: ") {
		t.Errorf("CASKADE_EVENT_LOOPS=-7: %v", err)
	}
	os.Unsetenv("CASKADE_EVENT_LOOPS")
	conf := filepath.Join(dir, "caskade.conf")
	os.WriteFile(conf, []byte("tls-cert "+cert+"\n"), 0o644)
	if _, err := start(t, "--dir", filepath.Join(dir, "d"), "--redis-addr", "127.0.0.1:0", "--config", conf); err == nil || !strings.HasPrefix(err.Error(), "--tls-cert needs --tls-addr") {
		t.Errorf("tls-cert in the config file alone: %v", err)
	}
}

func TestServeUnixSocketAndDefaults(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "r.sock")
	r, err := start(t, "--dir", filepath.Join(dir, "d"), "--redis-addr", "", "--redis-socket", sock, "--http-addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(&goredis.Options{Network: "unix", Addr: sock})
	defer rdb.Close()
	if v, err := rdb.Ping(context.Background()).Result(); err != nil || v != "PONG" {
		t.Fatalf("PING over the socket: %q %v", v, err)
	}
	if !strings.Contains(r.log.String(), "serving HTTP") {
		t.Fatalf("no HTTP listener in the log:\n%s", r.log.String())
	}
	// SHUTDOWN stops the command gracefully.
	rdb.Shutdown(context.Background())
	select {
	case err := <-r.done:
		r.cancel()
		r.cancel = nil
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("SHUTDOWN did not stop the server")
	}
	// The documented defaults.
	f := newServeCmd(&hooks{}).Flags()
	for name, want := range map[string]string{"dir": "./caskade-data", "sync": "everysec",
		"redis-addr": "127.0.0.1:6379", "maxclients": "10000", "timeout": "0", "databases": "16"} {
		if got := f.Lookup(name).DefValue; got != want {
			t.Errorf("--%s default %q, want %q", name, got, want)
		}
	}
}

func TestVersion(t *testing.T) {
	root := newRootCmd(nil)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "caskade ") {
		t.Fatalf("version output %q", out.String())
	}
	if envName("redis-addr") != "CASKADE_REDIS_ADDR" {
		t.Fatal(envName("redis-addr"))
	}
}

// One process serves all three protocols over one database: a value set
// through Redis reads back through memcached and HTTP.
func TestServeAllProtocols(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan []net.Addr, 1)
	logs := &syncBuffer{}
	root := newRootCmd(&hooks{ready: func(a []net.Addr) { ready <- a }, logOut: logs})
	root.SetArgs([]string{"serve", "--dir", filepath.Join(dir, "d"), "--redis-addr", "127.0.0.1:0",
		"--memcache-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var addrs []net.Addr
	select {
	case addrs = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	if len(addrs) != 3 {
		t.Fatalf("listening on %v", addrs)
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: addrs[0].String()})
	defer rdb.Close()
	if err := rdb.Set(ctx, "shared", "across protocols", 0).Err(); err != nil {
		t.Fatal(err)
	}
	mc, err := net.Dial("tcp", addrs[1].String())
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	mc.Write([]byte("get shared\r\n"))
	buf := make([]byte, 128)
	n, _ := io.ReadAtLeast(mc, buf, len("VALUE shared 0 16\r\nacross protocols\r\nEND\r\n"))
	if got := string(buf[:n]); got != "VALUE shared 0 16\r\nacross protocols\r\nEND\r\n" {
		t.Fatalf("memcached get: %q", got)
	}
	resp, err := http.Get("http://" + addrs[2].String() + "/v1/kv/shared")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "across protocols" {
		t.Fatalf("HTTP get: %d %q", resp.StatusCode, body)
	}
	resp, err = http.Get("http://" + addrs[2].String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "caskade_") {
		t.Fatalf("no caskade metrics at /metrics")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRedisCommandsInMetrics(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan []net.Addr, 1)
	root := newRootCmd(&hooks{ready: func(a []net.Addr) { ready <- a }, logOut: &syncBuffer{}})
	root.SetArgs([]string{"serve", "--dir", filepath.Join(dir, "d"), "--redis-addr", "127.0.0.1:0",
		"--memcache-addr", "", "--http-addr", "127.0.0.1:0"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	addrs := <-ready
	rdb := goredis.NewClient(&goredis.Options{Addr: addrs[0].String()})
	defer rdb.Close()
	rdb.Set(ctx, "k", "v", 0)
	rdb.Get(ctx, "k")
	resp, err := http.Get("http://" + addrs[1].String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`caskade_commands_total{command="set",protocol="redis"} 1`, `caskade_commands_total{command="get",protocol="redis"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics lacks %s", want)
		}
	}
	cancel()
	<-done
}

// writeCert writes a self-signed certificate for 127.0.0.1, valid from
// notBefore to notAfter, and its key into dir.
func writeCert(t *testing.T, dir, name string, notBefore, notAfter time.Time) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	c, err := testcert.New(notBefore, notAfter)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, c.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, c.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, c.Pool
}

func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	cert, key, pool := writeCert(t, dir, "ok", now.Add(-time.Hour), now.Add(time.Hour))
	r, err := start(t, "--dir", filepath.Join(dir, "d"), "--redis-addr", "", "--tls-addr", "127.0.0.1:0",
		"--tls-cert", cert, "--tls-key", key, "--requirepass", "pw", "--maxclients", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.log.String(), "network=tls") {
		t.Errorf("the log does not say which listener is TLS:\n%s", r.log.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tlsConf := &tls.Config{RootCAs: pool}
	a := goredis.NewClient(&goredis.Options{Addr: r.addr, Password: "pw", TLSConfig: tlsConf, PoolSize: 1})
	defer a.Close()
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	if err := a.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := a.Get(ctx, "big").Result(); err != nil || v != big {
		t.Fatalf("GET big over TLS: %d bytes, %v", len(v), err)
	}

	// The only client slot is taken. A connection that never starts its
	// TLS handshake is refused, and while its refusal waits for the
	// handshake, the next client is still accepted and refused at once:
	// the accept loop does not wait for the handshake.
	idle, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	next, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", r.addr, tlsConf)
	if err != nil {
		t.Fatalf("a client over the limit: %v (the accept loop waits for a connection that sends nothing?)", err)
	}
	defer next.Close()
	next.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(next).ReadString('\n')
	if err != nil || line != "-ERR max number of clients reached\r\n" {
		t.Fatalf("a client over the limit got %q, %v (the accept loop waits for a connection that sends nothing?)", line, err)
	}
	// The idle connection is closed (its refusal has a deadline).
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := idle.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the refused idle connection was not closed: %d, %v", n, err)
	}
	a.Close()

	// A plain-text client on the TLS port fails cleanly, and the server
	// goes on serving TLS clients (once the first client's slot is free).
	plain := goredis.NewClient(&goredis.Options{Addr: r.addr, Password: "pw", MaxRetries: -1})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatal("PING in plain text on the TLS port succeeded")
	}
	b := goredis.NewClient(&goredis.Options{Addr: r.addr, Password: "pw", TLSConfig: tlsConf, MaxRetries: -1})
	defer b.Close()
	for {
		err := b.Ping(ctx).Err()
		if err == nil {
			break
		}
		// Refused while the slot is still taken: with the message, or,
		// on a loaded machine, closed when the refusal's one-second
		// deadline ends the handshake first (then the client's next
		// write may also find the connection gone: EPIPE).
		refused := strings.Contains(err.Error(), "max number of clients") ||
			errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
		if ctx.Err() != nil || !refused {
			t.Fatalf("PING over TLS after the others left: %v", err)
		}
	}
	r.stop(t)

	// A certificate that has expired, or is not valid yet, is served (a
	// refusal to start would also cut off the clients that do not verify
	// it) with a warning in the log.
	for _, tc := range []struct {
		name          string
		before, after time.Time
		want          string
	}{
		{"expired", now.Add(-48 * time.Hour), now.Add(-24 * time.Hour), "the certificate expired at"},
		{"future", now.Add(24 * time.Hour), now.Add(48 * time.Hour), "the certificate is not valid before"},
	} {
		cert, key, _ := writeCert(t, dir, tc.name, tc.before, tc.after)
		r, err := start(t, "--dir", filepath.Join(dir, "d"), "--redis-addr", "", "--tls-addr", "127.0.0.1:0",
			"--tls-cert", cert, "--tls-key", key)
		if err != nil {
			t.Fatalf("serve with an %s certificate: %v", tc.name, err)
		}
		if log := r.log.String(); !strings.Contains(log, "--tls-cert "+cert+": "+tc.want) {
			t.Errorf("serve with an %s certificate: no warning in the log:\n%s", tc.name, log)
		}
		r.stop(t)
	}
}

func TestServeUnixSocketPaths(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "r.sock")
	// A stale socket, as a killed server leaves it, is replaced.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Lstat(sock); err != nil {
		t.Fatal(err)
	}
	r, err := start(t, "--dir", filepath.Join(dir, "d1"), "--redis-addr", "", "--redis-socket", sock)
	if err != nil {
		t.Fatalf("serve over a stale socket: %v", err)
	}
	// A live one is not taken over by a second server (on another
	// directory): the first server stays reachable.
	_, err = start(t, "--dir", filepath.Join(dir, "d2"), "--redis-addr", "", "--redis-socket", sock)
	if err == nil || !strings.Contains(err.Error(), "--redis-socket: "+sock+" is in use") {
		t.Fatalf("second server on a live socket: %v", err)
	}
	rdb := goredis.NewClient(&goredis.Options{Network: "unix", Addr: sock})
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING the first server after the second tried its socket: %v", err)
	}
	r.stop(t)

	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("not a socket"), 0o644)
	long := filepath.Join(dir, strings.Repeat("s", 120)+".sock")
	for _, tc := range []struct{ path, want string }{
		{file, file + " exists and is not a socket"},
		{long, "path too long for a unix socket"},
		{filepath.Join(dir, "missing", "r.sock"), "no such file or directory"},
	} {
		_, err := start(t, "--dir", filepath.Join(dir, "d3"), "--redis-addr", "", "--redis-socket", tc.path)
		if err == nil || !strings.HasPrefix(err.Error(), "--redis-socket: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--redis-socket %s: %v, want an error containing %q", tc.path, err, tc.want)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "not a socket" {
		t.Fatalf("the file at the socket path was changed: %q %v", b, err)
	}
}

func TestServeConfigFileValues(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "caskade.conf")
	for _, tc := range []struct{ file, want string }{
		{"# settings\n\ndatabases abc\n", "config file " + conf + `:3: databases "abc": `},
		{"help true\n", `unknown setting "help"`},
		{"pprof maybe\n", "config file " + conf + `:1: pprof "maybe": `},
	} {
		os.WriteFile(conf, []byte(tc.file), 0o644)
		_, err := start(t, "--dir", filepath.Join(dir, "d"), "--redis-addr", "127.0.0.1:0", "--config", conf)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %q: %v, want an error containing %q", tc.file, err, tc.want)
		}
	}
	// Booleans take yes and no, as in redis.conf, in the file and the
	// environment.
	for _, env := range []string{"", "yes", "no"} {
		os.WriteFile(conf, []byte("pprof yes\n"), 0o644)
		if env != "" {
			t.Setenv("CASKADE_PPROF", env)
		}
		root := newServeCmd(&hooks{})
		root.ParseFlags([]string{"--config", conf})
		if err := applyEnvAndFile(root.Flags()); err != nil {
			t.Fatalf("CASKADE_PPROF=%q: %v", env, err)
		}
		want := env != "no"
		if got := root.Flags().Lookup("pprof").Value.String(); got != strconv.FormatBool(want) {
			t.Errorf("CASKADE_PPROF=%q, pprof yes in the file: pprof = %s, want %v", env, got, want)
		}
	}
}

// Config file values are unquoted as redis.conf's are: double quotes with
// escapes, single quotes literally but for \', both stripped.
func TestServeConfigFileQuoting(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "caskade.conf")
	for _, tc := range []struct{ line, want, err string }{
		{`requirepass plain`, "plain", ""},
		{`requirepass   spaced out  `, "spaced out", ""},
		{`requirepass "double quoted"`, "double quoted", ""},
		{`requirepass 'single quoted'`, "single quoted", ""},
		{`requirepass ''`, "", ""},
		{`requirepass ""`, "", ""},
		{`requirepass "  blanks kept  "`, "  blanks kept  ", ""},
		{`requirepass '  blanks kept  '`, "  blanks kept  ", ""},
		{`requirepass "say \"hi\" \\ \n\t\x41\x4a\q"`, "say \"hi\" \\ \n\tAJq", ""},
		{`requirepass 'it\'s \n "raw"'`, `it's \n "raw"`, ""},
		{`requirepass "it's"`, "it's", ""},
		{`requirepass 'say "hi"'`, `say "hi"`, ""},
		{`requirepass "\xZZ"`, "xZZ", ""},
		{`requirepass in"side'`, `in"side'`, ""},
		{`requirepass "unclosed`, "", `:1: bad quoting in "unclosed`},
		{`requirepass 'unclosed`, "", `:1: bad quoting in 'unclosed`},
		{`requirepass "ends in backslash\"`, "", "bad quoting"},
		{`requirepass "a" b`, "", `:1: text after the closing quote of "a" b`},
		{`requirepass 'a'b`, "", `bad quoting in 'a'b`},
	} {
		os.WriteFile(conf, []byte(tc.line+"\n"), 0o644)
		cmd := newServeCmd(&hooks{})
		cmd.ParseFlags([]string{"--config", conf})
		err := applyEnvAndFile(cmd.Flags())
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "config file "+conf+":") {
				t.Errorf("%s: %v, want an error containing %q", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.line, err)
			continue
		}
		if got := cmd.Flags().Lookup("requirepass").Value.String(); got != tc.want {
			t.Errorf("%s: requirepass = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// --redis-socket-perm sets the socket's permission bits, from the flag,
// the environment or the config file; without it the socket has the mode
// the umask gives any new socket.
func TestServeUnixSocketPerm(t *testing.T) {
	dir := t.TempDir()
	mode := func(path string) os.FileMode {
		t.Helper()
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSocket == 0 {
			t.Fatalf("%s is not a socket: %v", path, fi.Mode())
		}
		return fi.Mode().Perm()
	}
	// What the umask leaves a socket: the default.
	l, err := net.Listen("unix", filepath.Join(dir, "plain.sock"))
	if err != nil {
		t.Fatal(err)
	}
	umasked := mode(filepath.Join(dir, "plain.sock"))
	l.Close()

	conf := filepath.Join(dir, "caskade.conf")
	os.WriteFile(conf, []byte("redis-socket-perm 750\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want os.FileMode
	}{
		{"default", nil, "", umasked},
		{"flag 700", []string{"--redis-socket-perm", "700"}, "", 0o700},
		{"flag 0770", []string{"--redis-socket-perm", "0770"}, "", 0o770},
		{"flag 0o777", []string{"--redis-socket-perm", "0o777"}, "", 0o777},
		{"environment", nil, "660", 0o660},
		{"config file", []string{"--config", conf}, "", 0o750},
		{"flag over file", []string{"--config", conf, "--redis-socket-perm", "700"}, "", 0o700},
	} {
		if tc.env != "" {
			t.Setenv("CASKADE_REDIS_SOCKET_PERM", tc.env)
		}
		sock := filepath.Join(dir, "r.sock")
		r, err := start(t, append([]string{"--dir", filepath.Join(dir, "d"), "--redis-addr", "", "--redis-socket", sock}, tc.args...)...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := mode(sock); got != tc.want {
			t.Errorf("%s: socket mode %v, want %v", tc.name, got, tc.want)
		}
		rdb := goredis.NewClient(&goredis.Options{Network: "unix", Addr: sock})
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			t.Errorf("%s: PING over the socket: %v", tc.name, err)
		}
		rdb.Close()
		r.stop(t)
		os.Unsetenv("CASKADE_REDIS_SOCKET_PERM")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--redis-socket", filepath.Join(dir, "x.sock"), "--redis-socket-perm", "800"}, `invalid argument "800" for "--redis-socket-perm" flag: want permission bits in octal`},
		{[]string{"--redis-socket", filepath.Join(dir, "x.sock"), "--redis-socket-perm", "1777"}, `invalid argument "1777" for "--redis-socket-perm" flag`},
		{[]string{"--redis-socket", filepath.Join(dir, "x.sock"), "--redis-socket-perm", "rwx"}, `invalid argument "rwx" for "--redis-socket-perm" flag`},
		{[]string{"--redis-socket-perm", "700"}, "--redis-socket-perm needs --redis-socket"},
	} {
		_, err := start(t, append([]string{"--dir", filepath.Join(dir, "d"), "--redis-addr", "127.0.0.1:0"}, tc.args...)...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("serve %v: %v, want an error starting %q", tc.args, err, tc.want)
		}
	}
}

// TestServeIdleTimeoutAllProtocols checks that --timeout closes idle
// connections of every front end: Redis, memcached and HTTP keep-alive,
// after a request and also before any: net/http would otherwise wait for
// an HTTP connection's first request header for its own 10 s.
func TestServeIdleTimeoutAllProtocols(t *testing.T) {
	r, err := start(t, "--dir", filepath.Join(t.TempDir(), "d"), "--redis-addr", "127.0.0.1:0",
		"--memcache-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--timeout", "1")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.addrs) != 3 {
		t.Fatalf("listening on %v", r.addrs)
	}
	requests := []string{
		"PING\r\n",
		"version\r\n",
		"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
	}
	start := time.Now()
	type conn struct {
		net.Conn
		silent bool
	}
	var conns []conn
	for i, a := range r.addrs {
		for _, silent := range []bool{false, true} {
			c, err := net.Dial("tcp", a.String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if !silent {
				if _, err := c.Write([]byte(requests[i])); err != nil {
					t.Fatal(err)
				}
			}
			conns = append(conns, conn{c, silent})
		}
	}
	for _, c := range conns {
		// The reply, if asked for, then the close after the 1 s timeout:
		// well before this deadline, which is still shorter than
		// net/http's 10 s header timeout.
		c.SetReadDeadline(start.Add(5 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("%s (silent %v): the idle connection was not closed by --timeout 1: %v after %v (read %q)",
				c.RemoteAddr(), c.silent, err, time.Since(start).Round(time.Millisecond), got)
		}
		if !c.silent && len(got) == 0 {
			t.Fatalf("%s: no reply before the close", c.RemoteAddr())
		}
	}
}

// Serving a backup works (it is a database), but the log says that writes
// will make restore refuse it.
func TestServeWarnsOfABackup(t *testing.T) {
	backup := backupOf(t, map[string]entry{"k": {val: "v"}})
	r, err := start(t, "--dir", backup, "--redis-addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.log.String(), "the data directory is a backup") {
		t.Fatalf("no warning that the directory is a backup in the log:\n%s", r.log.String())
	}
	r.stop(t)
	plain, err := start(t, "--dir", t.TempDir(), "--redis-addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.log.String(), "is a backup") {
		t.Fatalf("a plain directory was called a backup:\n%s", plain.log.String())
	}
}

// nonLoopbackIP returns an address of this machine that is not loopback,
// or skips the test.
func nonLoopbackIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP
		}
	}
	t.Skip("no non-loopback IPv4 address to connect from")
	return nil
}

// --protected-mode no serves clients from other addresses without a
// password, on every front end; by default they are refused.
func TestServeProtectedMode(t *testing.T) {
	ip := nonLoopbackIP(t)
	for _, mode := range []string{"yes", "no"} {
		t.Run(mode, func(t *testing.T) {
			r, err := start(t, "--dir", filepath.Join(t.TempDir(), "d"), "--protected-mode", mode,
				"--redis-addr", "0.0.0.0:0", "--memcache-addr", "0.0.0.0:0", "--http-addr", "0.0.0.0:0")
			if err != nil {
				t.Fatal(err)
			}
			port := func(i int) string { return strconv.Itoa(r.addrs[i].(*net.TCPAddr).Port) }
			open := mode == "no"
			// The first line of the reply to request, over TCP from ip.
			firstLine := func(port, request string) string {
				c, err := net.Dial("tcp", net.JoinHostPort(ip.String(), port))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				c.Write([]byte(request))
				line, _ := bufio.NewReader(c).ReadString('\n')
				return line
			}
			if line := firstLine(port(0), "PING\r\n"); open != (line == "+PONG\r\n") || (!open && !strings.HasPrefix(line, "-DENIED")) {
				t.Errorf("Redis from %s: %q", ip, line)
			}
			if line := firstLine(port(1), "version\r\n"); open != strings.HasPrefix(line, "VERSION ") {
				t.Errorf("memcached from %s: %q", ip, line)
			}
			res, err := http.Get("http://" + net.JoinHostPort(ip.String(), port(2)) + "/v1/kv/k")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if want := map[bool]int{true: 404, false: 403}[open]; res.StatusCode != want {
				t.Errorf("HTTP from %s: %d, want %d", ip, res.StatusCode, want)
			}
			if open != strings.Contains(r.log.String(), "protected mode is off") {
				t.Errorf("the warning is logged: %v, want %v", !open, open)
			}
		})
	}
}
