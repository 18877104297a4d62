package vfs

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A Syncer keeps its processor only after brief syncs, and stops after one
// slow sync; never with GOMAXPROCS=1.
func TestSyncerLearns(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var s Syncer
	if s.brief() {
		t.Fatal("brief before any sync")
	}
	for range 4 {
		s.observe(100 * time.Microsecond)
	}
	if !s.brief() {
		t.Fatalf("not brief after syncs of 100µs (average %v)", time.Duration(s.avg.Load()))
	}
	s.observe(4 * BriefSync)
	if s.brief() {
		t.Fatalf("brief after a sync of %v (average %v)", 4*BriefSync, time.Duration(s.avg.Load()))
	}
	for range 20 {
		s.observe(50 * time.Microsecond)
	}
	if !s.brief() {
		t.Fatalf("not brief again after fast syncs (average %v)", time.Duration(s.avg.Load()))
	}
	runtime.GOMAXPROCS(1)
	if s.brief() {
		t.Fatal("brief with GOMAXPROCS=1")
	}
}

// Both kinds of sync work on an OS file and report a closed file's error.
// (Files of other file systems get their own Sync: TestSyncData.)
func TestSyncerSyncs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, avg := range []time.Duration{0, time.Microsecond} {
		var s Syncer
		s.avg.Store(int64(avg))
		f, err := OS().Create(filepath.Join(t.TempDir(), "f"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("data"), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.Sync(f); err != nil {
			t.Fatalf("average %v: Sync: %v", avg, err)
		}
		if s.avg.Load() == 0 {
			t.Fatal("the sync was not measured")
		}
		f.Close()
		s.avg.Store(int64(avg))
		if err := s.Sync(f); err == nil {
			t.Fatalf("average %v: Sync of a closed file succeeded", avg)
		}
	}
}
