package main

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/tuple"
)

// Many students sign up, drop and switch at once, on classes with few
// seats: no class ever has more students than seats, seat counts stay
// exact, and no student attends more than MaxClasses.
func TestConcurrentStudents(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	db, err := caskade.Open(t.TempDir(), &caskade.Options{Sync: caskade.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	// Few classes, so that students contend for seats.
	classes := ClassNames()[:12]
	if err := Init(ctx, db, classes); err != nil {
		t.Fatal(err)
	}
	// Shrink every class to 7 seats to make "full" common.
	const seats = 7
	err = db.Transact(ctx, func(tx *caskade.Tx) error {
		for _, c := range classes {
			tx.Set(course.Pack(tuple.Tuple{c}), []byte(strconv.Itoa(seats)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := Simulate(ctx, db, classes, 30, 40, seed); err != nil {
		t.Fatal(err)
	}
	perClass := map[string]int{}
	perStudent := map[string]int{}
	lo, hi := attends.Range()
	kvs, err := db.Range(lo, hi, &caskade.RangeOptions{KeysOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range kvs {
		tup, err := attends.Unpack(kv.Key)
		if err != nil {
			t.Fatal(err)
		}
		perStudent[tup[0].(string)]++
		perClass[tup[1].(string)]++
	}
	for s, n := range perStudent {
		if n > MaxClasses {
			t.Errorf("student %s attends %d classes", s, n)
		}
	}
	for _, c := range classes {
		v, err := db.Get(course.Pack(tuple.Tuple{c}))
		if err != nil {
			t.Fatal(err)
		}
		left, _ := strconv.Atoi(string(v))
		if left < 0 || left+perClass[c] != seats {
			t.Errorf("class %q: %d seats left and %d students, want %d seats in all", c, left, perClass[c], seats)
		}
	}
	if len(kvs) == 0 {
		t.Fatal("nobody signed up")
	}
	avail, err := AvailableClasses(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d sign-ups held; %d of %d classes have seats left", len(kvs), len(avail), len(classes))
}
