package pario

import (
	"fmt"
	"runtime"
)

const (
	// DefaultChunkSize is the chunk size used when Options.ChunkSize is zero:
	// 4 MiB, large enough that per-call overhead is negligible and small
	// enough that Workers chunks in flight stay modest.
	DefaultChunkSize = 4 << 20
	// MaxChunkSize is the largest accepted Options.ChunkSize (1 GiB).
	MaxChunkSize = 1 << 30
	// MaxWorkers is the largest accepted Options.Workers.
	MaxWorkers = 1024
)

// Options configures a pario call. The zero value means defaults. Options is
// a plain value; it is safe to share between goroutines.
type Options struct {
	// Workers is the number of goroutines doing I/O at once. Zero means
	// runtime.GOMAXPROCS(0). Fewer are used when the file has fewer chunks.
	// It must be in [0, MaxWorkers].
	Workers int
	// ChunkSize is the number of bytes one ReadAt or WriteAt call handles
	// (the last chunk of a file may be shorter). Zero means
	// DefaultChunkSize. It must be in [0, MaxChunkSize]. Memory use is
	// bounded by it: Copy holds at most Workers chunk buffers, Stream at
	// most 2*Workers.
	ChunkSize int64
	// NoSync skips the final Sync in WriteBuffers, WriteBuffersAt and Copy
	// and the file and directory syncs in WritePath and CopyPath. The zero
	// value (false) syncs: the data is durable when the call returns nil.
	NoSync bool
}

// Validate reports whether o holds acceptable values. The error wraps
// ErrInvalidOptions.
func (o Options) Validate() error {
	if o.Workers < 0 || o.Workers > MaxWorkers {
		return fmt.Errorf("%w: Workers %d not in [0, %d]", ErrInvalidOptions, o.Workers, MaxWorkers)
	}
	if o.ChunkSize < 0 || o.ChunkSize > MaxChunkSize {
		return fmt.Errorf("%w: ChunkSize %d not in [0, %d]", ErrInvalidOptions, o.ChunkSize, MaxChunkSize)
	}
	return nil
}

// workers returns the effective worker count for n chunks (at least 1).
func (o Options) workers(n int64) int {
	w := o.Workers
	if w == 0 {
		w = runtime.GOMAXPROCS(0)
	}
	if int64(w) > n {
		w = int(n)
	}
	return max(w, 1)
}

// chunkSize returns the effective chunk size.
func (o Options) chunkSize() int64 {
	if o.ChunkSize == 0 {
		return DefaultChunkSize
	}
	return o.ChunkSize
}

// chunks returns the number of chunks of size cs in size bytes.
func chunks(size, cs int64) int64 {
	return size/cs + min(size%cs, 1)
}

// span returns the offset and length of chunk i of a size-byte region cut
// into chunks of cs bytes.
func span(i, size, cs int64) (off int64, n int) {
	off = i * cs
	return off, int(min(cs, size-off))
}
