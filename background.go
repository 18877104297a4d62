package caskade

import (
	"cmp"
	"errors"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

// hintWorker writes hint files for sealed data files.
func (db *DB) hintWorker() {
	defer db.bg.Done()
	for {
		select {
		case id := <-db.hints:
			db.hintsWriting.Store(true)
			// A failure leaves the file to hintRetrier.
			db.writeHintIfLive(id)
			db.hintsWriting.Store(false)
		case <-db.stop:
			// Finish what is queued, and try once more those that failed
			// if there is room for them now: each hint spares a scan at
			// next open.
			for {
				select {
				case id := <-db.hints:
					db.writeHintIfLive(id)
				default:
					db.retryHintsAtClose()
					return
				}
			}
		}
	}
}

// writeHintIfLive writes the hint file of a sealed data file unless merge
// has retired the file. It takes turns with merge, so a hint is never
// written beside a file merge is retiring.
func (db *DB) writeHintIfLive(id uint32) error {
	db.mergeMu.Lock()
	defer db.mergeMu.Unlock()
	db.mu.RLock()
	_, live := db.fset.files[id]
	db.mu.RUnlock()
	if !live {
		db.hintDone(id)
		return nil
	}
	return db.writeHint(id)
}

// writeHint scans the sealed data file id and writes its hint file. A
// failure only costs a scan at the next open, so it is logged, and the
// file is left to hintRetrier, which tries again later.
func (db *DB) writeHint(id uint32) error {
	path := filepath.Join(db.dir, segment.DataName(id))
	// Scan the file through its memory mapping where there is one, rather
	// than reading a copy of it (up to MaxFileSize) into the heap.
	db.mu.RLock()
	f := db.fset.acquireFile(id)
	db.mu.RUnlock()
	// Without one, read it a chunk at a time (WriteHintsFromFile).
	var err error
	if f != nil {
		defer f.Release()
	}
	yield := newCourtesy().pause
	switch {
	case f != nil && f.Mapped() != nil:
		err = segment.WriteHintsFromData(db.fs, db.dir, id, f.Mapped(), path, db.lim, yield)
	case f != nil:
		err = segment.WriteHintsFromFile(db.fs, db.dir, id, f, f.Size(), path, db.lim, yield)
	default:
		err = db.writeHintFromPath(id, path, yield)
	}
	var damaged *segment.CorruptError
	switch {
	case errors.As(err, &damaged):
		// Trying again would scan the file again for nothing: the next
		// Open reports the damage.
		db.hintDone(id)
		db.opts.Logger.Error("caskade: cannot write hint file: the data file is damaged", "file", path, "err", err)
		return nil
	case err != nil:
		if db.hintFailed(id) {
			db.opts.Logger.Warn("caskade: cannot write hint file; will try again later", "file", path, "err", err)
		}
		return err
	}
	db.hintDone(id)
	return nil
}

// writeHintFromPath writes the hint file of the sealed data file id at
// path, which it opens: for a file the file set does not hold.
func (db *DB) writeHintFromPath(id uint32, path string, yield func()) error {
	f, err := db.fs.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return segment.WriteHintsFromFile(db.fs, db.dir, id, f, st.Size(), path, db.lim, yield)
}

// retryHintsAtClose writes the hint files that failed and wait for
// hintRetrier, unless the disk has too little room for them (then each
// attempt would only scan a data file to fail, and hold up Close).
func (db *DB) retryHintsAtClose() {
	db.hintMu.Lock()
	ids := slices.Sorted(maps.Keys(db.hintsLater))
	db.hintMu.Unlock()
	if len(ids) == 0 {
		return
	}
	if free, ok := vfs.FreeSpace(db.fs, db.dir); ok && free < db.hintRoom(ids) {
		return
	}
	for _, id := range ids {
		db.writeHintIfLive(id)
	}
}

// hintFailed adds sealed data file id to the files whose hint files are to
// be written later (hintRetrier), and reports whether it was not among
// them yet.
func (db *DB) hintFailed(id uint32) bool {
	db.hintMu.Lock()
	defer db.hintMu.Unlock()
	if _, ok := db.hintsLater[id]; ok {
		return false
	}
	if db.hintsLater == nil {
		db.hintsLater = map[uint32]struct{}{}
	}
	db.hintsLater[id] = struct{}{}
	return true
}

// hintDone drops data file id from the files whose hint files are to be
// written later: it has one now, or it is gone.
func (db *DB) hintDone(id uint32) {
	db.hintMu.Lock()
	defer db.hintMu.Unlock()
	delete(db.hintsLater, id)
}

// Hint files that could not be written (a full disk, an I/O error, a full
// queue) are tried again every hintRetryPeriod, with the wait doubling
// after each round that fails, up to hintBackoffMax; a round that failed
// for want of space is tried at the next tick once there is room enough.
// A data file without its hint file costs only a scan at the next Open,
// but that scan is slow for a large database, so it is worth the retries.
const (
	hintRetryPeriod = 10 * time.Second
	hintBackoffMax  = 10 * time.Minute
)

// hintRetrier is the state of the retries of hint files between ticks.
type hintRetrier struct {
	db    *DB
	retry backoff
	need  int64 // free space the last failed round lacked (0: unknown)
}

func (db *DB) newHintRetrier(period time.Duration) *hintRetrier {
	return &hintRetrier{db: db, retry: backoff{period: period, max: hintBackoffMax}}
}

// tick is one tick of the retries: it writes the hint files that are
// waiting, if the backoff allows. Tests call it to drive the ticks
// themselves.
func (r *hintRetrier) tick() bool {
	db := r.db
	db.hintMu.Lock()
	ids := slices.Sorted(maps.Keys(db.hintsLater))
	db.hintMu.Unlock()
	if len(ids) == 0 {
		r.retry.reset()
		return true
	}
	if r.retry.failures > 0 && r.need > 0 {
		if free, ok := vfs.FreeSpace(db.fs, db.dir); ok && free >= r.need {
			r.retry.now()
		}
	}
	if r.retry.skip() {
		return true
	}
	var failed []uint32
	var first error
	for _, id := range ids {
		select {
		case <-db.stop:
			return false
		default:
		}
		if err := db.writeHintIfLive(id); err != nil {
			failed = append(failed, id)
			first = cmp.Or(first, err)
		}
	}
	if len(failed) == 0 {
		if r.retry.failures > 0 {
			db.opts.Logger.Info("caskade: wrote the hint files that had failed", "files", len(ids))
		}
		r.retry.reset()
		return true
	}
	r.need = 0
	if errors.Is(first, syscall.ENOSPC) {
		r.need = db.hintRoom(failed)
	}
	wait := r.retry.failed()
	db.opts.Logger.Warn("caskade: cannot write hint files yet", "files", len(failed), "err", first, "retry_in", wait)
	return true
}

// hintRoom returns about how much free space the hint files of the data
// files ids need: a hint file entry is at most 4 bytes longer than the
// record it describes (record.HintHeaderSize against record.HeaderSize),
// which has 33 bytes at least, so at most 37/33 of the data file, or
// about an eighth more.
func (db *DB) hintRoom(ids []uint32) int64 {
	db.mu.RLock()
	defer db.mu.RUnlock()
	var n int64
	for _, id := range ids {
		if f := db.fset.files[id]; f != nil {
			n += f.Size() + f.Size()/8 + 4096
		}
	}
	return n
}

// Active expiry, as Redis does it: every period, sample keys that have a
// TTL, drop the expired ones from memory, and repeat while more than a
// quarter of a sample was expired, for at most a quarter of the period
// (Redis's slow cycle spends up to 25% of its period, too). Expired keys
// are invisible to reads anyway; this only keeps them from piling up in
// memory. Nothing is written: the records on disk carry their expiry.
//
// The bound is time, not a number of rounds: a fixed 16 rounds of 20 keys
// every 100 ms forgot at most 3,200 keys a second, so a cache writing more
// short-lived keys than that (say 8,000 a second with a 1 s TTL) grew its
// key directory and DBSIZE without end, and 100,000 keys expiring at once
// stayed in memory for half a minute. A sample is 200 keys, not Redis's
// 20: each round is a commit, and at 20 keys a round the rounds that fit
// in the budget still fell behind 8,000 keys a second on two processors.
const (
	expirySample = 200
	expiryBudget = 4 // a tick works at most 1/expiryBudget of ExpiryPeriod
)

// expireRounds runs sampling rounds while they keep finding many expired
// keys, for at most a quarter of ExpiryPeriod.
func (db *DB) expireRounds() bool {
	deadline := time.Now().Add(db.opts.ExpiryPeriod / expiryBudget)
	for {
		n, expired := db.expireSample()
		if expired == 0 || expired*4 <= n || !time.Now().Before(deadline) {
			break
		}
	}
	return true
}

// expireSample looks at up to expirySample keys with a TTL and forgets the
// expired ones. It returns how many it looked at and how many expired.
func (db *DB) expireSample() (sampled, expired int) {
	now := db.nowMs()
	var ops []op
	db.mu.RLock()
	for k := range db.expiring { // map order is randomised
		if sampled == expirySample {
			break
		}
		sampled++
		e, ok := db.tree.Get([]byte(k))
		if ok && e.Expired(now) {
			ops = append(ops, op{kind: opForget, key: []byte(k), version: e.Version})
		}
	}
	db.mu.RUnlock()
	if len(ops) > 0 {
		if _, err := db.commit(ops); err != nil {
			return sampled, 0
		}
	}
	return sampled, len(ops)
}

// Lazy expiry, as Redis does it on access: a read that finds a key
// expired drops it, so that subscribers (Subscribe) hear of the expiry at
// once instead of whenever active expiry samples the key (or never, with
// ExpiryPeriod < 0). Only when someone subscribes: otherwise an expired key
// is invisible anyway and costs a read nothing more than the check. The
// read only queues the key (reads never commit, and must not wait for the
// commit path); lazyExpireWorker drops the queued keys with one commit of
// opForget operations, which, like active expiry, write nothing to disk and
// forget a key only if it is still expired at the version the read saw.

// maxLazyExpiry bounds the keys waiting to be dropped; beyond it, reads
// queue nothing and active expiry finds the rest.
const maxLazyExpiry = 4096

// expiredOnRead is called by a read that found key expired at version. It
// copies the key if it queues it; key is the caller's.
func (db *DB) expiredOnRead(key []byte, version uint64) {
	if db.lazyWake == nil || !db.hasObservers.Load() {
		return
	}
	db.lazyMu.Lock()
	if db.lazy == nil {
		db.lazy = map[string]uint64{}
	}
	// Keep the newest version a read found expired: a read of an older
	// snapshot may find an older value expired after a newer read found
	// the key's current value expired, and dropping is checked against
	// the current value's version.
	if old, ok := db.lazy[string(key)]; ok {
		db.lazy[string(key)] = max(old, version)
	} else if len(db.lazy) < maxLazyExpiry {
		db.lazy[string(key)] = version
	}
	db.lazyMu.Unlock()
	select {
	case db.lazyWake <- struct{}{}:
	default:
	}
}

// lazyExpireWorker drops the keys reads found expired, until Close.
func (db *DB) lazyExpireWorker() {
	defer db.bg.Done()
	var ops []op
	for {
		select {
		case <-db.stop:
			return
		case <-db.lazyWake:
		}
		db.lazyMu.Lock()
		for k, v := range db.lazy {
			ops = append(ops, op{kind: opForget, key: []byte(k), version: v})
		}
		clear(db.lazy)
		db.lazyMu.Unlock()
		if len(ops) > 0 {
			db.commit(ops) // an error stops writes; active expiry has the same fate
		}
		clear(ops)
		ops = ops[:0]
	}
}

// Key directory compaction. Deleted keys, and keys rewritten with a new
// TTL, leave dead bytes in the key directory's arena, which only grows;
// a cache of keys with TTLs would grow it without bound. Once the dead
// bytes are at least compactMinDead and half the live ones, the directory
// is rebuilt from a clone in the background while writes go on, brought up
// to date with the keys written meanwhile, and swapped in. Memory peaks at
// about twice the directory's while that runs.
const (
	compactMinDead = 16 << 20
	compactCheck   = time.Second
)

// compactKeysIfDead compacts the key directory once its dead bytes call
// for it.
func (db *DB) compactKeysIfDead() bool {
	db.mu.RLock()
	live, dead := db.tree.ArenaBytes()
	db.mu.RUnlock()
	if dead >= compactMinDead && 2*dead >= live {
		db.compactKeys()
	}
	return true
}

// courtesyPeriod is how long a long computation in the background works
// between pauses when the server has one processor (see courtesy).
const courtesyPeriod = time.Millisecond

// courtesy paces a long computation in the background (writing a hint
// file sorts millions of entries; merge; key directory compaction), which
// calls pause every few thousand steps. With one processor (GOMAXPROCS=1)
// pause sleeps, every courtesyPeriod of work, for as long as the work
// took, so the computation takes at most half the processor. Without it,
// it took nearly all: Go's scheduler looks for goroutines the network made
// ready only when it has nothing else to run, or every 10 ms, and then
// runs the computation again first. While the hint file of a full 256 MiB
// data file was written, a Redis client pipelining SETs got a sixth of its
// usual rate for two seconds (p95 40 ms, worst 60 ms). With more
// processors the others serve the network, and pause does nothing.
type courtesy struct {
	on    bool
	start time.Time // of the work since the last pause
}

func newCourtesy() *courtesy {
	return &courtesy{on: runtime.GOMAXPROCS(0) == 1, start: time.Now()}
}

func (c *courtesy) pause() {
	if !c.on {
		return
	}
	if worked := time.Since(c.start); worked >= courtesyPeriod {
		time.Sleep(worked)
		c.start = time.Now()
	}
}

// rested tells c that the computation has just slept for reasons of its
// own (merge's byte-rate limit), which is not work to pause for.
func (c *courtesy) rested() { c.start = time.Now() }

// writeBehindBytes is how many appended bytes of the active file wake
// writeBehindWorker (outside SyncAlways, whose commits sync themselves);
// 0 turns write-behind off. A variable, read at Open, for the tests and
// the benchmark that compares.
var writeBehindBytes int64 = 4 << 20

// writeBehindWorker starts the write-back of the active file's appends
// every writeBehindBytes (segment.File.WriteBehind), so that neither the
// periodic sync nor the sync that seals a full file meets more than a few
// MiB still to write. Without it, sealing a file in the middle of a fast
// stream of writes held every commit for 120-180 ms here.
func (db *DB) writeBehindWorker() {
	defer db.bg.Done()
	for {
		select {
		case <-db.stop:
			return
		case <-db.writeBehind:
		}
		if f := db.active.Load(); f != nil && f.Acquire() {
			f.WriteBehind()
			f.Release()
		}
	}
}

// every runs fn in a background goroutine each period until Close, or
// until fn reports false.
func (db *DB) every(period time.Duration, fn func() bool) {
	db.bg.Add(1)
	go func() {
		defer db.bg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-db.stop:
				return
			case <-t.C:
			}
			if !fn() {
				return
			}
		}
	}()
}

// compactKeys rebuilds the key directory with only its live keys. It
// reports false if Close stopped it.
func (db *DB) compactKeys() bool {
	db.mu.Lock()
	src := db.tree.Clone()
	db.tree.Track()
	db.mu.Unlock()
	polite := newCourtesy()
	c := src.Compact(func() bool {
		polite.pause()
		select {
		case <-db.stop:
			return true
		default:
			return false
		}
	})
	db.mu.Lock()
	defer db.mu.Unlock()
	changed := db.tree.Tracked()
	if c == nil {
		return false
	}
	c.Catch(db.tree, changed)
	db.tree = c
	db.snap = nil
	db.keyCompacts++
	return true
}

// refusal is a group write refused for lack of space (DB.refused).
type refusal struct {
	err  error
	need int64 // the bytes it wrote
}

// refusedCheckPeriod is how often the database looks whether the room a
// refused write lacked is free again (clearRefusedIfRoom).
const refusedCheckPeriod = time.Second

// clearRefusedIfRoom forgets the last write refused for lack of space
// (Stats.WriteRefused, WriteStatus) once the file system has room for it
// again, so that a server's health checks and PING recover when space is
// freed, not only when a client next writes (Redis retries its failed
// append-only file writes each second likewise). A write that still
// fails refuses again. It always reports true (DB.every).
func (db *DB) clearRefusedIfRoom() bool {
	p := db.refused.Load()
	if p == nil {
		return true
	}
	if free, ok := vfs.FreeSpace(db.fs, db.dir); ok && free >= p.need {
		db.refused.CompareAndSwap(p, nil)
	}
	return true
}
