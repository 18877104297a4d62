package pario

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// ReadPath reads the named file with ReadFull, using its size at open time,
// and returns its contents; the slice belongs to the caller. It is the
// parallel counterpart of os.ReadFile. A file that shrinks during the call
// gives an error wrapping io.ErrUnexpectedEOF; bytes appended during the
// call are not read. Safe for concurrent use.
func ReadPath(ctx context.Context, name string, opts Options) ([]byte, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return ReadFull(ctx, f, fi.Size(), opts)
}

// WritePath writes the concatenation of bufs to the named file with
// WriteBuffers, creating it with permission perm (before umask) if needed
// and truncating it otherwise, as os.WriteFile does. Unless Options.NoSync,
// it syncs the file and then its parent directory, so on a nil return both
// the data and the directory entry are durable. On error the file may exist
// with partial contents; WritePath does not remove it. WritePath only reads
// bufs and keeps no reference to them. Safe for concurrent use on different
// names.
func WritePath(ctx context.Context, name string, bufs [][]byte, perm os.FileMode, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	err = WriteBuffers(ctx, f, bufs, opts)
	return finish(f, name, err, opts)
}

// CopyPath copies the file named src to the file named dst with Copy,
// creating dst with src's permission bits (before umask) or truncating it.
// It copies src's size at open time. Unless Options.NoSync, it syncs dst and
// then dst's parent directory. On error dst may exist with partial contents;
// CopyPath does not remove it. Safe for concurrent use on different dst
// names.
func CopyPath(ctx context.Context, dst, src string, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	err = Copy(ctx, out, in, fi.Size(), opts)
	return finish(out, dst, err, opts)
}

// finish closes f after a write with result err and, on success and unless
// opts.NoSync, syncs the directory holding name.
func finish(f *os.File, name string, err error, opts Options) error {
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil || opts.NoSync {
		return err
	}
	return syncDir(filepath.Dir(name))
}

// syncDir makes the entries of dir durable. Windows cannot fsync a
// directory; there it does nothing.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pario: sync directory %s: %w", dir, err)
	}
	return nil
}
