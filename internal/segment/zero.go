package segment

import (
	"sync"
	"sync/atomic"

	"github.com/caskade/caskade/vfs"
)

// zeroChunk is how many bytes a zeroer writes, and syncs, at a time; it
// keeps up to two chunks ready ahead of the appends.
const zeroChunk = 1 << 20

var zeros [zeroChunk]byte

// ZeroAhead keeps the bytes after the file's end, up to limit, written
// with zeros and synced before appends reach them, from a goroutine of its
// own. An fsync after an append that only overwrites blocks that are
// already allocated and written changes no file system metadata, so it
// costs one write to the disk instead of a journal commit as well: on
// ext4 here, about 100 us whether it covers 140 bytes or 12 KiB, where an
// append that extends the file (or fills fallocated, unwritten blocks)
// takes 200-250 us once it spans a new block. That is what commits under
// SyncAlways pay, so their groups grow without their fsyncs getting
// slower. The price is writing every byte of the file twice.
//
// Until Seal cuts them, the zeros follow the last record; after a crash,
// recovery cuts them like a torn tail. An append that outruns the zeroer
// extends the file itself, waiting at most for the zeroer's current write
// of a chunk (not its sync). The zeroer writes and syncs
// through a handle of its own, so a write-back error it meets is still
// reported to the writer's own fsync; it stops at its first error.
//
// It does nothing for files that are not on the OS file system.
func (f *File) ZeroAhead(limit int64) {
	if f.z != nil || f.w != nil || limit <= f.size.Load() || !vfs.Native(f.f) {
		return
	}
	h, err := f.fs.OpenReadWrite(f.Path)
	if err != nil {
		return
	}
	z := &zeroer{f: f, h: h, limit: limit, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	z.end.Store(f.size.Load())
	f.z = z
	go z.run()
	z.wake <- struct{}{}
}

// zeroer is the state of ZeroAhead. Bytes below end are records or zeros,
// and end is never below the file's size; the zeroer writes only at end
// and beyond, and the writer appends below end without a lock, or takes mu
// to append past it.
type zeroer struct {
	f     *File
	h     vfs.File // the zeroer's own handle
	limit int64
	mu    sync.Mutex
	end   atomic.Int64
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

// advance tells the zeroer that the records now end at end: it records an
// end past the zeros and wakes the zeroer when less than a chunk is left.
// end > z.end only when the append started past the zeros, and so holds mu
// (z.end only grows).
func (z *zeroer) advance(end int64) {
	if end > z.end.Load() {
		z.end.Store(end)
	}
	if end+zeroChunk > z.end.Load() {
		select {
		case z.wake <- struct{}{}:
		default:
		}
	}
}

func (z *zeroer) run() {
	defer close(z.done)
	defer z.h.Close()
	for {
		select {
		case <-z.stop:
			return
		case <-z.wake:
		}
		for {
			more, err := z.fill()
			if err != nil {
				// Out of space, or worse: the writer extends the file
				// itself, and its own writes and fsyncs meet the trouble.
				return
			}
			if !more {
				break
			}
			select {
			case <-z.stop:
				return
			default:
			}
		}
	}
}

// fill writes and syncs the next chunk of zeros if fewer than two are
// ready, and reports whether it did.
func (z *zeroer) fill() (bool, error) {
	z.mu.Lock()
	at := z.end.Load()
	if at >= z.f.size.Load()+2*zeroChunk || at >= z.limit {
		z.mu.Unlock()
		return false, nil
	}
	n := min(zeroChunk, z.limit-at)
	_, err := z.h.WriteAt(zeros[:n], at)
	if err == nil {
		z.end.Store(at + n)
		if at+n > z.f.extent.Load() {
			z.f.extent.Store(at + n)
		}
	}
	z.mu.Unlock()
	if err != nil {
		return false, err
	}
	return true, vfs.SyncData(z.h)
}

// halt stops the zeroer and waits for it.
func (z *zeroer) halt() {
	close(z.stop)
	<-z.done
}
