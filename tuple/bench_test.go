package tuple

import (
	"math/big"
	"testing"
)

var benchTuple = Tuple{"users", int64(123456789), []byte("some\x00key\x00bytes"), 3.25, true,
	UUID{1, 2, 3}, Tuple{nil, "nested", -7}, new(big.Int).Lsh(big.NewInt(1), 80)}

func BenchmarkPack(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = benchTuple.Pack()
	}
}

func BenchmarkUnpack(b *testing.B) {
	p := benchTuple.Pack()
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if _, err := Unpack(p); err != nil {
			b.Fatal(err)
		}
	}
}
