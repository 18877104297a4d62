// Package pario does parallel positional file I/O: it reads, writes and copies
// whole files with several goroutines at once, each working on its own
// chunk-sized region through ReadAt and WriteAt. caskade uses it for long file
// work: recovery scans, merge output, backup, restore and bulk load.
//
// The package is a leaf (standard library only). It does not know the
// project's file system seam; it works on the small interfaces ReaderAt,
// WriterAt and SyncWriterAt, which *os.File and vfs.File both satisfy.
//
// # Work split
//
// A file of size bytes is cut into chunks of Options.ChunkSize bytes (the last
// one may be shorter). Up to Options.Workers goroutines claim chunks in file
// order and read or write them. With Workers == 1, ReadFull, ReadInto,
// ReadAll, WriteBuffers, WriteBuffersAt and Copy do all their I/O on the
// calling goroutine, one call at a time in ascending offset order; Stream
// always reads on one or more helper goroutines so it can read ahead.
//
// # Concurrency requirements on the file
//
// With Workers > 1, ReadAt is called concurrently on different regions, and
// WriteAt is called concurrently on different, non-overlapping regions.
// *os.File (pread/pwrite) allows both. vfs.File promises concurrent ReadAt
// only; write through a vfs.File with Workers: 1 unless the implementation
// allows concurrent WriteAt. Sync is called once, on the calling goroutine,
// after every WriteAt has returned.
//
// # Errors and cancellation
//
// The first error from any worker cancels the others, and the function returns
// that error once every worker has exited. I/O errors are wrapped with the
// offset of the failing call, for example
// "pario: read at offset 8388608: input/output error", so errors.Is and
// errors.As see the cause. Reading fewer than size bytes is an error wrapping
// io.ErrUnexpectedEOF; a WriteAt that writes less than asked without an error
// gives io.ErrShortWrite. If ctx is done before the work is complete, the
// function returns ctx.Err() (unwrapped). A read or write already in progress
// is not interrupted; it finishes, and no new one starts.
//
// Every function returns only after all goroutines it started have exited.
// All functions are safe for concurrent use as long as the files they are
// given are; they keep no state between calls.
package pario
