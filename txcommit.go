package caskade

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade/internal/keydir"
	"github.com/tidwall/btree"
)

// keyRange is [begin, end); a nil end means the end of the key space.
type keyRange struct {
	begin, end []byte
}

func (r keyRange) contains(k []byte) bool {
	return bytes.Compare(k, r.begin) >= 0 && (r.end == nil || bytes.Compare(k, r.end) < 0)
}

func (r keyRange) overlaps(o keyRange) bool {
	return (r.end == nil || bytes.Compare(o.begin, r.end) < 0) && (o.end == nil || bytes.Compare(r.begin, o.end) < 0)
}

// point reports whether the range holds exactly one key (begin+"\x00").
func (r keyRange) point() bool {
	return r.end != nil && len(r.end) == len(r.begin)+1 && r.end[len(r.end)-1] == 0 && bytes.HasPrefix(r.end, r.begin)
}

func keyAfter(k []byte) []byte { return append(k[:len(k):len(k)], 0) }

// txnReq is the transactional part of a commit request: the commit
// succeeds only if nothing in reads changed after readVersion.
type txnReq struct {
	readVersion uint64
	deadline    time.Time // the transaction's, see liveTxn; past it the commit fails as too old
	readTime    int64     // the instant (Unix ms) at which the reads judged expiry
	reads       []keyRange
	writes      []keyRange // explicit write conflict ranges
	watches     []*Watch   // armed by the commit leader right after the commit
}

// history remembers what commits changed that the key directory no longer
// shows, for as long as a live transaction may need it: keys deleted (a
// deleted key has no entry, so no version to compare), keys dropped from
// memory after they expired (a reader that saw one live must see it gone),
// and explicit write conflict ranges. It is recorded only while
// transactions are live. Guarded by DB.mu.
type history struct {
	deleted *btree.BTreeG[histItem]
	queue   []histItem // in version order, for pruning
	ranges  []histRange
}

// histItem is a key that left the key directory: deleted by the commit at
// version, or dropped after it expired at expiry (each 0 if not).
type histItem struct {
	key     string
	version uint64
	expiry  int64
	until   uint64 // forgotten once every live reader reads at this version or later
}

// changedFor reports whether a reader at readVersion, judging expiry at
// readTime, read the key before it left: a deletion after its version, or
// a drop of a key that was live when it read.
func (h histItem) changedFor(readVersion uint64, readTime int64) bool {
	return h.version > readVersion || h.expiry > readTime
}

// expiredSince reports whether e, live for a reader that judged expiry at
// readTime, has expired by now: to that reader, a change.
func expiredSince(e keydir.Entry, readTime, now int64) bool {
	return e.Expiry > readTime && e.Expiry <= now
}

// remember adds h to the history, merged with what it holds for the key.
// The caller holds mu.
func (hs *history) remember(h histItem) {
	if cur, ok := hs.deleted.Get(h); ok {
		h.version, h.expiry, h.until = max(h.version, cur.version), max(h.expiry, cur.expiry), max(h.until, cur.until)
	}
	hs.deleted.Set(h)
	hs.queue = append(hs.queue, h)
}

type histRange struct {
	r       keyRange
	version uint64
}

func newHistory() *history {
	return &history{deleted: btree.NewBTreeGOptions(func(a, b histItem) bool { return a.key < b.key }, btree.Options{NoLocks: true})}
}

// liveTxns tracks the read versions of open transactions.
type liveTxns struct {
	count atomic.Int64
	seq   uint64
	reads map[uint64]liveTxn // by id; guarded by DB.mu
}

// liveTxn is what the history keeps for an open transaction.
type liveTxn struct {
	version uint64 // its read version
	// deadline is when it outlives TxnLifetime (zero: never, as for
	// SnapshotForChecks). Past it the transaction can neither read nor
	// commit, so the history keeps nothing for it: one left open by
	// mistake does not make the history grow without bound.
	deadline time.Time
}

// outlived reports whether a transaction with this deadline (zero: none)
// has outlived its lifetime at now.
func outlived(deadline, now time.Time) bool { return !deadline.IsZero() && now.After(deadline) }

// txnConflict reports whether a transaction read anything that changed
// after it read: written after its read version by a commit already
// applied (the key directory's versions, and the history) or by an earlier
// commit of this same group (whose versions are all newer), or expired
// between its read time and now, the group's instant.
//
// Ranges (not single keys) that precheck checked (checked.at > 0) are
// checked against the writes after it only (db.pre.recent), and against
// the first expiry it found in them, not walked.
func (db *DB) txnConflict(t *txnReq, checked prechecked, now int64, overlay map[string]int, applies []apply, wranges []histRange) bool {
	changed := func(e keydir.Entry) bool { // since the transaction read
		return e.Version > t.readVersion || expiredSince(e, t.readTime, now)
	}
	for _, r := range t.reads {
		point := r.point()
		switch {
		case point && overlay != nil:
			// Most reads are of one key: one lookup, not a walk of
			// everything the group changed so far.
			if _, ok := overlay[string(r.begin)]; ok {
				return true
			}
		case overlay != nil:
			for k := range overlay {
				if r.contains([]byte(k)) {
					return true
				}
			}
		default:
			for _, a := range applies {
				if r.contains(a.key) {
					return true
				}
			}
		}
		if point {
			// Probe, unlike Get, reads no key from the arena (a likely
			// cache miss in the leader, for every key a transaction read)
			// when the key's hint is unique in its leaf: its candidate
			// may then be another key's, which matters only if it changed.
			e, ok, verify := db.tree.Probe(r.begin)
			if ok && verify && changed(e) {
				e, ok = db.tree.Get(r.begin)
			}
			if ok && changed(e) {
				return true
			}
			if it, ok := db.hist.deleted.Get(histItem{key: string(r.begin)}); ok && it.changedFor(t.readVersion, t.readTime) {
				return true
			}
		} else if checked.at > 0 {
			if db.pre.wroteInto(r, checked.at) || (checked.expiry != 0 && checked.expiry <= now) {
				return true
			}
		} else {
			it := db.tree.Iter()
			for ok := it.Seek(r.begin); ok; ok = it.Next() {
				if r.end != nil && bytes.Compare(it.Key(), r.end) >= 0 {
					break
				}
				if changed(it.Entry()) {
					return true
				}
			}
			conflict := false
			db.hist.deleted.Ascend(histItem{key: string(r.begin)}, func(h histItem) bool {
				if r.end != nil && h.key >= string(r.end) {
					return false
				}
				conflict = h.changedFor(t.readVersion, t.readTime)
				return !conflict
			})
			if conflict {
				return true
			}
		}
		for _, h := range db.hist.ranges {
			if h.version > t.readVersion && h.r.overlaps(r) {
				return true
			}
		}
		// And the write conflict ranges of the group's earlier commits,
		// whose versions are all newer.
		for _, h := range wranges {
			if h.r.overlaps(r) {
				return true
			}
		}
	}
	return false
}

// recordHistory remembers a group's deletions and write conflict ranges if
// any transaction is live, and forgets what no live transaction needs; it
// also keeps the group's keys for pending prechecks. The caller holds mu.
func (db *DB) recordHistory(applies []apply, wranges []histRange, ver uint64) {
	db.pre.record(applies)
	if db.txns.count.Load() == 0 && len(db.hist.queue) == 0 && len(db.hist.ranges) == 0 {
		return
	}
	if db.txns.count.Load() > 0 {
		for _, a := range applies {
			switch {
			case !a.del, a.carrier:
			case a.version != 0:
				db.hist.remember(histItem{key: string(a.key), version: a.version, until: a.version})
			case a.expiry != 0:
				// A deletion without a version dropped from memory a key
				// that had expired (applyGroup noted when): a change to
				// the readers that saw it live. A reader that registers
				// after this group reads at ver or later and did not.
				db.hist.remember(histItem{key: string(a.key), expiry: a.expiry, until: ver + 1})
			}
			// Otherwise the key was deleted earlier in the group: its
			// deletion is the change.
		}
		db.hist.ranges = append(db.hist.ranges, wranges...)
	}
	// Forget what is older than every live transaction's read version,
	// but for those past their deadline: a group evaluated from now on
	// fails them as too old (runGroup) without a look at the history.
	oldest := ver
	now := db.opts.Now()
	for _, lt := range db.txns.reads {
		if !outlived(lt.deadline, now) {
			oldest = min(oldest, lt.version)
		}
	}
	n := 0
	for n < len(db.hist.queue) && db.hist.queue[n].until <= oldest {
		h := db.hist.queue[n]
		if cur, ok := db.hist.deleted.Get(h); ok && cur.until == h.until {
			db.hist.deleted.Delete(h)
		}
		n++
	}
	db.hist.queue = db.hist.queue[n:]
	if len(db.hist.queue) == 0 {
		db.hist.queue = nil
	}
	kept := db.hist.ranges[:0]
	for _, h := range db.hist.ranges {
		if h.version > oldest {
			kept = append(kept, h)
		}
	}
	db.hist.ranges = kept
}

// Atomic operation types, with FoundationDB's semantics.
type atomicOp uint8

const (
	atomicAdd atomicOp = iota + 1
	atomicAnd
	atomicOr
	atomicXor
	atomicMax
	atomicMin
	atomicByteMax
	atomicByteMin
	atomicAppendIfFits
	atomicCompareAndClear
)

// applyAtomic computes the result of an atomic operation on the current
// value cur (present or not) with operand param. It returns the new value,
// or del to clear the key.
func applyAtomic(op atomicOp, cur []byte, present bool, param []byte, maxValue int) (out []byte, del bool) {
	resized := func() []byte {
		b := make([]byte, len(param))
		copy(b, cur)
		return b
	}
	switch op {
	case atomicAdd:
		b := resized()
		var carry uint16
		for i := range b {
			s := uint16(b[i]) + uint16(param[i]) + carry
			b[i], carry = byte(s), s>>8
		}
		return b, false
	case atomicAnd, atomicOr, atomicXor:
		if !present && op == atomicAnd {
			return bytes.Clone(param), false
		}
		b := resized()
		for i := range b {
			switch op {
			case atomicAnd:
				b[i] &= param[i]
			case atomicOr:
				b[i] |= param[i]
			default:
				b[i] ^= param[i]
			}
		}
		return b, false
	case atomicMax, atomicMin:
		if !present {
			return bytes.Clone(param), false
		}
		b := resized()
		c := compareLE(b, param)
		if (op == atomicMax && c >= 0) || (op == atomicMin && c <= 0) {
			return b, false
		}
		return bytes.Clone(param), false
	case atomicByteMax, atomicByteMin:
		if !present {
			return bytes.Clone(param), false
		}
		c := bytes.Compare(cur, param)
		if (op == atomicByteMax && c >= 0) || (op == atomicByteMin && c <= 0) {
			return bytes.Clone(cur), false
		}
		return bytes.Clone(param), false
	case atomicAppendIfFits:
		if len(cur)+len(param) > maxValue {
			return bytes.Clone(cur), !present
		}
		return append(bytes.Clone(cur), param...), false
	case atomicCompareAndClear:
		if present && bytes.Equal(cur, param) {
			return nil, true
		}
		return bytes.Clone(cur), !present
	}
	panic("caskade: unknown atomic operation")
}

// compareLE compares two equal-length little-endian unsigned integers.
func compareLE(a, b []byte) int {
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// versionstamp returns the 10-byte versionstamp of a commit: its version,
// big-endian, and the order of the transaction within the commit (always 0,
// since every transaction gets its own version).
func versionstamp(v uint64) [10]byte {
	var vs [10]byte
	binary.BigEndian.PutUint64(vs[:], v)
	return vs
}

// fillVersionstamp returns b without its 4-byte little-endian offset
// suffix, with the 10 bytes at that offset replaced by vs.
func fillVersionstamp(b []byte, vs [10]byte) ([]byte, bool) {
	if len(b) < 4 {
		return nil, false
	}
	off := int(binary.LittleEndian.Uint32(b[len(b)-4:]))
	body := bytes.Clone(b[:len(b)-4])
	if off < 0 || off+10 > len(body) {
		return nil, false
	}
	copy(body[off:], vs[:])
	return body, true
}

// precheckState lets the commit leader check a commit's range reads
// without walking them: precheck walks them beforehand, in the committing
// goroutine, on a clone of the key directory at some version, and the
// leader then looks only at the keys written after that version, which
// record keeps while any precheck is pending. Walking a range costs time
// in proportion to its keys; in the leader it would hold up every other
// commit. Guarded by DB.mu.
type precheckState struct {
	seq    uint64            // the last id handed out
	at     map[uint64]uint64 // id -> the version its ranges were checked up to
	recent []recentWrite     // keys written after the oldest of those, in version order
}

type recentWrite struct {
	key     string
	version uint64
}

// versionedRange is a range read at a read version and read time.
type versionedRange struct {
	r           keyRange
	readVersion uint64
	readTime    int64
}

// prechecked is what precheck found of a commit's range reads: checked up
// to version at (0: not prechecked), and the first instant at which a key
// they saw live expires (0: none has an expiry).
type prechecked struct {
	at     uint64
	expiry int64
}

// rangeReads lists the range reads (not single keys) that a commit's
// transaction or CheckRange operations made, for precheck.
func rangeReads(ops []op, t *txnReq) []versionedRange {
	var rs []versionedRange
	if t != nil {
		for _, r := range t.reads {
			if !r.point() {
				rs = append(rs, versionedRange{r, t.readVersion, t.readTime})
			}
		}
	}
	for i := range ops {
		if ops[i].kind == opCheckRange {
			rs = append(rs, versionedRange{keyRange{ops[i].key, ops[i].value}, ops[i].version, ops[i].expiry})
		}
	}
	return rs
}

// precheck checks the ranges against the database as it is now, outside
// the commit leader: conflict reports a key in one of them written after
// its read version (or gone since, as far as the history knows). It
// registers the version it checked up to, p.at, under id; the leader then
// checks the ranges against the writes after p.at (txnConflict), which are
// recorded until unprecheck(id), and against p.expiry, the first expiry of
// a key in them that their reader saw live.
func (db *DB) precheck(rs []versionedRange) (id uint64, p prechecked, conflict bool) {
	db.mu.Lock()
	if db.snap == nil || db.snapVer != db.version {
		db.snap, db.snapVer = db.tree.Clone(), db.version
	}
	tree := db.snap
	p.at = db.version
	db.pre.seq++
	id = db.pre.seq
	if db.pre.at == nil {
		db.pre.at = map[uint64]uint64{}
	}
	db.pre.at[id] = p.at
	db.mu.Unlock()
	// Walk the clone without a lock: commits go on meanwhile, and are
	// recorded for the leader. A key that expires later is gone then
	// (dropped from memory, perhaps): the leader compares p.expiry with
	// its instant.
	for _, vr := range rs {
		it := tree.Iter()
		for ok := it.Seek(vr.r.begin); ok; ok = it.Next() {
			if vr.r.end != nil && bytes.Compare(it.Key(), vr.r.end) >= 0 {
				break
			}
			e := it.Entry()
			if e.Version > vr.readVersion {
				return id, p, true
			}
			if e.Expiry > vr.readTime && (p.expiry == 0 || e.Expiry < p.expiry) {
				p.expiry = e.Expiry
			}
		}
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	for _, vr := range rs {
		db.hist.deleted.Ascend(histItem{key: string(vr.r.begin)}, func(h histItem) bool {
			if vr.r.end != nil && h.key >= string(vr.r.end) {
				return false
			}
			conflict = h.changedFor(vr.readVersion, vr.readTime)
			return !conflict
		})
		if conflict {
			return id, p, true
		}
	}
	return id, p, false
}

// unprecheck ends precheck id's registration, and forgets the writes that
// no pending precheck needs.
func (db *DB) unprecheck(id uint64) {
	db.mu.Lock()
	defer db.mu.Unlock()
	delete(db.pre.at, id)
	if len(db.pre.at) == 0 {
		db.pre.recent = nil
		return
	}
	oldest := uint64(math.MaxUint64)
	for _, v := range db.pre.at {
		oldest = min(oldest, v)
	}
	n := 0
	for n < len(db.pre.recent) && db.pre.recent[n].version <= oldest {
		n++
	}
	db.pre.recent = db.pre.recent[n:]
}

// record keeps the keys a group wrote while a precheck is pending.
func (p *precheckState) record(applies []apply) {
	if len(p.at) == 0 {
		return
	}
	for _, a := range applies {
		if a.version == 0 || a.carrier {
			continue // a key already gone dropped from memory, or a version carrier: no change (see recordHistory)
		}
		p.recent = append(p.recent, recentWrite{key: string(a.key), version: a.version})
	}
}

// wroteInto reports whether a commit after version wrote a key in r.
func (p *precheckState) wroteInto(r keyRange, version uint64) bool {
	for i := len(p.recent) - 1; i >= 0 && p.recent[i].version > version; i-- {
		if k := p.recent[i].key; k >= string(r.begin) && (r.end == nil || k < string(r.end)) {
			return true
		}
	}
	return false
}
