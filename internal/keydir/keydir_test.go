package keydir

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestCloneIsolation(t *testing.T) {
	tr := New()
	for i := range 1000 {
		tr.Set(fmt.Appendf(nil, "k%04d", i), Entry{Version: uint64(i)})
	}
	snap := tr.Clone()
	for i := range 1000 {
		if i%2 == 0 {
			tr.Delete(fmt.Appendf(nil, "k%04d", i))
		} else {
			tr.Set(fmt.Appendf(nil, "k%04d", i), Entry{Version: 5000})
		}
	}
	tr.Set([]byte("new"), Entry{Version: 1})
	if snap.Len() != 1000 || tr.Len() != 501 {
		t.Fatalf("lengths: snap %d tree %d", snap.Len(), tr.Len())
	}
	for i := range 1000 {
		e, ok := snap.Get(fmt.Appendf(nil, "k%04d", i))
		if !ok || e.Version != uint64(i) {
			t.Fatalf("snapshot changed at %d: %v %v", i, e, ok)
		}
	}
}

func TestIterOrderAndSeek(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	tr := New()
	model := map[string]bool{}
	for range 2000 {
		k := fmt.Sprintf("%x", r.Uint32()%5000)
		tr.Set([]byte(k), Entry{})
		model[k] = true
	}
	var keys []string
	for k := range model {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	it := tr.Iter()
	defer it.Release()
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, it.Key())
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("forward order differs")
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, it.Key())
	}
	slices.Reverse(got)
	if !slices.Equal(got, keys) {
		t.Fatalf("reverse order differs")
	}
	for range 200 {
		probe := fmt.Sprintf("%x", r.Uint32()%5000)
		i, _ := slices.BinarySearch(keys, probe)
		ok := it.Seek([]byte(probe))
		if ok != (i < len(keys)) || (ok && it.Key() != keys[i]) {
			t.Fatalf("seek %q: ok=%v", probe, ok)
		}
	}
}

func TestExpired(t *testing.T) {
	if (Entry{}).Expired(100) {
		t.Fatal("zero expiry expired")
	}
	if !(Entry{Expiry: 100}).Expired(100) || (Entry{Expiry: 101}).Expired(100) {
		t.Fatal("expiry boundary wrong")
	}
}
