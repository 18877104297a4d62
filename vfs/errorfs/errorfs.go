// Package errorfs wraps a vfs.FS and injects faults into it: failing
// operations of a chosen kind (at once or after n successes) and a limited
// amount of free space that turns writes into short writes failing with
// ENOSPC. It lets tests check that the engine stops and reports I/O errors
// instead of acknowledging lost data.
//
// A typical use wraps a memory file system, so that a fault can be followed
// by a simulated crash:
//
//	mem := vfs.NewMem()
//	efs := errorfs.New(mem)
//	efs.InjectAfter(errorfs.OpSync, 3, syscall.EIO) // the 4th fsync fails
//	// ... run the engine on efs, then inspect mem.Crash(...)
//
// Injected errors are returned wrapped the way the os package wraps its
// errors: *fs.PathError with the operation and file name (*os.LinkError for
// Rename and Link), so errors.Is(err, syscall.EIO) is true when the injected
// error is syscall.EIO. An operation failed by injection does not reach the
// wrapped file system and changes nothing.
package errorfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/caskade/caskade/vfs"
)

// Op is a kind of file system operation that a fault can target.
type Op int

// The operation kinds. Each FS or File method belongs to exactly one.
const (
	OpCreate   Op = iota + 1 // FS.Create
	OpOpen                   // FS.Open, FS.OpenReadWrite
	OpRead                   // File.Read, File.ReadAt
	OpWrite                  // File.Write, File.WriteAt
	OpSync                   // File.Sync
	OpTruncate               // File.Truncate
	OpStat                   // FS.Stat, File.Stat
	OpClose                  // File.Close
	OpRemove                 // FS.Remove
	OpRename                 // FS.Rename
	OpMkdirAll               // FS.MkdirAll
	OpList                   // FS.List
	OpSyncDir                // FS.SyncDir
	OpLock                   // FS.Lock
	OpLink                   // FS.Link
	numOps
)

var opNames = [numOps]string{
	OpCreate: "create", OpOpen: "open", OpRead: "read", OpWrite: "write",
	OpSync: "sync", OpTruncate: "truncate", OpStat: "stat", OpClose: "close",
	OpRemove: "remove", OpRename: "rename", OpMkdirAll: "mkdirall",
	OpList: "list", OpSyncDir: "syncdir", OpLock: "lock", OpLink: "link",
}

// String returns the operation kind's lower-case name, such as "sync".
func (op Op) String() string {
	if op > 0 && op < numOps {
		return opNames[op]
	}
	return fmt.Sprintf("errorfs.Op(%d)", int(op))
}

// FS is a vfs.FS that passes every operation to an inner file system unless
// a fault applies. Create one with New. All methods, and the methods of the
// files it returns, are safe for concurrent use; faults can be changed while
// other goroutines use the file system.
//
// Byte slices are passed through to the inner file system; FS keeps no
// reference to them.
type FS struct {
	inner vfs.FS

	mu     sync.Mutex // guards faults and counts
	faults [numOps]func(name string) error
	counts [numOps]int64

	spaceMu sync.Mutex // guards space; held across space-limited operations
	space   int64      // bytes left; < 0: unlimited
}

var _ vfs.FS = (*FS)(nil)

// New returns a file system that passes everything to inner, with no faults
// and unlimited space. Files must be opened through the returned FS for its
// faults to apply to them.
func New(inner vfs.FS) *FS {
	return &FS{inner: inner, space: -1}
}

// Inject makes every later operation of kind op fail with err. A nil err
// removes the fault for op.
func (e *FS) Inject(op Op, err error) { e.InjectAfter(op, 0, err) }

// InjectAfter lets the next n operations of kind op succeed and makes every
// one after them fail with err. A nil err removes the fault for op.
func (e *FS) InjectAfter(op Op, n int, err error) {
	if err == nil {
		e.InjectFunc(op, nil)
		return
	}
	var left atomic.Int64
	left.Store(int64(n))
	e.InjectFunc(op, func(string) error {
		if left.Add(-1) >= 0 {
			return nil
		}
		return err
	})
}

// InjectFunc installs fn as the fault for kind op, replacing any earlier
// one: every later operation of that kind first calls fn with the name of
// the file (for Rename and Link, the old name) and fails with the error fn
// returns, if it is not nil. A nil fn removes the fault. fn may be called
// from several goroutines at once, must not block, and may call methods of
// the FS. It can choose files by name, fail only once, and so on.
func (e *FS) InjectFunc(op Op, fn func(name string) error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults[op] = fn
}

// SetSpace says the file system has n more bytes of free space. Writes and
// truncations that grow files use it up; a write that does not fit writes
// the bytes that fit (a short write) and returns an error for which
// errors.Is(err, syscall.ENOSPC) is true; a growing Truncate that does not
// fit fails whole. Truncating a file to a smaller size, removing it, or
// replacing it with Create or Rename gives its bytes back. Bytes written
// before SetSpace are not counted. n < 0 means unlimited space, the initial
// state.
//
// Space accounting uses the inner file's size (Stat) before each write, so
// data written past the end of a file also uses up the gap before it.
func (e *FS) SetSpace(n int64) {
	e.spaceMu.Lock()
	defer e.spaceMu.Unlock()
	e.space = max(n, -1)
}

// Space returns the free space left, or -1 if it is unlimited.
func (e *FS) Space() int64 {
	e.spaceMu.Lock()
	defer e.spaceMu.Unlock()
	return e.space
}

// FreeSpace implements vfs.FreeSpacer: the space left when SetSpace
// limits it, or else what the inner file system reports.
func (e *FS) FreeSpace(dir string) (int64, error) {
	if n := e.Space(); n >= 0 {
		return n, nil
	}
	if n, ok := vfs.FreeSpace(e.inner, dir); ok {
		return n, nil
	}
	return 0, pathErr("statfs", dir, vfs.ErrUnsupported)
}

// Reset removes every fault and makes space unlimited. It does not reset
// the counts.
func (e *FS) Reset() {
	e.mu.Lock()
	e.faults = [numOps]func(string) error{}
	e.mu.Unlock()
	e.SetSpace(-1)
}

// Count returns how many operations of kind op have been called through
// this FS and its files so far, including those that failed.
func (e *FS) Count(op Op) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[op]
}

// fault counts one operation of kind op and returns the injected error, if
// any.
func (e *FS) fault(op Op, name string) error {
	e.mu.Lock()
	e.counts[op]++
	fn := e.faults[op]
	e.mu.Unlock()
	if fn == nil {
		return nil
	}
	return fn(name)
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// limited locks spaceMu and reports whether space is limited. If it is not,
// spaceMu is unlocked again; otherwise the caller must unlock it.
func (e *FS) limited() bool {
	e.spaceMu.Lock()
	if e.space < 0 {
		e.spaceMu.Unlock()
		return false
	}
	return true
}

// sizeOf returns the size of the named regular file, or 0 if it cannot be
// determined (it does not exist, say). The caller holds spaceMu.
func (e *FS) sizeOf(name string) int64 {
	info, err := e.inner.Stat(name)
	if err != nil || !info.Mode().IsRegular() {
		return 0
	}
	return info.Size()
}

// Create implements vfs.FS.
func (e *FS) Create(name string) (vfs.File, error) {
	if err := e.fault(OpCreate, name); err != nil {
		return nil, pathErr("create", name, err)
	}
	var freed int64
	if e.limited() {
		defer e.spaceMu.Unlock()
		freed = e.sizeOf(name)
	}
	f, err := e.inner.Create(name)
	if err != nil {
		return nil, err
	}
	if freed != 0 { // limited: spaceMu is held
		e.space += freed
	}
	return &file{fs: e, inner: f, name: name}, nil
}

// Open implements vfs.FS.
func (e *FS) Open(name string) (vfs.File, error) {
	if err := e.fault(OpOpen, name); err != nil {
		return nil, pathErr("open", name, err)
	}
	f, err := e.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &file{fs: e, inner: f, name: name}, nil
}

// OpenReadWrite implements vfs.FS.
func (e *FS) OpenReadWrite(name string) (vfs.File, error) {
	if err := e.fault(OpOpen, name); err != nil {
		return nil, pathErr("open", name, err)
	}
	f, err := e.inner.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return &file{fs: e, inner: f, name: name}, nil
}

// Remove implements vfs.FS.
func (e *FS) Remove(name string) error {
	if err := e.fault(OpRemove, name); err != nil {
		return pathErr("remove", name, err)
	}
	var freed int64
	if e.limited() {
		defer e.spaceMu.Unlock()
		freed = e.sizeOf(name)
	}
	if err := e.inner.Remove(name); err != nil {
		return err
	}
	if freed != 0 { // limited: spaceMu is held
		e.space += freed
	}
	return nil
}

// Rename implements vfs.FS.
func (e *FS) Rename(oldname, newname string) error {
	if err := e.fault(OpRename, oldname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	var freed int64
	if e.limited() {
		defer e.spaceMu.Unlock()
		if filepath.Clean(oldname) != filepath.Clean(newname) {
			freed = e.sizeOf(newname)
		}
	}
	if err := e.inner.Rename(oldname, newname); err != nil {
		return err
	}
	if freed != 0 { // limited: spaceMu is held
		e.space += freed
	}
	return nil
}

// MkdirAll implements vfs.FS. Directories use no space.
func (e *FS) MkdirAll(dir string, perm os.FileMode) error {
	if err := e.fault(OpMkdirAll, dir); err != nil {
		return pathErr("mkdirall", dir, err)
	}
	return e.inner.MkdirAll(dir, perm)
}

// List implements vfs.FS.
func (e *FS) List(dir string) ([]string, error) {
	if err := e.fault(OpList, dir); err != nil {
		return nil, pathErr("list", dir, err)
	}
	return e.inner.List(dir)
}

// Stat implements vfs.FS.
func (e *FS) Stat(name string) (os.FileInfo, error) {
	if err := e.fault(OpStat, name); err != nil {
		return nil, pathErr("stat", name, err)
	}
	return e.inner.Stat(name)
}

// SyncDir implements vfs.FS.
func (e *FS) SyncDir(dir string) error {
	if err := e.fault(OpSyncDir, dir); err != nil {
		return pathErr("syncdir", dir, err)
	}
	return e.inner.SyncDir(dir)
}

// Lock implements vfs.FS. The returned Closer is the inner file system's.
func (e *FS) Lock(name string) (io.Closer, error) {
	if err := e.fault(OpLock, name); err != nil {
		return nil, pathErr("lock", name, err)
	}
	return e.inner.Lock(name)
}

// RLock implements vfs.FS. The returned Closer is the inner file system's.
func (e *FS) RLock(name string) (io.Closer, error) {
	if err := e.fault(OpLock, name); err != nil {
		return nil, pathErr("lock", name, err)
	}
	return e.inner.RLock(name)
}

// Link implements vfs.FS.
func (e *FS) Link(oldname, newname string) error {
	if err := e.fault(OpLink, oldname); err != nil {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
	}
	return e.inner.Link(oldname, newname)
}

// file is a vfs.File opened through an FS.
type file struct {
	fs    *FS
	inner vfs.File
	name  string

	mu  sync.Mutex // guards pos; serializes Read and Write
	pos int64      // the inner file's position, for space accounting
}

func (f *file) Read(p []byte) (int, error) {
	if err := f.fs.fault(OpRead, f.name); err != nil {
		return 0, pathErr("read", f.name, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.inner.Read(p)
	f.pos += int64(n)
	return n, err
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.fault(OpRead, f.name); err != nil {
		return 0, pathErr("readat", f.name, err)
	}
	return f.inner.ReadAt(p, off)
}

func (f *file) Write(p []byte) (int, error) {
	if err := f.fs.fault(OpWrite, f.name); err != nil {
		return 0, pathErr("write", f.name, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.write("write", p, f.pos, f.inner.Write)
	f.pos += int64(n)
	return n, err
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.fault(OpWrite, f.name); err != nil {
		return 0, pathErr("writeat", f.name, err)
	}
	return f.write("writeat", p, off, func(b []byte) (int, error) { return f.inner.WriteAt(b, off) })
}

// write writes p at off with fn, within the free space.
func (f *file) write(op string, p []byte, off int64, fn func([]byte) (int, error)) (int, error) {
	e := f.fs
	if !e.limited() {
		return fn(p)
	}
	defer e.spaceMu.Unlock()
	info, err := f.inner.Stat()
	if err != nil {
		return 0, err
	}
	size := info.Size()
	fit := int64(len(p))
	if grow := off + int64(len(p)) - size; grow > e.space {
		fit = max(0, int64(len(p))-(grow-e.space))
	}
	var n int
	if fit > 0 {
		n, err = fn(p[:fit])
	}
	if end := off + int64(n); end > size {
		e.space = max(0, e.space-(end-size))
	}
	if err == nil && n < len(p) {
		err = pathErr(op, f.name, syscall.ENOSPC)
	}
	return n, err
}

func (f *file) Sync() error {
	if err := f.fs.fault(OpSync, f.name); err != nil {
		return pathErr("sync", f.name, err)
	}
	return f.inner.Sync()
}

func (f *file) Truncate(size int64) error {
	if err := f.fs.fault(OpTruncate, f.name); err != nil {
		return pathErr("truncate", f.name, err)
	}
	e := f.fs
	if !e.limited() {
		return f.inner.Truncate(size)
	}
	defer e.spaceMu.Unlock()
	info, err := f.inner.Stat()
	if err != nil {
		return err
	}
	if size-info.Size() > e.space {
		return pathErr("truncate", f.name, syscall.ENOSPC)
	}
	if err := f.inner.Truncate(size); err != nil {
		return err
	}
	e.space -= size - info.Size()
	return nil
}

func (f *file) Stat() (os.FileInfo, error) {
	if err := f.fs.fault(OpStat, f.name); err != nil {
		return nil, pathErr("stat", f.name, err)
	}
	return f.inner.Stat()
}

// Close closes the inner file even when a fault is injected (a failing
// close(2) still releases the descriptor) and then returns the fault.
func (f *file) Close() error {
	ferr := f.fs.fault(OpClose, f.name)
	err := f.inner.Close()
	switch {
	case ferr == nil:
		return err
	case err == nil:
		return pathErr("close", f.name, ferr)
	default:
		return errors.Join(pathErr("close", f.name, ferr), err)
	}
}
