package httpapi

// A small HTTP load generator as go test benchmarks: GET /v1/kv/{key} and
// PUT over many keep-alive connections against the in-process server, and
// the same GETs against a minimal net/http handler serving the same bytes
// from a Go map (the baseline the issue compares with). With HTTP_URL set
// (e.g. http://127.0.0.1:8080) BenchmarkLoadHTTPGet and Put load that
// server instead:
//
//	go test -run '^$' -bench 'LoadHTTP' -benchtime 10s ./server/httpapi/
//
// Flags (after -args): -loadgen.conns (default 50), -loadgen.keys (10000),
// -loadgen.value (100 bytes), -loadgen.sync (none, everysec, always).

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/caskade/caskade"
)

var (
	loadConns = flag.Int("loadgen.conns", 50, "parallel connections of the load generator")
	loadKeys  = flag.Int("loadgen.keys", 10000, "distinct keys of the load generator")
	loadValue = flag.Int("loadgen.value", 100, "value size of the load generator")
	loadSync  = flag.String("loadgen.sync", "none", "sync policy of the in-process database (none, everysec, always)")
)

func loadKey(i int) string { return fmt.Sprintf("loadgen:%08d", i) }

// loadServer returns the base URL to load: HTTP_URL, or a fresh in-process
// server preloaded with the keys.
func loadServer(b *testing.B, value []byte) string {
	if u := os.Getenv("HTTP_URL"); u != "" {
		return strings.TrimSuffix(u, "/")
	}
	pol, err := caskade.ParseSyncPolicy(*loadSync)
	if err != nil {
		b.Fatal(err)
	}
	db, err := caskade.Open(b.TempDir(), &caskade.Options{Sync: pol, MergeInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	var batch caskade.Batch
	for i := range *loadKeys {
		batch.Set([]byte(loadKey(i)), value)
	}
	if err := db.Write(&batch); err != nil {
		b.Fatal(err)
	}
	return serveBench(b, &Server{DB: db}, func() { db.Close() })
}

// serveBench serves h on 127.0.0.1:0 for the benchmark.
func serveBench(b *testing.B, h http.Handler, cleanup func()) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	if s, ok := h.(*Server); ok {
		go s.Serve(l)
		b.Cleanup(func() { s.Close(); cleanup() })
	} else {
		go srv.Serve(l)
		b.Cleanup(func() { srv.Close(); cleanup() })
	}
	return "http://" + l.Addr().String()
}

// mapHandler is the baseline: GET /v1/kv/{key} from a Go map.
type mapHandler struct{ m map[string][]byte }

func (h *mapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v, ok := h.m[strings.TrimPrefix(r.URL.Path, kvPrefix)]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(v)
}

func loadHTTP(b *testing.B, base string, put bool, value []byte) {
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns: *loadConns, MaxIdleConnsPerHost: *loadConns, MaxConnsPerHost: *loadConns,
	}}
	defer client.CloseIdleConnections()
	var seed atomic.Uint64
	b.SetParallelism(max(1, (*loadConns+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0)))
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(seed.Add(1), 3))
		buf := make([]byte, len(value)+1)
		for pb.Next() {
			url := base + kvPrefix + loadKey(r.IntN(*loadKeys))
			var req *http.Request
			if put {
				req, _ = http.NewRequest("PUT", url, bytes.NewReader(value))
			} else {
				req, _ = http.NewRequest("GET", url, nil)
			}
			res, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			n, _ := io.ReadFull(res.Body, buf)
			res.Body.Close()
			ok := res.StatusCode == 200 && n == len(value)
			if put {
				ok = res.StatusCode == 204 || res.StatusCode == 201
			}
			if !ok {
				b.Errorf("%s: %d (%d bytes)", req.Method, res.StatusCode, n)
				return
			}
		}
	})
}

// BenchmarkLoadHTTPGet measures GET /v1/kv/{key} over keep-alive.
func BenchmarkLoadHTTPGet(b *testing.B) {
	value := []byte(strings.Repeat("v", *loadValue))
	loadHTTP(b, loadServer(b, value), false, value)
}

// BenchmarkLoadHTTPPut measures PUT /v1/kv/{key} over keep-alive.
func BenchmarkLoadHTTPPut(b *testing.B) {
	value := []byte(strings.Repeat("v", *loadValue))
	loadHTTP(b, loadServer(b, value), true, value)
}

// BenchmarkLoadHTTPBaselineGet is the same GET load against a minimal
// net/http handler serving the same bytes from a map.
func BenchmarkLoadHTTPBaselineGet(b *testing.B) {
	value := []byte(strings.Repeat("v", *loadValue))
	h := &mapHandler{m: map[string][]byte{}}
	for i := range *loadKeys {
		h.m[loadKey(i)] = value
	}
	loadHTTP(b, serveBench(b, h, func() {}), false, value)
}
