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

// BenchmarkPipeline measures SET and GET through a TCP connection, 16
// commands per round trip.
func BenchmarkPipeline(b *testing.B) {
	for _, name := range []string{"SET", "GET"} {
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
			for i := range 16 {
				key := fmt.Sprintf("key:%d", i)
				db.Set([]byte(key), []byte(value))
				if name == "SET" {
					req.WriteString(cmd("SET", key, value))
					reply.WriteString("+OK\r\n")
				} else {
					req.WriteString(cmd("GET", key))
					reply.WriteString(fmt.Sprintf("$%d\r\n%s\r\n", len(value), value))
				}
			}
			br := bufio.NewReader(nc)
			buf := make([]byte, reply.Len())
			b.ResetTimer()
			for i := 0; i < b.N; i += 16 {
				nc.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.WriteString(nc, req.String()); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(br, buf); err != nil {
					b.Fatal(err)
				}
			}
			if string(buf) != reply.String() {
				b.Fatalf("reply %q", buf)
			}
		})
	}
}
