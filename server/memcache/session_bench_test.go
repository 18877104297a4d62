package memcache

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/caskade/caskade/server/metrics"
)

// benchSession measures the server's own work for one command, without
// the network: a session reads commands from memory and its replies are
// dropped. The load generator (BenchmarkLoad*) measures the rest.
func benchSession(b *testing.B, line func(k string) string) {
	db := openDB(b)
	defer db.Close()
	s := &Server{DB: db, Metrics: metrics.New(db)}
	s.init()
	value := []byte("0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789")
	const keys = 10000
	for i := range keys {
		if err := db.Set(fmt.Appendf(nil, "loadgen:%08d", i), value); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	var input []byte
	for range 4096 {
		input = append(input, line(fmt.Sprintf("loadgen:%08d", r.IntN(keys)))...)
	}
	var ss session
	ss.init(s, newReader(nil, 0), false)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		ss.r.reset(input)
		for ; i < b.N; i++ {
			err := ss.step()
			ss.out = ss.out[:0]
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSessionGet is one text get of a 100-byte value.
func BenchmarkSessionGet(b *testing.B) {
	benchSession(b, func(k string) string { return "get " + k + "\r\n" })
}

// BenchmarkSessionSet is one text set of a 100-byte value.
func BenchmarkSessionSet(b *testing.B) {
	v := "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
	benchSession(b, func(k string) string { return fmt.Sprintf("set %s 0 0 %d\r\n%s\r\n", k, len(v), v) })
}

// BenchmarkSessionMetaGet is one mg with the flags a cache client asks
// for.
func BenchmarkSessionMetaGet(b *testing.B) {
	benchSession(b, func(k string) string { return "mg " + k + " v f t c\r\n" })
}
