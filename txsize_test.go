package caskade

import (
	"errors"
	"fmt"
	"testing"
)

// sizedTx runs do in a transaction of a database whose TxnSizeLimit is
// limit, and returns what its mutations left in Err and what Commit
// returned.
func sizedTx(t *testing.T, limit int, do func(tx *Tx)) (mutErr, commitErr error) {
	t.Helper()
	_, tx := beginSized(t, limit)
	do(tx)
	mutErr = tx.Err()
	return mutErr, tx.Commit()
}

// beginSized begins a transaction in a database whose TxnSizeLimit is
// limit, holding the keys a to e (each "x").
func beginSized(t *testing.T, limit int) (*DB, *Tx) {
	t.Helper()
	db := openTest(t, t.TempDir(), &Options{TxnSizeLimit: limit})
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if err := db.Set([]byte(k), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	return db, tx
}

// A transaction's size is FoundationDB's getSize at commit: each
// mutation's parameters plus 56 bytes, each read and write conflict range
// (adjacent and overlapping ones merged) its bounds plus 32. Before, the
// conflict ranges did not count, so a transaction that read much and
// wrote little was never too large.
func TestTxSizeCountsConflictRanges(t *testing.T) {
	// 373 bytes: mutations 58 (Set a=1) + 59 (Clear c, the range
	// [c, c\0)) + 58 (ClearRange [d, f)) + 58 (Set d=x: 233; write
	// conflicts [a, a\0) 35, [c, c\0) 35, [d, f) 34 (d's merged in: 104);
	// read conflicts [b, b\0) and [b\0, b\0\0) merged, 36, and b read
	// again adds nothing.
	exact := func(tx *Tx) {
		tx.Set([]byte("a"), []byte("1"))
		tx.Get([]byte("b"))
		tx.Get([]byte("b\x00"))
		tx.Get([]byte("b"))
		tx.Clear([]byte("c"))
		tx.ClearRange([]byte("d"), []byte("f"))
		tx.Set([]byte("d"), []byte("x"))
	}
	manyReads := func(tx *Tx) {
		tx.Set([]byte("w"), []byte("1"))
		for i := range 30 {
			tx.Get(fmt.Appendf(nil, "r%02d", i))
		}
	}
	for _, c := range []struct {
		name  string
		limit int
		do    func(tx *Tx)
		want  error // from Commit; the mutations alone are never too large here
	}{
		{"exactly at the limit", 373, exact, nil},
		{"one byte over", 372, exact, ErrBatchTooLarge},
		{"many reads, one small write", 1000, manyReads, ErrBatchTooLarge},
		{"many reads, no write", 1000, func(tx *Tx) {
			for i := range 30 {
				tx.Get(fmt.Appendf(nil, "r%02d", i))
			}
		}, nil},
		{"one key read many times", 200, func(tx *Tx) {
			tx.Set([]byte("w"), []byte("1"))
			for range 100 {
				tx.Get([]byte("r"))
			}
		}, nil},
		{"read conflict ranges added", 300, func(tx *Tx) {
			tx.Set([]byte("w"), []byte("1"))
			for i := range 10 {
				tx.AddReadConflictKey(fmt.Appendf(nil, "r%02d", i*2))
			}
		}, ErrBatchTooLarge},
		{"the write conflict ranges of sets", 400, func(tx *Tx) {
			// 5 × 59 of mutations, 5 × 37 of their write conflicts.
			for i := range 5 {
				tx.Set(fmt.Appendf(nil, "k%d", i*2), []byte("v"))
			}
		}, ErrBatchTooLarge},
		{"write conflict ranges", 300, func(tx *Tx) {
			for i := range 10 {
				tx.AddWriteConflictKey(fmt.Appendf(nil, "r%02d", i*2))
			}
		}, ErrBatchTooLarge},
		{"a range read", 200, func(tx *Tx) {
			tx.Set([]byte("w"), []byte("1"))
			if _, err := tx.Range([]byte("a"), []byte("b"+string(make([]byte, 200))), nil); err != nil {
				t.Fatal(err)
			}
		}, ErrBatchTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			mutErr, err := sizedTx(t, c.limit, c.do)
			if mutErr != nil {
				t.Fatalf("a mutation failed: %v", mutErr)
			}
			var e *Error
			if !errors.Is(err, c.want) || (err != nil && (!errors.As(err, &e) || e.Code != 2101)) {
				t.Fatalf("commit: %v, want %v", err, c.want)
			}
		})
	}
}

// ApproximateSize adds up what each call costs as FoundationDB's
// read-your-writes transaction estimates it.
func TestTxApproximateSize(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(tx *Tx)
		want int
	}{
		{"nothing", func(tx *Tx) {}, 0},
		{"Set", func(tx *Tx) { tx.Set([]byte("k"), []byte("vv")) }, 56 + 3 + 32 + 3},
		{"Clear", func(tx *Tx) { tx.Clear([]byte("k")) }, 2 * (32 + 3)},
		{"ClearRange", func(tx *Tx) { tx.ClearRange([]byte("a"), []byte("c")) }, 56 + 2 + 32 + 2},
		{"Add", func(tx *Tx) { tx.Add([]byte("k"), make([]byte, 8)) }, 56 + 9 + 32 + 3},
		{"Get", func(tx *Tx) { tx.Get([]byte("k")) }, 32 + 3},
		{"Get twice", func(tx *Tx) { tx.Get([]byte("k")); tx.Get([]byte("k")) }, 2 * (32 + 3)},
		{"Get of an own write", func(tx *Tx) { tx.Set([]byte("k"), nil); tx.Get([]byte("k")) }, 56 + 1 + 32 + 3},
		{"AddReadConflictRange", func(tx *Tx) { tx.AddReadConflictRange([]byte("a"), []byte("bb")) }, 32 + 3},
		{"AddWriteConflictRange", func(tx *Tx) { tx.AddWriteConflictRange([]byte("a"), []byte("bb")) }, 32 + 3},
		{"Watch", func(tx *Tx) { tx.Watch([]byte("k")) }, 32 + 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openTest(t, t.TempDir(), nil)
			tx, _ := db.Begin()
			defer tx.Rollback()
			c.do(tx)
			if got := tx.ApproximateSize(); got != c.want {
				t.Fatalf("ApproximateSize %d, want %d", got, c.want)
			}
		})
	}
}

// A set or clear of a key replaces what the transaction wrote to it
// before, as in FoundationDB, whose read-your-writes layer commits only
// what is left of each key's operations: those replaced count in neither
// the size nor the commit. Before, a key set 10,000 times counted 10,000
// times and failed a transaction whose one surviving set was small.
func TestTxSizeCountsOnlyLiveMutations(t *testing.T) {
	big := make([]byte, 1000)
	for _, c := range []struct {
		name string
		do   func(tx *Tx)
		want map[string]string // after commit; "" absent
	}{
		{"one key set many times", func(tx *Tx) {
			for i := range 100 {
				tx.Set([]byte("k"), append(big[:len(big)-1:len(big)-1], byte('0'+i%10)))
			}
			tx.Set([]byte("k"), []byte("last"))
		}, map[string]string{"k": "last"}},
		{"sets and atomic adds replaced by a clear", func(tx *Tx) {
			for range 50 {
				tx.Set([]byte("a"), big)
				tx.Add([]byte("a"), big[:8])
			}
			tx.Clear([]byte("a"))
		}, map[string]string{"a": ""}},
		{"sets replaced by range clears", func(tx *Tx) {
			for range 50 {
				tx.Set([]byte("b"), big)
				tx.Set([]byte("c"), big)
				tx.ClearRange([]byte("b"), []byte("d"))
			}
			tx.Set([]byte("c"), []byte("kept"))
		}, map[string]string{"b": "", "c": "kept", "d": "x"}},
		{"clears replaced by sets", func(tx *Tx) {
			for range 100 {
				tx.Clear([]byte("e"))
				tx.Set([]byte("e"), big)
			}
			tx.Set([]byte("e"), []byte("1"))
			tx.Add([]byte("e"), []byte{1})
		}, map[string]string{"e": "2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, tx := beginSized(t, 20_000)
			c.do(tx)
			if err := tx.Err(); err != nil {
				t.Fatalf("a mutation failed: %v", err)
			}
			if tx.ApproximateSize() <= 20_000 {
				t.Fatalf("ApproximateSize %d: the estimate, which adds up every call, should be over the limit", tx.ApproximateSize())
			}
			if err := tx.Commit(); err != nil {
				t.Fatalf("commit: %v", err)
			}
			for k, want := range c.want {
				v, err := db.Get([]byte(k))
				if want == "" {
					if !errors.Is(err, ErrNotFound) {
						t.Fatalf("%s: %q, %v; want it absent", k, v, err)
					}
					continue
				}
				if err != nil || string(v) != want {
					t.Fatalf("%s: %q, %v; want %q", k, v, err, want)
				}
			}
		})
	}
}
