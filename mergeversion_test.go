package caskade

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade/vfs"
)

// TestMergeVersionModel runs random sets (some with expiries), deletes,
// merges, reopens (with and without hint files), crashes during merges,
// checks and backup/restore round trips over keys that include the empty
// key and runs of zero bytes (the keys keepNewestVersion's tombstone
// takes), against a model: after every step the live keys are the
// model's, and the version is never below the newest one acknowledged.
func TestMergeVersionModel(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 7))
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	fs := vfs.NewMem()
	opts := func() *Options {
		return &Options{FS: fs, MaxFileSize: 1 << 10, ExpiryPeriod: -1, Now: now, MergeInterval: -1, Sync: SyncAlways}
	}
	keys := []string{"", "\x00", "\x00\x00", "\x00\x00\x00", "a", "b", "c"}
	type mv struct {
		val string
		exp int64
	}
	model := map[string]mv{}
	live := func() map[string]string {
		out := map[string]string{}
		for k, v := range model {
			if v.exp == 0 || v.exp > clock.Load() {
				out[k] = v.val
			}
		}
		return out
	}
	var acked uint64
	db, err := Open("/db", opts())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	reopen := func(what string, dropHints bool) {
		t.Helper()
		db.Close()
		if dropHints {
			names, _ := fs.List("/db")
			for _, n := range names {
				if strings.HasSuffix(n, ".hint") {
					fs.Remove("/db/" + n)
				}
			}
		}
		if rep, err := Check(context.Background(), "/db", &CheckOptions{FS: fs}); err != nil || !rep.OK() {
			t.Fatalf("seed %d: %s: check: %+v %v", seed, what, rep, err)
		}
		if db, err = Open("/db", opts()); err != nil {
			t.Fatalf("seed %d: %s: open: %v", seed, what, err)
		}
	}
	verify := func(step int, what string) {
		t.Helper()
		if got, want := contents(t, db), live(); !maps.Equal(got, want) {
			t.Fatalf("seed %d step %d after %s: %q, want %q", seed, step, what, got, want)
		}
		if v := db.Version(); v < acked {
			t.Fatalf("seed %d step %d after %s: version %d below %d acknowledged", seed, step, what, v, acked)
		}
	}
	for step := 0; step < 400; step++ {
		k := keys[r.IntN(len(keys))]
		what := ""
		switch n := r.IntN(20); {
		case n < 6:
			v := fmt.Sprintf("v%d", step)
			var exp int64
			var err error
			if r.IntN(3) == 0 {
				exp = clock.Load() + int64(1+r.IntN(5))
				err = db.SetEntry([]byte(k), []byte(v), SetOptions{ExpiresAt: time.UnixMilli(exp)})
			} else {
				err = db.Set([]byte(k), []byte(v))
			}
			if err != nil {
				t.Fatal(err)
			}
			model[k] = mv{v, exp}
			what = fmt.Sprintf("set %q exp %d", k, exp)
		case n < 9:
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(model, k)
			what = fmt.Sprintf("delete %q", k)
		case n < 11:
			clock.Add(int64(r.IntN(4)))
			what = "tick"
		case n < 12:
			if _, err := db.Merge(context.Background()); err != nil {
				t.Fatalf("seed %d: merge: %v", seed, err)
			}
			if n := db.ReclaimableBytes(); n != 0 {
				t.Fatalf("seed %d step %d: %d reclaimable bytes right after a merge", seed, step, n)
			}
			what = "merge"
		case n < 14:
			only := someSealed(db, r)
			if _, err := db.merge(context.Background(), false, only); err != nil {
				t.Fatalf("seed %d: merge of files %v: %v", seed, only, err)
			}
			what = fmt.Sprintf("merge of files %v", only)
		case n < 16:
			drop := r.IntN(2) == 0
			reopen("reopen", drop)
			what = fmt.Sprintf("reopen (hints dropped %v)", drop)
		case n < 18:
			// Crash somewhere in a merge, then recover.
			db.Close()
			db, err = Open("/db", opts())
			if err != nil {
				t.Fatal(err)
			}
			fs.SetCrashAfter(r.IntN(40))
			var only []uint32
			if r.IntN(2) == 0 {
				only = someSealed(db, r)
			}
			db.merge(context.Background(), only == nil, only)
			db.Close()
			fs = fs.Crash(vfs.CrashOptions{Tear: r.IntN(2) == 0, Rand: rand.New(rand.NewPCG(seed, uint64(step)))})
			if db, err = Open("/db", opts()); err != nil {
				t.Fatalf("seed %d step %d: open after a crash in a merge: %v", seed, step, err)
			}
			what = "crash in a merge"
		case n < 19:
			dst := fmt.Sprintf("/backup%d", step)
			if _, err := db.Merge(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Backup(context.Background(), dst, nil); err != nil {
				t.Fatalf("seed %d: backup: %v", seed, err)
			}
			db.Close()
			if err := Restore(context.Background(), dst, "/db", &RestoreOptions{FS: fs, Force: true}); err != nil {
				t.Fatalf("seed %d: restore: %v", seed, err)
			}
			if db, err = Open("/db", opts()); err != nil {
				t.Fatal(err)
			}
			what = "merge, backup, restore"
		default:
			if _, err := db.Get([]byte(k)); err != nil && err != ErrNotFound {
				t.Fatal(err)
			}
			what = "get"
		}
		verify(step, what)
		acked = max(acked, db.Version())
	}
}

// someSealed returns a random non-empty subset of the sealed files, or
// nil if there are none.
func someSealed(db *DB, r *rand.Rand) []uint32 {
	ids := sealedIDs(db)
	if len(ids) == 0 {
		return nil
	}
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	return ids[:1+r.IntN(len(ids))]
}

// Right after a merge, ReclaimableBytes is 0 even when the merge dropped
// an expired empty key and wrote the tombstone that carries the newest
// version: the tombstone's key must be the one ReclaimableBytes expects
// once the expired key is gone.
func TestReclaimableBytesZeroAfterMergeOfExpiredEmptyKey(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	db := openTest(t, t.TempDir(), &Options{ExpiryPeriod: -1, MergeInterval: -1,
		Now: func() time.Time { return time.UnixMilli(clock.Load()) }})
	// "a" overwritten: the active file holds a dead record, so Merge
	// seals it and takes it.
	for _, v := range []string{"1", "2"} {
		if err := db.Set([]byte("a"), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SetEntry(nil, []byte("soon"), SetOptions{ExpiresAt: time.UnixMilli(clock.Load() + 10)}); err != nil {
		t.Fatal(err)
	}
	clock.Add(20)
	newest := db.Version()
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := db.ReclaimableBytes(); n != 0 {
		t.Errorf("%d reclaimable bytes right after a merge, want 0", n)
	}
	db.Close()
	db = openTest(t, db.Dir(), nil)
	if v := db.Version(); v < newest {
		t.Errorf("version %d after reopening, want at least %d", v, newest)
	}
}
