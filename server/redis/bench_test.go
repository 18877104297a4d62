package redis

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade"
)

// BenchmarkPipeline measures SET, GET and INCR through a TCP connection,
// 16 commands per round trip.
func BenchmarkPipeline(b *testing.B) { benchPipeline(b, 16) }

// BenchmarkRoundTrip measures SET, GET and INCR through a TCP connection,
// one command per round trip.
func BenchmarkRoundTrip(b *testing.B) { benchPipeline(b, 1) }

func benchPipeline(b *testing.B, depth int) {
	for _, name := range []string{"SET", "GET", "INCR"} {
		b.Run(name, func(b *testing.B) {
			db, err := caskade.Open(b.TempDir(), &caskade.Options{Sync: caskade.SyncNone})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			srv := &Server{DB: db}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go srv.Serve(l)
			defer srv.Close()
			nc, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			const value = "value-value-value"
			var req, reply strings.Builder
			for i := range depth {
				key := fmt.Sprintf("key:%d", i)
				db.Set([]byte(key), []byte(value))
				switch name {
				case "SET":
					req.WriteString(cmd("SET", key, value))
					reply.WriteString("+OK\r\n")
				case "INCR":
					key = fmt.Sprintf("n:%d", i)
					db.Set([]byte(key), []byte("1000000000"))
					req.WriteString(cmd("INCR", key))
					reply.WriteString(":1000000000\r\n")
				default:
					req.WriteString(cmd("GET", key))
					reply.WriteString(fmt.Sprintf("$%d\r\n%s\r\n", len(value), value))
				}
			}
			br := bufio.NewReader(nc)
			buf := make([]byte, reply.Len())
			b.ResetTimer()
			for i := 0; i < b.N; i += depth {
				nc.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.WriteString(nc, req.String()); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(br, buf); err != nil {
					b.Fatal(err)
				}
			}
			if name != "INCR" && string(buf) != reply.String() {
				b.Fatalf("reply %q", buf)
			}
		})
	}
}
