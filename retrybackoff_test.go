package caskade

import (
	"context"
	"testing"
	"time"
)

// TestRetryBackoff checks the waits between attempts of Transact and
// ReadTransact: FoundationDB's 10 ms doubling to 1 s, each times a factor
// in [0.5, 1.5), taken through retryAfter, which the test records.
func TestRetryBackoff(t *testing.T) {
	var waits []time.Duration
	retryAfter = func(d time.Duration) <-chan time.Time {
		waits = append(waits, d)
		ch := make(chan time.Time, 1)
		ch <- time.Time{}
		return ch
	}
	t.Cleanup(func() { retryAfter = time.After })
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check := func(name string, attempts int) {
		t.Helper()
		if len(waits) != attempts-1 {
			t.Fatalf("%s: %d waits for %d attempts", name, len(waits), attempts)
		}
		base := 10 * time.Millisecond
		for i, d := range waits {
			if d < base/2 || d >= base*3/2 {
				t.Errorf("%s: wait %d is %v, want within [%v, %v)", name, i, d, base/2, base*3/2)
			}
			base = min(2*base, time.Second)
		}
		waits = waits[:0]
	}
	const attempts = 10 // the last waits are capped at 1 s
	n := 0
	err = db.ReadTransact(context.Background(), func(tx *Tx) error {
		if n++; n < attempts {
			return ErrTransactionTooOld
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	check("ReadTransact", attempts)
	n = 0
	err = db.Transact(context.Background(), func(tx *Tx) error {
		if n++; n < attempts {
			return ErrConflict
		}
		tx.Set([]byte("k"), []byte("v"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	check("Transact", attempts)
}
