package caskade

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade/vfs"
)

// crashState is the full state the model expects: value and expiry per key.
type crashState map[string]modelVal

// visible is the part of s a reader sees at now.
func (s crashState) visible(now int64) crashState {
	out := crashState{}
	for k, v := range s {
		if v.exp == 0 || v.exp > now {
			out[k] = v
		}
	}
	return out
}

// values is s without the expiries.
func (s crashState) values() map[string]string {
	out := map[string]string{}
	for k, v := range s {
		out[k] = v.val
	}
	return out
}

// recovered reads every live key of db with its value and expiry.
func recovered(t *testing.T, db *DB) crashState {
	t.Helper()
	got := crashState{}
	for k, v := range contents(t, db) {
		info, err := db.Stat([]byte(k))
		if err != nil {
			t.Fatalf("stat %q: %v", k, err)
		}
		var exp int64
		if !info.ExpiresAt.IsZero() {
			exp = info.ExpiresAt.UnixMilli()
		}
		got[k] = modelVal{val: v, exp: exp}
	}
	return got
}

// TestCrashModel runs random workloads (sets, sets with a TTL, deletes,
// range deletes, batches, expiry changes, write-conflict-only
// transactions, merges with a snapshot held across them, explicit syncs,
// clean reopens and reopens after the process died, and a clock that
// moves) against a model, under every sync
// policy, and crashes the memory file system at a random mutating
// operation, tearing unsynced tails or not; the recovery itself is crashed
// at a random point too, some of the time. After each crash the database
// must open and hold one of the states the model allows: under
// SyncAlways the acknowledged state (or that plus the write in doubt);
// otherwise any state from the last successful Sync on, in order, so that
// nothing synced is lost, no batch is half applied and nothing deleted
// comes back. The version never falls below that of the state recovered.
// Each run goes through several crash cycles on one file system.
//
// CASKADE_CRASH_RUNS sets the number of runs (default 6; 3 with -short).
func TestCrashModel(t *testing.T) {
	seed := testSeed(t)
	runs := 6
	if testing.Short() {
		runs = 3
	}
	if s := os.Getenv("CASKADE_CRASH_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		runs = n
	}
	for run := range runs {
		policy := []SyncPolicy{SyncAlways, SyncEverySec, SyncNone}[run%3]
		crashModelRun(t, seed, run, policy)
	}
}

func crashModelRun(t *testing.T, seed uint64, run int, policy SyncPolicy) {
	r := rand.New(rand.NewPCG(seed, uint64(run)))
	clk := newTestClock()
	opts := func(fs vfs.FS) *Options {
		return &Options{FS: fs, Sync: policy, Now: clk.Now, MaxFileSize: 2 << 10,
			ExpiryPeriod: -1, MergeInterval: -1, SyncInterval: time.Hour}
	}
	var trace []string
	fail := func(cycle int, format string, args ...any) {
		t.Helper()
		for _, l := range trace {
			t.Log(l)
		}
		t.Fatalf("seed %d run %d (%v) cycle %d: %s", seed, run, policy, cycle, fmt.Sprintf(format, args...))
	}
	fs := vfs.NewMem()
	state := crashState{}
	var version uint64 // the newest version the durable state may carry
	key := func() string { return fmt.Sprintf("k%02d", r.IntN(24)) }
	val := func() string {
		return fmt.Sprintf("v%d-", r.Uint32()) + strings.Repeat("x", r.IntN(700))
	}
	for cycle := range 8 {
		db, err := Open("/db", opts(fs))
		if err != nil {
			fail(cycle, "open: %v", err)
		}
		// states[i] is the state after the i-th acknowledged operation of
		// this cycle, vers[i] the database version then; states[durable:]
		// are those a crash may leave.
		states := []crashState{state}
		vers := []uint64{db.Version()}
		durable := 0
		var inDoubt crashState
		var snap *Snapshot
		var snapWant map[string]string
		checkSnap := func() {
			if snap == nil || fs.Crashed() {
				return
			}
			got := map[string]string{}
			it, err := snap.NewIterator(nil)
			if err != nil {
				fail(cycle, "snapshot iterator: %v", err)
			}
			for ok := it.First(); ok; ok = it.Next() {
				got[string(it.Key())] = string(it.Value())
			}
			if err := it.Err(); err != nil {
				fail(cycle, "snapshot read after merge: %v", err)
			}
			it.Close()
			if !maps.Equal(got, snapWant) {
				fail(cycle, "snapshot holds %d keys after merge, want %d", len(got), len(snapWant))
			}
		}
		if r.IntN(4) > 0 {
			fs.SetCrashAfter(r.IntN(120))
		}
		trace = nil
	ops:
		for range 80 {
			cur := states[len(states)-1]
			next := maps.Clone(cur)
			now := clk.Now().UnixMilli()
			var err error
			n := r.IntN(100)
			trace = append(trace, fmt.Sprintf("--- op %d state %d durable %d fsops %d ver %d", n, len(states)-1, durable, fs.MutatingOps(), db.Version()))
			switch {
			case n < 30:
				k, v := key(), val()
				next[k] = modelVal{val: v}
				err = db.Set([]byte(k), []byte(v))
			case n < 40:
				k, v := key(), val()
				ttl := time.Duration(1+r.IntN(3000)) * time.Millisecond
				next[k] = modelVal{val: v, exp: now + ttl.Milliseconds()}
				err = db.SetWithTTL([]byte(k), []byte(v), ttl)
			case n < 52:
				k := key()
				delete(next, k)
				err = db.Delete([]byte(k))
			case n < 55:
				b, e := key(), key()
				if e < b {
					b, e = e, b
				}
				for k := range next {
					if k >= b && k < e {
						delete(next, k)
					}
				}
				err = db.DeleteRange([]byte(b), []byte(e))
			case n < 65:
				var b Batch
				for range 2 + r.IntN(5) {
					k := key()
					switch r.IntN(4) {
					case 0:
						b.Delete([]byte(k))
						delete(next, k)
					case 1:
						v := val()
						ttl := time.Duration(1+r.IntN(3000)) * time.Millisecond
						b.SetWithTTL([]byte(k), []byte(v), ttl)
						next[k] = modelVal{val: v, exp: now + ttl.Milliseconds()}
					default:
						v := val()
						b.Set([]byte(k), []byte(v))
						next[k] = modelVal{val: v}
					}
				}
				err = db.Write(&b)
			case n < 69:
				k := key()
				if mv, ok := next[k]; ok && (mv.exp == 0 || mv.exp > now) {
					if r.IntN(2) == 0 {
						mv.exp = 0
						_, err = db.Persist([]byte(k))
					} else {
						ttl := time.Duration(1+r.IntN(3000)) * time.Millisecond
						mv.exp = now + ttl.Milliseconds()
						_, err = db.Expire([]byte(k), ttl)
					}
					next[k] = mv
				}
			case n < 73:
				// A commit of a write conflict range only: a version of its
				// own and no change.
				var tx *Tx
				if tx, err = db.Begin(); err == nil {
					tx.AddWriteConflictKey([]byte(key()))
					err = tx.Commit()
				}
			case n < 80:
				if snap == nil && r.IntN(2) == 0 {
					snap = db.Snapshot()
					snapWant = cur.visible(now).values()
				}
				// Every file, or some sealed files only, as the
				// automatic merge may (see carryTombstones).
				var only []uint32
				if r.IntN(2) == 0 {
					only = someSealed(db, r)
				}
				if _, err := db.merge(context.Background(), only == nil, only); err != nil {
					if !errors.Is(err, vfs.ErrCrashed) && !errors.Is(err, ErrWritesStopped) {
						fail(cycle, "merge of files %v: %v", only, err)
					}
					break ops
				}
				checkSnap()
				continue
			case n < 86:
				if err := db.Sync(); err != nil {
					if !errors.Is(err, vfs.ErrCrashed) && !errors.Is(err, ErrWritesStopped) {
						fail(cycle, "sync: %v", err)
					}
					break ops
				}
				durable = len(states) - 1
				continue
			case n < 95:
				clk.Advance(time.Duration(r.IntN(1500)) * time.Millisecond)
				continue
			default:
				// A clean reopen, or one after the process died: its
				// unsynced writes are still in the page cache, which the
				// memory file system's current bytes stand for.
				checkSnap()
				if snap != nil {
					snap.Close()
					snap = nil
				}
				if r.IntN(2) == 0 {
					db.stopWrites(errors.New("the process died")) // Close then writes nothing
				}
				if err := db.Close(); err != nil {
					if !errors.Is(err, vfs.ErrCrashed) {
						fail(cycle, "close: %v", err)
					}
					db = nil
					break ops
				}
				if db, err = Open("/db", opts(fs)); err != nil {
					if !errors.Is(err, vfs.ErrCrashed) {
						fail(cycle, "reopen: %v", err)
					}
					db = nil
					break ops
				}
				durable = len(states) - 1
				if got := recovered(t, db); !maps.Equal(got.visible(now), cur.visible(now)) {
					fail(cycle, "clean reopen: %d keys, want %d", len(got), len(cur.visible(now)))
				}
				if db.Version() < vers[len(vers)-1] {
					fail(cycle, "clean reopen: version %d, was %d", db.Version(), vers[len(vers)-1])
				}
				continue
			}
			for k := range next {
				if next[k] != cur[k] {
					trace = append(trace, fmt.Sprintf("  set %s len %d exp %d", k, len(next[k].val), next[k].exp))
				}
			}
			for k := range cur {
				if _, ok := next[k]; !ok {
					trace = append(trace, "  del "+k)
				}
			}
			if err != nil {
				trace = append(trace, fmt.Sprintf("  err %v", err))
				if !errors.Is(err, vfs.ErrCrashed) && !errors.Is(err, ErrWritesStopped) {
					fail(cycle, "write: %v", err)
				}
				inDoubt = next
				break
			}
			states = append(states, next)
			vers = append(vers, db.Version())
			if policy == SyncAlways {
				durable = len(states) - 1
			}
		}
		if db != nil {
			checkSnap()
			if snap != nil {
				snap.Close()
			}
			db.Close()
		}
		// The power fails, and perhaps again during the recovery.
		tear := func() vfs.CrashOptions {
			return vfs.CrashOptions{Tear: r.IntN(2) == 0, Rand: rand.New(rand.NewPCG(r.Uint64(), 0))}
		}
		fs = fs.Crash(tear())
		for r.IntN(3) == 0 {
			fs.SetCrashAfter(r.IntN(8))
			db, err := Open("/db", opts(fs))
			if err == nil {
				db.Close()
			} else if !errors.Is(err, vfs.ErrCrashed) {
				fail(cycle, "open crashed during recovery: %v", err)
			}
			fs = fs.Crash(tear())
		}
		db, err = Open("/db", opts(fs))
		if err != nil {
			fail(cycle, "open after crash: %v", err)
		}
		now := clk.Now().UnixMilli()
		got := recovered(t, db)
		match := -1
		for i := durable; i < len(states); i++ {
			if maps.Equal(got.visible(now), states[i].visible(now)) {
				match = i
				break
			}
		}
		switch {
		case match >= 0:
			state = states[match]
			version = vers[match]
		case inDoubt != nil && maps.Equal(got.visible(now), inDoubt.visible(now)):
			state = inDoubt
			version = vers[len(vers)-1]
		default:
			want := states[durable].visible(now)
			var diff []string
			for k, v := range want {
				if g, ok := got[k]; !ok || g != v {
					diff = append(diff, "lost or changed "+k)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					diff = append(diff, "extra "+k)
				}
			}
			slices.Sort(diff)
			for k, v := range got {
				t.Logf("got %s len %d exp %d (now %d)", k, len(v.val), v.exp, now)
			}
			for k, v := range states[len(states)-1] {
				t.Logf("last %s len %d exp %d (now %d)", k, len(v.val), v.exp, now)
			}
			fail(cycle, "recovered %d keys matching none of the %d allowed states (durable from %d); against the oldest: %v",
				len(got), len(states)-durable, durable, diff)
		}
		if v := db.Version(); v < version {
			fail(cycle, "version %d after recovery, below %d", v, version)
		}
		if err := db.Close(); err != nil {
			fail(cycle, "close after recovery: %v", err)
		}
		if version < vers[len(vers)-1] && policy == SyncAlways && inDoubt == nil {
			fail(cycle, "recovered an older version under SyncAlways")
		}
	}
}
