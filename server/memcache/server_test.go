package memcache

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade/server/metrics"
)

func TestShutdown(t *testing.T) {
	db := openDB(t)
	t.Cleanup(func() { db.Close() })
	s := &Server{DB: db}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	ts := &testServer{s: s, db: db, addr: l.Addr().String()}
	idle := ts.dial(t)
	idle.do("set a 0 0 1\r\nx\r\n", "STORED\r\n")
	// Pipelined commands already sent are all answered before the close.
	busy := ts.dial(t)
	busy.send("flush_all 100\r\nset b 0 0 1\r\ny\r\nget a b\r\n")
	if l := busy.line(); l != "OK\r\n" {
		t.Fatal(l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	busy.expectClosed("STORED\r\nVALUE a 0 1\r\nx\r\nVALUE b 0 1\r\ny\r\nEND\r\n")
	idle.expectClosed("")
	if _, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		t.Fatal("listener still accepting")
	}
	// The delayed flush_all was cancelled with the server.
	s.flushMu.Lock()
	pending := s.flushTimer != nil
	s.flushMu.Unlock()
	if pending {
		t.Fatal("delayed flush_all still pending after Shutdown")
	}
	if err := s.Serve(l); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
}

func TestDelayedFlushAll(t *testing.T) {
	ts := startServer(t)
	c := ts.dial(t)
	c.do("set a 0 0 1\r\nx\r\nflush_all 3600\r\nget a\r\n", "STORED\r\nOK\r\nVALUE a 0 1\r\nx\r\nEND\r\n")
	// A later flush_all replaces the pending one; an absolute time in the
	// past (more than 30 days, so a Unix time) flushes right away, before
	// its OK: the next command on the connection no longer sees the keys,
	// as in memcached.
	for _, past := range []string{"2592001", strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10)} {
		c.do("set a 0 0 1\r\nx\r\nflush_all "+past+"\r\nget a\r\n", "STORED\r\nOK\r\nEND\r\n")
		ts.s.flushMu.Lock()
		pending := ts.s.flushTimer != nil
		ts.s.flushMu.Unlock()
		if pending {
			t.Fatalf("flush_all %s: a delayed flush is still pending", past)
		}
	}
}

func TestMetricsRecorded(t *testing.T) {
	m := metrics.New(nil)
	ts := startServer(t, func(s *Server) { s.Metrics = m })
	c := ts.dial(t)
	c.do("set a 0 0 1\r\nx\r\nget a\r\nget a\r\nbogus\r\nincr a 1\r\n",
		"STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\nVALUE a 0 1\r\nx\r\nEND\r\nERROR\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`caskade_commands_total{command="get",protocol="memcache"} 2`,
		`caskade_commands_total{command="set",protocol="memcache"} 1`,
		`caskade_commands_total{command="mn",protocol="memcache"} 1`,
		`caskade_commands_total{command="unknown",protocol="memcache"} 1`,
		`caskade_command_errors_total{command="unknown",protocol="memcache"} 1`,
		`caskade_command_errors_total{command="incr",protocol="memcache"} 1`,
		`caskade_command_errors_total{command="get",protocol="memcache"} 0`,
		`caskade_connections{protocol="memcache"} 1`,
		`caskade_connections_total{protocol="memcache"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// A command's latency runs from when it was read, not from the end of the
// command before it when the connection sat idle in between (pipelined
// commands share clock readings).
func TestLatencyExcludesIdle(t *testing.T) {
	m := metrics.New(nil)
	ts := startServer(t, func(s *Server) { s.Metrics = m })
	c := ts.dial(t)
	c.do("set a 0 0 1 noreply\r\nx\r\nmn\r\n", "MN\r\n")
	c.do("get a\r\n", lines("VALUE a 0 1", "x", "END"))
	const idle = 300 * time.Millisecond
	time.Sleep(idle) // the gap the next commands' latencies must not include
	c.do("get a\r\nset b 0 0 1 noreply\r\ny\r\nmn\r\n", lines("VALUE a 0 1", "x", "END", "MN"))
	time.Sleep(idle)
	c.do("set c 0 0 1\r\nz\r\n", "STORED\r\n")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, cmd := range []string{"get", "set", "mn"} {
		re := regexp.MustCompile(`caskade_command_duration_seconds_sum\{command="` + cmd + `",protocol="memcache"\} (\S+)`)
		mt := re.FindStringSubmatch(rec.Body.String())
		if mt == nil {
			t.Fatalf("no latency sum for %s in\n%s", cmd, rec.Body.String())
		}
		sum, err := strconv.ParseFloat(mt[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		if sum >= idle.Seconds() {
			t.Errorf("%s: latencies add up to %.3fs, which includes an idle gap of %v", cmd, sum, idle)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, s := range []*Server{
		{},
		{DB: openDB(t), MaxItemSize: -1},
		{DB: openDB(t), MaxConns: -1},
		{DB: openDB(t), IdleTimeout: -time.Second},
	} {
		if s.DB != nil {
			t.Cleanup(func() { s.DB.Close() })
		}
		if err := s.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", s)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Serve(l); err == nil || errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve with a bad config: %v", err)
		}
	}
}
