package caskade

import (
	"cmp"
	"slices"
)

// FileStats describes one data file.
type FileStats struct {
	ID        uint32
	Size      int64 // bytes of the file's header and records
	DiskBytes int64 // the file's length on disk: Size, plus space reserved ahead of the records of the active file
	LiveBytes int64 // bytes of records the key directory points to
	DeadBytes int64 // bytes of overwritten, deleted or expired records and tombstones
	LiveKeys  int
	Active    bool // the file taking appends
}

// Stats is a point-in-time summary of the database.
type Stats struct {
	// Keys counts the keys in the key directory, including expired keys
	// that active expiry has not yet dropped.
	Keys int
	// ExpiringKeys counts the keys with a TTL.
	ExpiringKeys int
	// Version is the newest committed version.
	Version uint64
	// Files lists the data files in id order.
	Files []FileStats
	// LiveBytes, DeadBytes and DiskBytes sum the files'. DiskBytes counts
	// the space the active file reserves ahead of its records (up to 4 MiB
	// allocated for mapped appends under SyncNone and SyncEverySec, a few
	// MiB of zeros under SyncAlways); hint files are not counted.
	LiveBytes, DeadBytes, DiskBytes int64
	// OpenSnapshots counts open snapshots and iterators.
	OpenSnapshots int
	// Recovery describes what Open found.
	Recovery RecoveryStats
	// WriteError is the error that stopped writes, if any.
	WriteError error
	// Merge is the progress of a running merge.
	Merge MergeProgress
	// KeyBytes counts the bytes of keys (and expiries) the key directory
	// holds in memory for live keys, and KeyDeadBytes those that deletions
	// and rewrites left behind until the next compaction of the directory,
	// which KeyCompactions counts.
	KeyBytes, KeyDeadBytes int64
	KeyCompactions         int
	// HintsPending counts the sealed data files whose hint files are
	// queued or being written; each holds memory while it is written.
	HintsPending int
	// Commits counts the commits (writes, batches, transactions) since
	// Open, and Groups the group commits that wrote them: one write, and
	// under SyncAlways one fsync, each. Commits/Groups is the average
	// group size.
	Commits, Groups uint64
}

// Stats returns a summary of the database.
func (db *DB) Stats() Stats {
	active := db.active.Load()
	db.cmu.Lock()
	werr := db.writeErr
	db.cmu.Unlock()
	db.mu.RLock()
	defer db.mu.RUnlock()
	s := Stats{
		Commits:       db.commits.Load(),
		Groups:        db.groups.Load(),
		Keys:          db.tree.Len(),
		ExpiringKeys:  len(db.expiring),
		Version:       db.version,
		OpenSnapshots: db.snapshots,
		Recovery:      db.recovery,
		WriteError:    werr,
		Merge:         db.mergeProgress,
	}
	s.KeyBytes, s.KeyDeadBytes = db.tree.ArenaBytes()
	s.KeyCompactions = db.keyCompacts
	s.HintsPending = len(db.hints)
	if db.hintsWriting.Load() {
		s.HintsPending++
	}
	for id, f := range db.fset.files {
		st := db.fstats[id]
		fs := FileStats{ID: id, Size: f.Size(), DiskBytes: f.DiskSize(), Active: active != nil && active.ID == id}
		if st != nil {
			fs.LiveBytes, fs.LiveKeys = st.live, st.liveKeys
			fs.DeadBytes = st.dead
		}
		s.LiveBytes += fs.LiveBytes
		s.DeadBytes += fs.DeadBytes
		s.DiskBytes += fs.DiskBytes
		s.Files = append(s.Files, fs)
	}
	slices.SortFunc(s.Files, func(a, b FileStats) int { return cmp.Compare(a.ID, b.ID) })
	return s
}
