package vfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/caskade/caskade/vfs"
)

// memWith returns a MemFS with a durable directory /d.
func memWith(t *testing.T) *vfs.MemFS {
	t.Helper()
	m := vfs.NewMem()
	ok(t, m.MkdirAll("/d", 0o755))
	return m
}

// durableFile creates name with data, syncs it and its directory.
func durableFile(t *testing.T, m *vfs.MemFS, name, data string) {
	t.Helper()
	f, err := m.Create(name)
	ok(t, err)
	_, err = f.Write([]byte(data))
	ok(t, err)
	ok(t, f.Sync())
	ok(t, f.Close())
	ok(t, m.SyncDir("/d"))
}

// openRW opens name for writing and closes it at the end of the test.
func openRW(t *testing.T, m *vfs.MemFS, name string) vfs.File {
	t.Helper()
	f, err := m.OpenReadWrite(name)
	ok(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// checkFiles asserts which files exist in fsys and what they hold.
func checkFiles(t *testing.T, fsys vfs.FS, want map[string]string, gone []string) {
	t.Helper()
	for name, data := range want {
		if got := readFile(t, fsys, name); got != data {
			t.Errorf("%s = %q, want %q", name, got, data)
		}
	}
	for _, name := range gone {
		if _, err := fsys.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: Stat error %v, want ErrNotExist", name, err)
		}
	}
}

func TestMemCrash(t *testing.T) {
	tests := []struct {
		name  string
		steps func(t *testing.T, m *vfs.MemFS)
		want  map[string]string // files that survive, with their contents
		gone  []string          // files that must not survive
	}{
		{
			name: "synced file survives",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/f", "data")
			},
			want: map[string]string{"/d/f": "data"},
		},
		{
			name: "unsynced append is lost",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/f", "data")
				f := openRW(t, m, "/d/f")
				_, err := f.WriteAt([]byte("more"), 4)
				ok(t, err)
			},
			want: map[string]string{"/d/f": "data"},
		},
		{
			name: "unsynced overwrite is lost",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/f", "data")
				_, err := openRW(t, m, "/d/f").WriteAt([]byte("D"), 0)
				ok(t, err)
			},
			want: map[string]string{"/d/f": "data"},
		},
		{
			name: "synced overwrite survives",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/f", "data")
				f := openRW(t, m, "/d/f")
				_, err := f.WriteAt([]byte("D"), 0)
				ok(t, err)
				ok(t, f.Sync())
			},
			want: map[string]string{"/d/f": "Data"},
		},
		{
			name: "unsynced truncate is lost",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/f", "data")
				ok(t, openRW(t, m, "/d/f").Truncate(1))
			},
			want: map[string]string{"/d/f": "data"},
		},
		{
			name: "synced truncate survives",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/f", "data")
				f := openRW(t, m, "/d/f")
				ok(t, f.Truncate(1))
				ok(t, f.Sync())
			},
			want: map[string]string{"/d/f": "d"},
		},
		{
			name: "create without SyncDir is lost",
			steps: func(t *testing.T, m *vfs.MemFS) {
				f, err := m.Create("/d/f")
				ok(t, err)
				_, err = f.Write([]byte("data"))
				ok(t, err)
				ok(t, f.Sync())
			},
			gone: []string{"/d/f"},
		},
		{
			name: "create with SyncDir but no Sync is empty",
			steps: func(t *testing.T, m *vfs.MemFS) {
				writeFile(t, m, "/d/f", "data")
				ok(t, m.SyncDir("/d"))
			},
			want: map[string]string{"/d/f": ""},
		},
		{
			name: "SyncDir of another directory does not help",
			steps: func(t *testing.T, m *vfs.MemFS) {
				ok(t, m.MkdirAll("/e", 0o755))
				writeFile(t, m, "/d/f", "data")
				ok(t, m.SyncDir("/e"))
				ok(t, m.SyncDir("/"))
			},
			gone: []string{"/d/f"},
		},
		{
			name: "rename without SyncDir is lost",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/tmp", "data")
				ok(t, m.Rename("/d/tmp", "/d/f"))
			},
			want: map[string]string{"/d/tmp": "data"},
			gone: []string{"/d/f"},
		},
		{
			name: "rename with SyncDir survives",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/tmp", "data")
				ok(t, m.Rename("/d/tmp", "/d/f"))
				ok(t, m.SyncDir("/d"))
			},
			want: map[string]string{"/d/f": "data"},
			gone: []string{"/d/tmp"},
		},
		{
			name: "rename replacing a file without SyncDir keeps the old file",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/f", "old")
				durableFile(t, m, "/d/tmp", "new")
				ok(t, m.Rename("/d/tmp", "/d/f"))
			},
			want: map[string]string{"/d/f": "old", "/d/tmp": "new"},
		},
		{
			name: "rename across directories, only the target synced",
			steps: func(t *testing.T, m *vfs.MemFS) {
				ok(t, m.MkdirAll("/e", 0o755))
				durableFile(t, m, "/d/f", "data")
				ok(t, m.Rename("/d/f", "/e/f"))
				ok(t, m.SyncDir("/e"))
			},
			want: map[string]string{"/d/f": "data", "/e/f": "data"},
		},
		{
			name: "remove without SyncDir is lost",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/f", "data")
				ok(t, m.Remove("/d/f"))
			},
			want: map[string]string{"/d/f": "data"},
		},
		{
			name: "remove with SyncDir survives",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/f", "data")
				ok(t, m.Remove("/d/f"))
				ok(t, m.SyncDir("/d"))
			},
			gone: []string{"/d/f"},
		},
		{
			name: "sync through the handle of a removed file",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "/d/f", "data")
				f := openRW(t, m, "/d/f")
				ok(t, m.Remove("/d/f")) // not durable
				_, err := f.Write([]byte("DATA"))
				ok(t, err)
				ok(t, f.Sync())
			},
			want: map[string]string{"/d/f": "DATA"},
		},
		{
			name: "MkdirAll is durable at once",
			steps: func(t *testing.T, m *vfs.MemFS) {
				ok(t, m.MkdirAll("/a/b/c", 0o755))
				f, err := m.Create("/a/b/c/f")
				ok(t, err)
				ok(t, f.Close())
				ok(t, m.SyncDir("/a/b/c"))
			},
			want: map[string]string{"/a/b/c/f": ""},
		},
		{
			name: "relative and absolute names are the same",
			steps: func(t *testing.T, m *vfs.MemFS) {
				durableFile(t, m, "d/f", "data")
			},
			want: map[string]string{"/d/f": "data", "d/./f": "data"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := memWith(t)
			tt.steps(t, m)
			before := m.MutatingOps()
			crashed := m.Crash(vfs.CrashOptions{})
			checkFiles(t, crashed, tt.want, tt.gone)
			if m.MutatingOps() != before || m.Crashed() {
				t.Error("Crash changed the original")
			}
			if crashed.MutatingOps() != 0 {
				t.Errorf("crashed FS counts %d operations", crashed.MutatingOps())
			}
		})
	}
}

func TestMemCrashLeavesOriginalAndCopyIndependent(t *testing.T) {
	m := memWith(t)
	durableFile(t, m, "/d/f", "synced")
	f := openRW(t, m, "/d/f")
	_, err := f.WriteAt([]byte("+tail"), 6)
	ok(t, err)

	c := m.Crash(vfs.CrashOptions{})
	checkFiles(t, m, map[string]string{"/d/f": "synced+tail"}, nil)
	checkFiles(t, c, map[string]string{"/d/f": "synced"}, nil)

	// Writes to the copy, overwriting synced bytes and appending, do not
	// show in the original.
	cf := openRW(t, c, "/d/f")
	_, err = cf.WriteAt([]byte("S"), 0)
	ok(t, err)
	_, err = cf.WriteAt([]byte("-copy"), 6)
	ok(t, err)
	checkFiles(t, m, map[string]string{"/d/f": "synced+tail"}, nil)

	// Writes to the original, even below an earlier synced length after a
	// synced truncation, do not show in copies taken before.
	ok(t, f.Sync())
	c2 := m.Crash(vfs.CrashOptions{})
	ok(t, f.Truncate(3))
	ok(t, f.Sync())
	_, err = f.WriteAt([]byte("Y"), 4)
	ok(t, err)
	_, err = f.WriteAt([]byte("Z"), 0)
	ok(t, err)
	checkFiles(t, m, map[string]string{"/d/f": "Zyn\x00Y"}, nil)
	checkFiles(t, c, map[string]string{"/d/f": "Synced-copy"}, nil)
	checkFiles(t, c2, map[string]string{"/d/f": "synced+tail"}, nil)
	checkFiles(t, m.Crash(vfs.CrashOptions{}), map[string]string{"/d/f": "syn"}, nil)
}

func TestMemCrashReleasesLocks(t *testing.T) {
	m := memWith(t)
	l, err := m.Lock("/d/LOCK")
	ok(t, err)
	defer l.Close()
	ok(t, m.SyncDir("/d"))
	c := m.Crash(vfs.CrashOptions{})
	l2, err := c.Lock("/d/LOCK")
	if err != nil {
		t.Fatalf("Lock after Crash: %v", err)
	}
	ok(t, l2.Close())
	if _, err := m.Lock("/d/LOCK"); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("original lost its lock: %v", err)
	}
}

func TestMemTear(t *testing.T) {
	r := newRand(t)
	var sawNone, sawPart, sawAll bool
	for i := range 400 {
		durable := r.IntN(2000)
		unsynced := 1 + r.IntN(4000)
		data := make([]byte, durable+unsynced)
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		m := memWith(t)
		durableFile(t, m, "/d/f", string(data[:durable]))
		_, err := openRW(t, m, "/d/f").WriteAt(data[durable:], int64(durable))
		ok(t, err)
		durableFile(t, m, "/d/synced", "untouched")

		seed := r.Uint64()
		c := m.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(seed, seed))})
		got := []byte(readFile(t, c, "/d/f"))
		n := len(got)
		desc := fmt.Sprintf("case %d: durable %d, unsynced %d: kept %d", i, durable, unsynced, n)
		switch {
		case n < durable || n > len(data):
			t.Fatalf("%s: outside [durable, current]", desc)
		case n != durable && n != len(data) && n%512 != 0:
			t.Fatalf("%s: not cut at a 512-byte boundary", desc)
		case !bytes.Equal(got, data[:n]):
			t.Fatalf("%s: not a prefix of the written data", desc)
		}
		sawNone = sawNone || n == durable
		sawAll = sawAll || n == len(data)
		sawPart = sawPart || (n > durable && n < len(data))
		checkFiles(t, c, map[string]string{"/d/synced": "untouched"}, nil)

		// The same seed tears the same way.
		again := m.Crash(vfs.CrashOptions{Tear: true, Rand: rand.New(rand.NewPCG(seed, seed))})
		if got2 := readFile(t, again, "/d/f"); len(got2) != n {
			t.Fatalf("%s: same seed kept %d", desc, len(got2))
		}
	}
	if !sawNone || !sawPart || !sawAll {
		t.Errorf("tear outcomes: none %v, part %v, all %v; want all three", sawNone, sawPart, sawAll)
	}
}

func TestMemTearKeepsShorterCurrent(t *testing.T) {
	m := memWith(t)
	durableFile(t, m, "/d/f", "0123456789")
	ok(t, openRW(t, m, "/d/f").Truncate(2))
	c := m.Crash(vfs.CrashOptions{Tear: true}) // nil Rand: fixed seed
	checkFiles(t, c, map[string]string{"/d/f": "0123456789"}, nil)
}

// crashWorkload is a small engine-like sequence of mutating operations. It
// stops at the first error and returns it.
func crashWorkload(m *vfs.MemFS) error {
	if err := m.MkdirAll("/db", 0o755); err != nil { // op 0
		return err
	}
	f, err := m.Create("/db/f") // op 1
	if err != nil {
		return err
	}
	defer f.Close()
	write := func(s string) func() error {
		return func() error { _, err := f.Write([]byte(s)); return err }
	}
	steps := []func() error{
		write("hello"),                           // op 2
		f.Sync,                                   // op 3
		func() error { return m.SyncDir("/db") }, // op 4
		write(" world"),                          // op 5
		f.Sync,                                   // op 6
		func() error { return m.Rename("/db/f", "/db/g") }, // op 7
		func() error { return m.SyncDir("/db") },           // op 8
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

func TestMemCrashAfter(t *testing.T) {
	m := vfs.NewMem()
	ok(t, crashWorkload(m))
	total := m.MutatingOps()
	if total != 9 {
		t.Fatalf("workload counts %d mutating operations, want 9", total)
	}

	// What survives a crash after k operations, for every k.
	tests := []struct {
		k    int
		want map[string]string
		gone []string
	}{
		{0, nil, []string{"/db"}},
		{1, nil, []string{"/db/f", "/db/g"}},
		{2, nil, []string{"/db/f"}},
		{3, nil, []string{"/db/f"}},
		{4, nil, []string{"/db/f"}},
		{5, map[string]string{"/db/f": "hello"}, []string{"/db/g"}},
		{6, map[string]string{"/db/f": "hello"}, nil},
		{7, map[string]string{"/db/f": "hello world"}, []string{"/db/g"}},
		{8, map[string]string{"/db/f": "hello world"}, []string{"/db/g"}},
		{9, map[string]string{"/db/g": "hello world"}, []string{"/db/f"}},
	}
	if len(tests) != total+1 {
		t.Fatalf("table covers %d crash points, want %d", len(tests), total+1)
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.k), func(t *testing.T) {
			m := vfs.NewMem()
			m.SetCrashAfter(tt.k)
			err := crashWorkload(m)
			if tt.k < total {
				if !errors.Is(err, vfs.ErrCrashed) {
					t.Fatalf("workload error %v, want ErrCrashed", err)
				}
				if !m.Crashed() {
					t.Error("Crashed() = false")
				}
				if _, err := m.List("/"); !errors.Is(err, vfs.ErrCrashed) {
					t.Errorf("List after the crash point: %v", err)
				}
			} else {
				ok(t, err)
			}
			if got := m.MutatingOps(); got != tt.k {
				t.Errorf("MutatingOps = %d, want %d", got, tt.k)
			}
			c := m.Crash(vfs.CrashOptions{})
			checkFiles(t, c, tt.want, tt.gone)
			writeFile(t, c, "/after-crash", "the survivor is usable") // no crash point inherited
		})
	}
}

func TestMemCrashAfterRefusesEverything(t *testing.T) {
	m := memWith(t)
	durableFile(t, m, "/d/f", "data")
	w, err := m.OpenReadWrite("/d/f")
	ok(t, err)
	_, err = w.Write([]byte("unsynced"))
	ok(t, err)
	m.SetCrashAfter(0)
	ops := []struct {
		name string
		do   func() error
	}{
		{"Sync", w.Sync}, // first: this is the operation that dies
		{"Create", func() error { _, err := m.Create("/d/g"); return err }},
		{"Open", func() error { _, err := m.Open("/d/f"); return err }},
		{"OpenReadWrite", func() error { _, err := m.OpenReadWrite("/d/f"); return err }},
		{"Remove", func() error { return m.Remove("/d/f") }},
		{"Rename", func() error { return m.Rename("/d/f", "/d/g") }},
		{"MkdirAll", func() error { return m.MkdirAll("/e", 0o755) }},
		{"List", func() error { _, err := m.List("/d"); return err }},
		{"Stat", func() error { _, err := m.Stat("/d/f"); return err }},
		{"SyncDir", func() error { return m.SyncDir("/d") }},
		{"Lock", func() error { _, err := m.Lock("/d/LOCK"); return err }},
		{"Link", func() error { return m.Link("/d/f", "/d/h") }},
		{"Read", func() error { _, err := w.Read(make([]byte, 1)); return err }},
		{"ReadAt", func() error { _, err := w.ReadAt(make([]byte, 1), 0); return err }},
		{"Write", func() error { _, err := w.Write([]byte("x")); return err }},
		{"WriteAt", func() error { _, err := w.WriteAt([]byte("x"), 0); return err }},
		{"Truncate", func() error { return w.Truncate(0) }},
		{"File.Stat", func() error { _, err := w.Stat(); return err }},
		{"Close", w.Close},
	}
	for _, op := range ops {
		if err := op.do(); !errors.Is(err, vfs.ErrCrashed) {
			t.Errorf("%s after the crash point: %v, want ErrCrashed", op.name, err)
		}
	}
	// memWith: MkdirAll; durableFile: Create, Write, Sync, SyncDir; Write.
	// Nothing after the crash point counts.
	if n := m.MutatingOps(); n != 6 {
		t.Errorf("MutatingOps = %d, want 6", n)
	}
	// The failed Sync changed nothing: the unsynced write is lost.
	checkFiles(t, m.Crash(vfs.CrashOptions{}), map[string]string{"/d/f": "data"}, []string{"/d/g", "/e"})
}

func TestMemSetCrashAfterDisable(t *testing.T) {
	m := vfs.NewMem()
	m.SetCrashAfter(1)
	m.SetCrashAfter(-1)
	ok(t, crashWorkload(m))
	if m.Crashed() {
		t.Fatal("Crashed() after SetCrashAfter(-1)")
	}
}

func TestMemLockTable(t *testing.T) {
	m := memWith(t)
	a, err := m.Lock("/d/a")
	ok(t, err)
	b, err := m.Lock("/d/b") // a different file is independent
	ok(t, err)
	ok(t, m.Rename("/d/a", "/d/a2"))
	if _, err := m.Lock("/d/a2"); !errors.Is(err, vfs.ErrLocked) {
		t.Errorf("renamed lock file lost its lock: %v", err)
	}
	ok(t, a.Close())
	ok(t, b.Close())
	l, err := m.Lock("/d/a2")
	ok(t, err)
	ok(t, l.Close())
}

func TestMemConcurrentReadAt(t *testing.T) {
	m := memWith(t)
	stable := make([]byte, 64<<10)
	for i := range stable {
		stable[i] = byte(i * 7)
	}
	durableFile(t, m, "/d/f", string(stable))
	w := openRW(t, m, "/d/f")

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // writer: appends, overwrites its own region, syncs
		defer wg.Done()
		rec := bytes.Repeat([]byte("r"), 100)
		for i := range 500 {
			off := int64(len(stable) + i*len(rec))
			if _, err := w.WriteAt(rec, off); err != nil {
				t.Error(err)
				return
			}
			if _, err := w.WriteAt([]byte("R"), off); err != nil {
				t.Error(err)
				return
			}
			if i%10 == 0 {
				if err := w.Sync(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	wg.Add(1)
	go func() { // crash snapshots taken while the writer runs
		defer wg.Done()
		for range 20 {
			c := m.Crash(vfs.CrashOptions{Tear: true})
			if _, err := c.Stat("/d/f"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for g := range 4 {
		wg.Add(1)
		go func() { // readers of the stable region, through their own handle
			defer wg.Done()
			r, err := m.Open("/d/f")
			if err != nil {
				t.Error(err)
				return
			}
			defer r.Close()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			buf := make([]byte, 512)
			for range 2000 {
				off := rng.IntN(len(stable) - len(buf))
				n, err := r.ReadAt(buf, int64(off))
				if err != nil || n != len(buf) || !bytes.Equal(buf, stable[off:off+n]) {
					t.Errorf("ReadAt(%d) = %d, %v or wrong bytes", off, n, err)
					return
				}
				if _, err := w.ReadAt(buf[:1], int64(len(stable))); err != nil && err != io.EOF {
					t.Errorf("ReadAt of the growing region: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	info, err := w.Stat()
	ok(t, err)
	if want := int64(len(stable) + 500*100); info.Size() != want {
		t.Fatalf("size %d, want %d", info.Size(), want)
	}
}

// memModel is the expected state of one directory of a MemFS.
type memModel struct {
	cur, durable map[string]*modelFile
}

type modelFile struct{ cur, durable []byte }

func TestMemRandomAgainstModel(t *testing.T) {
	r := newRand(t)
	names := []string{"a", "b", "c", "d"}
	for round := range 20 {
		m := memWith(t)
		model := memModel{cur: map[string]*modelFile{}, durable: map[string]*modelFile{}}
		type handle struct {
			f vfs.File
			m *modelFile
		}
		var handles []handle
		type snapshot struct {
			fs   *vfs.MemFS
			want map[string]string
		}
		var snapshots []snapshot

		check := func(step int) {
			t.Helper()
			where := fmt.Sprintf("round %d step %d", round, step)
			// Current view.
			got, err := m.List("/d")
			ok(t, err)
			if want := slices.Sorted(maps.Keys(model.cur)); !slices.Equal(got, want) {
				t.Fatalf("%s: List = %q, want %q", where, got, want)
			}
			for name, mf := range model.cur {
				equalBytes(t, where+": current "+name, []byte(readFile(t, m, "/d/"+name)), mf.cur)
			}
			// Crash view.
			c := m.Crash(vfs.CrashOptions{})
			got, err = c.List("/d")
			ok(t, err)
			if want := slices.Sorted(maps.Keys(model.durable)); !slices.Equal(got, want) {
				t.Fatalf("%s: crash List = %q, want %q", where, got, want)
			}
			for name, mf := range model.durable {
				equalBytes(t, where+": durable "+name, []byte(readFile(t, c, "/d/"+name)), mf.durable)
			}
			// Scribble on some copies and remember every copy's contents:
			// later work on m must not change them, and m must not see the
			// scribbles. (Copies left alone keep sharing bytes with m.)
			scribble := r.IntN(2) == 0
			want := map[string]string{}
			for name := range model.durable {
				if !scribble {
					want["/d/"+name] = string(model.durable[name].durable)
					continue
				}
				f, err := c.OpenReadWrite("/d/" + name)
				ok(t, err)
				_, err = f.WriteAt([]byte("scribble"), 0)
				ok(t, err)
				_, err = f.WriteAt([]byte("scribble"), int64(len(model.durable[name].durable)))
				ok(t, err)
				ok(t, f.Close())
				want["/d/"+name] = readFile(t, c, "/d/"+name)
			}
			snapshots = append(snapshots, snapshot{c, want})
		}

		for step := range 200 {
			name := names[r.IntN(len(names))]
			switch op := r.IntN(10); {
			case op == 0 || len(handles) == 0: // create
				f, err := m.Create("/d/" + name)
				ok(t, err)
				mf := model.cur[name]
				if mf == nil {
					mf = &modelFile{}
					model.cur[name] = mf
				}
				mf.cur = nil
				handles = append(handles, handle{f, mf})
			case op <= 3: // write somewhere, usually appending
				h := handles[r.IntN(len(handles))]
				off := len(h.m.cur)
				if r.IntN(3) == 0 {
					off = r.IntN(len(h.m.cur) + 100)
				}
				p := make([]byte, r.IntN(700))
				for i := range p {
					p[i] = byte(r.Uint32())
				}
				_, err := h.f.WriteAt(p, int64(off))
				ok(t, err)
				if len(p) > 0 {
					grown := make([]byte, max(len(h.m.cur), off+len(p)))
					copy(grown, h.m.cur)
					copy(grown[off:], p)
					h.m.cur = grown
				}
			case op == 4: // truncate
				h := handles[r.IntN(len(handles))]
				size := r.IntN(len(h.m.cur) + 50)
				ok(t, h.f.Truncate(int64(size)))
				grown := make([]byte, size)
				copy(grown, h.m.cur)
				h.m.cur = grown
			case op == 5: // sync a file
				h := handles[r.IntN(len(handles))]
				ok(t, h.f.Sync())
				h.m.durable = slices.Clone(h.m.cur)
			case op == 6: // rename
				to := names[r.IntN(len(names))]
				err := m.Rename("/d/"+name, "/d/"+to)
				if model.cur[name] == nil {
					if !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("rename of missing %s: %v", name, err)
					}
					break
				}
				ok(t, err)
				mf := model.cur[name]
				delete(model.cur, name)
				model.cur[to] = mf
			case op == 7: // remove
				err := m.Remove("/d/" + name)
				if model.cur[name] == nil {
					if !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("remove of missing %s: %v", name, err)
					}
					break
				}
				ok(t, err)
				delete(model.cur, name)
			case op == 8: // sync the directory
				ok(t, m.SyncDir("/d"))
				model.durable = maps.Clone(model.cur)
			default:
				check(step)
			}
		}
		check(200)
		for i, s := range snapshots {
			for name, data := range s.want {
				equalBytes(t, fmt.Sprintf("round %d snapshot %d: %s", round, i, name), []byte(readFile(t, s.fs, name)), []byte(data))
			}
		}
		for _, h := range handles {
			ok(t, h.f.Close())
		}
	}
}
