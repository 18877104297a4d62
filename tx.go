package caskade

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/tidwall/btree"

	"github.com/caskade/caskade/internal/keydir"
)

// Tx is a serializable, optimistic transaction in the manner of
// FoundationDB's: it reads a snapshot of the database at its read version,
// sees its own writes, buffers its writes, and commits them atomically only
// if nothing it read (without Snapshot) was changed by a transaction that
// committed after its read version, and no key it read live has expired
// since (expiry is judged at the instant the transaction began); otherwise
// Commit fails with ErrConflict and the transaction can be retried.
// Read-only transactions and blind writes never conflict. A Tx is not safe
// for concurrent use.
//
// Mutations (Set, Clear, atomic operations, ...) return no error: one
// refused (an oversized key, an inverted range, a write after the end)
// fails the transaction instead, as FoundationDB's deferred errors do:
// every read after it (Get, GetKey, range reads and their iterators'
// next steps, Watch) and Commit return its error, so a refused write is
// never lost without one. Once the transaction has ended (Commit,
// Rollback), they all fail with ErrTransactionDone (FoundationDB's
// used_during_commit).
type Tx struct {
	db    *DB
	v     *view
	id    uint64 // in db.txns.reads; 0 for a ReadTransact, which needs no history
	start time.Time

	writes *btree.BTreeG[*txWrite] // by key
	clears []keyRange              // cleared ranges, for keys not in writes
	// vsRanges are where the keys of SetVersionstampedKey may land, less
	// what was cleared since: reading there fails with
	// ErrAccessedUnreadable, as in FoundationDB.
	vsRanges []keyRange
	ops      []op // mutations in order, for the commit
	// dead marks the ops that later ones made irrelevant (supersede): they
	// are neither committed nor counted in size. nDead counts them.
	dead   []bool
	nDead  int
	reads  []keyRange
	size   int   // of the mutations, as FoundationDB counts them at commit (txsize.go)
	approx int   // ApproximateSize
	err    error // first invalid mutation
	done   bool

	probe        txWrite  // search key for writes, reused
	reader       TxReader // the non-snapshot reader behind Tx's own read methods
	committed    uint64
	steps        int             // range read steps, to read the clock now and then
	readOnly     bool            // ReadTransact: never commits, so records no read conflicts
	hold         *readerHold     // its view, registration and fast-path iterators, released when it ends
	cleanup      runtime.Cleanup // Begin's: releases hold if the caller drops the transaction (readerHold)
	open         []*TxIterator   // range reads that record conflicts, until they finish
	snapshotView TxReader
	origin       any // SetOrigin
}

// txWrite is what the transaction knows of a key it wrote.
type txWrite struct {
	key     []byte
	known   bool   // value and present are final; otherwise apply ops to the database's value
	knownAt int    // when known: the transaction's mutation count when it became so
	present bool   // when known
	value   []byte // when known and present
	pending []op   // atomic operations on a base value not read yet
	opIdx   []int  // the live ops of this key in the transaction's ops (supersede)
	// unreadable: the value holds a versionstamp known only at commit
	// (SetVersionstampedValue, perhaps with atomic operations after it);
	// reading it fails with ErrAccessedUnreadable until a Clear (a Set
	// keeps it unreadable, as in FoundationDB).
	unreadable bool
}

// Begin starts a transaction at the current version. End it with Commit or
// Rollback: until then it holds its snapshot (see Snapshot). One dropped
// without either is released only once the garbage collector finds it
// unreachable.
func (db *DB) Begin() (*Tx, error) {
	tx, err := db.begin()
	if err == nil {
		tx.cleanup = runtime.AddCleanup(tx, (*readerHold).release, tx.hold)
	}
	return tx, err
}

// begin is Begin for callers that are sure to end the transaction
// (Transact): it registers no cleanup.
func (db *DB) begin() (*Tx, error) {
	if db.opts.ReadOnly {
		return db.beginRead(), nil
	}
	db.cmu.Lock()
	closed := db.closed
	db.cmu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	return db.beginRead(), nil
}

func (db *DB) beginRead() *Tx { return db.beginTx(true) }

// beginTx starts a transaction; with register, one that may commit, whose
// read version the commit path must keep history for.
func (db *DB) beginTx(register bool) *Tx {
	tx := &Tx{db: db, start: db.opts.Now(),
		writes: btree.NewBTreeGOptions(func(a, b *txWrite) bool { return bytes.Compare(a.key, b.key) < 0 }, btree.Options{NoLocks: true})}
	// Register before taking the view, so that the commit path records the
	// deletions this transaction may need to see.
	if register {
		db.txns.count.Add(1)
	}
	db.mu.Lock()
	if register {
		db.txns.seq++
		tx.id = db.txns.seq
	}
	tx.v = db.newViewLocked()
	if register {
		lt := liveTxn{version: tx.v.version}
		if l := db.opts.TxnLifetime; l > 0 {
			lt.deadline = tx.start.Add(l)
		}
		db.txns.reads[tx.id] = lt
	}
	db.mu.Unlock()
	tx.hold = &readerHold{v: tx.v, txid: tx.id}
	tx.snapshotView = TxReader{tx: tx, snapshot: true}
	tx.reader = TxReader{tx: tx}
	return tx
}

// decide notes that the transaction's own writes decide w's value from
// its n-th mutation on, unless they already did.
func (w *txWrite) decide(n int) {
	if !w.known {
		w.knownAt = n
	}
}

// decided returns r less what the transaction's own writes had decided
// when it had made ops mutations and clears clears: the ranges it had
// cleared and the keys it had set or cleared (not those with atomic
// operations on the database's value, nor unreadable ones). A read finds
// nothing of the database's there, so, as in FoundationDB (RYW's
// updateConflictMap), its read conflict leaves them out. The parts share
// r's and the writes' slices.
func (tx *Tx) decided(r keyRange, ops, clears int) []keyRange {
	parts := subtractRanges(r, tx.clears[:clears])
	if tx.writes.Len() == 0 || len(parts) == 0 {
		return parts
	}
	var keys [][]byte
	tx.writes.Ascend(&txWrite{key: r.begin}, func(w *txWrite) bool {
		if r.end != nil && bytes.Compare(w.key, r.end) >= 0 {
			return false
		}
		if w.known && !w.unreadable && w.knownAt <= ops {
			keys = append(keys, w.key)
		}
		return true
	})
	if len(keys) == 0 {
		return parts
	}
	// Both in key order: cut each part at the keys inside it.
	var out []keyRange
	i := 0
	for _, p := range parts {
		for i < len(keys) && bytes.Compare(keys[i], p.begin) < 0 {
			i++
		}
		b := p.begin
		for ; i < len(keys) && (p.end == nil || bytes.Compare(keys[i], p.end) < 0); i++ {
			if bytes.Compare(b, keys[i]) < 0 {
				out = append(out, keyRange{b, keys[i]})
			}
			b = keyAfter(keys[i])
		}
		if p.end == nil || bytes.Compare(b, p.end) < 0 {
			out = append(out, keyRange{b, p.end})
		}
	}
	return out
}

// written returns the transaction's entry for key, if it wrote one.
func (tx *Tx) written(key []byte) (*txWrite, bool) {
	if tx.writes.Len() == 0 {
		return nil, false
	}
	tx.probe.key = key
	w, ok := tx.writes.Get(&tx.probe)
	tx.probe.key = nil
	return w, ok
}

// end releases the transaction's view and registration.
func (tx *Tx) end() {
	if tx.done {
		return
	}
	tx.done = true
	tx.cleanup.Stop()
	tx.hold.release()
}

// ReadVersion returns the version the transaction reads at.
func (tx *Tx) ReadVersion() uint64 { return tx.v.version }

// CommittedVersion returns the version the transaction committed at: 0 if
// it has not committed, or committed without a mutation or write conflict
// range (a read-only transaction). As in FoundationDB, one whose mutations
// changed nothing (a clear of an absent key) still has a version.
func (tx *Tx) CommittedVersion() uint64 { return tx.committed }

// Versionstamp returns the 10-byte versionstamp of the committed
// transaction: what SetVersionstampedKey and SetVersionstampedValue wrote.
func (tx *Tx) Versionstamp() ([]byte, error) {
	if tx.committed == 0 {
		return nil, errors.New("caskade: versionstamp of a transaction that did not commit a mutation")
	}
	vs := versionstamp(tx.committed)
	return vs[:], nil
}

// usable fails if the transaction has ended, made an invalid mutation
// (FoundationDB's deferred error) or outlived its lifetime. Reads call it,
// so that a read after any of these fails.
func (tx *Tx) usable() error {
	if tx.done {
		return ErrTransactionDone
	}
	if tx.err != nil {
		return tx.err
	}
	if tx.expired() {
		return ErrTransactionTooOld
	}
	return nil
}

// usableStep is usable for a step of a range read, which began with a
// call of usable. Reading the clock on every step costs more than the
// step; it looks every 64 steps.
func (tx *Tx) usableStep() error {
	if tx.done {
		return ErrTransactionDone
	}
	if tx.err != nil {
		return tx.err
	}
	tx.steps++
	if tx.steps%64 == 0 && tx.expired() {
		return ErrTransactionTooOld
	}
	return nil
}

// expired reports, reading the clock, whether the transaction outlived its
// lifetime; Commit uses it so that a commit is never late.
func (tx *Tx) expired() bool {
	lt := tx.db.opts.TxnLifetime
	if lt <= 0 {
		return false
	}
	if tx.db.realClock {
		// Every read asks: 33 ns here, against 60 for time.Now,
		// of a random read's 1.3 us.
		return time.Since(tx.start) > lt
	}
	return tx.db.opts.Now().Sub(tx.start) > lt
}

// Snapshot returns a reader whose reads add no read conflicts: what it
// reads may change before the transaction commits without failing it. It
// still sees the transaction's own writes.
func (tx *Tx) Snapshot() *TxReader { return &tx.snapshotView }

// Get returns the value of key as the transaction sees it, or ErrNotFound.
func (tx *Tx) Get(key []byte) ([]byte, error) { return tx.reader.Get(key) }

// GetKey resolves a key selector as the transaction sees the database
// (see TxReader.GetKey).
func (tx *Tx) GetKey(sel KeySelector) ([]byte, error) { return tx.reader.GetKey(sel) }

// GetRange returns the pairs between two key selectors (begin inclusive,
// end exclusive) as the transaction sees them.
func (tx *Tx) GetRange(begin, end KeySelector, opts *RangeOptions) ([]KeyValue, error) {
	return tx.reader.GetRange(begin, end, opts)
}

// RangeIterator returns an iterator over the pairs between two key
// selectors; see TxIterator.
func (tx *Tx) RangeIterator(begin, end KeySelector, opts *RangeOptions) *TxIterator {
	return tx.reader.RangeIterator(begin, end, opts)
}

// Range returns the pairs with keys in [begin, end) as the transaction
// sees them; a nil end is the end of the key space, as in DB.Range.
func (tx *Tx) Range(begin, end []byte, opts *RangeOptions) ([]KeyValue, error) {
	return tx.reader.Range(begin, end, opts)
}

// KeyRangeIterator returns an iterator over the pairs with keys in
// [begin, end); a nil end is the end of the key space.
func (tx *Tx) KeyRangeIterator(begin, end []byte, opts *RangeOptions) *TxIterator {
	return tx.reader.KeyRangeIterator(begin, end, opts)
}

// TxReader reads within a transaction; the one Snapshot returns adds no
// read conflicts.
type TxReader struct {
	tx       *Tx
	snapshot bool
}

// records reports whether this reader's reads add read conflict ranges.
func (r *TxReader) records() bool { return !r.snapshot && !r.tx.readOnly }

func (r *TxReader) conflict(kr keyRange) {
	if r.records() {
		r.tx.reads = append(r.tx.reads, kr)
		r.tx.approx += rangeSize(kr)
	}
}

// Get returns the value of key, or ErrNotFound.
func (r *TxReader) Get(key []byte) ([]byte, error) {
	tx := r.tx
	if err := tx.usable(); err != nil {
		return nil, err
	}
	if err := tx.readable(key); err != nil {
		return nil, err
	}
	w, ok := tx.written(key)
	if ok && w.known {
		// Answered from the transaction's own writes: no read conflict.
		if !w.present {
			return nil, ErrNotFound
		}
		return bytes.Clone(w.value), nil
	}
	if !ok && tx.cleared(key) {
		// Inside a range the transaction cleared: absent, whatever the
		// database holds, so no read conflict either.
		return nil, ErrNotFound
	}
	if r.records() {
		r.conflict(keyRange{bytes.Clone(key), keyAfter(bytes.Clone(key))})
	}
	v, present, err := tx.value(key)
	if err != nil {
		return nil, err
	}
	if !present {
		return nil, ErrNotFound
	}
	if !ok {
		return v, nil // read from the database into a new buffer: the caller's
	}
	return bytes.Clone(v), nil
}

// value returns key's value as the transaction sees it, without adding a
// conflict range. The result must not be modified.
func (tx *Tx) value(key []byte) ([]byte, bool, error) {
	w, ok := tx.written(key)
	if ok && w.unreadable {
		return nil, false, ErrAccessedUnreadable
	}
	if ok && w.known {
		return w.value, w.present, nil
	}
	base, present, err := tx.baseValue(key)
	if err != nil || !ok {
		return base, present, err
	}
	// Apply the pending atomic operations to the database's value.
	for _, o := range w.pending {
		nv, del := applyAtomic(o.atomic, base, present, o.value, tx.db.opts.MaxValueSize)
		base, present = nv, !del
	}
	return base, present, nil
}

// baseValue reads key from the snapshot, unless the transaction cleared it.
func (tx *Tx) baseValue(key []byte) ([]byte, bool, error) {
	if tx.cleared(key) {
		return nil, false, nil
	}
	e, ok, verify := tx.v.probe(key)
	if !ok {
		return nil, false, nil
	}
	v, _, err := tx.db.readProbed(tx.v.files, key, e, verify)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil // the candidate was another key's
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

func (tx *Tx) cleared(key []byte) bool {
	for _, c := range tx.clears {
		if c.contains(key) {
			return true
		}
	}
	return false
}

// visible reports whether key exists as the transaction sees it.
func (tx *Tx) visible(key []byte) (bool, error) {
	if w, ok := tx.written(key); ok && w.unreadable {
		return true, nil // present: reading it is what fails
	}
	_, present, err := tx.value(key)
	return present, err
}

// readable fails with ErrAccessedUnreadable if key's value is known only
// at commit.
func (tx *Tx) readable(key []byte) error {
	if w, ok := tx.written(key); ok && w.unreadable {
		return ErrAccessedUnreadable
	}
	if len(tx.vsRanges) > 0 {
		return tx.readableSpan(keyRange{key, keyAfter(bytes.Clone(key))})
	}
	return nil
}

// readableSpan fails with ErrAccessedUnreadable if a read covering span
// (a nil end: to the end of the key space) could see a versionstamped key
// the transaction set: what the read returns depends on where it lands.
func (tx *Tx) readableSpan(span keyRange) error {
	for _, r := range tx.vsRanges {
		if r.overlaps(span) && (span.end == nil || bytes.Compare(span.begin, span.end) < 0) {
			return ErrAccessedUnreadable
		}
	}
	return nil
}

// makeReadable removes span from the unreadable ranges of versionstamped
// keys: a Clear or ClearRange there makes the result of a read known
// again.
func (tx *Tx) makeReadable(span keyRange) {
	if len(tx.vsRanges) == 0 {
		return
	}
	var out []keyRange
	for _, r := range tx.vsRanges {
		if !r.overlaps(span) {
			out = append(out, r)
			continue
		}
		if bytes.Compare(r.begin, span.begin) < 0 {
			out = append(out, keyRange{r.begin, span.begin})
		}
		if span.end != nil && (r.end == nil || bytes.Compare(span.end, r.end) < 0) {
			out = append(out, keyRange{span.end, r.end})
		}
	}
	tx.vsRanges = out
}

// baseVisible reports whether a key of the snapshot shows through to the
// transaction: not expired, not cleared by it, and not one it wrote (those
// come from its writes).
func (tx *Tx) baseVisible(key []byte, e keydir.Entry) bool {
	if e.Expired(tx.v.nowMs) || tx.cleared(key) {
		return false
	}
	_, written := tx.written(key)
	return !written
}

// nextKey returns the first visible key >= k (> k unless inclusive).
func (tx *Tx) nextKey(k []byte, inclusive bool) ([]byte, bool, error) {
	if !inclusive {
		k = keyAfter(k)
	}
	// From the snapshot: the first key >= k not cleared and not written.
	it := tx.v.tree.Iter()
	var base []byte
	for ok := it.Seek(k); ok; ok = it.Next() {
		key := it.Key()
		if !tx.baseVisible(key, it.Entry()) {
			continue
		}
		base = key
		break
	}
	// From the writes: the first key >= k that exists.
	var wkey []byte
	var werr error
	tx.writes.Ascend(&txWrite{key: k}, func(w *txWrite) bool {
		if base != nil && bytes.Compare(w.key, base) >= 0 {
			return false
		}
		ok, err := tx.visible(w.key)
		if err != nil {
			werr = err
			return false
		}
		if ok {
			wkey = w.key
			return false
		}
		return true
	})
	if werr != nil {
		return nil, false, werr
	}
	if wkey != nil {
		return wkey, true, nil
	}
	return base, base != nil, nil
}

// prevKey returns the last visible key < k (<= k if inclusive); a nil k
// means the end of the key space.
func (tx *Tx) prevKey(k []byte, inclusive bool) ([]byte, bool, error) {
	bound := k
	if inclusive && k != nil {
		bound = keyAfter(k)
	}
	it := tx.v.tree.Iter()
	var ok bool
	switch {
	case bound == nil:
		ok = it.Last()
	case it.Seek(bound):
		ok = it.Prev()
	default:
		ok = it.Last()
	}
	var base []byte
	for ; ok; ok = it.Prev() {
		key := it.Key()
		if !tx.baseVisible(key, it.Entry()) {
			continue
		}
		base = key
		break
	}
	var wkey []byte
	var werr error
	visit := func(w *txWrite) bool {
		if bound != nil && bytes.Compare(w.key, bound) >= 0 {
			return true
		}
		if base != nil && bytes.Compare(w.key, base) <= 0 {
			return false
		}
		ok, err := tx.visible(w.key)
		if err != nil {
			werr = err
			return false
		}
		if ok {
			wkey = w.key
			return false
		}
		return true
	}
	if bound == nil {
		tx.writes.Reverse(visit)
	} else {
		tx.writes.Descend(&txWrite{key: bound}, visit)
	}
	if werr != nil {
		return nil, false, werr
	}
	if wkey != nil {
		return wkey, true, nil
	}
	return base, base != nil, nil
}

// resolve finds the key a selector names as the transaction sees the
// database ([]byte{} before the first key, nil after the last).
func (tx *Tx) resolve(sel KeySelector) ([]byte, error) {
	key := sel.Key
	if key == nil {
		key = []byte{} // the empty key, not prevKey's "end of the key space"
	}
	// A key whose value is unreadable (SetVersionstampedValue) fails the
	// resolution when it is passed or landed on, as in FoundationDB.
	cur, ok, err := tx.prevKey(key, sel.OrEqual)
	if err == nil && ok && sel.Offset <= 0 {
		err = tx.readable(cur)
	}
	if err != nil {
		return nil, err
	}
	for off := sel.Offset; off > 0; off-- {
		if ok {
			cur, ok, err = tx.nextKey(cur, false)
		} else {
			cur, ok, err = tx.nextKey(nil, true)
		}
		if err == nil && ok {
			err = tx.readable(cur)
		}
		if err != nil {
			return nil, err
		}
		if !ok {
			return tx.checkSelector(sel, nil) // past the last key
		}
	}
	for off := sel.Offset; off < 0 && ok; off++ {
		if cur, ok, err = tx.prevKey(cur, false); err == nil && ok {
			err = tx.readable(cur)
		}
		if err != nil {
			return nil, err
		}
	}
	if !ok {
		return tx.checkSelector(sel, []byte{}) // before the first key
	}
	return tx.checkSelector(sel, bytes.Clone(cur))
}

// checkSelector returns k, what sel resolved to, unless a versionstamped
// key of the transaction may land between the selector and k: the result
// is then not known before commit.
func (tx *Tx) checkSelector(sel KeySelector, k []byte) ([]byte, error) {
	if len(tx.vsRanges) > 0 {
		if span, ok := selectorSpan(sel, k); ok {
			if err := tx.readableSpan(span); err != nil {
				return nil, err
			}
		}
	}
	return k, nil
}

// GetKey resolves a key selector (see KeySelector: past the last key, it
// resolves to the end of the key space, "\xff\xff"). The read conflict
// covers the keys between the selector's key and the result (to the end
// of the key space, past the last key).
func (r *TxReader) GetKey(sel KeySelector) ([]byte, error) {
	if err := r.tx.usable(); err != nil {
		return nil, err
	}
	k, err := r.tx.resolve(sel)
	if err != nil {
		return nil, err
	}
	r.selectorConflict(sel, k)
	if k == nil {
		last, ok, err := r.tx.prevKey(nil, false)
		if err != nil {
			return nil, err
		}
		k = endAfter(last, ok)
	}
	return k, nil
}

// selectorConflict adds the read conflict range of resolving sel to k (nil:
// past the last key), as FoundationDB does: the keys whose changes could
// change the result. Those are the keys from the selector's bound (its key,
// or the key after it with OrEqual) up to and including k for a positive
// offset, and from k up to the bound for another. The selector's key
// itself is outside the range unless OrEqual: whether it exists does not
// change what FirstGreaterThan or LastLessThan select. What the
// transaction's own writes decide (see decided) is left out.
func (r *TxReader) selectorConflict(sel KeySelector, k []byte) {
	if !r.records() {
		return
	}
	if kr, ok := selectorSpan(sel, k); ok {
		for _, p := range r.tx.decided(kr, len(r.tx.ops), len(r.tx.clears)) {
			r.conflict(keyRange{bytes.Clone(p.begin), bytes.Clone(p.end)})
		}
	}
}

// selectorSpan returns the keys whose presence decides what sel resolves
// to, given that it resolved to k (nil: past the last key); ok is false if
// there are none (LastLessThan of the empty key).
func selectorSpan(sel KeySelector, k []byte) (kr keyRange, ok bool) {
	bound := append([]byte{}, sel.Key...)
	if sel.OrEqual {
		bound = keyAfter(bound)
	}
	kr = keyRange{bound, nil}
	switch {
	case sel.Offset <= 0:
		kr = keyRange{bytes.Clone(k), bound} // k <= bound: never past the last key
	case k != nil:
		kr.end = keyAfter(bytes.Clone(k))
	}
	return kr, kr.end == nil || bytes.Compare(kr.begin, kr.end) < 0
}

// GetRange returns the pairs between two key selectors.
func (r *TxReader) GetRange(begin, end KeySelector, opts *RangeOptions) ([]KeyValue, error) {
	return r.RangeIterator(begin, end, opts).all()
}

// Range returns the pairs with keys in [begin, end); a nil end is the end
// of the key space. Unlike a selector, a key bound reads no keys outside
// the range, so the read conflict is the range itself (up to the last key
// returned when the limit cuts it short).
func (r *TxReader) Range(begin, end []byte, opts *RangeOptions) ([]KeyValue, error) {
	return r.KeyRangeIterator(begin, end, opts).all()
}

// KeyRangeIterator returns an iterator over the pairs with keys in
// [begin, end); a nil end is the end of the key space. An end before begin
// fails with ErrInvalidRange.
func (r *TxReader) KeyRangeIterator(begin, end []byte, opts *RangeOptions) *TxIterator {
	it := r.newIterator(opts)
	if it.err != nil {
		return it
	}
	if end != nil && bytes.Compare(begin, end) > 0 {
		it.err = ErrInvalidRange // as DB.Range, and FoundationDB's inverted_range
		return it
	}
	it.lo = append([]byte{}, begin...) // never nil
	if end != nil {
		it.hi = bytes.Clone(end)
	}
	return r.start(it)
}

// all drains the iterator.
func (it *TxIterator) all() ([]KeyValue, error) {
	var out []KeyValue
	for it.Next() {
		out = append(out, it.KeyValue())
	}
	return out, it.Err()
}

// newIterator returns an iterator not yet bounded, or one that failed
// because the transaction is not usable.
func (r *TxReader) newIterator(opts *RangeOptions) *TxIterator {
	var o RangeOptions
	if opts != nil {
		o = *opts
	}
	it := &TxIterator{r: *r, opts: o}
	if it.err = r.tx.usable(); it.err == nil {
		// Only the read fails, not the transaction, as in FoundationDB.
		it.err = o.check()
	}
	return it
}

// start finishes at once an iterator whose bounds hold no key, and tracks
// the others that record read conflicts.
func (r *TxReader) start(it *TxIterator) *TxIterator {
	if it.hi != nil && bytes.Compare(it.lo, it.hi) >= 0 {
		it.finished = true
		return it
	}
	if r.records() {
		r.tx.track(it)
	}
	it.clearsAt, it.opsAt = len(r.tx.clears), len(r.tx.ops)
	return it
}

// RangeIterator returns an iterator over the pairs between two key
// selectors (begin inclusive, end exclusive), in the order and up to the
// limit opts give.
func (r *TxReader) RangeIterator(begin, end KeySelector, opts *RangeOptions) *TxIterator {
	it := r.newIterator(opts)
	if it.err != nil {
		return it
	}
	// Selectors that cannot have a key between them (begin at or after end
	// both in key, OrEqual aside, and in offset) read nothing: as in
	// FoundationDB, the range is empty without resolving them, so it adds
	// no read conflict and fails with no error their resolution would
	// meet (such as ErrAccessedUnreadable).
	if begin.Offset >= end.Offset && bytes.Compare(selectorBound(begin), selectorBound(end)) >= 0 {
		it.finished = true
		return it
	}
	// A selector of offset 1 (FirstGreaterOrEqual, FirstGreaterThan) bounds
	// the range at its own key: the pairs are those at or after it (after
	// it, with OrEqual), whatever keys exist, so it is not resolved and
	// reads no keys beyond the range, as in FoundationDB. Resolving it
	// would make the read conflict reach up to the next key past the end
	// (to the end of the key space if there is none), and a key the
	// transaction writes between the end key and that one would be read.
	// Resolving any other selector reads keys too: where it lands depends
	// on the keys between the selector's key and its result.
	if it.lo, it.err = r.rangeBound(begin); it.err != nil {
		return it
	}
	if it.lo == nil {
		// The begin selector lands past the last key: nothing to read.
		it.finished = true
		return it
	}
	if it.hi, it.err = r.rangeBound(end); it.err != nil {
		return it
	}
	return r.start(it)
}

// rangeBound returns the key a range read's selector bounds it at: the
// selector's own key for offset 1 (see RangeIterator), else the key it
// resolves to (nil: past the last key), with the read conflict of that
// resolution.
func (r *TxReader) rangeBound(sel KeySelector) ([]byte, error) {
	if sel.Offset == 1 {
		return selectorBound(sel), nil
	}
	k, err := r.tx.resolve(sel)
	if err != nil {
		return nil, err
	}
	r.selectorConflict(sel, k)
	return k, nil
}

// selectorBound returns the first key a selector of offset 1 may select:
// its key, or the key just after it with OrEqual.
func selectorBound(sel KeySelector) []byte {
	if sel.OrEqual {
		return keyAfter(bytes.Clone(sel.Key))
	}
	return append([]byte{}, sel.Key...) // never nil: nil is the end of the key space
}

// track keeps an iterator that records read conflicts until it finishes,
// so that Commit can add the conflict range of what it returned if the
// caller stopped before its end.
func (tx *Tx) track(it *TxIterator) {
	if len(tx.open) == cap(tx.open) {
		tx.open = slices.DeleteFunc(tx.open, func(it *TxIterator) bool { return it.finished })
	}
	tx.open = append(tx.open, it)
}

// finishOpen adds the read conflict ranges of the range reads the caller
// abandoned part way: what each returned, as if it had stopped at a limit.
func (tx *Tx) finishOpen() {
	for _, it := range tx.open {
		if !it.finished && it.started {
			it.finish(true)
		}
	}
	tx.open = nil
}

// TxIterator walks a range within a transaction, pull-style:
//
//	for it.Next() { kv := it.KeyValue() }
//	if err := it.Err(); err != nil { ... }
//
// The read conflict range is added as the iterator goes: up to the last key
// it returned when it stops early at the limit, the whole range otherwise,
// less what the transaction's own writes had decided (keys set or cleared,
// ranges cleared) when it began, as in FoundationDB.
type TxIterator struct {
	r        TxReader
	opts     RangeOptions
	lo, hi   []byte
	cur      []byte // the current key (our copy: the caller may change kv's), unless fast is set
	kv       KeyValue
	slab     []byte // room for the copies handed out, so that a pair costs no allocation
	n        int
	err      error
	started  bool
	finished bool
	fast     *Iterator // while the transaction has no writes: the snapshot's own iterator
	clearsAt int       // the transaction's clears when it started: what it read there came from none
	opsAt    int       // its mutations when it started: what it read of the keys they decided came from none
}

// Next moves to the next pair; it returns false at the end or on error.
func (it *TxIterator) Next() bool {
	if it.finished || it.err != nil {
		return false
	}
	tx := it.r.tx
	if it.err = tx.usableStep(); it.err != nil {
		return false
	}
	if it.opts.Limit > 0 && it.n >= it.opts.Limit {
		it.finish(true)
		return false
	}
	if ok, done := it.nextFast(); done {
		return ok
	}
	var k []byte
	var ok bool
	first := !it.started
	switch {
	case !it.opts.Reverse && !it.started:
		k, ok, it.err = tx.nextKey(it.lo, true)
	case !it.opts.Reverse:
		k, ok, it.err = tx.nextKey(it.cur, false)
	case !it.started:
		k, ok, it.err = tx.prevKey(it.hi, false)
	default:
		k, ok, it.err = tx.prevKey(it.cur, false)
	}
	it.started = true
	if it.err != nil {
		return false
	}
	if ok && !it.opts.Reverse && it.hi != nil && bytes.Compare(k, it.hi) >= 0 {
		ok = false
	}
	if ok && it.opts.Reverse && bytes.Compare(k, it.lo) < 0 {
		ok = false
	}
	if len(tx.vsRanges) > 0 {
		if it.err = tx.readableSpan(it.gap(first, k, ok)); it.err != nil {
			return false
		}
	}
	if !ok {
		it.finish(false)
		return false
	}
	if it.err = tx.readable(k); it.err != nil {
		return false
	}
	it.cur = it.own(k)
	it.kv = KeyValue{Key: it.own(k)}
	if !it.opts.KeysOnly {
		v, _, err := tx.value(k)
		if err != nil {
			it.err = err
			return false
		}
		it.kv.Value = it.own(v)
	}
	it.n++
	return true
}

// gap returns the keys a step of the iterator passed over: from where it
// was (or its bound, on the first step) to the key k it found, inclusive,
// or to its other bound if it found none (ok false).
func (it *TxIterator) gap(first bool, k []byte, ok bool) keyRange {
	if !it.opts.Reverse {
		g := keyRange{it.lo, it.hi}
		if !first {
			g.begin = keyAfter(bytes.Clone(it.cur))
		}
		if ok {
			g.end = keyAfter(bytes.Clone(k))
		}
		return g
	}
	g := keyRange{it.lo, it.hi}
	if !first {
		g.end = it.cur
	}
	if ok {
		g.begin = k
	}
	return g
}

// nextFast steps the snapshot's own iterator while the transaction has
// written nothing, which is most range reads; done is false when the slow
// path (merging the transaction's writes) must take over.
func (it *TxIterator) nextFast() (ok, done bool) {
	tx := it.r.tx
	if tx.writes.Len() > 0 || len(tx.clears) > 0 || len(tx.vsRanges) > 0 {
		if it.fast != nil {
			it.closeFast()
		}
		return false, false
	}
	if it.fast == nil {
		if it.started && it.cur == nil {
			return false, false
		}
		tx.v.db.mu.Lock()
		tx.v.db.snapshots++
		tx.v.db.mu.Unlock()
		tx.v.files.acquire()
		it.fast = newIterator(tx.v, &IterOptions{LowerBound: it.lo, UpperBound: it.hi})
		tx.hold.iters = append(tx.hold.iters, it.fast)
		switch {
		case !it.started && !it.opts.Reverse:
			ok = it.fast.First()
		case !it.started:
			ok = it.fast.Last()
		case !it.opts.Reverse:
			ok = it.fast.Seek(keyAfter(it.cur))
		default:
			ok = it.fast.SeekLT(it.cur)
		}
	} else if it.opts.Reverse {
		ok = it.fast.Prev()
	} else {
		ok = it.fast.Next()
	}
	it.started = true
	if !ok {
		if it.err = it.fast.Err(); it.err == nil {
			it.finish(false)
		}
		return false, true
	}
	// The current key stays in it.fast (closeFast keeps it in it.cur).
	it.kv = KeyValue{Key: it.own(it.fast.keyView())}
	if !it.opts.KeysOnly {
		v := it.fast.value(true) // copied into the slab at once
		if it.err = it.fast.Err(); it.err != nil {
			return false, true
		}
		it.kv.Value = it.own(v)
	}
	it.n++
	return true, true
}

// closeFast ends the use of it.fast, keeping its position in it.cur for the
// slow path and for finish.
func (it *TxIterator) closeFast() {
	if it.fast.Valid() {
		it.cur = bytes.Clone(it.fast.keyView())
	}
	it.fast.Close()
	it.fast = nil
}

// own returns a copy of b that nothing else uses, carved from a slab
// shared with other copies (a kept pair keeps its slab alive).
func (it *TxIterator) own(b []byte) []byte {
	if len(b) == 0 {
		return []byte{} // never nil: a nil key means "no key yet"
	}
	if len(b) > cap(it.slab)-len(it.slab) {
		if len(b) > 4<<10 {
			return bytes.Clone(b)
		}
		// Small first, as most range reads are: each slab twice the last,
		// up to 28 KiB, the largest of Go's size classes that the runtime
		// still allocates as a small object (32 KiB takes its slower path
		// for large ones: 5% of a 1000-key range read).
		it.slab = make([]byte, 0, min(max(2*cap(it.slab), 1<<10), 28<<10))
	}
	n := len(it.slab)
	it.slab = append(it.slab, b...)
	return it.slab[n:len(it.slab):len(it.slab)]
}

// finish adds the read conflict range for what the iterator covered.
func (it *TxIterator) finish(limited bool) {
	it.finished = true
	if it.fast != nil {
		it.closeFast()
	}
	lo, hi := it.lo, it.hi
	if limited && it.cur != nil {
		if it.opts.Reverse {
			lo = it.cur
		} else {
			hi = keyAfter(it.cur)
		}
	}
	// What the transaction's own writes had decided when the read began
	// came from them, not the database: as in FoundationDB, no read
	// conflict there. (A write after the start is not subtracted: the read
	// may have met the database's key there first.)
	for _, kr := range it.r.tx.decided(keyRange{lo, hi}, it.opsAt, it.clearsAt) {
		it.r.conflict(keyRange{bytes.Clone(kr.begin), bytes.Clone(kr.end)})
	}
}

// subtractRanges returns the parts of r outside every range of cuts, in
// order; they share r's and the cuts' slices.
func subtractRanges(r keyRange, cuts []keyRange) []keyRange {
	parts := []keyRange{r}
	for _, c := range cuts {
		var next []keyRange
		for _, p := range parts {
			if !p.overlaps(c) {
				next = append(next, p)
				continue
			}
			if bytes.Compare(c.begin, p.begin) > 0 {
				next = append(next, keyRange{p.begin, c.begin})
			}
			if c.end != nil && (p.end == nil || bytes.Compare(c.end, p.end) < 0) {
				next = append(next, keyRange{c.end, p.end})
			}
		}
		parts = next
	}
	return parts
}

// KeyValue returns the current pair; the slices are the caller's.
func (it *TxIterator) KeyValue() KeyValue { return it.kv }

// Err returns the error that stopped the iterator, if any.
func (it *TxIterator) Err() error { return it.err }

// write returns the transaction's entry for key, creating it.
func (tx *Tx) write(key []byte) *txWrite {
	w, ok := tx.writes.Get(&txWrite{key: key})
	if !ok {
		w = &txWrite{key: bytes.Clone(key)}
		if tx.cleared(key) {
			w.known, w.knownAt = true, len(tx.ops) // cleared earlier in this transaction: absent
		}
		tx.writes.Set(w)
	}
	w.opIdx = append(w.opIdx, len(tx.ops)-1) // the mutation just made
	return w
}

// supersede marks the live mutations of w's key dead before a set or
// clear of it (or a clear of a range holding it) replaces them. As in
// FoundationDB, whose read-your-writes layer keeps one operation stack per
// key and commits only what is left of it, they are neither committed nor
// counted in the transaction's size: a key set a thousand times costs as
// much as one set.
func (tx *Tx) supersede(w *txWrite) {
	if len(w.opIdx) > 0 && len(tx.dead) < len(tx.ops) {
		tx.dead = append(tx.dead, make([]bool, len(tx.ops)-len(tx.dead))...)
	}
	for _, i := range w.opIdx {
		tx.dead[i] = true
		tx.nDead++
		tx.size -= mutationSize(tx.ops[i])
	}
	w.opIdx = w.opIdx[:0]
}

// liveOps returns the mutations to commit: all but the dead ones.
func (tx *Tx) liveOps() []op {
	if tx.nDead == 0 {
		return tx.ops
	}
	live := make([]op, 0, len(tx.ops)-tx.nDead)
	for i, o := range tx.ops {
		if i >= len(tx.dead) || !tx.dead[i] {
			live = append(live, o)
		}
	}
	return live
}

func (tx *Tx) mutation(o op) bool {
	if tx.done {
		tx.fail(ErrTransactionDone)
		return false
	}
	if tx.readOnly {
		tx.fail(fmt.Errorf("%w: a write in ReadTransact, which never commits", ErrInvalidOperation))
		return false
	}
	switch {
	case len(o.key) > tx.db.opts.MaxKeySize && o.kind != opDelete && o.kind != opDeleteRange && o.kind != opWriteConflict:
		// A clear or a conflict range names no key to store: see Clear.
		tx.fail(fmt.Errorf("%w: %d bytes, limit %d", ErrKeyTooLarge, len(o.key), tx.db.opts.MaxKeySize))
		return false
	case o.kind != opDeleteRange && o.kind != opWriteConflict && len(o.value) > tx.db.opts.MaxValueSize:
		tx.fail(fmt.Errorf("%w: %d bytes, limit %d", ErrValueTooLarge, len(o.value), tx.db.opts.MaxValueSize))
		return false
	}
	if o.kind == opSet || o.kind == opDelete {
		if w, ok := tx.writes.Get(&txWrite{key: o.key}); ok {
			tx.supersede(w)
		}
	}
	// The mutations alone past the limit fail the transaction at once;
	// Commit counts the conflict ranges too (checkSize).
	tx.size += mutationSize(o)
	tx.approx += approxMutationSize(o)
	if tx.size > tx.db.opts.TxnSizeLimit {
		tx.fail(fmt.Errorf("%w: more than %d bytes", ErrBatchTooLarge, tx.db.opts.TxnSizeLimit))
		return false
	}
	o.key, o.value = bytes.Clone(o.key), bytes.Clone(o.value)
	tx.ops = append(tx.ops, o)
	return true
}

// Err returns the error a refused mutation failed the transaction with
// (see Tx), or nil. Mutations return no error, as in FoundationDB; Err
// lets a caller that wants to know at once, rather than at its next read
// or at Commit, ask after a mutation.
func (tx *Tx) Err() error { return tx.err }

func (tx *Tx) fail(err error) {
	if tx.err == nil {
		tx.err = err
	}
}

// Set sets key to value.
func (tx *Tx) Set(key, value []byte) {
	if tx.mutation(op{kind: opSet, key: key, value: value}) {
		w := tx.write(key)
		w.decide(len(tx.ops))
		// An unreadable key stays so (see SetVersionstampedKey).
		w.known, w.present, w.value, w.pending = true, true, bytes.Clone(value), nil
	}
}

// SetEntry sets key to value with an expiry and flags (see SetOptions).
// Within the transaction the key reads as value until the expiry passes
// after commit.
func (tx *Tx) SetEntry(key, value []byte, o SetOptions) {
	exp := expiryAt(o.ExpiresAt)
	if !o.ExpiresAt.IsZero() && exp <= tx.db.nowMs() {
		tx.Clear(key)
		return
	}
	if tx.mutation(op{kind: opSet, key: key, value: value, expiry: exp, flags: o.Flags}) {
		w := tx.write(key)
		w.decide(len(tx.ops))
		// An unreadable key stays so (see SetVersionstampedKey).
		w.known, w.present, w.value, w.pending = true, true, bytes.Clone(value), nil
	}
}

// Clear removes key. As in FoundationDB, a key longer than any key can be
// (the format's limit, 1 MiB) cannot exist, so clearing it does nothing;
// a key longer than Options.MaxKeySize but within that limit may have been
// written under a larger MaxKeySize, and is cleared like any other.
func (tx *Tx) Clear(key []byte) {
	if len(key) > keydir.MaxKeyLen && !tx.done && !tx.readOnly { // (else mutation reports the misuse)
		return
	}
	if tx.mutation(op{kind: opDelete, key: key}) {
		w := tx.write(key)
		w.decide(len(tx.ops))
		w.known, w.present, w.value, w.pending, w.unreadable = true, false, nil, nil, false
		tx.makeReadable(keyRange{w.key, keyAfter(bytes.Clone(key))})
	}
}

// ClearRange removes every key in [begin, end); a nil end means the end of
// the key space. An end before begin fails the transaction with
// ErrInvalidRange. As in FoundationDB, bounds longer than any key can be
// are cut to a bound that orders the same against every key that can
// exist (see Clear), so they are no error and cost no more.
func (tx *Tx) ClearRange(begin, end []byte) {
	if end != nil && bytes.Compare(begin, end) > 0 {
		tx.fail(ErrInvalidRange)
		return
	}
	begin, end, ok := cutRange(begin, end)
	if !ok && !tx.done && !tx.readOnly {
		return // empty once cut
	}
	if !tx.mutation(op{kind: opDeleteRange, key: begin, value: end}) {
		return
	}
	r := keyRange{bytes.Clone(begin), bytes.Clone(end)}
	tx.writes.Ascend(&txWrite{key: begin}, func(w *txWrite) bool {
		if !r.contains(w.key) {
			return false
		}
		tx.supersede(w)
		w.decide(len(tx.ops))
		w.known, w.present, w.value, w.pending, w.unreadable = true, false, nil, nil, false
		return true
	})
	tx.clears = append(tx.clears, r)
	tx.makeReadable(r)
}

func (tx *Tx) atomic(a atomicOp, key, param []byte) {
	o := op{kind: opAtomic, atomic: a, key: key, value: param}
	if !tx.mutation(o) {
		return
	}
	w := tx.write(key)
	if w.unreadable {
		return // applied at commit to the versionstamped value
	}
	if w.known {
		nv, del := applyAtomic(a, w.value, w.present, param, tx.db.opts.MaxValueSize)
		w.value, w.present = nv, !del
		return
	}
	w.pending = append(w.pending, tx.ops[len(tx.ops)-1])
}

// Add adds param to the value as little-endian integers of param's length
// (the value is zero-extended or truncated to it; a missing value is zero),
// wrapping on overflow.
func (tx *Tx) Add(key, param []byte) { tx.atomic(atomicAdd, key, param) }

// BitAnd, BitOr and BitXor combine the value with param bitwise (the value
// resized to param's length; BitAnd of a missing value stores param).
func (tx *Tx) BitAnd(key, param []byte) { tx.atomic(atomicAnd, key, param) }

// BitOr combines the value with param by bitwise or.
func (tx *Tx) BitOr(key, param []byte) { tx.atomic(atomicOr, key, param) }

// BitXor combines the value with param by bitwise exclusive or.
func (tx *Tx) BitXor(key, param []byte) { tx.atomic(atomicXor, key, param) }

// Max stores the larger of the value and param as little-endian unsigned
// integers of param's length (param if the key is missing).
func (tx *Tx) Max(key, param []byte) { tx.atomic(atomicMax, key, param) }

// Min stores the smaller of the value and param, compared as Max does
// (param if the key is missing).
func (tx *Tx) Min(key, param []byte) { tx.atomic(atomicMin, key, param) }

// ByteMax stores the lexicographically larger of the value and param.
func (tx *Tx) ByteMax(key, param []byte) { tx.atomic(atomicByteMax, key, param) }

// ByteMin stores the lexicographically smaller of the value and param.
func (tx *Tx) ByteMin(key, param []byte) { tx.atomic(atomicByteMin, key, param) }

// AppendIfFits appends param to the value unless the result would exceed
// the value size limit, in which case the value is left alone.
func (tx *Tx) AppendIfFits(key, param []byte) { tx.atomic(atomicAppendIfFits, key, param) }

// CompareAndClear clears the key if its value equals param.
func (tx *Tx) CompareAndClear(key, param []byte) { tx.atomic(atomicCompareAndClear, key, param) }

// SetVersionstampedKey sets a key made at commit: key's last 4 bytes give,
// little-endian, the offset of a 10-byte placeholder in the rest, which is
// replaced by the transaction's versionstamp (see tuple's
// PackWithVersionstamp). Until commit the key could land anywhere between
// the stamps of the first version after the read version and the all-0xff
// stamp, so, as in FoundationDB, a read whose result depends on that range
// (a Get inside it, a range read or a key selector that covers part of it)
// fails with ErrAccessedUnreadable, except where a Clear or ClearRange
// since made the result known. A Set does not: as in FoundationDB
// (WriteMap::mutate keeps a key's unreadable mark through a set), a key
// set where a versionstamped key may land, or set after
// SetVersionstampedValue, stays unreadable until cleared.
func (tx *Tx) SetVersionstampedKey(key, value []byte) {
	if len(key) < 4 || int(uint32(key[len(key)-4])|uint32(key[len(key)-3])<<8|uint32(key[len(key)-2])<<16|uint32(key[len(key)-1])<<24)+10 > len(key)-4 {
		tx.fail(fmt.Errorf("%w: versionstamp offset outside the key", ErrInvalidOperation))
		return
	}
	if tx.mutation(op{kind: opSetVSKey, key: key, value: value}) {
		tx.vsRanges = append(tx.vsRanges, versionstampKeyRange(key, tx.v.version))
	}
}

// versionstampKeyRange returns where a SetVersionstampedKey of key (with
// its 4-byte offset suffix) committed after readVersion may land: from the
// key with the versionstamp of the first version after readVersion to the
// key with an all-0xff versionstamp, inclusive.
func versionstampKeyRange(key []byte, readVersion uint64) keyRange {
	k := key[:len(key)-4]
	pos := int(binary.LittleEndian.Uint32(key[len(key)-4:]))
	lo := bytes.Clone(k)
	binary.BigEndian.PutUint64(lo[pos:], readVersion+1)
	lo[pos+8], lo[pos+9] = 0, 0
	hi := bytes.Clone(k)
	for i := pos; i < pos+10; i++ {
		hi[i] = 0xff
	}
	return keyRange{lo, keyAfter(hi)}
}

// SetVersionstampedValue sets key to value with its placeholder (located
// by value's last 4 bytes, as for SetVersionstampedKey) replaced by the
// transaction's versionstamp. Until a Clear or ClearRange of key, reading
// it in the transaction (Get, or a range read or key selector that reaches
// it) fails with ErrAccessedUnreadable, as in FoundationDB, even after a
// Set of it (see SetVersionstampedKey); atomic operations on it apply at
// commit, in order, to the value with its versionstamp.
func (tx *Tx) SetVersionstampedValue(key, value []byte) {
	if len(value) < 4 || int(uint32(value[len(value)-4])|uint32(value[len(value)-3])<<8|uint32(value[len(value)-2])<<16|uint32(value[len(value)-1])<<24)+10 > len(value)-4 {
		tx.fail(fmt.Errorf("%w: versionstamp offset outside the value", ErrInvalidOperation))
		return
	}
	if tx.mutation(op{kind: opSetVSValue, key: key, value: value}) {
		w := tx.write(key)
		// Present, with a value known only at commit.
		w.known, w.present, w.value, w.pending, w.unreadable = true, true, nil, nil, true
	}
}

// cutRange cuts bounds longer than any key can be (keydir.MaxKeyLen) to
// MaxKeyLen+1 bytes, which order the same against every key that can
// exist, as FoundationDB does with its key size limit; ok is false if the
// range is empty then. begin <= end (a nil end: the end of the key space).
func cutRange(begin, end []byte) (b, e []byte, ok bool) {
	if len(begin) > keydir.MaxKeyLen+1 {
		begin = begin[:keydir.MaxKeyLen+1]
	}
	if len(end) > keydir.MaxKeyLen+1 {
		end = end[:keydir.MaxKeyLen+1]
	}
	return begin, end, end == nil || bytes.Compare(begin, end) < 0
}

// AddReadConflictRange makes the commit fail if anything in [begin, end)
// changes after the read version, as if the transaction had read it. An
// end before begin fails the commit with ErrInvalidRange, as
// FoundationDB's inverted_range; bounds longer than any key can be are
// cut as ClearRange's are.
func (tx *Tx) AddReadConflictRange(begin, end []byte) {
	if tx.done {
		tx.fail(ErrTransactionDone)
		return
	}
	if end != nil && bytes.Compare(begin, end) > 0 {
		tx.fail(ErrInvalidRange)
		return
	}
	if begin, end, ok := cutRange(begin, end); ok {
		r := keyRange{bytes.Clone(begin), bytes.Clone(end)}
		tx.reads = append(tx.reads, r)
		tx.approx += rangeSize(r)
	}
}

// AddReadConflictKey is AddReadConflictRange for one key.
func (tx *Tx) AddReadConflictKey(key []byte) {
	tx.AddReadConflictRange(key, keyAfter(bytes.Clone(key)))
}

// AddWriteConflictRange makes transactions that read [begin, end)
// conflict with this one, as if it had written there. An end before begin
// fails the commit with ErrInvalidRange; bounds longer than any key can
// be are cut as ClearRange's are.
func (tx *Tx) AddWriteConflictRange(begin, end []byte) {
	if end != nil && bytes.Compare(begin, end) > 0 {
		tx.fail(ErrInvalidRange)
		return
	}
	begin, end, ok := cutRange(begin, end)
	if !ok && !tx.done && !tx.readOnly {
		return
	}
	tx.mutation(op{kind: opWriteConflict, key: begin, value: end})
}

// AddWriteConflictKey is AddWriteConflictRange for one key.
func (tx *Tx) AddWriteConflictKey(key []byte) {
	tx.AddWriteConflictRange(key, keyAfter(bytes.Clone(key)))
}

// SetOrigin names who makes the transaction's writes, as Batch.SetOrigin
// does: subscribers registered with DB.SubscribeOrigins receive o with
// every key its commit changes. Set it before Commit.
func (tx *Tx) SetOrigin(o any) { tx.origin = o }

// Commit applies the transaction's writes atomically, or fails with
// ErrConflict (retryable) if something it read changed since its read
// version. A transaction that wrote nothing commits without a check. After
// Commit the transaction cannot be used again, whatever the outcome.
func (tx *Tx) Commit() (err error) {
	if tx.done {
		return ErrTransactionDone
	}
	defer tx.end()
	defer func() {
		if err != nil {
			// As in FoundationDB, a failed commit's watches report its
			// error, whatever failed it.
			tx.cancelWatches(err)
		}
	}()
	if tx.err != nil {
		return tx.err
	}
	if tx.expired() {
		return ErrTransactionTooOld
	}
	if len(tx.ops) == 0 {
		tx.armWatches()
		return nil
	}
	if tx.db.opts.ReadOnly {
		return ErrReadOnly
	}
	tx.finishOpen()
	ops := tx.liveOps()
	if err := tx.checkSize(ops); err != nil {
		return err
	}
	req := &txnReq{readVersion: tx.v.version, readTime: tx.v.nowMs, reads: tx.reads, watches: tx.hold.watches}
	if l := tx.db.opts.TxnLifetime; l > 0 {
		req.deadline = tx.start.Add(l)
	}
	v, err := tx.db.commitFrom(tx.origin, ops, req)
	if err != nil {
		// Only a commit whose records may have reached the file has an
		// unknown result; one refused before (writes had stopped already)
		// is known not to have committed.
		var mw *maybeWritten
		if errors.As(err, &mw) {
			return fmt.Errorf("%w: %w", ErrCommitUnknownResult, mw.err)
		}
		return err
	}
	tx.committed = v
	// The commit armed the watches; those whose key's value differs now
	// from the one they saw (changed by another transaction since the read
	// version, or by this one's writes after the watch) fire now.
	for _, w := range tx.hold.watches {
		if tx.db.watchChanged(w) {
			tx.db.fireWatch(w, nil)
		}
	}
	tx.hold.watches = nil
	return nil
}

// Rollback abandons the transaction. Rolling back a finished transaction
// does nothing.
func (tx *Tx) Rollback() {
	tx.cancelWatches(ErrTransactionCancelled)
	tx.end()
}

// Transact runs fn in a transaction and commits it, retrying the whole of
// fn on retryable errors (ErrConflict, ErrTransactionTooOld,
// ErrCommitUnknownResult) with FoundationDB's backoff: 10 ms doubling to
// 1 s, each times a random factor. An error from fn, or a panic, rolls the
// transaction back; a panic is then re-raised. fn may run several times, so
// it should have no effects beyond the transaction. As in FoundationDB, a
// commit whose result is unknown (ErrCommitUnknownResult) is retried too,
// so an attempt that did commit may be followed by another: make fn
// idempotent (check for a unique key it writes, say) where that matters.
func (db *DB) Transact(ctx context.Context, fn func(tx *Tx) error) error {
	var b retryBackoff
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		tx, err := db.begin()
		if err != nil {
			return err
		}
		err = runTx(tx, fn)
		if err == nil {
			err = tx.Commit()
		}
		if err == nil || !IsRetryable(err) {
			return err
		}
		if err := b.wait(ctx); err != nil {
			return err
		}
	}
}

// retryBackoff is FoundationDB's wait between the attempts of a retry
// loop: 10 ms, doubling to 1 s, each times a random factor in [0.5, 1.5).
type retryBackoff struct{ next time.Duration }

// retryAfter is time.After; tests record the waits through it.
var retryAfter = time.After

// wait sleeps before the next attempt, or returns ctx's error if it ends
// first.
func (b *retryBackoff) wait(ctx context.Context) error {
	if b.next == 0 {
		b.next = 10 * time.Millisecond
	}
	d := time.Duration(float64(b.next) * (0.5 + rand.Float64()))
	b.next = min(2*b.next, time.Second)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-retryAfter(d):
		return nil
	}
}

// ReadTransact runs fn in a transaction that is never committed: a
// consistent read of the database at one version. Retryable errors
// (ErrTransactionTooOld) are retried as Transact does, with its backoff.
// A mutation in fn (Set, Clear, an atomic operation, ...) makes
// ReadTransact fail with ErrInvalidOperation rather than drop it.
func (db *DB) ReadTransact(ctx context.Context, fn func(tx *Tx) error) error {
	var b retryBackoff
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// It never commits, so it needs no history kept: unregistered,
		// it does not make commits record their deletions.
		tx := db.beginTx(false)
		tx.readOnly = true
		err := runTx(tx, fn)
		if err == nil {
			err = tx.err // a write, lost unless reported
		}
		tx.Rollback()
		if err == nil || !IsRetryable(err) {
			return err
		}
		if err := b.wait(ctx); err != nil {
			return err
		}
	}
}

// runTx calls fn, rolling back on error or panic.
func runTx(tx *Tx, fn func(*Tx) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			tx.Rollback()
			panic(p)
		}
		if err != nil {
			tx.Rollback()
		}
	}()
	return fn(tx)
}

// Watch fires once key's value differs from the one the transaction that
// set it up saw (see Tx.Watch).
type Watch struct {
	db   *DB
	key  string
	ch   chan struct{}
	err  error
	done bool
	// val and present: key's value as the transaction saw it when it set
	// the watch up (the read version's, or its own write's); the watch
	// fires once the database's differs.
	val     []byte
	present bool
}

// Watch returns a watch on key that becomes active when the transaction
// commits. As in FoundationDB, it compares with key's value as the
// transaction saw it when it set the watch up (the read version's, or its
// own write's), and reading it adds the read conflict a Get would: a
// transaction that writes fails to commit (ErrConflict, which its watch
// then reports) if another changed key after its read version. The watch
// fires at commit if the value differs by then (changed by this
// transaction's own writes after the watch, or by another transaction's
// commit when this one has no conflict check: it wrote nothing, or the key
// was its own write), and otherwise once a commit, or the key's expiry,
// makes it differ. A commit that writes the same value, or
// clears a key that was absent, does not fire it; a change undone before
// the watch looks (A to B and back) may not either. If the transaction
// fails (for any reason, including an invalid mutation or its lifetime), the
// watch reports the error; a watch of a finished transaction reports
// ErrTransactionDone, and one of a key whose value the transaction cannot
// read (see SetVersionstampedValue) ErrAccessedUnreadable. Closing the
// database fails the watches still waiting with ErrClosed.
//
// At most Options.MaxWatches watches may be outstanding in the database:
// one set up beyond that fails at once with ErrTooManyWatches (after
// adding its read conflict, as in FoundationDB), and the transaction goes
// on. A watch stops counting when it fires, is cancelled, or its
// transaction fails or is rolled back; the watches of a transaction
// dropped without Commit or Rollback report ErrTransactionCancelled once
// the garbage collector finds it unreachable.
func (tx *Tx) Watch(key []byte) *Watch {
	// Subscribe here, never in the commit leader, which arms watches.
	tx.db.watchOnce.Do(func() { tx.db.Subscribe(tx.db.fireWatches) })
	w := &Watch{db: tx.db, key: string(key), ch: make(chan struct{})}
	err := tx.usable()
	if err == nil && len(key) > tx.db.opts.MaxKeySize {
		err = fmt.Errorf("%w: %d bytes, limit %d", ErrKeyTooLarge, len(key), tx.db.opts.MaxKeySize)
	}
	if err == nil {
		err = tx.readable(key)
	}
	if err == nil {
		// The watch reads key as Get does, read conflict included (as
		// FoundationDB's watch reads it without Snapshot): none if the
		// transaction's own writes answer it.
		if wr, ok := tx.written(key); (!ok || !wr.known) && (ok || !tx.cleared(key)) {
			tx.reader.conflict(keyRange{bytes.Clone(key), keyAfter(bytes.Clone(key))})
		}
		var v []byte
		v, w.present, err = tx.value(key)
		w.val = bytes.Clone(v)
	}
	if err == nil {
		// Counted from here until it fires, is cancelled or fails (see
		// finishWatch), as FoundationDB counts a watch once its
		// transaction has read the value.
		err = tx.db.countWatch()
	}
	if err != nil {
		// Nothing would ever arm or fail it.
		w.done, w.err = true, err
		close(w.ch)
		return w
	}
	tx.hold.watches = append(tx.hold.watches, w)
	return w
}

// countWatch counts a new outstanding watch, or fails with
// ErrTooManyWatches if Options.MaxWatches are outstanding already.
func (db *DB) countWatch() error {
	db.watchMu.Lock()
	defer db.watchMu.Unlock()
	if db.watchCount >= db.opts.MaxWatches {
		return fmt.Errorf("%w: %d outstanding, limit %d", ErrTooManyWatches, db.watchCount, db.opts.MaxWatches)
	}
	db.watchCount++
	return nil
}

// finishWatchLocked ends a counted watch that has not ended yet: it
// reports err (nil: it fired) and stops counting. db.watchMu is held.
func (db *DB) finishWatchLocked(w *Watch, err error) {
	w.done, w.err = true, err
	close(w.ch)
	db.watchCount--
}

// outstandingWatches returns the number of watches counted against
// Options.MaxWatches.
func (db *DB) outstandingWatches() int {
	db.watchMu.Lock()
	defer db.watchMu.Unlock()
	return db.watchCount
}

// watchChanged reports whether w's key has now another value in the
// database than the one w compares with (or whether that cannot be told).
func (db *DB) watchChanged(w *Watch) bool {
	v, err := db.Get([]byte(w.key))
	switch {
	case errors.Is(err, ErrNotFound):
		return w.present
	case err != nil:
		return true // let the caller look
	}
	return !w.present || !bytes.Equal(v, w.val)
}

// Wait blocks until the watch fires, the context ends or the watch fails.
func (w *Watch) Wait(ctx context.Context) error {
	select {
	case <-w.ch:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// C returns a channel closed when the watch fires (or fails; see Wait).
func (w *Watch) C() <-chan struct{} { return w.ch }

// Cancel stops the watch; Wait then returns ErrOperationCancelled, as a
// cancelled watch future does in FoundationDB.
func (w *Watch) Cancel() { w.db.fireWatch(w, ErrOperationCancelled) }

// armWatches arms the watches of a transaction that wrote nothing: each
// fires at once if its key changed since the read version.
func (tx *Tx) armWatches() {
	db := tx.db
	for _, w := range tx.hold.watches {
		db.addWatch(w)
		if db.watchChanged(w) {
			db.fireWatch(w, nil)
		}
	}
	tx.hold.watches = nil
}

func (tx *Tx) cancelWatches(err error) {
	for _, w := range tx.hold.watches {
		tx.db.fireWatch(w, err)
	}
	tx.hold.watches = nil
}

func (db *DB) addWatch(w *Watch) {
	db.watchMu.Lock()
	defer db.watchMu.Unlock()
	if w.done {
		return
	}
	if db.watchClosed {
		db.finishWatchLocked(w, ErrClosed)
		return
	}
	if db.watches == nil {
		db.watches = map[string][]*Watch{}
	}
	db.watches[w.key] = append(db.watches[w.key], w)
}

// closeWatches fails the armed watches with ErrClosed, and those armed
// later (by a read-only transaction's Commit), for Close: no commit will
// fire them.
func (db *DB) closeWatches() {
	db.watchMu.Lock()
	defer db.watchMu.Unlock()
	db.watchClosed = true
	for _, ws := range db.watches {
		for _, w := range ws {
			db.finishWatchLocked(w, ErrClosed)
		}
	}
	db.watches = nil
}

// fireWatches is the commit subscription behind watches: the watches of
// the keys a commit touched fire if the value now differs from theirs.
// The value is read after the commit is visible, outside watchMu, so a
// later commit that changes it again finds the watch still armed.
func (db *DB) fireWatches(keys [][]byte) {
	var touched []*Watch
	db.watchMu.Lock()
	for _, k := range keys {
		touched = append(touched, db.watches[string(k)]...)
	}
	db.watchMu.Unlock()
	for _, w := range touched {
		if db.watchChanged(w) {
			db.fireWatch(w, nil)
		}
	}
}

func (db *DB) fireWatch(w *Watch, err error) {
	db.watchMu.Lock()
	defer db.watchMu.Unlock()
	if w.done {
		return
	}
	db.finishWatchLocked(w, err)
	ws := db.watches[w.key]
	if i := slices.Index(ws, w); i >= 0 {
		if ws = slices.Delete(ws, i, i+1); len(ws) == 0 {
			delete(db.watches, w.key)
		} else {
			db.watches[w.key] = ws
		}
	}
}
