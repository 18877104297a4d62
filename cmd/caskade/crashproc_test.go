package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/caskade/caskade"
	goredis "github.com/redis/go-redis/v9"
)

// The kill -9 tests run "caskade serve" as a real process (this test
// binary, re-executed with crashChildEnv set), drive it over Redis,
// memcached and HTTP, kill it with SIGKILL in the middle of the work, and
// check, after a restart on the same directory, that every acknowledged
// write is there and nothing else.

const (
	// crashChildEnv makes the test binary run its arguments as the
	// caskade command instead of the tests.
	crashChildEnv = "CASKADE_CRASHPROC_CHILD"
	// crashOptsEnv carries database options for the child:
	// "maxfile=N,merge=DURATION".
	crashOptsEnv = "CASKADE_CRASHPROC_OPTS"
)

var (
	crashSeed   = flag.Uint64("crash.seed", 0, "seed of TestKillNine (0: random)")
	crashRounds = flag.Int("crash.rounds", 0, "kills in TestKillNine (0: 6, or $CASKADE_CRASH_ROUNDS)")
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(crashChild(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// crashChild runs the caskade command as main does, printing the
// addresses it serves on standard output once it listens.
func crashChild(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h := &hooks{ready: func(addrs []net.Addr) {
		var s []string
		for _, a := range addrs {
			s = append(s, a.String())
		}
		fmt.Printf("READY %s\n", strings.Join(s, " "))
	}}
	if o := os.Getenv(crashOptsEnv); o != "" {
		h.options = func(opts *caskade.Options) {
			for _, kv := range strings.Split(o, ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "maxfile":
					opts.MaxFileSize, _ = strconv.ParseInt(v, 10, 64)
				case "merge":
					opts.MergeInterval, _ = time.ParseDuration(v)
					// Merge whatever is dead, as soon as anything is.
					opts.MergeMinDeadBytes = 1
					opts.MergeDeadRatio = 0.05
					opts.MergeFileDeadRatio = 0.05
				}
			}
		}
	}
	root := newRootCmd(h)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "caskade:", err)
		return 1
	}
	return 0
}

// crashServer is a caskade serve process.
type crashServer struct {
	cmd                   *exec.Cmd
	redis, memcache, http string
	log                   *syncBuffer
	exited                chan struct{}
}

// startCrashServer starts serve on dir and waits until it listens; with
// killAfter > 0, it kills it that long after starting it instead (while
// it opens the database, or soon after) and returns nil.
func startCrashServer(t *testing.T, dir, sync, opts string, killAfter time.Duration) *crashServer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--dir", dir, "--sync", sync,
		"--redis-addr", "127.0.0.1:0", "--memcache-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--event-loops", "1")
	cmd.Env = append(os.Environ(), crashChildEnv+"=1", crashOptsEnv+"="+opts)
	s := &crashServer{cmd: cmd, log: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = s.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- line
			}
		}
		close(ready)
	}()
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.exited
	})
	if killAfter > 0 {
		time.Sleep(killAfter)
		s.kill()
		return nil
	}
	select {
	case line, ok := <-ready:
		if !ok {
			<-s.exited
			t.Fatalf("serve on %s (sync %s, %q) did not start: %v\nlog:\n%s", dir, sync, opts, cmd.ProcessState, s.log)
		}
		a := strings.Fields(line)
		if len(a) != 3 {
			t.Fatalf("serve listens on %q", line)
		}
		s.redis, s.memcache, s.http = a[0], a[1], a[2]
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not start in a minute\nlog:\n%s", s.log)
	}
	return s
}

func (s *crashServer) kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// crashEffect is one key's change by an operation.
type crashEffect struct {
	key   string
	del   bool
	incr  int64 // add to the decimal value (absent: 0)
	value string
	px    int64 // a set's TTL in milliseconds (0: none)
}

// crashOp is what one acknowledged or unacknowledged request does, all
// or nothing.
type crashOp struct {
	desc    string
	sent    int64 // Unix ms when it was sent
	effects []crashEffect
}

// crashVal is a key's value and when it expires: not before expLo and
// not after expHi (Unix ms; 0: never).
type crashVal struct {
	v            string
	expLo, expHi int64
}

// applyOp applies op, done by the Unix ms time done, to state.
func applyOp(state map[string]crashVal, op crashOp, done int64) {
	for _, e := range op.effects {
		switch {
		case e.del:
			delete(state, e.key)
		case e.incr != 0:
			cur := state[e.key]
			n, _ := strconv.ParseInt(cur.v, 10, 64)
			cur.v = strconv.FormatInt(n+e.incr, 10)
			state[e.key] = cur
		case e.px > 0:
			state[e.key] = crashVal{v: e.value, expLo: op.sent + e.px, expHi: done + e.px}
		default:
			state[e.key] = crashVal{v: e.value}
		}
	}
}

// crashWorker owns a few keys and sends one request (or one pipeline) at
// a time, through one protocol per request.
type crashWorker struct {
	id    int
	rng   *rand.Rand
	keys  []string
	state map[string]crashVal // with every acknowledged operation applied
	// pending are the operations sent and not acknowledged when the
	// server died, in the order it commits them: after the restart, some
	// prefix of them is applied.
	pending []crashOp
	seq     int
	ops     int      // acknowledged
	hist    []string // the last requests, for failure reports

	rdb  *goredis.Client
	mc   net.Conn
	mcr  *bufio.Reader
	http *http.Client
	srv  *crashServer
}

func (w *crashWorker) value() string {
	w.seq++
	v := fmt.Sprintf("w%d.%d.", w.id, w.seq)
	n := w.rng.IntN(64)
	switch w.rng.IntN(64) {
	case 0, 1, 2, 3:
		n = 1000 + w.rng.IntN(8000)
	case 4:
		// Over 64 KiB: written with pwrite where smaller commits are
		// copied into a mapping.
		n = 64<<10 + w.rng.IntN(64<<10)
	}
	return v + strings.Repeat(string(rune('a'+w.seq%26)), n)
}

func (w *crashWorker) key() string { return w.keys[w.rng.IntN(len(w.keys)-1)] }
func (w *crashWorker) counter() string {
	return w.keys[len(w.keys)-1]
}

// run sends requests until one fails, which happens once the server is
// killed: what was sent and not acknowledged is left in w.pending.
func (w *crashWorker) run(ctx context.Context, killed *atomic.Bool) error {
	for {
		if err := w.step(ctx); err != nil {
			if !killed.Load() {
				return err
			}
			return nil
		}
	}
}

func (w *crashWorker) step(ctx context.Context) error {
	set := func(k, v string) crashEffect { return crashEffect{key: k, value: v} }
	del := func(k string) crashEffect { return crashEffect{key: k, del: true} }
	incr := func(k string, n int64) crashEffect { return crashEffect{key: k, incr: n} }
	one := func(desc string, e ...crashEffect) []crashOp { return []crashOp{{desc: desc, effects: e}} }
	var ops []crashOp
	var send func() (acked int, err error)
	switch r := w.rng.IntN(18); r {
	case 0, 1:
		k, v := w.key(), w.value()
		ops = one("redis SET "+k, set(k, v))
		send = func() (int, error) { return redisAcked(w.rdb.Set(ctx, k, v, 0).Err()) }
	case 16:
		// A range delete of the worker's keys but its counter.
		var e []crashEffect
		for _, k := range w.keys[:len(w.keys)-1] {
			e = append(e, del(k))
		}
		from, to := fmt.Sprintf("w%d:k", w.id), fmt.Sprintf("w%d:l", w.id)
		ops = one("redis CSK.CLEARRANGE "+from+" "+to, e...)
		send = func() (int, error) { return redisAcked(w.rdb.Do(ctx, "CSK.CLEARRANGE", "FROM", from, "TO", to).Err()) }
	case 17:
		// An interactive transaction.
		k1, k2, v := w.keys[0], w.key(), w.value()
		ops = one("redis CSK.BEGIN "+k1+" "+k2, set(k1, v), incr(w.counter(), 2), del(k2))
		send = func() (int, error) {
			c := w.rdb.Conn()
			defer c.Close()
			if err := c.Do(ctx, "CSK.BEGIN").Err(); err != nil {
				return 0, err
			}
			if err := c.Set(ctx, k1, v, 0).Err(); err != nil {
				return 0, err
			}
			if err := c.IncrBy(ctx, w.counter(), 2).Err(); err != nil {
				return 0, err
			}
			if err := c.Del(ctx, k2).Err(); err != nil {
				return 0, err
			}
			err := c.Do(ctx, "CSK.COMMIT").Err()
			if err != nil && strings.HasPrefix(err.Error(), "CONFLICT ") {
				// Not committed: a key it read (k2, by DEL) expired
				// meanwhile, which counts as a change.
				return 0, errNotCommitted
			}
			return redisAcked(err)
		}
	case 15:
		// A TTL: short, to expire before the restart reads it, or long.
		k, v, px := w.key(), w.value(), int64(1+w.rng.IntN(40))
		if w.rng.IntN(2) == 0 {
			px = 3600_000
		}
		ops = one(fmt.Sprintf("redis SET %s PX %d", k, px), crashEffect{key: k, value: v, px: px})
		send = func() (int, error) {
			return redisAcked(w.rdb.Set(ctx, k, v, time.Duration(px)*time.Millisecond).Err())
		}
	case 2:
		k := w.counter()
		ops = one("redis INCRBY "+k, incr(k, 3))
		send = func() (int, error) { return redisAcked(w.rdb.IncrBy(ctx, k, 3).Err()) }
	case 3:
		k1, k2, v1, v2 := w.keys[0], w.keys[1+w.rng.IntN(len(w.keys)-2)], w.value(), w.value()
		ops = one("redis MSET "+k1+" "+k2, set(k1, v1), set(k2, v2))
		send = func() (int, error) { return redisAcked(w.rdb.MSet(ctx, k1, v1, k2, v2).Err()) }
	case 4:
		k := w.key()
		ops = one("redis DEL "+k, del(k))
		send = func() (int, error) { return redisAcked(w.rdb.Del(ctx, k).Err()) }
	case 5:
		k1, k2, k3, v := w.key(), w.key(), w.key(), w.value()
		ops = one("redis EXEC "+k1+" "+k2+" "+k3, set(k1, v), incr(w.counter(), 1), del(k2), set(k3, v+"x"))
		send = func() (int, error) {
			_, err := w.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.Set(ctx, k1, v, 0)
				p.Incr(ctx, w.counter())
				p.Del(ctx, k2)
				p.Set(ctx, k3, v+"x", 0)
				return nil
			})
			return redisAcked(err)
		}
	case 6:
		// A pipeline of plain writes: each its own commit, in one group.
		n := 2 + w.rng.IntN(6)
		type kv struct{ k, v string }
		var kvs []kv
		for range n {
			k, v := w.key(), w.value()
			kvs = append(kvs, kv{k, v})
			ops = append(ops, crashOp{desc: "redis pipelined SET " + k, effects: []crashEffect{set(k, v)}})
		}
		send = func() (int, error) {
			cmds, _ := w.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for _, x := range kvs {
					p.Set(ctx, x.k, x.v, 0)
				}
				return nil
			})
			for i, c := range cmds {
				if err := c.Err(); err != nil {
					return i, err
				}
			}
			return len(cmds), nil
		}
	case 7, 8:
		k, v := w.key(), w.value()
		ops = one("memcached set "+k, set(k, v))
		send = func() (int, error) {
			return w.memcached(fmt.Sprintf("set %s 5 0 %d\r\n%s\r\n", k, len(v), v), "STORED")
		}
	case 9:
		k := w.counter()
		if _, ok := w.state[k]; !ok {
			return nil // memcached incr does not create
		}
		ops = one("memcached incr "+k, incr(k, 7))
		send = func() (int, error) {
			n, _ := strconv.ParseInt(w.state[k].v, 10, 64)
			return w.memcached(fmt.Sprintf("incr %s 7\r\n", k), strconv.FormatInt(n+7, 10))
		}
	case 10:
		k := w.key()
		ops = one("memcached delete "+k, del(k))
		send = func() (int, error) {
			want := "NOT_FOUND"
			now := time.Now().UnixMilli()
			if cur, ok := w.state[k]; ok && (cur.expHi == 0 || now+60_000 < cur.expLo) {
				want = "DELETED"
			} else if ok && now <= cur.expHi {
				// It may expire before the server runs the delete.
				want = ""
			}
			return w.memcached("delete "+k+"\r\n", want, "DELETED", "NOT_FOUND")
		}
	case 11:
		// A memcached pipeline of sets, each its own commit.
		n := 2 + w.rng.IntN(6)
		var b strings.Builder
		for range n {
			k, v := w.key(), w.value()
			fmt.Fprintf(&b, "set %s 0 0 %d\r\n%s\r\n", k, len(v), v)
			ops = append(ops, crashOp{desc: "memcached pipelined set " + k, effects: []crashEffect{set(k, v)}})
		}
		send = func() (int, error) {
			if _, err := io.WriteString(w.mc, b.String()); err != nil {
				return 0, err
			}
			for i := range n {
				line, err := w.mcr.ReadString('\n')
				if err != nil {
					return i, err
				}
				if line != "STORED\r\n" {
					return i, fmt.Errorf("memcached pipelined set: %q", line)
				}
			}
			return n, nil
		}
	case 12:
		k, v := w.key(), w.value()
		ops = one("http PUT "+k, set(k, v))
		send = func() (int, error) {
			return w.httpDo(ctx, "PUT", "/v1/kv/"+k, v, http.StatusCreated, http.StatusNoContent)
		}
	case 13:
		k := w.key()
		ops = one("http DELETE "+k, del(k))
		send = func() (int, error) {
			return w.httpDo(ctx, "DELETE", "/v1/kv/"+k, "", http.StatusNoContent, http.StatusNotFound)
		}
	case 14:
		p := w.rng.Perm(len(w.keys) - 1)
		k1, k2, k3, v1, v2 := w.keys[p[0]], w.keys[p[1]], w.keys[p[2]], w.value(), w.value()
		ops = one("http txn "+k1+" "+k2+" "+k3, set(k1, v1), del(k2), set(k3, v2))
		body, _ := json.Marshal(map[string]any{"success": []any{
			map[string]any{"put": map[string]string{"key": k1, "value": v1}},
			map[string]any{"delete": map[string]string{"key": k2}},
			map[string]any{"put": map[string]string{"key": k3, "value": v2}},
		}})
		send = func() (int, error) {
			return w.httpDo(ctx, "POST", "/v1/txn", string(body), http.StatusOK)
		}
	}
	now := time.Now().UnixMilli()
	for i := range ops {
		ops[i].sent = now
	}
	acked, err := send()
	if err == errNotCommitted {
		return nil
	}
	done := time.Now().UnixMilli()
	for i, op := range ops {
		if len(w.hist) == 20 {
			w.hist = w.hist[1:]
		}
		w.hist = append(w.hist, fmt.Sprintf("%d: %s %v acked=%v", op.sent, op.desc, op.effects, i < acked))
	}
	for _, op := range ops[:acked] {
		applyOp(w.state, op, done)
		w.ops++
	}
	if err != nil {
		w.pending = ops[acked:]
		return fmt.Errorf("%s: %w (at %d; the worker's last requests:\n%s)", ops[acked].desc, err, done, strings.Join(w.hist, "\n"))
	}
	return nil
}

// errNotCommitted is a send's error for a request refused as a whole.
var errNotCommitted = errors.New("not committed")

func redisAcked(err error) (int, error) {
	if err != nil {
		return 0, err
	}
	return 1, nil
}

// memcached sends req and reads a one-line reply: want, or if want is
// empty, any of alts.
func (w *crashWorker) memcached(req, want string, alts ...string) (int, error) {
	if _, err := io.WriteString(w.mc, req); err != nil {
		return 0, err
	}
	line, err := w.mcr.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if want == "" {
		for _, a := range alts {
			if line == a+"\r\n" {
				return 1, nil
			}
		}
	}
	if line != want+"\r\n" {
		return 0, fmt.Errorf("replied %q, want %q", line, want)
	}
	return 1, nil
}

func (w *crashWorker) httpDo(ctx context.Context, method, path, body string, want ...int) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+w.srv.http+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	for _, s := range want {
		if resp.StatusCode == s {
			if method == "POST" && !bytes.Contains(b, []byte(`"succeeded":true`)) {
				return 0, fmt.Errorf("txn replied %s", b)
			}
			return 1, nil
		}
	}
	return 0, fmt.Errorf("replied %d %s", resp.StatusCode, b)
}

func (w *crashWorker) connect(t *testing.T, srv *crashServer) {
	t.Helper()
	w.srv = srv
	w.rdb = goredis.NewClient(&goredis.Options{Addr: srv.redis, MaxRetries: -1, PoolSize: 1,
		DialTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	mc, err := net.Dial("tcp", srv.memcache)
	if err != nil {
		t.Fatal(err)
	}
	w.mc, w.mcr = mc, bufio.NewReader(mc)
	w.http = &http.Client{Transport: &http.Transport{DisableKeepAlives: w.rng.IntN(2) == 0}}
}

func (w *crashWorker) disconnect() {
	w.rdb.Close()
	w.mc.Close()
	w.http.CloseIdleConnections()
}

// verify checks what the restarted server holds for w's keys: its
// acknowledged state with some prefix of its pending operations applied.
func (w *crashWorker) verify(got *crashRead) error {
	for n := 0; n <= len(w.pending); n++ {
		want := make(map[string]crashVal, len(w.state))
		for k, v := range w.state {
			want[k] = v
		}
		for _, op := range w.pending[:n] {
			// The server died before the read began.
			applyOp(want, op, got.start)
		}
		if got.matches(want, w.keys) {
			w.state = want
			w.pending = nil
			return nil
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "worker %d: after the restart, its keys hold neither the acknowledged state nor it with some of the unacknowledged operations applied", w.id)
	for _, k := range w.keys {
		g, gok := got.vals[k]
		v, vok := w.state[k]
		if !got.matches(map[string]crashVal{k: v}, []string{k}) {
			fmt.Fprintf(&b, "\n  %s: acknowledged %s (expiring in [%d, %d] ms from the read), got %s (pttl %d)",
				k, showVal(v.v, vok), v.expLo-got.start, v.expHi-got.start, showVal(g, gok), got.pttl[k])
		}
	}
	for _, op := range w.pending {
		fmt.Fprintf(&b, "\n  unacknowledged: %s %v", op.desc, op.effects)
	}
	return errors.New(b.String())
}

func showVal(v string, ok bool) string {
	if !ok {
		return "(absent)"
	}
	if len(v) > 24 {
		return fmt.Sprintf("%q... (%d bytes)", v[:24], len(v))
	}
	return strconv.Quote(v)
}

// crashRead is what a restarted server holds, read between the Unix ms
// times start and end.
type crashRead struct {
	start, end int64
	vals       map[string]string
	pttl       map[string]int64
}

// matches reports whether the keys hold what want says, given when they
// were read.
func (got *crashRead) matches(want map[string]crashVal, keys []string) bool {
	for _, k := range keys {
		g, gok := got.vals[k]
		v, vok := want[k]
		switch {
		case !vok || v.expHi != 0 && v.expHi < got.start:
			if gok {
				return false
			}
		case v.expHi == 0:
			if !gok || g != v.v || got.pttl[k] != -1 {
				return false
			}
		case v.expLo > got.end:
			if !gok || g != v.v || got.pttl[k] <= 0 {
				return false
			}
		default: // it may have expired meanwhile
			if gok && g != v.v {
				return false
			}
		}
	}
	return true
}

// crashReadAll reads every key of the restarted server, and its TTL,
// over Redis.
func crashReadAll(ctx context.Context, addr string) (*crashRead, error) {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	got := &crashRead{start: time.Now().UnixMilli(), vals: map[string]string{}, pttl: map[string]int64{}}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		return nil, err
	}
	p := rdb.Pipeline()
	gets := make([]*goredis.StringCmd, len(keys))
	ttls := make([]*goredis.DurationCmd, len(keys))
	for i, k := range keys {
		gets[i] = p.Get(ctx, k)
		ttls[i] = p.PTTL(ctx, k)
	}
	if len(keys) > 0 {
		if _, err := p.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
			return nil, err
		}
	}
	got.end = time.Now().UnixMilli()
	for i, k := range keys {
		if v, err := gets[i].Result(); err == nil {
			got.vals[k] = v
			d := ttls[i].Val()
			if d > 0 {
				got.pttl[k] = d.Milliseconds()
				if got.pttl[k] == 0 {
					got.pttl[k] = 1
				}
			} else {
				got.pttl[k] = int64(d) // -1 (no TTL) or -2 (gone)
			}
		}
	}
	return got, nil
}

// crashCheck runs "caskade check" on the directory of a killed server;
// with clean, of one that shut down, which leaves no torn tail either.
func crashCheck(t *testing.T, dir string, clean bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "check", dir)
	cmd.Env = append(os.Environ(), crashChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "damaged:") || strings.Contains(string(out), "bad hint file:") ||
		clean && strings.Contains(string(out), "torn tail:") {
		t.Fatalf("caskade check %s after kill -9: %v\n%s", dir, err, out)
	}
	// Every backup that BGSAVE finished (it has its manifest) restores:
	// its files are the ones the manifest lists, and verify.
	done, _ := filepath.Glob(filepath.Join(dir, "backups", "*", caskade.ManifestName))
	for _, m := range done {
		b := filepath.Dir(m)
		cmd := exec.Command(os.Args[0], "restore", b, filepath.Join(t.TempDir(), "restored"))
		cmd.Env = append(os.Environ(), crashChildEnv+"=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("caskade restore %s after kill -9: %v\n%s", b, err, out)
		}
	}
}

// TestKillNine kills a real caskade serve with SIGKILL while clients of
// all three protocols write, several times over one directory, sometimes
// during a merge (BGREWRITEAOF or an automatic one), a backup (BGSAVE),
// a file rotation (a small MaxFileSize) or a graceful shutdown, and
// checks after each restart that the database opens without salvage,
// caskade check finds it clean, every acknowledged write is there, no
// write that was never sent is, and each multi-key write (MSET, EXEC, a
// txn) is all there or not at all. A kill -9 is a crash of the process
// alone, so under every sync policy nothing acknowledged may be lost.
// CASKADE_CRASH_ROUNDS=N (or -crash.rounds) runs it longer, -crash.seed
// replays a seed (the kills land elsewhere: the timing is the machine's),
// and CASKADE_CRASH_DIR=D keeps the database in D/db-<seed> for a look
// after a failure.
func TestKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills servers")
	}
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -crash.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	rounds := *crashRounds
	if rounds == 0 {
		rounds = 6
		if s := os.Getenv("CASKADE_CRASH_ROUNDS"); s != "" {
			rounds, _ = strconv.Atoi(s)
		}
	}
	const nworkers = 4
	dir := t.TempDir() + "/db"
	if keep := os.Getenv("CASKADE_CRASH_DIR"); keep != "" {
		// Kept after the test, to look into a failure.
		dir = fmt.Sprintf("%s/db-%d", keep, seed)
	}
	workers := make([]*crashWorker, nworkers)
	for i := range workers {
		w := &crashWorker{id: i, rng: rand.New(rand.NewPCG(seed, uint64(i+2))), state: map[string]crashVal{}}
		for j := range 6 {
			w.keys = append(w.keys, fmt.Sprintf("w%d:k%d", i, j))
		}
		w.keys = append(w.keys, fmt.Sprintf("w%d:n", i))
		workers[i] = w
	}
	ctx := context.Background()
	for round := 0; round <= rounds; round++ {
		policy := []string{"always", "everysec", "none"}[rng.IntN(3)]
		var opts []string
		if rng.IntN(2) == 0 {
			opts = append(opts, fmt.Sprintf("maxfile=%d", 16<<10+rng.IntN(64<<10)))
		}
		if rng.IntN(2) == 0 {
			opts = append(opts, fmt.Sprintf("merge=%dms", 5+rng.IntN(50)))
		}
		if round > 0 && rng.IntN(5) == 0 {
			// Kill it while it opens the database.
			d := time.Duration(1+rng.IntN(100)) * time.Millisecond
			startCrashServer(t, dir, policy, strings.Join(opts, ","), d)
			t.Logf("round %d: killed %v after starting", round, d)
			crashCheck(t, dir, false)
		}
		srv := startCrashServer(t, dir, policy, strings.Join(opts, ","), 0)
		if strings.Contains(srv.log.String(), "salvag") {
			t.Fatalf("round %d: the database opened with salvage:\n%s", round, srv.log)
		}
		got, err := crashReadAll(ctx, srv.redis)
		if err != nil {
			t.Fatalf("round %d: reading back: %v", round, err)
		}
		known := map[string]bool{}
		for _, w := range workers {
			for _, k := range w.keys {
				known[k] = true
			}
			if err := w.verify(got); err != nil {
				t.Fatalf("round %d (sync %s, %v): %v\nlog:\n%s", round, policy, opts, err, srv.log)
			}
		}
		var unknown []string
		for k := range got.vals {
			if !known[k] {
				unknown = append(unknown, k)
			}
		}
		sort.Strings(unknown)
		if len(unknown) > 0 {
			t.Fatalf("round %d: keys never written: %q", round, unknown)
		}
		if round == rounds {
			srv.kill()
			break
		}

		var killed atomic.Bool
		var wg sync.WaitGroup
		errs := make([]error, nworkers)
		for i, w := range workers {
			w.connect(t, srv)
			wg.Go(func() { errs[i] = w.run(ctx, &killed) })
		}
		// Let some work happen, then maybe start a merge, a backup or a
		// shutdown, then kill.
		time.Sleep(time.Duration(20+rng.IntN(150)) * time.Millisecond)
		event := []string{"plain", "BGREWRITEAOF", "BGSAVE", "SIGTERM", "shutdown"}[rng.IntN(5)]
		switch event {
		case "BGREWRITEAOF", "BGSAVE":
			c := goredis.NewClient(&goredis.Options{Addr: srv.redis, MaxRetries: -1})
			if err := c.Do(ctx, event).Err(); err != nil {
				t.Errorf("round %d: %s: %v", round, event, err)
			}
			c.Close()
		case "SIGTERM":
			killed.Store(true) // failures from here on are expected
			srv.cmd.Process.Signal(syscall.SIGTERM)
		case "shutdown":
			// A graceful shutdown that completes, with clients still
			// writing: it must exit cleanly.
			killed.Store(true)
			srv.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-srv.exited:
			case <-time.After(60 * time.Second): // bounds the failure
				t.Fatalf("round %d: serve did not stop in a minute after SIGTERM", round)
			}
			if !srv.cmd.ProcessState.Success() {
				t.Fatalf("round %d: serve stopped with %v after SIGTERM\nlog:\n%s", round, srv.cmd.ProcessState, srv.log)
			}
		}
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		killed.Store(true)
		srv.kill()
		wg.Wait()
		ops := 0
		for i, w := range workers {
			w.disconnect()
			ops += w.ops
			if errs[i] != nil {
				t.Fatalf("round %d: worker %d failed before the kill: %v\nlog:\n%s", round, i, errs[i], srv.log)
			}
		}
		t.Logf("round %d: sync %s, options %v, killed during %s after %d acknowledged operations in all", round, policy, opts, event, ops)
		crashCheck(t, dir, event == "shutdown")
	}
}

func (e crashEffect) String() string {
	switch {
	case e.del:
		return "del " + e.key
	case e.incr != 0:
		return fmt.Sprintf("incr %s %d", e.key, e.incr)
	case e.px > 0:
		return fmt.Sprintf("set %s %s px %d", e.key, showVal(e.value, true), e.px)
	}
	return fmt.Sprintf("set %s %s", e.key, showVal(e.value, true))
}
