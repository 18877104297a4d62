package caskade

import (
	"cmp"
	"path/filepath"
	"slices"
	"time"

	"github.com/caskade/caskade/internal/segment"
)

// FileStats describes one data file.
type FileStats struct {
	ID        uint32
	Size      int64 // bytes of the file's header and records
	DiskBytes int64 // the file's length on disk: Size, plus space reserved ahead of the records of the active file
	HintBytes int64 // the length of its hint file (0: none yet)
	LiveBytes int64 // bytes of records the key directory points to
	DeadBytes int64 // bytes of overwritten, deleted or expired records and tombstones
	// TombstoneBytes is the part of DeadBytes that tombstones take: a
	// merge of every sealed file drops them, a merge of this file alone
	// may have to keep them (see Options.MergeFileDeadRatio).
	TombstoneBytes int64
	LiveKeys       int
	Active         bool // the file taking appends
}

// Stats is a point-in-time summary of the database.
type Stats struct {
	// Keys counts the keys in the key directory, including expired keys
	// that active expiry has not yet dropped.
	Keys int
	// ExpiringKeys counts the keys with a TTL.
	ExpiringKeys int
	// ExpiredKeys counts the keys dropped from memory since Open because
	// they had expired: by active expiry, after a read found them
	// expired, by a write to them, or by a merge (Redis's expired_keys).
	ExpiredKeys int64
	// Version is the newest committed version.
	Version uint64
	// Files lists the data files in id order.
	Files []FileStats
	// LiveBytes, DeadBytes and DiskBytes sum the files'; DiskBytes also
	// counts their hint files (HintBytes). It includes the space the active
	// file reserves ahead of its records (up to 4 MiB allocated for mapped
	// appends under SyncNone and SyncEverySec, a few MiB of zeros under
	// SyncAlways).
	LiveBytes, DeadBytes, DiskBytes int64
	// OpenSnapshots counts open snapshots and iterators.
	OpenSnapshots int
	// Watches counts the outstanding watches of transactions (Tx.Watch),
	// armed or waiting for their transaction's commit, against
	// Options.MaxWatches.
	Watches int
	// Recovery describes what Open found.
	Recovery RecoveryStats
	// WriteError is the error that stopped writes, if any.
	WriteError error
	// WriteRefused is the error of the last write refused for lack of
	// space (errors.Is(err, syscall.ENOSPC)) while no write has succeeded
	// since: the disk is full, or was when a write last tried. Nil once a
	// write succeeds, or once the file system, asked each second, has room
	// for the refused write again.
	WriteRefused error
	// Merge is the progress of a running merge.
	Merge MergeProgress
	// Merges counts the merges (Merge, and those of Options.MergeInterval)
	// that finished since Open, and MergeFailures those that failed since
	// the last one that finished (0 if it did not fail). LastMerge
	// describes the last merge that finished, at LastMergeEnd (zero if
	// none has).
	Merges, MergeFailures int
	LastMerge             MergeStats
	LastMergeEnd          time.Time
	// MergeTotals sums the MergeStats of the merges that finished since
	// Open, and MergeTimings times every merge, failed ones included.
	MergeTotals  MergeStats
	MergeTimings Timings
	// Syncs times the fsyncs of the active data file since Open: one per
	// group commit under SyncAlways, the background ones of SyncEverySec,
	// and those of Sync (not those that seal a full file or belong to a
	// merge, a backup or Open).
	Syncs Timings
	// KeyBytes counts the bytes of keys (and expiries) the key directory
	// holds in memory for live keys, and KeyDeadBytes those that deletions
	// and rewrites left behind until the next compaction of the directory,
	// which KeyCompactions counts.
	KeyBytes, KeyDeadBytes int64
	KeyCompactions         int
	// HintsPending counts the sealed data files whose hint files are
	// queued or being written (each holds memory while it is written), or
	// wait to be written again after a failure (a full disk, say): they
	// are retried in the background, every 10 s at first and less often
	// while they keep failing, so that the next Open reads them.
	HintsPending int
	// Commits counts the commits (writes, batches, transactions) since
	// Open, and Groups the group commits that wrote them: one write, and
	// under SyncAlways one fsync, each. Commits/Groups is the average
	// group size.
	Commits, Groups uint64
}

// WriteStatus reports whether the database takes writes now: nil if it
// does, else the error Stats would report as WriteError (writes stopped,
// for good) or, if there is none, as WriteRefused (the last write was
// refused for lack of space and there has been no room for it since; the
// next one may go through). It takes no lock, so a health check or a front end may
// call it for every request; it is safe for concurrent use.
func (db *DB) WriteStatus() error {
	if p := db.stopped.Load(); p != nil {
		return *p
	}
	if p := db.refused.Load(); p != nil {
		return p.err
	}
	return nil
}

// Stats returns a summary of the database.
func (db *DB) Stats() Stats {
	active := db.active.Load()
	db.cmu.Lock()
	werr := db.writeErr
	db.cmu.Unlock()
	var refused error
	if p := db.refused.Load(); p != nil {
		refused = p.err
	}
	db.mu.RLock()
	s := Stats{
		Commits:       db.commits.Load(),
		Groups:        db.groups.Load(),
		Keys:          db.tree.Len(),
		ExpiringKeys:  len(db.expiring),
		Version:       db.version,
		OpenSnapshots: db.snapshots,
		Watches:       db.outstandingWatches(),
		Recovery:      db.recovery,
		WriteError:    werr,
		WriteRefused:  refused,
		Merge:         db.mergeProgress,
		Merges:        db.merges,
		MergeFailures: db.mergeFailures,
		LastMerge:     db.lastMerge,
		LastMergeEnd:  db.lastMergeEnd,
		MergeTotals:   db.mergeTotals,
	}
	s.KeyBytes, s.KeyDeadBytes = db.tree.ArenaBytes()
	s.KeyCompactions = db.keyCompacts
	s.MergeTimings, s.Syncs = db.mergeTimes.get(), db.syncTimes.get()
	s.ExpiredKeys = db.expiredKeys
	s.HintsPending = len(db.hints)
	if db.hintsWriting.Load() {
		s.HintsPending++
	}
	for id, f := range db.fset.files {
		st := db.fstats[id]
		fs := FileStats{ID: id, Size: f.Size(), DiskBytes: f.DiskSize(), Active: active != nil && active.ID == id}
		if st != nil {
			fs.LiveBytes, fs.LiveKeys = st.live, st.liveKeys
			fs.DeadBytes, fs.TombstoneBytes = st.dead, st.tomb
		}
		s.LiveBytes += fs.LiveBytes
		s.DeadBytes += fs.DeadBytes
		s.DiskBytes += fs.DiskBytes
		s.Files = append(s.Files, fs)
	}
	slices.SortFunc(s.Files, func(a, b FileStats) int { return cmp.Compare(a.ID, b.ID) })
	db.mu.RUnlock()
	db.addHintSizes(&s)
	db.hintMu.Lock()
	s.HintsPending += len(db.hintsLater)
	db.hintMu.Unlock()
	return s
}

// addHintSizes fills in the lengths of the files' hint files and adds them
// to s.DiskBytes. A hint file never changes once written (in the
// background, after its data file is sealed), so each length is read from
// the file system once and remembered until its data file is gone.
func (db *DB) addHintSizes(s *Stats) {
	db.hintMu.Lock()
	defer db.hintMu.Unlock()
	if db.hintSizes == nil {
		db.hintSizes = map[uint32]int64{}
	}
	for i := range s.Files {
		f := &s.Files[i]
		if f.Active {
			continue // the active file has no hint file
		}
		n, ok := db.hintSizes[f.ID]
		if !ok {
			fi, err := db.fs.Stat(filepath.Join(db.dir, segment.HintName(f.ID)))
			if err != nil {
				continue // not written yet
			}
			n = fi.Size()
			db.hintSizes[f.ID] = n
		}
		f.HintBytes = n
		s.DiskBytes += n
	}
	if len(db.hintSizes) > len(s.Files) {
		for id := range db.hintSizes {
			if _, ok := slices.BinarySearchFunc(s.Files, id, func(f FileStats, id uint32) int { return cmp.Compare(f.ID, id) }); !ok {
				delete(db.hintSizes, id)
			}
		}
	}
}
