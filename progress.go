package caskade

import (
	"sync"

	"github.com/caskade/caskade/internal/pario"
)

// meter reports how far a backup, restore or check has come to its
// Progress callback. Every pass over a file (a copy, a checksum) adds the
// bytes it handled to work; done is work divided by the number of passes
// over each file, so done runs from 0 to total, the bytes of the files,
// however many times they are read. It calls fn under its lock: never
// concurrently, and with done never going back. A nil *meter does nothing.
type meter struct {
	mu     sync.Mutex
	fn     func(done, total int64)
	total  int64
	passes int64
	work   int64
}

// newMeter returns a meter for files of total bytes, each handled in
// passes passes, and reports done 0; or nil if fn is nil.
func newMeter(fn func(done, total int64), total int64, passes int) *meter {
	if fn == nil {
		return nil
	}
	m := &meter{fn: fn, total: total, passes: int64(passes)}
	fn(0, total)
	return m
}

// add counts n more bytes of one pass.
func (m *meter) add(n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.work += n
	m.fn(min(m.work/m.passes, m.total), m.total)
}

// resize changes the total by delta, for a file whose size turned out
// other than the meter was told. It reports nothing: the next add does.
func (m *meter) resize(delta int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total += delta
}

// meteredWriter counts what is written through it into a meter: pario
// writes a chunk at a time, so the meter hears of every chunk.
type meteredWriter struct {
	pario.SyncWriterAt
	m *meter
}

func (w *meteredWriter) WriteAt(p []byte, off int64) (int, error) {
	n, err := w.SyncWriterAt.WriteAt(p, off)
	w.m.add(int64(n))
	return n, err
}
