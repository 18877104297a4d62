package caskade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// crashWorkload runs a deterministic mix of sets, deletes and batches under
// SyncAlways until the file system dies. It returns the acknowledged state
// and, if an operation failed, the state that operation would have made:
// after a crash the database must hold exactly one of the two.
func crashWorkload(db *DB, seed uint64, ops int) (acked, inDoubt map[string]string) {
	r := rand.New(rand.NewPCG(seed, 2))
	acked = map[string]string{}
	val := func(i int) string {
		// Values of varied sizes, some spanning several 512-byte sectors.
		return fmt.Sprintf("v%d-", i) + string(bytes.Repeat([]byte{byte('a' + i%26)}, r.IntN(1200)))
	}
	for i := range ops {
		next := maps.Clone(acked)
		var err error
		switch n := r.IntN(10); {
		case n < 5:
			k, v := fmt.Sprintf("k%02d", r.IntN(40)), val(i)
			next[k] = v
			err = db.Set([]byte(k), []byte(v))
		case n < 7:
			k := fmt.Sprintf("k%02d", r.IntN(40))
			delete(next, k)
			err = db.Delete([]byte(k))
		case n < 8:
			// A multi-key transaction commits through the same path.
			type w struct {
				k, v string
				del  bool
			}
			var ws []w
			for j := range 2 + r.IntN(4) {
				k := fmt.Sprintf("k%02d", r.IntN(40))
				if r.IntN(4) == 0 {
					ws = append(ws, w{k: k, del: true})
					delete(next, k)
				} else {
					v := val(i*10 + j)
					ws = append(ws, w{k: k, v: v})
					next[k] = v
				}
			}
			err = db.Transact(context.Background(), func(tx *Tx) error {
				for _, x := range ws {
					if x.del {
						tx.Clear([]byte(x.k))
					} else {
						tx.Set([]byte(x.k), []byte(x.v))
					}
				}
				return nil
			})
		default:
			var b Batch
			for j := range 2 + r.IntN(5) {
				k := fmt.Sprintf("k%02d", r.IntN(40))
				if r.IntN(4) == 0 {
					b.Delete([]byte(k))
					delete(next, k)
				} else {
					v := val(i*10 + j)
					b.Set([]byte(k), []byte(v))
					next[k] = v
				}
			}
			err = db.Write(&b)
		}
		if err != nil {
			return acked, next
		}
		acked = next
	}
	return acked, nil
}

// contents reads every pair through an iterator and every key through Get.
func contents(t *testing.T, db *DB) map[string]string {
	t.Helper()
	got := map[string]string{}
	it, err := db.NewIterator(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
		if it.Err() != nil {
			t.Fatalf("iterator: %v", it.Err())
		}
		v, err := db.Get(it.Key())
		if err != nil || !bytes.Equal(v, it.Value()) {
			t.Fatalf("get %q disagrees with the iterator: %v", it.Key(), err)
		}
	}
	return got
}

// TestCrashAtEveryWrite crashes the file system at every k-th mutating
// operation of a workload (writes, syncs, creates, renames), optionally
// tearing unsynced appends, and checks that every acknowledged write
// survives, no batch is half applied and no value is partial.
func TestCrashAtEveryWrite(t *testing.T) {
	seed := testSeed(t)
	const ops = 40
	opts := func(fs vfs.FS) *Options {
		return &Options{FS: fs, ExpiryPeriod: -1, MaxFileSize: 4 << 10}
	}
	// Measure the workload once.
	fs := vfs.NewMem()
	db, err := Open("/db", opts(fs))
	if err != nil {
		t.Fatal(err)
	}
	crashWorkload(db, seed, ops)
	db.Close()
	total := fs.MutatingOps()
	step := 1
	if testing.Short() {
		step = 7
	}
	for k := 0; k < total; k += step {
		for _, tear := range []bool{false, true} {
			fs := vfs.NewMem()
			fs.SetCrashAfter(k)
			db, err := Open("/db", opts(fs))
			var acked, inDoubt map[string]string
			if err == nil {
				acked, inDoubt = crashWorkload(db, seed, ops)
				db.Close()
			} else {
				acked = map[string]string{}
			}
			after := fs.Crash(vfs.CrashOptions{Tear: tear, Rand: rand.New(rand.NewPCG(seed, uint64(k)))})
			db2, err := Open("/db", opts(after))
			if err != nil {
				t.Fatalf("crash at op %d (tear %v): reopen: %v", k, tear, err)
			}
			got := contents(t, db2)
			if !maps.Equal(got, acked) && (inDoubt == nil || !maps.Equal(got, inDoubt)) {
				t.Fatalf("crash at op %d (tear %v): %d keys after recovery; want the %d acknowledged (or %d with the write in doubt)",
					k, tear, len(got), len(acked), len(inDoubt))
			}
			// The recovered database takes writes again.
			if err := db2.Set([]byte("after"), []byte("crash")); err != nil {
				t.Fatalf("crash at op %d: write after recovery: %v", k, err)
			}
			db2.Close()
		}
	}
	t.Logf("crashed at %d points of %d operations", (total+step-1)/step, total)
}

// buildDB writes n keys k000.. with distinct values under SyncAlways into a
// fresh memory FS and closes it, leaving one data file and its hint.
func buildDB(t *testing.T, n int) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMem()
	db, err := Open("/db", &Options{FS: fs, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := db.Set(fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "value-%03d-%s", i, bytes.Repeat([]byte("x"), i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return fs
}

func rewrite(t *testing.T, fs vfs.FS, path string, fn func([]byte) []byte) {
	t.Helper()
	b, err := segment.ReadAll(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	b = fn(b)
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(b, 0)
	f.Sync()
	f.Close()
}

// TestTruncationSweep cuts the newest data file at every byte offset within
// its last records: Open must succeed, keep every record that ends before
// the cut, drop the rest, and report the dropped bytes.
func TestTruncationSweep(t *testing.T) {
	const n = 12
	base := buildDB(t, n)
	data := filepath.Join("/db", segment.DataName(1))
	b, _ := segment.ReadAll(base, data)
	size := len(b)
	// Record i has record.HeaderSize + 4 + len(value) bytes.
	recEnd := make([]int, n)
	off := 16
	for i := range n {
		off += record.HeaderSize + 4 + len(fmt.Sprintf("value-%03d-", i)) + i
		recEnd[i] = off
	}
	if off != size {
		t.Fatalf("layout: computed %d bytes, file has %d", off, size)
	}
	for cut := recEnd[n-5]; cut < size; cut++ {
		fs := base.Crash(vfs.CrashOptions{})
		fs.Remove(filepath.Join("/db", segment.HintName(1)))
		rewrite(t, fs, data, func(b []byte) []byte { return b[:cut] })
		db, err := Open("/db", &Options{FS: fs, ExpiryPeriod: -1})
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		got := contents(t, db)
		for i := range n {
			k := fmt.Sprintf("k%03d", i)
			v, ok := got[k]
			if recEnd[i] <= cut {
				if want := fmt.Sprintf("value-%03d-%s", i, bytes.Repeat([]byte("x"), i)); v != want {
					t.Fatalf("cut at %d: %s = %q, want %q", cut, k, v, want)
				}
			} else if ok {
				t.Fatalf("cut at %d: %s survived a cut inside it", cut, k)
			}
		}
		last := 0
		for _, e := range recEnd {
			if e <= cut {
				last = e
			}
		}
		if st := db.Stats(); st.Recovery.TornBytes != int64(cut-last) {
			t.Fatalf("cut at %d: torn bytes %d, want %d", cut, st.Recovery.TornBytes, cut-last)
		}
		db.Close()
	}
}

// TestTruncatedSealedFile cuts a data file that has a hint file, as a
// truncated copy or a damaged file system can: a sealed file was synced
// at the size its hint file records, so records missing from its end were
// lost, not torn. Open must refuse it, naming the file, rather than cut
// it as the torn tail of the newest file (and lose a delete silently);
// Salvage opens it with what is left.
func TestTruncatedSealedFile(t *testing.T) {
	const n = 12
	base := buildDB(t, n)
	data := filepath.Join("/db", segment.DataName(1))
	b, _ := segment.ReadAll(base, data)
	if _, err := base.Stat(filepath.Join("/db", segment.HintName(1))); err != nil {
		t.Fatalf("the test needs the sealed file's hint file: %v", err)
	}
	last := record.HeaderSize + 4 + len(fmt.Sprintf("value-%03d-", n-1)) + n - 1
	for _, cut := range []int{len(b) - last, len(b) - 1} {
		fs := base.Crash(vfs.CrashOptions{})
		rewrite(t, fs, data, func(b []byte) []byte { return b[:cut] })
		_, err := Open("/db", &Options{FS: fs, ExpiryPeriod: -1})
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.Path != data {
			t.Fatalf("cut at %d of %d: Open: %v, want a CorruptionError for %s", cut, len(b), err, data)
		}
		db, err := Open("/db", &Options{FS: fs, ExpiryPeriod: -1, Salvage: true})
		if err != nil {
			t.Fatalf("cut at %d: salvage: %v", cut, err)
		}
		got := contents(t, db)
		if len(got) != n-1 {
			t.Fatalf("cut at %d: salvage kept %d keys, want the %d before the cut", cut, len(got), n-1)
		}
		db.Close()
	}
}

// TestLostPage zeroes, in turn, each whole page of the newest data file,
// as a power cut can leave it when writeback stored later pages of its
// unsynced tail but not that one: Open succeeds, keeps every record that
// ends before the page and drops the rest, which no sync covered.
func TestLostPage(t *testing.T) {
	const n = 200
	base := buildDB(t, n)
	data := filepath.Join("/db", segment.DataName(1))
	b, _ := segment.ReadAll(base, data)
	recEnd := make([]int, n)
	off := record.FileHeaderSize
	for i := range n {
		off += record.HeaderSize + 4 + len(fmt.Sprintf("value-%03d-", i)) + i
		recEnd[i] = off
	}
	if off != len(b) {
		t.Fatalf("layout: computed %d bytes, file has %d", off, len(b))
	}
	const page = 4096
	for p := page; p+page < len(b); p += page {
		fs := base.Crash(vfs.CrashOptions{})
		fs.Remove(filepath.Join("/db", segment.HintName(1)))
		rewrite(t, fs, data, func(b []byte) []byte { clear(b[p : p+page]); return b })
		db, err := Open("/db", &Options{FS: fs, ExpiryPeriod: -1})
		if err != nil {
			t.Fatalf("page at %d lost: %v", p, err)
		}
		got := contents(t, db)
		kept := 0
		for i := range n {
			k := fmt.Sprintf("k%03d", i)
			v, ok := got[k]
			if recEnd[i] <= p {
				kept = recEnd[i]
				if want := fmt.Sprintf("value-%03d-%s", i, bytes.Repeat([]byte("x"), i)); v != want {
					t.Fatalf("page at %d lost: %s = %q, want %q", p, k, v, want)
				}
			} else if ok {
				t.Fatalf("page at %d lost: %s, after it, survived", p, k)
			}
		}
		if st := db.Stats(); st.Recovery.TornBytes != int64(len(b)-kept) {
			t.Fatalf("page at %d lost: torn bytes %d, want %d", p, st.Recovery.TornBytes, len(b)-kept)
		}
		db.Close()
	}
}

// TestBitFlipSweep flips every bit of the last records of the newest data
// file and of an older, sealed one. Every flip must be detected: Open fails
// with ErrCorrupt, or reports a torn tail, or the damaged value's Get fails
// with ErrCorrupt. No read ever returns a wrong value.
func TestBitFlipSweep(t *testing.T) {
	const n = 6
	base := buildDB(t, n)
	// A second session makes file 1 sealed and file 2 the newest.
	db, err := Open("/db", &Options{FS: base, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := n; i < 2*n; i++ {
		db.Set(fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "value-%03d-%s", i, bytes.Repeat([]byte("x"), i)))
	}
	db.Close()
	want := func(i int) string { return fmt.Sprintf("value-%03d-%s", i, bytes.Repeat([]byte("x"), i)) }
	for _, id := range []uint32{1, 2} {
		for _, useHint := range []bool{false, true} {
			data := filepath.Join("/db", segment.DataName(id))
			b, _ := segment.ReadAll(base, data)
			from := len(b) - 120
			if !useHint {
				from = 0
			}
			for bit := from * 8; bit < len(b)*8; bit++ {
				fs := base.Crash(vfs.CrashOptions{})
				if !useHint {
					fs.Remove(filepath.Join("/db", segment.HintName(id)))
				}
				rewrite(t, fs, data, func(b []byte) []byte { b[bit/8] ^= 1 << (bit % 8); return b })
				db, err := Open("/db", &Options{FS: fs, ExpiryPeriod: -1, ReadOnly: true})
				if err != nil {
					if !errors.Is(err, ErrCorrupt) {
						t.Fatalf("file %d bit %d: open: %v, want ErrCorrupt", id, bit, err)
					}
					var ce *CorruptionError
					if !errors.As(err, &ce) || ce.Path != data {
						t.Fatalf("file %d bit %d: error does not name the file: %v", id, bit, err)
					}
					continue
				}
				detected := db.Stats().Recovery.TornBytes > 0
				for i := range 2 * n {
					v, err := db.Get(fmt.Appendf(nil, "k%03d", i))
					switch {
					case err == nil && string(v) != want(i):
						t.Fatalf("file %d bit %d: k%03d = %q, want %q", id, bit, i, v, want(i))
					case errors.Is(err, ErrCorrupt):
						detected = true
					case errors.Is(err, ErrNotFound):
						if !detected {
							t.Fatalf("file %d bit %d: k%03d lost without a report", id, bit, i)
						}
					case err != nil:
						t.Fatalf("file %d bit %d: k%03d: %v", id, bit, i, err)
					}
				}
				if !detected {
					t.Fatalf("file %d bit %d (hint %v): flip not detected", id, bit, useHint)
				}
				db.Close()
			}
		}
	}
}

func TestSalvage(t *testing.T) {
	base := buildDB(t, 10)
	db, _ := Open("/db", &Options{FS: base, ExpiryPeriod: -1})
	db.Set([]byte("later"), []byte("v"))
	db.Close()
	data := filepath.Join("/db", segment.DataName(1))
	base.Remove(filepath.Join("/db", segment.HintName(1)))
	// Damage the third record of the sealed file.
	rewrite(t, base, data, func(b []byte) []byte { b[16+2*(record.HeaderSize+4+10)+40] ^= 0xff; return b })
	if _, err := Open("/db", &Options{FS: base, ExpiryPeriod: -1}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open of damaged sealed file: %v", err)
	}
	db, err := Open("/db", &Options{FS: base, ExpiryPeriod: -1, Salvage: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := contents(t, db)
	if _, ok := got["k002"]; ok || len(got) != 10 || got["later"] != "v" {
		t.Fatalf("salvaged %d keys: %v", len(got), got)
	}
	if db.Stats().Recovery.Salvaged != 1 {
		t.Fatalf("salvaged ranges: %d", db.Stats().Recovery.Salvaged)
	}
}

func TestFsyncErrorStopsWrites(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db, err := Open("/db", &Options{FS: efs, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := db.WriteStatus(); err != nil {
		t.Fatalf("write status before the failure: %v", err)
	}
	efs.Inject(errorfs.OpSync, syscall.EIO)
	err = db.Set([]byte("b"), []byte("2"))
	if !errors.Is(err, ErrWritesStopped) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("set with failing fsync: %v", err)
	}
	if err := db.WriteStatus(); !errors.Is(err, ErrWritesStopped) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("write status after the failure: %v", err)
	}
	mustMiss(t, db, "b") // never acknowledged, never visible
	efs.Reset()
	err = db.Set([]byte("c"), []byte("3"))
	if !errors.Is(err, ErrWritesStopped) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("set after fsync failure: %v", err)
	}
	mustGet(t, db, "a", "1") // reads go on
	if st := db.Stats(); !errors.Is(st.WriteError, syscall.EIO) {
		t.Fatalf("stats write error: %v", st.WriteError)
	}
}

func TestENOSPCRecovers(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.New(mem)
	db, err := Open("/db", &Options{FS: efs, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	efs.SetSpace(40) // less than the next record
	err = db.Set([]byte("big"), bytes.Repeat([]byte("x"), 100))
	if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrWritesStopped) {
		t.Fatalf("set without space: %v", err)
	}
	mustMiss(t, db, "big")
	if st := db.Stats(); !errors.Is(st.WriteRefused, syscall.ENOSPC) || st.WriteError != nil {
		t.Fatalf("stats after a refused write: refused %v, write error %v", st.WriteRefused, st.WriteError)
	}
	if err := db.WriteStatus(); !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrWritesStopped) {
		t.Fatalf("write status after a refused write: %v", err)
	}
	efs.SetSpace(-1)
	if err := db.Set([]byte("b"), []byte("2")); err != nil {
		t.Fatalf("set after space returned: %v", err)
	}
	if st := db.Stats(); st.WriteRefused != nil {
		t.Fatalf("stats after a write went through: refused %v", st.WriteRefused)
	}
	if err := db.WriteStatus(); err != nil {
		t.Fatalf("write status after a write went through: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, "/db", &Options{FS: mem.Crash(vfs.CrashOptions{}), ExpiryPeriod: -1})
	mustGet(t, db, "a", "1")
	mustGet(t, db, "b", "2")
	mustMiss(t, db, "big")
}

// TestENOSPCClearedWhenRoom checks that a refusal for lack of space is
// forgotten once the file system has room for the refused write again,
// without a write (so that PING and /readyz recover when space is freed),
// and not before.
func TestENOSPCClearedWhenRoom(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db := openTest(t, "/db", &Options{FS: efs, ExpiryPeriod: -1})
	efs.SetSpace(40) // less than the record
	if err := db.Set([]byte("big"), bytes.Repeat([]byte("x"), 100)); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("set without space: %v", err)
	}
	db.clearRefusedIfRoom()
	if err := db.WriteStatus(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write status with 40 bytes free: %v", err)
	}
	efs.SetSpace(1 << 20)
	db.clearRefusedIfRoom()
	if err := db.WriteStatus(); err != nil {
		t.Fatalf("write status with room again: %v", err)
	}
	if st := db.Stats(); st.WriteRefused != nil {
		t.Fatalf("stats with room again: refused %v", st.WriteRefused)
	}
	if err := db.Set([]byte("big"), bytes.Repeat([]byte("x"), 100)); err != nil {
		t.Fatalf("set with room again: %v", err)
	}
}

// TestENOSPCNewDataFile checks a full disk met while starting a new data
// file: the write fails without stopping writes, and it leaves no empty
// data file behind, which the next open would take for damage once later
// files follow it.
func TestENOSPCNewDataFile(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.New(mem)
	db, err := Open("/db", &Options{FS: efs, MaxFileSize: 256, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte("v"), 100)
	if err := db.Set([]byte("a"), val); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("b"), val); err != nil {
		t.Fatal(err)
	}
	files := len(db.Stats().Files)
	efs.SetSpace(0)
	for i := range 3 { // each attempt seals nothing new and starts a new file
		err = db.Set([]byte("c"), val)
		if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrWritesStopped) {
			t.Fatalf("set %d without space: %v", i, err)
		}
	}
	mustMiss(t, db, "c")
	efs.SetSpace(-1)
	if err := db.Set([]byte("d"), val); err != nil {
		t.Fatalf("set after space returned: %v", err)
	}
	st := db.Stats().Files
	if len(st) != files+1 {
		t.Fatalf("%d data files after one new one, want %d", len(st), files+1)
	}
	if last, prev := st[len(st)-1].ID, st[len(st)-2].ID; last != prev+1 {
		t.Errorf("new data file %d after %d: the failed attempts used up ids", last, prev)
	}
	names, err := mem.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if fi, err := mem.Stat("/db/" + name); err == nil && fi.Size() == 0 && strings.HasSuffix(name, ".data") {
			t.Errorf("empty data file %s left behind", name)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, crash := range []bool{false, true} {
		fsys := vfs.FS(mem)
		if crash {
			fsys = mem.Crash(vfs.CrashOptions{})
		}
		db = openTest(t, "/db", &Options{FS: fsys, ExpiryPeriod: -1})
		mustGet(t, db, "a", string(val))
		mustGet(t, db, "b", string(val))
		mustGet(t, db, "d", string(val))
		mustMiss(t, db, "c")
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupCommitSharesFsyncs checks that concurrent writers under
// SyncAlways share fsyncs: 64 writers, each of whose writes is acknowledged
// only after an fsync, need far fewer fsyncs than writes.
func TestGroupCommitSharesFsyncs(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	// Make each fsync slow enough that writers queue behind it.
	efs.InjectFunc(errorfs.OpSync, func(string) error { time.Sleep(200 * time.Microsecond); return nil })
	db, err := Open("/db", &Options{FS: efs, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := efs.Count(errorfs.OpSync)
	const writers, each = 64, 20
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				if err := db.Set(fmt.Appendf(nil, "%02d-%02d", g, i), []byte("v")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	syncs := efs.Count(errorfs.OpSync) - before
	t.Logf("%d writes, %d fsyncs", writers*each, syncs)
	if syncs > writers*each/4 {
		t.Fatalf("%d fsyncs for %d concurrent writes: group commit is not sharing them", syncs, writers*each)
	}
	if n := db.Stats().Keys; n != writers*each {
		t.Fatalf("keys %d", n)
	}
}

// TestSyncEverySec checks the background fsync: writes are acknowledged
// before any fsync, and the syncer makes them durable within an interval.
func TestSyncEverySec(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.New(mem)
	synced := make(chan struct{}, 100)
	efs.InjectFunc(errorfs.OpSync, func(name string) error {
		if strings.HasSuffix(name, ".data") {
			select {
			case synced <- struct{}{}:
			default:
			}
		}
		return nil
	})
	db, err := Open("/db", &Options{FS: efs, Sync: SyncEverySec, SyncInterval: 5 * time.Millisecond, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	// Creating the data file syncs it once; drain that.
	for len(synced) > 0 {
		<-synced
	}
	syncsBefore := efs.Count(errorfs.OpSync)
	if err := db.Set([]byte("b"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	if efs.Count(errorfs.OpSync) != syncsBefore {
		t.Fatal("SyncEverySec fsynced before acknowledging")
	}
	<-synced // the background syncer starts an fsync
	// The syncer is sequential: once it starts the fsync for "c", the one
	// for "b" has finished.
	if err := db.Set([]byte("c"), []byte("3")); err != nil {
		t.Fatal(err)
	}
	<-synced
	db2, err := Open("/db", &Options{FS: mem.Crash(vfs.CrashOptions{}), ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	mustGet(t, db2, "b", "2")
}

// A failing background fsync stops writes, as a foreground one does.
func TestSyncEverySecError(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db, err := Open("/db", &Options{FS: efs, Sync: SyncEverySec, SyncInterval: time.Millisecond, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Set([]byte("a"), []byte("1"))
	efs.Inject(errorfs.OpSync, syscall.EIO)
	db.Set([]byte("b"), []byte("2"))
	// The syncer records the error within an interval; poll for it.
	deadline := time.Now().Add(10 * time.Second)
	for db.Stats().WriteError == nil {
		if time.Now().After(deadline) {
			t.Fatal("the background fsync error was never recorded")
		}
		runtime.Gosched()
	}
	if err := db.Set([]byte("d"), []byte("4")); !errors.Is(err, ErrWritesStopped) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("set after failed background sync: %v", err)
	}
}

// WriteBatches shares one fsync among its batches, and a failed check
// fails only its own batch.
func TestWriteBatchesShareFsync(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db, err := Open("/db", &Options{FS: efs, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Set([]byte("x"), []byte("0"))
	before := efs.Count(errorfs.OpSync)
	st := db.Stats()
	var bs []*Batch
	for i := range 16 {
		b := &Batch{}
		if i == 5 {
			b.Check([]byte("x"), 12345) // wrong version: this one fails
		}
		b.Set(fmt.Appendf(nil, "k%02d", i), []byte("v"))
		bs = append(bs, b)
	}
	errs := db.WriteBatches(bs)
	for i, err := range errs {
		if (i == 5) != errors.Is(err, ErrConflict) || (i != 5 && err != nil) {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if n := efs.Count(errorfs.OpSync) - before; n != 1 {
		t.Fatalf("%d fsyncs for one call of 16 batches", n)
	}
	if after := db.Stats(); after.Groups != st.Groups+1 || after.Commits != st.Commits+16 {
		t.Fatalf("groups %d -> %d, commits %d -> %d; want one group of 16",
			st.Groups, after.Groups, st.Commits, after.Commits)
	}
	mustMiss(t, db, "k05")
	mustGet(t, db, "k15", "v")
}

// TestProcessCrashThenPowerLoss crashes the process, not the machine,
// under SyncNone: its unsynced appends stay in the page cache, so the next
// open reads them, shows them and starts a new file. A power loss then
// must neither lose what that open showed nor tear the old file, which is
// no longer the newest and so would fail every open.
func TestProcessCrashThenPowerLoss(t *testing.T) {
	for seed := range uint64(8) {
		mem := vfs.NewMem()
		opts := &Options{FS: mem, Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1}
		db1, err := Open("/db", opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db1.Close() }) // stops its goroutines
		want := map[string]string{"after": "x"}
		for i := range 20 {
			k, v := fmt.Sprintf("k%02d", i), strings.Repeat(string(rune('a'+i)), 300)
			if err := db1.Set([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
		// The process dies: its lock goes, its unsynced bytes stay.
		if err := db1.lock.Close(); err != nil {
			t.Fatal(err)
		}
		db2 := openTest(t, "/db", &Options{FS: mem, ExpiryPeriod: -1, MergeInterval: -1})
		if got := contents(t, db2); len(got) != 20 {
			t.Fatalf("%d keys after the process crash, want 20", len(got))
		}
		if err := db2.Set([]byte("after"), []byte("x")); err != nil {
			t.Fatal(err)
		}
		after := mem.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(seed, 1))})
		db3 := openTest(t, "/db", &Options{FS: after, ExpiryPeriod: -1, MergeInterval: -1})
		if got := contents(t, db3); !maps.Equal(got, want) {
			t.Fatalf("seed %d: %d keys after the power loss, want %d", seed, len(got), len(want))
		}
	}
}

// TestReopenWithSmallerLimits reopens a database with a MaxKeySize and
// MaxValueSize below the sizes of keys and values it holds. The limits
// bound new writes; the data written under the old ones must still
// recover and read, from hint files and from scans alike, and the newest
// file's last records must not be taken for a torn tail and cut off.
func TestReopenWithSmallerLimits(t *testing.T) {
	mem := vfs.NewMem()
	bigKey, bigVal := strings.Repeat("k", 300), strings.Repeat("v", 5000)
	db := openTest(t, "/db", &Options{FS: mem, ExpiryPeriod: -1})
	if err := db.Set([]byte(bigKey+"1"), []byte(bigVal)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // a sealed file with its hint
		t.Fatal(err)
	}
	db = openTest(t, "/db", &Options{FS: mem, ExpiryPeriod: -1})
	if err := db.Set([]byte(bigKey+"2"), []byte(bigVal)); err != nil {
		t.Fatal(err)
	}
	// The process dies: the newest file has no hint and is scanned.
	small := func(fs vfs.FS) *Options {
		return &Options{FS: fs, ExpiryPeriod: -1, MaxKeySize: 100, MaxValueSize: 1000}
	}
	after := mem.Crash(vfs.CrashOptions{})
	for range 2 { // the second open reads both files through hints
		db2 := openTest(t, "/db", small(after))
		if torn := db2.Stats().Recovery.TornBytes; torn != 0 {
			t.Fatalf("recovery cut %d bytes", torn)
		}
		mustGet(t, db2, bigKey+"1", bigVal)
		mustGet(t, db2, bigKey+"2", bigVal)
		if err := db2.Set([]byte("k"), []byte(bigVal)); !errors.Is(err, ErrValueTooLarge) {
			t.Fatalf("a value over the new limit: %v", err)
		}
		if err := db2.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := Check(context.Background(), "/db", &CheckOptions{FS: after}); err != nil || !rep.OK() || len(rep.BadHints) > 0 || rep.TornBytes > 0 {
		t.Fatalf("check: %+v %v", rep, err)
	}
}

// A read that fails with an I/O error reports that error, not corrupt
// data: the record may be sound, and the next read may succeed.
func TestReadIOErrorIsNotCorruption(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db, err := Open("/db", &Options{FS: efs, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	efs.Inject(errorfs.OpRead, syscall.EIO)
	_, err = db.Get([]byte("k"))
	var ce *CorruptionError
	if !errors.Is(err, syscall.EIO) || errors.As(err, &ce) {
		t.Fatalf("Get with a failing read: %v, want EIO and no CorruptionError", err)
	}
	efs.Reset()
	mustGet(t, db, "k", "v")
}
