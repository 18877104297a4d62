package caskade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

// testClock is a settable clock for TTL tests.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func openTest(t *testing.T, dir string, o *Options) *DB {
	t.Helper()
	db, err := Open(dir, o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func memOpts(fs vfs.FS) *Options {
	return &Options{FS: fs, ExpiryPeriod: -1}
}

func mustGet(t *testing.T, db interface{ Get([]byte) ([]byte, error) }, key, want string) {
	t.Helper()
	got, err := db.Get([]byte(key))
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	if string(got) != want {
		t.Fatalf("get %q = %q, want %q", key, got, want)
	}
}

func mustMiss(t *testing.T, db interface{ Get([]byte) ([]byte, error) }, key string) {
	t.Helper()
	if v, err := db.Get([]byte(key)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get %q = %q, %v; want ErrNotFound", key, v, err)
	}
}

func TestSetGetDeleteReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("b"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("a"), []byte("3")); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte(""), []byte("empty key")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "a", "3")
	mustMiss(t, db, "b")
	mustGet(t, db, "", "empty key")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	if err := db.Set([]byte("a"), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("set after close: %v", err)
	}
	// Every read of a closed database says so, rather than answering
	// from what is left in memory: not found, or keys without values.
	for _, k := range []string{"a", "b", "absent"} {
		if _, err := db.Get([]byte(k)); !errors.Is(err, ErrClosed) {
			t.Fatalf("get %q after close: %v", k, err)
		}
	}
	if _, err := db.NewIterator(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewIterator after close: %v", err)
	}
	if _, err := db.Range(nil, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Range after close: %v", err)
	}
	if _, err := db.RangeSelect(FirstGreaterOrEqual(nil), FirstGreaterOrEqual([]byte("z")), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("RangeSelect after close: %v", err)
	}
	if _, err := db.GetKey(FirstGreaterOrEqual(nil)); !errors.Is(err, ErrClosed) {
		t.Fatalf("GetKey after close: %v", err)
	}
	for _, s := range []*Snapshot{db.Snapshot(), db.SnapshotForChecks()} {
		if _, err := s.Get([]byte("a")); !errors.Is(err, ErrClosed) {
			t.Fatalf("snapshot Get after close: %v", err)
		}
	}
	if _, err := db.Begin(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Begin after close: %v", err)
	}

	db = openTest(t, dir, nil)
	mustGet(t, db, "a", "3")
	mustMiss(t, db, "b")
	mustGet(t, db, "", "empty key")
	st := db.Stats()
	if st.Keys != 2 || st.Recovery.Files != 1 || st.Recovery.FromHints != 1 {
		t.Fatalf("stats after reopen: %+v", st)
	}
}

func TestLimits(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{MaxKeySize: 4, MaxValueSize: 8, MaxBatchSize: 100})
	if err := db.Set([]byte("12345"), nil); !errors.Is(err, ErrKeyTooLarge) {
		t.Fatalf("key: %v", err)
	}
	if err := db.Set([]byte("k"), make([]byte, 9)); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("value: %v", err)
	}
	var b Batch
	for i := range 5 {
		b.Set(fmt.Appendf(nil, "k%d", i), []byte("12345678"))
	}
	if err := db.Write(&b); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("batch: %v", err)
	}
	mustMiss(t, db, "k0")
	if err := db.Set([]byte("1234"), []byte("12345678")); err != nil {
		t.Fatalf("at the limits: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []Options{
		{Sync: 7},
		{SyncInterval: -1},
		{MaxKeySize: -1},
		{MaxKeySize: 2 << 20}, // longer than the key directory holds
		{MaxFileSize: -5},
		{RecoveryWorkers: -1},
	}
	for _, o := range bad {
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
		if _, err := Open(t.TempDir(), &o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("open with %+v: %v", o, err)
		}
	}
	for _, s := range []string{"always", "everysec", "none"} {
		p, err := ParseSyncPolicy(s)
		if err != nil || p.String() != s {
			t.Errorf("%s: %v %v", s, p, err)
		}
	}
	if _, err := ParseSyncPolicy("sometimes"); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("bad policy: %v", err)
	}
}

func TestBatchAtomicAndOwned(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	db.Set([]byte("gone"), []byte("x"))
	var b Batch
	key := []byte("k1")
	b.Set(key, []byte("v1"))
	key[1] = '2' // the batch copied the key
	b.Set(key, []byte("v2"))
	b.Delete([]byte("gone"))
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "k1", "v1")
	mustGet(t, db, "k2", "v2")
	mustMiss(t, db, "gone")
	b.Reset()
	if b.Len() != 0 {
		t.Fatal("reset batch not empty")
	}
	b.SetWithTTL([]byte("x"), []byte("y"), 0)
	if err := db.Write(&b); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("zero ttl: %v", err)
	}
}

func TestDeleteRange(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	for _, k := range []string{"a", "b", "ba", "bb", "c", "d"} {
		db.Set([]byte(k), []byte(k))
	}
	if err := db.DeleteRange([]byte("b"), []byte("c")); err != nil {
		t.Fatal(err)
	}
	kvs, err := db.Range(nil, nil, &RangeOptions{KeysOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range kvs {
		got = append(got, string(kv.Key))
	}
	if fmt.Sprint(got) != "[a c d]" {
		t.Fatalf("after delete range: %v", got)
	}
	if err := db.DeleteRange([]byte("z"), []byte("a")); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("inverted: %v", err)
	}
	if err := db.DeleteRange([]byte("c"), nil); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, db, "d")
	mustGet(t, db, "a", "a")
}

// The empty range [k, k) of a batch holds no key, also when k is empty:
// a fresh batch once turned an empty (not nil) end into nil, the end of
// the key space, so DeleteRange("", "") deleted every key and
// CheckRange("", "") checked every key.
func TestBatchEmptyRangeEnd(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	mustSet(t, db, "v", "a", "b")
	var b Batch
	b.DeleteRange([]byte{}, []byte{})
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "a", "v")
	mustGet(t, db, "b", "v")

	snap := db.SnapshotForChecks()
	defer snap.Close()
	mustSet(t, db, "changed", "a")
	var c Batch
	c.CheckRange([]byte{}, []byte{}, snap)
	c.Set([]byte("c"), []byte("v"))
	if err := db.Write(&c); err != nil {
		t.Fatalf("a check of an empty range failed: %v", err)
	}
}

func TestTTL(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	o := &Options{Now: clk.Now, ExpiryPeriod: -1}
	db := openTest(t, dir, o)
	if err := db.SetWithTTL([]byte("t"), []byte("v"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := db.SetWithTTL([]byte("t"), []byte("v"), -time.Second); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("negative ttl: %v", err)
	}
	db.Set([]byte("p"), []byte("forever"))
	info, err := db.Stat([]byte("t"))
	if err != nil || info.TTL(clk.Now()) != 10*time.Second {
		t.Fatalf("stat: %+v %v", info, err)
	}
	if info, _ := db.Stat([]byte("p")); info.TTL(clk.Now()) != -1 {
		t.Fatalf("persistent ttl %v", info.TTL(clk.Now()))
	}
	snap := db.Snapshot()
	defer snap.Close()
	clk.Advance(10 * time.Second)
	mustMiss(t, db, "t")
	mustGet(t, snap, "t", "v") // the snapshot judges expiry when it was taken
	if ok, err := db.Expire([]byte("t"), time.Second); ok || err != nil {
		t.Fatalf("expire of expired key: %v %v", ok, err)
	}
	if ok, err := db.Expire([]byte("p"), 5*time.Second); !ok || err != nil {
		t.Fatalf("expire: %v %v", ok, err)
	}
	mustGet(t, db, "p", "forever")
	if ok, err := db.Persist([]byte("p")); !ok || err != nil {
		t.Fatalf("persist: %v %v", ok, err)
	}
	clk.Advance(time.Minute)
	mustGet(t, db, "p", "forever")
	db.Expire([]byte("p"), 5*time.Second)
	db.Close()

	// Expiry survives a reopen, and an expired record stays dead.
	db = openTest(t, dir, o)
	mustGet(t, db, "p", "forever")
	mustMiss(t, db, "t")
	clk.Advance(5 * time.Second)
	mustMiss(t, db, "p")
	if ok, _ := db.Expire([]byte("p"), time.Second); ok {
		t.Fatal("expired key reported as existing")
	}
	if ok, _ := db.ExpireAt([]byte("nope"), clk.Now().Add(time.Hour)); ok {
		t.Fatal("missing key reported as existing")
	}
	db.Set([]byte("n"), []byte("x"))
	if ok, _ := db.Expire([]byte("n"), 0); !ok {
		t.Fatal("expire 0 of live key")
	}
	mustMiss(t, db, "n")
}

func TestActiveExpiry(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1})
	for i := range 100 {
		db.SetWithTTL(fmt.Appendf(nil, "k%03d", i), []byte("v"), time.Second)
	}
	db.Set([]byte("stay"), []byte("v"))
	clk.Advance(2 * time.Second)
	for range 50 {
		if n, _ := db.expireSample(); n == 0 {
			break
		}
	}
	st := db.Stats()
	if st.Keys != 1 || st.ExpiringKeys != 0 {
		t.Fatalf("after active expiry: keys %d expiring %d", st.Keys, st.ExpiringKeys)
	}
	mustGet(t, db, "stay", "v")
}

func TestSnapshotIsolation(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	db.Set([]byte("a"), []byte("1"))
	s := db.Snapshot()
	db.Set([]byte("a"), []byte("2"))
	db.Set([]byte("b"), []byte("2"))
	mustGet(t, s, "a", "1")
	mustMiss(t, s, "b")
	if s.Version() >= db.Version() {
		t.Fatalf("snapshot version %d, db %d", s.Version(), db.Version())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte("a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("get on closed snapshot: %v", err)
	}
	if n := db.Stats().OpenSnapshots; n != 0 {
		t.Fatalf("open snapshots %d", n)
	}
}

func TestIteratorAndRange(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	keys := []string{"a", "b", "ba", "bz", "c"}
	for _, k := range keys {
		db.Set([]byte(k), []byte("v"+k))
	}
	it, err := db.NewIterator(&IterOptions{Prefix: []byte("b")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	if fmt.Sprint(got) != "[b=vb ba=vba bz=vbz]" {
		t.Fatalf("prefix: %v", got)
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
	}
	if fmt.Sprint(got) != "[bz ba b]" {
		t.Fatalf("prefix reverse: %v", got)
	}
	if !it.Seek([]byte("bb")) || string(it.Key()) != "bz" {
		t.Fatalf("seek bb: %q", it.Key())
	}
	if !it.SeekLT([]byte("bb")) || string(it.Key()) != "ba" {
		t.Fatalf("seeklt bb: %q", it.Key())
	}
	if it.Seek([]byte("c")) {
		t.Fatalf("seek past bound found %q", it.Key())
	}
	if err := it.Close(); err != nil || it.Close() == nil {
		t.Fatal("close")
	}
	kvs, _ := db.Range([]byte("b"), []byte("c"), &RangeOptions{Limit: 2, Reverse: true})
	if len(kvs) != 2 || string(kvs[0].Key) != "bz" || string(kvs[1].Key) != "ba" || string(kvs[0].Value) != "vbz" {
		t.Fatalf("reverse limit: %v", kvs)
	}
	if PrefixEnd([]byte{0xff, 0xff}) != nil || string(PrefixEnd([]byte("a\xff"))) != "b" {
		t.Fatal("PrefixEnd")
	}
}

// The key selector cases of the clj-foundationdb test suite.
func TestKeySelectors(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	for _, k := range []string{"bar", "bar1", "bar2", "car", "car1", "foo"} {
		db.Set([]byte(k), []byte("v"))
	}
	cases := []struct {
		sel  KeySelector
		want string // "\xff\xff" for the end clamp
	}{
		{FirstGreaterOrEqual([]byte("bar")), "bar"},
		{FirstGreaterThan([]byte("bar")), "bar1"},
		{LastLessThan([]byte("bar1")), "bar"},
		{LastLessOrEqual([]byte("bar1")), "bar1"},
		{FirstGreaterOrEqual([]byte("bar0")), "bar1"},
		{LastLessOrEqual([]byte("bar0")), "bar"},
		{FirstGreaterOrEqual([]byte("bar")).Add(2), "bar2"},
		{FirstGreaterThan([]byte("car")).Add(-2), "bar2"},
		{LastLessThan([]byte("bar")), ""},
		{LastLessThan([]byte("a")).Add(-3), ""},
		{FirstGreaterThan([]byte("foo")), "\xff\xff"},
		{FirstGreaterOrEqual([]byte("zzz")), "\xff\xff"},
		{FirstGreaterOrEqual([]byte("")).Add(10), "\xff\xff"},
		{LastLessOrEqual([]byte("zzz")), "foo"},
		{KeySelector{Key: []byte("car"), Offset: 0}, "bar2"},
	}
	for _, c := range cases {
		got, err := db.GetKey(c.sel)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil || string(got) != c.want {
			t.Errorf("%v = %q, want %q", c.sel, got, c.want)
		}
	}
	kvs, err := db.RangeSelect(FirstGreaterThan([]byte("bar")), FirstGreaterOrEqual([]byte("car1")), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range kvs {
		got = append(got, string(kv.Key))
	}
	if fmt.Sprint(got) != "[bar1 bar2 car]" {
		t.Fatalf("range select: %v", got)
	}
	if kvs, _ := db.RangeSelect(FirstGreaterOrEqual([]byte("foo")), FirstGreaterOrEqual([]byte("bar")), nil); len(kvs) != 0 {
		t.Fatalf("inverted selectors returned %v", kvs)
	}
	kvs, _ = db.RangeSelect(LastLessThan([]byte("a")), FirstGreaterThan([]byte("zzz")), &RangeOptions{KeysOnly: true})
	if len(kvs) != 6 || kvs[0].Value != nil {
		t.Fatalf("clamped full range: %v", kvs)
	}
}

func TestGroupCommitConcurrent(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				if err := db.Set(fmt.Appendf(nil, "g%02d-%03d", g, i), bytes.Repeat([]byte{byte(g)}, 10)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := db.Stats().Keys; n != 800 {
		t.Fatalf("keys %d", n)
	}
	mustGet(t, db, "g07-049", string(bytes.Repeat([]byte{7}, 10)))
}

func TestRotationAndStats(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{MaxFileSize: 4096, Sync: SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte("x"), 100)
	for i := range 200 {
		if err := db.Set(fmt.Appendf(nil, "k%03d", i%50), val); err != nil {
			t.Fatal(err)
		}
	}
	st := db.Stats()
	if len(st.Files) < 5 || st.Keys != 50 {
		t.Fatalf("files %d keys %d", len(st.Files), st.Keys)
	}
	wantLive := int64(50 * (record.HeaderSize + 4 + 100))
	if st.LiveBytes != wantLive || st.DeadBytes != 150*(record.HeaderSize+4+100) {
		t.Fatalf("live %d (want %d) dead %d", st.LiveBytes, wantLive, st.DeadBytes)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, nil)
	st2 := db.Stats()
	if st2.LiveBytes != wantLive || st2.Keys != 50 || st2.Recovery.FromHints != st2.Recovery.Files {
		t.Fatalf("after reopen: %+v", st2)
	}
	for i := range 50 {
		mustGet(t, db, fmt.Sprintf("k%03d", i), string(val))
	}
}

// Reads racing with Close get a value or an error, never a crash: files
// (and their memory mappings) close only when the last read releases them.
func TestGetDuringClose(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{Sync: SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		db.Set(fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte("v"), 1000))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			<-start
			for i := 0; ; i++ {
				v, err := db.Get(fmt.Appendf(nil, "k%d", (i+g)%100))
				if err != nil {
					if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrNotFound) {
						t.Errorf("get during close: %v", err)
					}
					return
				}
				if len(v) != 1000 {
					t.Errorf("short value %d", len(v))
					return
				}
			}
		})
	}
	close(start)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

func TestCheckConflict(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	var b Batch
	b.Check([]byte("k"), 0) // absent
	b.Set([]byte("k"), []byte("1"))
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(&b); !errors.Is(err, ErrConflict) {
		t.Fatalf("second create-if-absent: %v", err)
	}
	info, _ := db.Stat([]byte("k"))
	b.Reset()
	b.Check([]byte("k"), info.Version)
	b.Set([]byte("k"), []byte("2"))
	b.Set([]byte("other"), []byte("x"))
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(&b); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale version: %v", err)
	}
	mustGet(t, db, "k", "2")
	db.Delete([]byte("other"))
	b.Reset()
	b.Check([]byte("k"), info.Version) // stale: nothing of the batch applies
	b.Set([]byte("other"), []byte("y"))
	if err := db.Write(&b); !errors.Is(err, ErrConflict) {
		t.Fatal(err)
	}
	mustMiss(t, db, "other")
}

// Concurrent read-modify-write increments through Check lose nothing.
func TestCheckIncrements(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{Sync: SyncNone})
	const workers, each = 8, 100
	var wg sync.WaitGroup
	var conflicts atomic.Int64
	for range workers {
		wg.Go(func() {
			for range each {
				for {
					var n int
					var ver uint64
					if v, info, err := db.Lookup([]byte("ctr")); err == nil {
						n, _ = strconv.Atoi(string(v))
						ver = info.Version
					}
					var b Batch
					b.Check([]byte("ctr"), ver)
					b.Set([]byte("ctr"), strconv.AppendInt(nil, int64(n+1), 10))
					err := db.Write(&b)
					if err == nil {
						break
					}
					if !errors.Is(err, ErrConflict) {
						t.Error(err)
						return
					}
					conflicts.Add(1)
				}
			}
		})
	}
	wg.Wait()
	mustGet(t, db, "ctr", strconv.Itoa(workers*each))
	t.Logf("%d conflicts retried", conflicts.Load())
}

func TestSubscribe(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1})
	var mu sync.Mutex
	var seen []string
	cancel := db.Subscribe(func(keys [][]byte) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			seen = append(seen, string(k))
		}
	})
	db.Set([]byte("a"), []byte("1"))
	var b Batch
	b.Set([]byte("b"), []byte("2"))
	b.Delete([]byte("a"))
	db.Write(&b)
	db.SetWithTTL([]byte("t"), []byte("x"), time.Second)
	clk.Advance(2 * time.Second)
	db.expireSample()
	cancel()
	db.Set([]byte("after"), []byte("cancel"))
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != "[a b a t t]" {
		t.Fatalf("notified of %v", seen)
	}
}

// TestSubscribeExpiredOnRead: while someone subscribes, a read that finds
// a key expired has it dropped, and subscribers hear of it, as active
// expiry (off here) would tell them. Without subscribers, such a read
// allocates nothing.
func TestSubscribeExpiredOnRead(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1})
	for _, k := range []string{"g", "s", "n"} {
		if err := db.SetWithTTL([]byte(k), []byte("x"), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Second)
	if n := testing.AllocsPerRun(100, func() { db.Stat([]byte("s")) }); n != 0 {
		t.Fatalf("Stat of an expired key without subscribers: %v allocations", n)
	}
	got := make(chan string, 10)
	cancel := db.Subscribe(func(keys [][]byte) {
		for _, k := range keys {
			got <- string(k)
		}
	})
	defer cancel()
	expect := func(want string) {
		t.Helper()
		select {
		case k := <-got:
			if k != want {
				t.Fatalf("notified of %q, want %q", k, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no notification of %q", want)
		}
	}
	if _, err := db.Get([]byte("g")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of an expired key: %v", err)
	}
	expect("g")
	snap := db.Snapshot()
	if _, err := snap.Get([]byte("s")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("snapshot Get of an expired key: %v", err)
	}
	snap.Close()
	expect("s")
	if ok, err := db.Has([]byte("n")); ok || err != nil {
		t.Fatalf("Has of an expired key: %v, %v", ok, err)
	}
	expect("n")
	// A range read (an iterator) that skips expired keys has them
	// dropped too, as Redis's SCAN does.
	for _, k := range []string{"r1", "r2"} {
		if err := db.SetWithTTL([]byte(k), []byte("x"), time.Second); err != nil {
			t.Fatal(err)
		}
		expect(k)
	}
	clk.Advance(2 * time.Second)
	if kvs, err := db.Range([]byte("r"), []byte("s"), nil); err != nil || len(kvs) != 0 {
		t.Fatalf("range over expired keys: %q, %v", kvs, err)
	}
	seen := map[string]bool{}
	for range 2 {
		select {
		case k := <-got:
			seen[k] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("notified of %v, want r1 and r2", seen)
		}
	}
	if !seen["r1"] || !seen["r2"] {
		t.Fatalf("notified of %v, want r1 and r2", seen)
	}
	if st := db.Stats(); st.Keys != 0 {
		t.Fatalf("%d keys left", st.Keys)
	}
}

// TestSubscribeExpiry: SubscribeExpiry tells the keys a commit changed
// from those it only dropped because they had expired.
func TestSubscribeExpiry(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1})
	var got []string
	cancel := db.SubscribeExpiry(func(changed, expired [][]byte) {
		for _, k := range changed {
			got = append(got, "changed:"+string(k))
		}
		for _, k := range expired {
			got = append(got, "expired:"+string(k))
		}
	})
	defer cancel()
	db.SetWithTTL([]byte("t"), []byte("x"), time.Second)
	db.SetWithTTL([]byte("u"), []byte("x"), time.Second)
	clk.Advance(2 * time.Second)
	db.expireSample() // drops both
	db.SetWithTTL([]byte("d"), []byte("x"), time.Second)
	clk.Advance(2 * time.Second)
	var b Batch
	b.Delete([]byte("d")) // expired, still in the directory
	b.Set([]byte("s"), []byte("1"))
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	sort.Strings(got[2:4]) // active expiry's order is the map's
	if fmt.Sprint(got) != "[changed:t changed:u expired:t expired:u changed:d changed:s expired:d]" {
		t.Fatalf("notified of %v", got)
	}
}

func TestFlags(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, &Options{MaxFileSize: 1 << 10})
	if err := db.SetEntry([]byte("f"), []byte("value"), SetOptions{Flags: 0xcafe}); err != nil {
		t.Fatal(err)
	}
	v, info, err := db.Lookup([]byte("f"))
	if err != nil || string(v) != "value" || info.Flags != 0xcafe {
		t.Fatalf("lookup %q %+v %v", v, info, err)
	}
	// An expiry change and an atomic op keep the flags; a plain Set clears them.
	db.Expire([]byte("f"), time.Hour)
	if _, info, _ := db.Lookup([]byte("f")); info.Flags != 0xcafe {
		t.Fatalf("flags after expire: %x", info.Flags)
	}
	var b Batch
	b.SetEntry([]byte("g"), []byte("x"), SetOptions{Flags: 7})
	db.Write(&b)
	for i := range 30 { // rotate files so that merge has work
		db.Set(fmt.Appendf(nil, "pad%d", i), bytes.Repeat([]byte("p"), 100))
	}
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	it, _ := db.NewIterator(&IterOptions{Prefix: []byte("g")})
	if !it.First() || it.Value() == nil || it.Info().Flags != 7 {
		t.Fatalf("iterator flags after merge: %+v", it.Info())
	}
	it.Close()
	db.Set([]byte("f"), []byte("plain"))
	if _, info, _ := db.Lookup([]byte("f")); info.Flags != 0 {
		t.Fatalf("flags after a plain set: %x", info.Flags)
	}
}

// Opening with several workers splits the key space and merges the parts
// in parallel: the result must equal a one-worker open.
func TestParallelRecovery(t *testing.T) {
	dir := t.TempDir()
	clk := newTestClock()
	db, err := Open(dir, &Options{Sync: SyncNone, MaxFileSize: 1 << 20, Now: clk.Now, ExpiryPeriod: -1, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	for round := range 3 {
		for i := range 40000 {
			k := fmt.Appendf(nil, "%08x", uint32(i)*2654435761)
			switch {
			case round == 2 && i%5 == 0:
				b.Delete(k)
			case round == 1 && i%7 == 0:
				b.SetWithExpiry(k, []byte("ttl"), clk.Now().Add(time.Hour))
			default:
				b.Set(k, fmt.Appendf(nil, "r%d-%d", round, i))
			}
			if b.Len() == 1000 {
				db.Write(&b)
				b.Reset()
			}
		}
	}
	db.Write(&b)
	db.Close()
	var ref map[string]string
	var refStats Stats
	for _, workers := range []int{1, 4} {
		db := openTest(t, dir, &Options{RecoveryWorkers: workers, Now: clk.Now, ExpiryPeriod: -1, MergeInterval: -1, ReadOnly: true})
		got := contents(t, db)
		st := db.Stats()
		if ref == nil {
			ref, refStats = got, st
			if len(got) != 32000 {
				t.Fatalf("%d keys", len(got))
			}
		} else {
			if !maps.Equal(got, ref) {
				t.Fatalf("%d workers: %d keys differ from one worker's %d", workers, len(got), len(ref))
			}
			if st.LiveBytes != refStats.LiveBytes || st.ExpiringKeys != refStats.ExpiringKeys || st.Keys != refStats.Keys {
				t.Fatalf("%d workers: stats %+v, one worker %+v", workers, st, refStats)
			}
		}
		db.Close()
	}
}

// removeHints deletes every hint file in dir, so that the next open scans
// every data file, and returns how many data files there are.
func removeHints(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := 0
	for _, e := range ents {
		switch _, kind := segment.Parse(e.Name()); kind {
		case segment.KindHint:
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		case segment.KindData:
			data++
		}
	}
	return data
}

// Recovery scans data files without hint files one after another through
// one buffer per worker. Keys and values of files scanned earlier must
// survive the reads of later files into the same buffer: the key directory
// and the hint files written from the scans hold no byte of it.
func TestRecoveryScanReusesBuffer(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, &Options{Sync: SyncNone, MaxFileSize: 8 << 10, ExpiryPeriod: -1, MergeInterval: -1})
	want := map[string]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		// Later writes overwrite or delete keys written to earlier files,
		// and values vary in length, so files differ in size.
		k := fmt.Sprintf("key%05d", rng.IntN(2000))
		if i%11 == 0 {
			if err := db.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
			delete(want, k)
			continue
		}
		v := fmt.Sprintf("%s=%d:%s", k, i, strings.Repeat("v", rng.IntN(200)))
		if err := db.Set([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	db.Close()
	for _, workers := range []int{1, 2} {
		for _, scan := range []bool{true, false} {
			if scan {
				if n := removeHints(t, dir); n < 20 {
					t.Fatalf("%d data files; the test needs many", n)
				}
			}
			db := openTest(t, dir, &Options{RecoveryWorkers: workers, ExpiryPeriod: -1, MergeInterval: -1})
			if got := db.Stats().Recovery; scan && got.FromHints != 0 {
				t.Fatalf("%d files read from hints, want every file scanned", got.FromHints)
			}
			got := contents(t, db)
			if !maps.Equal(got, want) {
				t.Fatalf("workers=%d scan=%v: %d keys, want %d, or values differ", workers, scan, len(got), len(want))
			}
			for k, v := range want {
				mustGet(t, db, k, v)
			}
			db.Close()
		}
	}
}

func TestBatchExpireAndSnapshotLookup(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1})
	db.SetEntry([]byte("a"), []byte("1"), SetOptions{Flags: 3})
	db.SetWithTTL([]byte("b"), []byte("2"), time.Minute)
	var b Batch
	b.ExpireAt([]byte("a"), clk.Now().Add(time.Hour))
	b.ExpireAt([]byte("b"), time.Time{}) // persist
	b.ExpireAt([]byte("missing"), clk.Now().Add(time.Hour))
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	s := db.Snapshot()
	defer s.Close()
	v, info, err := s.Lookup([]byte("a"))
	if err != nil || string(v) != "1" || info.Flags != 3 || info.TTL(clk.Now()) != time.Hour {
		t.Fatalf("a: %q %+v %v", v, info, err)
	}
	if _, info, _ := s.Lookup([]byte("b")); !info.ExpiresAt.IsZero() {
		t.Fatalf("b still expires: %+v", info)
	}
	mustMiss(t, db, "missing")
}

// Reads of absent keys that share a present key's length and search hint
// (the key directory then names the present key's record as a candidate)
// report them absent, through DB, Snapshot and Tx.
func TestGetAbsentCandidate(t *testing.T) {
	db := openTest(t, "db", memOpts(vfs.NewMem()))
	db.Set([]byte("only-key-1"), []byte("v"))
	for i := 0; i < 2000; i += 2 {
		db.Set(fmt.Appendf(nil, "k%05d", i), []byte("v"))
	}
	absent := []string{"only-key-2", "only-key-0", "k00001", "k01999", "k00777"}
	snap := db.Snapshot()
	defer snap.Close()
	tx, _ := db.Begin()
	defer tx.Rollback()
	for _, k := range absent {
		if _, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Errorf("DB.Get(%q): %v", k, err)
		}
		if _, err := snap.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Errorf("Snapshot.Get(%q): %v", k, err)
		}
		if _, err := tx.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Errorf("Tx.Get(%q): %v", k, err)
		}
	}
	mustGet(t, db, "only-key-1", "v")
	mustGet(t, db, "k01998", "v")
}

// Batch.Version is the version every key the batch set has after Write,
// and 0 when the Write failed or changed nothing.
func TestBatchVersion(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	var b Batch
	b.Set([]byte("a"), []byte("1"))
	b.Set([]byte("b"), []byte("2"))
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	v := b.Version()
	for _, k := range []string{"a", "b"} {
		if info, err := db.Stat([]byte(k)); err != nil || info.Version != v || v == 0 {
			t.Fatalf("%s: version %d (%v), batch %d", k, info.Version, err, v)
		}
	}
	b.Reset()
	b.ExpireAt([]byte("a"), time.Now().Add(time.Hour))
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	if info, _ := db.Stat([]byte("a")); b.Version() <= v || info.Version != b.Version() {
		t.Fatalf("expiry change: version %d, batch %d (before %d)", info.Version, b.Version(), v)
	}
	b.Reset()
	b.Check([]byte("a"), v) // no longer a's version
	b.Set([]byte("a"), []byte("x"))
	if err := db.Write(&b); !errors.Is(err, ErrConflict) || b.Version() != 0 {
		t.Fatalf("failed write: %v, version %d", err, b.Version())
	}
	b.Reset()
	b.Delete([]byte("absent"))
	if err := db.Write(&b); err != nil || b.Version() != 0 {
		t.Fatalf("write that changed nothing: %v, version %d", err, b.Version())
	}
	bs := []*Batch{{}, {}}
	bs[0].Set([]byte("c"), []byte("3"))
	bs[1].Check([]byte("c"), 1)
	bs[1].Set([]byte("d"), []byte("4"))
	errs := db.WriteBatches(bs)
	if info, _ := db.Stat([]byte("c")); errs[0] != nil || bs[0].Version() != info.Version || !errors.Is(errs[1], ErrConflict) || bs[1].Version() != 0 {
		t.Fatalf("WriteBatches: %v, versions %d %d (c at %d)", errs, bs[0].Version(), bs[1].Version(), info.Version)
	}
}

// The key an Iterator returns is a copy: a caller that changes it changes
// neither the database nor what the iterator reads next.
func TestIteratorKeyIsACopy(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	for _, k := range []string{"k1", "k2", "k3"} {
		db.Set([]byte(k), []byte("v"+k))
	}
	it, err := db.NewIterator(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		got = append(got, string(k)+"="+string(it.Value()))
		k[0] = 'X'
		if again := it.Key(); string(again) != "X"+string(again[1:]) {
			t.Fatalf("Key changed between calls at one position: %q", again)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[k1=vk1 k2=vk2 k3=vk3]" {
		t.Fatalf("iterated %q", got)
	}
	mustGet(t, db, "k1", "vk1")
	it, _ = db.NewIterator(nil)
	defer it.Close()
	if !it.First() || string(it.Key()) != "k1" {
		t.Fatalf("after the caller changed a key: first key %q", it.Key())
	}
}

// TestActiveExpiryKeepsUp checks that one tick of active expiry forgets
// far more than 16 samples' worth of expired keys when its time budget
// allows: with a fixed 16 rounds of 20 keys per tick, keys expiring faster
// than 3,200 a second piled up in memory without end.
func TestActiveExpiryKeepsUp(t *testing.T) {
	clk := newTestClock()
	// A long period: the ticker never fires during the test, and the
	// budget of one tick (a quarter of it) is not what stops the rounds.
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: time.Hour, Sync: SyncNone})
	const n = 20000
	var b Batch
	for i := range n {
		b.SetWithTTL(fmt.Appendf(nil, "k%05d", i), []byte("v"), time.Second)
		if b.Len() == 1000 {
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	db.Set([]byte("stay"), []byte("v"))
	db.SetWithTTL([]byte("later"), []byte("v"), time.Hour)
	clk.Advance(2 * time.Second)
	db.expireRounds()
	st := db.Stats()
	if st.Keys != 2 || st.ExpiringKeys != 1 {
		t.Fatalf("after one tick of active expiry: keys %d expiring %d, want 2 and 1", st.Keys, st.ExpiringKeys)
	}
	mustGet(t, db, "stay", "v")
	mustGet(t, db, "later", "v")
}

// CountKeys counts as Stats.Keys does, expired keys not yet dropped
// included, so that the total minus some ranges' counts is the rest's.
func TestCountKeys(t *testing.T) {
	clk := newTestClock()
	db := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1})
	mustSet(t, db, "v", "a", "b", "c", "d")
	if err := db.SetWithTTL([]byte("bb"), []byte("v"), time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	for _, c := range []struct {
		begin, end   string
		nilEnd       bool
		keys, expiry int
	}{
		{"", "", true, 5, 1},
		{"b", "c", false, 2, 1}, // b and the expired bb
		{"b", "", true, 4, 1},
		{"c", "c", false, 0, 0},
		{"c", "", true, 2, 0},
		{"e", "", true, 0, 0},
	} {
		var end []byte
		if !c.nilEnd {
			end = []byte(c.end)
		}
		n, x, err := db.CountKeys([]byte(c.begin), end)
		if err != nil || n != c.keys || x != c.expiry {
			t.Errorf("CountKeys(%q, %q): %d, %d, %v; want %d, %d", c.begin, end, n, x, err, c.keys, c.expiry)
		}
	}
	if st := db.Stats(); st.Keys != 5 || st.ExpiringKeys != 1 {
		t.Fatalf("Stats: %d keys, %d expiring; want 5, 1", st.Keys, st.ExpiringKeys)
	}
	db.Close()
	if _, _, err := db.CountKeys(nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("CountKeys of a closed database: %v", err)
	}
}
