package pario_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/caskade/caskade/internal/pario"
)

// TestLargeSparseFile streams a sparse file just over 4 GiB, with marker
// bytes at and around the 2 GiB and 4 GiB boundaries, and checks every byte
// while memory stays bounded. It reads 4 GiB of mostly zero pages, so it is
// skipped with -short.
func TestLargeSparseFile(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 4 GiB; skipped with -short")
	}
	const (
		gib  = int64(1) << 30
		size = 4*gib + 12345
		cs   = 8 << 20
	)
	markers := map[int64]byte{
		0:           1,
		2*gib - 1:   2,
		2 * gib:     3,
		4*gib - 1:   4,
		4 * gib:     5,
		4*gib + 100: 6,
		size - 1:    7,
	}
	path := filepath.Join(t.TempDir(), "sparse")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatalf("making a %d-byte sparse file: %v", size, err)
	}
	ctx := context.Background()
	opts := pario.Options{Workers: 2, ChunkSize: cs, NoSync: true}
	for off, b := range markers {
		// Exercises WriteBuffersAt at offsets past 4 GiB.
		if err := pario.WriteBuffersAt(ctx, f, off, [][]byte{{b}}, opts); err != nil {
			t.Fatalf("WriteBuffersAt(%d): %v", off, err)
		}
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	zeros := make([]byte, cs)
	var next int64
	found := 0
	err = pario.Stream(ctx, f, size, opts, func(off int64, chunk []byte) error {
		if off != next {
			return fmt.Errorf("chunk at offset %d, want %d", off, next)
		}
		next += int64(len(chunk))
		for moff, b := range markers {
			if moff >= off && moff < next {
				if got := chunk[moff-off]; got != b {
					return fmt.Errorf("byte at %d = %d, want marker %d", moff, got, b)
				}
				chunk[moff-off] = 0 // allowed: Stream's buffer, reused later
				found++
			}
		}
		if !bytes.Equal(chunk, zeros[:len(chunk)]) {
			return fmt.Errorf("unexpected non-zero byte in chunk at offset %d", off)
		}
		return nil
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if next != size {
		t.Errorf("streamed %d bytes, want %d", next, size)
	}
	if found != len(markers) {
		t.Errorf("found %d of %d markers", found, len(markers))
	}
	// 2 workers hold at most 4 chunk buffers (32 MiB); allow generous
	// slack but far below the 4 GiB file.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 128<<20 {
		t.Errorf("Stream allocated %d bytes for a %d-byte file; memory is not bounded", alloc, size)
	}
}
