package httpapi

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade/server/memcache"
	"github.com/caskade/caskade/server/redis"
	goredis "github.com/redis/go-redis/v9"
)

var crossSeed = flag.Uint64("crossseed", 0, "seed for TestCrossProtocolModel (0: random; or CASKADE_CROSS_SEED)")

// crossItem is the model of one key: what every protocol must show.
type crossItem struct {
	val   string
	flags uint32
	ttl   bool // has an expiry (always far ahead)
}

// TestCrossProtocolModel runs random writes through memcached, Redis and
// HTTP on a few keys and, after each, reads every key back through all
// three, against a model of the value, the memcached flags and whether the
// key has a TTL: a write that changes a value in place, its expiry or its
// key keeps flags and TTL (memcached append, incr, touch, gat; Redis
// APPEND, INCR on its own, in MULTI and in CSK.BEGIN, EXPIRE, PERSIST,
// RENAME), one that sets a new value replaces them.
func TestCrossProtocolModel(t *testing.T) {
	seed := *crossSeed
	if s := os.Getenv("CASKADE_CROSS_SEED"); s != "" && seed == 0 {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -crossseed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 25))

	ts := startServer(t)
	ctx := context.Background()
	serve := func(start func(net.Listener) error, stop func(context.Context) error) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { start(l); close(done) }()
		t.Cleanup(func() {
			c, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			stop(c)
			<-done
		})
		return l.Addr().String()
	}
	mcs := &memcache.Server{DB: ts.db}
	rs := &redis.Server{DB: ts.db}
	mcAddr := serve(mcs.Serve, mcs.Shutdown)
	rAddr := serve(rs.Serve, rs.Shutdown)
	rdb := goredis.NewClient(&goredis.Options{Addr: rAddr})
	t.Cleanup(func() { rdb.Close() })
	tx := rdb.Conn() // for CSK.BEGIN, which belongs to a connection
	t.Cleanup(func() { tx.Close() })
	nc, err := net.Dial("tcp", mcAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	br := bufio.NewReader(nc)
	mc := func(req string) string {
		t.Helper()
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	keys := []string{"a", "b", "c"}
	vals := []string{"1", "42", "007", "abc", "x y", "18446744073709551615"}
	model := map[string]crossItem{}
	isUint := func(s string) (uint64, bool) {
		// As memcached reads it (strtoull): leading spaces, an optional
		// '+', digits, then the end, a space or a NUL.
		s = strings.TrimLeft(s, " \t\n\v\f\r")
		s = strings.TrimPrefix(s, "+")
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 || (i < len(s) && !strings.ContainsRune(" \t\n\v\f\r\x00", rune(s[i]))) {
			return 0, false
		}
		n, err := strconv.ParseUint(s[:i], 10, 64)
		return n, err == nil
	}
	isInt := func(s string) (int64, bool) {
		if len(s) > 1 && s[0] == '0' {
			return 0, false // Redis takes no leading zeros
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	const steps = 300
	for step := range steps {
		k, v := keys[r.IntN(len(keys))], vals[r.IntN(len(vals))]
		cur, ok := model[k]
		var what string
		switch op := r.IntN(21); op {
		case 13: // memcached prepend
			what = fmt.Sprintf("prepend %s %q", k, v)
			got := mc(fmt.Sprintf("prepend %s 0 0 %d\r\n%s\r\n", k, len(v), v))
			if ok {
				cur.val = v + cur.val
				model[k] = cur
			}
			if want := map[bool]string{true: "STORED\r\n", false: "NOT_STORED\r\n"}[ok]; got != want {
				t.Fatalf("step %d %s: %q, want %q", step, what, got, want)
			}
		case 14: // memcached decr
			what = "decr " + k
			got := mc("decr " + k + " 3\r\n")
			n, num := isUint(cur.val)
			switch {
			case !ok:
			case !num:
			default:
				if n < 3 {
					n = 3
				}
				cur.val = strconv.FormatUint(n-3, 10)
				model[k] = cur
				if got != cur.val+"\r\n" {
					t.Fatalf("step %d %s: %q, want %q", step, what, got, cur.val)
				}
			}
		case 15: // Redis SETRANGE
			what = "SETRANGE " + k + " 1 " + v
			if err := rdb.SetRange(ctx, k, 1, v).Err(); err != nil {
				t.Fatal(err)
			}
			b := []byte(cur.val)
			if len(b) < 1+len(v) {
				b = append(b, make([]byte, 1+len(v)-len(b))...)
			}
			copy(b[1:], v)
			cur.val = string(b)
			model[k] = cur
		case 16: // Redis COPY REPLACE
			k2 := keys[r.IntN(len(keys))]
			what = "COPY " + k + " " + k2
			err := rdb.Copy(ctx, k, k2, 0, true).Err()
			if ok && k2 != k {
				model[k2] = cur
			}
			_ = err
		case 17: // Redis GETEX
			if r.IntN(2) == 0 {
				what = "GETEX PERSIST " + k
				rdb.GetEx(ctx, k, 0)
				rdb.Do(ctx, "GETEX", k, "PERSIST")
				cur.ttl = false
			} else {
				what = "GETEX EX " + k
				rdb.GetEx(ctx, k, 1000*time.Second)
				cur.ttl = true
			}
			if ok {
				model[k] = cur
			}
		case 18: // meta: ma, or mg with T
			if r.IntN(2) == 0 {
				what = "ma " + k
				got := mc("ma " + k + "\r\n")
				n, num := isUint(cur.val)
				if ok && num {
					cur.val = strconv.FormatUint(n+1, 10)
					model[k] = cur
					if got != "HD\r\n" {
						t.Fatalf("step %d %s: %q", step, what, got)
					}
				}
			} else {
				what = "mg T " + k
				mc("mg " + k + " T1000\r\n")
				if ok {
					cur.ttl = true
					model[k] = cur
				}
			}
		case 19: // HTTP txn put
			flags := r.IntN(3)
			ttl := r.IntN(2) == 0
			body := fmt.Sprintf(`{"success":[{"put":{"key":%q,"value":%q,"flags":%d,"ttl":%d}}]}`, k, v, flags, map[bool]int{true: 1000}[ttl])
			what = "txn " + body
			ts.do(t, "POST", "/v1/txn", body).want(t, 200, "")
			model[k] = crossItem{v, uint32(flags), ttl}
		case 20: // Redis SET KEEPTTL
			what = "SET KEEPTTL " + k
			if err := rdb.Set(ctx, k, v, goredis.KeepTTL).Err(); err != nil {
				t.Fatal(err)
			}
			model[k] = crossItem{val: v, ttl: ok && cur.ttl}
		case 0: // memcached set
			flags, exp := uint32(r.IntN(3)), 0
			if r.IntN(2) == 0 {
				exp = 1000
			}
			what = fmt.Sprintf("set %s %d %d %q", k, flags, exp, v)
			if got := mc(fmt.Sprintf("set %s %d %d %d\r\n%s\r\n", k, flags, exp, len(v), v)); got != "STORED\r\n" {
				t.Fatalf("step %d %s: %q", step, what, got)
			}
			model[k] = crossItem{v, flags, exp != 0}
		case 1: // memcached append
			what = fmt.Sprintf("append %s %q", k, v)
			got := mc(fmt.Sprintf("append %s 0 0 %d\r\n%s\r\n", k, len(v), v))
			if ok {
				cur.val += v
				model[k] = cur
			}
			if want := map[bool]string{true: "STORED\r\n", false: "NOT_STORED\r\n"}[ok]; got != want {
				t.Fatalf("step %d %s: %q, want %q", step, what, got, want)
			}
		case 2: // memcached incr
			what = "incr " + k
			got := mc("incr " + k + " 5\r\n")
			n, num := isUint(cur.val)
			switch {
			case !ok:
				if got != "NOT_FOUND\r\n" {
					t.Fatalf("step %d %s: %q", step, what, got)
				}
			case !num:
				if !strings.HasPrefix(got, "CLIENT_ERROR") {
					t.Fatalf("step %d %s on %q: %q", step, what, cur.val, got)
				}
			default:
				cur.val = strconv.FormatUint(n+5, 10)
				model[k] = cur
				if got != cur.val+"\r\n" {
					t.Fatalf("step %d %s: %q, want %q", step, what, got, cur.val)
				}
			}
		case 3: // memcached touch
			exp := map[bool]int{true: 1000, false: 0}[r.IntN(2) == 0]
			what = fmt.Sprintf("touch %s %d", k, exp)
			got := mc(fmt.Sprintf("touch %s %d\r\n", k, exp))
			if ok {
				cur.ttl = exp != 0
				model[k] = cur
			}
			if want := map[bool]string{true: "TOUCHED\r\n", false: "NOT_FOUND\r\n"}[ok]; got != want {
				t.Fatalf("step %d %s: %q, want %q", step, what, got, want)
			}
		case 4: // memcached delete
			what = "delete " + k
			mc("delete " + k + "\r\n")
			delete(model, k)
		case 5: // Redis SET
			what = "SET " + k
			if err := rdb.Set(ctx, k, v, 0).Err(); err != nil {
				t.Fatal(err)
			}
			model[k] = crossItem{val: v}
		case 6: // Redis APPEND
			what = "APPEND " + k
			if err := rdb.Append(ctx, k, v).Err(); err != nil {
				t.Fatal(err)
			}
			cur.val += v
			model[k] = cur
		case 7: // Redis EXPIRE / PERSIST
			if r.IntN(2) == 0 {
				what = "EXPIRE " + k
				rdb.Expire(ctx, k, 1000*time.Second)
				cur.ttl = true
			} else {
				what = "PERSIST " + k
				rdb.Persist(ctx, k)
				cur.ttl = false
			}
			if ok {
				model[k] = cur
			}
		case 8: // Redis INCR, on its own or in MULTI
			what = "INCR " + k
			var err error
			switch r.IntN(3) {
			case 0:
				err = rdb.Incr(ctx, k).Err()
			case 1:
				_, err = rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error { p.Incr(ctx, k); return nil })
			default: // in an interactive transaction
				what = "CSK.BEGIN INCR " + k
				if err = tx.Do(ctx, "CSK.BEGIN").Err(); err != nil {
					t.Fatal(err)
				}
				err = tx.Incr(ctx, k).Err()
				if err := tx.Do(ctx, "CSK.COMMIT").Err(); err != nil {
					t.Fatal(err)
				}
			}
			n, num := isInt(cur.val)
			switch {
			case !ok:
				model[k] = crossItem{val: "1"}
			case num && n < 1<<62:
				cur.val = strconv.FormatInt(n+1, 10)
				model[k] = cur
			default:
				if err == nil {
					t.Fatalf("step %d INCR of %q succeeded", step, cur.val)
				}
				err = nil
			}
			if err != nil {
				t.Fatalf("step %d %s: %v", step, what, err)
			}
		case 9: // Redis RENAME
			k2 := keys[r.IntN(len(keys))]
			what = "RENAME " + k + " " + k2
			err := rdb.Rename(ctx, k, k2).Err()
			if ok {
				if err != nil {
					t.Fatal(err)
				}
				delete(model, k)
				model[k2] = cur
			}
		case 10: // HTTP PUT
			flags := r.IntN(3)
			q := "?flags=" + strconv.Itoa(flags)
			ttl := r.IntN(2) == 0
			if ttl {
				q += "&ttl=1000"
			}
			what = "PUT " + k + q
			ts.do(t, "PUT", "/v1/kv/"+k+q, v)
			model[k] = crossItem{v, uint32(flags), ttl}
		case 11: // HTTP DELETE
			what = "DELETE " + k
			ts.do(t, "DELETE", "/v1/kv/"+k, "")
			delete(model, k)
		case 12: // memcached gat
			what = "gat 1000 " + k
			got := mc("gat 1000 " + k + "\r\n")
			if ok {
				br.ReadString('\n')
				br.ReadString('\n')
				cur.ttl = true
				model[k] = cur
				_ = got
			}
		}
		// Every key, through every protocol.
		for _, key := range keys {
			want, exists := model[key]
			ctxt := fmt.Sprintf("seed %d step %d after %s: key %s", seed, step, what, key)
			// Redis
			rv, err := rdb.Get(ctx, key).Result()
			switch {
			case !exists && !errors.Is(err, goredis.Nil):
				t.Fatalf("%s: Redis GET %q %v, want nil", ctxt, rv, err)
			case exists && (err != nil || rv != want.val):
				t.Fatalf("%s: Redis GET %q %v, want %q", ctxt, rv, err, want.val)
			}
			if exists {
				ttl := rdb.TTL(ctx, key).Val()
				if (ttl > 0) != want.ttl {
					t.Fatalf("%s: Redis TTL %v, want ttl %v", ctxt, ttl, want.ttl)
				}
			}
			// memcached
			got := mc("mg " + key + " v f t\r\n")
			if !exists {
				if got != "EN\r\n" {
					t.Fatalf("%s: mg %q", ctxt, got)
				}
			} else {
				val, _ := br.ReadString('\n')
				var size, f, tt int64
				if _, err := fmt.Sscanf(got, "VA %d f%d t%d\r\n", &size, &f, &tt); err != nil ||
					val != want.val+"\r\n" || uint32(f) != want.flags || (tt > 0) != want.ttl {
					t.Fatalf("%s: mg %q %q, want %+v", ctxt, got, val, want)
				}
			}
			// HTTP
			hr := ts.do(t, "GET", "/v1/kv/"+key, "")
			if !exists {
				if hr.status != 404 {
					t.Fatalf("%s: HTTP %d %q", ctxt, hr.status, hr.body)
				}
				continue
			}
			if hr.status != 200 || hr.body != want.val || hr.header.Get(HeaderFlags) != strconv.Itoa(int(want.flags)) ||
				(hr.header.Get("Caskade-Expires-At") != "") != want.ttl {
				t.Fatalf("%s: HTTP %d %q flags %s expires %q, want %+v", ctxt, hr.status, hr.body,
					hr.header.Get(HeaderFlags), hr.header.Get("Caskade-Expires-At"), want)
			}
		}
	}
}
