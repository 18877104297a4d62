package caskade

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// Watches set up while other goroutines write the key miss no change: once
// the writers are done, every watch whose value differs from the key's
// final one has fired (one whose value is the final one may have fired on
// a change undone since).
func TestWatchMissesNoChangeUnderConcurrentWrites(t *testing.T) {
	seed := testSeed(t)
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone})
	key := []byte("k")
	type watched struct {
		w       *Watch
		val     string
		present bool
	}
	var mu sync.Mutex
	var all []watched
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for range 200 {
				switch r.IntN(4) {
				case 0:
					db.Delete(key)
				case 1:
					tx, _ := db.Begin()
					v, err := tx.Get(key)
					w := tx.Watch(key)
					if r.IntN(2) == 0 {
						tx.Set(key, fmt.Appendf(nil, "%d", r.IntN(3)))
					}
					if err := tx.Commit(); err != nil {
						continue // a conflict: its watch reports it
					}
					if tx.CommittedVersion() != 0 {
						continue // compared with its own write, not v
					}
					mu.Lock()
					all = append(all, watched{w, string(v), err == nil})
					mu.Unlock()
				default:
					db.Set(key, fmt.Appendf(nil, "%d", r.IntN(3)))
				}
			}
		}()
	}
	wg.Wait()
	final, err := db.Get(key)
	for _, x := range all {
		if (err == nil) != x.present || (x.present && string(final) != x.val) {
			if !watchFired(x.w) {
				t.Fatalf("a watch that saw %q (present %v) has not fired; the key is %q, %v", x.val, x.present, final, err)
			}
		}
	}
}
