package errorfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// setup returns a memory file system holding /d/f = "data" (durable) and
// an errorfs over it.
func setup(t *testing.T) (*vfs.MemFS, *errorfs.FS) {
	t.Helper()
	mem := vfs.NewMem()
	ok(t, mem.MkdirAll("/d", 0o755))
	efs := errorfs.New(mem)
	f, err := efs.Create("/d/f")
	ok(t, err)
	_, err = f.Write([]byte("data"))
	ok(t, err)
	ok(t, f.Sync())
	ok(t, f.Close())
	ok(t, efs.SyncDir("/d"))
	return mem, efs
}

// openRW opens name through fsys and closes it when the test ends.
func openRW(t *testing.T, fsys vfs.FS, name string) vfs.File {
	t.Helper()
	f, err := fsys.OpenReadWrite(name)
	ok(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func readFile(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.Open(name)
	ok(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	ok(t, err)
	return string(b)
}

func TestInject(t *testing.T) {
	tests := []struct {
		op    errorfs.Op
		path  string // the name the error must carry
		do    func(efs *errorfs.FS, f vfs.File) error
		after func(t *testing.T, mem *vfs.MemFS) // checks that nothing changed
	}{
		{errorfs.OpCreate, "/d/g", func(efs *errorfs.FS, f vfs.File) error { _, err := efs.Create("/d/g"); return err },
			func(t *testing.T, mem *vfs.MemFS) {
				if _, err := mem.Stat("/d/g"); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("failed Create made the file: %v", err)
				}
			}},
		{errorfs.OpOpen, "/d/f", func(efs *errorfs.FS, f vfs.File) error { _, err := efs.Open("/d/f"); return err }, nil},
		{errorfs.OpOpen, "/d/f", func(efs *errorfs.FS, f vfs.File) error { _, err := efs.OpenReadWrite("/d/f"); return err }, nil},
		{errorfs.OpRead, "/d/f", func(efs *errorfs.FS, f vfs.File) error { _, err := f.Read(make([]byte, 1)); return err }, nil},
		{errorfs.OpRead, "/d/f", func(efs *errorfs.FS, f vfs.File) error { _, err := f.ReadAt(make([]byte, 1), 0); return err }, nil},
		{errorfs.OpWrite, "/d/f", func(efs *errorfs.FS, f vfs.File) error { _, err := f.Write([]byte("X")); return err },
			wantCurrent("/d/f", "data")},
		{errorfs.OpWrite, "/d/f", func(efs *errorfs.FS, f vfs.File) error { _, err := f.WriteAt([]byte("X"), 4); return err },
			wantCurrent("/d/f", "data")},
		{errorfs.OpSync, "/d/f", func(efs *errorfs.FS, f vfs.File) error {
			if _, err := f.WriteAt([]byte("!"), 4); err != nil {
				return err
			}
			return f.Sync()
		}, func(t *testing.T, mem *vfs.MemFS) {
			// The write happened, the failed sync did not make it durable.
			wantCurrent("/d/f", "data!")(t, mem)
			if got := readFile(t, mem.Crash(vfs.CrashOptions{}), "/d/f"); got != "data" {
				t.Errorf("after a failed Sync, crash keeps %q", got)
			}
		}},
		{errorfs.OpTruncate, "/d/f", func(efs *errorfs.FS, f vfs.File) error { return f.Truncate(1) },
			wantCurrent("/d/f", "data")},
		{errorfs.OpStat, "/d/f", func(efs *errorfs.FS, f vfs.File) error { _, err := efs.Stat("/d/f"); return err }, nil},
		{errorfs.OpStat, "/d/f", func(efs *errorfs.FS, f vfs.File) error { _, err := f.Stat(); return err }, nil},
		{errorfs.OpClose, "/d/f", func(efs *errorfs.FS, f vfs.File) error { return f.Close() }, nil},
		{errorfs.OpRemove, "/d/f", func(efs *errorfs.FS, f vfs.File) error { return efs.Remove("/d/f") },
			wantCurrent("/d/f", "data")},
		{errorfs.OpRename, "/d/f", func(efs *errorfs.FS, f vfs.File) error { return efs.Rename("/d/f", "/d/g") },
			wantCurrent("/d/f", "data")},
		{errorfs.OpMkdirAll, "/e", func(efs *errorfs.FS, f vfs.File) error { return efs.MkdirAll("/e", 0o755) },
			func(t *testing.T, mem *vfs.MemFS) {
				if _, err := mem.Stat("/e"); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("failed MkdirAll made the directory: %v", err)
				}
			}},
		{errorfs.OpList, "/d", func(efs *errorfs.FS, f vfs.File) error { _, err := efs.List("/d"); return err }, nil},
		{errorfs.OpSyncDir, "/d", func(efs *errorfs.FS, f vfs.File) error {
			if _, err := efs.Create("/d/new"); err != nil {
				return err
			}
			return efs.SyncDir("/d")
		}, func(t *testing.T, mem *vfs.MemFS) {
			if _, err := mem.Crash(vfs.CrashOptions{}).Stat("/d/new"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("failed SyncDir made the entry durable: %v", err)
			}
		}},
		{errorfs.OpLock, "/d/LOCK", func(efs *errorfs.FS, f vfs.File) error { _, err := efs.Lock("/d/LOCK"); return err }, nil},
		{errorfs.OpLink, "/d/f", func(efs *errorfs.FS, f vfs.File) error { return efs.Link("/d/f", "/d/h") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.op.String(), func(t *testing.T) {
			mem, efs := setup(t)
			f := openRW(t, efs, "/d/f")
			efs.Inject(tt.op, syscall.EIO)
			err := tt.do(efs, f)
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("got %v, want an error wrapping EIO", err)
			}
			var pe *fs.PathError
			var le *os.LinkError
			switch {
			case errors.As(err, &pe):
				if pe.Path != tt.path {
					t.Errorf("PathError.Path = %q, want %q", pe.Path, tt.path)
				}
			case errors.As(err, &le):
				if le.Old != tt.path {
					t.Errorf("LinkError.Old = %q, want %q", le.Old, tt.path)
				}
			default:
				t.Errorf("%T is neither *fs.PathError nor *os.LinkError", err)
			}
			if tt.after != nil {
				tt.after(t, mem)
			}

			// Other kinds of operations are unaffected; Reset heals this one.
			if tt.op != errorfs.OpOpen && tt.op != errorfs.OpRead && tt.op != errorfs.OpClose {
				if got := readFile(t, efs, "/d/f"); got == "" {
					t.Error("read through errorfs returned nothing")
				}
			}
			efs.Reset()
			if tt.op == errorfs.OpClose {
				return // the handle is gone
			}
			if err := tt.do(efs, f); err != nil && tt.op != errorfs.OpLink {
				t.Errorf("after Reset: %v", err)
			}
		})
	}
}

// wantCurrent checks the current contents of a file in mem.
func wantCurrent(name, data string) func(t *testing.T, mem *vfs.MemFS) {
	return func(t *testing.T, mem *vfs.MemFS) {
		t.Helper()
		if got := readFile(t, mem, name); got != data {
			t.Errorf("%s = %q, want %q", name, got, data)
		}
	}
}

func TestInjectAfter(t *testing.T) {
	tests := []struct {
		n     int
		calls int
	}{
		{0, 3}, {1, 3}, {3, 5},
	}
	for _, tt := range tests {
		_, efs := setup(t)
		f := openRW(t, efs, "/d/f")
		before := efs.Count(errorfs.OpSync)
		efs.InjectAfter(errorfs.OpSync, tt.n, syscall.EIO)
		for i := range tt.calls {
			err := f.Sync()
			if wantErr := i >= tt.n; wantErr != errors.Is(err, syscall.EIO) {
				t.Errorf("n=%d: sync %d: %v, want failure %v", tt.n, i, err, wantErr)
			}
		}
		if got := efs.Count(errorfs.OpSync) - before; got != int64(tt.calls) {
			t.Errorf("n=%d: Count(OpSync) grew by %d, want %d", tt.n, got, tt.calls)
		}
	}
}

func TestInjectNilRemovesFault(t *testing.T) {
	_, efs := setup(t)
	efs.Inject(errorfs.OpList, syscall.EIO)
	efs.Inject(errorfs.OpList, nil)
	if _, err := efs.List("/d"); err != nil {
		t.Fatalf("List after removing the fault: %v", err)
	}
}

func TestInjectFuncByName(t *testing.T) {
	_, efs := setup(t)
	efs.InjectFunc(errorfs.OpWrite, func(name string) error {
		if strings.HasSuffix(name, ".hint") {
			return syscall.EIO
		}
		return nil
	})
	hint, err := efs.Create("/d/1.hint")
	ok(t, err)
	defer hint.Close()
	if _, err := hint.Write([]byte("x")); !errors.Is(err, syscall.EIO) {
		t.Errorf("hint write: %v, want EIO", err)
	}
	if _, err := openRW(t, efs, "/d/f").Write([]byte("x")); err != nil {
		t.Errorf("data write: %v", err)
	}
}

func TestSpace(t *testing.T) {
	mem, efs := setup(t)
	f, err := efs.Create("/d/log")
	ok(t, err)
	defer f.Close()

	steps := []struct {
		name     string
		do       func() (int, error)
		wantN    int
		wantFull bool  // error wraps ENOSPC
		space    int64 // Space() afterwards
	}{
		{"space set", func() (int, error) { efs.SetSpace(10); return 0, nil }, 0, false, 10},
		{"short write", func() (int, error) { return f.Write([]byte("0123456789abcdefghijklmno")) }, 10, true, 0},
		{"full", func() (int, error) { return f.Write([]byte("x")) }, 0, true, 0},
		{"overwrite needs no space", func() (int, error) { return f.WriteAt([]byte("AB"), 0) }, 2, false, 0},
		{"truncate gives space back", func() (int, error) { return 0, f.Truncate(6) }, 0, false, 4},
		{"gap uses space", func() (int, error) { return f.WriteAt([]byte("wxyz"), 8) }, 2, true, 0},
		{"growing truncate that does not fit", func() (int, error) { return 0, f.Truncate(20) }, 0, true, 0},
		{"space returns", func() (int, error) { efs.SetSpace(-1); return 0, nil }, 0, false, -1},
		{"write after recovery", func() (int, error) { return f.WriteAt([]byte("!"), 10) }, 1, false, -1},
	}
	for _, s := range steps {
		n, err := s.do()
		if n != s.wantN || s.wantFull != errors.Is(err, syscall.ENOSPC) || (!s.wantFull && err != nil) {
			t.Fatalf("%s: got %d, %v; want %d, ENOSPC %v", s.name, n, err, s.wantN, s.wantFull)
		}
		if got := efs.Space(); got != s.space {
			t.Fatalf("%s: Space() = %d, want %d", s.name, got, s.space)
		}
	}
	if got, want := readFile(t, mem, "/d/log"), "AB2345\x00\x00wx!"; got != want {
		t.Fatalf("file holds %q, want %q", got, want)
	}
}

func TestSpaceGivenBackByRemoveAndReplace(t *testing.T) {
	_, efs := setup(t) // /d/f holds 4 bytes
	tmp, err := efs.Create("/d/tmp")
	ok(t, err)
	_, err = tmp.Write([]byte("123456"))
	ok(t, err)
	ok(t, tmp.Close())

	efs.SetSpace(0)
	ok(t, efs.Rename("/d/tmp", "/d/f")) // replaces 4 bytes
	if got := efs.Space(); got != 4 {
		t.Fatalf("after rename over a file: Space() = %d, want 4", got)
	}
	ok(t, efs.Remove("/d/f")) // 6 bytes
	if got := efs.Space(); got != 10 {
		t.Fatalf("after remove: Space() = %d, want 10", got)
	}
	f, err := efs.Create("/d/g")
	ok(t, err)
	_, err = f.Write([]byte("0123456"))
	ok(t, err)
	ok(t, f.Close())
	f, err = efs.Create("/d/g") // truncates 7 bytes
	ok(t, err)
	ok(t, f.Close())
	if got := efs.Space(); got != 10 {
		t.Fatalf("after Create over a file: Space() = %d, want 10", got)
	}
}

func TestResetRestoresSpace(t *testing.T) {
	_, efs := setup(t)
	efs.SetSpace(0)
	efs.Inject(errorfs.OpSync, syscall.EIO)
	efs.Reset()
	f := openRW(t, efs, "/d/f")
	if _, err := f.Write([]byte("more")); err != nil {
		t.Errorf("write after Reset: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Errorf("sync after Reset: %v", err)
	}
}

func TestOverOS(t *testing.T) {
	dir := t.TempDir()
	efs := errorfs.New(vfs.OS())
	name := filepath.Join(dir, "f")
	f, err := efs.Create(name)
	ok(t, err)
	defer f.Close()

	efs.SetSpace(3)
	n, err := f.Write([]byte("hello"))
	if n != 3 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write = %d, %v; want 3, ENOSPC", n, err)
	}
	efs.SetSpace(-1)
	_, err = f.Write([]byte("LO"))
	ok(t, err)
	efs.Inject(errorfs.OpSync, syscall.EIO)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync = %v, want EIO", err)
	}
	if got := readFile(t, efs, name); got != "helLO" {
		t.Fatalf("file holds %q", got)
	}

	l, err := efs.Lock(filepath.Join(dir, "LOCK"))
	ok(t, err)
	defer l.Close()
	if _, err := efs.Lock(filepath.Join(dir, "LOCK")); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second Lock through errorfs: %v, want ErrLocked", err)
	}
}

func TestOpString(t *testing.T) {
	tests := []struct {
		op   errorfs.Op
		want string
	}{
		{errorfs.OpWrite, "write"},
		{errorfs.OpSyncDir, "syncdir"},
		{errorfs.OpLink, "link"},
		{errorfs.Op(0), "errorfs.Op(0)"},
		{errorfs.Op(99), "errorfs.Op(99)"},
	}
	for _, tt := range tests {
		if got := tt.op.String(); got != tt.want {
			t.Errorf("Op(%d).String() = %q, want %q", int(tt.op), got, tt.want)
		}
	}
}
