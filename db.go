package caskade

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade/internal/keydir"
	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

// LockFileName is the name of the lock file in a database directory.
const LockFileName = "LOCK"

// DB is an open database. It is safe for concurrent use.
type DB struct {
	opts Options
	// realClock is set when opts.Now is time.Now (the caller set none): a
	// transaction's age is then read from the monotonic clock alone
	// (time.Since), at half the cost of a full time.Now.
	realClock bool
	dir       string
	fs        vfs.FS
	lock      io.Closer
	lim       record.Limits

	// mu guards the fields below it. The commit leader reads tree without
	// holding mu for writing, because it is the only goroutine that changes
	// it; it takes mu for writing to apply a group.
	mu            sync.RWMutex
	tree          *keydir.Tree
	fset          *fileSet // the current data files
	fstats        map[uint32]*fileStat
	expiring      map[string]struct{}
	version       uint64       // newest committed, visible version
	snap          *keydir.Tree // clone of tree at snapVer, shared by snapshots
	snapVer       uint64
	keyCompacts   int   // key directory compactions (background.go)
	expiredKeys   int64 // keys dropped from memory because they expired (Stats.ExpiredKeys)
	snapshots     int   // open snapshots and iterators
	recovery      RecoveryStats
	hist          *history
	pre           precheckState // guarded by mu
	watchOnce     sync.Once
	watchMu       sync.Mutex
	watches       map[string][]*Watch // armed watches by key; guarded by watchMu
	watchClosed   bool                // Close failed the watches; guarded by watchMu
	watchCount    int                 // outstanding watches, armed or not (Options.MaxWatches); guarded by watchMu
	txns          liveTxns
	mergeProgress MergeProgress
	merges        int        // finished (Stats.Merges)
	mergeFailures int        // failed since the last that finished
	lastMerge     MergeStats // of the last that finished
	lastMergeEnd  time.Time
	mergeTotals   MergeStats // sums of the finished merges' (Stats.MergeTotals)
	mergeTimes    *timings   // Stats.MergeTimings
	syncTimes     *timings   // Stats.Syncs

	mergeMu sync.Mutex // one merge at a time

	// cmu guards the commit queue and the state of the write path.
	cmu      sync.Mutex
	idle     *sync.Cond // signalled when leading turns false
	queue    []*commitReq
	spare    []*commitReq
	leading  bool
	closed   bool
	shut     atomic.Bool // closed, for the read paths that do not take cmu
	writeErr error       // sticky: see ErrWritesStopped
	// stopped holds writeErr once it is set, for WriteStatus to read
	// without cmu.
	stopped atomic.Pointer[error]
	// refused is the last group write refused for lack of space, until a
	// group write succeeds or the space it lacked is free
	// (Stats.WriteRefused, clearRefusedIfRoom).
	refused atomic.Pointer[refusal]

	// Owned by the commit leader.
	active     atomic.Pointer[segment.File]
	nextID     atomic.Uint32 // next data file id (the leader and merge take ids)
	lastVer    uint64
	activeBase uint64 // base version of the active file
	wbuf       []byte
	applies    []apply
	numBuf     []byte      // scratch for AddInt's values
	ends       []commitEnd // reused by runGroup

	obsMu        sync.Mutex
	obsSeq       uint64
	observers    map[uint64]func(changed, expired [][]byte, origins []any)
	hasObservers atomic.Bool

	// Keys reads found expired, waiting for lazyExpireWorker to drop them
	// (expiredOnRead); nil when the database is read-only.
	lazyMu   sync.Mutex
	lazy     map[string]uint64 // key -> version found expired
	lazyWake chan struct{}

	dirty        atomic.Bool   // unsynced appends (SyncEverySec, SyncNone)
	syncer       vfs.Syncer    // the commit path's syncs (SyncAlways)
	turns        sync.Mutex    // held by read-modify-writes that keep conflicting (Turn)
	turnHeld     atomic.Bool   // a Turn holds turns: other commits wait for it (awaitTurn)
	turnMu       sync.Mutex    // guards turnDone
	turnDone     chan struct{} // closed when the Turn holding turns is done
	turnGrace    atomic.Int64  // how long commits wait for it, in ns
	groups       atomic.Uint64 // group commits (Stats.Groups)
	commits      atomic.Uint64 // commits in them (Stats.Commits)
	stop         chan struct{}
	hintMu       sync.Mutex
	hintSizes    map[uint32]int64    // lengths of hint files seen by Stats; guarded by hintMu
	hintsLater   map[uint32]struct{} // sealed files whose hint files failed, for hintRetrier; guarded by hintMu
	bg           sync.WaitGroup
	hints        chan uint32
	writeBehind  chan struct{} // wakes writeBehindWorker (nil under SyncAlways)
	behindBytes  int64         // appended bytes that wake it (writeBehindBytes at Open)
	hintsWriting atomic.Bool   // the hint worker is writing one
}

type fileStat struct {
	live, dead int64 // record bytes
	tomb       int64 // bytes of the tombstones among the dead (see carryTombstones)
	liveKeys   int
	maxVer     uint64 // newest version in the file
}

// RecoveryStats describes what Open found.
type RecoveryStats struct {
	Files      int           // data files read
	FromHints  int           // of which through their hint files
	TornBytes  int64         // bytes cut from the tail of the newest file
	Salvaged   int           // damaged ranges skipped under Options.Salvage
	Duration   time.Duration // time Open spent reading files
	MaxVersion uint64        // newest commit version found
}

// Open opens (creating if needed) the database in dir. It takes an
// exclusive lock on the directory before reading anything, then rebuilds
// the key directory from hint files where they are present and valid and
// from the data files otherwise, reading files in parallel. A torn tail of
// the newest data file is cut off; damage anywhere else fails Open with a
// *CorruptionError unless opts.Salvage is set.
func Open(dir string, opts *Options) (*DB, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	db := &DB{
		opts:       o,
		realClock:  opts == nil || opts.Now == nil,
		dir:        dir,
		fs:         o.FS,
		lim:        storedLimits,
		tree:       keydir.New(),
		fset:       newFileSet(map[uint32]*segment.File{}),
		syncTimes:  newTimings(syncBounds),
		mergeTimes: newTimings(mergeBounds),
		fstats:     map[uint32]*fileStat{},
		expiring:   map[string]struct{}{},
		hist:       newHistory(),
		stop:       make(chan struct{}),
		hints:      make(chan uint32, 64),
	}
	db.idle = sync.NewCond(&db.cmu)
	db.txns.reads = map[uint64]liveTxn{}
	db.nextID.Store(1)
	if !o.ReadOnly {
		if err := db.fs.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("caskade: create %s: %w", dir, err)
		}
	}
	if err := db.takeLock(); err != nil {
		return nil, err
	}
	if err := db.recover(); err != nil {
		db.closeFiles()
		if db.lock != nil {
			db.lock.Close()
		}
		return nil, err
	}
	db.lastVer = db.version
	if !o.ReadOnly {
		db.bg.Add(1)
		go db.hintWorker()
		if o.Sync == SyncEverySec {
			db.every(o.SyncInterval, db.syncDirty)
		}
		if o.Sync != SyncAlways && writeBehindBytes > 0 {
			db.writeBehind = make(chan struct{}, 1)
			db.behindBytes = writeBehindBytes
			db.bg.Add(1)
			go db.writeBehindWorker()
		}
		db.lazyWake = make(chan struct{}, 1)
		db.bg.Add(1)
		go db.lazyExpireWorker()
		if o.ExpiryPeriod > 0 {
			db.every(o.ExpiryPeriod, db.expireRounds)
		}
		if o.MergeInterval > 0 {
			db.startMerging()
		}
		db.every(compactCheck, db.compactKeysIfDead)
		db.every(hintRetryPeriod, db.newHintRetrier(hintRetryPeriod).tick)
		db.every(refusedCheckPeriod, db.clearRefusedIfRoom)
	}
	return db, nil
}

func (db *DB) takeLock() error {
	path := filepath.Join(db.dir, LockFileName)
	lock := db.fs.Lock
	if db.opts.ReadOnly {
		// A read-only open writes nothing, so it cannot create the lock
		// file; it takes the lock only where a writer made one. The lock
		// is shared and taken through a read-only descriptor: read-only
		// opens (check, dump, backup) run side by side, on a read-only
		// mount too, and none while a writer holds the directory.
		if _, err := db.fs.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		lock = db.fs.RLock
	}
	l, err := lock(path)
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return fmt.Errorf("%w: %s: %w", ErrLocked, db.dir, err)
		}
		return fmt.Errorf("caskade: lock %s: %w", path, err)
	}
	db.lock = l
	return nil
}

// fileResult is what recovery learned from one data file.
type fileResult struct {
	id       uint32
	hints    []byte // validated hint file contents: one entry per key, sorted
	release  func() // ends the use of hints if they are a hint file's (segment.MapAll)
	info     segment.HintInfo
	size     int64 // valid length of the data file
	torn     int64
	hole     int64 // where a page that never reached the disk made the newest file's tail torn (0: none)
	damage   []segment.Damage
	fromHint bool
	removed  bool // an empty newest file that was deleted
	err      error
}

// recover rebuilds the key directory. Workers read every file's hint file
// (or scan the data file and build one) in parallel; then one pass merges
// the sorted hint files, newest version of each key winning, straight into
// a bulk-loaded tree.
func (db *DB) recover() error {
	start := time.Now()
	names, err := db.fs.List(db.dir)
	if err != nil {
		if db.opts.ReadOnly && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("caskade: list %s: %w", db.dir, err)
	}
	var ids []uint32
	hasHint := map[uint32]bool{}
	for _, name := range names {
		id, kind := segment.Parse(name)
		switch kind {
		case segment.KindData:
			ids = append(ids, id)
		case segment.KindHint:
			hasHint[id] = true
		case segment.KindTemp:
			if !db.opts.ReadOnly {
				// A hint file that was being written when the process died.
				if err := db.fs.Remove(filepath.Join(db.dir, name)); err != nil {
					return fmt.Errorf("caskade: remove %s: %w", name, err)
				}
			}
		}
	}
	slices.Sort(ids)
	if len(ids) > 0 {
		db.nextID.Store(ids[len(ids)-1] + 1)
	}
	if !db.opts.ReadOnly {
		// A hint whose data file is gone was left by a merge that retired
		// the data file and died before removing the hint.
		for id := range hasHint {
			if _, found := slices.BinarySearch(ids, id); !found {
				if err := db.fs.Remove(filepath.Join(db.dir, segment.HintName(id))); err != nil {
					return fmt.Errorf("caskade: remove orphan hint: %w", err)
				}
			}
		}
	}
	// The file that took appends when the process stopped is the newest one
	// not written by merge; only it may have a torn tail.
	newest := newestWriterFile(db.fs, db.dir, ids)
	results := make([]fileResult, len(ids))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(db.opts.RecoveryWorkers, max(len(ids), 1)) {
		wg.Go(func() {
			// One chunk buffer for every data file this worker scans;
			// it dies with the worker, before Open returns.
			var scratch []byte
			for i := range next {
				results[i] = db.recoverFile(ids[i], i == newest, hasHint[ids[i]], &scratch)
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	defer func() {
		// Nothing built from the hint files aliases them: the key
		// directory copies keys into its arena.
		for _, r := range results {
			if r.release != nil {
				r.release()
			}
		}
	}()
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
	}
	if err := db.mergeRecovered(results); err != nil {
		return err
	}
	db.recovery.Duration = time.Since(start)
	if db.recovery.Files > 0 {
		db.opts.Logger.Info("caskade: recovered", "dir", db.dir, "files", db.recovery.Files,
			"from_hints", db.recovery.FromHints, "keys", db.tree.Len(), "duration", db.recovery.Duration)
	}
	return nil
}

// recoverFile reads one data file through its hint file if that is valid,
// by scanning it otherwise; it cuts a torn tail of the newest file and
// writes a missing hint file (unless read-only or damaged).
//
// A data file is scanned a chunk at a time through *scratch, which the
// caller reuses for its next file (segment.ScanFileIndex), so recovery
// needs memory for the hints, not for whole data files; nothing in the
// result aliases it. The scan packs the records it finds into an index (12
// bytes and about 11 more than the key per record) from which it builds the
// hint file. A valid hint file, which the result keeps until recovery
// ends, is mapped (segment.MapAll): its pages are the page cache's, not the
// heap's, and they are released as soon as the key directory is built.
func (db *DB) recoverFile(id uint32, newest, hasHint bool, scratch *[]byte) fileResult {
	res := fileResult{id: id}
	dataPath := filepath.Join(db.dir, segment.DataName(id))
	st, err := db.fs.Stat(dataPath)
	if err != nil {
		res.err = fmt.Errorf("caskade: stat %s: %w", dataPath, err)
		return res
	}
	if hasHint {
		hintPath := filepath.Join(db.dir, segment.HintName(id))
		b, release, err := segment.MapAll(db.fs, hintPath)
		if err == nil {
			err = segment.ReadingMapped(hintPath, func() (err error) {
				res.info, err = segment.ReadHints(b, st.Size(), db.lim)
				return err
			})
			if err == nil {
				res.hints, res.size, res.fromHint, res.release = b, st.Size(), true, release
				return res
			}
		}
		var described int64
		if segment.ReadingMapped(hintPath, func() error { described = hintDataSize(b, db.lim); return nil }) != nil {
			described = 0 // unreadable: scan the data file
		}
		if release != nil {
			release()
		}
		if described > st.Size() {
			// A hint file is written once its data file is sealed and
			// synced at the size it records: a data file shorter than
			// that lost committed records (a truncated copy, a damaged
			// file system), deletes among them, which no torn write
			// explains. Scanning what is left would accept the loss.
			loss := &CorruptionError{Path: dataPath, Offset: st.Size(),
				Err: fmt.Errorf("the file ends at byte %d, but its hint file records %d bytes: records were lost", st.Size(), described)}
			if !db.opts.Salvage {
				res.err = loss
				return res
			}
			db.opts.Logger.Error("caskade: salvage reads a data file cut short", "err", loss)
		}
		db.opts.Logger.Warn("caskade: ignoring hint file, scanning the data file", "hint", hintPath, "err", err)
	}
	mode := segment.ScanStrict
	switch {
	case db.opts.Salvage:
		mode = segment.ScanSalvage
	case newest:
		mode = segment.ScanTail
	}
	sr, idx, size, err := segment.ScanFileIndex(db.fs, dataPath, mode, db.lim, scratch, nil)
	if err != nil {
		var ce *segment.CorruptError
		if errors.As(err, &ce) {
			res.err = corruption(err)
		} else {
			res.err = fmt.Errorf("caskade: read %s: %w", dataPath, err)
		}
		return res
	}
	res.torn, res.hole, res.damage, res.size = sr.Torn, sr.Hole, sr.Damage, sr.End
	if len(sr.Damage) > 0 {
		res.size = size
	}
	if res.size == 0 {
		// The newest file's header was torn: it was being created when the
		// process died and holds nothing.
		res.removed = true
		if !db.opts.ReadOnly {
			if err := db.cutTornTail(id, dataPath, 0); err != nil {
				res.err = err
			}
		}
		return res
	}
	res.hints = idx.Build(res.size)
	if res.info, err = segment.ReadHints(res.hints, res.size, db.lim); err != nil {
		res.err = fmt.Errorf("caskade: hints built for %s: %w", dataPath, err)
		return res
	}
	if db.opts.ReadOnly {
		return res
	}
	if res.torn > 0 {
		if err := db.cutTornTail(id, dataPath, res.size); err != nil {
			res.err = err
			return res
		}
		switch {
		case res.hole > 0:
			db.opts.Logger.Warn("caskade: cut the newest data file at a page of zeros that never reached the disk; "+
				"the records after it were written after the last sync", "file", dataPath, "offset", res.size,
				"page", res.hole, "bytes", res.torn)
		case sr.TornZeros:
			// Space allocated ahead of the appends, left by a crash.
			db.opts.Logger.Info("caskade: cut the unwritten space after the last record of the newest data file",
				"file", dataPath, "offset", res.size, "bytes", res.torn)
		default:
			db.opts.Logger.Warn("caskade: cut torn tail of the newest data file", "file", dataPath,
				"offset", res.size, "bytes", res.torn)
		}
	} else if newest {
		// After a crash of the process, not of the machine, the tail it
		// wrote and never synced is still in the page cache: this open
		// reads it and will not write to the file again, so make it
		// durable now. Otherwise a power loss later could tear a file
		// that is no longer the newest, which no open would accept.
		if err := db.syncFile(dataPath); err != nil {
			res.err = err
			return res
		}
	}
	if len(res.damage) == 0 {
		if err := segment.WriteHints(db.fs, db.dir, id, res.hints); err != nil {
			db.hintFailed(id)
			db.opts.Logger.Warn("caskade: cannot write hint file; will try again later", "file", dataPath, "err", err)
		}
	}
	return res
}

// syncFile makes the data file at path durable.
func (db *DB) syncFile(path string) error {
	f, err := db.fs.Open(path)
	if err != nil {
		return fmt.Errorf("caskade: open %s to sync it: %w", path, err)
	}
	defer f.Close()
	if err := vfs.SyncData(f); err != nil {
		return fmt.Errorf("caskade: sync %s: %w", path, err)
	}
	return nil
}

// corruption turns a segment's corruption report into the public error.
func corruption(err error) error {
	var ce *segment.CorruptError
	if errors.As(err, &ce) {
		return &CorruptionError{Path: ce.Path, Offset: ce.Offset, Err: ce.Err}
	}
	return err
}

func (db *DB) cutTornTail(id uint32, path string, size int64) error {
	if size == 0 {
		if err := db.fs.Remove(path); err != nil {
			return fmt.Errorf("caskade: remove empty %s: %w", path, err)
		}
		return db.fs.SyncDir(db.dir)
	}
	f, err := segment.Open(db.fs, db.dir, id, size, true)
	if err != nil {
		return fmt.Errorf("caskade: open %s to cut its torn tail: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("caskade: cut torn tail of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("caskade: sync %s: %w", path, err)
	}
	return nil
}

// hintHeap orders hint cursors by key, then newest version first.
type hintHeap []*recCursor

type recCursor struct {
	*segment.HintCursor
	file int // index in results
}

func (h hintHeap) less(i, j int) bool {
	a, b := h[i].Hint(), h[j].Hint()
	if c := bytes.Compare(a.Key, b.Key); c != 0 {
		return c < 0
	}
	return a.Version > b.Version
}

func (h hintHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// advance moves the first cursor on, dropping it once it has no more.
func (h *hintHeap) advance() {
	s := *h
	s[0].Next()
	if !s[0].Valid() {
		s[0] = s[len(s)-1]
		s = s[:len(s)-1]
	}
	if len(s) > 0 {
		s.down(0)
	}
	*h = s
}

// mergeRecovered merges the files' sorted hints into the key directory.
func (db *DB) mergeRecovered(results []fileResult) error {
	files := map[uint32]*segment.File{}
	defer func() {
		// The set takes its own references; drop the openers'.
		db.fset.release()
		db.fset = newFileSet(files)
		for _, f := range files {
			f.Release()
		}
	}()
	// Split the key space into as many parts as there are workers, at
	// keys taken from the largest hint file, and merge the parts in
	// parallel into consecutive pieces of one tree.
	parts := 1
	var splits [][]byte
	var biggest *fileResult
	total := 0
	for i := range results {
		if r := &results[i]; !r.removed {
			total += r.info.Entries
			if biggest == nil || r.info.Entries > biggest.info.Entries {
				biggest = r
			}
		}
	}
	if w := db.opts.RecoveryWorkers; w > 1 && total >= 64<<10 && biggest != nil {
		marks := biggest.info.Marks
		for p := 1; p < w; p++ {
			k := marks[p*len(marks)/w].Key
			if len(splits) == 0 || bytes.Compare(k, splits[len(splits)-1]) > 0 {
				splits = append(splits, k)
			}
		}
		parts = len(splits) + 1
	}
	loaders := keydir.NewLoaders(parts)
	tree := loaders[0].Tree()
	for i := range results {
		r := &results[i]
		db.recovery.Files++
		if r.fromHint {
			db.recovery.FromHints++
		}
		db.recovery.TornBytes += r.torn
		db.recovery.Salvaged += len(r.damage)
		for _, d := range r.damage {
			db.opts.Logger.Error("caskade: salvage skipped damaged range", "file", segment.DataName(r.id),
				"offset", d.Offset, "end", d.End, "err", d.Err)
		}
		if r.removed {
			continue
		}
		if r.id > keydir.MaxFileID || (r.info.Entries > 0 && r.info.MaxVersion-r.info.MinVersion > keydir.MaxVersionDelta) {
			return &CorruptionError{Path: filepath.Join(db.dir, segment.DataName(r.id)),
				Err: fmt.Errorf("file id or version range out of bounds (versions %d to %d)", r.info.MinVersion, r.info.MaxVersion)}
		}
		tree.SetFileBase(r.id, r.info.MinVersion)
		db.recovery.MaxVersion = max(db.recovery.MaxVersion, r.info.MaxVersion)
		db.fstats[r.id] = &fileStat{dead: r.size - record.FileHeaderSize, maxVer: r.info.MaxVersion}
		f, err := segment.Open(db.fs, db.dir, r.id, r.size, false)
		if err != nil {
			return fmt.Errorf("caskade: open %s: %w", segment.DataName(r.id), err)
		}
		f.MapFor(r.size)
		files[r.id] = f
	}
	out := make([]mergePart, parts)
	var wg sync.WaitGroup
	for p := range parts {
		var lo, hi []byte
		if p > 0 {
			lo = splits[p-1]
		}
		if p < len(splits) {
			hi = splits[p]
		}
		wg.Go(func() {
			// The hints were read whole when they were validated, so a
			// fault now (a page dropped, then unreadable) is unlikely;
			// it fails Open rather than the process.
			out[p].err = segment.ReadingMapped("the hint files in "+db.dir, func() error {
				out[p] = db.mergePart(results, loaders[p], lo, hi)
				return nil
			})
		})
	}
	wg.Wait()
	for _, o := range out {
		if o.err != nil {
			return fmt.Errorf("caskade: recover from hint files: %w", o.err)
		}
	}
	for _, o := range out {
		for id, ls := range o.stats {
			st := db.fstats[id]
			st.live += ls.live
			st.dead -= ls.live
			st.liveKeys += ls.liveKeys
			st.tomb += ls.tomb
		}
		for _, k := range o.expiring {
			db.expiring[string(k)] = struct{}{}
		}
	}
	db.tree = keydir.FinishAll(loaders)
	db.version = db.recovery.MaxVersion
	return nil
}

// mergePart is what merging one key range of the hint files produced
// besides its part of the tree.
type mergePart struct {
	stats    map[uint32]*fileStat
	expiring [][]byte
	err      error // reading the mapped hints failed
}

func (p *mergePart) stat(id uint32) *fileStat {
	st := p.stats[id]
	if st == nil {
		st = &fileStat{}
		p.stats[id] = st
	}
	return st
}

// mergePart merges the hint files' entries with keys in [lo, hi) (nil hi:
// to the end), newest version of each key winning, into loader.
func (db *DB) mergePart(results []fileResult, loader *keydir.Loader, lo, hi []byte) mergePart {
	out := mergePart{stats: map[uint32]*fileStat{}}
	var h hintHeap
	for i := range results {
		r := &results[i]
		if r.removed {
			continue
		}
		if c := segment.NewHintCursorAt(r.hints, r.info.Marks, lo); c.Valid() {
			h = append(h, &recCursor{c, i})
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	now := db.nowMs()
	for len(h) > 0 {
		top := h[0]
		best := *top.Hint() // the key aliases a hint buffer that stays put
		if hi != nil && bytes.Compare(best.Key, hi) >= 0 {
			break
		}
		id := results[top.file].id
		// Advance every cursor at this key; the first popped is the newest.
		for len(h) > 0 && bytes.Equal(h[0].Hint().Key, best.Key) {
			if hk := h[0].Hint(); hk.Kind == record.KindDelete {
				out.stat(results[h[0].file].id).tomb += record.HeaderSize + int64(len(hk.Key))
			}
			h.advance()
		}
		if best.Kind == record.KindDelete || (best.Expiry != 0 && best.Expiry <= now) {
			continue
		}
		loader.Add(best.Key, keydir.Entry{FileID: id, ValLen: best.ValLen, Offset: best.Offset, Version: best.Version, Expiry: best.Expiry})
		st := out.stat(id)
		st.live += record.HeaderSize + int64(len(best.Key)) + int64(best.ValLen)
		st.liveKeys++
		if best.Expiry != 0 {
			out.expiring = append(out.expiring, best.Key)
		}
	}
	return out
}

// storedLimits bounds the lengths the decoders accept in data and hint
// files: the format's, not the options' MaxKeySize and MaxValueSize, which
// bound new writes only. Data written under larger limits must still
// read, and recover: the newest file's last records, refused, would be
// cut off as a torn tail.
var storedLimits = record.Limits{MaxKey: keydir.MaxKeyLen}

func (db *DB) nowMs() int64 { return db.opts.Now().UnixMilli() }

// Close waits for writes in progress, stops background work, syncs and
// seals the active data file (writing its hint file), and releases the
// directory lock. Open snapshots and iterators must not be used afterwards;
// reads, writes, snapshots, iterators and transactions started after Close
// return ErrClosed.
func (db *DB) Close() error {
	db.cmu.Lock()
	if db.closed {
		db.cmu.Unlock()
		return ErrClosed
	}
	db.closed = true
	db.shut.Store(true)
	for db.leading {
		db.idle.Wait()
	}
	werr := db.writeErr
	db.cmu.Unlock()
	db.closeWatches()

	close(db.stop)
	db.bg.Wait()
	// Wait for a merge or backup that a caller started.
	db.mergeMu.Lock()
	defer db.mergeMu.Unlock()
	var errs []error
	if a := db.active.Load(); a != nil && werr == nil {
		if err := a.Seal(); err != nil {
			errs = append(errs, fmt.Errorf("caskade: sync %s: %w", a.Path, err))
		} else {
			db.writeHint(a.ID)
		}
	}
	errs = append(errs, db.closeFiles())
	if db.lock != nil {
		if err := db.lock.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// closeFiles releases the database's file set: files close once no
// snapshot or read holds them.
func (db *DB) closeFiles() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.fset.release()
	db.fset = newFileSet(map[uint32]*segment.File{})
	return nil
}

// Dir returns the database directory.
func (db *DB) Dir() string { return db.dir }

// SyncPolicy returns the durability policy the database was opened with.
func (db *DB) SyncPolicy() SyncPolicy { return db.opts.Sync }
