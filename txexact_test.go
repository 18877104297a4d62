package caskade

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// exactState is the reference of TestTxExactModel: key -> value, sorted
// on demand.
type exactState map[string][]byte

func (s exactState) keys() []string {
	ks := make([]string, 0, len(s))
	for k := range s {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (s exactState) clone() exactState {
	c := exactState{}
	for k, v := range s {
		c[k] = bytes.Clone(v)
	}
	return c
}

// rangeOf formats the pairs in [lo, hi) (nil hi: to the end) as a range
// read with o returns them.
func (s exactState) rangeOf(lo, hi []byte, o RangeOptions) string {
	var kvs []KeyValue
	for _, k := range s.keys() {
		if k >= string(lo) && (hi == nil || k < string(hi)) {
			kvs = append(kvs, KeyValue{Key: []byte(k), Value: s[k]})
		}
	}
	if o.Reverse {
		slices.Reverse(kvs)
	}
	if o.Limit > 0 && len(kvs) > o.Limit {
		kvs = kvs[:o.Limit]
	}
	return hexKVs(kvs)
}

func hexKVs(kvs []KeyValue) string {
	var b strings.Builder
	for _, kv := range kvs {
		fmt.Fprintf(&b, "%q=%x ", kv.Key, kv.Value)
	}
	return b.String()
}

// leUint reads a little-endian unsigned integer of up to 8 bytes.
func leUint(b []byte) (n uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		n = n<<8 | uint64(b[i])
	}
	return n
}

// refAtomic is FoundationDB's atomic operation kind on the value cur
// (present or not) with operand p, written from its documentation, apart
// from applyAtomic: it returns the new value and whether the key is
// present afterwards. Operands are at most 8 bytes.
func refAtomic(kind string, cur []byte, present bool, p []byte, maxValue int) ([]byte, bool) {
	resized := make([]byte, len(p)) // cur zero-extended or truncated to p's length
	copy(resized, cur)
	bitwise := func(f func(a, b byte) byte) []byte {
		for i := range resized {
			resized[i] = f(resized[i], p[i])
		}
		return resized
	}
	switch kind {
	case "add":
		sum := leUint(resized) + leUint(p)
		for i := range resized {
			resized[i] = byte(sum >> (8 * i))
		}
		return resized, true
	case "and":
		if !present {
			return bytes.Clone(p), true
		}
		return bitwise(func(a, b byte) byte { return a & b }), true
	case "or":
		return bitwise(func(a, b byte) byte { return a | b }), true
	case "xor":
		return bitwise(func(a, b byte) byte { return a ^ b }), true
	case "max", "min":
		if !present {
			return bytes.Clone(p), true
		}
		a, b := leUint(resized), leUint(p)
		if a == b || (kind == "max") == (a > b) {
			return resized, true
		}
		return bytes.Clone(p), true
	case "bytemax":
		if !present || bytes.Compare(cur, p) < 0 {
			return bytes.Clone(p), true
		}
		return cur, true
	case "bytemin":
		if !present || bytes.Compare(cur, p) > 0 {
			return bytes.Clone(p), true
		}
		return cur, true
	case "append":
		if len(cur)+len(p) > maxValue {
			return cur, present
		}
		return append(bytes.Clone(cur), p...), true
	case "cac":
		if !present || bytes.Equal(cur, p) {
			return nil, false
		}
		return cur, true
	}
	panic(kind)
}

func txAtomic(tx *Tx, kind string, k, p []byte) {
	map[string]func(k, p []byte){
		"add": tx.Add, "and": tx.BitAnd, "or": tx.BitOr, "xor": tx.BitXor,
		"max": tx.Max, "min": tx.Min, "bytemax": tx.ByteMax, "bytemin": tx.ByteMin,
		"append": tx.AppendIfFits, "cac": tx.CompareAndClear,
	}[kind](k, p)
}

// TestTxExactModel runs transactions of random reads (Get, GetKey,
// selector and key range reads with limits either way, iterators stepped
// while the transaction writes; some through Snapshot), writes (Set,
// Clear, ClearRange, every atomic operation but versionstamps, with
// operands of other lengths than the values) and, between the steps,
// changes from outside (sets, deletes, range deletes, and the clock moving
// past the expiry of keys it read). Every read must return what a model of
// the transaction's view (the database at its read version and its own
// writes) gives, and the commit must conflict exactly when a key changed
// from outside lies in the read conflict ranges that the documentation of
// each read gives: a Get adds its key unless its value is known from the
// transaction's own writes (a Set, Clear or ClearRange, perhaps with
// atomic operations after it); a key selector, the keys between its bound
// and where it lands; a range read, what it covered (up to the last pair
// returned when a limit or an early stop cut it short); both less what
// the transaction's own writes had decided when the read began; a
// snapshot read, nothing.
func TestTxExactModel(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 11))
	const maxValue = 6 // small, for AppendIfFits at the limit
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1,
		MaxValueSize: maxValue, TxnLifetime: time.Hour, Now: func() time.Time { return time.UnixMilli(clock.Load()) }})
	keys := []string{"", "a", "a\x00", "b", "c", "d", "e\xff", "f"}
	const marker = "zz" // set by every transaction, so that it checks its reads
	key := func() []byte { return []byte(keys[r.IntN(len(keys))]) }
	span := func() (lo, hi []byte) {
		lo, hi = key(), key()
		if bytes.Compare(lo, hi) > 0 {
			lo, hi = hi, lo
		}
		return lo, hi
	}
	val := func(n int) []byte {
		b := make([]byte, r.IntN(n+1))
		for i := range b {
			b[i] = byte(r.IntN(4)) * 0x55
		}
		return b
	}
	sel := func() KeySelector {
		return KeySelector{Key: key(), OrEqual: r.IntN(2) == 0, Offset: r.IntN(9) - 4}
	}
	atomics := []string{"add", "and", "or", "xor", "max", "min", "bytemax", "bytemin", "append", "cac"}
	rounds, conflicts := 1500, 0
	if testing.Short() {
		rounds = 300
	}
	for round := range rounds {
		clock.Add(100_000) // past every expiry of the last round
		for _, k := range append(keys, marker) {
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
		}
		base := exactState{}         // the database at the read version
		expiry := map[string]int64{} // of base's keys that have one
		for _, k := range keys {
			if r.IntN(2) == 0 {
				continue
			}
			v := val(4)
			var err error
			if r.IntN(3) == 0 {
				expiry[k] = clock.Load() + int64(1+r.IntN(3))*1000
				err = db.SetWithExpiry([]byte(k), v, time.UnixMilli(expiry[k]))
			} else {
				err = db.Set([]byte(k), v)
			}
			if err != nil {
				t.Fatal(err)
			}
			base[k] = v
		}
		readTime := clock.Load()
		outside := base.clone()      // the database as changes from outside leave it
		changed := map[string]bool{} // keys changed from outside since the read version
		liveOutside := func(k string) bool {
			_, ok := outside[k]
			if e, has := expiry[k]; ok && has && e <= clock.Load() {
				return false
			}
			return ok
		}

		tx := mustBegin(t, db)
		view := base.clone() // what the transaction sees
		// known: keys whose value the transaction's own writes decide;
		// unknown: keys with atomic operations on the database's value.
		known, unknown := map[string]bool{}, map[string]bool{}
		var cleared []keyRange
		isKnown := func(k []byte) bool {
			if known[string(k)] || unknown[string(k)] {
				return known[string(k)]
			}
			for _, c := range cleared {
				if c.contains(k) {
					return true
				}
			}
			return false
		}
		write := func(k []byte) {
			known[string(k)], unknown[string(k)] = true, false
		}
		var log []string
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("round %d: %s\nsteps:\n%s", round, fmt.Sprintf(format, args...), strings.Join(log, "\n"))
		}
		// A read conflict range, less what the transaction's own writes
		// had decided when the read began (the ranges it had cleared, the
		// keys it had set or cleared): it read those from its own writes.
		type modelRead struct {
			keyRange
			own []keyRange
		}
		var reads []modelRead
		read := func(rd *TxReader, lo, hi []byte, own []keyRange) {
			if !rd.snapshot && (hi == nil || bytes.Compare(lo, hi) < 0) {
				reads = append(reads, modelRead{keyRange{bytes.Clone(lo), bytes.Clone(hi)}, own})
			}
		}
		own := func() []keyRange {
			o := slices.Clone(cleared)
			for k, ok := range known {
				if ok {
					o = append(o, keyRange{[]byte(k), keyAfter([]byte(k))})
				}
			}
			return o
		}
		readSelector := func(rd *TxReader, s KeySelector, k []byte) {
			bound := selectorBound(s)
			switch {
			case s.Offset <= 0:
				read(rd, k, bound, own())
			case k == nil:
				read(rd, bound, nil, own())
			default:
				read(rd, bound, keyAfter(bytes.Clone(k)), own())
			}
		}
		readRange := func(rd *TxReader, lo, hi []byte, o RangeOptions, kvs []KeyValue, own []keyRange) {
			if o.Limit > 0 && len(kvs) == o.Limit {
				if last := kvs[len(kvs)-1].Key; o.Reverse {
					lo = last
				} else {
					hi = keyAfter(bytes.Clone(last))
				}
			}
			read(rd, lo, hi, own)
		}

		for range 1 + r.IntN(20) {
			if r.IntN(6) == 0 {
				switch r.IntN(4) {
				case 0:
					k := key()
					if err := db.Set(k, []byte("out")); err != nil {
						t.Fatal(err)
					}
					changed[string(k)] = true
					outside[string(k)] = []byte("out")
					delete(expiry, string(k))
					log = append(log, fmt.Sprintf("OUTSIDE set %q", k))
				case 1:
					k := key()
					changed[string(k)] = changed[string(k)] || liveOutside(string(k))
					if err := db.Delete(k); err != nil {
						t.Fatal(err)
					}
					delete(outside, string(k))
					log = append(log, fmt.Sprintf("OUTSIDE delete %q", k))
				case 2:
					lo, hi := span()
					var b Batch
					b.DeleteRange(lo, hi)
					if err := db.Write(&b); err != nil {
						t.Fatal(err)
					}
					for k := range outside {
						if k >= string(lo) && k < string(hi) {
							changed[k] = changed[k] || liveOutside(k)
							delete(outside, k)
						}
					}
					log = append(log, fmt.Sprintf("OUTSIDE delete range %q %q", lo, hi))
				default:
					d := int64(r.IntN(3000))
					clock.Add(d)
					log = append(log, fmt.Sprintf("OUTSIDE clock +%d ms", d))
				}
			}
			rd, how := &tx.reader, ""
			if r.IntN(4) == 0 {
				rd, how = tx.Snapshot(), "snapshot "
			}
			switch r.IntN(12) {
			case 0:
				k, v := key(), val(maxValue)
				tx.Set(k, v)
				view[string(k)] = v
				write(k)
				log = append(log, fmt.Sprintf("set %q %x", k, v))
			case 1:
				k := key()
				tx.Clear(k)
				delete(view, string(k))
				write(k)
				log = append(log, fmt.Sprintf("clear %q", k))
			case 2:
				lo, hi := span()
				if r.IntN(5) == 0 {
					hi = nil
				}
				tx.ClearRange(lo, hi)
				kr := keyRange{bytes.Clone(lo), bytes.Clone(hi)}
				for k := range view {
					if kr.contains([]byte(k)) {
						delete(view, k)
					}
				}
				for _, m := range []map[string]bool{known, unknown} {
					for k := range m {
						if kr.contains([]byte(k)) {
							write([]byte(k))
						}
					}
				}
				cleared = append(cleared, kr)
				log = append(log, fmt.Sprintf("clear range %q %q", lo, hi))
			case 3, 4, 5:
				kind, k, p := atomics[r.IntN(len(atomics))], key(), val(4)
				txAtomic(tx, kind, k, p)
				if isKnown(k) {
					write(k)
				} else {
					unknown[string(k)] = true
				}
				cur, ok := view[string(k)]
				if nv, present := refAtomic(kind, cur, ok, p, maxValue); present {
					view[string(k)] = nv
				} else {
					delete(view, string(k))
				}
				log = append(log, fmt.Sprintf("%s %q %x", kind, k, p))
			case 6:
				k := key()
				v, err := rd.Get(k)
				log = append(log, fmt.Sprintf("%sget %q: %x %v", how, k, v, err))
				want, ok := view[string(k)]
				if ok != (err == nil) || !bytes.Equal(v, want) || (err != nil && !errors.Is(err, ErrNotFound)) {
					fail("get %q = %x, %v; want %x, %v", k, v, err, want, ok)
				}
				if !isKnown(k) {
					read(rd, k, keyAfter(bytes.Clone(k)), nil)
				}
			case 7:
				s := sel()
				got, err := rd.GetKey(s)
				log = append(log, fmt.Sprintf("%sget key %v: %q %v", how, s, got, err))
				want := resolveIn(view.keys(), s)
				if err != nil || !bytes.Equal(got, getKeyWant(want)) || got == nil {
					fail("get key %v = %q, %v; want %q", s, got, err, getKeyWant(want))
				}
				readSelector(rd, s, want)
			case 8, 9:
				b, e := sel(), sel()
				o := RangeOptions{Limit: r.IntN(4), Reverse: r.IntN(2) == 0}
				kvs, err := rd.GetRange(b, e, &o)
				log = append(log, fmt.Sprintf("%sget range %v %v %+v: %s %v", how, b, e, o, hexKVs(kvs), err))
				lo, hi := resolveIn(view.keys(), b), resolveIn(view.keys(), e)
				want := ""
				if lo != nil {
					want = view.rangeOf(lo, hi, o)
				}
				if err != nil || hexKVs(kvs) != want {
					fail("get range %v %v %+v = %s, %v; want %s", b, e, o, hexKVs(kvs), err, want)
				}
				if b.Offset >= e.Offset && bytes.Compare(selectorBound(b), selectorBound(e)) >= 0 {
					break // empty without resolving either selector
				}
				// A selector of offset 1 bounds the range at its key.
				blo := selectorBound(b)
				if b.Offset != 1 {
					blo = lo
					readSelector(rd, b, lo)
				}
				if blo == nil {
					break // begins past the last key
				}
				ehi := selectorBound(e)
				if e.Offset != 1 {
					ehi = hi
					readSelector(rd, e, hi)
				}
				readRange(rd, blo, ehi, o, kvs, own())
			case 10:
				lo, hi := span()
				if r.IntN(5) == 0 {
					hi = nil
				}
				o := RangeOptions{Limit: r.IntN(4), Reverse: r.IntN(2) == 0}
				kvs, err := rd.Range(lo, hi, &o)
				log = append(log, fmt.Sprintf("%srange %q %q %+v: %s %v", how, lo, hi, o, hexKVs(kvs), err))
				if want := view.rangeOf(lo, hi, o); err != nil || hexKVs(kvs) != want {
					fail("range %q %q %+v = %s, %v; want %s", lo, hi, o, hexKVs(kvs), err, want)
				}
				readRange(rd, lo, hi, o, kvs, own())
			default:
				// An iterator stepped while the transaction writes: each
				// step returns the next key the transaction sees then.
				lo, hi := span()
				rev := r.IntN(2) == 0
				it := rd.KeyRangeIterator(lo, hi, &RangeOptions{Reverse: rev})
				own := own()
				log = append(log, fmt.Sprintf("%siterator %q %q reverse %v", how, lo, hi, rev))
				var cur []byte
				exhausted := false
				for range 1 + r.IntN(6) {
					if r.IntN(2) == 0 {
						k, v := key(), val(maxValue)
						if r.IntN(2) == 0 {
							tx.Set(k, v)
							view[string(k)] = v
							log = append(log, fmt.Sprintf("  set %q %x", k, v))
						} else {
							tx.Clear(k)
							delete(view, string(k))
							log = append(log, fmt.Sprintf("  clear %q", k))
						}
						write(k)
					}
					ok := it.Next()
					log = append(log, fmt.Sprintf("  next: %v %q %v", ok, it.KeyValue().Key, it.Err()))
					ks := view.keys()
					if rev {
						slices.Reverse(ks)
					}
					want, found := "", false
					for _, k := range ks {
						if k < string(lo) || k >= string(hi) ||
							(cur != nil && ((!rev && k <= string(cur)) || (rev && k >= string(cur)))) {
							continue
						}
						want, found = k, true
						break
					}
					kv := it.KeyValue()
					if ok != found || (ok && (string(kv.Key) != want || !bytes.Equal(kv.Value, view[want]))) {
						fail("iterator step: %v %q=%x, %v; want %v %q=%x", ok, kv.Key, kv.Value, it.Err(), found, want, view[want])
					}
					if !ok {
						exhausted = true
						break
					}
					cur = []byte(want)
				}
				switch {
				case exhausted:
					read(rd, lo, hi, own)
				case cur != nil && rev: // stopped early: read up to where it was
					read(rd, cur, hi, own)
				case cur != nil:
					read(rd, lo, keyAfter(bytes.Clone(cur)), own)
				}
			}
		}
		tx.Set([]byte(marker), []byte("w"))
		view[marker] = []byte("w")
		for k, e := range expiry {
			if _, was := base[k]; was && e > readTime && e <= clock.Load() {
				changed[k] = true // read live, expired since
			}
		}
		conflict := false
		for k, ch := range changed {
			for _, rd := range reads {
				conflict = conflict || (ch && rd.contains([]byte(k)) &&
					!slices.ContainsFunc(rd.own, func(c keyRange) bool { return c.contains([]byte(k)) }))
			}
		}
		err := tx.Commit()
		if conflict != errors.Is(err, ErrConflict) || (err != nil && !conflict) {
			fail("commit: %v, want a conflict: %v; changed from outside %v, read %q", err, conflict, changed, reads)
		}
		if conflict {
			conflicts++
			continue
		}
		if len(log) > 0 && !strings.Contains(strings.Join(log, "\n"), "OUTSIDE") && len(expiry) == 0 {
			all, err := db.Range(nil, nil, nil)
			if got, want := hexKVs(all), view.rangeOf([]byte{}, nil, RangeOptions{}); err != nil || got != want {
				fail("committed %s, %v; the transaction saw %s", got, err, want)
			}
		}
	}
	t.Logf("%d transactions, %d conflicts", rounds, conflicts)
}
