package memcache

// A small load generator as go test benchmarks: gets, sets and pipelined
// noreply sets over many parallel TCP connections against the in-process server, or, with
// MEMCACHE_ADDR set, against any memcached-protocol server (for example a
// real memcached on the same machine, to compare):
//
//	go test -run '^$' -bench 'Load' -benchtime 10s ./server/memcache/
//	MEMCACHE_ADDR=127.0.0.1:11211 go test -run '^$' -bench 'Load' -benchtime 10s ./server/memcache/
//
// Flags (after -args): -loadgen.conns (default 50), -loadgen.keys (10000),
// -loadgen.value (100 bytes), -loadgen.sync (none, everysec or always: the
// in-process database's durability policy).

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
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

// loadTarget returns the address to load: MEMCACHE_ADDR, or a fresh
// in-process server.
func loadTarget(b *testing.B) string {
	if a := os.Getenv("MEMCACHE_ADDR"); a != "" {
		return a
	}
	pol, err := caskade.ParseSyncPolicy(*loadSync)
	if err != nil {
		b.Fatal(err)
	}
	db, err := caskade.Open(b.TempDir(), &caskade.Options{Sync: pol, MergeInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	ts := startServerDB(b, db, false, func(s *Server) { s.MaxConns = *loadConns + 16 })
	return ts.addr
}

func loadKey(i int) string { return fmt.Sprintf("loadgen:%08d", i) }

// loadConn is one raw connection.
type loadConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func dialLoad(b *testing.B, addr string) *loadConn {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	return &loadConn{c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 64<<10)}
}

// preload sets every key once.
func preload(b *testing.B, addr string, value []byte) {
	lc := dialLoad(b, addr)
	defer lc.c.Close()
	for i := range *loadKeys {
		fmt.Fprintf(lc.w, "set %s 0 0 %d noreply\r\n%s\r\n", loadKey(i), len(value), value)
	}
	lc.w.WriteString("mn\r\n")
	lc.w.Flush()
	if l, err := lc.r.ReadString('\n'); err != nil || l != "MN\r\n" {
		b.Fatalf("preload: %q %v", l, err)
	}
}

// loadPipeline is how many noreply sets BenchmarkLoadSetPipelined sends
// before the mn that ends each pipeline.
const loadPipeline = 100

type loadMode int

const (
	loadGet loadMode = iota
	loadSet
	loadSetPipelined
)

func runLoad(b *testing.B, mode loadMode) {
	addr := loadTarget(b)
	value := []byte(strings.Repeat("v", *loadValue))
	preload(b, addr, value)
	conns := make(chan *loadConn, *loadConns)
	for range *loadConns {
		conns <- dialLoad(b, addr)
	}
	defer func() {
		close(conns)
		for lc := range conns {
			lc.c.Close()
		}
	}()
	var seed atomic.Uint64
	b.SetParallelism(max(1, (*loadConns+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0)))
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		lc := <-conns
		defer func() { conns <- lc }()
		r := rand.New(rand.NewPCG(seed.Add(1), 7))
		want := fmt.Sprintf(" 0 %d\r\n", len(value))
		buf := make([]byte, len(value)+len("\r\nEND\r\n"))
		inPipeline := 0
		endPipeline := func() bool {
			lc.w.WriteString("mn\r\n")
			if err := lc.w.Flush(); err != nil {
				b.Error(err)
				return false
			}
			if l, err := lc.r.ReadString('\n'); err != nil || l != "MN\r\n" {
				b.Errorf("pipeline: %q %v", l, err)
				return false
			}
			inPipeline = 0
			return true
		}
		for pb.Next() {
			k := loadKey(r.IntN(*loadKeys))
			if mode == loadSetPipelined {
				fmt.Fprintf(lc.w, "set %s 0 0 %d noreply\r\n%s\r\n", k, len(value), value)
				if inPipeline++; inPipeline == loadPipeline && !endPipeline() {
					return
				}
				continue
			}
			get := mode == loadGet
			if get {
				fmt.Fprintf(lc.w, "get %s\r\n", k)
			} else {
				fmt.Fprintf(lc.w, "set %s 0 0 %d\r\n%s\r\n", k, len(value), value)
			}
			if err := lc.w.Flush(); err != nil {
				b.Error(err)
				return
			}
			l, err := lc.r.ReadString('\n')
			if err != nil {
				b.Error(err)
				return
			}
			if !get {
				if l != "STORED\r\n" {
					b.Errorf("set: %q", l)
					return
				}
				continue
			}
			if !strings.HasPrefix(l, "VALUE "+k) || !strings.HasSuffix(l, want) {
				b.Errorf("get: %q", l)
				return
			}
			if _, err := io.ReadFull(lc.r, buf); err != nil {
				b.Error(err)
				return
			}
		}
		if inPipeline > 0 {
			endPipeline()
		}
	})
}

// BenchmarkLoadGet measures get round trips over -loadgen.conns connections.
func BenchmarkLoadGet(b *testing.B) { runLoad(b, loadGet) }

// BenchmarkLoadSet measures set round trips over -loadgen.conns connections.
func BenchmarkLoadSet(b *testing.B) { runLoad(b, loadSet) }

// BenchmarkLoadSetPipelined measures noreply sets sent in pipelines of
// loadPipeline, each ended by mn, over -loadgen.conns connections.
func BenchmarkLoadSetPipelined(b *testing.B) { runLoad(b, loadSetPipelined) }
