package caskade

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func benchKey(i uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k[8:], i*0x9E3779B97F4A7C15)
	copy(k, "bench-ke")
	return k
}

func benchOpen(b *testing.B, sync SyncPolicy) *DB {
	b.Helper()
	db, err := Open(b.TempDir(), &Options{Sync: sync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func BenchmarkSet(b *testing.B) {
	val := make([]byte, 100)
	for _, sync := range []SyncPolicy{SyncNone, SyncEverySec, SyncAlways} {
		for _, g := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("sync=%s/goroutines=%d", sync, g), func(b *testing.B) {
				db := benchOpen(b, sync)
				var n atomic.Uint64
				b.SetBytes(116)
				b.ReportAllocs()
				b.SetParallelism(max(1, g/runtime.GOMAXPROCS(0)))
				if g == 1 {
					for i := 0; b.Loop(); i++ {
						if err := db.Set(benchKey(uint64(i)), val); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := db.Set(benchKey(n.Add(1)), val); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// loadBench opens a database (SyncNone) holding benchKey(0..n-1), each
// with a value of 100 zero bytes.
func loadBench(b *testing.B, n int) *DB {
	b.Helper()
	return loadBenchValue(b, n, make([]byte, 100))
}

// loadBenchValue is loadBench with val as every key's value.
func loadBenchValue(b *testing.B, n int, val []byte) *DB {
	b.Helper()
	db := benchOpen(b, SyncNone)
	var batch Batch
	for i := range n {
		batch.Set(benchKey(uint64(i)), val)
		if batch.Len() == 1000 {
			if err := db.Write(&batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := db.Write(&batch); err != nil {
		b.Fatal(err)
	}
	return db
}

func BenchmarkGet(b *testing.B) {
	const n = 100_000
	db := loadBench(b, n)
	b.Run("goroutines=1", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 1))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := db.Get(benchKey(r.Uint64N(n))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			r := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for pb.Next() {
				if _, err := db.Get(benchKey(r.Uint64N(n))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkRangeScan1000 reads values of 1000 keys from a random start.
// loadBench writes keys out of key order, so the records of neighbouring
// keys lie far apart; at 1M keys (about 150 MB of records) most of them
// miss every cache, as in fdbbench's range reads after its writes.
func BenchmarkRangeScan1000(b *testing.B) {
	for _, n := range []uint64{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) { benchRangeScan(b, n) })
	}
}

func benchRangeScan(b *testing.B, n uint64) {
	db := loadBench(b, int(n))
	r := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		it, err := db.NewIterator(nil)
		if err != nil {
			b.Fatal(err)
		}
		c := 0
		for ok := it.Seek(benchKey(r.Uint64N(n))); ok && c < 1000; ok = it.Next() {
			if it.Value() == nil {
				b.Fatal(it.Err())
			}
			c++
		}
		it.Close()
	}
}

func BenchmarkOpen(b *testing.B) {
	const n = 200_000
	db := loadBench(b, n)
	dir := db.Dir()
	db.Close()
	b.ReportAllocs()
	for b.Loop() {
		db, err := Open(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}

// BenchmarkOpenScan measures Open of a database whose data files have no
// hint files, so that it scans them and builds their hints (and writes
// the hint files, which each iteration removes again).
func BenchmarkOpenScan(b *testing.B) {
	const n = 200_000
	db := loadBench(b, n)
	dir := db.Dir()
	db.Close()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		names, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range names {
			if strings.HasSuffix(e.Name(), ".hint") {
				if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StartTimer()
		db, err := Open(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		if st := db.Stats(); st.Recovery.FromHints != 0 {
			b.Fatalf("%d files read through hints", st.Recovery.FromHints)
		}
		db.Close()
	}
}

// BenchmarkMerge measures merge throughput (MB/s of live records
// rewritten): each iteration writes every key once more, making the older
// copies dead, and merges all sealed files.
func BenchmarkMerge(b *testing.B) {
	const n = 200_000
	db, err := Open(b.TempDir(), &Options{Sync: SyncNone, MaxFileSize: 4 << 20, MergeInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	val := make([]byte, 100)
	var batch Batch
	b.SetBytes(int64(n * (16 + 100 + 33)))
	for b.Loop() {
		b.StopTimer()
		for i := range n {
			batch.Set(benchKey(uint64(i)), val)
			if batch.Len() == 1000 {
				db.Write(&batch)
				batch.Reset()
			}
		}
		db.Write(&batch)
		batch.Reset()
		b.StartTimer()
		if _, err := db.Merge(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSealStall writes 256 MiB in commits of 16 values of 1000 bytes
// under SyncEverySec with 64 MiB files, so that four files fill and are
// sealed, and reports the slowest commit (max-ms): a seal syncs its file
// while the commits behind it wait. With write-behind off, that sync has
// up to a second of appends to write.
func BenchmarkSealStall(b *testing.B) {
	val := make([]byte, 1000)
	for _, wb := range []int64{writeBehindBytes, 0} {
		b.Run(fmt.Sprintf("writebehind=%dMiB", wb>>20), func(b *testing.B) {
			defer func(v int64) { writeBehindBytes = v }(writeBehindBytes)
			writeBehindBytes = wb
			db, err := Open(b.TempDir(), &Options{Sync: SyncEverySec, MaxFileSize: 64 << 20, MergeInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			const total = 256 << 20
			b.SetBytes(total)
			var slowest time.Duration
			var batch Batch
			var i uint64
			for b.Loop() {
				for range total / (16 * len(val)) {
					batch.Reset()
					for range 16 {
						i++
						batch.Set(benchKey(i), val)
					}
					start := time.Now()
					if err := db.Write(&batch); err != nil {
						b.Fatal(err)
					}
					slowest = max(slowest, time.Since(start))
				}
			}
			b.ReportMetric(float64(slowest.Microseconds())/1000, "max-ms")
		})
	}
}

// BenchmarkAddIntGroup commits groups of 64 AddInts on random keys of 1M
// (with one WriteBatches each, as the Redis front end commits a turn of
// pipelined INCRs): the reads of the current values dominate.
func BenchmarkAddIntGroup(b *testing.B) {
	const n = 1_000_000
	db := loadBenchValue(b, n, []byte("12345"))
	bs := make([]*Batch, 64)
	for i := range bs {
		bs[i] = new(Batch)
	}
	r := rand.New(rand.NewPCG(1, 1))
	b.ResetTimer()
	for b.Loop() {
		for _, bt := range bs {
			bt.Reset()
			bt.AddInt(benchKey(r.Uint64N(n)), 1)
		}
		for _, err := range db.WriteBatches(bs) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(bs)), "ns/add")
}
