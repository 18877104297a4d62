package caskade

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade/vfs"
)

func TestAddInt(t *testing.T) {
	clock := newTestClock()
	o := memOpts(vfs.NewMem())
	o.Now = clock.Now
	db := openTest(t, "db", o)
	add := func(key string, delta int64) (int64, error) {
		b := new(Batch)
		i := b.AddInt([]byte(key), delta)
		err := db.Write(b)
		return b.Int(i), err
	}
	if n, err := add("n", 5); n != 5 || err != nil {
		t.Fatalf("add to a missing key: %d, %v", n, err)
	}
	if n, err := add("n", -7); n != -2 || err != nil {
		t.Fatalf("add -7: %d, %v", n, err)
	}
	mustGet(t, db, "n", "-2")

	// The expiry and flags stay.
	exp := clock.Now().Add(time.Hour)
	if err := db.SetEntry([]byte("e"), []byte("10"), SetOptions{ExpiresAt: exp, Flags: 7}); err != nil {
		t.Fatal(err)
	}
	if n, err := add("e", 1); n != 11 || err != nil {
		t.Fatalf("add to a key with a TTL: %d, %v", n, err)
	}
	if _, info, err := db.Lookup([]byte("e")); err != nil || info.Flags != 7 || !info.ExpiresAt.Equal(exp.Truncate(time.Millisecond)) {
		t.Fatalf("after add: %+v, %v", info, err)
	}
	// An expired key counts as missing, and its expiry goes with it.
	clock.Advance(2 * time.Hour)
	if n, err := add("e", 1); n != 1 || err != nil {
		t.Fatalf("add to an expired key: %d, %v", n, err)
	}
	if _, info, err := db.Lookup([]byte("e")); err != nil || !info.ExpiresAt.IsZero() {
		t.Fatalf("after add to an expired key: %+v, %v", info, err)
	}

	// Refusals apply nothing of the batch.
	for _, tc := range []struct {
		val   string
		delta int64
		want  error
	}{
		{"abc", 1, ErrNotInteger}, {"", 1, ErrNotInteger}, {" 1", 1, ErrNotInteger},
		{"+1", 1, ErrNotInteger}, {"01", 1, ErrNotInteger}, {"-0", 1, ErrNotInteger},
		{"1.5", 1, ErrNotInteger}, {"99999999999999999999", 1, ErrNotInteger},
		{strconv.FormatInt(1<<63-1, 10), 1, ErrOverflow},
		{strconv.FormatInt(-1<<63, 10), -1, ErrOverflow},
	} {
		db.Set([]byte("v"), []byte(tc.val))
		b := new(Batch)
		b.Set([]byte("side"), []byte(tc.val))
		b.AddInt([]byte("v"), tc.delta)
		if err := db.Write(b); !errors.Is(err, tc.want) {
			t.Fatalf("add %d to %q: %v, want %v", tc.delta, tc.val, err, tc.want)
		}
		if _, err := db.Get([]byte("side")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a refused batch applied a write (%q)", tc.val)
		}
		mustGet(t, db, "v", tc.val)
	}
	for _, v := range []string{"0", "-1", strconv.FormatInt(-1<<63+1, 10)} {
		db.Set([]byte("v"), []byte(v))
		if _, err := add("v", -1); err != nil {
			t.Fatalf("add -1 to %s: %v", v, err)
		}
	}
}

// A refused batch among others in one group leaves the others, and what
// they see of each other, intact.
func TestAddIntInGroup(t *testing.T) {
	db := openTest(t, "db", memOpts(vfs.NewMem()))
	b1, b2, b3 := new(Batch), new(Batch), new(Batch)
	b1.Set([]byte("k"), []byte("5"))
	b2.Set([]byte("k"), []byte("x"))     // undone with its batch
	b2.AddInt([]byte("k"), 1)            // refused: "x" is no integer
	i3 := b3.AddInt([]byte("k"), 10)     // sees b1's 5
	b3.Set([]byte("after"), []byte("y")) // applied
	errs := db.WriteBatches([]*Batch{b1, b2, b3})
	if errs[0] != nil || !errors.Is(errs[1], ErrNotInteger) || errs[2] != nil {
		t.Fatalf("errors %v", errs)
	}
	if b3.Int(i3) != 15 {
		t.Fatalf("b3 saw %d", b3.Int(i3))
	}
	mustGet(t, db, "k", "15")
	mustGet(t, db, "after", "y")
}

// Concurrent increments never conflict and never lose one.
func TestAddIntConcurrent(t *testing.T) {
	db := openTest(t, "db", memOpts(vfs.NewMem()))
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				b := new(Batch)
				b.AddInt([]byte("c"), 1)
				b.AddInt(fmt.Appendf(nil, "w%d", w), int64(i))
				if err := db.Write(b); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	mustGet(t, db, "c", strconv.Itoa(workers*each))
	mustGet(t, db, "w3", strconv.Itoa(each*(each-1)/2))
}

// An increment of an absent key whose length and search hint are those of
// another key in its leaf reads that key's record as the candidate the
// key directory names (it does not read keys back from memory), finds
// another key there, and counts from zero without touching it.
func TestAddIntBesideACandidate(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, MergeInterval: -1, ExpiryPeriod: -1})
	for k, v := range map[string]string{"k:aaaX1": "5", "k:bbbX2": "7"} {
		if err := db.Set([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	db.mu.RLock()
	_, _, ok, verify := db.tree.FindProbe([]byte("k:aaaZ1"))
	db.mu.RUnlock()
	if !ok || !verify {
		t.Fatalf("FindProbe of the absent key: ok %v, verify %v; want a candidate to verify", ok, verify)
	}
	for want := int64(1); want <= 2; want++ {
		var b Batch
		i := b.AddInt([]byte("k:aaaZ1"), 1)
		if err := db.Write(&b); err != nil {
			t.Fatal(err)
		}
		if got := b.Int(i); got != want {
			t.Fatalf("increment %d: %d", want, got)
		}
	}
	for k, want := range map[string]string{"k:aaaX1": "5", "k:bbbX2": "7", "k:aaaZ1": "2"} {
		if v, err := db.Get([]byte(k)); err != nil || string(v) != want {
			t.Fatalf("%s = %q, %v; want %q", k, v, err, want)
		}
	}
}
