package httpapi

import (
	"bufio"
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

// rawGet sends a GET on c and reads its response.
func rawGet(t *testing.T, c net.Conn, br *bufio.Reader, path string) (*http.Response, string) {
	t.Helper()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(b)
}

// MaxConns (serve's --maxclients) bounds HTTP connections as it does
// Redis and memcached ones: a connection beyond it gets 503 max_clients
// and is closed, and counts as rejected, not accepted. HTTP used to take
// any number of connections.
func TestMaxConns(t *testing.T) {
	m := metrics.New(nil)
	ts := startServer(t, func(s *Server) { s.MaxConns, s.Metrics = 1, m })
	addr := strings.TrimPrefix(ts.url, "http://")
	a, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	abr := bufio.NewReader(a)
	if res, _ := rawGet(t, a, abr, "/healthz"); res.StatusCode != 200 {
		t.Fatalf("first connection: %d", res.StatusCode)
	}
	b, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.SetDeadline(time.Now().Add(10 * time.Second))
	bbr := bufio.NewReader(b)
	res, body := rawGet(t, b, bbr, "/healthz")
	if res.StatusCode != 503 || !strings.Contains(body, `"max_clients"`) || !res.Close {
		t.Fatalf("connection beyond MaxConns: %d close=%v %s", res.StatusCode, res.Close, body)
	}
	if n, err := bbr.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("refused connection still open: read %d, %v", n, err)
	}
	// The first connection is still served.
	if res, _ := rawGet(t, a, abr, "/v1/kv/x"); res.StatusCode != 404 {
		t.Fatalf("first connection after the refusal: %d", res.StatusCode)
	}
	got := scrape(t, m)
	for _, want := range []string{
		`caskade_connections_rejected_total{protocol="http"} 1`,
		`caskade_connections_total{protocol="http"} 1`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// Once the first connection is gone, its slot is free again.
	a.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(scrape(t, m), `caskade_connections{protocol="http"} 0`) {
		if time.Now().After(deadline) {
			t.Fatal("the closed connection still holds its slot")
		}
		time.Sleep(5 * time.Millisecond) // polling for the server to see the close
	}
	ts.do(t, "GET", "/healthz", "").want(t, 200, "")
}

// A protected-mode refusal closes the connection and counts it as
// rejected, as the Redis and memcached front ends do; it used to be
// answered on a connection kept open, and not counted.
func TestProtectedModeCountsRejected(t *testing.T) {
	db := openDB(t)
	t.Cleanup(func() { db.Close() })
	m := metrics.New(nil)
	s := &Server{DB: db, Metrics: m}
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.RemoteAddr = "10.1.2.3:5555"
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("healthz: %d", rec.Code)
	}
	req = httptest.NewRequest("GET", "/v1/kv/x", nil)
	req.RemoteAddr = "10.1.2.3:5555"
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 403 || rec.Header().Get("Connection") != "close" {
		t.Fatalf("protected mode: %d, Connection %q", rec.Code, rec.Header().Get("Connection"))
	}
	if got := scrape(t, m); !strings.Contains(got, `caskade_connections_rejected_total{protocol="http"} 1`) {
		t.Fatal("the protected-mode refusal is not counted as a rejected connection")
	}
}
