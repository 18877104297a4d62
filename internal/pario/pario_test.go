package pario_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caskade/caskade/internal/pario"
)

// Both files caskade uses satisfy the interfaces (vfs.File is checked where
// it is defined; pario may not import it).
var (
	_ pario.ReaderAt     = (*os.File)(nil)
	_ pario.SyncWriterAt = (*os.File)(nil)
)

// readOp runs one of the reading functions and returns what it read as one
// slice.
type readOp struct {
	name string
	run  func(ctx context.Context, r pario.ReaderAt, size int64, opts pario.Options) ([]byte, error)
}

var readOps = []readOp{
	{"ReadFull", func(ctx context.Context, r pario.ReaderAt, size int64, opts pario.Options) ([]byte, error) {
		return pario.ReadFull(ctx, r, size, opts)
	}},
	{"ReadInto", func(ctx context.Context, r pario.ReaderAt, size int64, opts pario.Options) ([]byte, error) {
		// A buffer full of another file's bytes, as when one is reused:
		// every byte must be overwritten.
		buf := bytes.Repeat([]byte{0xa5}, int(size))
		err := pario.ReadInto(ctx, r, buf, 0, opts)
		return buf, err
	}},
	{"ReadAll", func(ctx context.Context, r pario.ReaderAt, size int64, opts pario.Options) ([]byte, error) {
		bufs, err := pario.ReadAll(ctx, r, size, opts)
		return bytes.Join(bufs, nil), err
	}},
	{"Stream", func(ctx context.Context, r pario.ReaderAt, size int64, opts pario.Options) ([]byte, error) {
		var out []byte
		err := pario.Stream(ctx, r, size, opts, func(off int64, chunk []byte) error {
			if off != int64(len(out)) {
				return fmt.Errorf("chunk at offset %d, want %d", off, len(out))
			}
			out = append(out, chunk...)
			return nil
		})
		return out, err
	}},
	{"Copy", func(ctx context.Context, r pario.ReaderAt, size int64, opts pario.Options) ([]byte, error) {
		w := &fakeWriter{data: make([]byte, size)}
		err := pario.Copy(ctx, w, r, size, opts)
		return w.data, err
	}},
}

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	rng := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16)})
	_, _ = rng.Read(b)
	return b
}

// splitIrregular cuts b into buffers of varying length, including empty ones,
// so that buffer and chunk boundaries do not line up.
func splitIrregular(b []byte, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var bufs [][]byte
	for len(b) > 0 {
		n := min(rng.IntN(3000), len(b))
		bufs = append(bufs, b[:n])
		b = b[n:]
	}
	return append(bufs, nil)
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		opts pario.Options
		ok   bool
	}{
		{pario.Options{}, true},
		{pario.Options{Workers: 1, ChunkSize: 1}, true},
		{pario.Options{Workers: pario.MaxWorkers, ChunkSize: pario.MaxChunkSize, NoSync: true}, true},
		{pario.Options{Workers: -1}, false},
		{pario.Options{Workers: pario.MaxWorkers + 1}, false},
		{pario.Options{ChunkSize: -1}, false},
		{pario.Options{ChunkSize: pario.MaxChunkSize + 1}, false},
	}
	for _, tt := range tests {
		err := tt.opts.Validate()
		if tt.ok && err != nil {
			t.Errorf("%+v: Validate() = %v, want nil", tt.opts, err)
		}
		if !tt.ok && !errors.Is(err, pario.ErrInvalidOptions) {
			t.Errorf("%+v: Validate() = %v, want ErrInvalidOptions", tt.opts, err)
		}
	}
}

func TestInvalidArguments(t *testing.T) {
	ctx := context.Background()
	bad := pario.Options{Workers: -1}
	r := &fakeReader{data: make([]byte, 10)}
	w := &fakeWriter{data: make([]byte, 10)}
	noop := func(int64, []byte) error { return nil }
	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"ReadFull/options", func() error { _, err := pario.ReadFull(ctx, r, 10, bad); return err }, pario.ErrInvalidOptions},
		{"ReadInto/options", func() error { return pario.ReadInto(ctx, r, make([]byte, 10), 0, bad) }, pario.ErrInvalidOptions},
		{"ReadAll/options", func() error { _, err := pario.ReadAll(ctx, r, 10, bad); return err }, pario.ErrInvalidOptions},
		{"Stream/options", func() error { return pario.Stream(ctx, r, 10, bad, noop) }, pario.ErrInvalidOptions},
		{"Copy/options", func() error { return pario.Copy(ctx, w, r, 10, bad) }, pario.ErrInvalidOptions},
		{"WriteBuffers/options", func() error { return pario.WriteBuffers(ctx, w, [][]byte{{1}}, bad) }, pario.ErrInvalidOptions},
		{"ReadPath/options", func() error { _, err := pario.ReadPath(ctx, "x", bad); return err }, pario.ErrInvalidOptions},
		{"WritePath/options", func() error { return pario.WritePath(ctx, "x", nil, 0o600, bad) }, pario.ErrInvalidOptions},
		{"CopyPath/options", func() error { return pario.CopyPath(ctx, "x", "y", bad) }, pario.ErrInvalidOptions},
		{"ReadFull/size", func() error { _, err := pario.ReadFull(ctx, r, -1, pario.Options{}); return err }, pario.ErrInvalidSize},
		{"ReadInto/offset", func() error { return pario.ReadInto(ctx, r, make([]byte, 1), -1, pario.Options{}) }, pario.ErrInvalidSize},
		{"ReadInto/overflow", func() error {
			return pario.ReadInto(ctx, r, make([]byte, 2), 1<<63-1, pario.Options{})
		}, pario.ErrInvalidSize},
		{"ReadAll/size", func() error { _, err := pario.ReadAll(ctx, r, -1, pario.Options{}); return err }, pario.ErrInvalidSize},
		{"Stream/size", func() error { return pario.Stream(ctx, r, -1, pario.Options{}, noop) }, pario.ErrInvalidSize},
		{"Copy/size", func() error { return pario.Copy(ctx, w, r, -1, pario.Options{}) }, pario.ErrInvalidSize},
		{"WriteBuffersAt/offset", func() error { return pario.WriteBuffersAt(ctx, w, -1, [][]byte{{1}}, pario.Options{}) }, pario.ErrInvalidSize},
		{"WriteBuffersAt/overflow", func() error {
			return pario.WriteBuffersAt(ctx, w, 1<<63-1, [][]byte{{1}}, pario.Options{})
		}, pario.ErrInvalidSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if n := r.calls.Load() + w.calls.Load() + w.syncs.Load(); n != 0 {
		t.Errorf("%d calls into the files despite invalid arguments", n)
	}
}

// TestRoundTrip writes files with WritePath and reads and copies them back
// with every function, on real files, for sizes around chunk boundaries and
// worker counts up to more workers than chunks.
func TestRoundTrip(t *testing.T) {
	const cs = 1024
	sizes := []int{0, 1, cs - 1, cs, cs + 1, 2 * cs, 7*cs + 3}
	workers := []int{1, 2, 4, 64}
	ctx := context.Background()
	for _, size := range sizes {
		for _, w := range workers {
			opts := pario.Options{Workers: w, ChunkSize: cs}
			t.Run(fmt.Sprintf("size=%d/workers=%d", size, w), func(t *testing.T) {
				roundTrip(t, ctx, randomBytes(size, uint64(size*100+w)), opts)
			})
		}
	}
	// The defaults, with a file just over one default chunk.
	t.Run("defaults", func(t *testing.T) {
		roundTrip(t, ctx, randomBytes(pario.DefaultChunkSize+1, 7), pario.Options{})
	})
}

func roundTrip(t *testing.T, ctx context.Context, data []byte, opts pario.Options) {
	t.Helper()
	dir := t.TempDir()
	size := int64(len(data))
	cs := opts.ChunkSize
	if cs == 0 {
		cs = pario.DefaultChunkSize
	}
	path := filepath.Join(dir, "src")
	if err := pario.WritePath(ctx, path, splitIrregular(data, uint64(size)), 0o600, opts); err != nil {
		t.Fatalf("WritePath: %v", err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file after WritePath: %d bytes, err %v; want %d bytes", len(got), err, len(data))
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	for _, op := range readOps {
		got, err := op.run(ctx, f, size, opts)
		if err != nil {
			t.Errorf("%s: %v", op.name, err)
		} else if !bytes.Equal(got, data) {
			t.Errorf("%s: read %d bytes that differ from the %d written", op.name, len(got), len(data))
		}
	}

	bufs, err := pario.ReadAll(ctx, f, size, opts)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	if want := (size + cs - 1) / cs; int64(len(bufs)) != want {
		t.Errorf("ReadAll: %d buffers, want %d", len(bufs), want)
	}
	for i, b := range bufs {
		if i < len(bufs)-1 && int64(len(b)) != cs || int64(len(b)) > cs || len(b) == 0 {
			t.Errorf("ReadAll: buffer %d of %d has length %d (chunk size %d)", i, len(bufs), len(b), cs)
		}
	}

	if got, err := pario.ReadPath(ctx, path, opts); err != nil || !bytes.Equal(got, data) {
		t.Errorf("ReadPath: %d bytes, err %v", len(got), err)
	}
	dst := filepath.Join(dir, "dst")
	if err := pario.CopyPath(ctx, dst, path, opts); err != nil {
		t.Fatalf("CopyPath: %v", err)
	}
	if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, data) {
		t.Errorf("CopyPath: dst has %d bytes, err %v", len(got), err)
	}

	out, err := os.Create(filepath.Join(dir, "copy"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := pario.Copy(ctx, out, f, size, opts); err != nil {
		t.Fatalf("Copy: %v", err)
	}
	if got, err := os.ReadFile(out.Name()); err != nil || !bytes.Equal(got, data) {
		t.Errorf("Copy to *os.File: dst has %d bytes, err %v", len(got), err)
	}
}

func TestWriteBuffersAtOffset(t *testing.T) {
	const cs = 100
	tests := []struct {
		name     string
		prefill  int   // bytes of 'x' in the file before the write
		off      int64 // where the write starts
		n        int   // bytes written
		wantSize int64
	}{
		{"inside", 1000, 10, 350, 1000},
		{"past end", 1000, 900, 350, 1250},
		{"hole", 10, 500, 250, 750},
		{"empty", 10, 500, 0, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(path, bytes.Repeat([]byte("x"), tt.prefill), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			data := randomBytes(tt.n, 3)
			err = pario.WriteBuffersAt(context.Background(), f, tt.off, splitIrregular(data, 5), pario.Options{Workers: 3, ChunkSize: cs})
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]byte, tt.wantSize)
			copy(want, bytes.Repeat([]byte("x"), tt.prefill))
			if tt.n > 0 {
				copy(want[tt.off:], data)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("file is %d bytes and differs from the expected %d", len(got), len(want))
			}
		})
	}
}

// TestCopyKeepsLongerTail checks the documented behaviour that Copy does not
// truncate dst.
func TestCopyKeepsLongerTail(t *testing.T) {
	src := randomBytes(300, 1)
	w := &fakeWriter{data: bytes.Repeat([]byte("y"), 500)}
	if err := pario.Copy(context.Background(), w, bytes.NewReader(src), 300, pario.Options{ChunkSize: 64}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w.data[:300], src) || !bytes.Equal(w.data[300:], bytes.Repeat([]byte("y"), 200)) {
		t.Error("Copy changed bytes outside [0, size) or did not copy [0, size)")
	}
}

// TestReadIntoOffset reads ranges of a real file that start and end inside
// and on chunk boundaries, with more workers than chunks too, into the
// middle of a larger buffer of other bytes: the range is read, and the bytes
// around it are untouched.
func TestReadIntoOffset(t *testing.T) {
	const cs = 64
	data := randomBytes(10*cs+7, 11)
	size := int64(len(data))
	path := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ranges := []struct{ off, n int64 }{
		{0, 0}, {5, 0}, {size, 0}, {size + 100, 0}, // empty, even past the end
		{1, cs - 1}, {cs - 1, 2}, {cs, cs}, {cs + 1, cs},
		{3, 5*cs + 2}, {7, size - 7}, {size - 1, 1}, {0, size},
	}
	const guard = 9
	for _, rg := range ranges {
		for _, w := range []int{1, 2, 4, 64} {
			t.Run(fmt.Sprintf("off=%d/n=%d/workers=%d", rg.off, rg.n, w), func(t *testing.T) {
				mem := bytes.Repeat([]byte{0xa5}, int(rg.n)+2*guard)
				buf := mem[guard : guard+rg.n]
				if err := pario.ReadInto(context.Background(), f, buf, rg.off, pario.Options{Workers: w, ChunkSize: cs}); err != nil {
					t.Fatal(err)
				}
				if rg.n > 0 && !bytes.Equal(buf, data[rg.off:rg.off+rg.n]) {
					t.Errorf("read bytes differ from the file's [%d, %d)", rg.off, rg.off+rg.n)
				}
				if !bytes.Equal(mem[:guard], bytes.Repeat([]byte{0xa5}, guard)) ||
					!bytes.Equal(mem[guard+rg.n:], bytes.Repeat([]byte{0xa5}, guard)) {
					t.Error("bytes outside buf changed")
				}
			})
		}
	}
}

// TestReadIntoEmpty checks that an empty buffer makes no call into the
// file, wherever it points.
func TestReadIntoEmpty(t *testing.T) {
	r := &fakeReader{data: make([]byte, 10)}
	for _, off := range []int64{0, 10, 1 << 40} {
		if err := pario.ReadInto(context.Background(), r, nil, off, pario.Options{Workers: 4}); err != nil {
			t.Errorf("off %d: %v", off, err)
		}
	}
	if n := r.calls.Load(); n != 0 {
		t.Errorf("%d reads for an empty buffer", n)
	}
}

// TestReadIntoShort reads a range that runs past the end of the file: the
// error wraps io.ErrUnexpectedEOF and names the file offset where the
// bytes ran out.
func TestReadIntoShort(t *testing.T) {
	const cs = 16
	data := randomBytes(10*cs, 12)
	for _, w := range []int{1, 4} {
		for _, off := range []int64{0, 3, 9*cs + 5} {
			t.Run(fmt.Sprintf("off=%d/workers=%d", off, w), func(t *testing.T) {
				buf := make([]byte, int64(len(data))-off+1)
				err := pario.ReadInto(context.Background(), bytes.NewReader(data), buf, off, pario.Options{Workers: w, ChunkSize: cs})
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
				}
				if want := fmt.Sprintf("pario: read at offset %d: ", len(data)); !strings.HasPrefix(err.Error(), want) {
					t.Errorf("err = %q, want prefix %q", err, want)
				}
			})
		}
	}
}

// TestReadIntoError is TestReadError at a non-zero offset: the failing
// chunk's file offset comes back, and the other workers stop.
func TestReadIntoError(t *testing.T) {
	const (
		cs     = 16
		chunks = 4096
		base   = 5
	)
	for _, w := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("workers=%d", w), func(t *testing.T) {
			failOff := int64(base + (w-1)*cs)
			f := newFault(failOff, w-1)
			r := &fakeReader{data: randomBytes(base+cs*chunks, 2), fault: f}
			ctx := pario.WithFailHook(context.Background(), f.open)
			err := pario.ReadInto(ctx, r, make([]byte, cs*chunks), base, pario.Options{Workers: w, ChunkSize: cs})
			checkInjectedStop(t, err, failOff, r, w)
		})
	}
}

// checkInjectedStop checks that a read by w workers failed with the
// injected error at failOff and that the workers stopped there: none is
// still inside a ReadAt, and none started one after its first.
func checkInjectedStop(t *testing.T, err error, failOff int64, r *fakeReader, w int) {
	t.Helper()
	if !errors.Is(err, errInjected) {
		t.Fatalf("err = %v, want the injected error", err)
	}
	if want := fmt.Sprintf("pario: read at offset %d: ", failOff); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %q, want prefix %q", err, want)
	}
	r.checkIdle(t)
	if n := r.calls.Load(); n != int64(w) {
		t.Errorf("%d reads, want %d (one per worker): the others did not stop", n, w)
	}
}

// TestShortRead gives every reading function a file one byte shorter than
// the size it is told.
func TestShortRead(t *testing.T) {
	const cs = 64
	for _, size := range []int64{1, cs - 1, cs, cs + 1, 10 * cs} {
		for _, op := range readOps {
			for _, w := range []int{1, 4} {
				t.Run(fmt.Sprintf("%s/size=%d/workers=%d", op.name, size, w), func(t *testing.T) {
					r := bytes.NewReader(randomBytes(int(size-1), 1))
					_, err := op.run(context.Background(), r, size, pario.Options{Workers: w, ChunkSize: cs})
					if !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
					}
					if want := fmt.Sprintf("pario: read at offset %d: ", size-1); !strings.HasPrefix(err.Error(), want) {
						t.Errorf("err = %q, want prefix %q", err, want)
					}
				})
			}
		}
	}
}

// noProgressReader returns (0, nil) from every ReadAt, breaking the
// io.ReaderAt contract.
type noProgressReader struct{}

func (noProgressReader) ReadAt([]byte, int64) (int, error) { return 0, nil }

func TestNoProgress(t *testing.T) {
	for _, op := range readOps {
		_, err := op.run(context.Background(), noProgressReader{}, 10, pario.Options{})
		if !errors.Is(err, io.ErrNoProgress) {
			t.Errorf("%s: err = %v, want io.ErrNoProgress", op.name, err)
		}
	}
}

// TestReadError injects a failure in one ReadAt while every other worker
// is held inside a ReadAt of its own until the failure has been recorded:
// the injected error comes back with its offset, the held workers start no
// further read, and none is still running when the call returns.
func TestReadError(t *testing.T) {
	const (
		cs     = 16
		chunks = 4096
		size   = cs * chunks
	)
	for _, op := range readOps {
		for _, w := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", op.name, w), func(t *testing.T) {
				// Each worker claims one of the first w chunks and is held
				// there, so the failing chunk must be among them.
				failOff := int64((w - 1) * cs)
				f := newFault(failOff, w-1)
				r := &fakeReader{data: randomBytes(size, 2), fault: f}
				ctx := pario.WithFailHook(context.Background(), f.open)
				_, err := op.run(ctx, r, size, pario.Options{Workers: w, ChunkSize: cs})
				checkInjectedStop(t, err, failOff, r, w)
				if n := r.maxInflight.Load(); n != int64(w) {
					t.Errorf("at most %d reads at once, want %d", n, w)
				}
			})
		}
	}
}

// TestWriteError injects a failure in one WriteAt, as TestReadError does for
// reads; the file must not be synced after a failed write.
func TestWriteError(t *testing.T) {
	const (
		cs     = 16
		chunks = 4096
		size   = cs * chunks
	)
	type writeOp struct {
		name string
		run  func(ctx context.Context, w *fakeWriter, opts pario.Options) error
	}
	data := randomBytes(size, 4)
	ops := []writeOp{
		{"WriteBuffers", func(ctx context.Context, w *fakeWriter, opts pario.Options) error {
			return pario.WriteBuffers(ctx, w, [][]byte{data}, opts)
		}},
		{"Copy", func(ctx context.Context, w *fakeWriter, opts pario.Options) error {
			return pario.Copy(ctx, w, bytes.NewReader(data), size, opts)
		}},
	}
	for _, op := range ops {
		for _, workers := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", op.name, workers), func(t *testing.T) {
				failOff := int64((workers - 1) * cs)
				f := newFault(failOff, workers-1)
				w := &fakeWriter{data: make([]byte, size), fault: f}
				ctx := pario.WithFailHook(context.Background(), f.open)
				err := op.run(ctx, w, pario.Options{Workers: workers, ChunkSize: cs})
				if !errors.Is(err, errInjected) {
					t.Fatalf("err = %v, want the injected error", err)
				}
				if want := fmt.Sprintf("pario: write at offset %d: ", failOff); !strings.HasPrefix(err.Error(), want) {
					t.Errorf("err = %q, want prefix %q", err, want)
				}
				w.checkIdle(t)
				if n := w.calls.Load(); n != int64(workers) {
					t.Errorf("%d writes, want %d (one per worker): the others did not stop", n, workers)
				}
				if n := w.syncs.Load(); n != 0 {
					t.Errorf("Sync called %d times after a failed write", n)
				}
			})
		}
	}
}

func TestShortWrite(t *testing.T) {
	w := &fakeWriter{data: make([]byte, 100), short: true}
	err := pario.WriteBuffers(context.Background(), w, [][]byte{randomBytes(100, 1)}, pario.Options{ChunkSize: 30})
	if !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("err = %v, want io.ErrShortWrite", err)
	}
	if w.syncs.Load() != 0 {
		t.Error("Sync called after a short write")
	}
}

func TestSync(t *testing.T) {
	errSync := errors.New("sync failed")
	data := randomBytes(1000, 9)
	tests := []struct {
		name      string
		opts      pario.Options
		syncErr   error
		bufs      [][]byte
		wantSyncs int64
	}{
		{"default", pario.Options{ChunkSize: 100}, nil, [][]byte{data}, 1},
		{"empty", pario.Options{}, nil, nil, 1},
		{"NoSync", pario.Options{ChunkSize: 100, NoSync: true}, nil, [][]byte{data}, 0},
		{"error", pario.Options{ChunkSize: 100}, errSync, [][]byte{data}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, op := range []string{"WriteBuffers", "Copy"} {
				w := &fakeWriter{data: make([]byte, len(data)), syncErr: tt.syncErr}
				var err error
				if op == "WriteBuffers" {
					err = pario.WriteBuffers(context.Background(), w, tt.bufs, tt.opts)
				} else {
					joined := bytes.Join(tt.bufs, nil)
					err = pario.Copy(context.Background(), w, bytes.NewReader(joined), int64(len(joined)), tt.opts)
				}
				if !errors.Is(err, tt.syncErr) || (tt.syncErr == nil) != (err == nil) {
					t.Errorf("%s: err = %v, want %v", op, err, tt.syncErr)
				}
				if n := w.syncs.Load(); n != tt.wantSyncs {
					t.Errorf("%s: %d Syncs, want %d", op, n, tt.wantSyncs)
				}
			}
		})
	}
}

// TestContextCancelled checks that a context cancelled before the call
// stops every function before it touches the file.
func TestContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opts := pario.Options{Workers: 4, ChunkSize: 16}
	for _, op := range readOps {
		r := &fakeReader{data: make([]byte, 1000)}
		if _, err := op.run(ctx, r, 1000, opts); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", op.name, err)
		}
		if n := r.calls.Load(); n != 0 {
			t.Errorf("%s: %d reads after cancellation", op.name, n)
		}
	}
	w := &fakeWriter{data: make([]byte, 1000)}
	if err := pario.WriteBuffers(ctx, w, [][]byte{make([]byte, 1000)}, opts); !errors.Is(err, context.Canceled) {
		t.Errorf("WriteBuffers: err = %v, want context.Canceled", err)
	}
	if n := w.calls.Load() + w.syncs.Load(); n != 0 {
		t.Errorf("WriteBuffers: %d writes or syncs after cancellation", n)
	}
	dir := t.TempDir()
	if err := pario.WritePath(ctx, filepath.Join(dir, "a"), nil, 0o600, opts); !errors.Is(err, context.Canceled) {
		t.Errorf("WritePath: err = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WritePath created a file after cancellation: %v", err)
	}
}

// TestContextCancelMidway cancels the context from inside the k-th I/O
// call. Once cancel has returned, at most one more call per other worker may
// start (one that had already passed its check), so at most k+w-1 calls
// happen in all.
func TestContextCancelMidway(t *testing.T) {
	const (
		cs     = 16
		chunks = 1000
		size   = cs * chunks
		k      = 10
	)
	for _, op := range readOps {
		for _, w := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", op.name, w), func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				f := newFault(-1, 0)
				f.onCall = func(n int64) {
					if n == k {
						cancel()
					}
				}
				r := &fakeReader{data: make([]byte, size), fault: f}
				_, err := op.run(ctx, r, size, pario.Options{Workers: w, ChunkSize: cs})
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want context.Canceled", err)
				}
				r.checkIdle(t)
				if n, limit := r.calls.Load(), int64(k+w-1); n > limit {
					t.Errorf("%d reads, want at most %d", n, limit)
				}
			})
		}
	}
	t.Run("WriteBuffers", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f := newFault(-1, 0)
		f.onCall = func(n int64) {
			if n == k {
				cancel()
			}
		}
		const w = 4
		fw := &fakeWriter{data: make([]byte, size), fault: f}
		err := pario.WriteBuffers(ctx, fw, [][]byte{make([]byte, size)}, pario.Options{Workers: w, ChunkSize: cs})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		fw.checkIdle(t)
		if n, limit := fw.calls.Load(), int64(k+w-1); n > limit {
			t.Errorf("%d writes, want at most %d", n, limit)
		}
		if fw.syncs.Load() != 0 {
			t.Error("Sync called after cancellation")
		}
	})
}

// TestStreamCallback checks that an error or a cancellation from fn stops
// Stream at once and that fn's error comes back unchanged.
func TestStreamCallback(t *testing.T) {
	errStop := errors.New("stop")
	const stopAt = 3
	for _, w := range []int{1, 2, 4} {
		for _, cancelIt := range []bool{false, true} {
			t.Run(fmt.Sprintf("workers=%d/cancel=%v", w, cancelIt), func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				r := &fakeReader{data: make([]byte, 1000)}
				calls := 0
				err := pario.Stream(ctx, r, 1000, pario.Options{Workers: w, ChunkSize: 10}, func(int64, []byte) error {
					calls++
					if calls == stopAt {
						if cancelIt {
							cancel()
							return nil
						}
						return errStop
					}
					return nil
				})
				want := errStop
				if cancelIt {
					want = context.Canceled
				}
				if err != want {
					t.Errorf("err = %v, want %v", err, want)
				}
				if calls != stopAt {
					t.Errorf("fn called %d times, want %d", calls, stopAt)
				}
				r.checkIdle(t)
			})
		}
	}
}

// TestStreamBoundedMemory checks that Stream cycles through at most
// 2*Workers buffers and hands out chunks that cannot be appended into the
// next one.
func TestStreamBoundedMemory(t *testing.T) {
	const cs = 32
	data := randomBytes(100*cs+5, 8)
	for _, w := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("workers=%d", w), func(t *testing.T) {
			seen := map[*byte]bool{}
			var got []byte
			err := pario.Stream(context.Background(), bytes.NewReader(data), int64(len(data)),
				pario.Options{Workers: w, ChunkSize: cs}, func(off int64, chunk []byte) error {
					if cap(chunk) != len(chunk) {
						return fmt.Errorf("chunk at %d: cap %d > len %d", off, cap(chunk), len(chunk))
					}
					seen[&chunk[:1][0]] = true
					got = append(got, chunk...)
					clear(chunk) // allowed: the chunk is Stream's to reuse
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Error("streamed bytes differ from the file")
			}
			if len(seen) > 2*w {
				t.Errorf("%d distinct chunk buffers, want at most %d", len(seen), 2*w)
			}
		})
	}
}

// TestStreamCallbackPanic checks that a panic in fn reaches the caller only
// after Stream's workers have exited.
func TestStreamCallbackPanic(t *testing.T) {
	r := &fakeReader{data: make([]byte, 1000)}
	defer func() {
		if recover() == nil {
			t.Error("the panic in fn did not reach the caller")
		}
		r.checkIdle(t)
	}()
	_ = pario.Stream(context.Background(), r, 1000, pario.Options{Workers: 4, ChunkSize: 10}, func(int64, []byte) error {
		panic("boom")
	})
}
