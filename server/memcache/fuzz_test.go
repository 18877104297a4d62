package memcache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/caskade/caskade"
)

// sentinel lives in the reserved 0xff key space, which no memcached
// command can reach: after any input it must be unchanged and alone there.
var (
	sentinelKey   = []byte("\xff\x00sentinel")
	sentinelValue = []byte("untouched")
)

func fuzzServer(f *testing.F) *Server {
	db := openDB(f)
	if err := db.Set(sentinelKey, sentinelValue); err != nil {
		f.Fatal(err)
	}
	s := &Server{DB: db, MaxItemSize: 4096}
	s.init()
	f.Cleanup(func() { db.Close() })
	return s
}

// checkDB verifies the database is usable and the reserved space intact.
func checkDB(t *testing.T, db *caskade.DB) {
	t.Helper()
	v, err := db.Get(sentinelKey)
	if err != nil || !bytes.Equal(v, sentinelValue) {
		t.Fatalf("sentinel: %q %v", v, err)
	}
	kvs, err := db.Range([]byte{0xff}, nil, &caskade.RangeOptions{KeysOnly: true})
	if err != nil || len(kvs) != 1 {
		t.Fatalf("reserved key space holds %d keys (%v)", len(kvs), err)
	}
	if err := db.Set([]byte("fuzz-probe"), []byte("ok")); err != nil {
		t.Fatalf("db unusable: %v", err)
	}
}

var fuzzSeeds = []string{
	"set a 0 0 1\r\nx\r\nget a\r\n",
	"gets a b c\r\ncas a 0 0 1 1\r\ny\r\n",
	"add a 1 2 3 noreply\r\nabc\r\nappend a 0 0 1\r\nz\r\nprepend a 0 0 1\r\nz\r\n",
	"incr a 1\r\ndecr a 18446744073709551615\r\ntouch a -1\r\ngat 10 a\r\ngats 0 a\r\n",
	"delete a\r\nflush_all 0\r\nflush_all 100 noreply\r\nstats\r\nstats settings\r\nversion\r\nverbosity 1\r\n",
	"mg a v c f k t s h l O123 q\r\nms a 2 T10 F5 c k s\r\nhi\r\nmd a q\r\nma a N0 J5 D3 MD v\r\nmn\r\nme a\r\n",
	"ms YWJj 3 b MA N10\r\nxyz\r\nmg YWJj b k v\r\nmd YWJj b I T5\r\nmg YWJj b v R30 N5\r\n",
	"set a 0 0 3\r\nabcde\r\nset b 0 0 -1\r\nset c 0 0 99999999\r\n",
	"get ?type=cursor&prefix=a&limit=3\r\ngets ?type=cursor&start=%00\r\n",
	"\r\n \n\nxx\r\nGET / HTTP/1.1\r\n",
	"quit\r\nget a\r\n",
}

// FuzzMemcacheParser feeds arbitrary bytes to a session as one client's
// stream (read in small pieces), once as a datagram session reads it and
// once as a TCP connection does (which defers pipelined sets): the server
// must not panic, the replies are well-formed lines, and the database
// stays usable with its reserved key space untouched.
func FuzzMemcacheParser(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte("set a 0 0 1 noreply\r\nx\r\nms b 1 q\r\ny\r\nset c 0 0 zz\r\nset d 0 0 1\r\nz\r\nmg a v\r\nmn\r\n"))
	f.Add([]byte("set auth 0 0 20000\r\nset auth 0 0 +5\r\nu pw\r\nget a\r\n"))
	s := fuzzServer(f)
	run := func(in []byte, tcp bool) []byte {
		var ss session
		ss.init(s, newReader(iotest.HalfReader(bytes.NewReader(in)), 64), false)
		var sent []byte
		if tcp {
			ss.flush = func() error {
				ss.commitPending()
				sent = append(sent, ss.out...)
				ss.out = ss.out[:0]
				return nil
			}
			ss.r.before = func(bool) error { return ss.flush() }
		}
		for range 10000 {
			if ss.step() != nil {
				break
			}
			if tcp && ss.r.buffered() == 0 {
				ss.flush()
			}
			if len(ss.out) > 1<<20 {
				ss.out = ss.out[:0]
			}
			if len(sent) > 1<<20 {
				sent = sent[:0]
			}
		}
		if tcp {
			ss.flush()
		}
		return append(sent, ss.out...)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, tcp := range []bool{false, true} {
			out := run(in, tcp)
			if len(out) > 0 && !bytes.HasSuffix(out, []byte("\r\n")) {
				t.Fatalf("tcp %v: reply does not end in CRLF: %q", tcp, out)
			}
		}
		checkDB(t, s.DB)
		if len(in) <= 512 {
			checkCommandReady(t, s, in, true)
			checkCommandReady(t, s, in, false)
		}
	})
}

// errWaited is what the input of checkCommandReady returns past the bytes
// it has.
var errWaited = errors.New("the session waited for more input")

// checkCommandReady checks conn.commandReady, which decides when an event
// loop runs a command, against session.step on every prefix of in: where
// it finds a command ready, running it must not ask for more input; where
// it does not, running it must. authed false starts the connection
// unauthenticated.
func checkCommandReady(t *testing.T, s *Server, in []byte, authed bool) {
	for n := range len(in) + 1 {
		c := &conn{s: s}
		c.sess.init(s, newReader(io.MultiReader(bytes.NewReader(in[:n]), iotest.ErrReader(errWaited)), max(n, 16)), false)
		c.sess.authed = authed
		if n > 0 {
			c.sess.r.fill(n, false)
		}
		for range 1000 {
			_, need := c.commandReady()
			err := c.sess.step()
			if need == 0 && errors.Is(err, errWaited) {
				t.Fatalf("%q: commandReady found a command ready, and the session waited for more input", in[:n])
			}
			if need > 0 && !errors.Is(err, errWaited) {
				t.Fatalf("%q: commandReady wants %d bytes, and the session read a command without them (%v)", in[:n], need, err)
			}
			if err != nil {
				break
			}
		}
	}
}

// FuzzUDPFrame feeds arbitrary datagrams to a UDP worker: no panic, and
// every reply datagram carries the request id, a sequence number below the
// total, the same total, and at most MaxUDPPayload bytes.
func FuzzUDPFrame(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(frame(7, 0, 1, 0, s))
	}
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0, 0, 0, 2, 0, 0, 'x'})
	f.Add(frame(1, 0, 1, 0, "set big 0 0 3000\r\n"+string(bytes.Repeat([]byte("b"), 3000))+"\r\nget big big\r\n"))
	s := fuzzServer(f)
	w := &udpWorker{s: s}
	w.sess.init(s, &reader{}, true)
	f.Fuzz(func(t *testing.T, d []byte) {
		replies := w.handle(bytes.Clone(d))
		if len(replies) == 0 {
			return
		}
		_, _, ok := decodeUDPFrame(d)
		if !ok {
			t.Fatalf("replied to a malformed datagram %q", d)
		}
		id := binary.BigEndian.Uint16(d)
		// Messages follow one another, each numbered 0..total-1.
		seq, total := 0, 0
		for i, r := range replies {
			if len(r) > MaxUDPPayload || len(r) <= udpHeaderLen {
				t.Fatalf("datagram %d has %d bytes", i, len(r))
			}
			fr, _, _ := decodeFrameAny(r)
			if seq == 0 {
				total = int(fr.total)
			}
			if fr.requestID != id || int(fr.sequence) != seq || int(fr.total) != total || total == 0 || fr.reserved != 0 {
				t.Fatalf("datagram %d header %+v (expected seq %d of %d, id %d)", i, fr, seq, total, id)
			}
			if seq++; seq == total {
				seq = 0
			}
		}
		if seq != 0 {
			t.Fatalf("last message incomplete: %d of %d datagrams", seq, total)
		}
		checkDB(t, s.DB)
	})
}
