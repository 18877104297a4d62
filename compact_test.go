package caskade

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade/vfs"
)

// Churn with TTLs and deletes leaves dead key bytes in memory; compacting
// the key directory while writers go on frees them and loses nothing,
// and a snapshot taken before still reads its own state.
func TestCompactKeys(t *testing.T) {
	fs := vfs.NewMem()
	db := openTest(t, "db", memOpts(fs))
	const keys = 2000
	for round := range 5 {
		b := new(Batch)
		for i := range keys {
			k := fmt.Appendf(nil, "key%05d", i)
			switch {
			case i%7 == round:
				b.Delete(k)
			default:
				b.SetWithTTL(k, fmt.Appendf(nil, "v%d-%d", round, i), time.Hour) // a new key copy each time
			}
		}
		if err := db.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	before := db.Stats()
	if before.KeyDeadBytes < 4*keys*8 {
		t.Fatalf("churn left only %d dead key bytes", before.KeyDeadBytes)
	}
	snap := db.Snapshot()
	defer snap.Close()

	// Writers on their own keys run while the directory is compacted.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	written := make([]int, 2)
	for w := range written {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := db.Set(fmt.Appendf(nil, "w%d-%04d", w, n%500), fmt.Appendf(nil, "%d", n)); err != nil {
					t.Error(err)
					return
				}
				if n%3 == 0 {
					db.Delete(fmt.Appendf(nil, "key%05d", (n*7+w)%keys))
				}
				written[w] = n + 1
			}
		})
	}
	if !db.compactKeys() {
		t.Fatal("compaction stopped")
	}
	close(stop)
	wg.Wait()

	after := db.Stats()
	if after.KeyCompactions != 1 {
		t.Fatalf("KeyCompactions = %d", after.KeyCompactions)
	}
	// What dead bytes remain come from the writers racing the compaction.
	if after.KeyDeadBytes >= before.KeyDeadBytes/2 {
		t.Fatalf("dead key bytes %d before, %d after", before.KeyDeadBytes, after.KeyDeadBytes)
	}
	for w, n := range written {
		for i := max(0, n-500); i < n; i++ {
			mustGet(t, db, fmt.Sprintf("w%d-%04d", w, i%500), fmt.Sprint(i))
		}
	}
	// The directory after compaction is the directory of a reopen.
	dump := func(db *DB) map[string]string {
		m := map[string]string{}
		it, err := db.NewIterator(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			m[string(it.Key())] = fmt.Sprintf("%s %+v", it.Value(), it.Info())
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	got := dump(db)
	for i := range keys {
		k := fmt.Sprintf("key%05d", i)
		if v, err := snap.Get([]byte(k)); i%7 == 4 {
			if err == nil {
				t.Fatalf("snapshot sees deleted %s", k)
			}
		} else if string(v) != fmt.Sprintf("v4-%d", i) {
			t.Fatalf("snapshot %s = %q, %v", k, v, err)
		}
	}
	snap.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	want := dump(openTest(t, "db", memOpts(fs)))
	if !maps.Equal(got, want) {
		t.Fatalf("after compaction %d keys; after reopen %d", len(got), len(want))
	}
}
