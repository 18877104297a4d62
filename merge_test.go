package caskade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

func dataFiles(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if _, kind := segment.Parse(n); kind == segment.KindData {
			out = append(out, n)
		}
	}
	return out
}

func TestMergeCompactsAndKeepsData(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	opts := &Options{MaxFileSize: 8 << 10, Now: clk.Now, ExpiryPeriod: -1, Sync: SyncNone}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	val := bytes.Repeat([]byte("v"), 200)
	for round := range 10 {
		for i := range 100 {
			k := fmt.Sprintf("k%03d", i)
			v := fmt.Sprintf("%d-%s", round, val)
			db.Set([]byte(k), []byte(v))
			want[k] = v
		}
	}
	for i := range 30 {
		k := fmt.Sprintf("k%03d", i)
		db.Delete([]byte(k))
		delete(want, k)
	}
	db.SetWithTTL([]byte("k050"), []byte("ttl"), time.Hour) // survives the merge with its TTL
	want["k050"] = "ttl"
	db.SetWithTTL([]byte("k051"), []byte("gone"), time.Second)
	delete(want, "k051")
	clk.Advance(2 * time.Second) // k051 expires before the merge
	unknown := filepath.Join(dir, "README.txt")
	os.WriteFile(unknown, []byte("not ours"), 0o644)

	before := db.Stats()
	ms, err := db.Merge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after := db.Stats()
	t.Logf("merge: %+v; disk %d -> %d bytes", ms, before.DiskBytes, after.DiskBytes)
	if ms.InputFiles < 2 || ms.OutputFiles < 1 || ms.Records == 0 || ms.Records > len(want) {
		t.Fatalf("merge stats %+v for %d live keys", ms, len(want))
	}
	if after.DiskBytes >= before.DiskBytes/3 {
		t.Fatalf("disk use %d -> %d: merge did not reclaim overwritten data", before.DiskBytes, after.DiskBytes)
	}
	if got := contents(t, db); !maps.Equal(got, want) {
		t.Fatalf("after merge: %d keys, want %d", len(got), len(want))
	}
	if info, err := db.Stat([]byte("k050")); err != nil || info.ExpiresAt.IsZero() {
		t.Fatalf("TTL lost in merge: %+v %v", info, err)
	}
	if _, err := os.Stat(unknown); err != nil {
		t.Fatalf("merge touched a file it does not own: %v", err)
	}
	// Writes go on after a merge, and everything survives a reopen.
	db.Set([]byte("after"), []byte("merge"))
	want["after"] = "merge"
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, opts)
	if got := contents(t, db); !maps.Equal(got, want) {
		t.Fatalf("after reopen: %d keys, want %d", len(got), len(want))
	}
	for i := range 30 {
		mustMiss(t, db, fmt.Sprintf("k%03d", i)) // deleted keys stay deleted
	}
	if st := db.Stats(); st.Recovery.FromHints != st.Recovery.Files {
		t.Fatalf("merge outputs without hints: %+v", st.Recovery)
	}
	// A second merge of an already merged database keeps everything too.
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, db); !maps.Equal(got, want) {
		t.Fatalf("after second merge: %d keys, want %d", len(got), len(want))
	}
}

// A snapshot taken before a merge keeps reading the old files; they leave
// the disk only when it closes.
func TestMergeKeepsFilesForSnapshots(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, &Options{MaxFileSize: 4 << 10, ExpiryPeriod: -1, Sync: SyncNone})
	for i := range 200 {
		db.Set(fmt.Appendf(nil, "k%03d", i%50), fmt.Appendf(nil, "v%d", i))
	}
	snap := db.Snapshot()
	it, _ := db.NewIterator(nil)
	oldFiles := dataFiles(t, vfs.OS(), dir)
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 150; i < 200; i++ {
		mustGet(t, snap, fmt.Sprintf("k%03d", i%50), fmt.Sprintf("v%d", i))
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if it.Value() == nil {
			t.Fatalf("iterator read after merge: %v", it.Err())
		}
		n++
	}
	if n != 50 {
		t.Fatalf("iterator saw %d keys", n)
	}
	// Retired data files are renamed to NAME.data.tmp until deleted.
	isRetired := func(name string) bool { return strings.HasSuffix(name, ".data.tmp") }
	names, _ := os.ReadDir(dir)
	retired := 0
	for _, e := range names {
		if isRetired(e.Name()) {
			retired++
		}
	}
	if retired == 0 {
		t.Fatal("retired files already deleted while a snapshot reads them")
	}
	snap.Close()
	it.Close()
	names, _ = os.ReadDir(dir)
	for _, e := range names {
		if isRetired(e.Name()) {
			t.Fatalf("retired file %s still on disk after the last reader closed (old files %v)", e.Name(), oldFiles)
		}
	}
}

// Merge under concurrent writers and readers, checked against a model.
func TestMergeConcurrent(t *testing.T) {
	seed := testSeed(t)
	db := openTest(t, t.TempDir(), &Options{MaxFileSize: 16 << 10, ExpiryPeriod: -1, Sync: SyncNone})
	const writers = 4
	models := make([]map[string]string, writers)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		models[w] = map[string]string{}
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("w%d-%03d", w, r.IntN(200))
				if r.IntN(4) == 0 {
					if err := db.Delete([]byte(k)); err != nil {
						t.Error(err)
						return
					}
					delete(models[w], k)
				} else {
					v := fmt.Sprintf("%d-%d", i, r.Uint64())
					if err := db.Set([]byte(k), []byte(v)); err != nil {
						t.Error(err)
						return
					}
					models[w][k] = v
				}
				// Read back one of this writer's keys.
				k = fmt.Sprintf("w%d-%03d", w, r.IntN(200))
				v, err := db.Get([]byte(k))
				want, ok := models[w][k]
				if ok != (err == nil) || (ok && string(v) != want) {
					t.Errorf("read %q during merge = %q, %v; want %q", k, v, err, want)
					return
				}
			}
		})
	}
	// Merge again and again while the writers run, until five merges had
	// sealed files to work on.
	for merged := 0; merged < 5; {
		ms, err := db.Merge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ms.InputFiles > 0 {
			merged++
		}
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	want := map[string]string{}
	for _, m := range models {
		maps.Copy(want, m)
	}
	if got := contents(t, db); !maps.Equal(got, want) {
		t.Fatalf("after concurrent merges: %d keys, want %d", len(got), len(want))
	}
}

func TestMergeCancel(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{MaxFileSize: 4 << 10, ExpiryPeriod: -1, Sync: SyncNone})
	for i := range 3000 {
		db.Set(fmt.Appendf(nil, "k%04d", i), []byte("value"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := db.Merge(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled merge: %v", err)
	}
	mustGet(t, db, "k2999", "value")
	if n := db.Stats().Keys; n != 3000 {
		t.Fatalf("keys after cancelled merge: %d", n)
	}
}

// TestCrashDuringMerge crashes the file system at every k-th mutating
// operation of a merge: the database must reopen with exactly its data.
func TestCrashDuringMerge(t *testing.T) {
	seed := testSeed(t)
	var newest uint64
	build := func() (*vfs.MemFS, map[string]string) {
		fs := vfs.NewMem()
		db, err := Open("/db", &Options{FS: fs, MaxFileSize: 2 << 10, ExpiryPeriod: -1})
		if err != nil {
			t.Fatal(err)
		}
		acked, _ := crashWorkload(db, seed, 60)
		// End with a delete: the merge drops the record with the newest
		// version, which must survive it (keepNewestVersion).
		if err := db.Set([]byte("last"), []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := db.Delete([]byte("last")); err != nil {
			t.Fatal(err)
		}
		newest = db.Version()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return fs, acked
	}
	base, want := build()
	measure := base.Crash(vfs.CrashOptions{})
	db, err := Open("/db", &Options{FS: measure, MaxFileSize: 2 << 10, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	start := measure.MutatingOps()
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	total := measure.MutatingOps() - start
	db.Close()
	for k := 0; k <= total; k++ {
		fs := base.Crash(vfs.CrashOptions{})
		db, err := Open("/db", &Options{FS: fs, MaxFileSize: 2 << 10, ExpiryPeriod: -1})
		if err != nil {
			t.Fatal(err)
		}
		fs.SetCrashAfter(k)
		db.Merge(context.Background())
		db.Close()
		for _, tear := range []bool{false, true} {
			after := fs.Crash(vfs.CrashOptions{Tear: tear, Rand: rand.New(rand.NewPCG(seed, uint64(k)))})
			db2, err := Open("/db", &Options{FS: after, MaxFileSize: 2 << 10, ExpiryPeriod: -1})
			if err != nil {
				t.Fatalf("crash at merge op %d: reopen: %v", k, err)
			}
			if got := contents(t, db2); !maps.Equal(got, want) {
				t.Fatalf("crash at merge op %d (tear %v): %d keys, want %d", k, tear, len(got), len(want))
			}
			if v := db2.Version(); v < newest {
				t.Fatalf("crash at merge op %d (tear %v): version %d, want at least %d", k, tear, v, newest)
			}
			db2.Close()
		}
	}
	t.Logf("crashed at each of %d merge operations", total+1)
}

func TestAutomaticMerge(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, &Options{MaxFileSize: 4 << 10, Sync: SyncNone, ExpiryPeriod: -1,
		MergeInterval: time.Millisecond, MergeMinDeadBytes: 16 << 10})
	// Overwrite the same keys until the first file is mostly dead...
	for round := 0; round < 100; round++ {
		for i := range 20 {
			db.Set(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte("x"), 100))
		}
	}
	// ...then wait for the background merge to retire it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, segment.DataName(1))); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no automatic merge within 30s although most bytes were dead: %+v", db.Stats())
		}
		runtime.Gosched()
	}
	for i := range 20 {
		mustGet(t, db, fmt.Sprintf("k%02d", i), string(bytes.Repeat([]byte("x"), 100)))
	}
}

func TestNeedsMerge(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{MaxFileSize: 4 << 10, Sync: SyncNone, ExpiryPeriod: -1,
		MergeInterval: -1, MergeMinDeadBytes: 8 << 10})
	for i := range 40 {
		db.Set(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte("x"), 100))
	}
	if db.NeedsMerge() {
		t.Fatal("a database with no dead bytes needs a merge")
	}
	for range 5 {
		for i := range 40 {
			db.Set(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte("y"), 100))
		}
	}
	if !db.NeedsMerge() {
		t.Fatalf("a mostly dead database needs no merge: %+v", db.Stats())
	}
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	if db.NeedsMerge() {
		t.Fatal("still needs a merge after merging")
	}
}

// An explicit Merge also compacts the active file when it holds dead
// records (a database smaller than MaxFileSize has only that file), and
// leaves it alone otherwise; the automatic merge never seals it.
func TestMergeIncludesDeadActiveFile(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1}
	db := openTest(t, dir, opts)
	want := map[string]string{}
	for round := range 50 {
		for i := range 20 {
			k, v := fmt.Sprintf("k%02d", i), fmt.Sprintf("%d-%s", round, bytes.Repeat([]byte("x"), 100))
			if err := db.Set([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
	}
	if db.NeedsMerge() {
		t.Fatal("the automatic merge would take the active file")
	}
	before := db.Stats()
	if len(before.Files) != 1 || !before.Files[0].Active || before.DeadBytes == 0 {
		t.Fatalf("before: %+v", before.Files)
	}
	ms, err := db.Merge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after := db.Stats()
	if ms.InputFiles != 1 || ms.Records != 20 || after.DeadBytes != 0 || after.LiveBytes != before.LiveBytes {
		t.Fatalf("merge %+v: live %d -> %d, dead %d -> %d", ms, before.LiveBytes, after.LiveBytes, before.DeadBytes, after.DeadBytes)
	}
	if got := contents(t, db); !maps.Equal(got, want) {
		t.Fatalf("after merge: %v, want %v", got, want)
	}
	// A new active file without dead records is not sealed.
	db.Set([]byte("new"), []byte("key"))
	want["new"] = "key"
	activeID := func() uint32 {
		for _, f := range db.Stats().Files {
			if f.Active {
				return f.ID
			}
		}
		return 0
	}
	was := activeID()
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	if now := activeID(); was == 0 || now != was {
		t.Fatalf("active file %d without dead records sealed: now %d", was, now)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, opts)
	if got := contents(t, db); !maps.Equal(got, want) {
		t.Fatalf("after reopen: %v, want %v", got, want)
	}
}

// TestMergeKeepsNewestVersion checks that a merge that drops the records
// carrying the newest versions (here deletes) does not let the version
// counter go back after a restart, with or without hint files, and that
// the tombstone keeping the version deletes nothing, the empty key
// included.
func TestMergeKeepsNewestVersion(t *testing.T) {
	for _, hints := range []bool{true, false} {
		t.Run(fmt.Sprintf("hints=%v", hints), func(t *testing.T) {
			dir := t.TempDir()
			opts := &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1}
			db, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			mustSet(t, db, "v", "", "a", "b", "c")
			for _, k := range []string{"b", "c"} {
				if err := db.Delete([]byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			newest := db.Version()
			for range 2 { // a second merge keeps it too
				if _, err := db.Merge(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if !hints {
				names, _ := filepath.Glob(filepath.Join(dir, "*.hint"))
				if len(names) == 0 {
					t.Fatal("no hint files to remove")
				}
				for _, n := range names {
					os.Remove(n)
				}
			}
			db = openTest(t, dir, opts)
			if v := db.Version(); v < newest {
				t.Fatalf("version after merge and reopen = %d, want at least %d", v, newest)
			}
			mustSet(t, db, "w", "d")
			if _, info, err := db.Lookup([]byte("d")); err != nil || info.Version <= newest {
				t.Fatalf("new write got version %d (%v), want above %d", info.Version, err, newest)
			}
			if got := contents(t, db); !maps.Equal(got, map[string]string{"": "v", "a": "v", "d": "w"}) {
				t.Fatalf("contents %q", got)
			}
		})
	}
}

// ReclaimableBytes predicts what a merge frees: nothing in a database
// with no dead record, nor after a merge that kept a tombstone to carry
// the newest version; the dead bytes after overwrites and deletes; and
// keys that expire while the database is open, which the file statistics
// count as live until they are merged.
func TestReclaimableBytes(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	opts := &Options{MaxFileSize: 4 << 10, Now: clk.Now, ExpiryPeriod: -1, MergeInterval: -1, Sync: SyncNone}
	db := openTest(t, dir, opts)
	if n := db.ReclaimableBytes(); n != 0 {
		t.Fatalf("empty database: ReclaimableBytes = %d", n)
	}
	val := bytes.Repeat([]byte("v"), 40)
	for i := range 100 {
		ttl := time.Duration(0)
		if i%10 == 0 {
			ttl = time.Duration(i+1) * time.Minute
		}
		if err := db.SetEntry(fmt.Appendf(nil, "k%03d", i), val, SetOptions{ExpiresAt: expiryAfter(clk, ttl)}); err != nil {
			t.Fatal(err)
		}
	}
	// checkPrediction merges and checks that the prediction was what
	// the merge freed (the inputs' sizes less the outputs', less the file
	// headers that fewer files save).
	checkPrediction := func(what string, want int64) {
		t.Helper()
		got := db.ReclaimableBytes()
		if want >= 0 && got != want {
			t.Errorf("%s: ReclaimableBytes = %d, want %d", what, got, want)
		}
		st, err := db.Merge(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		freed := st.InputBytes - st.OutputBytes - int64(st.InputFiles-st.OutputFiles)*16
		if st.InputFiles > 0 && freed != got {
			t.Errorf("%s: ReclaimableBytes = %d, the merge freed %d (%+v)", what, got, freed, st)
		}
		if n := db.ReclaimableBytes(); n != 0 {
			t.Errorf("%s: after the merge, ReclaimableBytes = %d, want 0", what, n)
		}
	}
	checkPrediction("no dead records", 0)

	// Keys expire while the database is open: not dead in Stats, but
	// reclaimable.
	clk.Advance(35 * time.Minute) // k000, k010, k020, k030 expire
	if st := db.Stats(); st.DeadBytes != 0 {
		t.Fatalf("expired keys count as dead in Stats (%d bytes): the test no longer shows the case", st.DeadBytes)
	}
	checkPrediction("4 keys expired", 4*int64(33+4+len(val)))
	if _, err := db.Get([]byte("k040")); err != nil {
		t.Fatalf("k040 after the merge: %v", err)
	}

	// The last write a delete: its tombstone is dead, and so is the
	// record it deletes; the merge keeps a tombstone for the version.
	if err := db.Delete([]byte("k099")); err != nil {
		t.Fatal(err)
	}
	checkPrediction("a delete", -1)
	if st := db.Stats(); st.DeadBytes == 0 {
		t.Fatalf("no tombstone kept for the newest version: the test no longer shows the case")
	}
	checkPrediction("again after a delete", 0)

	// Overwrites in the active file: Merge takes it too.
	for range 3 {
		if err := db.Set([]byte("k050"), val); err != nil {
			t.Fatal(err)
		}
	}
	checkPrediction("overwrites", -1)

	// A reopened database agrees.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, opts)
	if n := db.ReclaimableBytes(); n != 0 {
		t.Errorf("reopened: ReclaimableBytes = %d, want 0", n)
	}
	clk.Advance(time.Hour) // the rest of the TTLs (up to 91 minutes) expire
	checkPrediction("reopened, the rest expired", 5*int64(33+4+len(val)))
}

// expiryAfter returns the expiry ttl after clk's now (zero for no ttl).
func expiryAfter(clk *testClock, ttl time.Duration) time.Time {
	if ttl == 0 {
		return time.Time{}
	}
	return clk.Now().Add(ttl)
}

// TestMergeStatsReported: Stats reports the merges that finished and the
// last one's statistics, which servers show (INFO's aof_* fields).
func TestMergeStatsReported(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, MergeInterval: -1})
	if st := db.Stats(); st.Merges != 0 || !st.LastMergeEnd.IsZero() || st.Merge.Running {
		t.Fatalf("before any merge: %+v", st)
	}
	db.Set([]byte("k"), []byte("1"))
	db.Set([]byte("k"), []byte("2"))
	ms, err := db.Merge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.Merges != 1 || st.MergeFailures != 0 || st.LastMerge != ms || st.LastMergeEnd.IsZero() {
		t.Fatalf("after a merge: Merges %d, failures %d, last %+v at %v; Merge returned %+v",
			st.Merges, st.MergeFailures, st.LastMerge, st.LastMergeEnd, ms)
	}
}

// Stats.ExpiredKeys counts the keys dropped because they expired, however
// they were dropped: by active expiry, by a write to an expired key, and
// by a merge.
func TestExpiredKeysCounted(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone, Now: clk.Now, ExpiryPeriod: -1, MergeInterval: -1})
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := db.SetWithTTL([]byte(k), []byte("v"), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	mustSet(t, db, "v", "keep")
	clk.Advance(2 * time.Second)
	if n := db.Stats().ExpiredKeys; n != 0 {
		t.Fatalf("before any drop: ExpiredKeys = %d", n)
	}
	if err := db.Delete([]byte("a")); err != nil { // a write to an expired key
		t.Fatal(err)
	}
	if n := db.Stats().ExpiredKeys; n != 1 {
		t.Fatalf("after a delete of an expired key: ExpiredKeys = %d, want 1", n)
	}
	db.expireSample() // active expiry: b, c and d
	if n := db.Stats().ExpiredKeys; n != 4 {
		t.Fatalf("after active expiry: ExpiredKeys = %d, want 4", n)
	}
	if err := db.SetWithTTL([]byte("e"), []byte("v"), time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := db.Stats().ExpiredKeys; n != 5 {
		t.Fatalf("after a merge that dropped e: ExpiredKeys = %d, want 5", n)
	}
}

// sealActive seals the active file, so that the next write starts another.
func sealActive(t *testing.T, db *DB) {
	t.Helper()
	ops := []op{{kind: opSeal}}
	if _, err := db.commit(ops); err != nil {
		t.Fatal(err)
	}
	ops[0].view.release()
}

// sealedIDs returns the ids of the sealed data files.
func sealedIDs(db *DB) []uint32 {
	var ids []uint32
	for _, f := range db.Stats().Files {
		if !f.Active {
			ids = append(ids, f.ID)
		}
	}
	return ids
}

// A merge of some sealed files only (as the automatic merge does when a
// few files are dead enough) carries over the tombstones that still hide
// older records in the files it leaves: deleted and expired keys stay
// gone, with and without hint files, and a file of such tombstones does
// not make the database want to merge it again and again.
func TestPartialMergeCarriesTombstones(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1, Now: func() time.Time { return clock },
		MergeMinDeadBytes: 1, MergeDeadRatio: 1, MergeFileDeadRatio: 0.9}
	db := openTest(t, dir, opts)
	set := func(k, v string) {
		t.Helper()
		if err := db.Set([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	del := func(k string) {
		t.Helper()
		if err := db.Delete([]byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "b", "c", "d", "e", "x"} {
		set(k, "old-"+k)
	}
	sealActive(t, db)
	older := sealedIDs(db)
	set("a", "new-a")
	del("b")
	if err := db.SetEntry([]byte("c"), []byte("new-c"), SetOptions{ExpiresAt: clock.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	set("d", "new-d")
	del("d")
	set("e2", "new-e2")
	// Dead records and tombstones only: the file of the second round.
	set("pad", strings.Repeat("p", 100))
	del("pad")
	sealActive(t, db)
	var newer uint32
	for _, id := range sealedIDs(db) {
		if !slices.Contains(older, id) {
			newer = id
		}
	}
	clock = clock.Add(2 * time.Second) // c has expired
	set("f", "new-f")
	want := map[string]string{"a": "new-a", "e": "old-e", "x": "old-x", "e2": "new-e2", "f": "new-f"}
	if got := contents(t, db); !maps.Equal(got, want) {
		t.Fatalf("before the merge: %q, want %q", got, want)
	}

	ms, err := db.merge(context.Background(), false, []uint32{newer})
	if err != nil {
		t.Fatal(err)
	}
	// b, c (expired) and d (set, then deleted) have older records in the
	// first files. pad has none, but the first files are older than its
	// tombstone, which is all the merge knows of them without reading them.
	if ms.InputFiles != 1 || ms.Tombstones != 4 {
		t.Fatalf("merge of file %d: %+v, want 1 input and 4 tombstones carried", newer, ms)
	}
	if ids := sealedIDs(db); slices.Contains(ids, newer) || !slices.Contains(ids, older[0]) {
		t.Fatalf("after merging file %d alone the sealed files are %v (the older ones were %v)", newer, ids, older)
	}
	if got := contents(t, db); !maps.Equal(got, want) {
		t.Fatalf("after the merge: %q, want %q", got, want)
	}
	if due, only := db.mergePlan(); due {
		t.Fatalf("a merge is due again right after the partial merge (files %v): %+v", only, db.Stats().Files)
	}
	var tomb int64
	for _, f := range db.Stats().Files {
		tomb += f.TombstoneBytes
	}
	if want := int64(4*record.HeaderSize) + int64(len("b")+len("c")+len("d")+len("pad")); tomb < want {
		t.Fatalf("after the partial merge the files hold %d tombstone bytes, want at least the %d carried", tomb, want)
	}
	for _, dropHints := range []bool{false, true} {
		db.Close()
		if dropHints {
			names, _ := filepath.Glob(filepath.Join(dir, "*.hint"))
			for _, n := range names {
				os.Remove(n)
			}
		}
		db = openTest(t, dir, opts)
		if got := contents(t, db); !maps.Equal(got, want) {
			t.Fatalf("reopened (hint files dropped: %v): %q, want %q", dropHints, got, want)
		}
		if due, only := db.mergePlan(); due {
			t.Fatalf("reopened (hint files dropped: %v): a merge is due (files %v): %+v", dropHints, only, db.Stats().Files)
		}
	}

	// Merging the oldest files alone needs no tombstone: every record
	// in them has a newer one, or a tombstone, in a file left out.
	ms, err = db.merge(context.Background(), false, older)
	if err != nil {
		t.Fatal(err)
	}
	if ms.Tombstones != 0 {
		t.Fatalf("merge of the oldest files: %+v, want no tombstone carried", ms)
	}
	db.Close()
	db = openTest(t, dir, opts)
	if got := contents(t, db); !maps.Equal(got, want) {
		t.Fatalf("after merging the oldest files and reopening: %q, want %q", got, want)
	}
	// A full merge drops every tombstone.
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range db.Stats().Files {
		if f.DeadBytes != 0 {
			t.Fatalf("after a full merge file %d holds %d dead bytes", f.ID, f.DeadBytes)
		}
	}
	if got := contents(t, db); !maps.Equal(got, want) {
		t.Fatalf("after a full merge: %q, want %q", got, want)
	}
}

// TestMergeKeepsOldValueOfUnsyncedWrite checks a merge under the policies
// that acknowledge writes before they are synced: it drops the records
// that newer, acknowledged but unsynced writes replaced or deleted, so it
// must make those writes durable first, or a crash afterwards loses the
// key's new value and its old one both. Merge seals (and so syncs) an
// active file that holds a tombstone, but not one that holds only new
// values, and the automatic merges never seal it.
func TestMergeKeepsOldValueOfUnsyncedWrite(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncEverySec, SyncNone} {
		for _, auto := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/auto=%v", policy, auto), func(t *testing.T) {
				mem := vfs.NewMem()
				opts := func(fs vfs.FS) *Options {
					return &Options{FS: fs, Sync: policy, SyncInterval: time.Hour, ExpiryPeriod: -1, MergeInterval: -1}
				}
				db := openTest(t, "/db", opts(mem))
				for _, k := range []string{"k", "gone"} {
					if err := db.Set([]byte(k), []byte("old")); err != nil {
						t.Fatal(err)
					}
				}
				if err := db.Close(); err != nil { // seals the file: "old" is durable
					t.Fatal(err)
				}
				db = openTest(t, "/db", opts(mem))
				if err := db.Set([]byte("k"), []byte("new")); err != nil {
					t.Fatal(err)
				}
				if auto {
					if err := db.Delete([]byte("gone")); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := db.merge(context.Background(), !auto, nil); err != nil {
					t.Fatal(err)
				}
				after := openTest(t, "/db", opts(mem.Crash(vfs.CrashOptions{})))
				// Either the writes survived or they did not.
				v, err := after.Get([]byte("k"))
				if err != nil {
					t.Fatalf("k after merge and crash: %v", err)
				}
				_, gerr := after.Get([]byte("gone"))
				if auto && string(v) == "new" && !errors.Is(gerr, ErrNotFound) || string(v) == "old" && gerr != nil {
					t.Fatalf("k = %q and gone: %v after merge and crash", v, gerr)
				}
			})
		}
	}
}

// A partial merge of a file that a salvaging open found damaged (and so
// left without a hint file) reads the file's tombstones as the salvage
// does, skipping the damage, instead of failing every time it runs.
func TestPartialMergeOfSalvagedFile(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1}
	db := openTest(t, dir, opts)
	for i := range 50 {
		if err := db.Set(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte("v"), 100)); err != nil {
			t.Fatal(err)
		}
	}
	sealActive(t, db)
	damaged := sealedIDs(db)[0]
	for i := range 50 {
		if err := db.Delete(fmt.Appendf(nil, "k%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	data := filepath.Join(dir, segment.DataName(damaged))
	os.Remove(filepath.Join(dir, segment.HintName(damaged)))
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(data, b, 0o644); err != nil {
		t.Fatal(err)
	}
	opts.Salvage = true
	db = openTest(t, dir, opts)
	if _, err := db.merge(context.Background(), false, []uint32{damaged}); err != nil {
		t.Fatalf("merge of the salvaged file %d: %v", damaged, err)
	}
	if got := contents(t, db); len(got) != 0 {
		t.Fatalf("after the merge: %q, want nothing", got)
	}
}

// TestPartialMergeOfFileWithDamagedHint checks that a partial merge of a
// file whose hint file is damaged reads the file's records, tombstones
// included, from the data file, and says so in the log: a tombstone it
// missed would let the merge drop a delete and bring back the older value
// in a file it leaves alone.
func TestPartialMergeOfFileWithDamagedHint(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	opts := &Options{Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1,
		Logger: slog.New(slog.NewTextHandler(&log, nil))}
	db := openTest(t, dir, opts)
	for _, k := range []string{"a", "b"} {
		if err := db.Set([]byte(k), []byte("old-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	sealActive(t, db)
	older := sealedIDs(db)
	if err := db.Delete([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("a"), []byte("new-a")); err != nil {
		t.Fatal(err)
	}
	sealActive(t, db)
	var newer uint32
	for _, id := range sealedIDs(db) {
		if !slices.Contains(older, id) {
			newer = id
		}
	}
	// Sealing wrote the file's hint file (sealFor); damage it.
	hint := filepath.Join(dir, segment.HintName(newer))
	if err := os.WriteFile(hint, []byte("not a hint file"), 0o600); err != nil {
		t.Fatal(err)
	}
	ms, err := db.merge(context.Background(), false, []uint32{newer})
	if err != nil {
		t.Fatal(err)
	}
	if ms.Tombstones != 1 {
		t.Fatalf("merge of file %d with a damaged hint file: %+v, want b's tombstone carried", newer, ms)
	}
	if !strings.Contains(log.String(), "merge ignoring hint file") {
		t.Fatalf("the log does not mention the damaged hint file:\n%s", log.String())
	}
	db.Close()
	db = openTest(t, dir, opts)
	want := map[string]string{"a": "new-a"}
	if got := contents(t, db); !maps.Equal(got, want) {
		t.Fatalf("after the merge and a reopen: %q, want %q", got, want)
	}
}
