package caskade

import (
	"slices"
	"sync/atomic"
	"time"
)

// Timings counts operations of one kind (see Stats.Syncs and
// Stats.MergeTimings) and how long they took.
type Timings struct {
	Count  uint64        // operations done, failed ones included
	Errors uint64        // operations that failed
	Total  time.Duration // time spent in them
	// Buckets counts them by duration, cumulatively, as a Prometheus
	// histogram does: Buckets[i].Count of them took at most Buckets[i].Le.
	// Those that took longer than the last bound count only in Count.
	Buckets []TimingBucket
}

// TimingBucket is one bound of Timings.Buckets.
type TimingBucket struct {
	Le    time.Duration
	Count uint64
}

// syncBounds and mergeBounds are the bucket bounds of Stats.Syncs and
// Stats.MergeTimings: an fsync takes from tens of microseconds (a fast
// SSD) to seconds (a disk that stalls), a merge from milliseconds to an
// hour.
var (
	syncBounds = []time.Duration{
		50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
		time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
		25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
		500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
	}
	mergeBounds = []time.Duration{
		10 * time.Millisecond, 100 * time.Millisecond, time.Second, 5 * time.Second, 15 * time.Second,
		time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour,
	}
)

// timings accumulates a Timings; safe for concurrent use.
type timings struct {
	bounds  []time.Duration
	count   atomic.Uint64
	errors  atomic.Uint64
	nanos   atomic.Int64
	buckets []atomic.Uint64 // per bound, not cumulative
}

func newTimings(bounds []time.Duration) *timings {
	return &timings{bounds: bounds, buckets: make([]atomic.Uint64, len(bounds))}
}

// observe records an operation that began at start and ended now with
// err. A nil t (a DB that check made to read files) records nothing.
func (t *timings) observe(start time.Time, err error) {
	if t == nil {
		return
	}
	d := time.Since(start)
	// Count first: get reads the buckets before the count, so every
	// bucket increment it sees comes with the count's, and no bucket
	// exceeds Count.
	t.count.Add(1)
	if err != nil {
		t.errors.Add(1)
	}
	t.nanos.Add(int64(d))
	if i, _ := slices.BinarySearch(t.bounds, d); i < len(t.bounds) {
		t.buckets[i].Add(1)
	}
}

// get returns the Timings so far. The buckets are read before the count,
// and observe counts an operation first, so no bucket ever exceeds Count.
func (t *timings) get() Timings {
	if t == nil {
		return Timings{}
	}
	out := Timings{Buckets: make([]TimingBucket, len(t.bounds))}
	var sum uint64
	for i, le := range t.bounds {
		sum += t.buckets[i].Load()
		out.Buckets[i] = TimingBucket{Le: le, Count: sum}
	}
	out.Total = time.Duration(t.nanos.Load())
	out.Errors = t.errors.Load()
	out.Count = t.count.Load()
	return out
}
