// Command fdbbench runs the single-node workloads of FoundationDB's
// benchmarking page against caskade's transactions and compares the rates
// with FoundationDB's published single-core figures:
//
//	cd bench && go run ./cmd/fdbbench
//
// It sets GOMAXPROCS=1 (as the published figures are for one core), uses
// 16-byte keys and values of 8 to 100 random bytes, and SyncAlways (every
// commit is durable before it is acknowledged, as in FoundationDB).
//
// The range reads run twice: first over the records as the write workloads
// left them (the overwritten keys' records scattered through the newest
// file in write order, so nearly every record is a cache miss), then after
// db.Merge, which rewrites the live records in key order.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade"
)

type workload struct {
	name      string
	published float64 // FoundationDB's single-core figure
	unit      string
	run       func(ctx context.Context, db *caskade.DB, d time.Duration) (float64, error)
}

var (
	keys     = flag.Int("keys", 1_000_000, "keys preloaded for the read workloads")
	duration = flag.Duration("duration", 5*time.Second, "time per run of a workload")
	reps     = flag.Int("reps", 3, "runs per workload, one after another; the table shows their median, as single runs on a shared machine move by 20% and more")
	procs    = flag.Int("procs", 1, "GOMAXPROCS")
	syncPol  = flag.String("sync", "always", "sync policy: always, everysec or none")
	out      = flag.String("out", "", "also write the markdown table to this file")
	only     = flag.String("run", "", "run only the workloads whose names match this regular expression (the writes scatter the records that the reads read)")
	cpuProf  = flag.String("cpuprofile", "", "write a CPU profile of the workloads run to this file")
)

func key(i uint64) []byte {
	k := make([]byte, 16)
	copy(k, "fdbbench")
	binary.BigEndian.PutUint64(k[8:], i)
	return k
}

func value(r *rand.Rand) []byte {
	v := make([]byte, 8+r.IntN(93))
	for i := range v {
		v[i] = byte(r.Uint32())
	}
	return v
}

// clients runs n clients doing fn in a loop for d and returns the total of
// the counts fn reports per second.
func clients(ctx context.Context, n int, d time.Duration, fn func(r *rand.Rand) (int, error)) (float64, error) {
	var total atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range n {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			for time.Now().Before(deadline) && ctx.Err() == nil {
				k, err := fn(r)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				total.Add(int64(k))
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return float64(total.Load()) / time.Since(start).Seconds(), nil
}

func writes(perTx, nClients int) func(ctx context.Context, db *caskade.DB, d time.Duration) (float64, error) {
	return func(ctx context.Context, db *caskade.DB, d time.Duration) (float64, error) {
		return clients(ctx, nClients, d, func(r *rand.Rand) (int, error) {
			err := db.Transact(ctx, func(tx *caskade.Tx) error {
				for range perTx {
					tx.Set(key(r.Uint64N(uint64(*keys))), value(r))
				}
				return nil
			})
			return perTx, err
		})
	}
}

func reads(ctx context.Context, db *caskade.DB, d time.Duration) (float64, error) {
	return clients(ctx, 100, d, func(r *rand.Rand) (int, error) {
		err := db.ReadTransact(ctx, func(tx *caskade.Tx) error {
			for range 10 {
				if _, err := tx.Get(key(r.Uint64N(uint64(*keys)))); err != nil {
					return err
				}
			}
			return nil
		})
		return 10, err
	})
}

// mixed is FoundationDB's 90/10 workload: transactions of 9 reads and 1
// write, counting every operation.
func mixed(ctx context.Context, db *caskade.DB, d time.Duration) (float64, error) {
	return clients(ctx, 100, d, func(r *rand.Rand) (int, error) {
		err := db.Transact(ctx, func(tx *caskade.Tx) error {
			for range 9 {
				if _, err := tx.Get(key(r.Uint64N(uint64(*keys)))); err != nil {
					return err
				}
			}
			tx.Set(key(r.Uint64N(uint64(*keys))), value(r))
			return nil
		})
		return 10, err
	})
}

func ranges(ctx context.Context, db *caskade.DB, d time.Duration) (float64, error) {
	return clients(ctx, 1, d, func(r *rand.Rand) (int, error) {
		n := 0
		err := db.ReadTransact(ctx, func(tx *caskade.Tx) error {
			start := key(r.Uint64N(uint64(*keys - 1000)))
			it := tx.RangeIterator(caskade.FirstGreaterOrEqual(start), caskade.FirstGreaterOrEqual(key(uint64(*keys))), &caskade.RangeOptions{Limit: 1000})
			for it.Next() {
				n++
			}
			return it.Err()
		})
		return n, err
	})
}

// mergedRanges is ranges after db.Merge (not timed), which rewrites the
// records the writes scattered in key order.
func mergedRanges(ctx context.Context, db *caskade.DB, d time.Duration) (float64, error) {
	if _, err := db.Merge(ctx); err != nil {
		return 0, err
	}
	return ranges(ctx, db, d)
}

func main() {
	flag.Parse()
	runtime.GOMAXPROCS(*procs)
	policy, err := caskade.ParseSyncPolicy(*syncPol)
	if err != nil {
		fail(err)
	}
	dir, err := os.MkdirTemp("", "fdbbench")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	db, err := caskade.Open(dir, &caskade.Options{Sync: policy, MergeInterval: -1})
	if err != nil {
		fail(err)
	}
	defer db.Close()
	ctx := context.Background()
	// Preload in large batches.
	r := rand.New(rand.NewPCG(1, 1))
	var b caskade.Batch
	for i := range *keys {
		b.Set(key(uint64(i)), value(r))
		if b.Len() == 10000 {
			if err := db.Write(&b); err != nil {
				fail(err)
			}
			b.Reset()
		}
	}
	if err := db.Write(&b); err != nil {
		fail(err)
	}
	workloads := []workload{
		{"1 client, 1 write per transaction", 917, "writes/s", writes(1, 1)},
		{"1 client, 10 writes per transaction", 8650, "writes/s", writes(10, 1)},
		{"100 clients, 10 writes per transaction", 46000, "writes/s", writes(10, 100)},
		{"100 clients, 10 random reads per transaction", 305000, "reads/s", reads},
		{"100 clients, 90/10 read/write", 107000, "ops/s", mixed},
		{"1000-key range reads", 3600000, "keys/s", ranges},
		{"1000-key range reads after db.Merge", 3600000, "keys/s", mergedRanges},
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Command (from bench/): `go run ./cmd/fdbbench %s`\n\n", strings.Join(os.Args[1:], " "))
	fmt.Fprintf(&sb, "GOMAXPROCS=%d, sync=%s, %d keys preloaded, %d runs of %v per workload (median shown), %s\n\n", *procs, policy, *keys, *reps, *duration, time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&sb, "| workload | caskade (median) | all runs | FoundationDB (published, 1 core) | ratio | target 2x |\n| --- | --- | --- | --- | --- | --- |\n")
	fmt.Print(sb.String())
	match, err := regexp.Compile(*only)
	if err != nil {
		fail(err)
	}
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	for _, w := range workloads {
		if !match.MatchString(w.name) {
			continue
		}
		var rates []float64
		var runs []string
		for range max(*reps, 1) {
			rate, err := w.run(ctx, db, *duration)
			if err != nil {
				fail(fmt.Errorf("%s: %w", w.name, err))
			}
			rates = append(rates, rate)
			runs = append(runs, fmt.Sprintf("%.0f", rate))
		}
		slices.Sort(rates)
		rate := rates[len(rates)/2]
		if len(rates)%2 == 0 {
			rate = (rates[len(rates)/2-1] + rates[len(rates)/2]) / 2
		}
		ratio := rate / w.published
		verdict := "met"
		if ratio < 2 {
			verdict = "missed"
		}
		line := fmt.Sprintf("| %s | %.0f %s | %s | %.0f %s | %.2fx | %s |\n", w.name, rate, w.unit, strings.Join(runs, ", "), w.published, w.unit, ratio, verdict)
		fmt.Print(line)
		sb.WriteString(line)
	}
	if *out != "" {
		if err := os.WriteFile(*out, []byte(sb.String()), 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fdbbench:", err)
	os.Exit(1)
}
