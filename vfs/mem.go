package vfs

import (
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// maxMemFileSize bounds the size of a MemFS file, so that a write at an
// absurd offset fails with EFBIG instead of exhausting memory.
const maxMemFileSize = 1 << 34

// MemFS is an in-memory FS that simulates what a power loss would leave
// behind. Create one with NewMem. All methods, and the methods of the files
// it returns, are safe for concurrent use.
//
// # Durability model
//
// Every file has current bytes (what reads see) and durable bytes (the
// current bytes as of its last successful File.Sync). Write, WriteAt and
// Truncate change only the current bytes; Sync copies current to durable.
//
// Every directory has a current set of entries and a durable set (the
// current set as of its last SyncDir). Create (of a new file), Rename,
// Remove and Lock (when it creates its file) change the current set at once;
// they become durable only when the parent directory is synced with SyncDir.
// Entries refer to files, not copies, so a synced file that is renamed
// without a SyncDir survives a crash under its old name, with its synced
// bytes.
//
// Directories made by MkdirAll are durable at once: their entries are added
// to both the current and the durable set of their parent. (The OS file
// system matches this by fsyncing the parent of each directory it creates.)
//
// Crash returns a new MemFS holding only what is durable, optionally with
// torn writes; SetCrashAfter makes the file system die at a chosen mutating
// operation, so a test can crash a workload at every point in turn.
//
// # Names
//
// A MemFS has a single root. Names are cleaned with filepath.Clean and
// resolved from the root whether or not they are absolute, so "/db/x",
// "db/x" and "db/../db/x" name the same file. A parent directory must exist
// (MkdirAll) before a file can be created in it.
//
// # Files
//
// File handles behave like POSIX file descriptors: they keep working after
// the file is renamed or removed, and handles of one file share its bytes.
// Read and Write use a per-handle position starting at 0 (there is no
// O_APPEND). Reading at or after the end returns io.EOF, as os.File does.
// Write, WriteAt and Truncate on a handle from Open fail with EBADF. Files
// cannot be larger than 16 GiB (EFBIG). Open of a directory fails with
// EISDIR (use List and SyncDir for directories).
//
// Byte slices passed to Write and WriteAt are copied; the caller keeps
// ownership. Read and ReadAt copy into the caller's slice. Sync does not copy
// the file (current and durable bytes share memory copy-on-write) and
// appends are amortized O(len); the first overwrite of bytes below the
// synced length after a Sync or Crash copies the file once.
//
// Link is not supported: it returns an *os.LinkError wrapping ErrUnsupported.
//
// Errors are *fs.PathError (*os.LinkError for Rename and Link) wrapping
// syscall errnos, as the os package returns, so errors.Is(err,
// fs.ErrNotExist) works. Once the crash point is reached every method
// returns an error wrapping ErrCrashed.
type MemFS struct {
	// mu guards the namespace (every memDir's maps), ops, crashAt and
	// locks, and serializes every mutating operation, so that each one is
	// atomic with respect to Crash and the crash point. Lock order: MemFS.mu,
	// then memHandle.mu, then memFile.mu.
	mu      sync.Mutex
	root    *memDir
	ops     int              // mutating operations performed
	crashAt int              // ops value at which the FS dies; -1: never
	locks   map[*memFile]int // -1: locked exclusively; n > 0: by n shared locks
	crashed atomic.Bool
}

// NewMem returns an empty memory file system whose root directory exists.
func NewMem() *MemFS {
	return &MemFS{root: newMemDir(0o755), crashAt: -1, locks: make(map[*memFile]int)}
}

// CrashOptions configures (*MemFS).Crash.
type CrashOptions struct {
	// Tear, if true, lets each file keep part of its unsynced tail: a file
	// whose current bytes extend beyond its durable bytes keeps the durable
	// bytes followed by a prefix of the unsynced bytes, cut at a random
	// offset chosen among the 512-byte boundaries between the durable and
	// the current length and those two lengths themselves. This models a
	// power loss in the middle of writing back an append, sector by sector.
	Tear bool
	// Rand is the source of randomness for Tear. Files are visited in a
	// fixed order, so the same seed gives the same result. If nil, a source
	// with a fixed seed is used.
	Rand *rand.Rand
}

// Crash returns a new MemFS holding what would survive a power loss at this
// instant: the durable entries of every durable directory, each file with
// its durable bytes (plus, with opts.Tear, part of its unsynced tail). A
// file reachable under several durable names shares one set of bytes in the
// result.
//
// The receiver is not changed and may keep being used; it may be crashed
// (see SetCrashAfter) or not. The result has no open files, holds no locks,
// has no crash point set and counts zero mutating operations. The two file
// systems share no mutable state.
func (m *MemFS) Crash(opts CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := opts.Rand
	if opts.Tear && r == nil {
		r = rand.New(rand.NewPCG(0, 0))
	}
	c := &crashCopier{tear: opts.Tear, rand: r, dirs: map[*memDir]*memDir{}, files: map[*memFile]*memFile{}}
	n := NewMem()
	n.root = c.dir(m.root)
	return n
}

// SetCrashAfter makes the file system die after n more mutating operations:
// the (n+1)-th mutating operation from now, and every operation after it,
// fails with an error wrapping ErrCrashed and changes nothing. n < 0
// removes the crash point. A file system that has died stays dead; use
// Crash to obtain what survived.
//
// The mutating operations are Create, MkdirAll, Remove, Rename, SyncDir and
// Lock on the MemFS, and Write, WriteAt, Truncate and Sync on its files.
// Each call counts once, whether or not it succeeds. Reads, Open,
// OpenReadWrite, Stat, List, Link and Close are not counted, but they too
// fail once the file system has died.
func (m *MemFS) SetCrashAfter(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n < 0 {
		m.crashAt = -1
	} else {
		m.crashAt = m.ops + n
	}
}

// MutatingOps returns the number of mutating operations (see SetCrashAfter)
// performed so far. A test can run a workload once, read MutatingOps, and
// then rerun it with SetCrashAfter(k) for every k below that count.
func (m *MemFS) MutatingOps() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ops
}

// Crashed reports whether the crash point set by SetCrashAfter has been
// reached.
func (m *MemFS) Crashed() bool { return m.crashed.Load() }

// mutate admits one mutating operation: it fails if the file system has died
// or dies now, and otherwise counts the operation. The caller holds m.mu.
func (m *MemFS) mutate(op, name string) error {
	if m.crashed.Load() {
		return pathErr(op, name, ErrCrashed)
	}
	if m.crashAt >= 0 && m.ops >= m.crashAt {
		m.crashed.Store(true)
		return pathErr(op, name, ErrCrashed)
	}
	m.ops++
	return nil
}

// alive fails if the file system has died.
func (m *MemFS) alive(op, name string) error {
	if m.crashed.Load() {
		return pathErr(op, name, ErrCrashed)
	}
	return nil
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Create implements FS.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutate("open", name); err != nil {
		return nil, err
	}
	dir, base, err := m.parent(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	var f *memFile
	switch n := dir.cur[base].(type) {
	case *memDir:
		return nil, pathErr("open", name, syscall.EISDIR)
	case *memFile:
		f = n
		f.mu.Lock()
		f.truncate(0)
		f.mu.Unlock()
	default:
		f = &memFile{modTime: time.Now()}
		dir.cur[base] = f
		dir.modTime = f.modTime
	}
	return &memHandle{fs: m, f: f, name: name, writable: true}, nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) { return m.open(name, false) }

// OpenReadWrite implements FS.
func (m *MemFS) OpenReadWrite(name string) (File, error) { return m.open(name, true) }

func (m *MemFS) open(name string, writable bool) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.alive("open", name); err != nil {
		return nil, err
	}
	n, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	f, ok := n.(*memFile)
	if !ok {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	return &memHandle{fs: m, f: f, name: name, writable: writable}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutate("remove", name); err != nil {
		return err
	}
	dir, base, err := m.parent(name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	switch n := dir.cur[base].(type) {
	case nil:
		return pathErr("remove", name, syscall.ENOENT)
	case *memDir:
		if len(n.cur) > 0 {
			return pathErr("remove", name, syscall.ENOTEMPTY)
		}
	}
	delete(dir.cur, base)
	dir.modTime = time.Now()
	return nil
}

// Rename implements FS. Files and directories can be renamed; a file
// replaces an existing file, a directory replaces an existing empty
// directory.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	linkErr := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	if err := m.mutate("rename", oldname); err != nil {
		return linkErr(ErrCrashed)
	}
	odir, obase, err := m.parent(oldname)
	if err != nil {
		return linkErr(err)
	}
	ndir, nbase, err := m.parent(newname)
	if err != nil {
		return linkErr(err)
	}
	node := odir.cur[obase]
	if node == nil {
		return linkErr(syscall.ENOENT)
	}
	target := ndir.cur[nbase]
	if target == node {
		return nil // same entry (or another name of the same file)
	}
	switch node.(type) {
	case *memFile:
		if _, isDir := target.(*memDir); isDir {
			return linkErr(syscall.EISDIR)
		}
	case *memDir:
		// Refuse to move a directory into itself.
		op, np := splitPath(oldname), splitPath(newname)
		if len(np) > len(op) && slices.Equal(np[:len(op)], op) {
			return linkErr(syscall.EINVAL)
		}
		switch t := target.(type) {
		case *memFile:
			return linkErr(syscall.ENOTDIR)
		case *memDir:
			if len(t.cur) > 0 {
				return linkErr(syscall.ENOTEMPTY)
			}
		}
	}
	delete(odir.cur, obase)
	ndir.cur[nbase] = node
	now := time.Now()
	odir.modTime, ndir.modTime = now, now
	return nil
}

// MkdirAll implements FS. The directories it creates are durable at once.
// perm is recorded and reported by Stat but not enforced.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutate("mkdir", dir); err != nil {
		return err
	}
	d := m.root
	for _, part := range splitPath(dir) {
		switch n := d.cur[part].(type) {
		case *memDir:
			d = n
		case *memFile:
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		default:
			nd := newMemDir(perm.Perm())
			d.cur[part] = nd
			d.durable[part] = nd
			d.modTime = nd.modTime
			d = nd
		}
	}
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.alive("open", dir); err != nil {
		return nil, err
	}
	n, err := m.lookup(dir)
	if err != nil {
		return nil, pathErr("open", dir, err)
	}
	d, ok := n.(*memDir)
	if !ok {
		return nil, pathErr("readdirent", dir, syscall.ENOTDIR)
	}
	return slices.Sorted(maps.Keys(d.cur)), nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.alive("stat", name); err != nil {
		return nil, err
	}
	n, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	return statNode(filepath.Base(name), n), nil
}

// SyncDir implements FS: the directory's current entries become its durable
// entries.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.mutate("sync", dir); err != nil {
		return err
	}
	n, err := m.lookup(dir)
	if err != nil {
		return pathErr("open", dir, err)
	}
	d, ok := n.(*memDir)
	if !ok {
		return pathErr("sync", dir, syscall.ENOTDIR)
	}
	d.durable = maps.Clone(d.cur)
	return nil
}

// Lock implements FS with a lock table private to this MemFS. A lock is
// held on the file, not the name: renaming the lock file keeps it locked.
// The returned Closer is safe for concurrent use; closing it twice returns
// an error wrapping os.ErrClosed.
func (m *MemFS) Lock(name string) (io.Closer, error) { return m.lock(name, false) }

// RLock implements FS with the lock table of Lock. It changes nothing in
// the file system (it needs the file to exist).
func (m *MemFS) RLock(name string) (io.Closer, error) { return m.lock(name, true) }

func (m *MemFS) lock(name string, shared bool) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	check := m.mutate // creating the file is a change (see SetCrashAfter)
	if shared {
		check = m.alive
	}
	if err := check("lock", name); err != nil {
		return nil, err
	}
	dir, base, err := m.parent(name)
	if err != nil {
		return nil, pathErr("lock", name, err)
	}
	var f *memFile
	switch n := dir.cur[base].(type) {
	case *memDir:
		return nil, pathErr("lock", name, syscall.EISDIR)
	case *memFile:
		f = n
	default:
		if shared {
			return nil, pathErr("lock", name, fs.ErrNotExist)
		}
		f = &memFile{modTime: time.Now()}
		dir.cur[base] = f
		dir.modTime = f.modTime
	}
	if held := m.locks[f]; held < 0 || (held > 0 && !shared) {
		return nil, pathErr("lock", name, ErrLocked)
	}
	if shared {
		m.locks[f]++
	} else {
		m.locks[f] = -1
	}
	return &memLock{fs: m, f: f, name: name, shared: shared}, nil
}

// Link implements FS. MemFS does not support hard links: Link returns an
// *os.LinkError wrapping ErrUnsupported.
func (m *MemFS) Link(oldname, newname string) error {
	err := ErrUnsupported
	if m.crashed.Load() {
		err = ErrCrashed
	}
	return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: err}
}

// splitPath turns a name into its components below the root.
func splitPath(name string) []string {
	name = name[len(filepath.VolumeName(name)):]
	sep := string(filepath.Separator)
	c := filepath.Clean(sep + name)
	if c == sep {
		return nil
	}
	return strings.Split(c[len(sep):], sep)
}

// walk returns the directory named by parts. The caller holds m.mu.
func (m *MemFS) walk(parts []string) (*memDir, error) {
	d := m.root
	for _, p := range parts {
		switch n := d.cur[p].(type) {
		case *memDir:
			d = n
		case *memFile:
			return nil, syscall.ENOTDIR
		default:
			return nil, syscall.ENOENT
		}
	}
	return d, nil
}

// parent returns the directory that holds name's entry and the entry's
// name. The caller holds m.mu.
func (m *MemFS) parent(name string) (*memDir, string, error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return nil, "", syscall.EINVAL // the root has no parent
	}
	d, err := m.walk(parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	return d, parts[len(parts)-1], nil
}

// lookup returns the node named by name. The caller holds m.mu.
func (m *MemFS) lookup(name string) (memNode, error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return m.root, nil
	}
	d, err := m.walk(parts[:len(parts)-1])
	if err != nil {
		return nil, err
	}
	n := d.cur[parts[len(parts)-1]]
	if n == nil {
		return nil, syscall.ENOENT
	}
	return n, nil
}

// memNode is the target of a directory entry: *memDir or *memFile.
type memNode interface{ isMemNode() }

func (*memDir) isMemNode()  {}
func (*memFile) isMemNode() {}

// memDir is a directory. Its maps are guarded by MemFS.mu.
type memDir struct {
	cur     map[string]memNode // entries as seen now
	durable map[string]memNode // entries as of the last SyncDir
	perm    os.FileMode
	modTime time.Time
}

func newMemDir(perm os.FileMode) *memDir {
	return &memDir{cur: map[string]memNode{}, durable: map[string]memNode{}, perm: perm, modTime: time.Now()}
}

// memFile is a file's contents (an inode).
//
// data and durable may share a backing array: bytes data[:shared] of the
// current backing array are never modified in place, because durable
// slices (of this file or of files made by Crash) may refer to them. A
// write below shared first copies data to a new array. shared only grows
// for a given array and drops to 0 when data moves to a new one.
type memFile struct {
	mu      sync.RWMutex
	data    []byte // current bytes
	durable []byte // bytes as of the last Sync; never modified in place
	shared  int
	modTime time.Time
}

// reserve prepares f.data for a write of bytes [first, end): it makes sure
// the bytes from first on may be modified in place and that f.data is at
// least end long, zero-filling any growth. The caller holds f.mu.
func (f *memFile) reserve(first, end int) {
	if end > cap(f.data) {
		nd := make([]byte, len(f.data), max(end, 2*cap(f.data)))
		copy(nd, f.data)
		f.data, f.shared = nd, 0
	} else if first < f.shared {
		nd := make([]byte, len(f.data), cap(f.data))
		copy(nd, f.data)
		f.data, f.shared = nd, 0
	}
	if end > len(f.data) {
		old := len(f.data)
		f.data = f.data[:end]
		clear(f.data[old:])
	}
}

// writeAt writes p at off. The caller holds f.mu and has checked that
// off+len(p) <= maxMemFileSize.
func (f *memFile) writeAt(p []byte, off int) {
	if len(p) == 0 {
		return
	}
	f.reserve(min(off, len(f.data)), off+len(p))
	copy(f.data[off:], p)
	f.modTime = time.Now()
}

// truncate sets the current length. The caller holds f.mu.
func (f *memFile) truncate(size int) {
	if size <= len(f.data) {
		f.data = f.data[:size]
	} else {
		f.reserve(len(f.data), size)
	}
	f.modTime = time.Now()
}

// sync makes the current bytes durable. The caller holds f.mu.
func (f *memFile) sync() {
	n := len(f.data)
	f.durable = f.data[:n:n]
	f.shared = max(f.shared, n)
}

// crashCopier builds the durable image of a MemFS for Crash.
type crashCopier struct {
	tear  bool
	rand  *rand.Rand
	dirs  map[*memDir]*memDir
	files map[*memFile]*memFile
}

// dir copies d's durable entries, recursively. Directories and files
// reachable by several paths are copied once.
func (c *crashCopier) dir(d *memDir) *memDir {
	if nd, ok := c.dirs[d]; ok {
		return nd
	}
	nd := newMemDir(d.perm)
	nd.modTime = d.modTime
	c.dirs[d] = nd
	for _, name := range slices.Sorted(maps.Keys(d.durable)) {
		var n memNode
		switch x := d.durable[name].(type) {
		case *memDir:
			n = c.dir(x)
		case *memFile:
			n = c.file(x)
		}
		nd.cur[name] = n
		nd.durable[name] = n
	}
	return nd
}

// file returns the surviving copy of f.
func (c *crashCopier) file(f *memFile) *memFile {
	if nf, ok := c.files[f]; ok {
		return nf
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	d, cur := len(f.durable), len(f.data)
	data := f.durable[:d:d] // immutable; shared safely
	if c.tear && cur > d {
		// Cut points: d, each multiple of 512 in (d, cur), and cur.
		first := (d/512 + 1) * 512
		inner := 0
		if first < cur {
			inner = (cur-1-first)/512 + 1
		}
		k := c.rand.IntN(inner + 2)
		cut := d
		switch {
		case k == inner+1:
			cut = cur
		case k > 0:
			cut = first + (k-1)*512
		}
		if cut > d {
			nd := make([]byte, cut)
			copy(nd, f.durable)
			copy(nd[d:], f.data[d:cut])
			data = nd
		}
	}
	nf := &memFile{data: data, durable: data, shared: len(data), modTime: f.modTime}
	c.files[f] = nf
	return nf
}

// memInfo implements os.FileInfo for MemFS.
type memInfo struct {
	name    string
	size    int64
	mode    os.FileMode
	modTime time.Time
}

func (i *memInfo) Name() string       { return i.name }
func (i *memInfo) Size() int64        { return i.size }
func (i *memInfo) Mode() os.FileMode  { return i.mode }
func (i *memInfo) ModTime() time.Time { return i.modTime }
func (i *memInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *memInfo) Sys() any           { return nil }

// statNode describes n. The caller holds MemFS.mu (for directories).
func statNode(name string, n memNode) os.FileInfo {
	switch x := n.(type) {
	case *memDir:
		return &memInfo{name: name, mode: os.ModeDir | x.perm, modTime: x.modTime}
	case *memFile:
		x.mu.RLock()
		defer x.mu.RUnlock()
		return &memInfo{name: name, size: int64(len(x.data)), mode: 0o644, modTime: x.modTime}
	}
	return nil
}

// memHandle is an open MemFS file.
type memHandle struct {
	fs       *MemFS
	f        *memFile
	name     string
	writable bool
	closed   atomic.Bool
	mu       sync.Mutex // guards pos
	pos      int64
}

// check fails if the file system has died or the handle is closed.
func (h *memHandle) check(op string) error {
	if h.fs.crashed.Load() {
		return pathErr(op, h.name, ErrCrashed)
	}
	if h.closed.Load() {
		return pathErr(op, h.name, os.ErrClosed)
	}
	return nil
}

// checkWrite admits a mutating operation on the handle. The caller holds
// h.fs.mu.
func (h *memHandle) checkWrite(op string) error {
	if err := h.fs.mutate(op, h.name); err != nil {
		return err
	}
	if h.closed.Load() {
		return pathErr(op, h.name, os.ErrClosed)
	}
	if !h.writable && op != "sync" {
		return pathErr(op, h.name, syscall.EBADF)
	}
	return nil
}

func (h *memHandle) Read(p []byte) (int, error) {
	if err := h.check("read"); err != nil {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.f.mu.RLock()
	defer h.f.mu.RUnlock()
	if h.pos >= int64(len(h.f.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, h.f.data[h.pos:])
	h.pos += int64(n)
	return n, nil
}

func (h *memHandle) ReadAt(p []byte, off int64) (int, error) {
	if err := h.check("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("readat", h.name, syscall.EINVAL)
	}
	h.f.mu.RLock()
	defer h.f.mu.RUnlock()
	if off >= int64(len(h.f.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *memHandle) Write(p []byte) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.checkWrite("write"); err != nil {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pos+int64(len(p)) > maxMemFileSize {
		return 0, pathErr("write", h.name, syscall.EFBIG)
	}
	h.f.mu.Lock()
	h.f.writeAt(p, int(h.pos))
	h.f.mu.Unlock()
	h.pos += int64(len(p))
	return len(p), nil
}

func (h *memHandle) WriteAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.checkWrite("writeat"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("writeat", h.name, syscall.EINVAL)
	}
	if off > maxMemFileSize-int64(len(p)) {
		return 0, pathErr("writeat", h.name, syscall.EFBIG)
	}
	h.f.mu.Lock()
	h.f.writeAt(p, int(off))
	h.f.mu.Unlock()
	return len(p), nil
}

func (h *memHandle) Truncate(size int64) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.checkWrite("truncate"); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", h.name, syscall.EINVAL)
	}
	if size > maxMemFileSize {
		return pathErr("truncate", h.name, syscall.EFBIG)
	}
	h.f.mu.Lock()
	h.f.truncate(int(size))
	h.f.mu.Unlock()
	return nil
}

func (h *memHandle) Sync() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if err := h.checkWrite("sync"); err != nil {
		return err
	}
	h.f.mu.Lock()
	h.f.sync()
	h.f.mu.Unlock()
	return nil
}

func (h *memHandle) Stat() (os.FileInfo, error) {
	if err := h.check("stat"); err != nil {
		return nil, err
	}
	return statNode(filepath.Base(h.name), h.f), nil
}

func (h *memHandle) Close() error {
	if h.closed.Swap(true) {
		return pathErr("close", h.name, os.ErrClosed)
	}
	return h.fs.alive("close", h.name)
}

// memLock is a lock held in a MemFS's lock table.
type memLock struct {
	fs       *MemFS
	f        *memFile
	name     string
	shared   bool
	released bool // guarded by fs.mu
}

func (l *memLock) Close() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if l.released {
		return pathErr("unlock", l.name, os.ErrClosed)
	}
	l.released = true
	if l.shared && l.fs.locks[l.f] > 1 {
		l.fs.locks[l.f]--
	} else {
		delete(l.fs.locks, l.f)
	}
	return l.fs.alive("unlock", l.name)
}
