package caskade

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkTxReads is FoundationDB's read workload: transactions of 10
// random reads.
func BenchmarkTxReads(b *testing.B) {
	const n = 100_000
	db := loadBench(b, n)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 1))
		for pb.Next() {
			err := db.ReadTransact(ctx, func(tx *Tx) error {
				for range 10 {
					if _, err := tx.Get(benchKey(r.Uint64N(n))); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkTxRange1000 reads 1000 keys through a transaction's range
// iterator, with their values and without. The keys were written in random
// order (benchKey scatters them), so in key order both they, in the key
// directory's arena, and their records lie scattered over memory larger
// than the caches, as after random inserts in a long-running process.
func BenchmarkTxRange1000(b *testing.B) {
	const n = 1_000_000
	db := loadBench(b, n)
	ctx := context.Background()
	for _, keysOnly := range []bool{false, true} {
		name := "values"
		if keysOnly {
			name = "keys-only"
		}
		b.Run(name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			b.ReportAllocs()
			for b.Loop() {
				db.ReadTransact(ctx, func(tx *Tx) error {
					it := tx.RangeIterator(FirstGreaterOrEqual(benchKey(r.Uint64N(n))), FirstGreaterOrEqual([]byte("\xff")),
						&RangeOptions{Limit: 1000, KeysOnly: keysOnly})
					for it.Next() {
					}
					return it.Err()
				})
			}
		})
	}
}

// BenchmarkSetBesideRangeTxn measures the latency of plain Sets while
// another goroutine keeps committing transactions that read a range of
// 200,000 keys: the commit leader must not walk that range while the Sets
// wait (see precheck). It reports the p99 and the maximum.
func BenchmarkSetBesideRangeTxn(b *testing.B) {
	db := benchOpen(b, SyncNone)
	loadNumbered(b, db, 200_000)
	ctx := context.Background()
	stop := repeatInBackground(func() {
		db.Transact(ctx, func(tx *Tx) error {
			it := tx.RangeIterator(FirstGreaterOrEqual([]byte("r")), FirstGreaterOrEqual([]byte("s")), &RangeOptions{KeysOnly: true})
			for it.Next() {
			}
			tx.Set([]byte("x"), []byte("y"))
			return it.Err()
		})
	})
	var lat []time.Duration
	i := 0
	for b.Loop() {
		time.Sleep(200 * time.Microsecond) // sample over time, not in one burst
		s := time.Now()
		if err := db.Set(fmt.Appendf(nil, "w%d", i), []byte("v")); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(s))
		i++
	}
	stop()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(lat[len(lat)-1].Nanoseconds()), "max-ns")
}

// BenchmarkTxSmallRangeWrite is a read-modify-write transaction of the
// common small kind: it reads a 10-key range and writes one key.
func BenchmarkTxSmallRangeWrite(b *testing.B) {
	db := benchOpen(b, SyncNone)
	loadNumbered(b, db, 100_000)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 1))
		for pb.Next() {
			s := r.IntN(99_990)
			err := db.Transact(ctx, func(tx *Tx) error {
				kvs, err := tx.GetRange(FirstGreaterOrEqual(fmt.Appendf(nil, "r%07d", s)), FirstGreaterOrEqual(fmt.Appendf(nil, "r%07d", s+10)), nil)
				tx.Set(fmt.Appendf(nil, "w%07d", r.IntN(100_000)), fmt.Append(nil, len(kvs)))
				return err
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// loadNumbered writes the keys r0000000, r0000001, ... r(n-1).
func loadNumbered(tb testing.TB, db *DB, n int) {
	tb.Helper()
	var batch Batch
	for i := range n {
		batch.Set(fmt.Appendf(nil, "r%07d", i), []byte("v"))
	}
	if err := db.Write(&batch); err != nil {
		tb.Fatal(err)
	}
}

// repeatInBackground calls fn again and again on another goroutine until
// stop is called; stop returns once fn has returned for the last time.
func repeatInBackground(fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			fn()
		}
	})
	return func() { close(done); wg.Wait() }
}

// BenchmarkTxMix is one client of fdbbench's 90/10 workload: transactions
// of 9 random reads and 1 write over 1M keys, each committed, so that the
// commit checks the 9 reads for conflicts.
func BenchmarkTxMix(b *testing.B) {
	const n = 1_000_000
	db := loadBench(b, n)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 1))
	val := make([]byte, 50)
	b.ResetTimer()
	for b.Loop() {
		err := db.Transact(ctx, func(tx *Tx) error {
			for range 9 {
				if _, err := tx.Get(benchKey(r.Uint64N(n))); err != nil {
					return err
				}
			}
			tx.Set(benchKey(r.Uint64N(n)), val)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
