package vfs_test

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caskade/caskade/vfs"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized tests (0: derive from the clock)")

// newRand returns a seeded source and logs the seed so a failure can be
// replayed with -seed.
func newRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed))
}

// fileSystems lists the FS implementations that must behave alike. Each
// constructor returns the FS and an existing, empty directory in it.
var fileSystems = []struct {
	name string
	new  func(t *testing.T) (vfs.FS, string)
}{
	{"os", func(t *testing.T) (vfs.FS, string) { return vfs.OS(), t.TempDir() }},
	{"mem", func(t *testing.T) (vfs.FS, string) {
		m := vfs.NewMem()
		dir := "/data"
		if err := m.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return m, dir
	}},
}

// forEachFS runs test against every FS implementation.
func forEachFS(t *testing.T, test func(t *testing.T, fsys vfs.FS, dir string)) {
	t.Helper()
	for _, impl := range fileSystems {
		t.Run(impl.name, func(t *testing.T) {
			fsys, dir := impl.new(t)
			test(t, fsys, dir)
		})
	}
}

// writeFile creates name with data, without syncing anything.
func writeFile(t *testing.T, fsys vfs.FS, name, data string) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readFile returns the contents of name.
func readFile(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ok fails the test if err is not nil.
func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFSMissingFile(t *testing.T) {
	ops := []struct {
		name string
		do   func(fsys vfs.FS, path string) error
	}{
		{"Open", func(fsys vfs.FS, p string) error { _, err := fsys.Open(p); return err }},
		{"OpenReadWrite", func(fsys vfs.FS, p string) error { _, err := fsys.OpenReadWrite(p); return err }},
		{"Stat", func(fsys vfs.FS, p string) error { _, err := fsys.Stat(p); return err }},
		{"Remove", func(fsys vfs.FS, p string) error { return fsys.Remove(p) }},
		{"Rename", func(fsys vfs.FS, p string) error { return fsys.Rename(p, p+".new") }},
		{"List", func(fsys vfs.FS, p string) error { _, err := fsys.List(p); return err }},
		{"SyncDir", func(fsys vfs.FS, p string) error { return fsys.SyncDir(p) }},
		{"Create in missing dir", func(fsys vfs.FS, p string) error {
			_, err := fsys.Create(filepath.Join(p, "x"))
			return err
		}},
		{"Lock in missing dir", func(fsys vfs.FS, p string) error {
			_, err := fsys.Lock(filepath.Join(p, "LOCK"))
			return err
		}},
	}
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		for _, op := range ops {
			t.Run(op.name, func(t *testing.T) {
				err := op.do(fsys, filepath.Join(dir, "missing"))
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("got %v, want an error wrapping fs.ErrNotExist", err)
				}
				if !strings.Contains(err.Error(), "missing") {
					t.Errorf("error %q does not name the file", err)
				}
			})
		}
	})
}

func TestFSReadWrite(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "f")
		f, err := fsys.Create(name)
		ok(t, err)
		defer f.Close()
		n, err := f.Write([]byte("hello"))
		if n != 5 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		_, err = f.WriteAt([]byte(" world"), 5)
		ok(t, err)
		_, err = f.Write([]byte("H")) // position is 5: WriteAt does not move it
		ok(t, err)
		_, err = f.WriteAt([]byte("!"), 14) // leaves a zero-filled gap
		ok(t, err)

		want := "helloHworld\x00\x00\x00!"
		reads := []struct {
			name  string
			off   int64
			n     int
			want  string
			isEOF bool
		}{
			{"whole", 0, len(want), want, false},
			{"middle", 5, 6, "Hworld", false},
			{"past end", 12, 10, "\x00\x00!", true},
			{"at end", int64(len(want)), 1, "", true},
			{"beyond end", 100, 1, "", true},
		}
		for _, r := range reads {
			t.Run(r.name, func(t *testing.T) {
				buf := make([]byte, r.n)
				n, err := f.ReadAt(buf, r.off)
				if got := string(buf[:n]); got != r.want {
					t.Errorf("ReadAt(%d) read %q, want %q", r.off, got, r.want)
				}
				if r.isEOF != (err == io.EOF) || (!r.isEOF && err != nil) {
					t.Errorf("ReadAt(%d) error %v, want EOF %v", r.off, err, r.isEOF)
				}
			})
		}

		info, err := f.Stat()
		ok(t, err)
		if info.Size() != int64(len(want)) || info.Name() != "f" || info.IsDir() {
			t.Errorf("Stat = %q size %d dir %v", info.Name(), info.Size(), info.IsDir())
		}

		ok(t, f.Truncate(3))
		ok(t, f.Truncate(5)) // grows with zeros, not with the old bytes
		ok(t, f.Sync())
		if got := readFile(t, fsys, name); got != "hel\x00\x00" {
			t.Errorf("after truncations: %q", got)
		}

		r, err := fsys.Open(name)
		ok(t, err)
		defer r.Close()
		if _, err := r.Write([]byte("x")); err == nil {
			t.Error("Write on a read-only file succeeded")
		}
		if err := r.Truncate(0); err == nil {
			t.Error("Truncate on a read-only file succeeded")
		}
		ok(t, r.Close())
		if _, err := r.ReadAt(make([]byte, 1), 0); err == nil {
			t.Error("ReadAt on a closed file succeeded")
		}
		if err := r.Close(); err == nil {
			t.Error("second Close succeeded")
		}
	})
}

func TestFSCreateTruncatesAndOpenReadWriteKeeps(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "f")
		writeFile(t, fsys, name, "abcdef")
		f, err := fsys.OpenReadWrite(name)
		ok(t, err)
		_, err = f.Write([]byte("XY"))
		ok(t, err)
		ok(t, f.Close())
		if got := readFile(t, fsys, name); got != "XYcdef" {
			t.Fatalf("after OpenReadWrite: %q", got)
		}
		writeFile(t, fsys, name, "z")
		if got := readFile(t, fsys, name); got != "z" {
			t.Fatalf("after Create: %q", got)
		}
	})
}

func TestFSNamespace(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		p := func(name string) string { return filepath.Join(dir, name) }
		for _, name := range []string{"c", "a", "b"} {
			writeFile(t, fsys, p(name), name)
		}
		ok(t, fsys.MkdirAll(p("sub/deeper"), 0o755))
		ok(t, fsys.SyncDir(dir))
		ok(t, fsys.SyncDir(p("sub")))

		names, err := fsys.List(dir)
		ok(t, err)
		if want := []string{"a", "b", "c", "sub"}; !slices.Equal(names, want) {
			t.Fatalf("List = %q, want %q", names, want)
		}
		if info, err := fsys.Stat(p("sub")); err != nil || !info.IsDir() {
			t.Fatalf("Stat(sub) = %v, %v", info, err)
		}
		if _, err := fsys.List(p("a")); err == nil {
			t.Error("List of a file succeeded")
		}
		if err := fsys.MkdirAll(p("a/x"), 0o755); err == nil {
			t.Error("MkdirAll below a file succeeded")
		}

		// Open handles survive rename and remove.
		h, err := fsys.OpenReadWrite(p("a"))
		ok(t, err)
		defer h.Close()
		ok(t, fsys.Rename(p("a"), p("b"))) // replaces b
		if got := readFile(t, fsys, p("b")); got != "a" {
			t.Fatalf("after rename over b: %q", got)
		}
		_, err = h.WriteAt([]byte("A"), 1)
		ok(t, err)
		if got := readFile(t, fsys, p("b")); got != "aA" {
			t.Fatalf("write through renamed handle: %q", got)
		}
		ok(t, fsys.Remove(p("b")))
		_, err = h.WriteAt([]byte("!"), 2)
		ok(t, err)
		buf := make([]byte, 3)
		if _, err := h.ReadAt(buf, 0); err != nil || string(buf) != "aA!" {
			t.Fatalf("removed file's handle: %q, %v", buf, err)
		}

		if err := fsys.Remove(p("sub")); err == nil {
			t.Error("Remove of a non-empty directory succeeded")
		}
		ok(t, fsys.Remove(p("sub/deeper")))
		ok(t, fsys.Remove(p("sub")))
		names, err = fsys.List(dir)
		ok(t, err)
		if want := []string{"c"}; !slices.Equal(names, want) {
			t.Fatalf("List = %q, want %q", names, want)
		}
	})
}

func TestFSLock(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "LOCK")
		l1, err := fsys.Lock(name)
		ok(t, err)
		if _, err := fsys.Stat(name); err != nil {
			t.Fatalf("Lock did not create its file: %v", err)
		}

		l2, err := fsys.Lock(name)
		if !errors.Is(err, vfs.ErrLocked) {
			t.Fatalf("second Lock: got %v, %v; want an error wrapping ErrLocked", l2, err)
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}

		ok(t, l1.Close())
		if err := l1.Close(); err == nil {
			t.Error("second Close of a lock succeeded")
		}
		l3, err := fsys.Lock(name)
		if err != nil {
			t.Fatalf("Lock after Close: %v", err)
		}
		ok(t, l3.Close())
	})
}

// Shared locks exclude an exclusive one and are excluded by it, but not
// one another; RLock never creates the file.
func TestFSRLock(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "LOCK")
		if l, err := fsys.RLock(name); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("RLock of a missing file: %v, %v; want ErrNotExist", l, err)
		}
		if _, err := fsys.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("RLock created its file: %v", err)
		}
		x, err := fsys.Lock(name)
		ok(t, err)
		if l, err := fsys.RLock(name); !errors.Is(err, vfs.ErrLocked) {
			t.Fatalf("RLock while locked: %v, %v; want ErrLocked", l, err)
		}
		ok(t, x.Close())
		r1, err := fsys.RLock(name)
		ok(t, err)
		r2, err := fsys.RLock(name)
		ok(t, err)
		if l, err := fsys.Lock(name); !errors.Is(err, vfs.ErrLocked) {
			t.Fatalf("Lock while shared: %v, %v; want ErrLocked", l, err)
		}
		ok(t, r1.Close())
		if l, err := fsys.Lock(name); !errors.Is(err, vfs.ErrLocked) {
			t.Fatalf("Lock while one shared lock is left: %v, %v; want ErrLocked", l, err)
		}
		ok(t, r2.Close())
		if err := r2.Close(); err == nil {
			t.Error("second Close of a shared lock succeeded")
		}
		x, err = fsys.Lock(name)
		ok(t, err)
		ok(t, x.Close())
	})
}

func TestFSLockIgnoresLeftoverFile(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		name := filepath.Join(dir, "LOCK")
		writeFile(t, fsys, name, "pid 12345 from a crashed run\n")
		l, err := fsys.Lock(name)
		if err != nil {
			t.Fatalf("Lock with a leftover lock file: %v", err)
		}
		ok(t, l.Close())
	})
}

func TestLink(t *testing.T) {
	t.Run("os", func(t *testing.T) {
		dir := t.TempDir()
		fsys := vfs.OS()
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		writeFile(t, fsys, a, "shared")
		ok(t, fsys.Link(a, b))
		ok(t, fsys.Remove(a))
		if got := readFile(t, fsys, b); got != "shared" {
			t.Fatalf("link: %q", got)
		}
	})
	t.Run("mem", func(t *testing.T) {
		m := vfs.NewMem()
		writeFile(t, m, "a", "x")
		err := m.Link("a", "b")
		if !errors.Is(err, vfs.ErrUnsupported) {
			t.Fatalf("Link = %v, want ErrUnsupported", err)
		}
	})
}

func TestOSErrorsAreOSErrors(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.OS()
	writeFile(t, fsys, filepath.Join(dir, "f"), "x")
	_, err := fsys.Create(filepath.Join(dir, "f", "g"))
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("Create below a file: %v, want ENOTDIR", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("%T is not a *fs.PathError", err)
	}
}

func TestMkdirAllExisting(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		for range 2 {
			ok(t, fsys.MkdirAll(filepath.Join(dir, "x", "y"), 0o755))
		}
		names, err := fsys.List(filepath.Join(dir, "x"))
		ok(t, err)
		if !slices.Equal(names, []string{"y"}) {
			t.Fatalf("List = %q", names)
		}
	})
}

// equalBytes reports a readable difference between two byte slices.
func equalBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: got %d bytes, want %d; first difference at %d", what, len(got), len(want), i)
	}
}
