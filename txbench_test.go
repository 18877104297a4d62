package caskade

import (
	"context"
	"math/rand/v2"
	"testing"
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
// iterator.
func BenchmarkTxRange1000(b *testing.B) {
	const n = 100_000
	db := loadBench(b, n)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		db.ReadTransact(ctx, func(tx *Tx) error {
			it := tx.RangeIterator(FirstGreaterOrEqual(benchKey(r.Uint64N(n))), FirstGreaterOrEqual([]byte("\xff")), &RangeOptions{Limit: 1000})
			for it.Next() {
			}
			return it.Err()
		})
	}
}
