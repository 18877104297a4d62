package caskade

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
)

// unreadableModel is a transaction's view in the manner of FoundationDB's
// Unreadable workload: the keys present (the database's, then the
// transaction's sets and clears) and the unreadable ranges, each the range
// of a SetVersionstampedKey or the key of a SetVersionstampedValue, less
// the clears that came after it. As in FoundationDB (WriteMap::mutate keeps
// is_unreadable on a set), a Set does not make a key readable; a Clear or
// ClearRange does.
type unreadableModel struct {
	kv     map[string][]byte
	unread []modelSpan // in the order made
	clears [][]modelSpan
}

type modelSpan struct {
	begin, end []byte // end nil: the end of the key space
}

func (m *unreadableModel) markUnreadable(s modelSpan) {
	m.unread = append(m.unread, s)
	m.clears = append(m.clears, nil)
}

func (m *unreadableModel) clear(s modelSpan) {
	for k := range m.kv {
		if (keyRange{s.begin, s.end}).contains([]byte(k)) {
			delete(m.kv, k)
		}
	}
	for i := range m.clears {
		m.clears[i] = append(m.clears[i], s)
	}
}

// unreadableIn reports whether any key of [b, e) is unreadable.
func (m *unreadableModel) unreadableIn(b, e []byte) bool {
	if e != nil && bytes.Compare(b, e) >= 0 {
		return false
	}
	for i, u := range m.unread {
		cur := b
		if bytes.Compare(u.begin, cur) > 0 {
			cur = u.begin
		}
		end := e
		if end == nil || (u.end != nil && bytes.Compare(u.end, end) < 0) {
			end = u.end
		}
		for moved := true; moved; {
			moved = false
			for _, c := range m.clears[i] {
				if bytes.Compare(c.begin, cur) <= 0 && (c.end == nil || bytes.Compare(c.end, cur) > 0) {
					if c.end == nil {
						cur = nil
					} else {
						cur = c.end
					}
					moved = true
					break
				}
				if cur == nil {
					break
				}
			}
			if cur == nil {
				break
			}
		}
		if cur != nil && (end == nil || bytes.Compare(cur, end) < 0) {
			return true
		}
	}
	return false
}

func (m *unreadableModel) keys() [][]byte {
	var ks [][]byte
	for k := range m.kv {
		ks = append(ks, []byte(k))
	}
	slices.SortFunc(ks, bytes.Compare)
	return ks
}

// keyRead predicts a range read of [b, e) (e nil: to the end): the pairs,
// or errUnreadable when a step passes over an unreadable key before the
// limit stops it.
func (m *unreadableModel) keyRead(b, e []byte, limit int, reverse bool) ([]KeyValue, error) {
	var in [][]byte
	for _, k := range m.keys() {
		if (keyRange{b, e}).contains(k) {
			in = append(in, k)
		}
	}
	var out []KeyValue
	if !reverse {
		pos := b
		for _, k := range in {
			if m.unreadableIn(pos, keyAfter(bytes.Clone(k))) {
				return nil, ErrAccessedUnreadable
			}
			out = append(out, KeyValue{Key: k, Value: m.kv[string(k)]})
			pos = keyAfter(bytes.Clone(k))
			if limit > 0 && len(out) == limit {
				return out, nil
			}
		}
		if m.unreadableIn(pos, e) {
			return nil, ErrAccessedUnreadable
		}
		return out, nil
	}
	pos := e
	for i := len(in) - 1; i >= 0; i-- {
		k := in[i]
		if m.unreadableIn(k, pos) {
			return nil, ErrAccessedUnreadable
		}
		out = append(out, KeyValue{Key: k, Value: m.kv[string(k)]})
		pos = k
		if limit > 0 && len(out) == limit {
			return out, nil
		}
	}
	if m.unreadableIn(b, pos) {
		return nil, ErrAccessedUnreadable
	}
	return out, nil
}

// resolve predicts a key selector: nil past the last key, the empty key
// before the first; unreadable if an unreadable key lies between the
// selector's bound and its result.
func (m *unreadableModel) resolve(sel KeySelector) ([]byte, error) {
	bound := append([]byte{}, sel.Key...)
	if sel.OrEqual {
		bound = keyAfter(bound)
	}
	ks := m.keys()
	if sel.Offset >= 1 {
		var after [][]byte
		for _, k := range ks {
			if bytes.Compare(k, bound) >= 0 {
				after = append(after, k)
			}
		}
		if sel.Offset > len(after) {
			if m.unreadableIn(bound, nil) {
				return nil, ErrAccessedUnreadable
			}
			return nil, nil
		}
		k := after[sel.Offset-1]
		if m.unreadableIn(bound, keyAfter(bytes.Clone(k))) {
			return nil, ErrAccessedUnreadable
		}
		return k, nil
	}
	var before [][]byte
	for _, k := range ks {
		if bytes.Compare(k, bound) < 0 {
			before = append(before, k)
		}
	}
	n := 1 - sel.Offset
	if n > len(before) {
		if m.unreadableIn([]byte{}, bound) {
			return nil, ErrAccessedUnreadable
		}
		return []byte{}, nil
	}
	k := before[len(before)-n]
	if m.unreadableIn(k, bound) {
		return nil, ErrAccessedUnreadable
	}
	return k, nil
}

func (m *unreadableModel) selectorRead(b, e KeySelector, limit int, reverse bool) ([]KeyValue, error) {
	// As FoundationDB's getRange: selectors that cannot hold a key between
	// them (compared without OrEqual) read nothing, resolving nothing.
	bb, eb := selectorBound(b), selectorBound(e)
	if b.Offset >= e.Offset && bytes.Compare(bb, eb) >= 0 {
		return nil, nil
	}
	var lo, hi []byte
	var err error
	if b.Offset == 1 {
		lo = selectorBound(b)
	} else if lo, err = m.resolve(b); err != nil {
		return nil, err
	}
	if lo == nil {
		// Past the last key: nothing to read, whatever the end selector
		// (FoundationDB's workload accepts either outcome here).
		return nil, nil
	}
	if e.Offset == 1 {
		hi = selectorBound(e)
	} else if hi, err = m.resolve(e); err != nil {
		return nil, err
	}
	if lo == nil || (hi != nil && bytes.Compare(lo, hi) >= 0) {
		return nil, nil
	}
	return m.keyRead(lo, hi, limit, reverse)
}

// TestUnreadableModel is FoundationDB's Unreadable workload for caskade:
// random sets, clears, clear ranges and versionstamped keys and values in
// a transaction, and reads of every kind (point, by keys, by selectors,
// snapshot or not, reverse, limited) whose outcome, error or result, the
// model above must predict exactly. -seed replays a seed;
// CASKADE_UNREADABLE_ROUNDS sets the number of transactions.
func TestUnreadableModel(t *testing.T) {
	seed := testSeed(t)
	rounds := 60
	if s := os.Getenv("CASKADE_UNREADABLE_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	db := openTest(t, t.TempDir(), nil)

	stamp := func(v uint64, tail byte) []byte {
		b := make([]byte, 10)
		binary.BigEndian.PutUint64(b, v)
		b[8], b[9] = 0, tail
		return b
	}
	prefixes := [][]byte{{}, []byte("q"), []byte("q:")}
	var rv uint64
	randKey := func() []byte {
		switch rng.IntN(4) {
		case 0:
			return []byte{}[:0:0]
		case 1:
			return []byte{byte('a' + rng.IntN(26))}
		case 2:
			return []byte(string(rune('a'+rng.IntN(26))) + string(rune('a'+rng.IntN(3))))
		}
		p := bytes.Clone(prefixes[rng.IntN(len(prefixes))])
		var s []byte
		switch rng.IntN(4) {
		case 0:
			s = bytes.Repeat([]byte{0xff}, 10)
		default:
			s = stamp(rv+uint64(rng.IntN(4))-1, byte(rng.IntN(2)))
		}
		k := append(p, s...)
		if rng.IntN(3) == 0 {
			k = append(k, byte('x'+rng.IntN(2)))
		}
		return k
	}
	randSel := func() KeySelector {
		return KeySelector{Key: randKey(), OrEqual: rng.IntN(2) == 0, Offset: rng.IntN(5) - 2}
	}
	unreadable := func(err error) bool { return errors.Is(err, ErrAccessedUnreadable) }
	check := func(round, step int, what string, got []KeyValue, gerr error, want []KeyValue, werr error) {
		t.Helper()
		if gerr != nil && !unreadable(gerr) {
			t.Fatalf("seed %d round %d step %d %s: %v", seed, round, step, what, gerr)
		}
		if unreadable(gerr) != (werr != nil) {
			t.Fatalf("seed %d round %d step %d %s: got %v %q, model says %v %q", seed, round, step, what, gerr, got, werr, want)
		}
		if gerr != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("seed %d round %d step %d %s: got %q, model %q", seed, round, step, what, got, want)
		}
		for i := range got {
			if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) {
				t.Fatalf("seed %d round %d step %d %s: got %q, model %q", seed, round, step, what, got, want)
			}
		}
	}

	for round := 0; round < rounds; round++ {
		// The database: a few keys, some in the ranges the versionstamped
		// keys may take.
		if err := db.Transact(t.Context(), func(tx *Tx) error {
			tx.ClearRange(nil, nil)
			for range rng.IntN(12) {
				tx.Set(randKey(), []byte("db"))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		tx := mustBegin(t, db)
		rv = tx.ReadVersion()
		m := &unreadableModel{kv: map[string][]byte{}}
		kvs, err := tx.Snapshot().Range(nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range kvs {
			m.kv[string(kv.Key)] = kv.Value
		}
		for step := 0; step < 120; step++ {
			var r TxReader = tx.reader
			if rng.IntN(4) == 0 {
				r = *tx.Snapshot()
			}
			switch op := rng.IntN(20); {
			case op < 5:
				k, v := randKey(), []byte(fmt.Sprint("v", step))
				tx.Set(k, v)
				m.kv[string(k)] = v
			case op == 5:
				k := randKey()
				tx.Clear(k)
				m.clear(modelSpan{k, keyAfter(bytes.Clone(k))})
			case op == 6:
				b, e := randKey(), randKey()
				if bytes.Compare(b, e) > 0 {
					b, e = e, b
				}
				if rng.IntN(8) == 0 {
					e = nil
				}
				tx.ClearRange(b, e)
				m.clear(modelSpan{b, e})
			case op == 7:
				k := randKey()
				tx.SetVersionstampedValue(k, append(make([]byte, 10), 0, 0, 0, 0))
				m.kv[string(k)] = nil
				m.markUnreadable(modelSpan{k, keyAfter(bytes.Clone(k))})
			case op == 8:
				p := prefixes[rng.IntN(len(prefixes))]
				k := append(append(bytes.Clone(p), make([]byte, 10)...), []byte("x")[:rng.IntN(2)]...)
				k = binary.LittleEndian.AppendUint32(k, uint32(len(p)))
				tx.SetVersionstampedKey(k, []byte("vs"))
				lo := append(bytes.Clone(p), stamp(rv+1, 0)...)
				hi := append(append(bytes.Clone(p), bytes.Repeat([]byte{0xff}, 10)...), k[len(p)+10:len(k)-4]...)
				m.markUnreadable(modelSpan{append(lo, k[len(p)+10:len(k)-4]...), keyAfter(hi)})
			case op < 11:
				k := randKey()
				v, err := r.Get(k)
				var got, want []KeyValue
				if err == nil {
					got = []KeyValue{{Key: k, Value: v}}
				} else if errors.Is(err, ErrNotFound) {
					err = nil
				}
				var werr error
				if m.unreadableIn(k, keyAfter(bytes.Clone(k))) {
					werr = ErrAccessedUnreadable
				} else if mv, ok := m.kv[string(k)]; ok {
					want = []KeyValue{{Key: k, Value: mv}}
				}
				check(round, step, fmt.Sprintf("get %q", k), got, err, want, werr)
			case op < 14:
				b, e := randKey(), randKey()
				if bytes.Compare(b, e) > 0 {
					b, e = e, b
				}
				if rng.IntN(5) == 0 {
					e = nil
				}
				o := &RangeOptions{Limit: rng.IntN(4), Reverse: rng.IntN(2) == 0}
				got, err := r.Range(b, e, o)
				want, werr := m.keyRead(b, e, o.Limit, o.Reverse)
				check(round, step, fmt.Sprintf("range %q %q %+v", b, e, *o), got, err, want, werr)
			case op < 17:
				sel := randSel()
				k, err := r.GetKey(sel)
				want, werr := m.resolve(sel)
				if ks := m.keys(); werr == nil && want == nil && len(ks) > 0 && string(ks[len(ks)-1]) >= "\xff\xff" {
					// The end of the key space follows keys from \xff\xff on.
					want = append(bytes.Clone(ks[len(ks)-1]), 0)
				} else if werr == nil {
					want = getKeyWant(want)
				}
				var g, w []KeyValue
				if err == nil {
					g = []KeyValue{{Key: k}}
				}
				if werr == nil {
					w = []KeyValue{{Key: want}}
				}
				if err == nil && werr == nil && (k == nil) != (want == nil) {
					t.Fatalf("seed %d round %d step %d getkey %+v: got %q, model %q", seed, round, step, sel, k, want)
				}
				check(round, step, fmt.Sprintf("getkey %+v", sel), g, err, w, werr)
			default:
				b, e := randSel(), randSel()
				if rng.IntN(3) == 0 {
					b.Offset = 1
				}
				if rng.IntN(3) == 0 {
					e.Offset = 1
				}
				o := &RangeOptions{Limit: rng.IntN(4), Reverse: rng.IntN(2) == 0}
				got, err := r.GetRange(b, e, o)
				want, werr := m.selectorRead(b, e, o.Limit, o.Reverse)
				check(round, step, fmt.Sprintf("getrange %+v %+v %+v", b, e, *o), got, err, want, werr)
			}
		}
		tx.Rollback()
	}
}
