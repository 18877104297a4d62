package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// The full-disk test runs a real caskade serve on a small tmpfs, fills it
// through every protocol until writes are refused for lack of space, and
// checks what the documentation promises of a full disk: each refused
// write is refused whole, in its protocol's form, and leaves the database
// taking writes again once there is room; reads go on; merge, backup and
// file rotation fail cleanly; a restart on the full disk opens it; and
// every acknowledged write is there throughout. Mounting needs root: the
// test skips without it.

var fullSeed = flag.Uint64("fulldisk.seed", 0, "seed of TestFullDisk (0: random)")

// mountTmpfs mounts a tmpfs of size bytes on a new directory and returns
// it, or skips the test when it cannot.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fullKV is a key and its value.
type fullKV struct{ k, v string }

// fullClient writes through all three protocols and keeps what was
// acknowledged.
type fullClient struct {
	t     *testing.T
	rng   *rand.Rand
	seq   int
	want  map[string]string // every acknowledged write applied
	rdb   *goredis.Client
	mc    net.Conn
	mcr   *bufio.Reader
	http  *http.Client
	srv   *crashServer
	full  int // writes refused for lack of space
	wrote int // writes acknowledged
}

func (c *fullClient) connect(srv *crashServer) {
	c.t.Helper()
	c.srv = srv
	c.rdb = goredis.NewClient(&goredis.Options{Addr: srv.redis, MaxRetries: -1, PoolSize: 1,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	mc, err := net.Dial("tcp", srv.memcache)
	if err != nil {
		c.t.Fatal(err)
	}
	c.mc, c.mcr = mc, bufio.NewReader(mc)
	c.http = &http.Client{Timeout: 30 * time.Second}
}

func (c *fullClient) disconnect() {
	c.rdb.Close()
	c.mc.Close()
	c.http.CloseIdleConnections()
}

func (c *fullClient) value() string {
	c.seq++
	n := 1000 + c.rng.IntN(6000)
	if c.rng.IntN(100) == 0 {
		n = 64<<10 + c.rng.IntN(32<<10) // written with pwrite, not through the mapping
	}
	v := fmt.Sprintf("v%d.", c.seq)
	return v + strings.Repeat(string(rune('a'+c.seq%26)), n)
}

func (c *fullClient) key() string { return "k" + strconv.Itoa(c.rng.IntN(80)) }

// isNoSpace reports whether a refused write's reply is the documented
// full-disk error of its protocol.
func noSpaceRedis(err error) bool {
	s := err.Error()
	return s == "MISCONF Errors writing to the data files: No space left on device (the write was refused; writes resume once there is room)"
}

// abortedNoSpace reports whether err is the EXECABORT of a transaction
// whose writes were refused as they were queued, each for lack of space
// (as Redis refuses writes while it cannot persist).
func abortedNoSpace(err error, cmds []goredis.Cmder) bool {
	if !strings.HasPrefix(err.Error(), "EXECABORT ") || len(cmds) == 0 {
		return false
	}
	for _, c := range cmds {
		if c.Err() == nil || !noSpaceRedis(c.Err()) {
			return false
		}
	}
	return true
}

// step sends one write through a random protocol: nil if it was
// acknowledged or refused for lack of space (which counts in c.full),
// else what went wrong.
func (c *fullClient) step(ctx context.Context) error {
	var w []fullKV
	var err error
	var refused bool
	switch c.rng.IntN(7) {
	case 0:
		w = []fullKV{{c.key(), c.value()}}
		if err = c.rdb.Set(ctx, w[0].k, w[0].v, 0).Err(); err != nil && noSpaceRedis(err) {
			refused, err = true, nil
		}
	case 1:
		w = []fullKV{{c.key(), c.value()}, {c.key(), c.value()}}
		if err = c.rdb.MSet(ctx, w[0].k, w[0].v, w[1].k, w[1].v).Err(); err != nil && noSpaceRedis(err) {
			refused, err = true, nil
		}
	case 2:
		// A pipeline: each SET is a commit of its own, in one group.
		p := c.rdb.Pipeline()
		var cmds []*goredis.StatusCmd
		var sets []fullKV
		for range 4 {
			s := fullKV{c.key(), c.value()}
			sets = append(sets, s)
			cmds = append(cmds, p.Set(ctx, s.k, s.v, 0))
		}
		p.Exec(ctx)
		for i, cmd := range cmds {
			switch e := cmd.Err(); {
			case e == nil:
				c.apply(sets[i : i+1])
			case noSpaceRedis(e):
				c.full++
			default:
				return fmt.Errorf("pipelined SET %s: %v", sets[i].k, e)
			}
		}
		return nil
	case 3:
		w = []fullKV{{c.key(), c.value()}, {c.key(), c.value()}}
		var cmds []goredis.Cmder
		cmds, err = c.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			for _, s := range w {
				p.Set(ctx, s.k, s.v, 0)
			}
			return nil
		})
		if err != nil && (noSpaceRedis(err) || abortedNoSpace(err, cmds)) {
			refused, err = true, nil
		}
	case 4:
		w = []fullKV{{c.key(), c.value()}}
		fmt.Fprintf(c.mc, "set %s 0 0 %d\r\n%s\r\n", w[0].k, len(w[0].v), w[0].v)
		line, rerr := c.mcr.ReadString('\n')
		switch {
		case rerr != nil:
			err = rerr
		case line == "STORED\r\n":
		case line == "SERVER_ERROR no space left on device\r\n":
			refused = true
		default:
			err = fmt.Errorf("replied %q", line)
		}
	case 5, 6:
		var req *http.Request
		if c.rng.IntN(2) == 0 {
			w = []fullKV{{c.key(), c.value()}}
			req, _ = http.NewRequestWithContext(ctx, "PUT", "http://"+c.srv.http+"/v1/kv/"+w[0].k, strings.NewReader(w[0].v))
		} else {
			w = []fullKV{{c.key(), c.value()}, {c.key(), c.value()}}
			body, _ := json.Marshal(map[string]any{"success": []any{
				map[string]any{"put": map[string]string{"key": w[0].k, "value": w[0].v}},
				map[string]any{"put": map[string]string{"key": w[1].k, "value": w[1].v}},
			}})
			req, _ = http.NewRequestWithContext(ctx, "POST", "http://"+c.srv.http+"/v1/txn", strings.NewReader(string(body)))
		}
		resp, herr := c.http.Do(req)
		if herr != nil {
			err = herr
			break
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
		case resp.StatusCode == http.StatusInsufficientStorage && strings.Contains(string(b), `"code":"no_space"`):
			refused = true
		default:
			err = fmt.Errorf("replied %d %s", resp.StatusCode, b)
		}
	}
	if err != nil {
		return fmt.Errorf("write of %d keys: %v", len(w), err)
	}
	if refused {
		c.full++
		return nil
	}
	c.apply(w)
	return nil
}

func (c *fullClient) apply(w []fullKV) {
	for _, s := range w {
		c.want[s.k] = s.v
	}
	c.wrote++
}

// fill writes until n writes in a row were refused for lack of space.
func (c *fullClient) fill(ctx context.Context, n int) {
	c.t.Helper()
	for row := 0; row < n; {
		before := c.full
		if err := c.step(ctx); err != nil {
			c.t.Fatalf("%v\nlog:\n%s", err, c.srv.log)
		}
		if c.full > before {
			row++
		} else {
			row = 0
		}
	}
}

// check reads every key written and compares it with what was
// acknowledged.
func (c *fullClient) check(ctx context.Context, when string) {
	c.t.Helper()
	for k, v := range c.want {
		got, err := c.rdb.Get(ctx, k).Result()
		if err != nil || got != v {
			c.t.Fatalf("%s: GET %s = %.40q, %v; want %.40q (acknowledged)\nlog:\n%s", when, k, got, err, v, c.srv.log)
		}
	}
}

// freeBytes returns the bytes free on the file system of dir.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// background runs BGREWRITEAOF or BGSAVE, waits for it to end, and
// reports whether it succeeded.
func (c *fullClient) background(ctx context.Context, cmd, busy string) bool {
	c.t.Helper()
	if err := c.rdb.Do(ctx, cmd).Err(); err != nil {
		c.t.Fatalf("%s: %v", cmd, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		info, err := c.rdb.Info(ctx, "persistence").Result()
		if err != nil {
			c.t.Fatal(err)
		}
		if strings.Contains(info, busy+":0") {
			return !strings.Contains(info, "_status:err")
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s still running after 10 s:\n%s", cmd, info)
		}
		time.Sleep(10 * time.Millisecond) // INFO is the only signal
	}
}

func (s *crashServer) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not stop in 20 s\nlog:\n%s", s.log)
	}
	if !s.cmd.ProcessState.Success() {
		t.Fatalf("serve exited with %v\nlog:\n%s", s.cmd.ProcessState, s.log)
	}
	if os.Getenv("FULLDISK_LOG") != "" {
		t.Logf("log:\n%s", s.log)
	}
}

// TestFullDisk fills a tmpfs under a real caskade serve with every sync
// policy and small data files (so that rotation meets the full disk
// too), and checks the full-disk promises (see above).
// -fulldisk.seed=N replays the writes of a seed.
func TestFullDisk(t *testing.T) {
	seed := *fullSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -fulldisk.seed=%d)", seed, seed)
	for _, sync := range []string{"always", "everysec", "none"} {
		t.Run(sync, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			mnt := mountTmpfs(t, 4<<20)
			dir := filepath.Join(mnt, "db")
			// Two files to delete, to make room twice: a little, then more.
			fillers := []string{filepath.Join(mnt, "filler1"), filepath.Join(mnt, "filler2")}
			for i, n := range []int{384 << 10, 1 << 20} {
				if err := os.WriteFile(fillers[i], make([]byte, n), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			const opts = "maxfile=131072"
			c := &fullClient{t: t, rng: rand.New(rand.NewPCG(seed, 1)), want: map[string]string{}}

			srv := startCrashServer(t, dir, sync, opts, 0)
			c.connect(srv)
			c.fill(ctx, 8)
			c.check(ctx, "full")
			// Merge and backup fail for want of space, and leave the
			// database as it was.
			c.background(ctx, "BGREWRITEAOF", "aof_rewrite_in_progress")
			c.background(ctx, "BGSAVE", "rdb_bgsave_in_progress")
			c.check(ctx, "full, after BGREWRITEAOF and BGSAVE")
			c.fill(ctx, 4)
			c.disconnect()
			srv.stop(t)

			// A restart on the full disk.
			srv = startCrashServer(t, dir, sync, opts, 0)
			c.connect(srv)
			c.check(ctx, "restarted on the full disk")
			c.fill(ctx, 4)
			// A crash of the process on the full disk loses nothing
			// acknowledged, under any policy.
			c.disconnect()
			srv.kill()
			srv = startCrashServer(t, dir, sync, opts, 0)
			c.connect(srv)
			c.check(ctx, "restarted on the full disk after kill -9")
			c.fill(ctx, 4)

			for i, f := range fillers {
				// Room again: writes go on.
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
				before := c.wrote
				for range 10 {
					if err := c.step(ctx); err != nil {
						t.Fatalf("after filler %d was removed: %v\nlog:\n%s", i+1, err, srv.log)
					}
				}
				if c.wrote == before {
					t.Fatalf("no write went through once there was room again\nlog:\n%s", srv.log)
				}
				c.check(ctx, "room again")
				// A merge with some room. If the output does not fit, it
				// fails without using the room up.
				free := freeBytes(t, mnt)
				if !c.background(ctx, "BGREWRITEAOF", "aof_rewrite_in_progress") {
					if now := freeBytes(t, mnt); now < free {
						t.Errorf("a failed BGREWRITEAOF took %d of the %d bytes free", free-now, free)
					}
				}
				c.check(ctx, "room again, after BGREWRITEAOF")
				c.background(ctx, "BGSAVE", "rdb_bgsave_in_progress")
				c.check(ctx, "room again, after BGSAVE")
				c.fill(ctx, 4)
				c.background(ctx, "BGREWRITEAOF", "aof_rewrite_in_progress")
				c.check(ctx, "full again, after BGREWRITEAOF")
			}
			c.disconnect()
			srv.stop(t)

			cmd := exec.Command(os.Args[0], "check", dir)
			cmd.Env = append(os.Environ(), crashChildEnv+"=1")
			if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "no damage") {
				t.Fatalf("caskade check: %v\n%s", err, out)
			}
			srv = startCrashServer(t, dir, sync, opts, 0)
			c.connect(srv)
			c.check(ctx, "restarted")
			c.disconnect()
			srv.stop(t)
			t.Logf("%d writes acknowledged, %d refused for lack of space", c.wrote, c.full)
		})
	}
}
