package httpapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade/server/metrics"
)

// scrape returns the metrics m exposes.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// TestShutdownDeadlineClosesConnections stops the server while a client
// leaves a big GET reply unread: at Shutdown's deadline the connection is
// closed, and Shutdown returns only once the handler has returned, as the
// Redis and memcached front ends do, so the caller may close the DB.
// Before, Shutdown returned at the deadline with the handler still
// blocked (and with no write timeout, for good) on the open connection.
func TestShutdownDeadlineClosesConnections(t *testing.T) {
	var m *metrics.Metrics
	ts := startServer(t, func(s *Server) {
		m = metrics.New(nil)
		s.Metrics, s.WriteTimeout = m, -1
	})
	const size = 32 << 20 // far more than the socket buffers hold
	if err := ts.db.Set([]byte("big"), make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /v1/kv/big HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET: %v %v", res, err)
	}
	// The handler is now blocked writing the value, which nobody reads.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ts.s.Shutdown(ctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown: %v, want the deadline's error", err)
		}
	case <-time.After(10 * time.Second): // bounds the failure, not the success
		t.Fatal("Shutdown still waits 10 s after its 100 ms deadline")
	}
	if got := scrape(t, m); !strings.Contains(got, `caskade_commands_total{command="kv_get",protocol="http"} 1`) {
		t.Fatal("Shutdown returned while the GET handler was still running")
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _ := io.Copy(io.Discard, res.Body)
	if n >= size {
		t.Fatalf("the client got the whole value (%d bytes): its connection was not closed", n)
	}
	// A request reaching the handler after Shutdown is refused.
	rec := httptest.NewRecorder()
	ts.s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/kv/big", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"closed"`) {
		t.Fatalf("request after Shutdown: %d %s", rec.Code, rec.Body)
	}
}
