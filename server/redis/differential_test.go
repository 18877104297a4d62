package redis

// A differential test: the same random command sequences go to caskade and
// to a real redis-server, and every reply must be the same bytes, after
// normalising only what legitimately differs (remaining TTLs, the order of
// KEYS, which key RANDOMKEY picks). It runs where redis-server is installed
// (CI installs it) and skips elsewhere.
//
//	go test -run TestDifferential ./server/redis -differential.seed N -differential.steps 20000

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade/internal/realserver"
)

var (
	diffSeed  = flag.Uint64("differential.seed", 0, "seed of TestDifferentialAgainstRedis (0: from the clock)")
	diffSteps = flag.Int("differential.steps", 4000, "commands per protocol version in TestDifferentialAgainstRedis")
	diffTrace = flag.Bool("differential.trace", false, "log every command of TestDifferentialAgainstRedis with both replies")
)

// startRedis starts redis-server without persistence and returns its
// socket.
func startRedis(t *testing.T) string {
	return realserver.Start(t, "redis-server", "--port", "0", "--unixsocket", "{sock}", "--dir", "{dir}",
		"--save", "", "--appendonly", "no", "--daemonize", "no")
}

// diffSetup starts the two servers of a differential test and returns
// Redis's socket, caskade's server and the test's seed.
func diffSetup(t *testing.T) (string, *testServer, uint64) {
	sock := startRedis(t)
	ts := startServer(t, nil)
	seed := *diffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -differential.seed %d)", seed, seed)
	return sock, ts, seed
}

// diffConn is one raw connection of the differential test.
type diffConn struct {
	nc net.Conn
	br *bufio.Reader
}

func dialDiff(t *testing.T, network, addr string) *diffConn {
	t.Helper()
	nc, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &diffConn{nc: nc, br: bufio.NewReader(nc)}
}

// roundTrip sends args as one command and returns the raw bytes of its
// reply.
func (c *diffConn) roundTrip(args []string) ([]byte, error) {
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.nc, cmd(args...)); err != nil {
		return nil, err
	}
	return readRawReply(c.br, nil)
}

// readRawReply appends the bytes of one RESP2 or RESP3 reply to dst.
func readRawReply(br *bufio.Reader, dst []byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return dst, err
	}
	dst = append(dst, line...)
	if len(line) < 3 {
		return dst, fmt.Errorf("short reply line %q", line)
	}
	n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
	switch line[0] {
	case '$', '=', '!': // bulk, verbatim and bulk error: n bytes and CRLF
		if n < 0 {
			return dst, nil
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(br, body); err != nil {
			return dst, err
		}
		return append(dst, body...), nil
	case '*', '~', '>': // array, set, push: n replies
		for range max(n, 0) {
			if dst, err = readRawReply(br, dst); err != nil {
				return dst, err
			}
		}
	case '%', '|': // map, attribute: n pairs
		for range 2 * max(n, 0) {
			if dst, err = readRawReply(br, dst); err != nil {
				return dst, err
			}
		}
		if line[0] == '|' { // an attribute precedes the reply it annotates
			return readRawReply(br, dst)
		}
	}
	return dst, nil
}

// splitReplies splits the raw bytes of an aggregate reply into its header
// and its elements' raw bytes.
func splitReplies(raw []byte) (head []byte, elems [][]byte) {
	br := bufio.NewReader(bytes.NewReader(raw))
	line, _ := br.ReadSlice('\n')
	head = slices.Clone(line)
	for {
		e, err := readRawReply(br, nil)
		if err != nil {
			return head, elems
		}
		elems = append(elems, e)
	}
}

// normalize replaces what may differ between two correct servers in the
// reply raw to args; queued are the commands an EXEC runs, whose replies
// are normalised one by one.
func normalize(args []string, raw []byte, queued [][]string) []byte {
	switch strings.ToUpper(args[0]) {
	case "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME":
		// Time moves between the two servers' replies; what must agree is
		// whether there is a key and whether it has an expiry.
		if len(raw) > 1 && raw[0] == ':' && raw[1] != '-' {
			return []byte(":<positive>\r\n")
		}
	case "KEYS": // in key order from caskade, in hash order from Redis
		head, elems := splitReplies(raw)
		slices.SortFunc(elems, bytes.Compare)
		return slices.Concat(append([][]byte{head}, elems...)...)
	case "RANDOMKEY":
		if raw[0] == '$' && !bytes.Equal(raw, []byte("$-1\r\n")) {
			return []byte("$<some key>\r\n")
		}
	case "EXEC":
		head, elems := splitReplies(raw)
		if raw[0] != '*' || len(elems) != len(queued) {
			return raw
		}
		for i := range elems {
			elems[i] = normalize(queued[i], elems[i], nil)
		}
		return slices.Concat(append([][]byte{head}, elems...)...)
	}
	return raw
}

// diffGen generates random commands over a few keys and awkward values.
type diffGen struct {
	r     *rand.Rand
	multi bool // a MULTI is open
}

var (
	diffKeys   = []string{"k0", "k1", "k2", "k3", "num", "f", "k 4\r\n", "\x00z"}
	diffValues = []string{"", "v", "hello world", "0", "1", "-1", "10", "007", "+5", " 1", "1 ",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808",
		"1.5", "-0.25", "3.0", "1e3", "0x10", "inf", "-inf", "nan", "1.7976931348623157e308", "abc"}
	diffInts = []string{"0", "1", "-1", "2", "10", "100", "-100", "9223372036854775807",
		"-9223372036854775808", "9223372036854775808", "1.5", "x", "", " 1", "+1", "007"}
	diffFloats = []string{"0", "1", "-1", "0.1", "-0.2", "1e2", "2.5e-3", "inf", "-inf", "nan", "x",
		"1.7976931348623157e308", "5.0e3", "", "00.5", ".5", "5."}
	diffOffsets = []string{"0", "1", "2", "5", "-1", "-3", "20", "x", "536870912"}
	// GETRANGE's end stays at -1 or above: Redis before 8.0 returned the
	// first byte for an end before the start of the string, which caskade,
	// as Redis 8, does not (redis/redis#13207).
	diffEnds = []string{"0", "1", "2", "5", "-1", "20", "x"}
	// Relative expiry times stay far from the test's duration so that no
	// key expires in between the two servers' replies; 0, negative and
	// past absolute times make both delete the key at once.
	diffSeconds  = []string{"100", "1000", "0", "-1", "x", "9223372036854775807", "1.5", "4611686018427387"}
	diffMillis   = []string{"100000", "2000000", "0", "-5", "x", "9223372036854775807"}
	diffUnixSecs = []string{"1", "4102444800", "0", "-1", "x"} // the first in the past
	diffUnixMs   = []string{"1", "4102444800000", "0", "x"}
)

func (g *diffGen) pick(s []string) string { return s[g.r.IntN(len(s))] }
func (g *diffGen) key() string            { return g.pick(diffKeys) }
func (g *diffGen) value() string          { return g.pick(diffValues) }

// maybe appends an option with probability 1/3.
func (g *diffGen) maybe(args []string, opt ...string) []string {
	if g.r.IntN(3) == 0 {
		return append(args, opt...)
	}
	return args
}

// expiryOpt returns a random SET/GETEX expiry option. With past allowed,
// absolute times may be in the past; SET is never given one, because
// Redis then stores a key that is already expired, which DBSIZE counts
// until active expiry drops it at a moment of its own.
func (g *diffGen) expiryOpt(past bool) []string {
	secs, ms := diffUnixSecs, diffUnixMs
	if !past {
		secs, ms = secs[1:], ms[1:]
	}
	switch g.r.IntN(4) {
	case 0:
		return []string{"EX", g.pick(diffSeconds)}
	case 1:
		return []string{"PX", g.pick(diffMillis)}
	case 2:
		return []string{"EXAT", g.pick(secs)}
	default:
		return []string{"PXAT", g.pick(ms)}
	}
}

func (g *diffGen) next() []string {
	k := g.key()
	var a []string
	switch g.r.IntN(47) {
	case 0, 1, 2:
		a = []string{"SET", k, g.value()}
		for range g.r.IntN(3) {
			switch g.r.IntN(5) {
			case 0:
				a = append(a, g.expiryOpt(false)...)
			case 1:
				a = append(a, g.pick([]string{"NX", "XX"}))
			case 2:
				a = append(a, "GET")
			case 3:
				a = append(a, "KEEPTTL")
			default:
				a = append(a, g.pick([]string{"ex", "px", "nx", "get", "BOGUS"}))
			}
		}
	case 3, 4:
		a = []string{"GET", k}
	case 5:
		a = []string{"SETNX", k, g.value()}
	case 6:
		a = []string{"SETEX", k, g.pick(diffSeconds), g.value()}
	case 7:
		a = []string{"PSETEX", k, g.pick(diffMillis), g.value()}
	case 8:
		a = []string{"MGET", k, g.key(), g.key()}
	case 9:
		a = []string{"MSET", k, g.value(), g.key(), g.value()}
	case 10:
		a = []string{"MSETNX", k, g.value(), g.key(), g.value()}
	case 11:
		a = []string{"GETSET", k, g.value()}
	case 12:
		a = []string{"GETDEL", k}
	case 13:
		a = []string{"GETEX", k}
		switch g.r.IntN(3) {
		case 0:
			a = append(a, g.expiryOpt(true)...)
		case 1:
			a = append(a, "PERSIST")
		}
	case 14:
		a = []string{"APPEND", k, g.value()}
	case 15:
		a = []string{"STRLEN", k}
	case 16:
		a = []string{"GETRANGE", k, g.pick(diffOffsets), g.pick(diffEnds)}
	case 17:
		a = []string{"SETRANGE", k, g.pick(diffOffsets), g.pick([]string{"", "x", "abc"})}
	case 18, 19:
		a = []string{g.pick([]string{"INCR", "DECR"}), k}
	case 20, 21:
		a = []string{g.pick([]string{"INCRBY", "DECRBY"}), k, g.pick(diffInts)}
	case 22, 23:
		a = []string{"INCRBYFLOAT", k, g.pick(diffFloats)}
	case 24:
		a = []string{g.pick([]string{"DEL", "UNLINK", "EXISTS", "TOUCH"}), k, g.key()}
	case 25:
		a = []string{g.pick([]string{"EXPIRE", "PEXPIRE"}), k, g.pick(diffSeconds)}
		a = g.maybe(a, g.pick([]string{"NX", "XX", "GT", "LT", "nx", "FOO"}))
	case 26:
		a = []string{"EXPIREAT", k, g.pick(diffUnixSecs)}
		a = g.maybe(a, g.pick([]string{"NX", "XX", "GT", "LT"}))
	case 27:
		a = []string{"PEXPIREAT", k, g.pick(diffUnixMs)}
		a = g.maybe(a, g.pick([]string{"NX", "XX", "GT", "LT"}))
	case 28:
		a = []string{g.pick([]string{"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "PERSIST", "TYPE"}), k}
	case 29:
		a = []string{g.pick([]string{"RENAME", "RENAMENX"}), k, g.key()}
	case 30:
		a = []string{"COPY", k, g.key()}
		a = g.maybe(a, "REPLACE")
		a = g.maybe(a, "DB", g.pick([]string{"0", "1", "16", "x"}))
	case 31:
		a = []string{"MOVE", k, g.pick([]string{"0", "1", "2", "-1", "x"})}
	case 32:
		a = []string{"SELECT", g.pick([]string{"0", "0", "1", "2", "16", "x"})}
	case 33:
		a = []string{g.pick([]string{"DBSIZE", "RANDOMKEY"})}
	case 34:
		a = []string{"KEYS", g.pick([]string{"*", "k*", "k[0-1]", "?", "*u*", "[^k]*", "k\\1"})}
	case 35:
		a = []string{"SWAPDB", g.pick([]string{"0", "1", "2"}), g.pick([]string{"0", "1", "x"})}
	case 36:
		if g.r.IntN(8) == 0 {
			a = []string{g.pick([]string{"FLUSHDB", "FLUSHALL"})}
		} else {
			a = []string{"EXISTS", k}
		}
	case 37:
		// OBJECT ENCODING and REFCOUNT are left out: Redis's depend on how
		// a value was made (APPEND makes "raw", COPY unshares integers),
		// caskade's only on the value (see doc.go).
		a = []string{"OBJECT", "FREQ", k}
	case 38:
		if g.multi {
			a = []string{g.pick([]string{"EXEC", "EXEC", "DISCARD", "MULTI", "WATCH"}), k}[:1]
		} else {
			a = []string{g.pick([]string{"MULTI", "MULTI", "EXEC", "DISCARD", "UNWATCH"})}
		}
	case 39:
		a = []string{"WATCH", k, g.key()}
	case 40:
		a = []string{g.pick([]string{"ECHO", "PING"}), g.value()}
	case 41:
		// Arity errors: too few arguments, or one too many.
		base := []string{g.pick([]string{"GET", "SET", "INCR", "INCRBY", "GETRANGE", "SETEX", "APPEND", "EXPIRE", "TTL", "RENAME", "STRLEN", "GETDEL"})}
		if g.r.IntN(2) == 0 {
			a = base
		} else {
			a = append(base, k, "1", "2", "3", "4")
		}
	case 42:
		a = []string{"SET", k, g.value(), "EX", g.pick(diffSeconds), "PX", g.pick(diffMillis)}
	case 43:
		a = []string{"SUBSTR", k, g.pick(diffOffsets), g.pick(diffEnds)}
	case 45:
		// Connection commands whose replies do not describe the server.
		cmds := [][]string{
			{"CLIENT", "SETNAME", g.pick([]string{"me", "a b", "", "x\ny"})}, {"CLIENT", "GETNAME"},
			// (Not CLIENT SETINFO or NO-TOUCH: Redis 7.2 added them.)
			{"CLIENT", "NO-EVICT", g.pick([]string{"on", "off", "x"})},
			{"AUTH", "x"}, {"AUTH", "default", "x"}, {"ECHO"}, {"PING", "a", "b"},
			{"SELECT", "1", "2"}, {"DBSIZE", "x"}, {"CLIENT", "CACHING", "YES"}, {"CLIENT", "GETREDIR"},
			{"CLIENT", "TRACKINGINFO"}, {"OBJECT", "FREQ"}, {"OBJECT"}, {"COMMAND", "COUNT", "x"},
		}
		a = cmds[g.r.IntN(len(cmds))]
	case 44:
		// Each with an argument at least: Redis 7.0 required two after
		// GETKEYS, 7.2 one (TestCommandGetkeys).
		cmds := [][]string{
			{"GET", k}, {"SET", k, "v", "EX", "10"}, {"MSET", k, "1", g.key(), "2"}, {"MSET", k},
			{"DEL", k, g.key(), g.key()}, {"COPY", k, g.key(), "DB", "1"}, {"RENAME", k, g.key()},
			{"MGET", k, g.key()}, {"GETEX", k, "PERSIST"}, {"PING", "x"}, {"SET", k}, {"NOPE", k},
			{"EXPIRE", k, "10"}, {"SWAPDB", "0", "1"}, {"WATCH", k, g.key()}, {"KEYS", "*"},
		}
		a = append([]string{"COMMAND", "GETKEYS"}, cmds[g.r.IntN(len(cmds))]...)
	default:
		a = []string{"INCRBYFLOAT", "f", g.pick(diffFloats)}
	}
	switch strings.ToUpper(a[0]) {
	case "MULTI":
		if !g.multi {
			g.multi = true
		}
	case "EXEC", "DISCARD":
		g.multi = false
	}
	return a
}

// expireGTTie reports whether a and b, the two servers' replies to args
// (for EXEC, which ran queued), differ only where an EXPIRE or PEXPIRE
// with GT gave a key the relative expiry it already had: the durations
// come from short lists, and the new expiry is later than the old one only
// if the clock moved by a millisecond in between, which it may have for
// one server and not the other. It then checks that the key's expiry, read
// now, agrees on both servers to within 100 ms: a wrong GT would leave it
// unset on one of them, or as far off as the durations are apart. (A
// later command of the same pipeline or EXEC that changed the key may
// make it report false: the test then fails as it did before.)
func expireGTTie(args []string, a, b []byte, queued [][]string, ours, theirs *diffConn) bool {
	isGT := func(c []string) bool {
		name := strings.ToUpper(c[0])
		return (name == "EXPIRE" || name == "PEXPIRE") && len(c) > 3 &&
			slices.ContainsFunc(c[3:], func(o string) bool { return strings.EqualFold(o, "GT") })
	}
	bit := func(r []byte) bool { return string(r) == ":0\r\n" || string(r) == ":1\r\n" }
	var keys []string
	switch {
	case isGT(args):
		if !bit(a) || !bit(b) {
			return false
		}
		keys = []string{args[1]}
	case strings.EqualFold(args[0], "EXEC"):
		_, ea := splitReplies(a)
		_, eb := splitReplies(b)
		if a[0] != '*' || b[0] != '*' || len(ea) != len(queued) || len(eb) != len(queued) {
			return false
		}
		for i, q := range queued {
			if bytes.Equal(normalize(q, ea[i], nil), normalize(q, eb[i], nil)) {
				continue
			}
			if !isGT(q) || !bit(ea[i]) || !bit(eb[i]) {
				return false
			}
			keys = append(keys, q[1])
		}
	}
	if len(keys) == 0 {
		return false
	}
	for _, k := range keys {
		var at [2]int64
		for i, c := range []*diffConn{ours, theirs} {
			r, err := c.roundTrip([]string{"PEXPIRETIME", k})
			if err != nil || len(r) < 4 || r[0] != ':' {
				return false
			}
			if at[i], err = strconv.ParseInt(string(r[1:len(r)-2]), 10, 64); err != nil || at[i] <= 0 {
				return false
			}
		}
		if d := at[0] - at[1]; d < -100 || d > 100 {
			return false
		}
	}
	return true
}

// dumpKeys describes every key of the generator as both servers hold it
// in the current database (after a failure: in MULTI these are queued).
func dumpKeys(ours, theirs *diffConn) string {
	var b strings.Builder
	for _, k := range diffKeys {
		for _, args := range [][]string{{"GET", k}, {"PTTL", k}} {
			a, _ := ours.roundTrip(args)
			r, _ := theirs.roundTrip(args)
			fmt.Fprintf(&b, "%s %s: %q %q\n  ", args[0], k, a, r)
		}
	}
	return b.String()
}

// TestDifferentialAgainstRedis runs random commands on caskade and on a
// real redis-server, over RESP2 and RESP3, and compares each reply.
func TestDifferentialAgainstRedis(t *testing.T) {
	sock, ts, seed := diffSetup(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			ours := dialDiff(t, "tcp", ts.addr)
			theirs := dialDiff(t, "unix", sock)
			g := &diffGen{r: rand.New(rand.NewPCG(seed, 0xd1ff))}
			var history []string  // the commands since the last FLUSHALL, for the failure message
			var queued [][]string // the commands of an open MULTI
			multi := false
			for step := 0; step < *diffSteps; {
				// One command, or a pipeline of several sent at once (where
				// caskade defers blind writes' commits to the end of a run).
				var batch [][]string
				switch {
				case step == 0:
					batch = [][]string{{"FLUSHALL"}}
				case step == 1:
					batch = [][]string{{"HELLO", proto}}
				case g.r.IntN(4) == 0:
					for range 2 + g.r.IntN(11) {
						batch = append(batch, g.next())
					}
				default:
					batch = [][]string{g.next()}
				}
				var req strings.Builder
				for _, args := range batch {
					req.WriteString(cmd(args...))
				}
				replies := [2][][]byte{}
				for i, c := range []*diffConn{ours, theirs} {
					c.nc.SetDeadline(time.Now().Add(10 * time.Second))
					if _, err := io.WriteString(c.nc, req.String()); err != nil {
						t.Fatal(err)
					}
					for range batch {
						r, err := readRawReply(c.br, nil)
						if err != nil {
							t.Fatalf("step %d %q: %v (seed %d)", step, batch, err, seed)
						}
						replies[i] = append(replies[i], r)
					}
				}
				for j, args := range batch {
					a, b := replies[0][j], replies[1][j]
					history = append(history, strings.Join(args, " "))
					if len(history) > 60 {
						history = history[1:]
					}
					if *diffTrace {
						t.Logf("%d %q: %q %q", step, args, a, b)
					}
					step++
					if args[0] == "HELLO" {
						continue // the server's own description differs, by design
					}
					if na, nb := normalize(args, a, queued), normalize(args, b, queued); !bytes.Equal(na, nb) && !expireGTTie(args, a, b, queued, ours, theirs) {
						t.Fatalf("step %d (seed %d, pipeline of %d): %q\ncaskade: %q\nredis:   %q\nlast commands:\n  %s\nkeys now (caskade, redis):\n  %s",
							step-1, seed, len(batch), args, a, b, strings.Join(history, "\n  "), dumpKeys(ours, theirs))
					}
					switch name := strings.ToUpper(args[0]); {
					case name == "MULTI" && string(b) == "+OK\r\n":
						multi, queued = true, nil
					case multi && (name == "EXEC" || name == "DISCARD"):
						multi, queued = false, nil
					case multi && string(b) == "+QUEUED\r\n":
						queued = append(queued, args)
					}
				}
			}
		})
	}
}

// TestDifferentialGlob compares KEYS (Redis's glob matcher) on random keys
// and random patterns made of the characters the matcher treats specially.
func TestDifferentialGlob(t *testing.T) {
	sock, ts, seed := diffSetup(t)
	r := rand.New(rand.NewPCG(seed, 0x610b))
	ours := dialDiff(t, "tcp", ts.addr)
	theirs := dialDiff(t, "unix", sock)
	const alphabet = `ab-^!*?[]\`
	word := func(max int) string {
		b := make([]byte, r.IntN(max+1))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	do := func(args ...string) ([]byte, []byte) {
		a, errA := ours.roundTrip(args)
		b, errB := theirs.roundTrip(args)
		if err := errors.Join(errA, errB); err != nil {
			t.Fatalf("%q: %v (seed %d)", args, err, seed)
		}
		return a, b
	}
	for round := range *diffSteps / 40 {
		do("FLUSHALL")
		var keys []string
		for range 12 {
			k := word(5)
			if k == "" {
				continue
			}
			keys = append(keys, k)
			do("SET", k, "v")
		}
		for range 40 {
			pat := word(6)
			a, b := do("KEYS", pat)
			if na, nb := normalize([]string{"KEYS"}, a, nil), normalize([]string{"KEYS"}, b, nil); !bytes.Equal(na, nb) {
				t.Fatalf("round %d (seed %d): KEYS %q over %q\ncaskade: %q\nredis:   %q", round, seed, pat, keys, a, b)
			}
		}
	}
}

// pushKeys splits what a RESP3 connection received before a reply into the
// keys invalidated (sorted; "<all>" for a flush) and the rest.
func pushKeys(raw []byte) (keys []string, rest []byte) {
	br := bufio.NewReader(bytes.NewReader(raw))
	for {
		one, err := readRawReply(br, nil)
		if err != nil {
			break
		}
		if !bytes.HasPrefix(one, []byte(">2\r\n$10\r\ninvalidate\r\n")) {
			rest = append(rest, one...)
			continue
		}
		body := one[len(">2\r\n$10\r\ninvalidate\r\n"):]
		if body[0] == '_' || bytes.HasPrefix(body, []byte("*-1")) {
			keys = append(keys, "<all>")
			continue
		}
		_, elems := splitReplies(body)
		for _, e := range elems {
			_, k, _ := bytes.Cut(bytes.TrimSuffix(e, []byte("\r\n")), []byte("\r\n"))
			keys = append(keys, string(k))
		}
	}
	slices.Sort(keys)
	return keys, rest
}

// TestDifferentialTracking compares client-side caching invalidations
// (CLIENT TRACKING over RESP3, in its default, OPTIN, OPTOUT, BCAST and
// NOLOOP forms) between caskade and Redis: a tracking connection reads
// keys while it and another connection write them, and after each step
// the tracking connection's pushes, up to the reply of a PING, must name
// the same keys.
func TestDifferentialTracking(t *testing.T) {
	sock, ts, seed := diffSetup(t)
	r := rand.New(rand.NewPCG(seed, 0x7ac))
	keys := []string{"t:a", "t:b", "u:c", "u:d"}
	key := func() string { return keys[r.IntN(len(keys))] }
	modes := [][]string{{}, {"OPTIN"}, {"OPTOUT"}, {"BCAST"}, {"BCAST", "PREFIX", "t:"}, {"NOLOOP"}, {"OPTIN", "NOLOOP"}}
	for round := range *diffSteps / 100 {
		mode := modes[r.IntN(len(modes))]
		type side struct {
			tr, other *diffConn
			pushed    []byte // pushes the tracking connection got since the last check
		}
		sides := []*side{
			{tr: dialDiff(t, "tcp", ts.addr), other: dialDiff(t, "tcp", ts.addr)},
			{tr: dialDiff(t, "unix", sock), other: dialDiff(t, "unix", sock)},
		}
		var history []string
		do := func(useTr bool, args ...string) [2][]byte {
			var out [2][]byte
			for i, s := range sides {
				c := s.other
				if useTr {
					c = s.tr
				}
				b, err := c.roundTrip(args)
				// Pushes may come before the reply: keep them apart.
				for err == nil && useTr && len(b) > 0 && b[0] == '>' {
					s.pushed = append(s.pushed, b...)
					b, err = readRawReply(c.br, nil)
				}
				if err != nil {
					t.Fatalf("round %d %q: %v (seed %d)", round, args, err, seed)
				}
				out[i] = b
			}
			who := "other"
			if useTr {
				who = "tracker"
			}
			history = append(history, who+": "+strings.Join(args, " "))
			return out
		}
		do(true, "HELLO", "3")
		do(false, "FLUSHALL")
		do(true, append([]string{"CLIENT", "TRACKING", "ON"}, mode...)...)
		for step := range 100 {
			switch r.IntN(9) {
			case 0, 1:
				do(true, "GET", key())
			case 2:
				do(true, "MGET", key(), key())
			case 3:
				do(true, "CLIENT", "CACHING", []string{"YES", "NO"}[r.IntN(2)])
				do(true, "GET", key())
			case 4:
				do(true, "SET", key(), "mine")
			case 5:
				do(false, "SET", key(), "theirs")
			case 6:
				if c := []string{"DEL", "INCR", "APPEND"}[r.IntN(3)]; c == "APPEND" {
					do(false, c, key(), "x")
				} else {
					do(false, c, key())
				}
			case 7:
				do(false, "MSET", key(), "1", key(), "2")
			default:
				do(false, "EXPIRE", key(), "100")
			}
			// Whatever the tracking connection was sent, up to its PING.
			do(true, "PING")
			k0, _ := pushKeys(sides[0].pushed)
			k1, _ := pushKeys(sides[1].pushed)
			sides[0].pushed, sides[1].pushed = nil, nil
			if !slices.Equal(k0, k1) {
				t.Fatalf("round %d step %d (seed %d), mode %q: invalidated %q, Redis %q\n  %s",
					round, step, seed, mode, k0, k1, strings.Join(history[max(0, len(history)-16):], "\n  "))
			}
		}
		for _, s := range sides {
			s.tr.nc.Close()
			s.other.nc.Close()
		}
	}
}

// TestDifferentialExpired compares what commands do with keys that have
// just expired (their TTL has passed, so each server may or may not have
// dropped them yet): both must treat them as absent, whatever the command.
func TestDifferentialExpired(t *testing.T) {
	sock, ts, seed := diffSetup(t)
	r := rand.New(rand.NewPCG(seed, 0xe4))
	ours := dialDiff(t, "tcp", ts.addr)
	theirs := dialDiff(t, "unix", sock)
	keys := []string{"e0", "e1", "e2", "e3"}
	key := func() string { return keys[r.IntN(len(keys))] }
	cmds := []func() []string{
		func() []string { return []string{"GET", key()} },
		func() []string { return []string{"EXISTS", key(), key()} },
		func() []string { return []string{"TTL", key()} },
		func() []string { return []string{"PTTL", key()} },
		func() []string { return []string{"TYPE", key()} },
		func() []string { return []string{"STRLEN", key()} },
		func() []string { return []string{"INCR", key()} },
		func() []string { return []string{"INCRBYFLOAT", key(), "1.5"} },
		func() []string { return []string{"APPEND", key(), "x"} },
		func() []string { return []string{"SETRANGE", key(), "2", "x"} },
		func() []string { return []string{"GETRANGE", key(), "0", "-1"} },
		func() []string { return []string{"GETSET", key(), "n"} },
		func() []string { return []string{"GETDEL", key()} },
		func() []string { return []string{"GETEX", key(), "PERSIST"} },
		func() []string { return []string{"SET", key(), "n", "KEEPTTL"} },
		func() []string { return []string{"SET", key(), "n", "XX", "GET"} },
		func() []string { return []string{"SET", key(), "n", "NX"} },
		func() []string { return []string{"SETNX", key(), "n"} },
		func() []string { return []string{"MSETNX", key(), "1", key(), "2"} },
		func() []string { return []string{"EXPIRE", key(), "100"} },
		func() []string { return []string{"EXPIRE", key(), "100", "XX"} },
		func() []string { return []string{"EXPIRE", key(), "100", "NX"} },
		func() []string { return []string{"PERSIST", key()} },
		func() []string { return []string{"DEL", key()} },
		func() []string { return []string{"TOUCH", key()} },
		func() []string { return []string{"RENAME", key(), key()} },
		func() []string { return []string{"RENAMENX", key(), key()} },
		func() []string { return []string{"COPY", key(), key()} },
		func() []string { return []string{"COPY", key(), key(), "REPLACE"} },
		func() []string { return []string{"MOVE", key(), "1"} },
		func() []string { return []string{"MGET", key(), key()} },
		func() []string { return []string{"KEYS", "e*"} },
		func() []string { return []string{"OBJECT", "FREQ", key()} },
	}
	for round := range *diffSteps / 100 {
		for _, c := range []*diffConn{ours, theirs} {
			c.roundTrip([]string{"FLUSHALL"})
		}
		// Some keys live, some expire in a few milliseconds.
		for _, k := range keys {
			args := []string{"SET", k, "5"}
			if r.IntN(3) > 0 {
				args = append(args, "PX", strconv.Itoa(1+r.IntN(5)))
			}
			for _, c := range []*diffConn{ours, theirs} {
				c.roundTrip(args)
				c.roundTrip([]string{"SELECT", "1"})
				c.roundTrip([]string{"SET", k, "db1", "PX", "3"})
				c.roundTrip([]string{"SELECT", "0"})
			}
		}
		time.Sleep(10 * time.Millisecond) // past every TTL set above
		var history []string
		for step := range 8 {
			args := cmds[r.IntN(len(cmds))]()
			history = append(history, strings.Join(args, " "))
			a, errA := ours.roundTrip(args)
			b, errB := theirs.roundTrip(args)
			if err := errors.Join(errA, errB); err != nil {
				t.Fatal(err)
			}
			if na, nb := normalize(args, a, nil), normalize(args, b, nil); !bytes.Equal(na, nb) {
				t.Fatalf("round %d step %d (seed %d): %q\ncaskade: %q\nredis:   %q\n  %s",
					round, step, seed, args, a, b, strings.Join(history, "\n  "))
			}
		}
	}
}

// TestDifferentialScan compares full SCAN iterations (MATCH, COUNT, TYPE):
// cursors and batches differ by design, the keys returned must not.
func TestDifferentialScan(t *testing.T) {
	sock, ts, seed := diffSetup(t)
	r := rand.New(rand.NewPCG(seed, 0x5ca))
	sides := []*diffConn{dialDiff(t, "tcp", ts.addr), dialDiff(t, "unix", sock)}
	scanAll := func(c *diffConn, opts []string) ([]string, []byte) {
		var keys []string
		cursor := "0"
		for range 10000 {
			raw, err := c.roundTrip(append([]string{"SCAN", cursor}, opts...))
			if err != nil {
				t.Fatal(err)
			}
			_, parts := splitReplies(raw)
			if len(parts) != 2 {
				return nil, raw // an error reply
			}
			cursor = strings.SplitN(string(parts[0]), "\r\n", 3)[1]
			_, elems := splitReplies(parts[1])
			for _, e := range elems {
				keys = append(keys, strings.SplitN(string(e), "\r\n", 3)[1])
			}
			if cursor == "0" {
				break
			}
		}
		slices.Sort(keys)
		return slices.Compact(keys), nil
	}
	for round := range *diffSteps / 200 {
		n := r.IntN(300)
		for _, c := range sides {
			c.roundTrip([]string{"FLUSHALL"})
			for i := range n {
				c.roundTrip([]string{"SET", fmt.Sprintf("%c:%d", 'a'+byte(i%3), i), "v"})
			}
		}
		for range 5 {
			var opts []string
			if r.IntN(2) == 0 {
				opts = append(opts, "MATCH", []string{"a:*", "*1*", "?:5", "b:[0-3]*", "*"}[r.IntN(5)])
			}
			if r.IntN(2) == 0 {
				opts = append(opts, "COUNT", []string{"1", "10", "1000"}[r.IntN(3)])
			}
			if r.IntN(3) == 0 {
				opts = append(opts, "TYPE", []string{"string", "list"}[r.IntN(2)])
			}
			k0, e0 := scanAll(sides[0], opts)
			k1, e1 := scanAll(sides[1], opts)
			if !slices.Equal(k0, k1) || !bytes.Equal(e0, e1) {
				t.Fatalf("round %d (seed %d): SCAN %q over %d keys: caskade %d keys %q, Redis %d keys %q",
					round, seed, opts, n, len(k0), e0, len(k1), e1)
			}
		}
	}
}
