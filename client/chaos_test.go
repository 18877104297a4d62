package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade/client"
)

// startChaosProxy starts a proxy (startProxy) that cuts replies into random
// small pieces with random pauses, and cuts a connection at a reply piece
// with chance killP.
func startChaosProxy(t *testing.T, target string, seed uint64, killP float64) *proxy {
	t.Helper()
	return newProxy(t, target, &chaos{seed: seed, killP: killP})
}

func chaosSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	t.Logf("seed %d (set CHAOS_SEED to reproduce)", seed)
	return seed
}

// chaosCtx returns a context that is Background, or has a short random
// deadline, or is cancelled at a random moment.
func chaosCtx(rng *rand.Rand) (context.Context, context.CancelFunc) {
	switch rng.IntN(4) {
	case 0:
		return context.Background(), func() {}
	case 1:
		return context.WithTimeout(context.Background(), time.Duration(rng.IntN(3000))*time.Microsecond)
	case 2:
		ctx, cancel := context.WithCancel(context.Background())
		d := time.Duration(rng.IntN(3000)) * time.Microsecond
		t := time.AfterFunc(d, cancel)
		return ctx, func() { t.Stop(); cancel() }
	}
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// TestChaosRepliesNeverMixed sends ECHOs with unique payloads through
// shared and dedicated connections, pipelines and MULTI/EXEC blocks, over
// a proxy that splits and delays replies and cuts connections, with
// contexts that end at random moments: every reply that arrives must be
// the one to the caller's own command.
func TestChaosRepliesNeverMixed(t *testing.T) {
	seed := chaosSeed(t)
	ts := startCaskade(t, nil)
	px := startChaosProxy(t, ts.addr, seed, 0.0005)
	c := dial(t, px.addr(), &client.Options{PoolSize: 2, ReadTimeout: 200 * time.Millisecond, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 4 * time.Millisecond})
	iters := 300
	if testing.Short() {
		iters = 100
	}
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(1000+w)))
			var cn *client.Conn
			defer func() {
				if cn != nil {
					cn.Close()
				}
			}()
			for i := range iters {
				tok := fmt.Sprintf("w%d-i%d-%x", w, i, rng.Uint64())
				ctx, cancel := chaosCtx(rng)
				switch rng.IntN(5) {
				case 0:
					v, err := c.Do(ctx, "ECHO", tok)
					if err == nil {
						if s, _ := v.Str(); s != tok {
							t.Errorf("Do ECHO %s got %q", tok, s)
						}
						ok.Add(1)
					} else {
						failed.Add(1)
					}
				case 1, 2:
					n := 1 + rng.IntN(5)
					p := c.Pipeline()
					if rng.IntN(2) == 0 {
						p = c.TxPipeline()
					}
					var cmds []*client.Cmd
					for j := range n {
						cmds = append(cmds, p.Do("ECHO", tok+"-"+strconv.Itoa(j)))
					}
					if _, err := p.Exec(ctx); err == nil {
						for j, cmd := range cmds {
							if s, _ := cmd.Str(); s != tok+"-"+strconv.Itoa(j) {
								t.Errorf("pipe ECHO %s-%d got %q", tok, j, s)
							}
						}
						ok.Add(1)
					} else {
						failed.Add(1)
					}
				case 3, 4:
					if cn == nil {
						var err error
						if cn, err = c.Conn(context.Background()); err != nil {
							t.Error(err)
							cancel()
							return
						}
					}
					if rng.IntN(2) == 0 {
						v, err := cn.Do(ctx, "ECHO", tok)
						if err == nil {
							if s, _ := v.Str(); s != tok {
								t.Errorf("Conn.Do ECHO %s got %q", tok, s)
							}
							ok.Add(1)
						} else {
							failed.Add(1)
							if errors.Is(err, client.ErrPendingReplies) {
								t.Errorf("Conn.Do: %v", err)
							}
						}
					} else {
						n := 1 + rng.IntN(3)
						for j := range n {
							cn.Append("ECHO", tok+"-"+strconv.Itoa(j))
						}
						for j := range n {
							v, err := cn.Receive(ctx)
							if err != nil {
								failed.Add(1)
								// Drain what is owed so the Conn can go on:
								// a reply whose wait timed out stays owed.
								next := j
								for range 100 {
									v, err := cn.Receive(context.Background())
									if errors.Is(err, client.ErrNoReply) {
										break
									}
									if err != nil {
										continue
									}
									s, _ := v.Str()
									found := false
									for k := next; k < n; k++ {
										if s == tok+"-"+strconv.Itoa(k) {
											next, found = k+1, true
										}
									}
									if !found {
										t.Errorf("Receive ECHO %s-%d.. (after a failure) got %q", tok, next, s)
									}
								}
								break
							}
							if s, _ := v.Str(); s != tok+"-"+strconv.Itoa(j) {
								t.Errorf("Receive ECHO %s-%d got %q", tok, j, s)
							}
							ok.Add(1)
						}
					}
					if rng.IntN(10) == 0 {
						cn.Close()
						cn = nil
					}
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d ok, %d failed", ok.Load(), failed.Load())
}
