package client_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade/client"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// The benchmarks compare this client with go-redis v9 and rueidis against
// the same server: caskade's, in-process (its allocations then count in
// allocs/op, equally for every client), and redis-server when installed (a
// separate process: allocs/op is the client's alone). Run:
//
//	go test -run XXX -bench Clients -benchtime 2s ./client/
//
// Workloads: one goroutine doing sequential GET or SET; 64 goroutines
// (b.SetParallelism) doing GET or SET; pipelines of 100 GETs. p50-us and
// p99-us are per-call latencies from a sample of the calls (per pipeline
// for pipe100).

const (
	benchKeys  = 1024
	benchValue = 64
)

type benchClient interface {
	get(ctx context.Context, key string) error
	set(ctx context.Context, key string, val []byte) error
	pipe(ctx context.Context, keys []string) error
	close()
}

type ourBench struct{ c *client.Client }

func (o ourBench) get(ctx context.Context, key string) error {
	_, err := o.c.Get(ctx, key)
	return err
}

func (o ourBench) set(ctx context.Context, key string, val []byte) error {
	_, err := o.c.Set(ctx, key, val, client.SetArgs{})
	return err
}

func (o ourBench) pipe(ctx context.Context, keys []string) error {
	p := o.c.Pipeline()
	for _, k := range keys {
		p.Get(k)
	}
	_, err := p.Exec(ctx)
	return err
}

func (o ourBench) close() { o.c.Close() }

type goredisBench struct{ c *goredis.Client }

func (g goredisBench) get(ctx context.Context, key string) error {
	return g.c.Get(ctx, key).Err()
}

func (g goredisBench) set(ctx context.Context, key string, val []byte) error {
	return g.c.Set(ctx, key, val, 0).Err()
}

func (g goredisBench) pipe(ctx context.Context, keys []string) error {
	_, err := g.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, k := range keys {
			p.Get(ctx, k)
		}
		return nil
	})
	return err
}

func (g goredisBench) close() { g.c.Close() }

type rueidisBench struct{ c rueidis.Client }

func (r rueidisBench) get(ctx context.Context, key string) error {
	return r.c.Do(ctx, r.c.B().Get().Key(key).Build()).Error()
}

func (r rueidisBench) set(ctx context.Context, key string, val []byte) error {
	return r.c.Do(ctx, r.c.B().Set().Key(key).Value(rueidis.BinaryString(val)).Build()).Error()
}

func (r rueidisBench) pipe(ctx context.Context, keys []string) error {
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = r.c.B().Get().Key(k).Build()
	}
	for _, res := range r.c.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}

func (r rueidisBench) close() { r.c.Close() }

var benchClients = []struct {
	name string
	new  func(b *testing.B, addr string) benchClient
}{
	{"caskade", func(b *testing.B, addr string) benchClient {
		c, err := client.Dial(context.Background(), addr, nil)
		if err != nil {
			b.Fatal(err)
		}
		return ourBench{c}
	}},
	{"goredis", func(b *testing.B, addr string) benchClient {
		// One connection per goroutine at 64 goroutines: go-redis's best.
		return goredisBench{goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: 64})}
	}},
	{"rueidis", func(b *testing.B, addr string) benchClient {
		c, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		return rueidisBench{c}
	}},
}

// latencies keeps the last samples of one goroutine's call latencies.
type latencies struct {
	d [4096]time.Duration
	n int
}

func (l *latencies) add(d time.Duration) {
	l.d[l.n%len(l.d)] = d
	l.n++
}

func (l *latencies) samples() []time.Duration { return l.d[:min(l.n, len(l.d))] }

// report adds p50 and p99 in microseconds.
func report(b *testing.B, all []time.Duration) {
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds())/1e3, "p99-us")
}

func BenchmarkClients(b *testing.B) {
	servers := []struct {
		name  string
		start func(b *testing.B) string
	}{
		{"caskade", func(b *testing.B) string { return startCaskade(b, nil).addr }},
		{"redis", func(b *testing.B) string { return startRedis(b).addr }},
	}
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = "bench:" + strconv.Itoa(i)
	}
	val := make([]byte, benchValue)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	for _, srv := range servers {
		b.Run("server="+srv.name, func(b *testing.B) {
			addr := srv.start(b)
			seed, err := client.Dial(context.Background(), addr, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			p := seed.Pipeline()
			for _, k := range keys {
				p.Set(k, val, client.SetArgs{})
			}
			if _, err := p.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			seed.Close()
			for _, bc := range benchClients {
				b.Run("client="+bc.name, func(b *testing.B) {
					c := bc.new(b, addr)
					defer c.close()
					if err := c.get(ctx, keys[0]); err != nil {
						b.Fatal(err)
					}
					b.Run("get-seq", func(b *testing.B) { benchSeq(b, func(i int) error { return c.get(ctx, keys[i%benchKeys]) }) })
					b.Run("set-seq", func(b *testing.B) { benchSeq(b, func(i int) error { return c.set(ctx, keys[i%benchKeys], val) }) })
					b.Run("get-par64", func(b *testing.B) { benchPar(b, func(i int) error { return c.get(ctx, keys[i%benchKeys]) }) })
					b.Run("set-par64", func(b *testing.B) { benchPar(b, func(i int) error { return c.set(ctx, keys[i%benchKeys], val) }) })
					b.Run("pipe100", func(b *testing.B) {
						benchSeq(b, func(i int) error {
							off := (i * 100) % (benchKeys - 100)
							return c.pipe(ctx, keys[off:off+100])
						})
					})
				})
			}
		})
	}
}

func benchSeq(b *testing.B, op func(i int) error) {
	lat := new(latencies)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := op(i); err != nil {
			b.Fatal(err)
		}
		lat.add(time.Since(start))
	}
	b.StopTimer()
	report(b, lat.samples())
}

func benchPar(b *testing.B, op func(i int) error) {
	const goroutines = 64
	b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	var mu sync.Mutex
	var all []time.Duration
	var id sync.Mutex
	next := 0
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id.Lock()
		i := next * 7919
		next++
		id.Unlock()
		lat := new(latencies)
		for pb.Next() {
			start := time.Now()
			if err := op(i); err != nil {
				b.Error(err)
				return
			}
			lat.add(time.Since(start))
			i++
		}
		mu.Lock()
		all = append(all, lat.samples()...)
		mu.Unlock()
	})
	b.StopTimer()
	report(b, all)
}
