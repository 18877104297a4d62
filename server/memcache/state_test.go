package memcache

import (
	"fmt"
	"testing"
	"time"
)

// The state table is lossy, but a key never sees another key's state, nor
// an older version's, and an older version never overwrites a newer one.
func TestItemStates(t *testing.T) {
	tab := newItemStates(1) // 64 slots: most of the 1000 keys collide
	key := func(i int) []byte { return fmt.Appendf(nil, "key-%d", i) }
	at := func(i int) time.Time { return time.Unix(0, int64(i+1)*1000) }
	for i := range 1000 {
		if prev := tab.accessed(key(i), uint64(i+1), at(i)); prev.fetched {
			t.Fatalf("key %d: fetched before its first access", i)
		}
	}
	kept := 0
	for i := range 1000 {
		st := tab.get(key(i), uint64(i+1))
		if !st.fetched {
			continue
		}
		kept++
		if !st.lastAccess.Equal(at(i)) || st.version != uint64(i+1) {
			t.Fatalf("key %d: state %+v is not its own", i, st)
		}
	}
	if kept == 0 || kept > 64 {
		t.Fatalf("%d states kept in 64 slots", kept)
	}

	k := []byte("one")
	tab.update(k, 5, func(e *itemState) { e.stale = true })
	if st := tab.update(k, 4, func(e *itemState) { e.tokenSent = true }); st.stale || st.tokenSent {
		t.Fatalf("older version saw %+v", st)
	}
	if st := tab.get(k, 5); !st.stale || st.tokenSent {
		t.Fatalf("newer version's state %+v after an older version's update", st)
	}
	if st := tab.get(k, 6); st.stale {
		t.Fatal("a new version inherited the stale mark")
	}
	tab.accessed(k, 6, time.Now())
	if st := tab.get(k, 5); st.stale {
		t.Fatal("version 6 replaced version 5's state; 5 must read as unknown")
	}
	tab.reset()
	if st := tab.get(k, 6); st.fetched {
		t.Fatal("state survived reset")
	}
}
