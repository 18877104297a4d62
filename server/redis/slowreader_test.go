package redis

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestSlowReaderNotCut sends a reply much bigger than can be written
// within the write timeout to a client that reads it slowly but steadily
// (the pauses make the client slow; they synchronise nothing): Redis cuts
// no normal client for being slow, so the reply must arrive whole. A
// client that reads nothing must still be dropped, which frees its
// connection and the replies it holds.
func TestSlowReaderNotCut(t *testing.T) {
	const wt = 500 * time.Millisecond
	ts := startServer(t, func(s *Server) { s.writeTimeout = wt })
	val := strings.Repeat("v", 2<<20)
	ts.dial().do(cmd("SET", "big", val), "+OK\r\n")

	srvEnd, cliEnd := net.Pipe()
	defer cliEnd.Close()
	served := make(chan error, 1)
	go func() { served <- ts.srv.ServeConn(srvEnd) }()
	if _, err := cliEnd.Write([]byte(cmd("GET", "big"))); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(cliEnd, 16)
	head, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("$%d\r\n", len(val)); head != want {
		t.Fatalf("reply header %q, want %q", head, want)
	}
	start := time.Now()
	buf := make([]byte, 32<<10)
	got := 0
	for got < len(val)+2 {
		time.Sleep(10 * time.Millisecond)
		n, err := io.ReadFull(br, buf[:min(len(buf), len(val)+2-got)])
		got += n
		if err != nil {
			t.Fatalf("after %d bytes in %v: %v", got, time.Since(start), err)
		}
	}
	if time.Since(start) < wt {
		t.Fatalf("the reply took %v, not longer than the write timeout %v: the test proves nothing", time.Since(start), wt)
	}

	// A client that does not read.
	if _, err := cliEnd.Write([]byte(cmd("GET", "big"))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-served:
	case <-time.After(20 * wt):
		t.Fatal("a client that reads nothing was not dropped")
	}
}
