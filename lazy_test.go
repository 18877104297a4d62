package caskade

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A transaction's read that finds a key expired queues its drop; the drop
// commits before the transaction does, and must not fail it with a
// conflict: nothing it read changed.
func TestLazyDropNoSelfConflict(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	db := openTest(t, t.TempDir(), &Options{ExpiryPeriod: -1, MergeInterval: -1,
		Now: func() time.Time { return time.UnixMilli(clock.Load()) }})
	heard := make(chan string, 10)
	db.SubscribeExpiry(func(changed, expired [][]byte) {
		for _, k := range expired {
			heard <- string(k)
		}
	})
	reads := map[string]func(tx *Tx) error{
		"get": func(tx *Tx) error {
			if _, err := tx.Get([]byte("k")); err != ErrNotFound {
				return fmt.Errorf("get: %v", err)
			}
			return nil
		},
		"range": func(tx *Tx) error {
			if kvs, err := tx.Range([]byte("k"), []byte("l"), nil); err != nil || len(kvs) != 0 {
				return fmt.Errorf("range: %q, %v", kvs, err)
			}
			return nil
		},
	}
	for name, read := range reads {
		if err := db.SetEntry([]byte("k"), []byte("v"), SetOptions{ExpiresAt: time.UnixMilli(clock.Load() + 10)}); err != nil {
			t.Fatal(err)
		}
		clock.Add(20)
		tx := mustBegin(t, db)
		if err := read(tx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-heard:
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: no lazy drop", name)
		}
		tx.Set([]byte("other"), []byte("x"))
		if err := tx.Commit(); err != nil {
			t.Errorf("%s: commit after its own read's lazy drop: %v", name, err)
		}
	}
}

// Reads that find keys expired race writers that set them again, with and
// without TTLs; a key set without TTL must never be dropped by the lazy
// expiry of an older, expired value.
func TestLazyExpiryNeverDropsNewerValue(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	db := openTest(t, t.TempDir(), &Options{ExpiryPeriod: -1, MergeInterval: -1, Sync: SyncNone,
		Now: func() time.Time { return time.UnixMilli(clock.Load()) }})
	var drops atomic.Int64
	db.SubscribeExpiry(func(changed, expired [][]byte) { drops.Add(int64(len(expired))) })
	// Until the writers are done, a clock moves and readers read.
	stop := make(chan struct{})
	var busy sync.WaitGroup
	untilStop := func(step func()) {
		busy.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				step()
			}
		})
	}
	keys := []string{"a", "b", "c", "d"}
	untilStop(func() {
		clock.Add(1)
		runtime.Gosched()
	})
	for range 2 {
		untilStop(func() {
			for _, k := range keys {
				db.Get([]byte(k))
				db.Stat([]byte(k))
				s := db.Snapshot()
				s.Get([]byte(k))
				s.Close()
			}
		})
	}
	errs := make(chan error, len(keys))
	var writers sync.WaitGroup
	start := time.Now() // a time budget, so that -race runs stay short
	for _, k := range keys {
		writers.Go(func() {
			for i := 0; i < 3000 && time.Since(start) < 1500*time.Millisecond; i++ {
				v := []byte(fmt.Sprint(i))
				if i%3 != 0 {
					if err := db.SetEntry([]byte(k), v, SetOptions{ExpiresAt: time.UnixMilli(clock.Load() + 1)}); err != nil {
						errs <- err
						return
					}
					continue
				}
				if err := db.Set([]byte(k), v); err != nil {
					errs <- err
					return
				}
				for j := 0; j < 3; j++ {
					runtime.Gosched()
					if got, err := db.Get([]byte(k)); err != nil || string(got) != string(v) {
						errs <- fmt.Errorf("%s: set %s without TTL, then read %q %v", k, v, got, err)
						return
					}
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	busy.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d lazy drops", drops.Load())
}

// A read of an old snapshot that finds an older value of a key expired
// must not make the lazy expiry forget that a newer read found the newer
// value expired: the key is dropped, and subscribers hear of it, either
// way.
func TestLazyExpiryKeepsNewestVersionFound(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	db := openTest(t, t.TempDir(), &Options{ExpiryPeriod: -1, MergeInterval: -1,
		Now: func() time.Time { return time.UnixMilli(clock.Load()) }})
	soon := func() SetOptions { return SetOptions{ExpiresAt: time.UnixMilli(clock.Load() + 10)} }
	for _, k := range []string{"x", "k"} {
		if err := db.SetEntry([]byte(k), []byte("1"), soon()); err != nil {
			t.Fatal(err)
		}
	}
	clock.Add(20)
	old := db.Snapshot() // sees k's first value, expired
	defer old.Close()
	if err := db.SetEntry([]byte("k"), []byte("2"), soon()); err != nil {
		t.Fatal(err)
	}
	clock.Add(20)

	entered, gate := make(chan struct{}), make(chan struct{})
	heard := make(chan string, 4)
	var first atomic.Bool
	db.SubscribeExpiry(func(changed, expired [][]byte) {
		for _, k := range expired {
			heard <- string(k)
		}
		if first.CompareAndSwap(false, true) {
			close(entered)
			<-gate // hold the lazy expiry worker in its commit
		}
	})
	db.Get([]byte("x"))
	<-entered
	// While the worker is busy: the newest read finds k's second value
	// expired, then the old snapshot its first.
	db.Get([]byte("k"))
	old.Get([]byte("k"))
	close(gate)
	if k := <-heard; k != "x" {
		t.Fatalf("heard %q first", k)
	}
	select {
	case k := <-heard:
		if k != "k" {
			t.Fatalf("heard %q, want k", k)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the expired k was never dropped")
	}
}

// Many keys found expired at once, more than the lazy queue holds, then
// Close while the worker may still hold queued keys; a read-only database
// queues nothing.
func TestLazyExpiryManyThenClose(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	dir := t.TempDir()
	db, err := Open(dir, &Options{ExpiryPeriod: -1, MergeInterval: -1, Sync: SyncNone, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var dropped atomic.Int64
	db.SubscribeExpiry(func(changed, expired [][]byte) { dropped.Add(int64(len(expired))) })
	const n = maxLazyExpiry + 1000
	if err := db.Transact(t.Context(), func(tx *Tx) error {
		for i := range n {
			tx.SetEntry([]byte(fmt.Sprintf("k%05d", i)), []byte("v"), SetOptions{ExpiresAt: time.UnixMilli(clock.Load() + 10)})
		}
		tx.Set([]byte("live"), []byte("v"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	clock.Add(20)
	for round := 0; round < 2; round++ {
		for i := range n {
			if _, err := db.Get([]byte(fmt.Sprintf("k%05d", i))); err != ErrNotFound {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d dropped before Close", dropped.Load())
	ro, err := Open(dir, &Options{ReadOnly: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ro.Subscribe(func([][]byte) {})
	for i := range 10 {
		if _, err := ro.Get([]byte(fmt.Sprintf("k%05d", i))); err != ErrNotFound {
			t.Fatal(err)
		}
	}
	if v, err := ro.Get([]byte("live")); err != nil || string(v) != "v" {
		t.Fatalf("live: %q %v", v, err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
}
