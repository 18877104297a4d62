package main

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	keySize   = 16
	valueSize = 100
	// keyPrefix starts every key. (bitcask's Range needs start and end to
	// share a prefix.)
	keyPrefix = "kvbench:"
)

// keyAt writes key number i into k (keySize bytes): the prefix, then i
// times an odd constant, big-endian. Multiplying by an odd number is a
// bijection on uint64, so keys are distinct, and their order is unrelated to
// i, so consecutive i are random positions in key order.
func keyAt(k []byte, i uint64) {
	copy(k, keyPrefix)
	binary.BigEndian.PutUint64(k[len(keyPrefix):], i*0x9E3779B97F4A7C15)
}

// valueAt fills v with valueSize pseudo-random (incompressible, distinct per
// key) bytes derived from i, so engines that compress gain nothing from
// repeated values.
func valueAt(v []byte, i uint64) {
	x := i + 0x632BE59BD9B4E019
	for o := 0; o < len(v); o += 8 {
		// splitmix64
		x += 0x9E3779B97F4A7C15
		z := x
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], z)
		copy(v[o:], b[:])
	}
}

// hist is a log-linear latency histogram in nanoseconds: exact below 64 ns,
// then 64 buckets per power of two (under 1.6% error).
type hist struct {
	counts [59 * 64]uint64
	n      uint64
}

func histIndex(v uint64) int {
	if v < 64 {
		return int(v)
	}
	shift := bits.Len64(v) - 7
	return (shift+1)*64 + int(v>>shift) - 64
}

// histValue returns the middle of bucket i.
func histValue(i int) uint64 {
	if i < 64 {
		return uint64(i)
	}
	shift := i/64 - 1
	m := uint64(i%64 + 64)
	return m<<shift + (uint64(1)<<shift)/2
}

func (h *hist) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[histIndex(uint64(d))]++
	h.n++
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the q-quantile (0 < q <= 1).
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = max(1, min(rank, h.n))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(histValue(i))
		}
	}
	return 0
}

// runResult is the outcome of one timed run.
type runResult struct {
	ops     uint64
	elapsed time.Duration
	lat     *hist // nil unless latencies were recorded
	err     error
}

func (r runResult) opsPerSec() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ops) / r.elapsed.Seconds()
}

// runFor runs op on g goroutines until d has passed, and returns the number
// of calls that succeeded and the wall time from start until every
// goroutine had finished its last call. Worker w numbers its calls 0, 1, ...
// in i. If timed, each call's latency is recorded (the two clock reads are
// included in the throughput, for every engine alike).
func runFor(d time.Duration, g int, timed bool, op func(w int, i uint64) error) runResult {
	var (
		stop   atomic.Bool
		wg     sync.WaitGroup
		mu     sync.Mutex
		res    runResult
		total  atomic.Uint64
		merged hist
	)
	quiesce()
	start := time.Now()
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	defer timer.Stop()
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h *hist
			if timed {
				h = new(hist)
			}
			var i uint64
			var err error
			for !stop.Load() {
				if timed {
					t0 := time.Now()
					err = op(w, i)
					h.add(time.Since(t0))
				} else {
					err = op(w, i)
				}
				if err != nil {
					stop.Store(true)
					break
				}
				i++
			}
			total.Add(i)
			mu.Lock()
			if err != nil && res.err == nil {
				res.err = err
			}
			if h != nil {
				merged.merge(h)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.ops = total.Load()
	if timed {
		res.lat = &merged
	}
	return res
}

// quiesce flushes dirty pages of earlier runs to disk and collects garbage,
// so that a run does not pay for the write-back or the garbage of the run
// before it.
func quiesce() {
	syscall.Sync()
	runtime.GC()
}

// heapAlloc returns the live heap after two collections.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// ---------------------------------------------------------------- formatting

func fmtRate(v float64, unit string) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM %s", v/1e6, unit)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk %s", v/1e3, unit)
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	default:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%.2fµs", float64(d)/1e3)
	default:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	}
}

func fmtCount(n uint64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	default:
		return fmt.Sprint(n)
	}
}

func fmtBytes(b int64) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	default:
		return fmt.Sprintf("%d B", b)
	}
}
