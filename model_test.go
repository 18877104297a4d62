package caskade

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/caskade/caskade/vfs"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized tests (0: random)")

// testSeed returns the seed for a randomized test and logs it, so that a
// failure can be replayed with -seed.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	s := *seedFlag
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return s
}

type modelVal struct {
	val string
	exp int64 // Unix ms, 0 none
}

// model is the reference: a plain map, sorted on demand.
type model map[string]modelVal

func (m model) live(now int64) []string {
	var keys []string
	for k, v := range m {
		if v.exp == 0 || v.exp > now {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func (m model) get(k string, now int64) (string, bool) {
	v, ok := m[k]
	if !ok || (v.exp != 0 && v.exp <= now) {
		return "", false
	}
	return v.val, true
}

func (m model) resolve(sel KeySelector, now int64) []byte { return resolveIn(m.live(now), sel) }

// resolveIn resolves sel over keys, sorted, as the database does: "" below
// the first key, nil past the last.
func resolveIn(keys []string, sel KeySelector) []byte {
	var p int
	if sel.OrEqual {
		p, _ = slices.BinarySearch(keys, string(sel.Key)+"\x00")
	} else {
		p, _ = slices.BinarySearch(keys, string(sel.Key))
	}
	r := p - 1 + sel.Offset
	switch {
	case r < 0:
		return []byte{}
	case r >= len(keys):
		return nil
	}
	return []byte(keys[r])
}

type reader interface {
	Get([]byte) ([]byte, error)
	GetKey(KeySelector) ([]byte, error)
	Range(begin, end []byte, opts *RangeOptions) ([]KeyValue, error)
}

// checkReads compares a random sample of reads of r against m at now.
func checkReads(t *testing.T, r *rand.Rand, db reader, m model, now int64, key func() string, what string) {
	t.Helper()
	for range 5 {
		k := key()
		want, ok := m.get(k, now)
		got, err := db.Get([]byte(k))
		if ok != (err == nil) || (ok && string(got) != want) {
			t.Fatalf("%s: get %q = %q, %v; want %q, %v", what, k, got, err, want, ok)
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: get %q: %v", what, k, err)
		}
	}
	sel := KeySelector{Key: []byte(key()), OrEqual: r.IntN(2) == 0, Offset: r.IntN(7) - 3}
	got, err := db.GetKey(sel)
	if want := getKeyWant(m.resolve(sel, now)); err != nil || !bytes.Equal(got, want) || (got == nil) != (want == nil) {
		t.Fatalf("%s: %v = %q, %v; want %q", what, sel, got, err, want)
	}
	lo, hi := key(), key()
	if lo > hi {
		lo, hi = hi, lo
	}
	var end []byte
	if r.IntN(4) > 0 {
		end = []byte(hi)
	}
	opts := &RangeOptions{Limit: r.IntN(5), Reverse: r.IntN(2) == 0}
	kvs, err := db.Range([]byte(lo), end, opts)
	if err != nil {
		t.Fatalf("%s: range: %v", what, err)
	}
	var want []string
	for _, k := range m.live(now) {
		if k >= lo && (end == nil || k < hi) {
			want = append(want, k)
		}
	}
	if opts.Reverse {
		slices.Reverse(want)
	}
	if opts.Limit > 0 && len(want) > opts.Limit {
		want = want[:opts.Limit]
	}
	if len(kvs) != len(want) {
		t.Fatalf("%s: range [%q,%q) %+v: %d pairs, want %d", what, lo, end, opts, len(kvs), len(want))
	}
	for i, kv := range kvs {
		if string(kv.Key) != want[i] || string(kv.Value) != m[want[i]].val {
			t.Fatalf("%s: range pair %d = %q:%q, want %q:%q", what, i, kv.Key, kv.Value, want[i], m[want[i]].val)
		}
	}
}

// TestModel runs random operations against the database and a map and
// compares every read; it reopens the database now and then.
func TestModel(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 1))
	clk := newTestClock()
	fs := vfs.NewMem()
	opts := &Options{FS: fs, Now: clk.Now, ExpiryPeriod: -1, MaxFileSize: 8 << 10, Sync: SyncNone}
	db, err := Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	m := model{}
	key := func() string { return fmt.Sprintf("k%02d", r.IntN(60)) }
	val := func() string { return string(bytes.Repeat([]byte{byte('a' + r.IntN(26))}, r.IntN(300))) }
	type snap struct {
		s   *Snapshot
		m   model
		now int64
	}
	var snaps []snap
	steps := 3000
	if testing.Short() {
		steps = 500
	}
	for step := range steps {
		now := clk.Now().UnixMilli()
		switch n := r.IntN(100); {
		case n < 30:
			k, v := key(), val()
			if err := db.Set([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			m[k] = modelVal{val: v}
		case n < 38:
			k, v := key(), val()
			ttl := time.Duration(1+r.IntN(3000)) * time.Millisecond
			if err := db.SetWithTTL([]byte(k), []byte(v), ttl); err != nil {
				t.Fatal(err)
			}
			m[k] = modelVal{val: v, exp: now + ttl.Milliseconds()}
		case n < 46:
			k := key()
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(m, k)
		case n < 52:
			var b Batch
			next := maps.Clone(m)
			for range 1 + r.IntN(6) {
				k := key()
				switch r.IntN(3) {
				case 0:
					lo, hi := key(), key()
					if lo > hi {
						lo, hi = hi, lo
					}
					b.DeleteRange([]byte(lo), []byte(hi))
					for mk := range next {
						if mk >= lo && mk < hi {
							delete(next, mk)
						}
					}
				case 1:
					b.Delete([]byte(k))
					delete(next, k)
				default:
					v := val()
					b.Set([]byte(k), []byte(v))
					next[k] = modelVal{val: v}
				}
			}
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			m = next
		case n < 56:
			k := key()
			ttl := time.Duration(r.IntN(3000)-500) * time.Millisecond
			ok, err := db.Expire([]byte(k), ttl)
			if err != nil {
				t.Fatal(err)
			}
			_, live := m.get(k, now)
			if ok != live {
				t.Fatalf("step %d: expire %q = %v, model %v", step, k, ok, live)
			}
			if live {
				if ttl <= 0 {
					delete(m, k)
				} else {
					m[k] = modelVal{val: m[k].val, exp: now + ttl.Milliseconds()}
				}
			}
		case n < 58:
			k := key()
			ok, err := db.Persist([]byte(k))
			if err != nil {
				t.Fatal(err)
			}
			if _, live := m.get(k, now); live != ok {
				t.Fatalf("step %d: persist %q = %v", step, k, ok)
			} else if live {
				m[k] = modelVal{val: m[k].val}
			}
		case n < 64:
			clk.Advance(time.Duration(r.IntN(700)) * time.Millisecond)
		case n < 66:
			db.expireSample()
		case n < 69:
			snaps = append(snaps, snap{db.Snapshot(), maps.Clone(m), now})
		case n < 74 && len(snaps) > 0:
			i := r.IntN(len(snaps))
			s := snaps[i]
			checkReads(t, r, s.s, s.m, s.now, key, fmt.Sprintf("step %d snapshot", step))
			if r.IntN(3) == 0 {
				s.s.Close()
				snaps = slices.Delete(snaps, i, i+1)
			}
		case n < 75:
			for _, s := range snaps {
				s.s.Close()
			}
			snaps = nil
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if db, err = Open("/db", opts); err != nil {
				t.Fatalf("step %d: reopen: %v", step, err)
			}
		case n < 77:
			if _, err := db.Merge(context.Background()); err != nil {
				t.Fatalf("step %d: merge: %v", step, err)
			}
		default:
			checkReads(t, r, db, m, now, key, fmt.Sprintf("step %d", step))
		}
	}
	for _, s := range snaps {
		s.s.Close()
	}
	// Full comparison at the end.
	now := clk.Now().UnixMilli()
	kvs, err := db.Range(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := m.live(now)
	if len(kvs) != len(want) {
		t.Fatalf("final: %d keys, want %d", len(kvs), len(want))
	}
	for i, kv := range kvs {
		if string(kv.Key) != want[i] || string(kv.Value) != m[want[i]].val {
			t.Fatalf("final pair %d differs", i)
		}
	}
}
