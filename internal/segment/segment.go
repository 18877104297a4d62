// Package segment manages caskade's data files and hint files: naming,
// creating, appending, positional reads, sealing, and the scans that recovery
// uses to rebuild the key directory.
//
// A data file is named NNNNNNNNNN.data after its 32-bit id; ids only grow, so
// a higher id holds newer records. Its hint file is NNNNNNNNNN.hint.
package segment

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/caskade/caskade/internal/pario"
	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/vfs"
)

const (
	dataExt = ".data"
	hintExt = ".hint"
	tmpExt  = ".tmp"
)

// DataName is the file name of data file id.
func DataName(id uint32) string { return fmt.Sprintf("%010d%s", id, dataExt) }

// HintName is the file name of the hint file of data file id.
func HintName(id uint32) string { return fmt.Sprintf("%010d%s", id, hintExt) }

// FileKind classifies a directory entry.
type FileKind int

// Kinds of directory entries.
const (
	KindOther FileKind = iota
	KindData
	KindHint
	KindTemp
)

// Parse classifies a file name, returning the data file id it belongs to.
func Parse(name string) (uint32, FileKind) {
	if stem, ok := strings.CutSuffix(name, tmpExt); ok {
		// Only a data or hint file's name with .tmp after it is ours: a
		// restore --force or an open removes temporary files, and must not
		// remove someone else's notes.tmp.
		if id, kind := Parse(stem); kind == KindData || kind == KindHint {
			return id, KindTemp
		}
		return 0, KindOther
	}
	ext := filepath.Ext(name)
	base := strings.TrimSuffix(name, ext)
	if len(base) != 10 {
		return 0, KindOther
	}
	id, err := strconv.ParseUint(base, 10, 32)
	if err != nil {
		return 0, KindOther
	}
	switch ext {
	case dataExt:
		return uint32(id), KindData
	case hintExt:
		return uint32(id), KindHint
	}
	return 0, KindOther
}

// File is one data file. Reads (ReadAt, ReadRecord) are safe for concurrent
// use; Append, Sync and Truncate are called by one writer at a time.
//
// Where the file system allows, a file is memory-mapped (read-only, up to
// the size given to MapFor) so that reads cost no system call. A File is
// reference-counted: its opener holds one reference, readers take one with
// Acquire around each read, and the file is unmapped and closed when the
// last reference is released, so a read never touches an unmapped file.
type File struct {
	ID     uint32
	Path   string
	fs     vfs.FS
	f      vfs.File
	size   atomic.Int64 // end of the valid, written bytes
	m      []byte       // read-only mapping, or nil
	w      []byte       // writable mapping for appends (MapAppends), or nil; cleared under wmu
	wmu    sync.Mutex   // held to unmap parts of w (WriteBehind) or all of it
	wFrom  int64        // under wmu: w[:wFrom] is unmapped already (WriteBehind)
	alloc  int64        // with w: the file's size, allocated ahead of size
	extent atomic.Int64 // the file's length if past size: space allocated or zero-filled ahead
	z      *zeroer      // zero-fills ahead of appends (ZeroAhead), or nil
	wb     atomic.Int64 // where the write-back WriteBehind started ends
	refs   atomic.Int64
	remove atomic.Bool // delete the file at gone when the last reference goes
	gone   string
}

func newFile(fs vfs.FS, id uint32, path string, f vfs.File, size int64) *File {
	df := &File{ID: id, Path: path, fs: fs, f: f}
	df.size.Store(size)
	df.refs.Store(1)
	return df
}

// MapFor memory-maps the file for reads of up to length bytes (a size it
// may grow to). It is an optimisation: when the file system cannot map, it
// does nothing and reads use ReadAt. It must be called before the file is
// shared with readers.
func (f *File) MapFor(length int64) {
	if length <= 0 || int64(int(length)) != length {
		return
	}
	if m, err := vfs.Map(f.f, int(length)); err == nil {
		f.m = m
	}
}

// appendChunk is how far ahead of its written bytes a file that takes
// appends through a mapping is extended and allocated at a time.
const appendChunk = 4 << 20

// MapAppends makes later Appends that end within the first length bytes
// store into a writable shared mapping instead of calling write, which
// saves a system call per commit. The file is extended, with blocks
// allocated, appendChunk bytes at a time, so a store never meets a full
// disk; Seal cuts the allocated but unwritten tail. Until then, a crash
// leaves zeros after the last record, which recovery cuts like a torn tail.
// The bytes reach the page cache, and so survive the process, as soon as
// Append returns; Sync makes them durable as it does for written bytes.
// Where the file system cannot map or allocate, it does nothing.
func (f *File) MapAppends(length int64) {
	if f.w != nil || length <= 0 || int64(int(length)) != length {
		return
	}
	if w, err := vfs.MapAppend(f.f, int(length)); err == nil {
		f.w, f.alloc = w, f.size.Load()
	}
}

// allocate is vfs.Allocate; tests make it fail.
var allocate = vfs.Allocate

// mappedAppendMax is the largest append stored through the mapping. A
// larger one is written: its system call is cheap next to its bytes, and
// write(2) fills new page cache pages without taking a page fault apiece
// (a 1M-pair bulk load of 1 MiB batches was 10% slower mapped).
const mappedAppendMax = 64 << 10

// appendMapped stores b at off through the writable mapping, extending the
// file first if needed. It reports false if the mapping cannot take b,
// and then b must be written with WriteAt.
func (f *File) appendMapped(b []byte, off int64) (bool, error) {
	end := off + int64(len(b))
	if f.w == nil || end > int64(len(f.w)) || len(b) > mappedAppendMax {
		return false, nil
	}
	if end > f.alloc {
		n := max(end, min(f.alloc+appendChunk, int64(len(f.w)))) - f.alloc
		if err := allocate(f.f, f.alloc, n); err != nil {
			// No room, or no fallocate: write from here on, after cutting
			// whatever the failed call may have extended. (An unmap that
			// fails leaves only address space behind.)
			_ = f.dropAppendMapping()
			f.extent.Store(off)
			if terr := f.f.Truncate(off); terr != nil {
				return true, fmt.Errorf("%w: %w (truncate: %w)", ErrTruncateFailed, err, terr)
			}
			return false, nil
		}
		f.alloc += n
		f.extent.Store(f.alloc)
	}
	return true, f.store(b, off)
}

// storeChunk is how many bytes store copies into the mapping at a time:
// fewer than the smallest record (record.HeaderSize). The bytes a store
// puts in the mapping are in the page cache at once, so a process killed
// in the middle of one leaves whatever part of it was stored. One copy
// does not store front to back (Go's copy of an unaligned block stores
// its first bytes last), so a kill could leave the first record of a
// group torn and later ones whole after it, which recovery must take for
// damage, not a torn tail, and the database would no longer open. Copied
// in order in chunks too short to hold a record, a store cut short leaves
// no whole record after the first byte it did not store.
const storeChunk = record.HeaderSize - 1

// storeHook, if set, is called after each chunk store copies, with its
// file offset and length (tests).
var storeHook func(off int64, n int)

// store copies b into the writable mapping at off, in order, turning a
// memory fault (SIGBUS from an I/O error, or a file cut short behind our
// back) into an error instead of a crash.
func (f *File) store(b []byte, off int64) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("segment: store to the mapping of %s at offset %d failed (an I/O error, or the file was cut short): %v", f.Path, off, r)
		}
	}()
	w := f.w[off:]
	for i := 0; i < len(b); i += storeChunk {
		j := min(i+storeChunk, len(b))
		copy(w[i:j], b[i:j])
		if storeHook != nil {
			storeHook(off+int64(i), j-i)
		}
	}
	return nil
}

func (f *File) dropAppendMapping() error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.w == nil {
		return nil
	}
	// Only the part still mapped: the address range of a part unmapped
	// before may hold another mapping by now.
	err := vfs.UnmapAppend(f.w, int(f.wFrom), len(f.w))
	f.w = nil
	return err
}

// stopZeroer stops the zeroer of ZeroAhead, if any.
func (f *File) stopZeroer() {
	if f.z != nil {
		f.z.halt()
		f.z = nil
	}
}

// WriteBehindPending returns the bytes appended past the range whose
// write-back WriteBehind last started.
func (f *File) WriteBehindPending() int64 { return f.size.Load() - f.wb.Load() }

// WriteBehind starts the write-back of the whole pages appended since its
// last call, without waiting for it (vfs.WriteBehind), so that dirty pages
// do not pile up for the next Sync, or Seal, to write all at once: under
// SyncEverySec a fast writer leaves a second of appends, and a Seal that
// had to write them held up every commit for as long. The page appends
// are still filling is left out: writing it now would only make the next
// append wait for it. Those pages are first unmapped from the writable
// mapping of MapAppends, which never stores below the file's size again,
// so the write-back need not write-protect them page by page (which made
// appends a third slower than not writing behind at all). One goroutine at
// a time may call it.
func (f *File) WriteBehind() {
	start := f.wb.Load()
	end := f.size.Load() &^ int64(os.Getpagesize()-1)
	if end <= start {
		return
	}
	f.wmu.Lock()
	if f.w != nil && end > f.wFrom && end <= int64(len(f.w)) {
		if vfs.UnmapAppend(f.w, int(f.wFrom), int(end)) == nil {
			f.wFrom = end
		}
	}
	f.wmu.Unlock()
	vfs.WriteBehind(f.f, start, end-start)
	f.wb.Store(end)
}

// Seal ends appends to the file: it cuts space allocated or zero-filled
// ahead of the written bytes (see MapAppends and ZeroAhead) and syncs the
// file.
func (f *File) Seal() error {
	if f.z != nil || f.w != nil {
		f.stopZeroer()
		if err := f.f.Truncate(f.size.Load()); err != nil {
			return err
		}
		f.extent.Store(0)
	}
	uerr := f.dropAppendMapping()
	if err := f.f.Sync(); err != nil {
		return err
	}
	return uerr
}

// Mapped returns the file's valid bytes through its read-only memory
// mapping, or nil if it is not mapped. The bytes must not be modified, and
// the caller must hold a reference (Acquire) while it uses them.
func (f *File) Mapped() []byte {
	n := f.size.Load()
	if f.m == nil || n > int64(len(f.m)) {
		return nil
	}
	return f.m[:n:n]
}

// Acquire takes a reference for a read; it fails once the file is closed.
func (f *File) Acquire() bool {
	for {
		r := f.refs.Load()
		if r <= 0 {
			return false
		}
		if f.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// Release drops a reference taken by Acquire (or the opener's, by Close).
func (f *File) Release() error {
	if f.refs.Add(-1) != 0 {
		return nil
	}
	f.stopZeroer()
	err := f.dropAppendMapping()
	if f.m != nil {
		if uerr := vfs.Unmap(f.m); err == nil {
			err = uerr
		}
		f.m = nil
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if f.remove.Load() {
		if rerr := f.fs.Remove(f.gone); err == nil {
			err = rerr
		}
	}
	return err
}

// CreateMerged creates data file id for merge output under a temporary
// name (which Open of a database deletes), with the merged-file header.
// Install gives it its real name once it is complete.
func CreateMerged(fs vfs.FS, dir string, id uint32) (*File, error) {
	path := filepath.Join(dir, DataName(id)) + tmpExt
	f, err := fs.Create(path)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteAt(record.AppendMergedFileHeader(nil), 0); err != nil {
		f.Close()
		fs.Remove(path)
		return nil, err
	}
	return newFile(fs, id, path, f, record.FileHeaderSize), nil
}

// Install syncs a file made by CreateMerged and renames it to its real name,
// durably. It must be called before the file is shared with readers.
func (f *File) Install(dir string) error {
	if err := f.f.Sync(); err != nil {
		return err
	}
	final := filepath.Join(dir, DataName(f.ID))
	if err := f.fs.Rename(f.Path, final); err != nil {
		return err
	}
	f.Path = final
	return f.fs.SyncDir(dir)
}

// Discard closes and removes a file that was never installed or shared.
func (f *File) Discard() {
	f.f.Close()
	f.fs.Remove(f.Path)
}

// Retire takes the file out of the database: it is renamed, durably, to a
// temporary name (so that if the process dies, the next open deletes it),
// its hint file is removed, and the file itself is deleted when its last
// reference is released. Readers holding it keep reading it until then.
func (f *File) Retire(dir string) error {
	tmp := f.Path + tmpExt
	if err := f.fs.Rename(f.Path, tmp); err != nil {
		return err
	}
	f.gone = tmp
	f.remove.Store(true)
	if err := f.fs.SyncDir(dir); err != nil {
		return err
	}
	if err := f.fs.Remove(filepath.Join(dir, HintName(f.ID))); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return err
	}
	return nil
}

// IsMerged reports whether the data file at path was written by merge.
func IsMerged(fs vfs.FS, path string) (bool, error) {
	f, err := fs.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var hdr [record.FileHeaderSize]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return false, nil // too short to be anything but a torn new file
	}
	merged, _ := record.CheckFileHeader(hdr[:])
	return merged, nil
}

// Create creates data file id in dir, writes its header, syncs it and its
// directory entry. If any step fails, it removes the file again: a file
// without a complete header holds no records, and once a later file
// follows it (the next Create after, say, a full disk has room again), the
// next open would take it for damage.
func Create(fs vfs.FS, dir string, id uint32) (*File, error) {
	path := filepath.Join(dir, DataName(id))
	f, err := fs.Create(path)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*File, error) {
		f.Close()
		if rerr := fs.Remove(path); rerr != nil {
			return nil, fmt.Errorf("%w (remove the new file: %w)", err, rerr)
		}
		return nil, err
	}
	df := newFile(fs, id, path, f, record.FileHeaderSize)
	if _, err := f.WriteAt(record.AppendFileHeader(nil), 0); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := fs.SyncDir(dir); err != nil {
		return fail(err)
	}
	return df, nil
}

// Open opens data file id whose valid contents end at size. writable opens
// it for Truncate as well as reads.
func Open(fs vfs.FS, dir string, id uint32, size int64, writable bool) (*File, error) {
	path := filepath.Join(dir, DataName(id))
	var f vfs.File
	var err error
	if writable {
		f, err = fs.OpenReadWrite(path)
	} else {
		f, err = fs.Open(path)
	}
	if err != nil {
		return nil, err
	}
	return newFile(fs, id, path, f, size), nil
}

// Size returns the end of the valid bytes of the file.
func (f *File) Size() int64 { return f.size.Load() }

// DiskSize returns the file's length on disk: Size, or more while space
// past the records is allocated or zero-filled for appends (see MapAppends
// and ZeroAhead; Seal cuts it).
func (f *File) DiskSize() int64 { return max(f.size.Load(), f.extent.Load()) }

// Append writes b at the end of the file and returns the offset it was
// written at. If the write fails, Append cuts the file back to its previous
// size so that no partial record stays behind, and reports in the error
// whether that worked (see ErrTruncateFailed).
func (f *File) Append(b []byte) (int64, error) {
	off := f.size.Load()
	if ok, err := f.appendMapped(b, off); ok {
		if err != nil {
			return off, err
		}
		f.size.Store(off + int64(len(b)))
		return off, nil
	}
	end := off + int64(len(b))
	z := f.z
	if z != nil && end > z.end.Load() {
		// Past the zero-filled bytes: keep the zeroer out while this
		// write extends the file.
		z.mu.Lock()
		defer z.mu.Unlock()
	}
	n, err := f.f.WriteAt(b, off)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if terr := f.f.Truncate(off); terr != nil {
			return off, fmt.Errorf("%w: %w (truncate: %w)", ErrTruncateFailed, err, terr)
		}
		return off, err
	}
	f.size.Store(end)
	if z != nil {
		z.advance(end)
	}
	if f.w != nil && end > f.alloc {
		f.alloc = end // the write extended the file
	}
	return off, nil
}

// Sync makes the file's contents durable. It is fdatasync where the OS has
// one (vfs.SyncData): the data and size, not the timestamps, which would
// cost a journal commit at every sync of the active file.
func (f *File) Sync() error { return vfs.SyncData(f.f) }

// SyncWith is Sync through s, for the syncs of a commit path (see
// vfs.Syncer).
func (f *File) SyncWith(s *vfs.Syncer) error { return s.Sync(f.f) }

// Truncate cuts the file to size (used to drop a torn tail).
func (f *File) Truncate(size int64) error {
	if err := f.f.Truncate(size); err != nil {
		return err
	}
	f.size.Store(size)
	return nil
}

// ReadAt reads len(p) bytes at off.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

// ReadRecord reads and verifies the record at off whose key and value
// lengths the caller knows. The returned record's Key and Value alias
// *scratch (grown as needed) when scratch is not nil, and a new buffer
// otherwise; either way the caller owns them. Damage is reported as a
// *CorruptError, a failed read as the I/O error it is.
//
// The caller must hold a reference (Acquire) for the duration of the call.
func (f *File) ReadRecord(off int64, klen, vlen uint32, lim record.Limits, scratch *[]byte) (record.Record, error) {
	if r, ok, err := f.ViewRecord(off, klen, vlen, lim); ok {
		if err != nil {
			return record.Record{}, err
		}
		// Copy out of the mapping: the caller owns what it gets.
		buf := grow(scratch, int(klen+vlen))
		copy(buf, r.Key)
		copy(buf[klen:], r.Value)
		r.Key, r.Value = buf[:klen:klen], buf[klen:]
		return r, nil
	}
	n := int64(record.HeaderSize) + int64(klen) + int64(vlen)
	buf := grow(scratch, int(n))
	if _, err := f.f.ReadAt(buf, off); err != nil {
		if errors.Is(err, io.EOF) {
			// The key directory points past the end: that is damage.
			return record.Record{}, &CorruptError{Path: f.Path, Offset: off, Err: io.ErrUnexpectedEOF}
		}
		// An I/O error (EIO, say) is not corrupt data: it may pass.
		return record.Record{}, fmt.Errorf("read %s at offset %d: %w", f.Path, off, err)
	}
	r, err := record.Decode(buf, lim)
	if err == nil && (r.KeyLen != klen || r.ValLen != vlen) {
		err = fmt.Errorf("%w: record lengths differ from the key directory", record.ErrCorrupt)
	}
	if err != nil {
		return record.Record{}, &CorruptError{Path: f.Path, Offset: off, Err: err}
	}
	return r, nil
}

// ViewValue returns the value and flags of the record at off, which the
// key directory says is key's at version, with a value of vlen bytes,
// aliasing the read-only mapping as ViewRecord does. ok is false if the
// record is not in the mapping or is not exactly that record (damaged,
// another key's, another version): ViewRecord or ReadRecord then read it
// again and say what is wrong. It is the fast path of every read.
func (f *File) ViewValue(off int64, key []byte, version uint64, vlen uint32) (value []byte, flags uint32, ok bool) {
	end := off + int64(record.HeaderSize) + int64(len(key)) + int64(vlen)
	if f.m == nil || off < 0 || end > int64(len(f.m)) || end > f.size.Load() {
		return nil, 0, false
	}
	return record.ValueOf(f.m[off:end], key, version)
}

// CopyValue is ViewValue with the value copied into *scratch (grown if it
// is too small), or into a new slice if scratch is nil.
func (f *File) CopyValue(off int64, key []byte, version uint64, vlen uint32, scratch *[]byte) (value []byte, flags uint32, ok bool) {
	v, flags, ok := f.ViewValue(off, key, version, vlen)
	if !ok {
		return nil, 0, false
	}
	buf := grow(scratch, len(v))
	copy(buf, v)
	return buf, flags, true
}

// ViewRecord is ReadRecord without the copy, for files that are mapped:
// the record's Key and Value alias the read-only mapping, so they must not
// be modified, and are valid only while the caller holds its reference.
// ok is false, and nothing was read, if the record is not in the mapping;
// use ReadRecord then.
func (f *File) ViewRecord(off int64, klen, vlen uint32, lim record.Limits) (r record.Record, ok bool, err error) {
	end := off + int64(record.HeaderSize) + int64(klen) + int64(vlen)
	if f.m == nil || off < 0 || end > int64(len(f.m)) || end > f.size.Load() {
		return record.Record{}, false, nil
	}
	r, err = record.Decode(f.m[off:end], lim)
	if err == nil && (r.KeyLen != klen || r.ValLen != vlen) {
		err = fmt.Errorf("%w: record lengths differ from the key directory", record.ErrCorrupt)
	}
	if err != nil {
		return record.Record{}, true, &CorruptError{Path: f.Path, Offset: off, Err: err}
	}
	return r, true, nil
}

// grow returns *scratch resized to n bytes, growing (and keeping) it if
// it is too small; a nil scratch means a new slice.
func grow(scratch *[]byte, n int) []byte {
	if scratch == nil {
		return make([]byte, n)
	}
	if cap(*scratch) < n {
		*scratch = make([]byte, n, n+n/4)
	}
	return (*scratch)[:n]
}

// Close drops the opener's reference; the file closes when no read holds
// one.
func (f *File) Close() error { return f.Release() }

// MapAll returns the whole file at path through a read-only memory
// mapping where the file system allows one, and through ReadAll
// otherwise. release ends the use of the bytes: it unmaps them (they must
// not be touched after that) or, for read bytes, does nothing. A mapping
// costs no heap and no copy, and its pages stay the kernel's to drop, which
// suits a file read once and in full while something else is built from it
// (recovery from hint files). The file must not shrink while mapped.
func MapAll(fs vfs.FS, path string) (b []byte, release func(), err error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() > 0 && st.Size() <= math.MaxInt {
		if m, merr := vfs.Map(f, int(st.Size())); merr == nil {
			f.Close() // the mapping outlives the descriptor
			return m, func() { vfs.Unmap(m) }, nil
		}
	}
	f.Close()
	b, err = ReadAll(fs, path)
	return b, func() {}, err
}

// ReadingMapped runs f, which reads bytes mapped from what (a file's path,
// or a description of several files) with MapAll, and turns a memory fault
// while it runs (SIGBUS: an I/O error reading a page, or the file cut
// short) into an error, as ReadAll would have returned one, instead of a
// crash. Other panics go on.
func ReadingMapped(what string, f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			err = fmt.Errorf("segment: reading the mapping of %s failed (an I/O error, or the file was cut short): %v", what, r)
		}
	}()
	return f()
}

// ReadAll reads the whole file at path into memory, with parallel
// positional reads (pario) for large files. The slice is new and belongs
// to the caller.
func ReadAll(fs vfs.FS, path string) ([]byte, error) {
	return ReadAllInto(fs, path, nil)
}

// ReadAllInto is ReadAll into *scratch, which it grows (keeping the larger
// slice in *scratch) when the file does not fit; a nil scratch means a new
// slice. The result aliases *scratch: it is valid only until the next use
// of the same scratch, so a caller that reads files one after another with
// one scratch must copy anything it keeps from one file. Large files are
// read with pario.ReadInto, so a reused buffer saves the zeroing of a new
// one. A file that is shorter than its size at open gives only the bytes
// read, never bytes of an earlier file left in *scratch. Not safe for
// concurrent use with the same scratch.
func ReadAllInto(fs vfs.FS, path string, scratch *[]byte) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size > math.MaxInt {
		return nil, fmt.Errorf("segment: %s: %d bytes do not fit in memory", path, size)
	}
	buf := grow(scratch, int(size))
	if size >= parallelReadSize {
		if err := pario.ReadInto(context.Background(), f, buf, 0, pario.Options{}); err != nil {
			return nil, err
		}
		return buf, nil
	}
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// parallelReadSize is the file size from which ReadAll reads in parallel.
const parallelReadSize = 16 << 20
