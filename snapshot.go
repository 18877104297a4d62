package caskade

import (
	"bytes"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade/internal/keydir"
)

// view is a consistent, immutable state of the key directory: a clone of
// the tree at one commit version, read at one instant for expiry.
type view struct {
	db      *DB
	tree    *keydir.Tree
	files   *fileSet
	version uint64
	nowMs   int64
}

// newView returns the current state. Clones are cached per version, so
// taking many snapshots between two commits costs one clone.
func (db *DB) newView() *view {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.newViewLocked()
}

func (db *DB) newViewLocked() *view {
	if db.snap == nil || db.snapVer != db.version {
		db.snap, db.snapVer = db.tree.Clone(), db.version
	}
	v := &view{db: db, tree: db.snap, files: db.fset, version: db.version, nowMs: db.nowMs()}
	v.files.acquire()
	db.snapshots++
	return v
}

func (v *view) release() {
	v.db.mu.Lock()
	v.db.snapshots--
	v.db.mu.Unlock()
	v.files.release()
}

// readerHold is what an open Tx, Snapshot or Iterator holds of the
// database: a view, which keeps the data files it reads open (merge cannot
// delete them) and the key directory's state in memory, and perhaps a
// registration as a live reader, which makes commits remember deletions.
// A holder that the caller drops without Rollback or Close would keep
// them for the life of the process, so the holders that callers get
// register release as a cleanup (runtime.AddCleanup) and stop it when
// they end; the runtime then releases a dropped one's hold once it finds
// the holder unreachable.
type readerHold struct {
	v     *view
	txid  uint64      // registered as a live reader, or 0
	iters []*Iterator // a transaction's fast-path iterators
	// watches are a transaction's watches until its commit arms them:
	// those of a transaction dropped unfinished are cancelled here, as
	// FoundationDB cancels a destroyed transaction's, so that they stop
	// counting against Options.MaxWatches.
	watches []*Watch
}

func (h *readerHold) release() {
	for _, it := range h.iters {
		it.Close() // closing twice is harmless
	}
	for _, w := range h.watches {
		w.db.fireWatch(w, ErrTransactionCancelled)
	}
	h.watches = nil
	h.v.release()
	if h.txid != 0 {
		db := h.v.db
		db.mu.Lock()
		delete(db.txns.reads, h.txid)
		db.mu.Unlock()
		db.txns.count.Add(-1)
	}
}

// probe is lookup for a reader that then reads the value with readProbed
// (see keydir.Tree.Probe).
func (v *view) probe(key []byte) (e keydir.Entry, ok, verify bool) {
	e, ok, verify = v.tree.Probe(key)
	if !ok {
		return keydir.Entry{}, false, false
	}
	if e.Expired(v.nowMs) {
		v.db.expiredOnRead(key, e.Version) // see DB.Lookup about verify
		return keydir.Entry{}, false, false
	}
	return e, true, verify
}

func (v *view) lookup(key []byte) (keydir.Entry, bool) {
	e, ok := v.tree.Get(key)
	if !ok {
		return keydir.Entry{}, false
	}
	if e.Expired(v.nowMs) {
		v.db.expiredOnRead(key, e.Version)
		return keydir.Entry{}, false
	}
	return e, true
}

// Snapshot is a consistent, point-in-time, read-only view of the database:
// it sees every commit up to its version and none after, and it judges
// expiry at the instant it was taken. Taking one is O(1). It is safe for
// concurrent use. Close it when done: until then it keeps the data files it
// reads (merge cannot delete them) and the state of the key directory it
// sees in memory. One dropped without Close is released only once the
// garbage collector finds it unreachable.
type Snapshot struct {
	v       *view
	closed  atomic.Bool
	txid    uint64 // registered as a live reader (SnapshotForChecks), or 0
	cleanup runtime.Cleanup
}

// guard registers the cleanup that releases s if it is dropped open.
func (s *Snapshot) guard() {
	s.cleanup = runtime.AddCleanup(s, (*readerHold).release, &readerHold{v: s.v, txid: s.txid})
}

// Snapshot returns a view of the database as of now.
func (db *DB) Snapshot() *Snapshot {
	s := &Snapshot{v: db.newView()}
	s.guard()
	if db.shut.Load() {
		// Of a closed database: every read of it returns ErrClosed.
		s.Close()
	}
	return s
}

// SnapshotForChecks is Snapshot for a read-modify-write that checks its
// range reads at commit with Batch.CheckRange: until it is closed, the
// database remembers the deletions committed after it, as it does for an
// open transaction. Close it promptly; what it keeps grows with the
// deletions made meanwhile.
func (db *DB) SnapshotForChecks() *Snapshot {
	// Register before taking the view, so that every deletion after it is
	// recorded.
	db.txns.count.Add(1)
	db.mu.Lock()
	db.txns.seq++
	s := &Snapshot{txid: db.txns.seq}
	s.v = db.newViewLocked()
	db.txns.reads[s.txid] = liveTxn{version: s.v.version}
	db.mu.Unlock()
	s.guard()
	if db.shut.Load() {
		s.Close()
	}
	return s
}

// Version returns the commit version the snapshot sees up to.
func (s *Snapshot) Version() uint64 { return s.v.version }

// Time returns the instant at which the snapshot judges expiry.
func (s *Snapshot) Time() time.Time { return time.UnixMilli(s.v.nowMs) }

// Get returns the value of key as of the snapshot, or ErrNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	e, ok, verify := s.v.probe(key)
	if !ok {
		return nil, ErrNotFound
	}
	v, _, err := s.v.db.readProbed(s.v.files, key, e, verify)
	return v, err
}

// Lookup returns the value of key as of the snapshot with its KeyInfo
// (flags included), or ErrNotFound.
func (s *Snapshot) Lookup(key []byte) ([]byte, KeyInfo, error) {
	if s.closed.Load() {
		return nil, KeyInfo{}, ErrClosed
	}
	e, ok, verify := s.v.probe(key)
	if !ok {
		return nil, KeyInfo{}, ErrNotFound
	}
	v, flags, err := s.v.db.readProbed(s.v.files, key, e, verify)
	if err != nil {
		return nil, KeyInfo{}, err
	}
	info := infoOf(e)
	info.Flags = flags
	return v, info, nil
}

// Stat returns what the snapshot knows about key, or ErrNotFound.
func (s *Snapshot) Stat(key []byte) (KeyInfo, error) {
	if s.closed.Load() {
		return KeyInfo{}, ErrClosed
	}
	e, ok := s.v.lookup(key)
	if !ok {
		return KeyInfo{}, ErrNotFound
	}
	return infoOf(e), nil
}

// NewIterator returns an iterator over the snapshot. It stays valid after
// the snapshot is closed, until its own Close.
func (s *Snapshot) NewIterator(opts *IterOptions) (*Iterator, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	s.v.db.mu.Lock()
	s.v.db.snapshots++
	s.v.db.mu.Unlock()
	s.v.files.acquire()
	it := newIterator(s.v, opts)
	it.guard()
	return it, nil
}

// GetKey resolves a key selector against the snapshot (see KeySelector).
func (s *Snapshot) GetKey(sel KeySelector) ([]byte, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.v.getKey(sel), nil
}

// Range returns the pairs with keys in [begin, end) of the snapshot; see
// DB.Range.
func (s *Snapshot) Range(begin, end []byte, opts *RangeOptions) ([]KeyValue, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.v.rangeRead(begin, end, opts)
}

// RangeSelect returns the pairs between two key selectors; see
// DB.RangeSelect.
func (s *Snapshot) RangeSelect(begin, end KeySelector, opts *RangeOptions) ([]KeyValue, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	return s.v.rangeSelect(begin, end, opts)
}

// Close releases the snapshot. Closing twice returns ErrClosed.
func (s *Snapshot) Close() error {
	if s.closed.Swap(true) {
		return ErrClosed
	}
	s.cleanup.Stop()
	(&readerHold{v: s.v, txid: s.txid}).release()
	return nil
}

// KeyValue is one pair of a range read. Both slices are the caller's own.
type KeyValue struct {
	Key   []byte
	Value []byte // nil for KeysOnly reads
}

// RangeOptions modify a range read. The zero value (or nil) reads every pair
// in ascending order.
type RangeOptions struct {
	// Limit caps the number of pairs returned; 0 means no limit. A
	// negative limit fails the read with ErrRangeLimitsInvalid (2012
	// range_limits_invalid), as FoundationDB refuses the row limits below
	// its own "unlimited" sentinel of -1 (which the Go binding's slice
	// reads refuse too, with 2210 exact_mode_without_limits): here 0
	// alone means unlimited.
	Limit int
	// Reverse returns pairs in descending key order (the Limit pairs
	// nearest the end of the range).
	Reverse bool
	// KeysOnly skips reading values.
	KeysOnly bool
}

// check fails if the options are invalid: a negative Limit.
func (o *RangeOptions) check() error {
	if o.Limit < 0 {
		return fmt.Errorf("%w: limit %d", ErrRangeLimitsInvalid, o.Limit)
	}
	return nil
}

// PrefixEnd returns the smallest key greater than every key with the given
// prefix, or nil (the end of the key space) if there is none, so that
// [prefix, PrefixEnd(prefix)) is exactly the keys with that prefix.
func PrefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Range returns the pairs whose keys are in [begin, end) as of now. A nil
// (or empty) begin means the start of the key space; a nil end means its
// end. Use PrefixEnd for prefix scans.
func (db *DB) Range(begin, end []byte, opts *RangeOptions) ([]KeyValue, error) {
	if db.shut.Load() {
		return nil, ErrClosed
	}
	v := db.newView()
	defer v.release()
	return v.rangeRead(begin, end, opts)
}

// RangeSelect returns the pairs from the key begin resolves to (inclusive)
// up to the key end resolves to (exclusive), as FoundationDB's get_range
// with key selectors does.
func (db *DB) RangeSelect(begin, end KeySelector, opts *RangeOptions) ([]KeyValue, error) {
	if db.shut.Load() {
		return nil, ErrClosed
	}
	v := db.newView()
	defer v.release()
	return v.rangeSelect(begin, end, opts)
}

// CountKeys counts the keys in [begin, end) (a nil end: to the end of the
// key space), and those of them with a TTL, as Stats.Keys and
// Stats.ExpiringKeys count them: with the keys that expired but that
// active expiry has not dropped yet, so that the totals minus the counts
// of some ranges are the counts of the rest. It reads no values; its cost
// grows with the keys in the range.
func (db *DB) CountKeys(begin, end []byte) (keys, expiring int, err error) {
	if db.shut.Load() {
		return 0, 0, ErrClosed
	}
	v := db.newView()
	defer v.release()
	it := v.tree.Iter()
	for ok := it.Seek(begin); ok; ok = it.Next() {
		k, e := it.KeyEntry()
		if end != nil && bytes.Compare(k, end) >= 0 {
			break
		}
		keys++
		if e.Expiry != 0 {
			expiring++
		}
	}
	return keys, expiring, nil
}

// GetKey resolves a key selector against the current state (see
// KeySelector).
func (db *DB) GetKey(sel KeySelector) ([]byte, error) {
	if db.shut.Load() {
		return nil, ErrClosed
	}
	v := db.newView()
	defer v.release()
	return v.getKey(sel), nil
}

// NewIterator returns an iterator over a snapshot of the database taken
// now. Close it when done.
func (db *DB) NewIterator(opts *IterOptions) (*Iterator, error) {
	if db.shut.Load() {
		return nil, ErrClosed
	}
	it := newIterator(db.newView(), opts)
	it.guard()
	return it, nil
}

func (v *view) rangeRead(begin, end []byte, opts *RangeOptions) ([]KeyValue, error) {
	var o RangeOptions
	if opts != nil {
		o = *opts
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if end != nil && bytes.Compare(begin, end) > 0 {
		return nil, ErrInvalidRange
	}
	it := newIterator(v, &IterOptions{LowerBound: begin, UpperBound: end})
	defer it.close(false)
	var out []KeyValue
	ok := it.First()
	if o.Reverse {
		ok = it.Last()
	}
	for ; ok && (o.Limit == 0 || len(out) < o.Limit); ok = it.step(o.Reverse) {
		kv := KeyValue{Key: bytes.Clone(it.Key())}
		if kv.Key == nil {
			kv.Key = []byte{}
		}
		if !o.KeysOnly {
			val := it.Value()
			if it.Err() != nil {
				return nil, it.Err()
			}
			kv.Value = bytes.Clone(val)
		}
		out = append(out, kv)
	}
	return out, it.Err()
}

func (v *view) rangeSelect(begin, end KeySelector, opts *RangeOptions) ([]KeyValue, error) {
	b := v.resolve(begin)
	e := v.resolve(end)
	if b == nil || (e != nil && bytes.Compare(b, e) >= 0) {
		return nil, nil // begin past the last key, or an empty range
	}
	return v.rangeRead(b, e, opts)
}
