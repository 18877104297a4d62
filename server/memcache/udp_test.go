package memcache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade/server/access"
)

// udpClient sends framed requests and reassembles framed replies.
type udpClient struct {
	t *testing.T
	c net.Conn
}

func (ts *testServer) dialUDP(t *testing.T) *udpClient {
	t.Helper()
	c, err := net.Dial("udp", ts.udp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &udpClient{t: t, c: c}
}

func frame(id, seq, total, reserved uint16, payload string) []byte {
	b := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(b[0:], id)
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint16(b[4:], total)
	binary.BigEndian.PutUint16(b[6:], reserved)
	return append(b, payload...)
}

func (u *udpClient) sendRaw(d []byte) {
	u.t.Helper()
	if _, err := u.c.Write(d); err != nil {
		u.t.Fatal(err)
	}
}

// reply reads the datagrams of the reply to request id, checks their
// headers, and returns the reassembled reply and the datagram count.
func (u *udpClient) reply(id uint16) (string, int) {
	u.t.Helper()
	parts := map[uint16][]byte{}
	total := -1
	buf := make([]byte, 65536)
	for total < 0 || len(parts) < total {
		u.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := u.c.Read(buf)
		if err != nil {
			u.t.Fatalf("reading reply %d (%d of %d parts): %v", id, len(parts), total, err)
		}
		d := buf[:n]
		if n > MaxUDPPayload || n < 8 {
			u.t.Fatalf("datagram of %d bytes", n)
		}
		if got := binary.BigEndian.Uint16(d[0:]); got != id {
			u.t.Fatalf("reply for request %d, want %d", got, id)
		}
		seq, tot := binary.BigEndian.Uint16(d[2:]), int(binary.BigEndian.Uint16(d[4:]))
		if binary.BigEndian.Uint16(d[6:]) != 0 {
			u.t.Fatal("reserved field not zero")
		}
		if total >= 0 && tot != total || tot == 0 || int(seq) >= tot {
			u.t.Fatalf("bad header seq %d total %d (earlier total %d)", seq, tot, total)
		}
		total = tot
		if _, dup := parts[seq]; dup {
			u.t.Fatalf("duplicate sequence %d", seq)
		}
		if int(seq) < tot-1 && n != MaxUDPPayload {
			u.t.Fatalf("non-final datagram %d has %d bytes", seq, n)
		}
		parts[seq] = bytes.Clone(d[8:])
	}
	var all []byte
	for i := range total {
		all = append(all, parts[uint16(i)]...)
	}
	return string(all), total
}

// do sends a request and checks its replies, one message each (memcached
// sends each reply, and each item of a multi-get, as its own message). It
// returns the datagram count of the last.
func (u *udpClient) do(id uint16, req string, wants ...string) int {
	u.t.Helper()
	u.sendRaw(frame(id, 0, 1, 0, req))
	n := 0
	for i, want := range wants {
		var got string
		got, n = u.reply(id)
		if got != want {
			u.t.Fatalf("udp %q, message %d:\n got %q\nwant %q", req, i, got, want)
		}
	}
	return n
}

func TestUDP(t *testing.T) {
	// One worker, so that datagrams are handled in the order sent and the
	// drop counter is exact when the last reply arrives.
	ts := startServerUDP(t, func(s *Server) { s.UDPWorkers = 1 })
	u := ts.dialUDP(t)
	u.do(1, "set a 5 0 3\r\nabc\r\n", "STORED\r\n")
	u.do(2, "get a\r\n", "VALUE a 5 3\r\nabc\r\nEND\r\n")
	u.do(3, "set b 0 0 1\r\nx\r\nget a b\r\nmn\r\n", "STORED\r\n", "VALUE a 5 3\r\nabc\r\n", "VALUE b 0 1\r\nx\r\nEND\r\n", "MN\r\n")
	u.do(6, "get a nope\r\nbogus\r\n", "VALUE a 5 3\r\nabc\r\n", "END\r\n", "ERROR\r\n")
	u.do(0xffff, "mg a v\r\n", "VA 3\r\nabc\r\n")

	// A value larger than one datagram comes back in several.
	big := strings.Repeat("0123456789", 500)
	u.do(4, fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", len(big), big), "STORED\r\n")
	want := fmt.Sprintf("VALUE big 0 %d\r\n%s\r\nEND\r\n", len(big), big)
	if n := u.do(5, "get big\r\n", want); n != (len(want)+MaxUDPPayload-9)/(MaxUDPPayload-8) {
		t.Fatalf("reply of %d bytes came in %d datagrams", len(want), n)
	}

	// The same data is visible over TCP.
	c := ts.dial(t)
	c.do("get b\r\n", "VALUE b 0 1\r\nx\r\nEND\r\n")

	// Frame errors: the datagram is dropped, no reply is sent, and the
	// next good request is answered with its own id.
	for _, bad := range [][]byte{
		frame(10, 0, 2, 0, "get a\r\n"), // claims two datagrams
		frame(11, 0, 0, 0, "get a\r\n"), // claims none
		frame(12, 0, 1, 0, ""),          // header only
		{0, 13, 0},                      // shorter than a header
		{},
	} {
		u.sendRaw(bad)
	}
	u.do(14, "version\r\n", "VERSION "+MemcachedVersion+"\r\n")
	// Sequence and reserved fields of a request are not checked (as in
	// memcached).
	u.sendRaw(frame(15, 7, 1, 9, "get b\r\n"))
	if got, _ := u.reply(15); got != "VALUE b 0 1\r\nx\r\nEND\r\n" {
		t.Fatalf("got %q", got)
	}
	// noreply sends nothing; an incomplete command is dropped.
	u.sendRaw(frame(16, 0, 1, 0, "set q 0 0 1 noreply\r\nq\r\n"))
	u.sendRaw(frame(17, 0, 1, 0, "set r 0 0 10\r\nshort"))
	u.do(18, "get q r\r\n", "VALUE q 0 1\r\nq\r\n", "END\r\n")

	st := stats(t, c, "")
	if st["udp_dropped"] != "5" {
		t.Fatalf("udp_dropped = %s", st["udp_dropped"])
	}
	if set := stats(t, c, "settings"); set["udpport"] == "0" {
		t.Fatal("udpport not reported")
	}
}

func TestUDPRefusedWithPassword(t *testing.T) {
	db := openDB(t)
	t.Cleanup(func() { db.Close() })
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{DB: db, Password: "x"}
	if err := s.ServeUDP(pc); err != ErrUDPWithPassword {
		t.Fatalf("ServeUDP = %v", err)
	}
}

func TestEncodeUDPReply(t *testing.T) {
	for _, n := range []int{0, 1, udpDataLen - 1, udpDataLen, udpDataLen + 1, 3*udpDataLen + 5} {
		reply := bytes.Repeat([]byte{'x'}, n)
		ds := encodeUDPReply(42, reply)
		want := (n + udpDataLen - 1) / udpDataLen
		if len(ds) != want {
			t.Fatalf("%d bytes: %d datagrams, want %d", n, len(ds), want)
		}
		var got []byte
		for i, d := range ds {
			f, p, ok := decodeFrameAny(d)
			if !ok || f.requestID != 42 || int(f.sequence) != i || int(f.total) != want || len(d) > MaxUDPPayload {
				t.Fatalf("%d bytes: datagram %d header %+v len %d", n, i, f, len(d))
			}
			got = append(got, p...)
		}
		if !bytes.Equal(got, reply) {
			t.Fatalf("%d bytes: reassembly differs", n)
		}
	}
}

// decodeFrameAny decodes a reply datagram header (any total).
func decodeFrameAny(d []byte) (udpFrame, []byte, bool) {
	if len(d) < udpHeaderLen {
		return udpFrame{}, nil, false
	}
	return udpFrame{
		requestID: binary.BigEndian.Uint16(d[0:]),
		sequence:  binary.BigEndian.Uint16(d[2:]),
		total:     binary.BigEndian.Uint16(d[4:]),
		reserved:  binary.BigEndian.Uint16(d[6:]),
	}, d[udpHeaderLen:], true
}

func TestUDPReplyLimit(t *testing.T) {
	ts := startServerUDP(t, func(s *Server) { s.UDPWorkers = 1 })
	big := strings.Repeat("b", DefaultMaxItemSize)
	c := ts.dial(t)
	c.do(fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", len(big), big), "STORED\r\n")
	u := ts.dialUDP(t)
	keys := strings.TrimSpace(strings.Repeat("big ", maxUDPReply/DefaultMaxItemSize+1))
	u.do(1, "get "+keys+"\r\nmn\r\n", errReplyTooLarge+"\r\n", "MN\r\n")
}

// A password set while UDP is served, through Access shared with another
// front end (Redis's CONFIG SET requirepass), stops UDP, which cannot
// authenticate: its datagrams are dropped until the password is removed.
// The TCP listener asks new connections for it.
func TestUDPStopsWhileSharedPasswordSet(t *testing.T) {
	acc := access.New("", true)
	ts := startServerUDP(t, func(s *Server) { s.UDPWorkers = 1; s.Access = acc })
	u := ts.dialUDP(t)
	u.do(1, "version\r\n", "VERSION "+MemcachedVersion+"\r\n")
	acc.SetPassword("pw")
	c := ts.dial(t)
	c.send("get a\r\n")
	if l := c.line(); l != "CLIENT_ERROR unauthenticated\r\n" {
		t.Fatalf("TCP without authenticating after the password was set: %q", l)
	}
	c.send("set x 0 0 4\r\nu pw\r\n")
	if l := c.line(); l != "STORED\r\n" {
		t.Fatalf("TCP authentication: %q", l)
	}
	u.sendRaw(frame(2, 0, 1, 0, "version\r\n"))
	waitFor(t, "the datagram to be dropped", func() bool { return stats(t, c, "")["udp_dropped"] == "1" })
	acc.SetPassword("")
	u.do(3, "version\r\n", "VERSION "+MemcachedVersion+"\r\n")
}
