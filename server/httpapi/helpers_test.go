package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade"
)

type testServer struct {
	s    *Server
	db   *caskade.DB
	url  string
	http *http.Client
}

func openDB(t testing.TB) *caskade.DB {
	t.Helper()
	db, err := caskade.Open(t.TempDir(), &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// startServer runs a Server on 127.0.0.1:0 over a new database (closed at
// cleanup unless the test closed it).
func startServer(t testing.TB, opts ...func(*Server)) *testServer {
	t.Helper()
	db := openDB(t)
	s := &Server{DB: db}
	for _, o := range opts {
		o(s)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	ts := &testServer{s: s, db: db, url: "http://" + l.Addr().String(),
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ts.http.CloseIdleConnections()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		if err := db.Close(); err != nil && !errors.Is(err, caskade.ErrClosed) {
			t.Errorf("db.Close: %v", err)
		}
	})
	return ts
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   string
}

func (ts *testServer) do(t testing.TB, method, path string, body string, hdr ...string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	res, err := ts.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return response{res.StatusCode, res.Header, string(b)}
}

// want checks a response's status and, for JSON errors, its code.
func (r response) want(t testing.TB, status int, code string) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d (body %q)", r.status, status, r.body)
	}
	if code != "" {
		var e errorBody
		if err := json.Unmarshal([]byte(r.body), &e); err != nil || e.Error.Code != code {
			t.Fatalf("error body %q: want code %q (%v)", r.body, code, err)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("error Content-Type %q", ct)
		}
	}
	return r
}
