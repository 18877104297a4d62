package pario_test

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
)

var errInjected = errors.New("injected fault")

// probe counts calls into a fake file and how many are running at once. A
// worker still inside a call when a pario function has returned shows up
// as inflight > 0.
type probe struct {
	calls       atomic.Int64
	inflight    atomic.Int64
	maxInflight atomic.Int64
}

func (p *probe) enter() {
	n := p.inflight.Add(1)
	for {
		m := p.maxInflight.Load()
		if n <= m || p.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	p.calls.Add(1)
}

func (p *probe) exit() { p.inflight.Add(-1) }

// checkIdle fails the test if a call is still running in the fake.
func (p *probe) checkIdle(t *testing.T) {
	t.Helper()
	if n := p.inflight.Load(); n != 0 {
		t.Errorf("%d calls still running after return: a worker outlived the call", n)
	}
}

// fault describes when a fake fails.
type fault struct {
	// failOff is the offset whose call fails with errInjected; -1 for none.
	failOff int64
	// With gated > 0, every other call announces itself on arrived and
	// then waits for open, and the failing call waits for gated such
	// arrivals before it fails: gated workers are mid-call when the
	// failure happens.
	gated   int
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
	// onCall, if set, runs at the start of every call with the call's
	// number n (1-based). Numbering and onCall happen under mu, so when
	// onCall(k) returns no call numbered above k has started its I/O.
	onCall func(n int64)
	mu     sync.Mutex
	n      int64
}

func newFault(failOff int64, gated int) *fault {
	return &fault{
		failOff: failOff,
		gated:   gated,
		arrived: make(chan struct{}, max(gated, 1)),
		release: make(chan struct{}),
	}
}

// before runs the fault logic for a call at off; it reports whether the
// call must fail.
func (f *fault) before(off int64) bool {
	if f == nil {
		return false
	}
	if f.onCall != nil {
		f.mu.Lock()
		f.n++
		f.onCall(f.n)
		f.mu.Unlock()
	}
	if off == f.failOff {
		for range f.gated {
			<-f.arrived
		}
		return true
	}
	if f.gated > 0 {
		select {
		case f.arrived <- struct{}{}:
		default: // more arrivals than gated; they need not be counted
		}
		<-f.release
	}
	return false
}

// open lets gated calls proceed. Tests call it from the pario fail hook,
// that is after the failure was recorded and the workers told to stop.
func (f *fault) open() { f.once.Do(func() { close(f.release) }) }

// fakeReader serves data with ReadAt and may inject faults. It is safe for
// concurrent use.
type fakeReader struct {
	probe
	data  []byte
	fault *fault
}

func (r *fakeReader) ReadAt(p []byte, off int64) (int, error) {
	r.enter()
	defer r.exit()
	if r.fault.before(off) {
		return 0, errInjected
	}
	if off >= int64(len(r.data)) {
		return 0, io.EOF
	}
	c := copy(p, r.data[off:])
	if c < len(p) {
		return c, io.EOF
	}
	return c, nil
}

// fakeWriter records WriteAt calls into data (sized up front) and counts
// Syncs. It is safe for concurrent WriteAt on disjoint ranges.
type fakeWriter struct {
	probe
	data    []byte
	fault   *fault
	short   bool  // write one byte less than asked, with a nil error
	syncErr error // returned by Sync
	syncs   atomic.Int64
}

func (w *fakeWriter) WriteAt(p []byte, off int64) (int, error) {
	w.enter()
	defer w.exit()
	if w.fault.before(off) {
		return 0, errInjected
	}
	if w.short && len(p) > 0 {
		p = p[:len(p)-1]
	}
	return copy(w.data[off:], p), nil
}

func (w *fakeWriter) Sync() error {
	w.syncs.Add(1)
	return w.syncErr
}
