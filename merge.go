package caskade

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/caskade/caskade/internal/keydir"
	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

// MergeStats reports what a merge did.
type MergeStats struct {
	InputFiles  int           // sealed data files rewritten and retired
	OutputFiles int           // data files written
	InputBytes  int64         // size of the input files
	OutputBytes int64         // size of the output files
	Records     int           // live records rewritten
	Tombstones  int           // tombstones carried over by a merge of some sealed files only
	Duration    time.Duration // wall time
}

// MergeProgress is the state of a running merge (see Stats).
type MergeProgress struct {
	Running    bool
	Started    time.Time // when the running merge began
	BytesDone  int64     // input bytes of the records handled so far
	BytesTotal int64     // live bytes of the input files when the merge began
}

// Merge compacts the database: it rewrites the live records of every data
// file, in key order, into new files (with hint files), switches the key
// directory over to them, and retires the old files. The active file takes
// part too if it holds overwritten or deleted records: Merge seals it first
// (the automatic merges of Options.MergeInterval leave it be). Reads and
// writes go on throughout. Expired records and overwritten or deleted ones are dropped;
// tombstones are not needed afterwards, because every file older than the
// active one takes part (one may stay to carry the newest version, so that
// versions never repeat after a restart). Old files are deleted once no snapshot or iterator
// still reads them. A crash at any point leaves a database that opens with
// exactly the acknowledged data. Only one merge runs at a time; a second
// call waits. ctx cancels the merge, leaving the database as it was.
// Where the file system reports its free space (vfs.FreeSpacer), a merge
// whose output would not fit fails at once with an error wrapping
// syscall.ENOSPC, instead of filling the disk part way.
func (db *DB) Merge(ctx context.Context) (MergeStats, error) {
	return db.merge(ctx, true, nil)
}

// merge is Merge; with sealActive, an active file that holds dead records
// is sealed first, so that it is merged too. A non-nil only limits the
// inputs to those sealed files (see carryTombstones).
func (db *DB) merge(ctx context.Context, sealActive bool, only []uint32) (MergeStats, error) {
	if db.opts.ReadOnly {
		return MergeStats{}, ErrReadOnly
	}
	db.mergeMu.Lock()
	defer db.mergeMu.Unlock()
	db.cmu.Lock()
	closed, werr := db.closed, db.writeErr
	db.cmu.Unlock()
	if closed {
		return MergeStats{}, ErrClosed
	}
	if werr != nil {
		return MergeStats{}, werr
	}
	if sealActive && db.activeHasDead() {
		ops := []op{{kind: opSeal, hintLater: true}}
		if _, err := db.commit(ops); err != nil {
			return MergeStats{}, fmt.Errorf("caskade: merge: %w", err)
		}
		ops[0].view.release() // the view of the sealed state: not needed
	}
	m := &merger{db: db, ctx: ctx, start: time.Now(), only: only}
	defer m.cleanup()
	err := m.run()
	m.stats.Duration = time.Since(m.start)
	db.mu.Lock()
	db.mergeProgress = MergeProgress{}
	if err != nil {
		db.mergeFailures++
	} else {
		db.merges++
		db.mergeFailures = 0
		db.lastMerge = m.stats
		db.lastMergeEnd = m.start.Add(m.stats.Duration)
		t := &db.mergeTotals
		t.InputFiles += m.stats.InputFiles
		t.OutputFiles += m.stats.OutputFiles
		t.InputBytes += m.stats.InputBytes
		t.OutputBytes += m.stats.OutputBytes
		t.Records += m.stats.Records
		t.Tombstones += m.stats.Tombstones
		t.Duration += m.stats.Duration
	}
	db.mu.Unlock()
	db.mergeTimes.observe(m.start, err)
	if err != nil {
		return m.stats, fmt.Errorf("caskade: merge: %w", err)
	}
	db.opts.Logger.Info("caskade: merged", "inputs", m.stats.InputFiles, "outputs", m.stats.OutputFiles,
		"input_bytes", m.stats.InputBytes, "output_bytes", m.stats.OutputBytes, "tombstones", m.stats.Tombstones,
		"duration", m.stats.Duration)
	return m.stats, nil
}

type merger struct {
	db     *DB
	ctx    context.Context
	start  time.Time
	stats  MergeStats
	view   *view
	inputs map[uint32]*segment.File
	only   []uint32 // the sealed files to merge; nil: all
	// partial is set when some sealed files are not inputs; floor is then
	// the lowest version any file left out (the active one included) may
	// hold.
	partial bool
	floor   uint64

	out     *segment.File // output being written
	buf     []byte        // records not yet appended to out
	dirty   int64         // bytes appended to out since it was last synced
	hints   []record.Hint // of out
	tomb    int64         // bytes of the tombstones in out
	moves   []move        // of out, for the key directory
	minVer  uint64        // of out
	maxVer  uint64
	topVer  uint64          // the newest version written to any output
	outputs []*segment.File // installed
	limiter rateLimiter
	expired []move            // keys expired in the inputs at the merge's instant
	scratch []byte            // reused to read records
	maxVers map[uint32]uint64 // newest version in each input
}

// move is one record rewritten: the key directory switches key from the old
// location to the new one if the key still points to the old one.
type move struct {
	key     []byte // aliases the view's arena, which never changes
	from    uint32
	fromOff int64
	version uint64
	newOff  int64
}

const mergeFlush = 1 << 20

// mergeSyncBytes bounds the unsynced bytes of a merge output. Without it a
// whole output file (up to MaxFileSize) sits in the page cache until the
// fsync that installs it, and flushing it stalls the foreground's fsyncs
// (and, under memory pressure, its writes) for as long.
const mergeSyncBytes = 16 << 20

func (m *merger) run() error {
	db := m.db
	// The inputs are every file but the active one, taken together with a
	// view of the key directory at the same instant.
	db.mu.Lock()
	m.view = db.newViewLocked()
	active := db.active.Load()
	m.inputs = map[uint32]*segment.File{}
	m.maxVers = map[uint32]uint64{}
	m.floor = math.MaxUint64
	var total int64
	for id, f := range m.view.files.files {
		if active != nil && id == active.ID || m.only != nil && !slices.Contains(m.only, id) {
			m.partial = m.partial || active == nil || id != active.ID
			m.floor = min(m.floor, m.view.tree.FileBase(id))
			continue
		}
		m.inputs[id] = f
		m.stats.InputBytes += f.Size()
		if st := db.fstats[id]; st != nil {
			total += st.live
			m.maxVers[id] = st.maxVer
		}
	}
	db.mergeProgress = MergeProgress{Running: true, Started: m.start, BytesTotal: total}
	db.mu.Unlock()
	if len(m.inputs) == 0 {
		return nil
	}
	if db.opts.Sync != SyncAlways {
		// The view may reflect writes not yet synced in the active file,
		// and the merge drops the records they replace: without this sync
		// a crash would lose the new value and the old one both.
		if err := db.Sync(); err != nil {
			return err
		}
	}
	if err := m.checkRoom(total); err != nil {
		return err
	}
	m.stats.InputFiles = len(m.inputs)
	m.limiter = rateLimiter{perSec: db.opts.MergeBytesPerSec}

	it := m.view.tree.Iter()
	defer it.Release()
	var done int64
	polite := newCourtesy()
	for n := 0; ; n++ {
		var ok bool
		if n == 0 {
			ok = it.First()
		} else {
			ok = it.Next()
		}
		if !ok {
			break
		}
		e := it.Entry()
		f := m.inputs[e.FileID]
		if f == nil {
			continue // in the active file
		}
		if e.Expired(m.view.nowMs) {
			m.expired = append(m.expired, move{key: it.Key(), from: e.FileID, version: e.Version})
			continue
		}
		if n%1024 == 0 {
			if err := m.ctx.Err(); err != nil {
				return err
			}
			polite.pause()
			db.mu.Lock()
			db.mergeProgress.BytesDone = done
			db.mu.Unlock()
		}
		key := it.Key()
		r, err := f.ReadRecord(e.Offset, uint32(len(key)), e.ValLen, db.lim, &m.scratch)
		if err != nil {
			return corruption(err)
		}
		size := r.Size()
		done += size
		if err := m.add(key, r, e); err != nil {
			return err
		}
		slept, err := m.limiter.wait(m.ctx, size)
		if err != nil {
			return err
		}
		if slept {
			polite.rested()
		}
	}
	if err := m.keepNewestVersion(); err != nil {
		return err
	}
	if err := m.finishOutput(); err != nil {
		return err
	}
	if m.partial {
		if err := m.carryTombstones(); err != nil {
			return err
		}
	}
	return m.retireInputs()
}

// checkRoom fails the merge up front, with an error wrapping ENOSPC, when
// the file system says it has no room for the outputs. A merge keeps its
// inputs until its last output is in place, so one that ran out of space
// part way would keep the outputs it had finished too, and with them the
// room that writes need (and an automatic merge would do so again at
// every MergeInterval). live is the input's live bytes, an upper bound of
// the output's size (keys that have expired count in it): the exact size
// is only worked out when the free space is below it.
func (m *merger) checkRoom(live int64) error {
	free, ok := vfs.FreeSpace(m.db.fs, m.db.dir)
	if !ok {
		return nil
	}
	// Each output has its header, and its last block partly filled.
	const perFile = record.FileHeaderSize + 4096
	outSize := func(n int64) int64 { return n + (n/m.db.opts.MaxFileSize+1)*perFile }
	if free >= outSize(live) {
		return nil
	}
	var need int64
	it := m.view.tree.Iter()
	defer it.Release()
	for ok := it.First(); ok; ok = it.Next() {
		e := it.Entry()
		if m.inputs[e.FileID] != nil && !e.Expired(m.view.nowMs) {
			need += int64(record.HeaderSize + len(it.Key()) + int(e.ValLen))
		}
	}
	if need == 0 || free >= outSize(need) {
		return nil
	}
	return &roomError{need: outSize(need), free: free}
}

// roomError is checkRoom's: it wraps syscall.ENOSPC.
type roomError struct {
	need, free int64 // bytes
}

func (e *roomError) Error() string {
	return fmt.Sprintf("the output needs about %d bytes and %d are free: %v", e.need, e.free, syscall.ENOSPC)
}

func (e *roomError) Unwrap() error { return syscall.ENOSPC }

// carryTombstones writes, when only some sealed files are merged, a
// tombstone for each key whose newest record in the inputs is dead for
// want of a newer one: a tombstone, an expired record, or a record whose
// key was deleted or dropped as expired since. Without it, recovery could
// find an older record of the key in a file the merge left, and bring the
// key back. A key needs none when every file left out holds only versions
// at least as new as its record in the inputs. The tombstones keep their versions and go
// to outputs of their own, in key order; only a merge of every sealed file
// drops them (so the file statistics count them apart: fileStat.tomb).
func (m *merger) carryTombstones() error {
	// The inputs' hint files are mapped: a fault reading one (an I/O
	// error) fails the merge rather than the process.
	return segment.ReadingMapped("the merge inputs' hint files in "+m.db.dir, m.carryTombstonesMapped)
}

func (m *merger) carryTombstonesMapped() error {
	var h hintHeap
	// The output's hints alias the inputs' until finishOutput has written
	// them: the inputs' are released after it.
	var releases []func()
	defer func() {
		for _, release := range releases {
			release()
		}
	}()
	for id, f := range m.inputs {
		b, release, err := m.db.inputHints(id, f)
		if err != nil {
			return err
		}
		releases = append(releases, release)
		if c := segment.NewHintCursor(b); c.Valid() {
			h = append(h, &recCursor{HintCursor: c})
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	for n := 0; len(h) > 0; n++ {
		if n%1024 == 0 {
			if err := m.ctx.Err(); err != nil {
				return err
			}
		}
		best := *h[0].Hint() // the key aliases a hint buffer that stays put
		for len(h) > 0 && bytes.Equal(h[0].Hint().Key, best.Key) {
			h.advance()
		}
		if best.Version <= m.floor {
			continue
		}
		if e, ok := m.view.tree.Get(best.Key); ok && (e.Version != best.Version || !e.Expired(m.view.nowMs)) {
			continue // a live record, newer or rewritten, decides the key
		}
		size := int64(record.HeaderSize + len(best.Key))
		if err := m.output(size, best.Version); err != nil {
			return err
		}
		off := m.out.Size() + int64(len(m.buf))
		m.buf = record.AppendRecord(m.buf, record.KindDelete, true, best.Version, 0, 0, best.Key, nil)
		m.hints = append(m.hints, record.Hint{Kind: record.KindDelete, Version: best.Version, Offset: off, Key: best.Key})
		m.tomb += size
		m.note(best.Version)
		m.stats.Tombstones++
		if len(m.buf) >= mergeFlush {
			if err := m.flush(); err != nil {
				return err
			}
		}
		if _, err := m.limiter.wait(m.ctx, size); err != nil {
			return err
		}
	}
	return m.finishOutput()
}

// inputHints returns the hint file contents of sealed file f: its hint
// file if that is valid (mapped where the file system allows, so that the
// inputs' hints cost no heap: segment.MapAll), else hints built by
// scanning it. release ends the use of the bytes.
func (db *DB) inputHints(id uint32, f *segment.File) (b []byte, release func(), err error) {
	hintPath := filepath.Join(db.dir, segment.HintName(id))
	b, release, err = segment.MapAll(db.fs, hintPath)
	if err == nil {
		err = segment.ReadingMapped(hintPath, func() error {
			_, err := segment.ReadHints(b, f.Size(), db.lim)
			return err
		})
		if err == nil {
			return b, release, nil
		}
		release()
	}
	none := func() {}
	if !errors.Is(err, fs.ErrNotExist) {
		// As at open: the data file is the truth, and scanning it costs
		// only time.
		db.opts.Logger.Warn("caskade: merge ignoring hint file, scanning the data file", "hint", hintPath, "err", err)
	}
	// Through the file's mapping where there is one; else a chunk at a
	// time, rather than reading a copy of the file (up to MaxFileSize)
	// into the heap.
	data := f.Mapped()
	if db.opts.Salvage {
		// A file the salvage found damaged has no hint file; the records
		// of its damaged ranges are lost already, and so are their
		// tombstones.
		if data != nil {
			sr, err := segment.ScanData(data, f.Path, segment.ScanSalvage, db.lim)
			if err != nil {
				return nil, nil, corruption(err)
			}
			return segment.BuildHints(sr.Hints, f.Size()), none, nil
		}
		_, idx, err := segment.ScanReaderAtIndex(f, f.Size(), f.Path, segment.ScanSalvage, db.lim, nil, nil)
		if err != nil {
			return nil, nil, inputError(f, err)
		}
		return idx.Build(f.Size()), none, nil
	}
	if data != nil {
		b, err = segment.BuildHintsFromData(data, f.Path, db.lim)
	} else {
		b, err = segment.BuildHintsFromFile(f, f.Size(), f.Path, db.lim)
	}
	if err != nil {
		return nil, nil, inputError(f, err)
	}
	return b, none, nil
}

// inputError is the error of a scan of merge input f: its damage, or a
// failed read.
func inputError(f *segment.File, err error) error {
	var ce *segment.CorruptError
	if errors.As(err, &ce) {
		return corruption(err)
	}
	return fmt.Errorf("read %s: %w", f.Path, err)
}

// keepNewestVersion writes a tombstone carrying the newest version of the
// inputs when no rewritten record carries it: that version belonged to a
// deleted, overwritten or expired record, and if the active file holds no
// newer one, recovery would otherwise restart the version counter below
// versions already handed out (memcached cas uniques, versionstamps). The
// tombstone is for a key the merge's view does not hold: no record of it
// in the inputs is live, and any later write of it has a newer version, so
// it deletes nothing.
func (m *merger) keepNewestVersion() error {
	var newest uint64
	for _, v := range m.maxVers {
		newest = max(newest, v)
	}
	if newest <= m.topVer {
		return nil
	}
	key := versionKey(m.view)
	if err := m.output(int64(record.HeaderSize+len(key)), newest); err != nil {
		return err
	}
	off := m.out.Size() + int64(len(m.buf))
	m.buf = record.AppendRecord(m.buf, record.KindDelete, true, newest, 0, 0, key, nil)
	m.tomb += int64(record.HeaderSize + len(key))
	// The hints stay in key order.
	i, _ := slices.BinarySearchFunc(m.hints, key, func(h record.Hint, k []byte) int { return bytes.Compare(h.Key, k) })
	m.hints = slices.Insert(m.hints, i, record.Hint{Kind: record.KindDelete, Version: newest, Offset: off, Key: key})
	m.note(newest)
	return nil
}

// versionKey returns the key of keepNewestVersion's tombstone: the
// shortest run of zero bytes that has no live entry in v. An expired
// entry does not count: the merge drops it if it is in an input, and one
// in the active file has a newer version than the tombstone, which
// therefore deletes nothing there either. Counting it made the tombstone's
// key longer than the one ReclaimableBytes expects once the merge has
// dropped the expired key, so that right after a merge ReclaimableBytes
// reported a byte or two to reclaim, and a caller merging to reclaim
// space merged again for nothing.
func versionKey(v *view) []byte { return versionKeyIn(v.tree, v.nowMs) }

// versionKeyIn is versionKey for the key directory tree at nowMs.
func versionKeyIn(tree *keydir.Tree, nowMs int64) []byte {
	key := []byte{}
	for {
		if e, ok := tree.Get(key); !ok || e.Expired(nowMs) {
			return key
		}
		key = append(key, 0)
	}
}

// output makes sure there is an output with room for a record of size
// bytes and version ver, starting a new one when the current one is full
// or its versions would span too much.
func (m *merger) output(size int64, ver uint64) error {
	if m.out != nil {
		full := m.out.Size()+int64(len(m.buf))+size > m.db.opts.MaxFileSize && len(m.hints) > 0
		lo, hi := min(m.minVer, ver), max(m.maxVer, ver)
		if full || hi-lo > keydir.MaxVersionDelta {
			if err := m.finishOutput(); err != nil {
				return err
			}
		}
	}
	if m.out == nil {
		id, err := m.db.allocFileID()
		if err != nil {
			return err
		}
		if m.out, err = segment.CreateMerged(m.db.fs, m.db.dir, id); err != nil {
			return err
		}
		m.minVer, m.maxVer = ver, ver
	}
	return nil
}

// note records that a record of version ver went to the current output.
func (m *merger) note(ver uint64) {
	m.minVer, m.maxVer = min(m.minVer, ver), max(m.maxVer, ver)
	m.topVer = max(m.topVer, ver)
}

// add appends one live record to the current output.
func (m *merger) add(key []byte, r record.Record, e keydir.Entry) error {
	if err := m.output(int64(record.HeaderSize+len(key)+len(r.Value)), e.Version); err != nil {
		return err
	}
	off := m.out.Size() + int64(len(m.buf))
	m.buf = record.AppendRecord(m.buf, record.KindPut, true, e.Version, e.Expiry, r.Flags, key, r.Value)
	m.hints = append(m.hints, record.Hint{Kind: record.KindPut, Version: e.Version, Expiry: e.Expiry, Offset: off, ValLen: e.ValLen, Key: key})
	m.moves = append(m.moves, move{key: key, from: e.FileID, fromOff: e.Offset, version: e.Version, newOff: off})
	m.note(e.Version)
	m.stats.Records++
	if len(m.buf) >= mergeFlush {
		return m.flush()
	}
	return nil
}

func (m *merger) flush() error {
	if len(m.buf) == 0 {
		return nil
	}
	if _, err := m.out.Append(m.buf); err != nil {
		return err
	}
	m.dirty += int64(len(m.buf))
	m.buf = m.buf[:0]
	if m.dirty >= mergeSyncBytes {
		if err := m.out.Sync(); err != nil {
			return err
		}
		m.dirty = 0
	}
	return nil
}

// finishOutput makes the current output durable, gives it its name and hint
// file, and points the key directory at it.
func (m *merger) finishOutput() error {
	if m.out == nil {
		return nil
	}
	if err := m.flush(); err != nil {
		return err
	}
	out := m.out
	if err := out.Install(m.db.dir); err != nil {
		return err
	}
	m.out, m.dirty = nil, 0
	m.outputs = append(m.outputs, out)
	m.stats.OutputFiles++
	m.stats.OutputBytes += out.Size()
	// Merge's hints are already in key order, one per key.
	if err := segment.WriteHints(m.db.fs, m.db.dir, out.ID, segment.BuildHints(m.hints, out.Size())); err != nil {
		m.db.hintFailed(out.ID)
		m.db.opts.Logger.Warn("caskade: merge could not write a hint file; will try again later", "file", out.Path, "err", err)
	}
	out.MapFor(out.Size())
	m.db.switchTo(out, m.minVer, m.maxVer, m.tomb, m.moves)
	m.hints, m.moves, m.tomb = m.hints[:0], m.moves[:0], 0
	return nil
}

// retireInputs drops the input files from the database and, once no view
// reads them, from disk; first it forgets the keys that were expired in
// them, the only keys still pointing into them.
func (m *merger) retireInputs() error {
	db := m.db
	db.mu.Lock()
	for _, x := range m.expired {
		if cur, ok := db.tree.Get(x.key); ok && cur.FileID == x.from && cur.Version == x.version {
			db.tree.Delete(x.key)
			delete(db.expiring, string(x.key))
			db.expiredKeys++
			if db.txns.count.Load() > 0 {
				// As recordHistory does for a drop by a commit.
				db.hist.remember(histItem{key: string(x.key), expiry: cur.Expiry, until: db.version + 1})
			}
		}
	}
	old := db.fset
	files := maps.Clone(old.files)
	for id := range m.inputs {
		delete(files, id)
		delete(db.fstats, id)
		db.hintDone(id)
	}
	db.fset = newFileSet(files)
	old.release()
	db.snap = nil
	db.mu.Unlock()
	// Rename the inputs away in the order of the newest version each holds,
	// syncing the directory after each: a crash part way then never leaves
	// a record on disk whose tombstone has gone.
	ids := slices.Collect(maps.Keys(m.inputs))
	slices.SortFunc(ids, func(a, b uint32) int { return cmp.Compare(m.maxVers[a], m.maxVers[b]) })
	var errs []error
	for _, id := range ids {
		if err := m.inputs[id].Retire(db.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *merger) cleanup() {
	if m.out != nil {
		m.out.Discard()
		m.out = nil
	}
	if m.view != nil {
		m.view.release()
	}
}

// switchTo adds a finished merge output to the database and points every
// key it holds at it, unless the key changed since the merge read it. It
// works in chunks so that readers and writers are never held up for long.
func (db *DB) switchTo(out *segment.File, base, maxVer uint64, tomb int64, moves []move) {
	db.mu.Lock()
	db.tree.SetFileBase(out.ID, base)
	old := db.fset
	db.fset = old.with(out.ID, out)
	old.release()
	out.Release() // the set holds it now
	st := &fileStat{dead: out.Size() - record.FileHeaderSize, tomb: tomb, maxVer: maxVer}
	db.fstats[out.ID] = st
	db.mu.Unlock()
	// Each chunk holds the write lock; 512 tree updates take about half
	// a millisecond (4096 made writers wait 2-4 ms at p999).
	const chunk = 512
	for len(moves) > 0 {
		n := min(chunk, len(moves))
		db.mu.Lock()
		for _, mv := range moves[:n] {
			cur, ok := db.tree.Get(mv.key)
			if !ok || cur.FileID != mv.from || cur.Offset != mv.fromOff || cur.Version != mv.version {
				continue // changed since: the rewritten record is dead
			}
			cur.FileID, cur.Offset = out.ID, mv.newOff
			db.tree.Set(mv.key, cur)
			size := record.HeaderSize + int64(len(mv.key)) + int64(cur.ValLen)
			st.live += size
			st.dead -= size
			st.liveKeys++
			if from := db.fstats[mv.from]; from != nil {
				from.live -= size
				from.dead += size
				from.liveKeys--
			}
		}
		db.snap = nil // cached clones point at the old locations
		db.mu.Unlock()
		moves = moves[n:]
	}
}

// allocFileID returns a new data file id.
func (db *DB) allocFileID() (uint32, error) {
	id := db.nextID.Add(1) - 1
	if id > keydir.MaxFileID {
		return 0, fmt.Errorf("data file ids exhausted (%d)", id)
	}
	return id, nil
}

// rateLimiter paces merge I/O to a byte rate (0: unlimited).
type rateLimiter struct {
	perSec int64
	start  time.Time
	bytes  int64
}

// wait sleeps until n more bytes are due, and reports whether it slept.
// It returns ctx's error as soon as ctx is done: at a small rate a sleep
// can last minutes, and Close cancels the automatic merge and waits for it.
func (r *rateLimiter) wait(ctx context.Context, n int64) (bool, error) {
	if r.perSec <= 0 {
		return false, nil
	}
	if r.start.IsZero() {
		r.start = time.Now()
	}
	r.bytes += n
	due := time.Duration(float64(r.bytes) / float64(r.perSec) * float64(time.Second))
	if ahead := due - time.Since(r.start); ahead > time.Millisecond {
		t := time.NewTimer(ahead)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return true, ctx.Err()
		}
		return true, nil
	}
	return false, nil
}

// ReclaimableBytes reports how many bytes of data files a Merge started now
// would free: those of the overwritten, deleted and expired records and
// the tombstones in the files it would take (every sealed file, and the
// active one if it holds dead records). Keys that have expired count,
// although the file statistics (Stats) count them as live until a merge
// or active expiry drops them. A tombstone that Merge would have to write
// again, to carry the newest version, does not count. 0 means that Merge
// would only rewrite the same live records in key order, into fewer files
// perhaps: a caller that merges to reclaim space can skip it.
//
// It walks a snapshot of the key directory, in memory (about as long as
// iterating every key without values), and reads no file; reads and
// writes go on meanwhile. It is safe for concurrent use; a write or a
// merge that runs at the same time can make the answer out of date.
func (db *DB) ReclaimableBytes() int64 {
	db.mu.Lock()
	v := db.newViewLocked()
	active := db.active.Load()
	var activeDead bool
	if active != nil {
		st := db.fstats[active.ID]
		activeDead = st != nil && st.dead > 0
	}
	inputs := map[uint32]bool{}
	var total int64
	var newest uint64
	for id, f := range v.files.files {
		if active != nil && id == active.ID && !activeDead {
			continue
		}
		inputs[id] = true
		total += f.Size() - record.FileHeaderSize
		if st := db.fstats[id]; st != nil {
			newest = max(newest, st.maxVer)
		}
	}
	db.mu.Unlock()
	defer v.release()
	if len(inputs) == 0 {
		return 0
	}
	// What merger.run would write: every live record of the inputs that
	// has not expired, and keepNewestVersion's tombstone if none of them
	// carries the newest version.
	var live int64
	var top uint64
	it := v.tree.Iter()
	defer it.Release()
	for ok := it.First(); ok; ok = it.Next() {
		e := it.Entry()
		if !inputs[e.FileID] || e.Expired(v.nowMs) {
			continue
		}
		live += record.HeaderSize + int64(len(it.Key())) + int64(e.ValLen)
		top = max(top, e.Version)
	}
	if newest > top {
		live += int64(record.HeaderSize + len(versionKey(v)))
	}
	return max(total-live, 0)
}

// NeedsMerge reports whether the sealed files are dead enough for the
// automatic merge thresholds of Options.
func (db *DB) NeedsMerge() bool {
	due, _ := db.mergePlan()
	return due
}

// mergePlan reports whether an automatic merge is due and, when it is due
// only because some sealed files are dead enough on their own
// (MergeFileDeadRatio), which files to merge: the rest would be rewritten
// for nothing. Tombstones count for MergeDeadRatio but not for
// MergeFileDeadRatio, since merging a file on its own may have to carry
// them over (carryTombstones): a file of such tombstones would otherwise
// be merged again and again.
//
// Nor does the tombstone a merge of every sealed file may have to write
// again to carry the newest version (keepNewestVersion): counted as dead,
// it made the output of such a merge due again, on its own or beside a
// small live record, so that with a small MergeMinDeadBytes the automatic
// merge rewrote the same few bytes at every MergeInterval for ever.
func (db *DB) mergePlan() (due bool, only []uint32) {
	active := db.active.Load()
	db.mu.RLock()
	defer db.mu.RUnlock()
	var live, dead, tomb int64
	for id, st := range db.fstats {
		if active != nil && id == active.ID {
			continue
		}
		live += st.live
		dead += st.dead
		tomb += st.tomb
		if total := st.live + st.dead; total > 0 && float64(st.dead-st.tomb)/float64(total) >= db.opts.MergeFileDeadRatio {
			only = append(only, id)
		}
	}
	// Tombstones count among the dead bytes (fileStat.tomb), so this one
	// does if it is there.
	marker := int64(record.HeaderSize + len(versionKeyIn(db.tree, db.nowMs())))
	dead -= min(marker, tomb)
	switch {
	case dead < db.opts.MergeMinDeadBytes:
		return false, nil
	case float64(dead)/float64(live+dead) >= db.opts.MergeDeadRatio:
		return true, nil
	}
	return len(only) > 0, only
}

// activeHasDead reports whether the active file holds records that are
// overwritten, deleted or expired.
func (db *DB) activeHasDead() bool {
	active := db.active.Load()
	if active == nil {
		return false
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	st := db.fstats[active.ID]
	return st != nil && st.dead > 0
}

// startMerging merges on its own, every MergeInterval, when NeedsMerge
// says so; Close cancels a merge that is running.
func (db *DB) startMerging() {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-db.stop
		cancel()
	}()
	a := db.newAutoMerger(db.opts.MergeInterval)
	db.every(db.opts.MergeInterval, func() bool {
		a.tick(ctx)
		return true
	})
}

// mergeBackoffMax caps the wait of the automatic merge after failures.
const mergeBackoffMax = time.Hour

// autoMerger is the state of the automatic merge between its ticks. A
// merge that keeps failing (a disk too full for its output, an I/O error)
// is not tried at every tick: the wait doubles after each failure in a
// row, up to mergeBackoffMax, and only the first failure of a run is
// logged as an error (then one warning per attempt, saying when the next
// one is due). The wait ends early when the cause goes away: a merge that
// succeeds meanwhile (Merge), nothing left to merge, or, for a merge
// refused for want of room, enough free space. Merge itself is never held
// back.
type autoMerger struct {
	db    *DB
	retry backoff
	// Of the last failure: its errno (0: none), the free space the merge
	// needed (0: unknown), and Stats().Merges then.
	errno  syscall.Errno
	need   int64
	merges int
}

func (db *DB) newAutoMerger(period time.Duration) *autoMerger {
	return &autoMerger{db: db, retry: backoff{period: period, max: mergeBackoffMax}}
}

// tick is one tick of the automatic merge: it merges if mergePlan says so
// and the backoff allows. Tests call it to drive the ticks themselves.
func (a *autoMerger) tick(ctx context.Context) {
	db := a.db
	due, only := db.mergePlan()
	if !due {
		a.retry.reset()
		return
	}
	if a.retry.failures > 0 {
		db.mu.RLock()
		merged := db.merges != a.merges
		db.mu.RUnlock()
		if merged {
			a.retry.reset()
		} else if a.need > 0 {
			if free, ok := vfs.FreeSpace(db.fs, db.dir); ok && free >= a.need {
				a.retry.now()
			}
		}
	}
	if a.retry.skip() {
		return
	}
	_, err := db.merge(ctx, false, only)
	switch {
	case err == nil:
		if a.retry.failures > 0 {
			db.opts.Logger.Info("caskade: automatic merge succeeded after failing", "failures", a.retry.failures)
		}
		a.retry.reset()
		return
	case errors.Is(err, context.Canceled) || errors.Is(err, ErrClosed):
		return
	}
	var errno syscall.Errno
	errors.As(err, &errno)
	a.need = 0
	var re *roomError
	if errors.As(err, &re) {
		a.need = re.need
	}
	db.mu.RLock()
	a.merges = db.merges
	db.mu.RUnlock()
	first := a.retry.failures == 0 || errno != a.errno
	a.errno = errno
	wait := a.retry.failed()
	if first {
		db.opts.Logger.Error("caskade: automatic merge failed", "err", err, "retry_in", wait)
	} else {
		db.opts.Logger.Warn("caskade: automatic merge failed again", "err", err,
			"failures", a.retry.failures, "retry_in", wait)
	}
}

// backoff spaces out the attempts of a periodic background job that keeps
// failing: after the k-th failure in a row it lets 2^k periods pass, at
// most max (and at least one period), before the next attempt. It is
// not safe for concurrent use; its job's goroutine owns it.
type backoff struct {
	period   time.Duration
	max      time.Duration
	failures int // in a row
	wait     int // ticks to let pass before the next attempt
}

// skip reports whether this tick must pass without an attempt.
func (b *backoff) skip() bool {
	if b.wait > 0 {
		b.wait--
		return true
	}
	return false
}

// failed counts a failure and returns the wait before the next attempt.
func (b *backoff) failed() time.Duration {
	b.failures++
	n := 1 << min(b.failures, 30)
	if b.period > 0 {
		n = min(n, max(1, int(b.max/b.period)))
	}
	b.wait = n - 1
	return time.Duration(n) * b.period
}

// now lets the next tick make an attempt, without forgetting the failures.
func (b *backoff) now() { b.wait = 0 }

// reset forgets the failures.
func (b *backoff) reset() { b.failures, b.wait = 0, 0 }
