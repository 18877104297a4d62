package caskade

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// serialOp is one step of a transaction in TestSerialReplay: a read with
// what it returned, or a write.
type serialOp struct {
	kind       string // get, getkey, range, keyrange, snapget, set, clear, clearrange, add, bytemax, cac, append
	key, end   []byte
	sel, esel  KeySelector
	opts       RangeOptions
	value      []byte
	got        string // the read's result, formatted
	gotPresent bool
}

// serialState is the reference for TestSerialReplay: a map, sorted on
// demand.
type serialState map[string]string

func (s serialState) keys() []string {
	ks := make([]string, 0, len(s))
	for k := range s {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (s serialState) resolve(sel KeySelector) []byte { return resolveIn(s.keys(), sel) }

func (s serialState) rangeOf(lo, hi []byte, o RangeOptions) string {
	var out []string
	for _, k := range s.keys() {
		if k >= string(lo) && (hi == nil || k < string(hi)) {
			out = append(out, k)
		}
	}
	if o.Reverse {
		slices.Reverse(out)
	}
	if o.Limit > 0 && len(out) > o.Limit {
		out = out[:o.Limit]
	}
	var b bytes.Buffer
	for _, k := range out {
		fmt.Fprintf(&b, "%q=%q ", k, s[k])
	}
	return b.String()
}

func formatKVs(kvs []KeyValue) string {
	var b bytes.Buffer
	for _, kv := range kvs {
		fmt.Fprintf(&b, "%q=%q ", kv.Key, kv.Value)
	}
	return b.String()
}

// apply runs op on the state, returning what a read should have returned.
func (s serialState) apply(o serialOp) (got string, present bool) {
	k := string(o.key)
	switch o.kind {
	case "get":
		v, ok := s[k]
		return v, ok
	case "getkey":
		r := getKeyWant(s.resolve(o.sel))
		return fmt.Sprintf("%q", r), true
	case "range":
		lo, hi := s.resolve(o.sel), s.resolve(o.esel)
		if lo == nil {
			return "", true
		}
		return s.rangeOf(lo, hi, o.opts), true
	case "keyrange":
		return s.rangeOf(o.key, o.end, o.opts), true
	case "set":
		s[k] = string(o.value)
	case "clear":
		delete(s, k)
	case "clearrange":
		for mk := range s {
			if mk >= k && mk < string(o.end) {
				delete(s, mk)
			}
		}
	case "add": // one byte param
		v := s[k]
		var b byte
		if len(v) > 0 {
			b = v[0]
		}
		s[k] = string([]byte{b + o.value[0]})
	case "bytemax":
		if v, ok := s[k]; !ok || v < string(o.value) {
			s[k] = string(o.value)
		}
	case "cac":
		if v, ok := s[k]; ok && v == string(o.value) {
			delete(s, k)
		}
	case "append":
		s[k] += string(o.value) // values stay far below the limit
	}
	return "", false
}

// TestSerialReplay runs concurrent read-modify-write transactions of every
// kind of read (Get, GetKey with any offset, selector and key range reads
// with limits in either direction) and write (Set, Clear, ClearRange,
// atomic operations), logs each committed one, and replays them serially
// in commit order against a map: every read a committed transaction made
// without Snapshot must return what the serial order gives it, own writes
// included; and every transaction that failed with ErrConflict must have
// read something a commit after its read version wrote.
func TestSerialReplay(t *testing.T) {
	seed := testSeed(t)
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, ExpiryPeriod: -1})
	type record struct {
		version  uint64
		readOnly bool // changed nothing: serialised at its read version
		ops      []serialOp
	}
	const nkeys = 10
	key := func(r *rand.Rand) []byte {
		switch r.IntN(8) {
		case 0:
			return []byte("k")
		case 1:
			return fmt.Appendf(nil, "k%d\x00", r.IntN(nkeys))
		case 2:
			return []byte("l")
		}
		return fmt.Appendf(nil, "k%d", r.IntN(nkeys))
	}
	sel := func(r *rand.Rand) KeySelector {
		return KeySelector{Key: key(r), OrEqual: r.IntN(2) == 0, Offset: r.IntN(6) - 2}
	}
	var mu sync.Mutex
	var history []record
	type failure struct {
		readVersion, seen uint64 // what it read at, and the newest version when it failed
		ops               []serialOp
	}
	var failures []failure
	var wg sync.WaitGroup
	workers, txns := 4, 150
	if testing.Short() {
		txns = 50
	}
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			// Each worker interleaves the steps of a few open transactions,
			// so that they overlap whatever the scheduler does.
			type slot struct {
				tx  *Tx
				ops []serialOp
				n   int // steps left before the commit
			}
			var slots [3]slot
			for i := 0; i < txns; {
				sl := &slots[r.IntN(len(slots))]
				if sl.tx == nil {
					sl.tx, _ = db.Begin()
					sl.ops, sl.n = nil, 1+r.IntN(6)
				}
				tx := sl.tx
				fail := func(err error) {
					t.Errorf("worker %d tx %d: %v", w, i, err)
				}
				if sl.n > 0 {
					sl.n--
					var o serialOp
					switch r.IntN(14) {
					case 0, 1:
						o = serialOp{kind: "get", key: key(r)}
						v, err := tx.Get(o.key)
						if err != nil && !errors.Is(err, ErrNotFound) {
							fail(err)
							return
						}
						o.got, o.gotPresent = string(v), err == nil
					case 2:
						o = serialOp{kind: "snapget", key: key(r)}
						if _, err := tx.Snapshot().Get(o.key); err != nil && !errors.Is(err, ErrNotFound) {
							fail(err)
							return
						}
					case 3, 4:
						o = serialOp{kind: "getkey", sel: sel(r)}
						k, err := tx.GetKey(o.sel)
						if err != nil {
							fail(err)
							return
						}
						o.got, o.gotPresent = fmt.Sprintf("%q", k), k != nil
					case 5:
						o = serialOp{kind: "range", sel: sel(r), esel: sel(r), opts: RangeOptions{Limit: r.IntN(4), Reverse: r.IntN(2) == 0}}
						kvs, err := tx.GetRange(o.sel, o.esel, &o.opts)
						if err != nil {
							fail(err)
							return
						}
						o.got, o.gotPresent = formatKVs(kvs), true
					case 6:
						lo, hi := key(r), key(r)
						if bytes.Compare(lo, hi) > 0 {
							lo, hi = hi, lo
						}
						if r.IntN(4) == 0 {
							hi = nil
						}
						o = serialOp{kind: "keyrange", key: lo, end: hi, opts: RangeOptions{Limit: r.IntN(4), Reverse: r.IntN(2) == 0}}
						kvs, err := tx.Range(o.key, o.end, &o.opts)
						if err != nil {
							fail(err)
							return
						}
						o.got, o.gotPresent = formatKVs(kvs), true
					case 7, 8:
						o = serialOp{kind: "set", key: key(r), value: fmt.Appendf(nil, "%d.%d", w, i)}
						tx.Set(o.key, o.value)
					case 9:
						o = serialOp{kind: "clear", key: key(r)}
						tx.Clear(o.key)
					case 10:
						lo, hi := key(r), key(r)
						if bytes.Compare(lo, hi) > 0 {
							lo, hi = hi, lo
						}
						o = serialOp{kind: "clearrange", key: lo, end: hi}
						tx.ClearRange(lo, hi)
					case 11:
						o = serialOp{kind: "add", key: key(r), value: []byte{byte(1 + r.IntN(3))}}
						tx.Add(o.key, o.value)
					case 12:
						o = serialOp{kind: "bytemax", key: key(r), value: fmt.Appendf(nil, "%d", r.IntN(10))}
						tx.ByteMax(o.key, o.value)
					default:
						if r.IntN(2) == 0 {
							o = serialOp{kind: "cac", key: key(r), value: fmt.Appendf(nil, "%d", r.IntN(10))}
							tx.CompareAndClear(o.key, o.value)
						} else {
							o = serialOp{kind: "append", key: key(r), value: []byte("+")}
							tx.AppendIfFits(o.key, o.value)
						}
					}
					sl.ops = append(sl.ops, o)
					continue
				}
				ops := sl.ops
				sl.tx = nil
				i++
				if err := tx.Commit(); err != nil {
					if !errors.Is(err, ErrConflict) {
						fail(err)
						return
					}
					db.mu.RLock()
					f := failure{readVersion: tx.ReadVersion(), seen: db.version, ops: ops}
					db.mu.RUnlock()
					mu.Lock()
					failures = append(failures, f)
					mu.Unlock()
					continue
				}
				rec := record{version: tx.CommittedVersion(), ops: ops}
				if rec.version == 0 {
					rec.version, rec.readOnly = tx.ReadVersion(), true
				}
				mu.Lock()
				history = append(history, rec)
				mu.Unlock()
			}
			for _, sl := range slots {
				if sl.tx != nil {
					sl.tx.Rollback()
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Writers at version v come before transactions that changed nothing
	// and read at v.
	slices.SortStableFunc(history, func(a, b record) int {
		if a.version != b.version {
			if a.version < b.version {
				return -1
			}
			return 1
		}
		switch {
		case a.readOnly == b.readOnly:
			return 0
		case b.readOnly:
			return -1
		}
		return 1
	})
	state := serialState{}
	type touch struct {
		version uint64
		keys    []string
	}
	var touches []touch // the keys each writing commit changed, in version order
	for i, rec := range history {
		if !rec.readOnly {
			touches = append(touches, touch{rec.version, state.touched(rec.ops)})
		}
		s := state
		if rec.readOnly {
			s = serialState{}
			for k, v := range state {
				s[k] = v
			}
		}
		for j, o := range rec.ops {
			got, present := s.apply(o)
			switch o.kind {
			case "get", "getkey", "range", "keyrange":
				if got != o.got || present != o.gotPresent {
					var log bytes.Buffer
					for _, o := range rec.ops {
						fmt.Fprintf(&log, "\n  %s key=%q end=%q sel=%v esel=%v %+v value=%q got=%s", o.kind, o.key, o.end, o.sel, o.esel, o.opts, o.value, o.got)
					}
					t.Fatalf("transaction %d (version %d, changed nothing: %v), op %d %s: got %s (%v), the serial order gives %s (%v); its ops:%s",
						i, rec.version, rec.readOnly, j, o.kind, o.got, o.gotPresent, got, present, log.String())
				}
			}
		}
	}
	// No conflict without a cause: a transaction that failed must have
	// read (by a generous measure: the whole span between each selector's
	// key and where it landed) a key that a commit after its read version
	// changed.
	for i, f := range failures {
		s := serialState{}
		for _, rec := range history {
			if rec.version > f.readVersion {
				break
			}
			if !rec.readOnly {
				for _, o := range rec.ops {
					s.apply(o)
				}
			}
		}
		var spans []keyRange
		for _, o := range f.ops {
			spans = append(spans, s.footprint(o)...)
			s.apply(o)
		}
		justified := false
		for _, tc := range touches {
			if tc.version <= f.readVersion || tc.version > f.seen {
				continue
			}
			for _, k := range tc.keys {
				for _, sp := range spans {
					if sp.contains([]byte(k)) {
						justified = true
					}
				}
			}
		}
		if !justified {
			var log bytes.Buffer
			for _, o := range f.ops {
				fmt.Fprintf(&log, "\n  %s key=%q end=%q sel=%v esel=%v %+v value=%q got=%s", o.kind, o.key, o.end, o.sel, o.esel, o.opts, o.value, o.got)
			}
			t.Errorf("failed transaction %d (read version %d, failed by %d) conflicted with nothing it read; its ops:%s", i, f.readVersion, f.seen, log.String())
		}
	}
	t.Logf("%d committed transactions checked, %d conflicts", len(history), len(failures))
}

// touched returns the keys a transaction's ops write a record for, applied
// to s (which it leaves unchanged): a caskade commit writes every set and
// atomic operation, and clears only keys present.
func (s serialState) touched(ops []serialOp) []string {
	c := serialState{}
	for k, v := range s {
		c[k] = v
	}
	var keys []string
	for _, o := range ops {
		k := string(o.key)
		switch o.kind {
		case "set", "add", "bytemax", "append":
			keys = append(keys, k)
		case "clear":
			if _, ok := c[k]; ok {
				keys = append(keys, k)
			}
		case "cac":
			if _, ok := c[k]; ok {
				keys = append(keys, k)
			}
		case "clearrange":
			for mk := range c {
				if mk >= k && mk < string(o.end) {
					keys = append(keys, mk)
				}
			}
		}
		c.apply(o)
	}
	return keys
}

// footprint returns, generously, the keys whose change could change what
// read o returns on s.
func (s serialState) footprint(o serialOp) []keyRange {
	span := func(sel KeySelector, r []byte) keyRange {
		lo, hi := sel.Key, []byte(nil)
		if r != nil {
			if bytes.Compare(r, lo) < 0 {
				lo = r
			}
			hi = []byte(max(string(r), string(sel.Key)) + "\x00\x00")
		}
		return keyRange{bytes.Clone(lo), hi}
	}
	switch o.kind {
	case "get":
		return []keyRange{{o.key, keyAfter(bytes.Clone(o.key))}}
	case "getkey":
		return []keyRange{span(o.sel, s.resolve(o.sel))}
	case "range":
		b, e := span(o.sel, s.resolve(o.sel)), span(o.esel, s.resolve(o.esel))
		lo := b.begin
		if bytes.Compare(e.begin, lo) < 0 {
			lo = e.begin
		}
		hi := b.end
		if hi != nil && (e.end == nil || bytes.Compare(e.end, hi) > 0) {
			hi = e.end
		}
		return []keyRange{{lo, hi}}
	case "keyrange":
		return []keyRange{{o.key, o.end}}
	}
	return nil
}
