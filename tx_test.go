package caskade

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade/tuple"
	"github.com/caskade/caskade/vfs"
)

func le(n uint64, size int) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, n)
	return b[:size]
}

func TestTxReadYourWrites(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		db.Set([]byte(k), []byte("db-"+k))
	}
	tx, _ := db.Begin()
	defer tx.Rollback()
	get := func(k string) string {
		t.Helper()
		v, err := tx.Get([]byte(k))
		if errors.Is(err, ErrNotFound) {
			return "<none>"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	keys := func() string {
		t.Helper()
		kvs, err := tx.GetRange(FirstGreaterOrEqual(nil), FirstGreaterOrEqual([]byte("\xff")), nil)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, kv := range kvs {
			s = append(s, string(kv.Key)+"="+string(kv.Value))
		}
		return fmt.Sprint(s)
	}
	steps := []struct {
		do   func()
		want string // the whole range as the transaction sees it
	}{
		{func() {}, "[a=db-a b=db-b c=db-c d=db-d e=db-e]"},
		{func() { tx.Set([]byte("b"), []byte("tx-b")) }, "[a=db-a b=tx-b c=db-c d=db-d e=db-e]"},
		{func() { tx.Clear([]byte("a")) }, "[b=tx-b c=db-c d=db-d e=db-e]"},
		{func() { tx.ClearRange([]byte("b"), []byte("d")) }, "[d=db-d e=db-e]"},
		{func() { tx.Set([]byte("bb"), []byte("tx-bb")) }, "[bb=tx-bb d=db-d e=db-e]"},
		{func() { tx.Add([]byte("ctr"), le(5, 8)) }, "[bb=tx-bb ctr=\x05\x00\x00\x00\x00\x00\x00\x00 d=db-d e=db-e]"},
		{func() { tx.CompareAndClear([]byte("e"), []byte("db-e")) }, "[bb=tx-bb ctr=\x05\x00\x00\x00\x00\x00\x00\x00 d=db-d]"},
		{func() { tx.AppendIfFits([]byte("d"), []byte("+x")) }, "[bb=tx-bb ctr=\x05\x00\x00\x00\x00\x00\x00\x00 d=db-d+x]"},
	}
	for i, s := range steps {
		s.do()
		if got := keys(); got != s.want {
			t.Fatalf("step %d: %s, want %s", i, got, s.want)
		}
	}
	if get("b") != "<none>" || get("bb") != "tx-bb" || get("c") != "<none>" {
		t.Fatal("point reads disagree with the range")
	}
	// Selectors see the transaction's writes too.
	for _, c := range []struct {
		sel  KeySelector
		want string
	}{
		{FirstGreaterThan([]byte("a")), "bb"},
		{LastLessThan([]byte("d")), "ctr"},
		{FirstGreaterOrEqual([]byte("c")), "ctr"},
		{FirstGreaterThan([]byte("bb")).Add(1), "d"},
	} {
		k, err := tx.GetKey(c.sel)
		if err != nil || string(k) != c.want {
			t.Errorf("%v = %q, %v; want %q", c.sel, k, err, c.want)
		}
	}
	// Reverse with a limit.
	kvs, _ := tx.GetRange(FirstGreaterOrEqual(nil), FirstGreaterOrEqual([]byte("\xff")), &RangeOptions{Reverse: true, Limit: 2})
	if len(kvs) != 2 || string(kvs[0].Key) != "d" || string(kvs[1].Key) != "ctr" {
		t.Fatalf("reverse limit: %v", kvs)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, db, "a")
	mustMiss(t, db, "c")
	mustGet(t, db, "bb", "tx-bb")
	mustGet(t, db, "d", "db-d+x")
	mustGet(t, db, "ctr", string(le(5, 8)))
	if err := tx.Commit(); !errors.Is(err, ErrTransactionDone) {
		t.Fatalf("second commit: %v", err)
	}
}

// Atomic operations on stored values, against FoundationDB's semantics.
func TestAtomicOps(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	cases := []struct {
		name  string
		start []byte // nil: key absent
		do    func(tx *Tx, k []byte)
		want  []byte // nil: key absent afterwards
	}{
		{"add", le(10, 8), func(tx *Tx, k []byte) { tx.Add(k, le(5, 8)) }, le(15, 8)},
		{"add wraps", []byte{0xff, 0xff}, func(tx *Tx, k []byte) { tx.Add(k, []byte{1, 0}) }, []byte{0, 0}},
		{"add to missing", nil, func(tx *Tx, k []byte) { tx.Add(k, le(7, 4)) }, le(7, 4)},
		{"add shorter param truncates", []byte{1, 2, 3}, func(tx *Tx, k []byte) { tx.Add(k, []byte{1}) }, []byte{2}},
		{"add longer param extends", []byte{0xff}, func(tx *Tx, k []byte) { tx.Add(k, []byte{1, 0, 0}) }, []byte{0, 1, 0}},
		{"and", []byte{0x0f}, func(tx *Tx, k []byte) { tx.BitAnd(k, []byte{0x3c}) }, []byte{0x0c}},
		{"and missing stores param", nil, func(tx *Tx, k []byte) { tx.BitAnd(k, []byte{0x3c}) }, []byte{0x3c}},
		{"or", []byte{0x0f}, func(tx *Tx, k []byte) { tx.BitOr(k, []byte{0x30}) }, []byte{0x3f}},
		{"xor", []byte{0x0f}, func(tx *Tx, k []byte) { tx.BitXor(k, []byte{0xff}) }, []byte{0xf0}},
		{"max", le(3, 2), func(tx *Tx, k []byte) { tx.Max(k, le(9, 2)) }, le(9, 2)},
		{"max keeps larger", le(300, 2), func(tx *Tx, k []byte) { tx.Max(k, le(9, 2)) }, le(300, 2)},
		{"min", le(3, 2), func(tx *Tx, k []byte) { tx.Min(k, le(9, 2)) }, le(3, 2)},
		{"min missing stores param", nil, func(tx *Tx, k []byte) { tx.Min(k, le(9, 2)) }, le(9, 2)},
		{"byte max", []byte("apple"), func(tx *Tx, k []byte) { tx.ByteMax(k, []byte("banana")) }, []byte("banana")},
		{"byte min", []byte("apple"), func(tx *Tx, k []byte) { tx.ByteMin(k, []byte("banana")) }, []byte("apple")},
		{"append", []byte("ab"), func(tx *Tx, k []byte) { tx.AppendIfFits(k, []byte("cd")) }, []byte("abcd")},
		{"compare and clear equal", []byte("x"), func(tx *Tx, k []byte) { tx.CompareAndClear(k, []byte("x")) }, nil},
		{"compare and clear differs", []byte("x"), func(tx *Tx, k []byte) { tx.CompareAndClear(k, []byte("y")) }, []byte("x")},
	}
	for i, c := range cases {
		for _, readInTx := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/read=%v", c.name, readInTx), func(t *testing.T) {
				k := fmt.Appendf(nil, "atomic-%d-%v", i, readInTx)
				if c.start != nil {
					db.Set(k, c.start)
				}
				err := db.Transact(context.Background(), func(tx *Tx) error {
					c.do(tx, k)
					if readInTx { // read-your-writes of an atomic op
						v, err := tx.Get(k)
						if c.want == nil && !errors.Is(err, ErrNotFound) || c.want != nil && !bytes.Equal(v, c.want) {
							return fmt.Errorf("in tx: %x, %v; want %x", v, err, c.want)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				v, err := db.Get(k)
				if c.want == nil {
					if !errors.Is(err, ErrNotFound) {
						t.Fatalf("got %x, %v; want absent", v, err)
					}
				} else if !bytes.Equal(v, c.want) {
					t.Fatalf("got %x, %v; want %x", v, err, c.want)
				}
			})
		}
	}
}

func TestConflicts(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	db.Set([]byte("k"), []byte("0"))
	db.Set([]byte("r1"), []byte("x"))
	// A read of k, changed by another commit: conflict.
	tx, _ := db.Begin()
	tx.Get([]byte("k"))
	tx.Set([]byte("out"), []byte("1"))
	db.Set([]byte("k"), []byte("1"))
	if err := tx.Commit(); !errors.Is(err, ErrConflict) || !IsRetryable(err) {
		t.Fatalf("read then changed: %v", err)
	}
	mustMiss(t, db, "out")
	// A snapshot read adds no conflict.
	tx, _ = db.Begin()
	tx.Snapshot().Get([]byte("k"))
	tx.Set([]byte("out"), []byte("2"))
	db.Set([]byte("k"), []byte("2"))
	if err := tx.Commit(); err != nil {
		t.Fatalf("snapshot read: %v", err)
	}
	// A key deleted after the read: conflict (the key directory has no
	// version for it, the history has).
	tx, _ = db.Begin()
	tx.Get([]byte("k"))
	tx.Set([]byte("out"), []byte("3"))
	db.Delete([]byte("k"))
	if err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("read then deleted: %v", err)
	}
	// A range read, then an insert into the range: conflict.
	tx, _ = db.Begin()
	tx.GetRange(FirstGreaterOrEqual([]byte("r")), FirstGreaterOrEqual([]byte("s")), nil)
	tx.Set([]byte("out"), []byte("4"))
	db.Set([]byte("r2"), []byte("y"))
	if err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("range then insert: %v", err)
	}
	// A range read with a limit covers only what it returned.
	tx, _ = db.Begin()
	kvs, _ := tx.GetRange(FirstGreaterOrEqual([]byte("r")), FirstGreaterOrEqual([]byte("s")), &RangeOptions{Limit: 1})
	if len(kvs) != 1 {
		t.Fatal(kvs)
	}
	tx.Set([]byte("out"), []byte("5"))
	db.Set([]byte("r3"), []byte("z"))
	if err := tx.Commit(); err != nil {
		t.Fatalf("write beyond a limited range read: %v", err)
	}
	// Blind writes and read-only transactions never conflict.
	tx, _ = db.Begin()
	tx.Set([]byte("r1"), []byte("blind"))
	db.Set([]byte("r1"), []byte("other"))
	if err := tx.Commit(); err != nil {
		t.Fatalf("blind write: %v", err)
	}
	tx, _ = db.Begin()
	tx.Get([]byte("r1"))
	db.Set([]byte("r1"), []byte("again"))
	if err := tx.Commit(); err != nil {
		t.Fatalf("read-only: %v", err)
	}
	// Explicit conflict ranges.
	tx, _ = db.Begin()
	tx.AddReadConflictKey([]byte("guard"))
	tx.Set([]byte("out"), []byte("6"))
	db.Set([]byte("guard"), []byte("1"))
	if err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("explicit read conflict: %v", err)
	}
	reader, _ := db.Begin()
	reader.Get([]byte("m1"))
	reader.Set([]byte("out"), []byte("7"))
	writer, _ := db.Begin()
	writer.AddWriteConflictRange([]byte("m"), []byte("n"))
	if err := writer.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := reader.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("explicit write conflict: %v", err)
	}
}

func TestTxLimitsAndLifetime(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, MaxKeySize: 10, MaxValueSize: 20, TxnSizeLimit: 200, ExpiryPeriod: -1})
	for _, c := range []struct {
		do   func(tx *Tx)
		want error
	}{
		{func(tx *Tx) { tx.Set(make([]byte, 11), nil) }, ErrKeyTooLarge},
		{func(tx *Tx) { tx.Set([]byte("k"), make([]byte, 21)) }, ErrValueTooLarge},
		{func(tx *Tx) {
			for i := range 20 {
				tx.Set(fmt.Appendf(nil, "k%d", i), make([]byte, 10))
			}
		}, ErrBatchTooLarge},
		{func(tx *Tx) { tx.ClearRange([]byte("z"), []byte("a")) }, ErrInvalidRange},
		{func(tx *Tx) { tx.Set([]byte("k"), nil); tx.AddReadConflictRange([]byte("z"), []byte("a")) }, ErrInvalidRange},
		{func(tx *Tx) { tx.AddWriteConflictRange([]byte("z"), []byte("a")) }, ErrInvalidRange},
	} {
		tx, _ := db.Begin()
		c.do(tx)
		err := tx.Commit()
		var e *Error
		if !errors.Is(err, c.want) || !errors.As(err, &e) || e.Code == 0 {
			t.Errorf("got %v, want %v", err, c.want)
		}
	}
	tx, _ := db.Begin()
	clk.Advance(6 * time.Second)
	if _, err := tx.Get([]byte("k")); !errors.Is(err, ErrTransactionTooOld) {
		t.Fatalf("read after the lifetime: %v", err)
	}
	if err := tx.Commit(); !errors.Is(err, ErrTransactionTooOld) {
		t.Fatalf("commit after the lifetime: %v", err)
	}
}

// Every read after the transaction's lifetime fails with
// transaction_too_old, not only the first one the transaction makes (as
// Options.TxnLifetime says), and so does a range read under way.
func TestTxReadsFailAfterLifetime(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1, Sync: SyncNone})
	for i := range 200 {
		mustSet(t, db, "v", fmt.Sprintf("k%03d", i))
	}
	tx := mustBegin(t, db)
	defer tx.Rollback()
	if _, err := tx.Get([]byte("k000")); err != nil {
		t.Fatal(err)
	}
	it := tx.KeyRangeIterator([]byte("k"), nil, nil)
	if !it.Next() {
		t.Fatal(it.Err())
	}
	clk.Advance(6 * time.Second)
	reads := map[string]func() error{
		"get":          func() error { _, err := tx.Get([]byte("k001")); return err },
		"snapshot get": func() error { _, err := tx.Snapshot().Get([]byte("k001")); return err },
		"get key":      func() error { _, err := tx.GetKey(FirstGreaterThan([]byte("k001"))); return err },
		"range":        func() error { _, err := tx.Range([]byte("k"), nil, &RangeOptions{Limit: 1}); return err },
	}
	for name, read := range reads {
		if err := read(); !errors.Is(err, ErrTransactionTooOld) {
			t.Errorf("%s after the lifetime: %v", name, err)
		}
	}
	n := 0
	for it.Next() {
		n++
	}
	if !errors.Is(it.Err(), ErrTransactionTooOld) || n >= 199 {
		t.Errorf("a range read under way went on for %d more pairs after the lifetime: %v", n, it.Err())
	}
}

func TestTransactRetriesAndRollsBack(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	runs := 0
	err := db.Transact(context.Background(), func(tx *Tx) error {
		runs++
		tx.Get([]byte("k"))
		if runs == 1 {
			db.Set([]byte("k"), []byte("interfere")) // makes the first try conflict
		}
		tx.Set([]byte("k"), []byte("mine"))
		return nil
	})
	if err != nil || runs != 2 {
		t.Fatalf("runs %d, err %v", runs, err)
	}
	mustGet(t, db, "k", "mine")
	boom := errors.New("boom")
	if err := db.Transact(context.Background(), func(tx *Tx) error {
		tx.Set([]byte("k"), []byte("never"))
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic swallowed")
			}
		}()
		db.Transact(context.Background(), func(tx *Tx) error {
			tx.Set([]byte("k"), []byte("never"))
			panic("in fn")
		})
	}()
	mustGet(t, db, "k", "mine")
	if n := db.Stats().OpenSnapshots; n != 0 {
		t.Fatalf("%d views leaked", n)
	}
}

// Concurrent transfers between accounts conserve the total; no update is
// lost and no transfer overdraws (write skew would).
func TestBankTransfers(t *testing.T) {
	seed := testSeed(t)
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone})
	const accounts, start = 10, 100
	acct := func(i int) []byte { return tuple.Tuple{"acct", i}.Pack() }
	for i := range accounts {
		db.Set(acct(i), le(start, 8))
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for range 100 {
				from, to, amount := r.IntN(accounts), r.IntN(accounts), uint64(1+r.IntN(30))
				err := db.Transact(context.Background(), func(tx *Tx) error {
					fb, err := tx.Get(acct(from))
					if err != nil {
						return err
					}
					bal := binary.LittleEndian.Uint64(fb)
					if bal < amount || from == to {
						return nil
					}
					tx.Set(acct(from), le(bal-amount, 8))
					tx.Add(acct(to), le(amount, 8))
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var total uint64
	for i := range accounts {
		v, _ := db.Get(acct(i))
		b := binary.LittleEndian.Uint64(v)
		if b > accounts*start {
			t.Fatalf("account %d has %d: an overdraft wrapped", i, b)
		}
		total += b
	}
	if total != accounts*start {
		t.Fatalf("total %d, want %d", total, accounts*start)
	}
}

// TestSerializableHistory runs random concurrent transactions and checks
// that the committed ones are equivalent to running them one at a time in
// commit-version order: each saw exactly the state left by those before it.
func TestSerializableHistory(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testSerializableHistory(t, false) })
	// Merges retire files and move records under the transactions.
	t.Run("merging", func(t *testing.T) { testSerializableHistory(t, true) })
}

func testSerializableHistory(t *testing.T, merging bool) {
	seed := testSeed(t)
	opts := &Options{Sync: SyncNone}
	if merging {
		opts.MaxFileSize, opts.MergeInterval = 2<<10, -1
	}
	db := openTest(t, t.TempDir(), opts)
	if merging {
		defer repeatInBackground(func() {
			if _, err := db.Merge(context.Background()); err != nil {
				t.Error(err)
			}
		})()
	}
	type record struct {
		version uint64
		reads   map[string]string // "" means absent
		writes  map[string]string
	}
	var mu sync.Mutex
	var history []record
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for range 150 {
				tx, _ := db.Begin()
				rec := record{reads: map[string]string{}, writes: map[string]string{}}
				for range 1 + r.IntN(4) {
					k := fmt.Sprintf("k%d", r.IntN(8))
					switch r.IntN(5) {
					case 0, 1:
						if _, seen := rec.writes[k]; seen {
							continue
						}
						v, err := tx.Get([]byte(k))
						if err != nil && !errors.Is(err, ErrNotFound) {
							t.Error(err)
							return
						}
						rec.reads[k] = string(v)
					case 2: // a range read: every key of [ka, kb) is read, present or not
						a := r.IntN(8)
						b := a + 1 + r.IntN(8-a)
						opts := &RangeOptions{Reverse: r.IntN(2) == 0}
						if r.IntN(2) == 0 {
							opts.Limit = 1 + r.IntN(3)
						}
						kvs, err := tx.GetRange(FirstGreaterOrEqual(fmt.Appendf(nil, "k%d", a)), FirstGreaterOrEqual(fmt.Appendf(nil, "k%d", b)), opts)
						if err != nil {
							t.Error(err)
							return
						}
						got := map[string]string{}
						for _, kv := range kvs {
							got[string(kv.Key)] = string(kv.Value)
						}
						// Stopped by the limit, it read only up to its last pair.
						lo, hi := fmt.Sprintf("k%d", a), fmt.Sprintf("k%d", b)
						if opts.Limit > 0 && len(kvs) == opts.Limit {
							last := string(kvs[len(kvs)-1].Key)
							if opts.Reverse {
								lo = last
							} else {
								hi = last + "\x00"
							}
						}
						for i := a; i < b; i++ {
							k := fmt.Sprintf("k%d", i)
							if _, seen := rec.writes[k]; !seen && k >= lo && k < hi {
								rec.reads[k] = got[k]
							}
						}
					case 3:
						if r.IntN(2) == 0 {
							tx.Clear([]byte(k))
							rec.writes[k] = "" // absent
							break
						}
						a := r.IntN(8)
						b := a + 1 + r.IntN(8-a)
						tx.ClearRange(fmt.Appendf(nil, "k%d", a), fmt.Appendf(nil, "k%d", b))
						for i := a; i < b; i++ {
							rec.writes[fmt.Sprintf("k%d", i)] = ""
						}
					default:
						v := fmt.Sprintf("%d-%d", w, r.Uint32())
						tx.Set([]byte(k), []byte(v))
						rec.writes[k] = v
					}
				}
				if err := tx.Commit(); err != nil {
					if !errors.Is(err, ErrConflict) {
						t.Error(err)
						return
					}
					continue
				}
				rec.version = tx.CommittedVersion()
				if rec.version == 0 {
					// It changed nothing (read-only, or clears of keys absent
					// when it committed): serialised at its read version.
					rec.version = tx.ReadVersion()
					rec.writes = nil
				}
				mu.Lock()
				history = append(history, rec)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// Writers at version v come before read-only transactions reading at v.
	slices.SortStableFunc(history, func(a, b record) int {
		if a.version != b.version {
			return int(a.version - b.version)
		}
		return len(b.writes) - len(a.writes)
	})
	state := map[string]string{}
	for i, rec := range history {
		for k, v := range rec.reads {
			if state[k] != v {
				t.Fatalf("transaction %d (version %d) read %s=%q, but the serial order had %q", i, rec.version, k, v, state[k])
			}
		}
		for k, v := range rec.writes {
			state[k] = v
		}
	}
	t.Logf("%d committed transactions checked", len(history))
}

func TestVersionstamps(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	tx, _ := db.Begin()
	key, err := tuple.Tuple{"log", tuple.IncompleteVersionstamp(0)}.PackWithVersionstamp(nil)
	if err != nil {
		t.Fatal(err)
	}
	tx.SetVersionstampedKey(key, []byte("entry"))
	val := append(append([]byte("at:"), make([]byte, 10)...), 3, 0, 0, 0)
	tx.SetVersionstampedValue([]byte("last"), val)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	vs, err := tx.Versionstamp()
	if err != nil || len(vs) != 10 || binary.BigEndian.Uint64(vs) != tx.CommittedVersion() {
		t.Fatalf("versionstamp %x, %v", vs, err)
	}
	lo, hi := tuple.Tuple{"log"}.Range()
	kvs, _ := db.Range(lo, hi, nil)
	if len(kvs) != 1 {
		t.Fatalf("%d log entries", len(kvs))
	}
	tup, err := tuple.Unpack(kvs[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	if got := tup[1].(tuple.Versionstamp); !bytes.Equal(got.TransactionVersion[:], vs) {
		t.Fatalf("key versionstamp %x, want %x", got.TransactionVersion, vs)
	}
	mustGet(t, db, "last", "at:"+string(vs))
}

func TestWatch(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	tx, _ := db.Begin()
	w := tx.Watch([]byte("w"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.C():
		t.Fatal("watch fired before any change")
	default:
	}
	db.Set([]byte("other"), []byte("x"))
	select {
	case <-w.C():
		t.Fatal("watch fired for another key")
	default:
	}
	db.Set([]byte("w"), []byte("changed"))
	if err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A watch of a transaction that fails reports the failure.
	tx, _ = db.Begin()
	w = tx.Watch([]byte("w"))
	tx.Rollback()
	if err := w.Wait(context.Background()); !errors.Is(err, ErrTransactionCancelled) {
		t.Fatalf("watch of a rolled back transaction: %v", err)
	}
	// A cancelled watch reports operation_cancelled (1101).
	tx, _ = db.Begin()
	w = tx.Watch([]byte("w"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	w.Cancel()
	if err := w.Wait(context.Background()); !errors.Is(err, ErrOperationCancelled) {
		t.Fatalf("cancelled watch: %v", err)
	}
}

// A watch misses no change: a read-only transaction's watch fires at once
// if its key changed after the read version, and a writing transaction's
// watch is armed by the time Commit returns.
func TestWatchNoGap(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	db.Set([]byte("k"), []byte("v1"))
	tx, _ := db.Begin()
	if _, err := tx.Get([]byte("k")); err != nil {
		t.Fatal(err)
	}
	w := tx.Watch([]byte("k"))
	db.Set([]byte("k"), []byte("v2")) // after the read version, before the watch is armed
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.C():
	default:
		t.Fatal("a change since the read version did not fire the watch")
	}
	// Unchanged keys, present or absent, do not fire.
	tx, _ = db.Begin()
	w1, w2 := tx.Watch([]byte("k")), tx.Watch([]byte("absent"))
	tx.Commit()
	select {
	case <-w1.C():
		t.Fatal("watch of an unchanged key fired")
	case <-w2.C():
		t.Fatal("watch of an absent key fired")
	default:
	}

	tx, _ = db.Begin()
	tx.Set([]byte("k"), []byte("v3"))
	w = tx.Watch([]byte("k"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.watchMu.Lock()
	armed := slices.Contains(db.watches["k"], w)
	db.watchMu.Unlock()
	if !armed {
		t.Fatal("the watch was not armed when Commit returned")
	}
	select {
	case <-w.C():
		t.Fatal("the watch fired for its own transaction's write")
	default:
	}
	db.Set([]byte("k"), []byte("v4"))
	if err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A writing transaction's watch compares with the value as the transaction
// saw it when it set the watch up, as FoundationDB's does: another
// transaction's change between the read version and the commit fails the
// commit (the watch read the key, see TestWatchAddsReadConflict) and so
// the watch, and the transaction's own write after the watch fires it (but
// not one before it, see TestWatchNoGap).
func TestWatchOfWriterSeesChangesSinceRead(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	db.Set([]byte("k"), []byte("v1"))
	fired := func(w *Watch) bool {
		select {
		case <-w.C():
			return true
		default:
			return false
		}
	}

	tx, _ := db.Begin()
	w := tx.Watch([]byte("k"))
	tx.Set([]byte("other"), []byte("x"))
	db.Set([]byte("k"), []byte("v2")) // after the read version
	if err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("commit of a writer whose watched key changed since its read version: %v, want ErrConflict", err)
	}
	if !fired(w) || !errors.Is(w.Wait(context.Background()), ErrConflict) {
		t.Error("the watch of a transaction that failed to commit did not report its conflict")
	}

	tx, _ = db.Begin()
	w = tx.Watch([]byte("k"))
	tx.Set([]byte("k"), []byte("v3"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if !fired(w) {
		t.Error("the transaction's own write after the watch did not fire it")
	}

	tx, _ = db.Begin()
	w = tx.Watch([]byte("k"))
	tx.ClearRange([]byte("a"), []byte("z"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if !fired(w) {
		t.Error("the transaction's own clear after the watch did not fire it")
	}

	// Unchanged: neither the transaction nor another touched the key.
	db.Set([]byte("k"), []byte("v4"))
	tx, _ = db.Begin()
	w = tx.Watch([]byte("k"))
	tx.Set([]byte("other"), []byte("y"))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if fired(w) {
		t.Fatal("the watch of an unchanged key fired")
	}
	db.Set([]byte("k"), []byte("v5"))
	if err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Whatever fails a commit, its watches report the error rather than wait
// forever: an invalid mutation, the lifetime, a read-only database; and a
// watch set up on a finished transaction fails at once.
func TestWatchOfFailedCommitReportsError(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, MaxKeySize: 10, ExpiryPeriod: -1})
	// Commit fails the watches before it returns: one still open never
	// would be.
	failed := func(w *Watch) error {
		select {
		case <-w.C():
			return w.Wait(context.Background())
		default:
			return errors.New("still waiting")
		}
	}

	tx, _ := db.Begin()
	w := tx.Watch([]byte("k"))
	tx.Set([]byte("a key longer than ten bytes"), []byte("v"))
	if err := tx.Commit(); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("commit: %v", err)
	}
	if err := failed(w); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("watch of a commit that failed on a mutation: %v", err)
	}

	tx, _ = db.Begin()
	w = tx.Watch([]byte("k"))
	tx.Set([]byte("k"), []byte("v"))
	clk.Advance(time.Hour)
	if err := tx.Commit(); !errors.Is(err, ErrTransactionTooOld) {
		t.Fatalf("commit: %v", err)
	}
	if err := failed(w); !errors.Is(err, ErrTransactionTooOld) {
		t.Fatalf("watch of a commit too old: %v", err)
	}

	tx, _ = db.Begin()
	tx.Commit()
	w = tx.Watch([]byte("k"))
	if err := failed(w); !errors.Is(err, ErrTransactionDone) {
		t.Fatalf("watch of a finished transaction: %v", err)
	}
}

// The conflict history is kept only while a transaction may need it.
func TestHistoryPruned(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	for i := range 100 {
		db.Set(fmt.Appendf(nil, "k%d", i), []byte("v"))
	}
	tx, _ := db.Begin()
	for i := range 100 {
		db.Delete(fmt.Appendf(nil, "k%d", i))
	}
	db.mu.RLock()
	kept := db.hist.deleted.Len()
	db.mu.RUnlock()
	if kept != 100 {
		t.Fatalf("history holds %d deletions while a transaction is live", kept)
	}
	tx.Rollback()
	db.Set([]byte("next"), []byte("commit"))
	db.mu.RLock()
	defer db.mu.RUnlock()
	if n := db.hist.deleted.Len(); n != 0 || len(db.hist.queue) != 0 {
		t.Fatalf("history holds %d deletions after the last transaction ended", n)
	}
}

// A transaction left open past its lifetime keeps no history: it can
// neither read nor commit, and one forgotten (never committed or rolled
// back) must not make the history grow for ever. One that reaches the
// commit path just after its deadline fails there as too old, without the
// history it would need.
func TestHistoryForgetsOutlivedTransactions(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, TxnLifetime: time.Second})
	for i := range 100 {
		db.Set(fmt.Appendf(nil, "k%d", i), []byte("v"))
	}
	forgotten, _ := db.Begin()
	forgotten.Get([]byte("k1"))
	live, _ := db.Begin()
	live.Get([]byte("k2"))
	live.Set([]byte("w"), []byte("x"))
	for i := range 50 {
		db.Delete(fmt.Appendf(nil, "k%d", i))
	}
	db.mu.RLock()
	kept := db.hist.deleted.Len()
	db.mu.RUnlock()
	if kept != 50 {
		t.Fatalf("history holds %d deletions while transactions are live", kept)
	}
	clk.Advance(2 * time.Second)
	for i := 50; i < 100; i++ {
		db.Delete(fmt.Appendf(nil, "k%d", i))
	}
	db.mu.RLock()
	n, q := db.hist.deleted.Len(), len(db.hist.queue)
	db.mu.RUnlock()
	if n != 0 || q != 0 {
		t.Fatalf("history holds %d deletions (%d queued) for transactions past their lifetime", n, q)
	}
	// live read k2, deleted since: its conflict is no longer in the
	// history, so its commit must fail as too old, not succeed. Commit
	// itself checks the deadline first; the commit path must too, for a
	// commit that passes it on the way in.
	req := &txnReq{readVersion: live.v.version, readTime: live.v.nowMs, reads: live.reads, deadline: live.start.Add(time.Second)}
	if _, err := db.commit(live.ops, req); !errors.Is(err, ErrTransactionTooOld) {
		t.Fatalf("commit past the deadline: %v, want transaction_too_old", err)
	}
	if err := live.Commit(); !errors.Is(err, ErrTransactionTooOld) {
		t.Fatalf("Commit past the deadline: %v", err)
	}
	forgotten.Rollback()
}

// TestTxModel compares a transaction's view (database plus its own sets,
// clears, range clears and atomic adds) with a map: point reads, key
// selectors and selector range reads, forward and reverse, with limits.
func TestTxModel(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 7))
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1})
	key := func() string { return fmt.Sprintf("k%02d", r.IntN(40)) }
	for round := range 30 {
		m := model{}
		for range 25 {
			k := key()
			db.Set([]byte(k), []byte("db"+k))
		}
		kvs, _ := db.Range(nil, nil, nil)
		for _, kv := range kvs {
			m[string(kv.Key)] = modelVal{val: string(kv.Value)}
		}
		tx, _ := db.Begin()
		for range r.IntN(15) {
			switch k := key(); r.IntN(4) {
			case 0:
				tx.Set([]byte(k), []byte("tx"+k))
				m[k] = modelVal{val: "tx" + k}
			case 1:
				tx.Clear([]byte(k))
				delete(m, k)
			case 2:
				lo, hi := key(), key()
				if lo > hi {
					lo, hi = hi, lo
				}
				tx.ClearRange([]byte(lo), []byte(hi))
				for mk := range m {
					if mk >= lo && mk < hi {
						delete(m, mk)
					}
				}
			default:
				tx.Add([]byte(k), []byte{1})
				old := m[k].val
				b := []byte{1}
				if len(old) > 0 {
					b[0] += old[0]
				}
				m[k] = modelVal{val: string(b)}
			}
		}
		for range 20 {
			sel := KeySelector{Key: []byte(key()), OrEqual: r.IntN(2) == 0, Offset: r.IntN(7) - 3}
			got, err := tx.GetKey(sel)
			if want := getKeyWant(m.resolve(sel, 0)); err != nil || !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("round %d: %v = %q, %v; want %q", round, sel, got, err, want)
			}
			k := key()
			v, err := tx.Get([]byte(k))
			if want, ok := m[k]; ok != (err == nil) || (ok && string(v) != want.val) {
				t.Fatalf("round %d: get %q = %q, %v; want %q", round, k, v, err, want.val)
			}
			b := KeySelector{Key: []byte(key()), OrEqual: r.IntN(2) == 0, Offset: r.IntN(3)}
			e := KeySelector{Key: []byte(key()), OrEqual: r.IntN(2) == 0, Offset: r.IntN(3)}
			opts := &RangeOptions{Limit: r.IntN(5), Reverse: r.IntN(2) == 0}
			kvs, err := tx.GetRange(b, e, opts)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := m.resolve(b, 0), m.resolve(e, 0)
			var want []string
			for _, mk := range m.live(0) {
				if lo != nil && mk >= string(lo) && (hi == nil || mk < string(hi)) {
					want = append(want, mk)
				}
			}
			if opts.Reverse {
				slices.Reverse(want)
			}
			if opts.Limit > 0 && len(want) > opts.Limit {
				want = want[:opts.Limit]
			}
			if len(kvs) != len(want) {
				t.Fatalf("round %d: range %v..%v %+v: %d pairs, want %d", round, b, e, opts, len(kvs), len(want))
			}
			for i, kv := range kvs {
				if string(kv.Key) != want[i] || string(kv.Value) != m[want[i]].val {
					t.Fatalf("round %d: range pair %d = %q=%q, want %q=%q", round, i, kv.Key, kv.Value, want[i], m[want[i]].val)
				}
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// What the transaction saw is what it committed.
		kvs, _ = db.Range(nil, nil, nil)
		if len(kvs) != len(m) {
			t.Fatalf("round %d: committed %d keys, the transaction saw %d", round, len(kvs), len(m))
		}
		for _, kv := range kvs {
			if m[string(kv.Key)].val != string(kv.Value) {
				t.Fatalf("round %d: committed %q=%q, saw %q", round, kv.Key, kv.Value, m[string(kv.Key)].val)
			}
		}
	}
}

// Range reads of a transaction without writes take the snapshot's own
// iterator; one abandoned half way is released with the transaction.
func TestTxIteratorFastPath(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	for i := range 100 {
		db.Set(fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "v%d", i))
	}
	err := db.ReadTransact(context.Background(), func(tx *Tx) error {
		it := tx.RangeIterator(FirstGreaterOrEqual([]byte("k010")), FirstGreaterOrEqual([]byte("k020")), nil)
		n := 0
		for it.Next() {
			if want := fmt.Sprintf("k%03d", 10+n); string(it.KeyValue().Key) != want {
				return fmt.Errorf("key %q, want %s", it.KeyValue().Key, want)
			}
			n++
		}
		if n != 10 {
			return fmt.Errorf("%d keys", n)
		}
		abandoned := tx.RangeIterator(FirstGreaterOrEqual(nil), FirstGreaterOrEqual([]byte("z")), &RangeOptions{Reverse: true})
		if !abandoned.Next() || string(abandoned.KeyValue().Key) != "k099" {
			return fmt.Errorf("reverse: %q", abandoned.KeyValue().Key)
		}
		return it.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	// A write part way switches an iterator to merging the writes.
	tx, _ := db.Begin()
	it := tx.RangeIterator(FirstGreaterOrEqual([]byte("k000")), FirstGreaterOrEqual([]byte("k005")), nil)
	it.Next()
	tx.Set([]byte("k0025"), []byte("new"))
	var got []string
	for it.Next() {
		got = append(got, string(it.KeyValue().Key))
	}
	if fmt.Sprint(got) != "[k001 k002 k0025 k003 k004]" {
		t.Fatalf("after a write: %v", got)
	}
	tx.Rollback()
	if n := db.Stats().OpenSnapshots; n != 0 {
		t.Fatalf("%d views left open", n)
	}
}

// A begin selector past the last key reads nothing (it used to read from
// the start of the key space).
func TestRangeBeginPastEnd(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	db.Set([]byte("a"), []byte("1"))
	for _, rev := range []bool{false, true} {
		kvs, err := db.RangeSelect(FirstGreaterOrEqual([]byte("b")), FirstGreaterOrEqual([]byte("c")), &RangeOptions{Reverse: rev})
		if err != nil || len(kvs) != 0 {
			t.Fatalf("db, reverse %v: %v %v", rev, kvs, err)
		}
		tx, _ := db.Begin()
		kvs, err = tx.GetRange(FirstGreaterOrEqual([]byte("b")), FirstGreaterOrEqual([]byte("c")), &RangeOptions{Reverse: rev})
		if err != nil || len(kvs) != 0 {
			t.Fatalf("tx, reverse %v: %v %v", rev, kvs, err)
		}
		tx.Rollback()
	}
}

func TestTxSetEntry(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1})
	err := db.Transact(context.Background(), func(tx *Tx) error {
		tx.SetEntry([]byte("k"), []byte("v"), SetOptions{ExpiresAt: clk.Now().Add(time.Minute), Flags: 9})
		if v, err := tx.Get([]byte("k")); err != nil || string(v) != "v" {
			return fmt.Errorf("in tx: %q %v", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, info, err := db.Lookup([]byte("k"))
	if err != nil || info.Flags != 9 || info.TTL(clk.Now()) != time.Minute {
		t.Fatalf("%+v %v", info, err)
	}
	clk.Advance(time.Minute)
	mustMiss(t, db, "k")
}

// The empty key is a key like any other in a range read, in both
// directions, with and without the transaction's own writes.
func TestTxRangeEmptyKey(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	for _, k := range []string{"", "a", "b"} {
		db.Set([]byte(k), []byte("v"+k))
	}
	for _, end := range []string{"a", "c"} {
		for _, writes := range []bool{false, true} {
			for _, rev := range []bool{false, true} {
				tx, _ := db.Begin()
				if writes {
					tx.Set([]byte("c"), []byte("vc"))
				}
				it := tx.RangeIterator(FirstGreaterOrEqual(nil), FirstGreaterOrEqual([]byte(end)), &RangeOptions{Reverse: rev})
				var got []string
				for it.Next() {
					got = append(got, fmt.Sprintf("%q", it.KeyValue().Key))
				}
				if err := it.Err(); err != nil {
					t.Fatal(err)
				}
				want := map[string]string{"a": `""`, "c": `"" "a" "b"`}[end]
				if rev && end == "c" {
					want = `"b" "a" ""`
				}
				if s := strings.Join(got, " "); s != want {
					t.Errorf("to %q, writes %v, reverse %v: %s, want %s", end, writes, rev, s, want)
				}
				tx.Rollback()
			}
		}
	}
}

// TestNoOpCommitVersionSurvivesReopen checks that a transaction that
// changes no key (it only adds write conflict ranges, or clears what is
// absent) still commits at a version of its own, as in FoundationDB, with
// a versionstamp, and never sees that version handed out again: not after
// a reopen, nor after a merge and a reopen. The record that carries the
// version changes no key (not even the empty one, which is live here) and
// tells no subscriber of a change.
func TestNoOpCommitVersionSurvivesReopen(t *testing.T) {
	for name, change := range map[string]func(tx *Tx){
		"write conflict":   func(tx *Tx) { tx.AddWriteConflictKey([]byte("x")) },
		"clear absent key": func(tx *Tx) { tx.Clear([]byte("absent")) },
		"clear empty range": func(tx *Tx) {
			tx.ClearRange([]byte("m"), []byte("n"))
		},
		"compare and clear, no match": func(tx *Tx) { tx.CompareAndClear([]byte(""), []byte("other")) },
	} {
		t.Run(name, func(t *testing.T) { testNoOpCommitVersion(t, change) })
	}
}

func testNoOpCommitVersion(t *testing.T, change func(tx *Tx)) {
	fs := vfs.NewMem()
	opts := &Options{FS: fs, ExpiryPeriod: -1}
	db := openTest(t, "/db", opts)
	if err := db.Set([]byte(""), []byte("empty")); err != nil {
		t.Fatal(err)
	}
	var told [][]byte
	cancel := db.Subscribe(func(keys [][]byte) {
		for _, k := range keys {
			told = append(told, bytes.Clone(k))
		}
	})
	seen := map[uint64]bool{}
	for round := range 3 {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		change(tx)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		v := tx.CommittedVersion()
		if v == 0 || seen[v] {
			t.Fatalf("round %d: no-op commit at version %d, seen before: %v", round, v, seen[v])
		}
		if vs, err := tx.Versionstamp(); err != nil || binary.BigEndian.Uint64(vs) != v {
			t.Fatalf("round %d: versionstamp %x, %v; want one of version %d", round, vs, err, v)
		}
		seen[v] = true
		if len(told) > 0 {
			t.Fatalf("round %d: subscribers told of %q", round, told)
		}
		cancel()
		if round == 1 {
			if _, err := db.Merge(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db = openTest(t, "/db", opts)
		cancel = db.Subscribe(func(keys [][]byte) { told = append(told, keys...) })
		if got := db.Version(); got < v {
			t.Fatalf("round %d: version %d after reopen, below the committed %d", round, got, v)
		}
		mustGet(t, db, "", "empty")
		if err := db.Set([]byte("k"), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if nv := db.Version(); seen[nv] {
			t.Fatalf("round %d: version %d handed out twice", round, nv)
		}
		seen[db.Version()] = true
		told = nil
	}
	cancel()
	if n := db.Stats().Keys; n != 2 {
		t.Fatalf("%d keys, want 2", n)
	}
}

// With the real clock (Options.Now unset), a transaction's age is read
// from the monotonic clock: reads within the lifetime go through, and
// reads and the commit after it fail with transaction_too_old.
func TestTxLifetimeRealClock(t *testing.T) {
	const lifetime = 50 * time.Millisecond
	db := openTest(t, t.TempDir(), &Options{TxnLifetime: lifetime, Sync: SyncNone})
	if !db.realClock {
		t.Fatal("Options without Now should use the real clock")
	}
	mustSet(t, db, "v", "k")
	tx := mustBegin(t, db)
	defer tx.Rollback()
	if _, err := tx.Get([]byte("k")); err != nil {
		t.Fatalf("a read at once: %v", err)
	}
	// Time itself is what must pass here: there is nothing to wait on.
	time.Sleep(lifetime + 10*time.Millisecond)
	if _, err := tx.Get([]byte("k")); !errors.Is(err, ErrTransactionTooOld) {
		t.Fatalf("a read after the lifetime: %v", err)
	}
	tx.Set([]byte("k"), []byte("w"))
	if err := tx.Commit(); !errors.Is(err, ErrTransactionTooOld) {
		t.Fatalf("a commit after the lifetime: %v", err)
	}
	if db2 := openTest(t, t.TempDir(), &Options{Now: time.Now}); db2.realClock {
		t.Fatal("Options with Now set should use it")
	}
}
