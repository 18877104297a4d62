package redis

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/caskade/caskade"
)

// The keyspace: database 0 uses keys as they are, so that the other
// protocols see the same keys; database n > 0 stores key k as
// 0xff n k. Keys of database 0 may therefore not begin with 0xff.

const dbPrefixByte = 0xff

// dbBounds returns the encoded key range [begin, end) of database db.
func dbBounds(db int) (begin, end []byte) {
	if db == 0 {
		return nil, []byte{dbPrefixByte}
	}
	p := []byte{dbPrefixByte, byte(db)}
	return p, caskade.PrefixEnd(p)
}

// userKey returns the key as the client of its database sees it, and the
// database. ok is false for keys under 0xff that belong to no database.
func userKey(raw []byte) (key []byte, db int, ok bool) {
	if len(raw) == 0 || raw[0] != dbPrefixByte {
		return raw, 0, true
	}
	if len(raw) < 2 || raw[1] == 0 {
		return raw, 0, false
	}
	return raw[2:], int(raw[1]), true
}

// Write operation kinds of a store.
const (
	opSet = iota
	opDel
	opDelRange
	opAdd // only in a deferred commit (pipeline.go), which reads nothing after it
)

// wop is one buffered write. Keys and values are encoded keys and are
// owned by the store (or by the command arguments, for the life of the
// command).
type wop struct {
	kind     uint8
	key, val []byte
	end      []byte // opDelRange; nil: to the end of the key space
	exp      int64  // Unix ms; 0: none
	delta    int64  // opAdd
	flags    uint32 // opSet: memcached client flags (caskade.SetOptions.Flags)
}

// readRec is the version a key had when a command or transaction read it
// from the base (0: absent); the commit checks it.
type readRec struct {
	key []byte
	ver uint64
}

// store executes one command (or one EXEC) against the database: reads
// see the database (or a snapshot of it) overlaid with the writes made so
// far, writes are buffered and committed atomically by commit, with a
// Batch.Check of every key read, so each command is an atomic
// read-modify-write and each EXEC is serializable for the keys it reads.
// It is owned by one connection and reused.
type store struct {
	db     *caskade.DB
	snap   *caskade.Snapshot
	record bool // record reads for checks
	reads  []readRec
	ops    []wop
	opIdx  map[string]int // with many ops: key -> index of last point op
	ranges []int          // indexes of range ops
	now    time.Time
	nowMs  int64
	arena  []byte
	batch  caskade.Batch
	checks []readRec // extra checks (WATCH)
	// With checkRanges (EXEC), the ranges read: the commit checks that
	// nothing in them changed after the snapshot (Batch.CheckRange).
	checkRanges bool
	rangeReads  []keyRange
	// turn, when set, is the command's caskade.Turn: once it holds the
	// turn lock, commits go through it (Turn.Write).
	turn *caskade.Turn
	// origin, when set, is the client whose writes these are, for its
	// NOLOOP tracking (caskade.Batch.SetOrigin).
	origin any
}

// keyRange is an encoded key range [begin, end); nil end: to the end.
type keyRange struct{ begin, end []byte }

func (st *store) begin(db *caskade.DB, record bool) { st.beginAt(db, record, time.Now()) }

// beginAt is begin with the current time given.
func (st *store) beginAt(db *caskade.DB, record bool, now time.Time) {
	st.db = db
	st.record = record
	st.reads = st.reads[:0]
	clear(st.ops)
	st.ops = st.ops[:0]
	st.opIdx = nil
	st.ranges = st.ranges[:0]
	st.checks = st.checks[:0]
	st.rangeReads = st.rangeReads[:0]
	st.checkRanges = false
	st.turn = nil
	st.origin = nil
	st.now = now
	st.nowMs = now.UnixMilli()
	if cap(st.arena) > 1<<20 {
		st.arena = nil
	}
	st.arena = st.arena[:0]
}

// end releases the snapshot, if any.
func (st *store) end() {
	if st.snap != nil {
		st.snap.Close()
		st.snap = nil
	}
}

// useSnapshot makes the rest of the command read from one consistent
// snapshot (for commands that read several keys or ranges).
func (st *store) useSnapshot() {
	if st.snap == nil {
		if st.checkRanges {
			// Its range reads are checked at commit (CheckRange), which
			// needs the deletions made after it remembered.
			st.snap = st.db.SnapshotForChecks()
		} else {
			st.snap = st.db.Snapshot()
		}
		st.nowMs = st.snap.Time().UnixMilli()
		st.now = time.UnixMilli(st.nowMs)
	}
}

// keep copies p into the store's arena; the copy is valid until the next
// begin. Earlier copies stay valid when the arena grows.
func (st *store) keep(p []byte) []byte {
	if len(p) > cap(st.arena)-len(st.arena) {
		st.arena = make([]byte, 0, max(len(p), 2*cap(st.arena), 1024))
	}
	n := len(st.arena)
	st.arena = append(st.arena, p...)
	return st.arena[n:len(st.arena):len(st.arena)]
}

// keepInt stores the decimal text of n in the arena, like keep.
func (st *store) keepInt(n int64) []byte {
	if 20 > cap(st.arena)-len(st.arena) {
		st.arena = make([]byte, 0, max(2*cap(st.arena), 1024))
	}
	m := len(st.arena)
	st.arena = strconv.AppendInt(st.arena, n, 10)
	return st.arena[m:len(st.arena):len(st.arena)]
}

// enc returns the encoded key of key in database db.
func (st *store) enc(db int, key []byte) []byte {
	if db == 0 {
		return key
	}
	if 2+len(key) > cap(st.arena)-len(st.arena) {
		st.arena = make([]byte, 0, max(2+len(key), 2*cap(st.arena), 1024))
	}
	n := len(st.arena)
	st.arena = append(st.arena, dbPrefixByte, byte(db))
	st.arena = append(st.arena, key...)
	return st.arena[n:len(st.arena):len(st.arena)]
}

// entry is what a read found.
type entry struct {
	val   []byte // nil when only stat'ed
	exp   int64  // Unix ms, 0: none
	size  int
	found bool
	// flags are the memcached client flags stored beside the value (read
	// with it: 0 when only stat'ed). Commands that change a value in
	// place, its expiry or its key keep them, as memcached's append,
	// incr and touch do; those that set a new value clear them.
	flags uint32
}

// overlay returns the state of k in the buffered writes: decided is false
// if no buffered write touches k.
func (st *store) overlay(k []byte) (e entry, decided bool) {
	if len(st.ops) == 0 {
		return entry{}, false
	}
	last := -1
	if st.opIdx != nil {
		if i, ok := st.opIdx[string(k)]; ok {
			last = i
		}
		for _, r := range st.ranges {
			if r > last && inRange(k, st.ops[r].key, st.ops[r].end) {
				last = r
			}
		}
	} else {
		for i := len(st.ops) - 1; i >= 0; i-- {
			o := &st.ops[i]
			if o.kind == opDelRange {
				if inRange(k, o.key, o.end) {
					last = i
					break
				}
			} else if bytes.Equal(o.key, k) {
				last = i
				break
			}
		}
	}
	if last < 0 {
		return entry{}, false
	}
	o := &st.ops[last]
	if o.kind != opSet || (o.exp != 0 && o.exp <= st.nowMs) {
		return entry{}, true
	}
	return entry{val: o.val, exp: o.exp, size: len(o.val), found: true, flags: o.flags}, true
}

func inRange(k, begin, end []byte) bool {
	return bytes.Compare(k, begin) >= 0 && (end == nil || bytes.Compare(k, end) < 0)
}

// get reads the value and expiry of encoded key k.
func (st *store) get(k []byte) (entry, error) {
	if e, ok := st.overlay(k); ok {
		return e, nil
	}
	var (
		v    []byte
		info caskade.KeyInfo
		err  error
	)
	if st.snap != nil {
		v, info, err = st.snap.Lookup(k)
	} else {
		v, info, err = st.db.Lookup(k)
	}
	return st.found(k, v, info, err, true)
}

// stat reads the expiry and size of encoded key k, without its value.
func (st *store) stat(k []byte) (entry, error) {
	if e, ok := st.overlay(k); ok {
		e.val, e.flags = nil, 0
		return e, nil
	}
	var (
		info caskade.KeyInfo
		err  error
	)
	if st.snap != nil {
		info, err = st.snap.Stat(k)
	} else {
		info, err = st.db.Stat(k)
	}
	return st.found(k, nil, info, err, false)
}

func (st *store) found(k, v []byte, info caskade.KeyInfo, err error, withValue bool) (entry, error) {
	if errors.Is(err, caskade.ErrNotFound) {
		st.noteRead(k, 0)
		return entry{}, nil
	}
	if err != nil {
		return entry{}, err
	}
	st.noteRead(k, info.Version)
	e := entry{val: v, size: info.ValueSize, found: true, flags: info.Flags}
	if withValue && v == nil {
		e.val = []byte{}
	}
	if !info.ExpiresAt.IsZero() {
		e.exp = info.ExpiresAt.UnixMilli()
	}
	return e, nil
}

func (st *store) noteRead(k []byte, ver uint64) {
	if !st.record {
		return
	}
	for i := range st.reads {
		if bytes.Equal(st.reads[i].key, k) {
			return
		}
	}
	st.reads = append(st.reads, readRec{key: st.keep(k), ver: ver})
}

func (st *store) addOp(o wop) {
	st.ops = append(st.ops, o)
	i := len(st.ops) - 1
	if o.kind == opDelRange {
		st.ranges = append(st.ranges, i)
	}
	if st.opIdx == nil && len(st.ops) > 16 {
		st.opIdx = make(map[string]int, 64)
		for j := range st.ops {
			if st.ops[j].kind != opDelRange {
				st.opIdx[string(st.ops[j].key)] = j
			}
		}
	} else if st.opIdx != nil && o.kind != opDelRange {
		st.opIdx[string(o.key)] = i
	}
}

// set buffers k = v expiring at exp (Unix ms, 0: never). k and v must
// stay valid until the commit (arguments of the command, or kept).
func (st *store) set(k, v []byte, exp int64) {
	st.addOp(wop{kind: opSet, key: k, val: v, exp: exp})
}

// setKeep is set keeping the memcached client flags of e, what a read of
// k found: for writes that change a value in place, its expiry or its key.
func (st *store) setKeep(k, v []byte, exp int64, e entry) {
	st.addOp(wop{kind: opSet, key: k, val: v, exp: exp, flags: e.flags})
}

func (st *store) del(k []byte) {
	st.addOp(wop{kind: opDel, key: k})
}

// add buffers an increment of k's integer value by delta, made by the
// commit (caskade.Batch.AddInt). Only deferred commits use it.
func (st *store) add(k []byte, delta int64) {
	st.addOp(wop{kind: opAdd, key: k, delta: delta})
}

func (st *store) delRange(begin, end []byte) {
	st.addOp(wop{kind: opDelRange, key: begin, end: end})
}

// setOptions returns the expiry and flags of an opSet.
func (o *wop) setOptions() caskade.SetOptions {
	so := caskade.SetOptions{Flags: o.flags}
	if o.exp != 0 {
		so.ExpiresAt = time.UnixMilli(o.exp)
	}
	return so
}

// check adds a condition to the commit: k must be at version ver.
func (st *store) check(k []byte, ver uint64) {
	st.checks = append(st.checks, readRec{key: k, ver: ver})
}

// dirty reports whether there is anything to commit.
func (st *store) dirty() bool { return len(st.ops) > 0 }

// commit writes the buffered writes atomically, conditional on every key
// read still being at the version read. It returns caskade.ErrConflict
// if one changed.
func (st *store) commit() error {
	if len(st.ops) == 0 {
		return nil
	}
	if len(st.ops) == 1 && len(st.reads) == 0 && len(st.checks) == 0 && len(st.rangeReads) == 0 &&
		(st.turn == nil || !st.turn.Held()) && st.origin == nil {
		o := &st.ops[0]
		switch o.kind {
		case opSet:
			if o.flags != 0 {
				return st.db.SetEntry(o.key, o.val, o.setOptions())
			}
			if o.exp == 0 {
				return st.db.Set(o.key, o.val)
			}
			return st.db.SetWithExpiry(o.key, o.val, time.UnixMilli(o.exp))
		case opDel:
			return st.db.Delete(o.key)
		}
	}
	b := &st.batch
	b.Reset()
	if len(st.ranges) == 0 {
		// A range deletion (FLUSHDB, FLUSHALL, CSK.CLEARRANGE) is not
		// the client's own: it hears of the keys it deleted, as Redis
		// sends FLUSHALL's invalidation to every tracking client.
		b.SetOrigin(st.origin)
	}
	for _, r := range st.reads {
		b.Check(r.key, r.ver)
	}
	for _, r := range st.checks {
		b.Check(r.key, r.ver)
	}
	for _, r := range st.rangeReads {
		b.CheckRange(r.begin, r.end, st.snap)
	}
	for i := range st.ops {
		o := &st.ops[i]
		switch o.kind {
		case opSet:
			if o.flags != 0 {
				b.SetEntry(o.key, o.val, o.setOptions())
			} else if o.exp == 0 {
				b.Set(o.key, o.val)
			} else {
				b.SetWithExpiry(o.key, o.val, time.UnixMilli(o.exp))
			}
		case opDel:
			b.Delete(o.key)
		case opDelRange:
			b.DeleteRange(o.key, o.end)
		}
	}
	var err error
	if st.turn != nil {
		err = st.turn.Write(b)
	} else {
		err = st.db.Write(b)
	}
	size := 0
	for i := range st.ops {
		size += len(st.ops[i].key) + len(st.ops[i].val)
	}
	if size > 1<<20 {
		st.batch = caskade.Batch{} // do not keep a large buffer
	}
	return err
}

// scan calls fn for each live key in the encoded range [begin, end) as the
// store sees it (base overlaid with buffered writes), in order, until fn
// returns false. Keys passed to fn are valid only during the call.
func (st *store) scan(begin, end []byte, fn func(k []byte, e entry) bool) error {
	if st.checkRanges {
		// A range read inside EXEC: the commit checks that the range did
		// not change since the snapshot, so that the whole EXEC is one
		// atomic step as in Redis.
		st.useSnapshot()
		r := keyRange{begin: st.keep(begin)}
		if end != nil {
			r.end = st.keep(end)
		}
		st.rangeReads = append(st.rangeReads, r)
	}
	var it *caskade.Iterator
	var err error
	opts := &caskade.IterOptions{LowerBound: begin, UpperBound: end}
	if st.snap != nil {
		it, err = st.snap.NewIterator(opts)
	} else {
		it, err = st.db.NewIterator(opts)
	}
	if err != nil {
		return err
	}
	defer it.Close()
	if len(st.ops) == 0 {
		for ok := it.First(); ok; ok = it.Next() {
			info := it.Info()
			e := entry{size: info.ValueSize, found: true}
			if !info.ExpiresAt.IsZero() {
				e.exp = info.ExpiresAt.UnixMilli()
			}
			if !fn(it.Key(), e) {
				return nil
			}
		}
		return it.Err()
	}
	// Merge the base with the keys the buffered writes set.
	var extra [][]byte
	seen := map[string]bool{}
	for i := len(st.ops) - 1; i >= 0; i-- {
		o := &st.ops[i]
		if o.kind == opDelRange || seen[string(o.key)] || !inRange(o.key, begin, end) {
			continue
		}
		seen[string(o.key)] = true
		extra = append(extra, o.key)
	}
	slices.SortFunc(extra, bytes.Compare)
	j := 0
	emit := func(k []byte) bool {
		e, _ := st.overlay(k)
		if !e.found {
			return true
		}
		return fn(k, e)
	}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		for j < len(extra) && bytes.Compare(extra[j], k) < 0 {
			if !emit(extra[j]) {
				return nil
			}
			j++
		}
		if j < len(extra) && bytes.Equal(extra[j], k) {
			j++
			if !emit(k) {
				return nil
			}
			continue
		}
		if e, decided := st.overlay(k); decided {
			if e.found && !fn(k, e) {
				return nil
			}
			continue
		}
		info := it.Info()
		e := entry{size: info.ValueSize, found: true}
		if !info.ExpiresAt.IsZero() {
			e.exp = info.ExpiresAt.UnixMilli()
		}
		if !fn(k, e) {
			return nil
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	for ; j < len(extra); j++ {
		if !emit(extra[j]) {
			return nil
		}
	}
	return nil
}
