package redis

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade"
	goredis "github.com/redis/go-redis/v9"
)

var cskSeed = flag.Uint64("csk.seed", 0, "seed for the randomized CSK tests (0: random)")

func cskTestSeed(t *testing.T) uint64 {
	t.Helper()
	s := *cskSeed
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (replay with -csk.seed=%d)", s, s)
	return s
}

const (
	conflictErr = "CONFLICT transaction not committed due to conflict with another transaction (1020)"
	tooOldErr   = "TOOOLD transaction is too old to perform reads or be committed (1007)"
)

// doer is a go-redis client or connection.
type doer interface {
	Do(ctx context.Context, args ...any) *goredis.Cmd
}

// doStrings runs a command whose reply is an array of bulk strings.
func doStrings(t *testing.T, d doer, args ...any) []string {
	t.Helper()
	v, err := d.Do(context.Background(), args...).Slice()
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	out := make([]string, len(v))
	for i, x := range v {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("%q: element %d is %T", args, i, x)
		}
		out[i] = s
	}
	return out
}

// doText runs a command with a bulk or status reply; a null is "<nil>".
func doText(t *testing.T, d doer, args ...any) string {
	t.Helper()
	s, err := d.Do(context.Background(), args...).Text()
	if errors.Is(err, goredis.Nil) {
		return "<nil>"
	}
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return s
}

// doErr runs a command that must fail and returns the error text.
func doErr(t *testing.T, d doer, args ...any) string {
	t.Helper()
	err := d.Do(context.Background(), args...).Err()
	if err == nil || errors.Is(err, goredis.Nil) {
		t.Fatalf("%q: got %v, want an error", args, err)
	}
	return err.Error()
}

func le8(n uint64) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n)
	return string(b[:])
}

// TestCskRangeRaw checks CSK.RANGE replies byte for byte, its options,
// errors, and the isolation of databases.
func TestCskRangeRaw(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.do(cmd("MSET", "a", "1", "b", "2", "c", "3", "d", "4"), "+OK\r\n")
	c.do(cmd("SELECT", "1"), "+OK\r\n")
	c.do(cmd("MSET", "a", "x", "bb", "y"), "+OK\r\n")
	c.do(cmd("SELECT", "2"), "+OK\r\n")
	c.do(cmd("MSET", "zz", "z"), "+OK\r\n")
	c.do(cmd("SELECT", "0"), "+OK\r\n")
	// Keys outside every database must never show either.
	for _, k := range []string{"\xff", "\xff\x00a"} {
		if err := ts.db.Set([]byte(k), []byte("stray")); err != nil {
			t.Fatal(err)
		}
	}

	kv := func(pairs ...string) string {
		s := "*" + itoa(int64(len(pairs))) + "\r\n"
		for _, p := range pairs {
			s += "$" + itoa(int64(len(p))) + "\r\n" + p + "\r\n"
		}
		return s
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CSK.RANGE"}, kv("a", "1", "b", "2", "c", "3", "d", "4")},
		{[]string{"csk.range", "FROM", "b"}, kv("b", "2", "c", "3", "d", "4")},
		{[]string{"CSK.RANGE", "TO", "c"}, kv("a", "1", "b", "2")},
		{[]string{"CSK.RANGE", "FROM", "b", "TO", "d"}, kv("b", "2", "c", "3")},
		{[]string{"CSK.RANGE", "FROM", "b", "TO", "b"}, "*0\r\n"},
		{[]string{"CSK.RANGE", "FROM", "bz", "TO", "c"}, "*0\r\n"},
		{[]string{"CSK.RANGE", "LIMIT", "2"}, kv("a", "1", "b", "2")},
		{[]string{"CSK.RANGE", "LIMIT", "0"}, kv("a", "1", "b", "2", "c", "3", "d", "4")},
		{[]string{"CSK.RANGE", "REV"}, kv("d", "4", "c", "3", "b", "2", "a", "1")},
		{[]string{"CSK.RANGE", "rev", "limit", "2"}, kv("d", "4", "c", "3")},
		{[]string{"CSK.RANGE", "REV", "LIMIT", "2", "TO", "c"}, kv("b", "2", "a", "1")},
		{[]string{"CSK.RANGE", "KEYSONLY"}, kv("a", "b", "c", "d")},
		{[]string{"CSK.RANGE", "KEYSONLY", "REV", "FROM", "b", "LIMIT", "1"}, kv("d")},
		{[]string{"CSK.RANGE", "FROM", "", "TO", "\xff"}, kv("a", "1", "b", "2", "c", "3", "d", "4")},
		{[]string{"CSK.RANGE", "FROM", "\xff\x01"}, "*0\r\n"},
		{[]string{"CSK.RANGE", "FROM", "c", "TO", "\xff\xff"}, kv("c", "3", "d", "4")},
		{[]string{"CSK.RANGE", "FROM", "c", "TO", "b"}, "-ERR inverted range\r\n"},
		{[]string{"CSK.RANGE", "LIMIT", "-1"}, "-ERR value is out of range, must be positive\r\n"},
		{[]string{"CSK.RANGESEL", "a", "0", "1", "z", "0", "1", "LIMIT", "-1"}, "-ERR value is out of range, must be positive\r\n"},
		{[]string{"CSK.RANGE", "LIMIT", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"CSK.RANGE", "LIMIT"}, "-ERR syntax error\r\n"},
		{[]string{"CSK.RANGE", "FROM"}, "-ERR syntax error\r\n"},
		{[]string{"CSK.RANGE", "BOGUS"}, "-ERR syntax error\r\n"},
		{[]string{"CSK.CLEARRANGE", "LIMIT", "1"}, "-ERR syntax error\r\n"},
		{[]string{"CSK.CLEARRANGE", "FROM", "z", "TO", "a"}, "-ERR inverted range\r\n"},
	} {
		c.do(cmd(tc.args...), tc.want)
	}

	c.do(cmd("SELECT", "1"), "+OK\r\n")
	c.do(cmd("CSK.RANGE"), kv("a", "x", "bb", "y"))
	c.do(cmd("CSK.RANGE", "FROM", "b"), kv("bb", "y"))
	c.do(cmd("CSK.RANGE", "REV", "LIMIT", "5"), kv("bb", "y", "a", "x"))
	c.do(cmd("SELECT", "2"), "+OK\r\n")
	c.do(cmd("CSK.RANGE", "KEYSONLY"), kv("zz"))
	c.do(cmd("SELECT", "9"), "+OK\r\n")
	c.do(cmd("CSK.RANGE"), "*0\r\n")
	c.do(cmd("CSK.RANGE", "REV"), "*0\r\n")

	// RESP3: the same flat array, so that order is kept.
	c.do(cmd("SELECT", "0"), "+OK\r\n")
	c.hello3()
	c.do(cmd("CSK.RANGE", "FROM", "c"), kv("c", "3", "d", "4"))
	c.do(cmd("CSK.RANGE", "KEYSONLY", "LIMIT", "1"), kv("a"))
}

// TestCskRangeIsolation checks with go-redis that range reads, key
// selectors and clear-range never cross a database boundary.
func TestCskRangeIsolation(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	rdbs := make([]*goredis.Client, 4)
	for db := range rdbs {
		rdbs[db] = ts.goRedis(&goredis.Options{DB: db})
		for _, k := range []string{"k1", "k2", "k3"} {
			res(t, rdbs[db].Set(ctx, k, fmt.Sprintf("%s@%d", k, db), 0))
		}
	}
	for db, rdb := range rdbs {
		want := []string{"k1", fmt.Sprintf("k1@%d", db), "k2", fmt.Sprintf("k2@%d", db), "k3", fmt.Sprintf("k3@%d", db)}
		eq(t, "range", strings.Join(doStrings(t, rdb, "CSK.RANGE"), ","), strings.Join(want, ","))
		eq(t, "rev range", strings.Join(doStrings(t, rdb, "CSK.RANGE", "REV", "KEYSONLY"), ","), "k3,k2,k1")
		eq(t, "first", doText(t, rdb, "CSK.GETKEY", "", "0", "1"), "k1")
		eq(t, "last", doText(t, rdb, "CSK.GETKEY", "\xff\xff\xff", "1", "0"), "k3")
		eq(t, "before", doText(t, rdb, "CSK.GETKEY", "k1", "0", "0"), "")
		eq(t, "after", doText(t, rdb, "CSK.GETKEY", "k3", "1", "1"), "<nil>")
		eq(t, "rangesel all", strings.Join(doStrings(t, rdb, "CSK.RANGESEL", "", "0", "-5", "\xff", "1", "9", "KEYSONLY"), ","), "k1,k2,k3")
	}
	// Clearing all of database 1 leaves the others alone.
	eq(t, "clear", doText(t, rdbs[1], "CSK.CLEARRANGE"), "OK")
	eq(t, "db1 empty", len(doStrings(t, rdbs[1], "CSK.RANGE")), 0)
	eq(t, "db1 getkey", doText(t, rdbs[1], "CSK.GETKEY", "k", "0", "1"), "<nil>")
	for _, db := range []int{0, 2, 3} {
		eq(t, "others", strings.Join(doStrings(t, rdbs[db], "CSK.RANGE", "KEYSONLY"), ","), "k1,k2,k3")
	}
	// A bounded clear in database 0 stops at its bounds.
	eq(t, "clear db0", doText(t, rdbs[0], "CSK.CLEARRANGE", "FROM", "k2", "TO", "\xff\xff"), "OK")
	eq(t, "db0", strings.Join(doStrings(t, rdbs[0], "CSK.RANGE", "KEYSONLY"), ","), "k1")
	eq(t, "db2", strings.Join(doStrings(t, rdbs[2], "CSK.RANGE", "KEYSONLY"), ","), "k1,k2,k3")
	eq(t, "clear db2 from", doText(t, rdbs[2], "CSK.CLEARRANGE", "FROM", "k2"), "OK")
	eq(t, "clear db3 to", doText(t, rdbs[3], "CSK.CLEARRANGE", "TO", "k2"), "OK")
	eq(t, "db2 after", strings.Join(doStrings(t, rdbs[2], "CSK.RANGE", "KEYSONLY"), ","), "k1")
	eq(t, "db3 after", strings.Join(doStrings(t, rdbs[3], "CSK.RANGE", "KEYSONLY"), ","), "k2,k3")
	eq(t, "db0 after", strings.Join(doStrings(t, rdbs[0], "CSK.RANGE", "KEYSONLY"), ","), "k1")
}

// TestCskGetKey resolves the key selectors of FoundationDB's and
// clj-foundationdb's tests, in a database surrounded by others' keys.
func TestCskGetKey(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	for _, db := range []int{1, 3} {
		res(t, ts.goRedis(&goredis.Options{DB: db}).Set(ctx, "m", "neighbour", 0))
	}
	for _, db := range []int{0, 2} {
		rdb := ts.goRedis(&goredis.Options{DB: db})
		for _, k := range []string{"bar", "bar1", "bar2", "car", "car1", "foo"} {
			res(t, rdb.Set(ctx, k, "v:"+k, 0))
		}
		for _, tc := range []struct {
			key     string
			orEqual string
			offset  int
			want    string
		}{
			{"bar", "0", 1, "bar"},   // firstGreaterOrEqual
			{"bar", "1", 1, "bar1"},  // firstGreaterThan
			{"bar1", "0", 0, "bar"},  // lastLessThan
			{"bar1", "1", 0, "bar1"}, // lastLessOrEqual
			{"bar0", "1", 0, "bar"},
			{"bar0", "0", 1, "bar1"},
			{"bar", "0", 3, "bar2"},
			{"bar", "1", 3, "car"},
			{"foo", "0", 0, "car1"},
			{"foo", "1", -1, "car1"},
			{"car", "1", -2, "bar1"},
			{"car", "0", -1, "bar1"},
			{"a", "0", 1, "bar"},
			{"zzz", "1", 0, "foo"},
			{"zzz", "0", 0, "foo"},
			{"\xff", "0", 0, "foo"},
			{"\xff\x05zz", "1", 0, "foo"},
			{"\xff", "1", -5, "bar"},
			// Clamping: before the first key, past the last.
			{"bar", "0", 0, ""},
			{"", "0", 0, ""},
			{"", "1", 0, ""},
			{"car", "0", -10, ""},
			{"bar", "0", -9223372036854775807, ""},
			{"foo", "1", 1, "<nil>"},
			{"zzz", "0", 1, "<nil>"},
			{"\xff", "0", 1, "<nil>"},
			{"bar", "1", 100, "<nil>"},
			{"bar", "1", 9223372036854775807, "<nil>"},
		} {
			got := doText(t, rdb, "CSK.GETKEY", tc.key, tc.orEqual, tc.offset)
			if got != tc.want {
				t.Errorf("db %d: GETKEY %q %s %d = %q, want %q", db, tc.key, tc.orEqual, tc.offset, got, tc.want)
			}
		}
		// firstGreaterThan(bar) .. firstGreaterOrEqual(car1): bar1, bar2, car.
		eq(t, "rangesel", strings.Join(doStrings(t, rdb, "CSK.RANGESEL", "bar", "1", "1", "car1", "0", "1"), ","),
			"bar1,v:bar1,bar2,v:bar2,car,v:car")
		eq(t, "rangesel rev limit", strings.Join(doStrings(t, rdb, "CSK.RANGESEL", "bar", "1", "1", "car1", "0", "1", "REV", "LIMIT", "2", "KEYSONLY"), ","),
			"car,bar2")
		eq(t, "rangesel inverted", len(doStrings(t, rdb, "CSK.RANGESEL", "car", "0", "1", "bar", "0", "1")), 0)
		eq(t, "rangesel clamped", strings.Join(doStrings(t, rdb, "CSK.RANGESEL", "bar", "0", "-3", "car", "0", "1", "KEYSONLY"), ","), "bar,bar1,bar2")
		eq(t, "rangesel to end", strings.Join(doStrings(t, rdb, "CSK.RANGESEL", "car", "1", "1", "foo", "1", "7", "KEYSONLY"), ","), "car1,foo")
		eq(t, "rangesel past", len(doStrings(t, rdb, "CSK.RANGESEL", "foo", "1", "1", "foo", "1", "5")), 0)
		eq(t, "bad orequal", doErr(t, rdb, "CSK.GETKEY", "bar", "2", "1"), "ERR orequal must be 0 or 1")
		eq(t, "bad offset", doErr(t, rdb, "CSK.GETKEY", "bar", "0", "x"), "ERR value is not an integer or out of range")
		eq(t, "bad sel", doErr(t, rdb, "CSK.RANGESEL", "bar", "0", "1", "foo", "x", "1"), "ERR orequal must be 0 or 1")
		eq(t, "bad opt", doErr(t, rdb, "CSK.RANGESEL", "bar", "0", "1", "foo", "0", "1", "FROM", "a"), "ERR syntax error")
		eq(t, "arity", doErr(t, rdb, "CSK.GETKEY", "bar", "0"), "ERR wrong number of arguments for 'csk.getkey' command")
	}

	// Exact bytes of the clamped replies, in RESP2 and RESP3.
	c := ts.dial()
	c.do(cmd("CSK.GETKEY", "bar", "0", "0"), "$0\r\n\r\n")
	c.do(cmd("CSK.GETKEY", "foo", "1", "1"), "$-1\r\n")
	c.do(cmd("CSK.GETKEY", "bar", "1", "1"), "$4\r\nbar1\r\n")
	c.hello3()
	c.do(cmd("CSK.GETKEY", "foo", "1", "1"), "_\r\n")
	c.do(cmd("CSK.GETKEY", "bar", "0", "0"), "$0\r\n\r\n")
}

// TestCskAtomic checks each atomic operation, and that concurrent ADDs
// lose nothing.
func TestCskAtomic(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	rdb := ts.goRedis(nil)
	atomicOp := func(op, key, param string) {
		t.Helper()
		eq(t, op, doText(t, rdb, "CSK.ATOMIC", op, key, param), "OK")
	}
	get := func(key string) string {
		t.Helper()
		return doText(t, rdb, "GET", key)
	}
	atomicOp("ADD", "n", le8(5))
	atomicOp("add", "n", le8(300))
	eq(t, "ADD", get("n"), le8(305))
	atomicOp("ADD", "n", le8(1<<64-1)) // wraps: -1
	eq(t, "ADD wrap", get("n"), le8(304))
	atomicOp("ADD", "n", "\x01\x00") // the value is truncated to 2 bytes
	eq(t, "ADD short", get("n"), "\x31\x01")

	atomicOp("AND", "bits", "\x0f\xf0") // a missing value: param
	eq(t, "AND missing", get("bits"), "\x0f\xf0")
	atomicOp("AND", "bits", "\x3c\x3c")
	eq(t, "AND", get("bits"), "\x0c\x30")
	atomicOp("OR", "bits", "\x01\x01")
	eq(t, "OR", get("bits"), "\x0d\x31")
	atomicOp("XOR", "bits", "\xff\x00")
	eq(t, "XOR", get("bits"), "\xf2\x31")
	atomicOp("Xor", "fresh", "\x05")
	eq(t, "XOR missing", get("fresh"), "\x05")

	atomicOp("MAX", "m", "\x00\x01") // 256
	atomicOp("MAX", "m", "\xff\x00") // 255
	eq(t, "MAX", get("m"), "\x00\x01")
	atomicOp("MIN", "m", "\xff\x00")
	eq(t, "MIN", get("m"), "\xff\x00")
	atomicOp("MAX", "m", "\x00\x02")
	eq(t, "MAX 2", get("m"), "\x00\x02")

	atomicOp("BYTEMAX", "s", "b")
	atomicOp("BYTEMAX", "s", "abc")
	eq(t, "BYTEMAX", get("s"), "b")
	atomicOp("BYTEMIN", "s", "abc")
	eq(t, "BYTEMIN", get("s"), "abc")
	atomicOp("BYTEMIN", "s", "b")
	eq(t, "BYTEMIN 2", get("s"), "abc")

	atomicOp("APPENDIFFITS", "log", "one,")
	atomicOp("AppendIfFits", "log", "two")
	eq(t, "APPENDIFFITS", get("log"), "one,two")

	atomicOp("COMPAREANDCLEAR", "log", "nope")
	eq(t, "COMPAREANDCLEAR kept", get("log"), "one,two")
	atomicOp("COMPAREANDCLEAR", "log", "one,two")
	eq(t, "COMPAREANDCLEAR cleared", get("log"), "<nil>")
	atomicOp("COMPAREANDCLEAR", "log", "")
	eq(t, "COMPAREANDCLEAR missing", get("log"), "<nil>")

	eq(t, "unknown", doErr(t, rdb, "CSK.ATOMIC", "mul", "n", "x"), "ERR unknown atomic operation 'mul'")
	eq(t, "arity", doErr(t, rdb, "CSK.ATOMIC", "add", "n"), "ERR wrong number of arguments for 'csk.atomic' command")
	eq(t, "reserved", doErr(t, rdb, "CSK.ATOMIC", "add", "\xffn", le8(1)), errReservedKey)

	// In another database the key lives under that database's prefix.
	rdb5 := ts.goRedis(&goredis.Options{DB: 5})
	eq(t, "db5", doText(t, rdb5, "CSK.ATOMIC", "ADD", "n", le8(7)), "OK")
	eq(t, "db5 value", doText(t, rdb5, "GET", "n"), le8(7))
	eq(t, "db0 value", get("n"), "\x31\x01")

	// Concurrent ADDs from 16 clients sum exactly.
	const clients, each = 16, 200
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := goredis.NewClient(&goredis.Options{Addr: ts.addr, PoolSize: 1})
			defer c.Close()
			for j := range each {
				if err := c.Do(ctx, "CSK.ATOMIC", "ADD", "sum", le8(uint64(i*each+j+1))).Err(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const n = clients * each
	eq(t, "sum", get("sum"), le8(n*(n+1)/2))
}

// TestCskVersion: a key's version changes on every write and only then.
func TestCskVersion(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	rdb := ts.goRedis(nil)
	version := func(key string) int64 {
		t.Helper()
		return resInt(t, rdb.Do(ctx, "CSK.VERSION", key))
	}
	eq(t, "absent", version("k"), int64(0))
	res(t, rdb.Set(ctx, "k", "1", 0))
	v1 := version("k")
	if v1 <= 0 {
		t.Fatalf("version after SET: %d", v1)
	}
	res(t, rdb.Get(ctx, "k"))
	eq(t, "after a read", version("k"), v1)
	res(t, rdb.Set(ctx, "other", "x", 0))
	eq(t, "after another key's write", version("k"), v1)
	last := v1
	for i, write := range []func(){
		func() { res(t, rdb.Set(ctx, "k", "1", 0)) }, // the same value: still a write
		func() { res(t, rdb.Incr(ctx, "k")) },
		func() { res(t, rdb.Append(ctx, "k", "0")) },
		func() { doText(t, rdb, "CSK.ATOMIC", "BYTEMAX", "k", "9") },
		func() { res(t, rdb.MSet(ctx, "k", "m", "j", "n")) },
	} {
		write()
		v := version("k")
		if v <= last {
			t.Fatalf("write %d: version %d after %d", i, v, last)
		}
		last = v
	}
	// The version is the one the engine reports, usable as a check token.
	info, err := ts.db.Stat([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "engine version", uint64(last), info.Version)
	res(t, rdb.Del(ctx, "k"))
	eq(t, "deleted", version("k"), int64(0))
	eq(t, "reserved", doErr(t, rdb, "CSK.VERSION", "\xffk"), errReservedKey)
}

// TestCskTxRaw checks the transaction commands' replies and errors byte
// for byte.
func TestCskTxRaw(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.do(cmd("CSK.COMMIT"), "-ERR CSK.COMMIT without CSK.BEGIN\r\n")
	c.do(cmd("CSK.ROLLBACK"), "-ERR CSK.ROLLBACK without CSK.BEGIN\r\n")
	c.do(cmd("CSK.SNAPSHOT", "GET", "a"), "-ERR CSK.SNAPSHOT without CSK.BEGIN\r\n")
	c.do(cmd("MSET", "a", "1", "b", "2", "n", "10", "s", "str"), "+OK\r\n")

	c.do(cmd("CSK.BEGIN"), "+OK\r\n")
	c.do(cmd("CSK.BEGIN"), "-ERR CSK.BEGIN calls can not be nested\r\n")
	c.do(cmd("MULTI"), "-ERR MULTI inside CSK.BEGIN is not allowed\r\n")
	c.do(cmd("SELECT", "1"), "-ERR command not allowed in a caskade transaction\r\n")
	c.do(cmd("KEYS", "*"), "-ERR command not allowed in a caskade transaction\r\n")
	c.do(cmd("CSK.VERSION", "a"), "-ERR command not allowed in a caskade transaction\r\n")
	c.do(cmd("APPEND", "a", "x"), "-ERR command not allowed in a caskade transaction\r\n")
	c.do(cmd("SET", "a", "x", "EX", "10"), "-ERR only plain SET is supported in a caskade transaction\r\n")
	c.do(cmd("SET", "a", "x", "NX"), "-ERR only plain SET is supported in a caskade transaction\r\n")
	c.do(cmd("GET", "\xffa"), "-"+errReservedKey+"\r\n")
	c.do(cmd("PING"), "+PONG\r\n")
	c.do(cmd("ECHO", "hi"), "$2\r\nhi\r\n")
	c.do(cmd("TIME"), "*2\r\n")
	c.readLine()
	c.readLine()
	c.readLine()
	c.readLine()
	// Reads with read-your-writes.
	c.do(cmd("GET", "a"), "$1\r\n1\r\n")
	c.do(cmd("SET", "a", "one"), "+OK\r\n")
	c.do(cmd("GET", "a"), "$3\r\none\r\n")
	c.do(cmd("MSET", "c", "3", "d", "4"), "+OK\r\n")
	c.do(cmd("MSET", "c", "3", "d"), "-ERR wrong number of arguments for 'mset' command\r\n")
	c.do(cmd("MGET", "a", "c", "zz"), "*3\r\n$3\r\none\r\n$1\r\n3\r\n$-1\r\n")
	c.do(cmd("EXISTS", "a", "a", "zz", "d"), ":3\r\n")
	c.do(cmd("DEL", "b", "b", "zz"), ":1\r\n")
	c.do(cmd("GET", "b"), "$-1\r\n")
	c.do(cmd("INCR", "n"), ":11\r\n")
	c.do(cmd("INCRBY", "n", "5"), ":16\r\n")
	c.do(cmd("DECR", "n"), ":15\r\n")
	c.do(cmd("DECRBY", "n", "20"), ":-5\r\n")
	c.do(cmd("INCR", "s"), "-ERR value is not an integer or out of range\r\n")
	c.do(cmd("INCRBY", "n", "x"), "-ERR value is not an integer or out of range\r\n")
	c.do(cmd("DECRBY", "n", "-9223372036854775808"), "-ERR decrement would overflow\r\n")
	c.do(cmd("SET", "big", "9223372036854775807"), "+OK\r\n")
	c.do(cmd("INCR", "big"), "-ERR increment or decrement would overflow\r\n")
	c.do(cmd("INCR", "fresh"), ":1\r\n")
	c.do(cmd("CSK.RANGE", "KEYSONLY"), "*7\r\n$1\r\na\r\n$3\r\nbig\r\n$1\r\nc\r\n$1\r\nd\r\n$5\r\nfresh\r\n$1\r\nn\r\n$1\r\ns\r\n")
	c.do(cmd("CSK.RANGE", "FROM", "c", "TO", "e"), "*4\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n4\r\n")
	c.do(cmd("CSK.GETKEY", "a", "1", "1"), "$3\r\nbig\r\n")
	c.do(cmd("CSK.RANGESEL", "a", "1", "1", "d", "1", "1", "KEYSONLY"), "*3\r\n$3\r\nbig\r\n$1\r\nc\r\n$1\r\nd\r\n")
	c.do(cmd("CSK.CLEARRANGE", "FROM", "c", "TO", "e"), "+OK\r\n")
	c.do(cmd("CSK.RANGE", "FROM", "b", "TO", "g", "KEYSONLY"), "*2\r\n$3\r\nbig\r\n$5\r\nfresh\r\n")
	c.do(cmd("CSK.ATOMIC", "ADD", "ctr", le8(3)), "+OK\r\n")
	c.do(cmd("CSK.ATOMIC", "ADD", "ctr", le8(4)), "+OK\r\n")
	c.do(cmd("GET", "ctr"), "$8\r\n"+le8(7)+"\r\n")
	c.do(cmd("CSK.ATOMIC", "NOPE", "ctr", "x"), "-ERR unknown atomic operation 'NOPE'\r\n")
	c.do(cmd("CSK.SNAPSHOT", "GET", "a"), "$3\r\none\r\n")
	c.do(cmd("CSK.SNAPSHOT", "mget", "a", "zz"), "*2\r\n$3\r\none\r\n$-1\r\n")
	c.do(cmd("CSK.SNAPSHOT", "EXISTS", "a", "c"), ":1\r\n")
	c.do(cmd("CSK.SNAPSHOT", "CSK.RANGE", "TO", "b", "KEYSONLY"), "*1\r\n$1\r\na\r\n")
	c.do(cmd("CSK.SNAPSHOT", "CSK.GETKEY", "a", "0", "1"), "$1\r\na\r\n")
	c.do(cmd("CSK.SNAPSHOT", "CSK.RANGESEL", "a", "0", "1", "a", "1", "1", "KEYSONLY"), "*1\r\n$1\r\na\r\n")
	c.do(cmd("CSK.SNAPSHOT", "SET", "a", "x"), "-"+errSnapshotSubcmd+"\r\n")
	c.do(cmd("CSK.SNAPSHOT", "NOPE"), "-"+errSnapshotSubcmd+"\r\n")
	c.do(cmd("CSK.SNAPSHOT", "GET"), "-ERR wrong number of arguments for 'get' command\r\n")
	c.do(cmd("CSK.SNAPSHOT", "GET", "\xffa"), "-"+errReservedKey+"\r\n")
	c.do(cmd("CSK.SNAPSHOT"), "-ERR wrong number of arguments for 'csk.snapshot' command\r\n")
	// Another connection sees nothing of it yet.
	o := ts.dial()
	o.do(cmd("MGET", "a", "b", "c", "n", "fresh", "ctr"), "*6\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n$2\r\n10\r\n$-1\r\n$-1\r\n")
	c.do(cmd("CSK.COMMIT"), "+OK\r\n")
	c.do(cmd("CSK.COMMIT"), "-ERR CSK.COMMIT without CSK.BEGIN\r\n")
	o.do(cmd("MGET", "a", "b", "c", "n", "fresh", "ctr"), "*6\r\n$3\r\none\r\n$-1\r\n$-1\r\n$2\r\n-5\r\n$1\r\n1\r\n$8\r\n"+le8(7)+"\r\n")

	// ROLLBACK discards everything.
	c.do(cmd("CSK.BEGIN"), "+OK\r\n")
	c.do(cmd("SET", "a", "rolled"), "+OK\r\n")
	c.do(cmd("CSK.CLEARRANGE"), "+OK\r\n")
	c.do(cmd("CSK.RANGE"), "*0\r\n")
	c.do(cmd("CSK.ROLLBACK"), "+OK\r\n")
	c.do(cmd("GET", "a"), "$3\r\none\r\n")
	c.do(cmd("CSK.ROLLBACK"), "-ERR CSK.ROLLBACK without CSK.BEGIN\r\n")

	// MULTI and CSK.BEGIN exclude each other; CSK commands are not queued.
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("CSK.BEGIN"), "-ERR CSK.BEGIN inside MULTI is not allowed\r\n")
	c.do(cmd("CSK.RANGE"), "-ERR Command not allowed inside a transaction\r\n")
	c.do(cmd("EXEC"), "-EXECABORT Transaction discarded because of previous errors.\r\n")
	c.do(cmd("CSK.COMMIT"), "-ERR CSK.COMMIT without CSK.BEGIN\r\n")

	// The transaction works in the database selected at CSK.BEGIN.
	c.do(cmd("SELECT", "4"), "+OK\r\n")
	c.do(cmd("CSK.BEGIN"), "+OK\r\n")
	c.do(cmd("SET", "a", "four"), "+OK\r\n")
	c.do(cmd("CSK.RANGE"), "*2\r\n$1\r\na\r\n$4\r\nfour\r\n")
	c.do(cmd("CSK.COMMIT"), "+OK\r\n")
	c.do(cmd("GET", "a"), "$4\r\nfour\r\n")
	o.do(cmd("GET", "a"), "$3\r\none\r\n")

	// RESET rolls back.
	c.do(cmd("CSK.BEGIN"), "+OK\r\n")
	c.do(cmd("SET", "a", "reset"), "+OK\r\n")
	c.do(cmd("RESET"), "+RESET\r\n")
	c.do(cmd("CSK.COMMIT"), "-ERR CSK.COMMIT without CSK.BEGIN\r\n")
	c.do(cmd("SELECT", "4"), "+OK\r\n")
	c.do(cmd("GET", "a"), "$4\r\nfour\r\n")
	if n := ts.db.Stats().OpenSnapshots; n != 0 {
		t.Fatalf("%d snapshots open after RESET", n)
	}
}

// TestCskTxConflict: a write by another connection to what a transaction
// read fails its commit with CONFLICT and applies nothing; snapshot reads
// and blind writes do not conflict.
func TestCskTxConflict(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	rdb := ts.goRedis(nil)
	other := ts.goRedis(nil)
	res(t, rdb.MSet(ctx, "k", "1", "r1", "x"))
	conn := rdb.Conn()
	defer conn.Close()

	type step struct {
		name     string
		read     []any // the transaction's read
		write    []any // the other connection's write
		conflict bool
	}
	for _, s := range []step{
		{"point read", []any{"GET", "k"}, []any{"SET", "k", "2"}, true},
		{"missing key read", []any{"GET", "nokey"}, []any{"SET", "nokey", "now"}, true},
		{"mget", []any{"MGET", "zz", "k"}, []any{"DEL", "k"}, true},
		{"exists", []any{"EXISTS", "k"}, []any{"SET", "k", "back"}, true},
		{"range read", []any{"CSK.RANGE", "FROM", "r", "TO", "s"}, []any{"SET", "r2", "new"}, true},
		{"range read, delete", []any{"CSK.RANGE", "FROM", "r", "TO", "s", "KEYSONLY"}, []any{"DEL", "r1"}, true},
		{"getkey", []any{"CSK.GETKEY", "r", "0", "1"}, []any{"SET", "r0", "new"}, true},
		{"rangesel", []any{"CSK.RANGESEL", "r", "0", "1", "s", "0", "1"}, []any{"SET", "r3", "new"}, true},
		{"incr", []any{"INCR", "cnt"}, []any{"SET", "cnt", "100"}, true},
		{"range elsewhere", []any{"CSK.RANGE", "FROM", "t", "TO", "u"}, []any{"SET", "r4", "new"}, false},
		{"snapshot get", []any{"CSK.SNAPSHOT", "GET", "k"}, []any{"SET", "k", "3"}, false},
		{"snapshot range", []any{"CSK.SNAPSHOT", "CSK.RANGE", "FROM", "r", "TO", "s"}, []any{"SET", "r5", "new"}, false},
		{"snapshot getkey", []any{"CSK.SNAPSHOT", "CSK.GETKEY", "r", "0", "1"}, []any{"SET", "r", "new"}, false},
		{"blind write", []any{"PING"}, []any{"SET", "out", "theirs"}, false},
	} {
		eq(t, s.name+": begin", doText(t, conn, "CSK.BEGIN"), "OK")
		if err := conn.Do(ctx, s.read...).Err(); err != nil && !errors.Is(err, goredis.Nil) {
			t.Fatalf("%s: %v", s.name, err)
		}
		eq(t, s.name+": set", doText(t, conn, "SET", "out", s.name), "OK")
		if err := other.Do(ctx, s.write...).Err(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		err := conn.Do(ctx, "CSK.COMMIT").Err()
		if s.conflict {
			if err == nil || err.Error() != conflictErr {
				t.Fatalf("%s: COMMIT = %v, want %s", s.name, err, conflictErr)
			}
			if got := doText(t, other, "GET", "out"); got == s.name {
				t.Fatalf("%s: the conflicting transaction was applied", s.name)
			}
		} else {
			if err != nil {
				t.Fatalf("%s: COMMIT = %v", s.name, err)
			}
			eq(t, s.name+": applied", doText(t, other, "GET", "out"), s.name)
		}
		// Either way the connection is out of the transaction.
		eq(t, s.name+": after", doErr(t, conn, "CSK.ROLLBACK"), errTxNoRollback)
	}
	// Reads of a whole database conflict with writes in it, never with
	// writes in the databases around it.
	rdb1, rdb0, rdb2 := ts.goRedis(&goredis.Options{DB: 1}), ts.goRedis(&goredis.Options{DB: 0}), ts.goRedis(&goredis.Options{DB: 2})
	res(t, rdb1.Set(ctx, "m", "1", 0))
	conn1 := rdb1.Conn()
	defer conn1.Close()
	for _, s := range []struct {
		name     string
		read     []any
		writer   *goredis.Client
		key      string
		conflict bool
	}{
		{"db range, write in db 0", []any{"CSK.RANGE"}, rdb0, "a", false},
		{"db range, write in db 2", []any{"CSK.RANGE", "REV", "LIMIT", "5"}, rdb2, "a", false},
		{"getkey past the end, write in db 2", []any{"CSK.GETKEY", "zzz", "1", "1"}, rdb2, "a", false},
		{"getkey before the start, write in db 0", []any{"CSK.GETKEY", "m", "0", "-1"}, rdb0, "zzzz", false},
		{"rangesel, write in db 2", []any{"CSK.RANGESEL", "", "0", "-3", "zzz", "1", "3"}, rdb2, "b", false},
		{"db range, write in db 1", []any{"CSK.RANGE", "KEYSONLY"}, rdb1, "b", true},
		{"getkey past the end, write in db 1", []any{"CSK.GETKEY", "zzz", "1", "1"}, rdb1, "zzzz", true},
		{"getkey before the start, write in db 1", []any{"CSK.GETKEY", "a", "0", "0"}, rdb1, "", true},
	} {
		eq(t, s.name+": begin", doText(t, conn1, "CSK.BEGIN"), "OK")
		if err := conn1.Do(ctx, s.read...).Err(); err != nil && !errors.Is(err, goredis.Nil) {
			t.Fatalf("%s: %v", s.name, err)
		}
		eq(t, s.name+": set", doText(t, conn1, "SET", "out", s.name), "OK")
		res(t, s.writer.Set(ctx, s.key, "x", 0))
		err := conn1.Do(ctx, "CSK.COMMIT").Err()
		switch {
		case s.conflict && (err == nil || err.Error() != conflictErr):
			t.Fatalf("%s: COMMIT = %v, want %s", s.name, err, conflictErr)
		case !s.conflict && err != nil:
			t.Fatalf("%s: COMMIT = %v", s.name, err)
		}
	}

	// A read-your-writes read adds no conflict: the key was written first.
	eq(t, "begin", doText(t, conn, "CSK.BEGIN"), "OK")
	eq(t, "set", doText(t, conn, "SET", "own", "mine"), "OK")
	eq(t, "get own", doText(t, conn, "GET", "own"), "mine")
	res(t, other.Set(ctx, "own", "theirs", 0))
	eq(t, "commit", doText(t, conn, "CSK.COMMIT"), "OK")
	eq(t, "own", doText(t, other, "GET", "own"), "mine")
}

// TestCskTxCounter: increments through CSK.BEGIN/GET/SET/COMMIT with a
// retry on CONFLICT, from 8 connections at once, lose nothing.
func TestCskTxCounter(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	const clients, each = 8, 50
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := goredis.NewClient(&goredis.Options{Addr: ts.addr, PoolSize: 1})
			defer rdb.Close()
			conn := rdb.Conn()
			defer conn.Close()
			incr := func() error {
				if err := conn.Do(ctx, "CSK.BEGIN").Err(); err != nil {
					return err
				}
				n, err := conn.Do(ctx, "GET", "counter").Int()
				if errors.Is(err, goredis.Nil) {
					n, err = 0, nil
				}
				if err != nil {
					conn.Do(ctx, "CSK.ROLLBACK")
					return err
				}
				if err := conn.Do(ctx, "SET", "counter", n+1).Err(); err != nil {
					return err
				}
				return conn.Do(ctx, "CSK.COMMIT").Err()
			}
			for range each {
				for {
					err := incr()
					if err != nil && strings.HasPrefix(err.Error(), "CONFLICT ") {
						conflicts.Add(1)
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d conflicts retried", conflicts.Load())
	eq(t, "counter", resInt(t, ts.goRedis(nil).Get(ctx, "counter")), int64(clients*each))
}

// TestCskTxCloseRollsBack: a connection closed in a transaction rolls it
// back and releases its snapshot.
func TestCskTxCloseRollsBack(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.dial()
	c.do(cmd("SET", "k", "old"), "+OK\r\n")
	c.do(cmd("CSK.BEGIN"), "+OK\r\n")
	c.do(cmd("SET", "k", "new"), "+OK\r\n")
	c.do(cmd("GET", "k"), "$3\r\nnew\r\n")
	if n := ts.db.Stats().OpenSnapshots; n == 0 {
		t.Fatal("no snapshot held by the open transaction")
	}
	c.nc.Close()
	waitFor(t, "the transaction's snapshot to be released", func() bool { return ts.db.Stats().OpenSnapshots == 0 })
	ts.dial().do(cmd("GET", "k"), "$3\r\nold\r\n")

	// QUIT too, and a client killed by another.
	q := ts.dial()
	q.do(cmd("CSK.BEGIN"), "+OK\r\n")
	q.do(cmd("SET", "k", "quit"), "+OK\r\n")
	q.do(cmd("QUIT"), "+OK\r\n")
	q.expectClosed()
	waitFor(t, "QUIT to roll back", func() bool { return ts.db.Stats().OpenSnapshots == 0 })
	ts.dial().do(cmd("GET", "k"), "$3\r\nold\r\n")
}

// TestCskTxTooOld: after the transaction lifetime, reads and the commit
// fail with TOOOLD, and the commit ends the transaction.
func TestCskTxTooOld(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	ts := startServerOpts(t, &caskade.Options{
		Sync:        caskade.SyncNone,
		TxnLifetime: time.Second,
		Now:         func() time.Time { return time.Unix(0, now.Load()) },
	})
	c := ts.dial()
	c.do(cmd("SET", "k", "v"), "+OK\r\n")
	c.do(cmd("CSK.BEGIN"), "+OK\r\n")
	c.do(cmd("GET", "k"), "$1\r\nv\r\n")
	c.do(cmd("SET", "k2", "v2"), "+OK\r\n")
	now.Add(int64(2 * time.Second))
	// The engine reads the clock every 64 transaction calls, so the
	// expiry shows within 64 reads; from then on it sticks.
	for i := 0; ; i++ {
		c.send(cmd("GET", "k"))
		if line := c.readLine(); line == "-"+tooOldErr+"\r\n" {
			break
		} else if line != "$1\r\n" || i == 64 {
			t.Fatalf("read %d after the lifetime: %q", i, line)
		}
		c.expect("v\r\n")
	}
	c.do(cmd("GET", "k"), "-"+tooOldErr+"\r\n")
	c.do(cmd("SET", "k3", "v"), "-"+tooOldErr+"\r\n")
	c.do(cmd("MGET", "k", "k2"), "-"+tooOldErr+"\r\n")
	c.do(cmd("CSK.RANGE"), "-"+tooOldErr+"\r\n")
	c.do(cmd("CSK.GETKEY", "k", "0", "1"), "-"+tooOldErr+"\r\n")
	c.do(cmd("CSK.SNAPSHOT", "GET", "k"), "-"+tooOldErr+"\r\n")
	c.do(cmd("INCR", "n"), "-"+tooOldErr+"\r\n")
	c.do(cmd("CSK.COMMIT"), "-"+tooOldErr+"\r\n")
	c.do(cmd("CSK.COMMIT"), "-ERR CSK.COMMIT without CSK.BEGIN\r\n")
	c.do(cmd("GET", "k2"), "$-1\r\n")
	// A new transaction works again.
	c.do(cmd("CSK.BEGIN"), "+OK\r\n")
	c.do(cmd("SET", "k2", "v2"), "+OK\r\n")
	c.do(cmd("CSK.COMMIT"), "+OK\r\n")
	c.do(cmd("GET", "k2"), "$2\r\nv2\r\n")
	info := res(t, ts.goRedis(nil).Info(context.Background(), "errorstats"))
	if !strings.Contains(info, "errorstat_TOOOLD:count=") {
		t.Fatalf("errorstats: %s", info)
	}
}

// TestCskCommandTable checks COMMAND and INFO for the family.
func TestCskCommandTable(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	rdb := ts.goRedis(nil)
	cmds := res(t, rdb.Command(ctx))
	for name, want := range map[string]struct {
		arity    int8
		readOnly bool
		firstKey int8
	}{
		"csk.range": {-1, true, 0}, "csk.rangesel": {-7, true, 0}, "csk.getkey": {4, true, 0},
		"csk.clearrange": {-1, false, 0}, "csk.atomic": {4, false, 2}, "csk.version": {2, true, 1},
		"csk.begin": {1, false, 0}, "csk.commit": {1, false, 0}, "csk.rollback": {1, false, 0},
		"csk.snapshot": {-2, true, 0},
	} {
		info := cmds[name]
		if info == nil {
			t.Fatalf("COMMAND lacks %s", name)
		}
		if int8(info.Arity) != want.arity || info.ReadOnly != want.readOnly || int8(info.FirstKeyPos) != want.firstKey {
			t.Errorf("COMMAND %s: %+v, want %+v", name, info, want)
		}
	}
	list := res(t, rdb.CommandList(ctx, &goredis.FilterBy{Pattern: "csk.*"}))
	slices.Sort(list)
	eq(t, "COMMAND LIST", strings.Join(list, ","),
		"csk.atomic,csk.begin,csk.clearrange,csk.commit,csk.getkey,csk.range,csk.rangesel,csk.rollback,csk.snapshot,csk.version")
	count := resInt(t, rdb.Do(ctx, "COMMAND", "COUNT"))
	eq(t, "COMMAND COUNT", count, int64(len(cmds)))
	doStrings(t, rdb, "CSK.RANGE")
	doErr(t, rdb, "CSK.RANGE", "LIMIT", "-1")
	stats := res(t, rdb.Info(ctx, "commandstats"))
	if !strings.Contains(stats, "cmdstat_csk.range:calls=2,") || !strings.Contains(stats, "failed_calls=1") {
		t.Fatalf("commandstats: %s", stats)
	}
}

// TestCskModel runs random ordered reads and writes in several databases,
// outside and inside transactions, against a model.
func TestCskModel(t *testing.T) {
	seed := cskTestSeed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	ts := startServer(t, nil)
	ctx := context.Background()
	// Keys outside every database, which no read may return.
	for _, k := range []string{"\xff", "\xff\x00", "\xff\x00b"} {
		if err := ts.db.Set([]byte(k), []byte("stray")); err != nil {
			t.Fatal(err)
		}
	}
	const dbs = 3
	models := make([]map[string]string, dbs)
	clients := make([]*goredis.Client, dbs)
	for db := range dbs {
		models[db] = map[string]string{}
		clients[db] = ts.goRedis(&goredis.Options{DB: db})
	}
	randKey := func(query bool) string {
		n := rng.IntN(4)
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc"[rng.IntN(3)]
		}
		if query && rng.IntN(8) == 0 {
			return "\xff" + string(b)
		}
		return string(b)
	}
	// check runs one random read on d and compares it with model m.
	check := func(where string, d doer, m map[string]string) {
		t.Helper()
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		// pos resolves a selector to an index in keys (-1: before, len: past).
		pos := func(key string, orEqual bool, off int) int {
			i, found := slices.BinarySearch(keys, key)
			if orEqual && found {
				i++
			}
			return i - 1 + off
		}
		opts := func() ([]any, int, bool, bool) {
			var groups [][]any
			limit := 0
			if rng.IntN(2) == 0 {
				limit = rng.IntN(5)
				groups = append(groups, []any{"LIMIT", limit})
			}
			rev, keysOnly := rng.IntN(2) == 0, rng.IntN(2) == 0
			if rev {
				groups = append(groups, []any{"REV"})
			}
			if keysOnly {
				groups = append(groups, []any{"KEYSONLY"})
			}
			rng.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
			return slices.Concat(groups...), limit, rev, keysOnly
		}
		expect := func(sel []string, limit int, rev, keysOnly bool) string {
			if rev {
				sel = slices.Clone(sel)
				slices.Reverse(sel)
			}
			if limit > 0 && len(sel) > limit {
				sel = sel[:limit]
			}
			var out []string
			for _, k := range sel {
				out = append(out, k)
				if !keysOnly {
					out = append(out, m[k])
				}
			}
			return fmt.Sprintf("%q", out)
		}
		switch rng.IntN(3) {
		case 0: // CSK.RANGE
			args := []any{"CSK.RANGE"}
			from, to := "", "\xff\xff\xff\xff"
			hasFrom, hasTo := rng.IntN(2) == 0, rng.IntN(2) == 0
			if hasFrom {
				from = randKey(true)
				args = append(args, "FROM", from)
			}
			if hasTo {
				to = randKey(true)
				args = append(args, "TO", to)
			}
			o, limit, rev, keysOnly := opts()
			args = append(args, o...)
			if hasFrom && hasTo && from > to {
				eq(t, where+fmt.Sprintf(" %q", args), doErr(t, d, args...), "ERR inverted range")
				return
			}
			var sel []string
			for _, k := range keys {
				if k >= from && (!hasTo || k < to) {
					sel = append(sel, k)
				}
			}
			got := fmt.Sprintf("%q", doStrings(t, d, args...))
			if want := expect(sel, limit, rev, keysOnly); got != want {
				t.Fatalf("%s: %q = %s, want %s", where, args, got, want)
			}
		case 1: // CSK.GETKEY
			key, orEqual, off := randKey(true), rng.IntN(2) == 0, rng.IntN(7)-3
			args := []any{"CSK.GETKEY", key, b2i(orEqual), off}
			want := "<nil>"
			switch p := pos(key, orEqual, off); {
			case p < 0:
				want = ""
			case p < len(keys):
				want = keys[p]
			}
			if got := doText(t, d, args...); got != want {
				t.Fatalf("%s: %q = %q, want %q (keys %q)", where, args, got, want, keys)
			}
		case 2: // CSK.RANGESEL
			bk, bo, boff := randKey(true), rng.IntN(2) == 0, rng.IntN(7)-3
			ek, eo, eoff := randKey(true), rng.IntN(2) == 0, rng.IntN(7)-3
			o, limit, rev, keysOnly := opts()
			args := append([]any{"CSK.RANGESEL", bk, b2i(bo), boff, ek, b2i(eo), eoff}, o...)
			clampPos := func(p int) int { return min(max(p, 0), len(keys)) }
			b, e := clampPos(pos(bk, bo, boff)), clampPos(pos(ek, eo, eoff))
			var sel []string
			if b < e {
				sel = keys[b:e]
			}
			got := fmt.Sprintf("%q", doStrings(t, d, args...))
			if want := expect(sel, limit, rev, keysOnly); got != want {
				t.Fatalf("%s: %q = %s, want %s (keys %q)", where, args, got, want, keys)
			}
		}
	}
	// write runs one random write on d and applies it to m.
	write := func(d doer, m map[string]string, db int) {
		t.Helper()
		switch rng.IntN(4) {
		case 0, 1:
			k, v := randKey(db != 0), fmt.Sprint(rng.IntN(1000))
			eq(t, "SET", doText(t, d, "SET", k, v), "OK")
			m[k] = v
		case 2:
			k := randKey(db != 0)
			_, had := m[k]
			eq(t, "DEL", resInt(t, d.Do(ctx, "DEL", k)), int64(b2i(had)))
			delete(m, k)
		case 3:
			from, to := randKey(true), randKey(true)
			if from > to {
				from, to = to, from
			}
			eq(t, "CLEARRANGE", doText(t, d, "CSK.CLEARRANGE", "FROM", from, "TO", to), "OK")
			for k := range m {
				if k >= from && k < to {
					delete(m, k)
				}
			}
		}
	}
	for round := range 400 {
		db := rng.IntN(dbs)
		d := clients[db]
		if rng.IntN(10) > 0 {
			if rng.IntN(3) == 0 {
				write(d, models[db], db)
			} else {
				check(fmt.Sprintf("round %d db %d", round, db), d, models[db])
			}
			continue
		}
		// A transaction: its reads see its own writes.
		conn := clients[db].Conn()
		txm := maps.Clone(models[db])
		eq(t, "BEGIN", doText(t, conn, "CSK.BEGIN"), "OK")
		for i := range 20 {
			if rng.IntN(3) == 0 {
				write(conn, txm, db)
			} else {
				check(fmt.Sprintf("round %d db %d tx step %d", round, db, i), conn, txm)
			}
		}
		// Outside, nothing of it is visible yet.
		check(fmt.Sprintf("round %d db %d outside tx", round, db), d, models[db])
		if rng.IntN(2) == 0 {
			eq(t, "COMMIT", doText(t, conn, "CSK.COMMIT"), "OK")
			models[db] = txm
		} else {
			eq(t, "ROLLBACK", doText(t, conn, "CSK.ROLLBACK"), "OK")
		}
		conn.Close()
	}
	// Every database holds exactly its model.
	for db := range dbs {
		var want []string
		keys := make([]string, 0, len(models[db]))
		for k := range models[db] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			want = append(want, k, models[db][k])
		}
		if got := doStrings(t, clients[db], "CSK.RANGE"); !slices.Equal(got, want) {
			t.Fatalf("db %d: %q, want %q", db, got, want)
		}
	}
	for _, k := range []string{"\xff", "\xff\x00", "\xff\x00b"} {
		if v, err := ts.db.Get([]byte(k)); err != nil || !bytes.Equal(v, []byte("stray")) {
			t.Fatalf("stray key %q: %q %v", k, v, err)
		}
	}
}

// TestCskTxRangeLastDatabase checks range reads in a transaction on the
// last database, whose keys run to the end of the key space: they read
// what the same reads outside a transaction do, and conflict with a later
// write at the end of the database.
func TestCskTxRangeLastDatabase(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.Databases = MaxDatabases })
	ctx := context.Background()
	rdb := ts.goRedis(&goredis.Options{DB: MaxDatabases - 1})
	other := ts.goRedis(&goredis.Options{DB: MaxDatabases - 1})
	res(t, rdb.MSet(ctx, "a", "1", "b", "2", "c", "3", "\xff\xff", "4"))
	conn := rdb.Conn()
	defer conn.Close()
	reads := [][]any{
		{"CSK.RANGE", "KEYSONLY"},
		{"CSK.RANGE", "FROM", "b", "KEYSONLY"},
		{"CSK.RANGE", "REV", "LIMIT", "2", "KEYSONLY"},
		{"CSK.RANGESEL", "b", "0", "1", "\xff\xff\xff", "0", "1", "KEYSONLY"},
		{"CSK.SNAPSHOT", "CSK.RANGE", "FROM", "b", "KEYSONLY"},
	}
	want := []string{"a,b,c,\xff\xff", "b,c,\xff\xff", "\xff\xff,c", "b,c,\xff\xff", "b,c,\xff\xff"}
	for i, r := range reads {
		if r[0] != "CSK.SNAPSHOT" {
			eq(t, fmt.Sprintf("%q outside", r), strings.Join(doStrings(t, rdb, r...), ","), want[i])
		}
		eq(t, "begin", doText(t, conn, "CSK.BEGIN"), "OK")
		eq(t, fmt.Sprintf("%q", r), strings.Join(doStrings(t, conn, r...), ","), want[i])
		eq(t, "rollback", doText(t, conn, "CSK.ROLLBACK"), "OK")
	}
	eq(t, "begin", doText(t, conn, "CSK.BEGIN"), "OK")
	doStrings(t, conn, "CSK.RANGE", "FROM", "c")
	eq(t, "set", doText(t, conn, "SET", "out", "mine"), "OK")
	eq(t, "other set", doText(t, other, "SET", "\xff\xff\xff", "theirs"), "OK")
	if err := conn.Do(ctx, "CSK.COMMIT").Err(); err == nil || err.Error() != conflictErr {
		t.Fatalf("COMMIT after a write at the end of the range = %v, want %s", err, conflictErr)
	}
}

// TestCskTxIncrKeepsTTL: INCR and its kin inside CSK.BEGIN keep the key's
// TTL and memcached flags, as they do outside a transaction and in Redis;
// a key the transaction set itself, or created, gets none.
func TestCskTxIncrKeepsTTL(t *testing.T) {
	ts := startServer(t, nil)
	exp := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if err := ts.db.SetEntry([]byte("n"), []byte("10"), caskade.SetOptions{ExpiresAt: exp, Flags: 7}); err != nil {
		t.Fatal(err)
	}
	if err := ts.db.SetEntry([]byte("m"), []byte("10"), caskade.SetOptions{ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	c := ts.dial()
	c.do(cmd("CSK.BEGIN"), "+OK\r\n")
	c.do(cmd("INCR", "n"), ":11\r\n")
	c.do(cmd("DECRBY", "n", "5"), ":6\r\n")
	c.do(cmd("SET", "m", "1"), "+OK\r\n")
	c.do(cmd("INCR", "m"), ":2\r\n")
	c.do(cmd("INCRBY", "new", "3"), ":3\r\n")
	c.do(cmd("CSK.COMMIT"), "+OK\r\n")
	// INCRBY 0 writes the key too, as in Redis.
	_, before, err := ts.db.Lookup([]byte("n"))
	if err != nil {
		t.Fatal(err)
	}
	c.do(cmd("CSK.BEGIN"), "+OK\r\n")
	c.do(cmd("INCRBY", "n", "0"), ":6\r\n")
	c.do(cmd("CSK.COMMIT"), "+OK\r\n")
	for _, w := range []struct {
		key, val string
		exp      time.Time
		flags    uint32
	}{{"n", "6", exp, 7}, {"m", "2", time.Time{}, 0}, {"new", "3", time.Time{}, 0}} {
		v, info, err := ts.db.Lookup([]byte(w.key))
		if err != nil || string(v) != w.val || !info.ExpiresAt.Equal(w.exp) || info.Flags != w.flags {
			t.Errorf("%s = %q expires %v flags %d (%v), want %q expires %v flags %d",
				w.key, v, info.ExpiresAt, info.Flags, err, w.val, w.exp, w.flags)
		}
		if w.key == "n" && info.Version <= before.Version {
			t.Errorf("INCRBY 0 left n at version %d", info.Version)
		}
	}
}

// A write the engine refuses inside CSK.BEGIN (a key over its size limit)
// gets the error at the command, as outside a transaction, not +OK and an
// error at the next read; the transaction stays failed.
func TestCskTxRefusedWriteRepliesAtOnce(t *testing.T) {
	ts := startServer(t, nil)
	big := strings.Repeat("k", caskade.DefaultMaxKeySize+1)
	const tooLarge = "-ERR key too large (2102 key_too_large): 65537 bytes, limit 65536\r\n"
	c := ts.dial()
	for _, w := range [][]string{
		{"SET", big, "v"},
		{"MSET", "a", "1", big, "v"},
		{"CSK.ATOMIC", "ADD", big, "\x01"},
	} {
		c.do(cmd("CSK.BEGIN"), "+OK\r\n")
		c.do(cmd("SET", "a", "1"), "+OK\r\n")
		c.do(cmd(w...), tooLarge)
		c.do(cmd("GET", "a"), tooLarge)
		c.do(cmd("CSK.COMMIT"), tooLarge)
	}
	c.do(cmd("EXISTS", "a"), ":0\r\n")
}

// TestCskGetkeyLastDatabase checks CSK.GETKEY past the last key of the
// last database, whose keys run to the end of the key space: the engine
// resolves that to the end of the key space, which is no key of the
// database, so the reply is the null bulk string as in the other
// databases, and in a transaction the read conflict runs to the end.
func TestCskGetkeyLastDatabase(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.Databases = MaxDatabases })
	ctx := context.Background()
	rdb := ts.goRedis(&goredis.Options{DB: MaxDatabases - 1})
	other := ts.goRedis(&goredis.Options{DB: MaxDatabases - 1})
	eq(t, "empty", doText(t, rdb, "CSK.GETKEY", "", "0", "1"), "<nil>")
	res(t, rdb.MSet(ctx, "a", "1", "b", "2"))
	eq(t, "after", doText(t, rdb, "CSK.GETKEY", "b", "1", "1"), "<nil>")
	eq(t, "far after", doText(t, rdb, "CSK.GETKEY", "", "0", "9"), "<nil>")
	eq(t, "last", doText(t, rdb, "CSK.GETKEY", "z", "0", "0"), "b")
	res(t, rdb.Set(ctx, "", "empty key", 0))
	eq(t, "the empty key", doText(t, rdb, "CSK.GETKEY", "", "0", "1"), "")

	conn := rdb.Conn()
	defer conn.Close()
	eq(t, "begin", doText(t, conn, "CSK.BEGIN"), "OK")
	eq(t, "tx after", doText(t, conn, "CSK.GETKEY", "b", "1", "1"), "<nil>")
	eq(t, "set", doText(t, conn, "SET", "out", "mine"), "OK")
	eq(t, "other set", doText(t, other, "SET", "zzz", "theirs"), "OK")
	if err := conn.Do(ctx, "CSK.COMMIT").Err(); err == nil || err.Error() != conflictErr {
		t.Fatalf("COMMIT after a key was added past the one GETKEY passed = %v, want %s", err, conflictErr)
	}
}
