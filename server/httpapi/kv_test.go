package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/metrics"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

func TestKV(t *testing.T) {
	ts := startServer(t)
	ts.do(t, "GET", "/v1/kv/nope", "").want(t, 404, "not_found")
	ts.do(t, "HEAD", "/v1/kv/nope", "").want(t, 404, "")

	r := ts.do(t, "PUT", "/v1/kv/greeting", "hello").want(t, 201, "")
	v1 := r.header.Get(HeaderVersion)
	if v1 == "" || r.header.Get("ETag") != `"`+v1+`"` {
		t.Fatalf("PUT headers: %v", r.header)
	}
	r = ts.do(t, "GET", "/v1/kv/greeting", "").want(t, 200, "")
	if r.body != "hello" || r.header.Get("ETag") != `"`+v1+`"` || r.header.Get(HeaderFlags) != "0" ||
		r.header.Get("Content-Type") != "application/octet-stream" || r.header.Get(HeaderExpiresAt) != "" {
		t.Fatalf("GET: %q %v", r.body, r.header)
	}
	r = ts.do(t, "HEAD", "/v1/kv/greeting", "").want(t, 200, "")
	if r.body != "" || r.header.Get("Content-Length") != "5" || r.header.Get(HeaderVersion) != v1 {
		t.Fatalf("HEAD: %q %v", r.body, r.header)
	}
	r = ts.do(t, "PUT", "/v1/kv/greeting?flags=42&ttl=100", "bye").want(t, 204, "")
	v2 := r.header.Get(HeaderVersion)
	if v2 == v1 || v2 == "" {
		t.Fatalf("version after replace: %q (was %q)", v2, v1)
	}
	r = ts.do(t, "GET", "/v1/kv/greeting", "").want(t, 200, "")
	exp, err := time.Parse(time.RFC3339Nano, r.header.Get(HeaderExpiresAt))
	if r.body != "bye" || r.header.Get(HeaderFlags) != "42" || err != nil || time.Until(exp) < 90*time.Second {
		t.Fatalf("GET after PUT with flags and ttl: %q %v", r.body, r.header)
	}
	at := time.Now().Add(time.Hour).Unix()
	ts.do(t, "PUT", fmt.Sprintf("/v1/kv/greeting?expires_at=%d", at), "x").want(t, 204, "")
	if info, err := ts.db.Stat([]byte("greeting")); err != nil || info.ExpiresAt.Unix() != at {
		t.Fatalf("expires_at: %+v %v", info, err)
	}
	ts.do(t, "PUT", "/v1/kv/greeting?expires_at="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "x").want(t, 204, "")
	ts.do(t, "DELETE", "/v1/kv/greeting", "").want(t, 204, "")
	ts.do(t, "DELETE", "/v1/kv/greeting", "").want(t, 404, "not_found")
	ts.do(t, "GET", "/v1/kv/greeting", "").want(t, 404, "not_found")

	// Empty values, binary keys and escaped slashes.
	ts.do(t, "PUT", "/v1/kv/empty", "").want(t, 201, "")
	if r := ts.do(t, "GET", "/v1/kv/empty", "").want(t, 200, ""); r.body != "" {
		t.Fatalf("empty value: %q", r.body)
	}
	ts.do(t, "PUT", "/v1/kv/a%2Fb%00%FE", "bin\x00ary").want(t, 201, "")
	if v, err := ts.db.Get([]byte("a/b\x00\xfe")); err != nil || string(v) != "bin\x00ary" {
		t.Fatalf("binary key in DB: %q %v", v, err)
	}
	if r := ts.do(t, "GET", "/v1/kv/a/b%00%fe", "").want(t, 200, ""); r.body != "bin\x00ary" {
		t.Fatalf("raw slash: %q", r.body)
	}

	// Bad requests.
	ts.do(t, "GET", "/v1/kv/", "").want(t, 400, "invalid_key")
	ts.do(t, "GET", "/v1/kv/%FFdb1", "").want(t, 400, "reserved_key")
	ts.do(t, "PUT", "/v1/kv/%FF", "x").want(t, 400, "reserved_key")
	ts.do(t, "PUT", "/v1/kv/k?ttl=0", "x").want(t, 400, "invalid_argument")
	ts.do(t, "PUT", "/v1/kv/k?ttl=abc", "x").want(t, 400, "invalid_argument")
	ts.do(t, "PUT", "/v1/kv/k?ttl=5&expires_at=5", "x").want(t, 400, "invalid_argument")
	ts.do(t, "PUT", "/v1/kv/k?expires_at=soon", "x").want(t, 400, "invalid_argument")
	ts.do(t, "PUT", "/v1/kv/k?flags=-1", "x").want(t, 400, "invalid_argument")
	ts.do(t, "PUT", "/v1/kv/"+strings.Repeat("k", caskade.DefaultMaxKeySize+1), "x").want(t, 400, "key_too_large")
	r = ts.do(t, "POST", "/v1/kv/k", "x").want(t, 405, "method_not_allowed")
	if r.header.Get("Allow") == "" {
		t.Fatal("405 without Allow")
	}
	ts.do(t, "PUT", "/v1/kv", "x").want(t, 405, "method_not_allowed")
	ts.do(t, "GET", "/v2/nothing", "").want(t, 404, "not_found")
	ts.do(t, "GET", "/metrics", "").want(t, 404, "not_found")
	ts.do(t, "GET", "/debug/pprof/", "").want(t, 404, "not_found")
	if _, err := ts.db.Get([]byte("k")); err == nil {
		t.Fatal("a refused PUT wrote")
	}
}

func TestConditional(t *testing.T) {
	ts := startServer(t)
	ts.do(t, "PUT", "/v1/kv/c", "1", "If-None-Match", "*").want(t, 201, "")
	ts.do(t, "PUT", "/v1/kv/c", "2", "If-None-Match", "*").want(t, 412, "precondition_failed")
	v := ts.do(t, "GET", "/v1/kv/c", "").header.Get(HeaderVersion)
	n, _ := strconv.ParseUint(v, 10, 64)
	old := fmt.Sprint(n - 1)

	ts.do(t, "PUT", "/v1/kv/c", "3", "If-Match", `"`+old+`"`).want(t, 412, "precondition_failed")
	ts.do(t, "PUT", "/v1/kv/c", "3", "If-Match", "nonsense").want(t, 400, "invalid_argument")
	r := ts.do(t, "PUT", "/v1/kv/c", "3", "If-Match", `"`+old+`", W/"`+v+`"`).want(t, 204, "")
	v3 := r.header.Get(HeaderVersion)
	ts.do(t, "PUT", "/v1/kv/c", "4", "If-Match", v).want(t, 412, "precondition_failed")
	ts.do(t, "PUT", "/v1/kv/c", "4", "If-Match", v3).want(t, 204, "")
	ts.do(t, "PUT", "/v1/kv/missing", "x", "If-Match", "*").want(t, 412, "precondition_failed")
	ts.do(t, "PUT", "/v1/kv/c", "5", "If-Match", "*").want(t, 204, "")
	if got, _ := ts.db.Get([]byte("c")); string(got) != "5" {
		t.Fatalf("value %q", got)
	}

	// GET conditionals.
	cur := ts.do(t, "GET", "/v1/kv/c", "").header.Get("ETag")
	r = ts.do(t, "GET", "/v1/kv/c", "", "If-None-Match", cur).want(t, 304, "")
	if r.body != "" || r.header.Get("ETag") != cur {
		t.Fatalf("304: %q %v", r.body, r.header)
	}
	ts.do(t, "GET", "/v1/kv/c", "", "If-None-Match", `"1"`).want(t, 200, "")
	ts.do(t, "GET", "/v1/kv/c", "", "If-Match", `"1"`).want(t, 412, "precondition_failed")
	ts.do(t, "GET", "/v1/kv/none", "", "If-Match", "*").want(t, 412, "precondition_failed")

	// DELETE conditionals.
	ts.do(t, "DELETE", "/v1/kv/c", "", "If-Match", `"1"`).want(t, 412, "precondition_failed")
	ts.do(t, "DELETE", "/v1/kv/c", "", "If-Match", cur).want(t, 204, "")
	ts.do(t, "DELETE", "/v1/kv/c", "", "If-Match", cur).want(t, 412, "precondition_failed")

	// A write by another path (the DB directly, as Redis would) between
	// the read and the conditional write makes it fail.
	r = ts.do(t, "PUT", "/v1/kv/race", "a").want(t, 201, "")
	etag := r.header.Get("ETag")
	if err := ts.db.Set([]byte("race"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	ts.do(t, "PUT", "/v1/kv/race", "c", "If-Match", etag).want(t, 412, "precondition_failed")
	if got, _ := ts.db.Get([]byte("race")); string(got) != "b" {
		t.Fatalf("lost update: %q", got)
	}
}

func TestBodyLimit(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.MaxBodyBytes = 100 })
	ts.do(t, "PUT", "/v1/kv/k", strings.Repeat("x", 100)).want(t, 201, "")
	ts.do(t, "PUT", "/v1/kv/k", strings.Repeat("x", 101)).want(t, 413, "body_too_large")
	big := `{"success":[{"put":{"key":"k","value":"` + strings.Repeat("x", 200) + `"}}]}`
	ts.do(t, "POST", "/v1/txn", big).want(t, 413, "body_too_large")
	if v, _ := ts.db.Get([]byte("k")); len(v) != 100 {
		t.Fatalf("value of %d bytes", len(v))
	}
}

func TestAuth(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.Password = "s3cret" })
	r := ts.do(t, "GET", "/v1/kv/k", "").want(t, 401, "unauthorized")
	if r.header.Get("WWW-Authenticate") == "" {
		t.Fatal("401 without WWW-Authenticate")
	}
	ts.do(t, "PUT", "/v1/kv/k", "x", "Authorization", "Bearer wrong").want(t, 401, "unauthorized")
	ts.do(t, "PUT", "/v1/kv/k", "x", "Authorization", "Basic czNjcmV0").want(t, 401, "unauthorized")
	ts.do(t, "PUT", "/v1/kv/k", "x", "Authorization", "Bearer s3cret").want(t, 201, "")
	ts.do(t, "GET", "/v1/kv", "", "Authorization", "bearer s3cret").want(t, 200, "")
	ts.do(t, "GET", "/healthz", "").want(t, 200, "")
	ts.do(t, "GET", "/readyz", "").want(t, 200, "")
}

func TestProtectedMode(t *testing.T) {
	db := openDB(t)
	t.Cleanup(func() { db.Close() })
	for _, tc := range []struct {
		s      *Server
		remote string
		status int
	}{
		{&Server{DB: db}, "10.1.2.3:5555", 403},
		{&Server{DB: db}, "[2001:db8::1]:5555", 403},
		{&Server{DB: db}, "127.0.0.1:5555", 404},
		{&Server{DB: db}, "[::1]:5555", 404},
		{&Server{DB: db, DisableProtectedMode: true}, "10.1.2.3:5555", 404},
		{&Server{DB: db, Password: "p"}, "10.1.2.3:5555", 401},
	} {
		req := httptest.NewRequest("GET", "/v1/kv/x", nil)
		req.RemoteAddr = tc.remote
		rec := httptest.NewRecorder()
		tc.s.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("%s (password %q, disabled %v): %d, want %d: %s", tc.remote, tc.s.Password, tc.s.DisableProtectedMode, rec.Code, tc.status, rec.Body)
		}
		if tc.status == 403 && !strings.Contains(rec.Body.String(), `"protected_mode"`) {
			t.Errorf("403 body %s", rec.Body)
		}
		// Health probes are always answered.
		req = httptest.NewRequest("GET", "/healthz", nil)
		req.RemoteAddr = tc.remote
		rec = httptest.NewRecorder()
		tc.s.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("healthz from %s: %d", tc.remote, rec.Code)
		}
	}
}

func TestHealth(t *testing.T) {
	ts := startServer(t)
	ts.do(t, "GET", "/healthz", "").want(t, 200, "")
	ts.do(t, "POST", "/healthz", "").want(t, 405, "method_not_allowed")
	ts.do(t, "GET", "/readyz", "").want(t, 200, "")
	if err := ts.db.Close(); err != nil {
		t.Fatal(err)
	}
	ts.do(t, "GET", "/readyz", "").want(t, 503, "closed")
	ts.do(t, "GET", "/healthz", "").want(t, 200, "")
	ts.do(t, "PUT", "/v1/kv/x", "y").want(t, 503, "closed")
}

func TestMetricsEndpoint(t *testing.T) {
	var m *metrics.Metrics
	ts := startServer(t, func(s *Server) {
		m = metrics.New(s.DB)
		s.Metrics = m
	})
	ts.do(t, "PUT", "/v1/kv/a", "1").want(t, 201, "")
	ts.do(t, "GET", "/v1/kv/a", "").want(t, 200, "")
	ts.do(t, "GET", "/v1/kv/b", "").want(t, 404, "")
	ts.do(t, "PUT", "/v1/kv/a?ttl=x", "1").want(t, 400, "")
	ts.do(t, "GET", "/no/such/path", "").want(t, 404, "")
	r := ts.do(t, "GET", "/metrics", "").want(t, 200, "")
	for _, want := range []string{
		`caskade_commands_total{command="kv_get",protocol="http"} 2`,
		`caskade_commands_total{command="kv_put",protocol="http"} 2`,
		`caskade_command_errors_total{command="kv_put",protocol="http"} 1`,
		`caskade_command_errors_total{command="kv_get",protocol="http"} 0`,
		`caskade_commands_total{command="unknown",protocol="http"} 1`,
		`caskade_command_duration_seconds_bucket{command="kv_get",protocol="http",le="+Inf"} 2`,
		`caskade_db_keys 1`,
		`caskade_connections{protocol="http"} `,
		`caskade_connections_total{protocol="http"} `,
		`go_goroutines `,
		`process_cpu_seconds_total `,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestPprof(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.EnablePprof = true })
	r := ts.do(t, "GET", "/debug/pprof/", "").want(t, 200, "")
	if !strings.Contains(r.body, "goroutine") {
		t.Fatalf("index: %q", r.body)
	}
	r = ts.do(t, "GET", "/debug/pprof/goroutine?debug=1", "").want(t, 200, "")
	if !strings.Contains(r.body, "goroutine profile") {
		t.Fatalf("goroutine profile: %.200q", r.body)
	}
	ts.do(t, "GET", "/debug/pprof/heap", "").want(t, 200, "")
	ts.do(t, "GET", "/debug/pprof/nonesuch", "").want(t, 404, "not_found")
	r = ts.do(t, "GET", "/debug/pprof/profile?seconds=1", "").want(t, 200, "")
	if len(r.body) == 0 {
		t.Fatal("empty CPU profile")
	}
}

// A profile as long as the write timeout is still delivered: the timeout
// counts from the request, so without moving the deadline the profile,
// written when it ends, was cut off and the client got no reply.
func TestPprofLongerThanWriteTimeout(t *testing.T) {
	ts := startServer(t, func(s *Server) {
		s.EnablePprof, s.WriteTimeout, s.Metrics = true, 500*time.Millisecond, metrics.New(nil)
	})
	for _, name := range []string{"profile", "trace"} {
		r := ts.do(t, "GET", "/debug/pprof/"+name+"?seconds=1", "").want(t, 200, "")
		if len(r.body) == 0 {
			t.Fatalf("empty %s", name)
		}
	}
}

func TestKeepAlive(t *testing.T) {
	ts := startServer(t)
	reused := 0
	for i := range 5 {
		req, _ := http.NewRequest("PUT", ts.url+"/v1/kv/ka", bytes.NewReader([]byte(fmt.Sprint(i))))
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(ci httptrace.GotConnInfo) {
				if ci.Reused {
					reused++
				}
			},
		}))
		res, err := ts.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if reused != 4 {
		t.Fatalf("%d of 4 later requests reused the connection", reused)
	}
	srv, _ := ts.s.httpServer()
	if srv.ReadHeaderTimeout != DefaultReadHeaderTimeout || srv.IdleTimeout != DefaultIdleTimeout ||
		srv.ReadTimeout != DefaultReadTimeout || srv.WriteTimeout != DefaultWriteTimeout {
		t.Fatalf("timeouts: %+v", srv)
	}
}

func TestJSONErrorsAreStable(t *testing.T) {
	ts := startServer(t)
	r := ts.do(t, "GET", "/v1/kv/x", "").want(t, 404, "not_found")
	var e map[string]map[string]string
	if err := json.Unmarshal([]byte(r.body), &e); err != nil || e["error"]["message"] == "" {
		t.Fatalf("error body %q", r.body)
	}
}

// A write refused for a full disk is 507 no_space (retry once there is
// room); writes stopped by a failure, whatever its cause, stay 503.
func TestNoSpaceStatus(t *testing.T) {
	full := fmt.Errorf("caskade: write 0000000001.data: %w", &fs.PathError{Op: "write", Path: "0000000001.data", Err: syscall.ENOSPC})
	if status, code := dbErrorStatus(full); status != http.StatusInsufficientStorage || code != "no_space" {
		t.Errorf("ENOSPC: %d %s, want 507 no_space", status, code)
	}
	stopped := fmt.Errorf("%w: %w", caskade.ErrWritesStopped, full)
	if status, code := dbErrorStatus(stopped); status != http.StatusServiceUnavailable || code != "writes_stopped" {
		t.Errorf("writes stopped by ENOSPC: %d %s, want 503 writes_stopped", status, code)
	}
}

// Every key the engine takes can be reached by its URL: a long binary key
// %-escapes to three times its length, which a 64 KiB header limit
// refused with a plain-text 431 although Redis and memcached could write
// the key.
func TestLongKeyInPath(t *testing.T) {
	ts := startServer(t)
	key := bytes.Repeat([]byte{1}, caskade.DefaultMaxKeySize)
	if err := ts.db.Set(key, []byte("v")); err != nil {
		t.Fatal(err)
	}
	esc := url.PathEscape(string(key))
	if r := ts.do(t, "GET", "/v1/kv/"+esc, "").want(t, 200, ""); r.body != "v" {
		t.Fatalf("GET: %q", r.body)
	}
	ts.do(t, "PUT", "/v1/kv/"+esc, "w").want(t, 204, "")
	r := ts.do(t, "GET", "/v1/kv?keys_only=true&prefix="+esc+"&start="+esc+"&end="+esc+"%01", "").want(t, 200, "")
	if !strings.Contains(r.body, `"count":1`) {
		t.Fatalf("listing: %.100q", r.body)
	}
	ts.do(t, "PUT", "/v1/kv/"+esc+"%01", "x").want(t, 400, "key_too_large")
	ts.do(t, "DELETE", "/v1/kv/"+esc, "").want(t, 204, "")
}

// TestReadyzWhileWritesFail checks the probes while the database refuses
// writes: /readyz answers 503 no_space from a write refused for lack of
// space until a write goes through, and 503 writes_stopped for good once
// a failed fsync stopped writes, with messages that name no file;
// /healthz stays 200 (the process serves, and reads go on).
func TestReadyzWhileWritesFail(t *testing.T) {
	const dir = "/srv/secret-dir"
	efs := errorfs.New(vfs.NewMem())
	db, err := caskade.Open(dir, &caskade.Options{FS: efs, Sync: caskade.SyncAlways, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // after the server's shutdown
	ts := startServer(t, func(s *Server) { s.DB = db })
	probes := func(status int, code string) {
		t.Helper()
		r := ts.do(t, "GET", "/readyz", "").want(t, status, code)
		if strings.Contains(r.body, "secret-dir") || strings.Contains(r.body, ".data") {
			t.Errorf("/readyz names a file: %s", r.body)
		}
		ts.do(t, "GET", "/healthz", "").want(t, 200, "")
	}
	ts.do(t, "PUT", "/v1/kv/k", "1", "").want(t, 201, "")
	probes(200, "")

	for _, step := range []struct {
		what   string
		op     errorfs.Op
		err    error
		put    int    // the status of a PUT with the fault on
		code   string // its error code, and /readyz's after it
		resume bool   // writes go through once the fault is gone
	}{
		{"disk full", errorfs.OpWrite, syscall.ENOSPC, 507, "no_space", true},
		{"fsync failed", errorfs.OpSync, syscall.EIO, 503, "writes_stopped", false},
	} {
		efs.Inject(step.op, step.err)
		ts.do(t, "PUT", "/v1/kv/k", "2", "").want(t, step.put, step.code)
		probes(503, step.code)
		efs.Inject(step.op, nil)
		// Nothing has written since: still refused.
		probes(503, step.code)
		ts.do(t, "GET", "/v1/kv/k", "").want(t, 200, "")
		if !step.resume {
			ts.do(t, "PUT", "/v1/kv/k", "3", "").want(t, 503, "writes_stopped")
			probes(503, step.code)
			continue
		}
		ts.do(t, "PUT", "/v1/kv/k", "3", "").want(t, 204, "")
		probes(200, "")
	}
}
