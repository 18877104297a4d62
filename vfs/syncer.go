package vfs

import (
	"runtime"
	"sync/atomic"
	"time"
)

// A Syncer makes a file's data durable (SyncData) again and again, as a
// commit path under a sync-always policy does, and learns how long that
// takes on the file's device.
//
// A blocking system call normally hands its Go processor (P) back to the
// scheduler, and the runtime's monitor takes it away once the call has
// lasted 20 µs: every sync then costs a processor handoff, an extra OS
// thread's wakeup and the monitor waking every 20 µs, a tenth of a small
// server's CPU at thousands of syncs a second. While the recent syncs were
// brief (under BriefSync on average) and the program has other processors
// to run on, a Syncer's syncs keep their processor instead, as a
// single-threaded server's do. One slow sync is enough to make the next
// ones hand it back again, so a slow or stalled device blocks at most one
// processor for one sync. With GOMAXPROCS=1 it never keeps it: the sync
// would stop every goroutine, including the writers that group commit
// gathers while it runs.
type Syncer struct {
	avg atomic.Int64 // moving average of the sync durations in ns; 0 before the first
}

// BriefSync is the average sync duration below which a Syncer keeps its
// processor during a sync. It is above the 0.4-0.8 ms that a cloud
// volume's flush takes under load: at 500 µs, syncs on such a volume
// flipped to handing their processor back, and the runtime's monitor,
// waking every 20 µs meanwhile, took a sixth of a 2-core server's CPU
// under redis-benchmark's SET with --sync always.
const BriefSync = 2 * time.Millisecond

// Sync is SyncData(f).
func (s *Syncer) Sync(f File) error {
	hold := s.brief()
	start := time.Now()
	err := syncData(f, hold)
	s.observe(time.Since(start))
	return err
}

// brief reports whether the next sync may keep its processor.
func (s *Syncer) brief() bool {
	a := s.avg.Load()
	return a != 0 && a < int64(BriefSync) && runtime.GOMAXPROCS(0) > 1
}

// observe adds a sync's duration to the average, with a weight of 1/4: a
// single sync of four times BriefSync or more lifts any average above it.
// Concurrent calls may lose one another's update, which only delays the
// average by a sample.
func (s *Syncer) observe(d time.Duration) {
	a := s.avg.Load()
	if a == 0 {
		a = int64(d)
	} else {
		a += (int64(d) - a) / 4
	}
	s.avg.Store(max(a, 1))
}
