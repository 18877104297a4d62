package caskade

import (
	"errors"
	"testing"
	"time"
)

func TestTimingsBuckets(t *testing.T) {
	tm := newTimings([]time.Duration{time.Millisecond, time.Second})
	now := time.Now()
	tm.observe(now, nil)                              // about 0: the first bucket
	tm.observe(now.Add(-500*time.Millisecond), nil)   // the second
	tm.observe(now.Add(-time.Hour), errors.New("no")) // past every bound
	got := tm.get()
	if got.Count != 3 || got.Errors != 1 || got.Total < time.Hour || got.Total > 2*time.Hour {
		t.Fatalf("count %d errors %d total %v", got.Count, got.Errors, got.Total)
	}
	want := []TimingBucket{{time.Millisecond, 1}, {time.Second, 2}}
	if len(got.Buckets) != 2 || got.Buckets[0] != want[0] || got.Buckets[1] != want[1] {
		t.Fatalf("buckets %v, want %v", got.Buckets, want)
	}
	var nilT *timings
	nilT.observe(now, nil)
	if got := nilT.get(); got.Count != 0 || got.Buckets != nil {
		t.Fatalf("nil timings: %+v", got)
	}
}

// Stats times the fsyncs of every policy's commit path and of Sync, and
// the merges.
func TestStatsTimeSyncsAndMerges(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncAlways, SyncEverySec, SyncNone} {
		t.Run(policy.String(), func(t *testing.T) {
			db := openTest(t, t.TempDir(), &Options{Sync: policy, MergeInterval: -1, SyncInterval: time.Millisecond})
			for i := range 3 {
				if err := db.Set([]byte{byte(i)}, []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Sync(); err != nil {
				t.Fatal(err)
			}
			st := db.Stats()
			min := uint64(1) // Sync
			if policy == SyncAlways {
				min = 4 // and a group commit per Set
			}
			if st.Syncs.Count < min || st.Syncs.Errors != 0 || st.Syncs.Total <= 0 ||
				len(st.Syncs.Buckets) != len(syncBounds) || st.Syncs.Buckets[len(syncBounds)-1].Count > st.Syncs.Count {
				t.Fatalf("syncs: %+v, want at least %d", st.Syncs, min)
			}
			for i := range 3 {
				if err := db.Set([]byte{byte(i)}, []byte("w")); err != nil {
					t.Fatal(err)
				}
			}
			ms, err := db.Merge(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			st = db.Stats()
			if st.MergeTimings.Count != 1 || st.MergeTimings.Errors != 0 || st.MergeTotals.Records != ms.Records ||
				st.MergeTotals.InputBytes != ms.InputBytes || st.MergeTotals.OutputBytes == 0 {
				t.Fatalf("after a merge of %+v: timings %+v, totals %+v", ms, st.MergeTimings, st.MergeTotals)
			}
		})
	}
}

// A Timings read while operations are being observed never has a bucket
// above its Count: Prometheus takes a histogram whose buckets exceed its
// count for a broken one.
func TestTimingsBucketsNeverExceedCount(t *testing.T) {
	tm := newTimings([]time.Duration{time.Hour})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		now := time.Now()
		for {
			select {
			case <-stop:
				return
			default:
				tm.observe(now, nil)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for i := 0; i < 200000; i++ {
		if got := tm.get(); got.Buckets[0].Count > got.Count {
			t.Fatalf("read %d: bucket holds %d operations, Count %d", i, got.Buckets[0].Count, got.Count)
		}
	}
}
