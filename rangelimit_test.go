package caskade

import (
	"errors"
	"fmt"
	"testing"
)

// A negative range limit fails the read with range_limits_invalid (2012),
// as FoundationDB refuses limits below its -1 sentinel, instead of
// meaning no limit; 0 still means no limit. In a transaction only the
// read fails: it adds no read conflict, and the transaction goes on.
func TestNegativeRangeLimit(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	for _, k := range []string{"a", "b", "c"} {
		if err := db.Set([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	a, z := FirstGreaterOrEqual([]byte("a")), FirstGreaterOrEqual([]byte("d"))
	snap := db.Snapshot()
	t.Cleanup(func() { snap.Close() })
	iterAll := func(it *TxIterator) ([]KeyValue, error) {
		var out []KeyValue
		for it.Next() {
			out = append(out, it.KeyValue())
		}
		return out, it.Err()
	}
	reads := []struct {
		name string
		read func(tx *Tx, o *RangeOptions) ([]KeyValue, error)
	}{
		{"DB.Range", func(_ *Tx, o *RangeOptions) ([]KeyValue, error) { return db.Range([]byte("a"), []byte("d"), o) }},
		{"DB.RangeSelect", func(_ *Tx, o *RangeOptions) ([]KeyValue, error) { return db.RangeSelect(a, z, o) }},
		{"Snapshot.Range", func(_ *Tx, o *RangeOptions) ([]KeyValue, error) { return snap.Range([]byte("a"), []byte("d"), o) }},
		{"Snapshot.RangeSelect", func(_ *Tx, o *RangeOptions) ([]KeyValue, error) { return snap.RangeSelect(a, z, o) }},
		{"Tx.Range", func(tx *Tx, o *RangeOptions) ([]KeyValue, error) { return tx.Range([]byte("a"), []byte("d"), o) }},
		{"Tx.GetRange", func(tx *Tx, o *RangeOptions) ([]KeyValue, error) { return tx.GetRange(a, z, o) }},
		{"Tx.RangeIterator", func(tx *Tx, o *RangeOptions) ([]KeyValue, error) { return iterAll(tx.RangeIterator(a, z, o)) }},
		{"Tx.KeyRangeIterator", func(tx *Tx, o *RangeOptions) ([]KeyValue, error) {
			return iterAll(tx.KeyRangeIterator([]byte("a"), []byte("d"), o))
		}},
		{"Tx.Snapshot().Range", func(tx *Tx, o *RangeOptions) ([]KeyValue, error) {
			return tx.Snapshot().Range([]byte("a"), []byte("d"), o)
		}},
	}
	for _, r := range reads {
		for _, limit := range []int{-1, -5, 0, 2} {
			t.Run(fmt.Sprintf("%s/limit %d", r.name, limit), func(t *testing.T) {
				tx, err := db.Begin()
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				kvs, err := r.read(tx, &RangeOptions{Limit: limit, Reverse: limit == -5})
				want := 3
				if limit > 0 {
					want = limit
				}
				if limit >= 0 {
					if err != nil || len(kvs) != want {
						t.Fatalf("%d pairs, %v; want %d", len(kvs), err, want)
					}
					return
				}
				var e *Error
				if !errors.Is(err, ErrRangeLimitsInvalid) || !errors.As(err, &e) || e.Code != 2012 || kvs != nil {
					t.Fatalf("%d pairs, %v; want range_limits_invalid (2012)", len(kvs), err)
				}
				if len(tx.reads) != 0 || tx.Err() != nil {
					t.Fatalf("the refused read left %d read conflicts, transaction error %v", len(tx.reads), tx.Err())
				}
				tx.Set([]byte("w"), []byte("1"))
				if err := tx.Commit(); err != nil {
					t.Fatalf("commit after the refused read: %v", err)
				}
			})
		}
	}
}
