package caskade

import (
	"bytes"
	"fmt"
	"time"

	"github.com/caskade/caskade/internal/keydir"
	"github.com/caskade/caskade/internal/record"
)

// Set sets key to value. It returns once the write is applied and, under
// SyncAlways, durable. It does not retain key or value.
func (db *DB) Set(key, value []byte) error {
	return db.write1(op{kind: opSet, key: key, value: value})
}

// SetWithTTL sets key to value, expiring after ttl, which must be positive
// (ErrInvalidTTL otherwise). The expiry is stored as an absolute time.
func (db *DB) SetWithTTL(key, value []byte, ttl time.Duration) error {
	exp, err := db.expiryAfter(ttl)
	if err != nil {
		return err
	}
	return db.write1(op{kind: opSet, key: key, value: value, expiry: exp})
}

// SetWithExpiry sets key to value, expiring at t. A t in the past deletes
// the key; the zero Time means no expiry.
func (db *DB) SetWithExpiry(key, value []byte, t time.Time) error {
	o := op{kind: opSet, key: key, value: value, expiry: expiryAt(t)}
	if !t.IsZero() && o.expiry <= db.nowMs() {
		o = op{kind: opDelete, key: key}
	}
	return db.write1(o)
}

// SetOptions are the optional parts of a write.
type SetOptions struct {
	// ExpiresAt is when the key expires; the zero Time means never, and a
	// time in the past deletes the key.
	ExpiresAt time.Time
	// Flags are 32 bits kept beside the value (memcached's client flags),
	// returned by Lookup; the value's bytes are unaffected.
	Flags uint32
}

// SetEntry sets key to value with an expiry and flags.
func (db *DB) SetEntry(key, value []byte, o SetOptions) error {
	w := op{kind: opSet, key: key, value: value, expiry: expiryAt(o.ExpiresAt), flags: o.Flags}
	if !o.ExpiresAt.IsZero() && w.expiry <= db.nowMs() {
		w = op{kind: opDelete, key: key}
	}
	return db.write1(w)
}

// Delete removes key. Deleting a missing key is not an error. As
// Tx.Clear, it takes a key longer than Options.MaxKeySize (one written
// under a larger limit), and does nothing for one longer than any key can
// be (1 MiB).
func (db *DB) Delete(key []byte) error {
	return db.write1(op{kind: opDelete, key: key})
}

// DeleteRange removes every key in [begin, end); a nil end means to the end
// of the key space. The deletion is one atomic commit. As with
// Tx.ClearRange, the bounds may be longer than Options.MaxKeySize, and
// are cut where longer than any key can be.
func (db *DB) DeleteRange(begin, end []byte) error {
	if end != nil && bytes.Compare(begin, end) > 0 {
		return ErrInvalidRange
	}
	_, err := db.commitChecked([]op{{kind: opDeleteRange, key: begin, value: end}})
	return err
}

// Expire sets key to expire after ttl; a ttl <= 0 deletes it at once, as
// Redis's EXPIRE does. It reports whether the key existed. Changing the
// expiry rewrites the record, so it costs a read and a write of the value.
func (db *DB) Expire(key []byte, ttl time.Duration) (bool, error) {
	exp := db.nowMs() + ttl.Milliseconds()
	if ttl > 0 && ttl < time.Millisecond {
		exp++
	}
	return db.expire(key, max(exp, 1))
}

// ExpireAt sets key to expire at t (a time in the past deletes it). It
// reports whether the key existed.
func (db *DB) ExpireAt(key []byte, t time.Time) (bool, error) {
	return db.expire(key, max(expiryAt(t), 1))
}

// Persist removes key's expiry. It reports whether the key existed.
func (db *DB) Persist(key []byte) (bool, error) {
	return db.expire(key, 0)
}

func (db *DB) expire(key []byte, exp int64) (bool, error) {
	ops := []op{{kind: opExpire, key: key, expiry: exp}}
	if err := db.checkOps(ops); err != nil {
		return false, err
	}
	_, err := db.commit(ops)
	return ops[0].found, err
}

func (db *DB) write1(o op) error {
	ops := [1]op{o}
	_, err := db.commitChecked(ops[:])
	return err
}

func (db *DB) commitChecked(ops []op) (uint64, error) {
	if err := db.checkOps(ops); err != nil {
		return 0, err
	}
	return db.commit(ops)
}

// checkOps enforces the size limits before anything is queued. Deletes
// are held to the limit of keys that can exist, not to MaxKeySize, as
// Tx.Clear and Tx.ClearRange are: a key over MaxKeySize may have been
// written under a larger one. A delete of a key longer than any can be
// is left to find nothing and counts nothing; delete range bounds that
// long are cut (in ops) as cutRange does.
func (db *DB) checkOps(ops []op) error {
	total := 0
	for i := range ops {
		o := &ops[i]
		switch {
		case o.kind == opDelete:
			if len(o.key) > keydir.MaxKeyLen {
				continue
			}
		case o.kind == opDeleteRange:
			o.key, o.value, _ = cutRange(o.key, o.value) // empty once cut: deletes nothing
		case len(o.key) > db.opts.MaxKeySize:
			return fmt.Errorf("%w: %d bytes, limit %d", ErrKeyTooLarge, len(o.key), db.opts.MaxKeySize)
		}
		if o.kind == opSet && len(o.value) > db.opts.MaxValueSize {
			return fmt.Errorf("%w: %d bytes, limit %d", ErrValueTooLarge, len(o.value), db.opts.MaxValueSize)
		}
		total += record.EncodedSize(o.key, o.value)
	}
	if total > db.opts.MaxBatchSize {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrBatchTooLarge, total, db.opts.MaxBatchSize)
	}
	return nil
}

func (db *DB) expiryAfter(ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("%w: %v", ErrInvalidTTL, ttl)
	}
	ms := ttl.Milliseconds()
	if ttl%time.Millisecond != 0 {
		ms++ // round up: never expire early
	}
	return db.nowMs() + ms, nil
}

// expiryAt converts t to Unix milliseconds; the zero Time is 0 (never).
func expiryAt(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixMilli(), 1)
}

// Batch collects writes to apply atomically with DB.Write: after a crash
// either all of them are present or none. A Batch copies the keys and
// values given to it. It is not safe for concurrent use; it may be reused
// after Reset.
type Batch struct {
	ops     []op
	buf     []byte
	err     error
	version uint64 // of the last successful Write
	origin  any
}

// SetOrigin names who makes the batch's writes: subscribers registered
// with DB.SubscribeOrigins receive o with every key the batch changes, so
// that a server can tell its own clients' writes from the others' (Redis
// CLIENT TRACKING NOLOOP does). o is passed on as it is, never looked at;
// nil (the default, and after Reset) names no one.
func (b *Batch) SetOrigin(o any) { b.origin = o }

// Set adds a write of key = value.
func (b *Batch) Set(key, value []byte) {
	b.ops = append(b.ops, op{kind: opSet, key: b.keep(key), value: b.keep(value)})
}

// SetWithExpiry adds a write of key = value expiring at t (zero: never).
func (b *Batch) SetWithExpiry(key, value []byte, t time.Time) {
	b.ops = append(b.ops, op{kind: opSet, key: b.keep(key), value: b.keep(value), expiry: expiryAt(t)})
}

// SetEntry adds a write of key = value with an expiry and flags.
func (b *Batch) SetEntry(key, value []byte, o SetOptions) {
	b.ops = append(b.ops, op{kind: opSet, key: b.keep(key), value: b.keep(value), expiry: expiryAt(o.ExpiresAt), flags: o.Flags})
}

// SetWithTTL adds a write of key = value expiring ttl after the batch is
// written; ttl must be positive, or Write fails with ErrInvalidTTL.
func (b *Batch) SetWithTTL(key, value []byte, ttl time.Duration) {
	if ttl <= 0 && b.err == nil {
		b.err = fmt.Errorf("%w: %v", ErrInvalidTTL, ttl)
	}
	// Write makes the expiry absolute.
	b.ops = append(b.ops, op{kind: opSet, key: b.keep(key), value: b.keep(value), ttl: ttl})
}

// Delete adds a deletion of key: as DB.Delete, of a key over
// Options.MaxKeySize too.
func (b *Batch) Delete(key []byte) {
	b.ops = append(b.ops, op{kind: opDelete, key: b.keep(key)})
}

// DeleteRange adds a deletion of every key in [begin, end); nil end means
// to the end of the key space. As DB.DeleteRange, it takes bounds over
// Options.MaxKeySize.
func (b *Batch) DeleteRange(begin, end []byte) {
	if end != nil && bytes.Compare(begin, end) > 0 && b.err == nil {
		b.err = ErrInvalidRange
	}
	var e []byte
	if end != nil {
		e = b.keep(end)
	}
	b.ops = append(b.ops, op{kind: opDeleteRange, key: b.keep(begin), value: e})
}

// ExpireAt adds a change of key's expiry to t (the zero Time removes it, a
// time in the past deletes the key). It does nothing to a missing key.
func (b *Batch) ExpireAt(key []byte, t time.Time) {
	exp := expiryAt(t)
	b.ops = append(b.ops, op{kind: opExpire, key: b.keep(key), expiry: exp})
}

// Check makes the batch conditional: Write applies it only if key's
// current version (KeyInfo.Version) is version, where 0 means the key has
// no value; otherwise Write fails with ErrConflict and applies nothing. The
// check and the writes are one atomic step, so reading a key's version,
// computing new values and writing them with a Check is a safe
// read-modify-write (retry on ErrConflict). A key deleted and set again
// has a new version; a key that was absent and is absent again has not.
func (b *Batch) Check(key []byte, version uint64) {
	b.ops = append(b.ops, op{kind: opCheck, key: b.keep(key), version: version})
}

// CheckRange makes the batch conditional on a range read from snapshot s:
// Write applies it only if [begin, end) (nil end: to the end of the key
// space) is still as s saw it: no commit after s set or deleted a key in
// it, and no key that s saw live has expired since; otherwise Write fails
// with ErrConflict and applies nothing. Deletions are remembered only
// while a snapshot from DB.SnapshotForChecks (or a transaction) that reads
// at s's version or earlier is open, so s should come from
// SnapshotForChecks and stay open until Write returns.
func (b *Batch) CheckRange(begin, end []byte, s *Snapshot) {
	if end != nil && bytes.Compare(begin, end) > 0 && b.err == nil {
		b.err = ErrInvalidRange
	}
	var e []byte
	if end != nil {
		e = b.keep(end)
	}
	// The op carries the snapshot's instant in expiry.
	b.ops = append(b.ops, op{kind: opCheckRange, key: b.keep(begin), value: e, version: s.v.version, expiry: s.v.nowMs})
}

// AddInt adds an increment of key's value by delta, the value read as a
// base-10 signed 64-bit integer, as Redis's INCRBY does: a key without a
// value counts as 0 (and gets no expiry); a key with one keeps its expiry
// and flags. The increment happens at commit, on the value then current,
// so concurrent increments never conflict. If the value is not such an
// integer, Write fails with ErrNotInteger, and if the sum overflows, with
// ErrOverflow; either way nothing of the batch is applied. AddInt returns
// the index to give Int for the new value after a successful Write.
func (b *Batch) AddInt(key []byte, delta int64) int {
	b.ops = append(b.ops, op{kind: opAddInt, key: b.keep(key), delta: delta})
	return len(b.ops) - 1
}

// Int returns the value that the AddInt which returned i left, once the
// batch has been written.
func (b *Batch) Int(i int) int64 { return b.ops[i].result }

// Len returns the number of operations (writes and checks) in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Version returns the commit version of the batch's last successful
// Write: the KeyInfo.Version every key it set now has (until the next
// change). It is 0 before a Write, after a failed one, and when the batch
// changed nothing (a delete of an absent key, say).
func (b *Batch) Version() uint64 { return b.version }

// Reset empties the batch for reuse, and clears its origin.
func (b *Batch) Reset() {
	clear(b.ops)
	b.ops, b.buf, b.err, b.version, b.origin = b.ops[:0], b.buf[:0], nil, 0, nil
}

// keep copies p into storage owned by the batch. Slices handed out earlier
// stay valid: when buf must grow, a new array is started. The copy is never
// nil, even of an empty p: a nil range end means the end of the key space.
func (b *Batch) keep(p []byte) []byte {
	if len(p) > cap(b.buf)-len(b.buf) || b.buf == nil {
		b.buf = make([]byte, 0, max(len(p), 2*cap(b.buf), 256))
	}
	n := len(b.buf)
	b.buf = append(b.buf, p...)
	return b.buf[n:len(b.buf):len(b.buf)]
}

// Write applies the batch atomically. It returns once the batch is applied
// and, under SyncAlways, durable. The batch is unchanged and may be written
// again or Reset.
func (db *DB) Write(b *Batch) error { return db.write(b, false) }

// write is Write; turn says the batch is a Turn holder's (Turn.Write).
func (db *DB) write(b *Batch, turn bool) error {
	b.version = 0
	ops, err := db.batchOps(b, nil)
	if err != nil || len(ops) == 0 {
		return err
	}
	if err := db.checkOps(ops); err != nil {
		return err
	}
	var vers [1]uint64
	var errs [1]error
	var origins [1]any
	origins[0] = b.origin
	db.commitMany([][]op{ops}, []*txnReq{nil}, origins[:], vers[:], errs[:], turn)
	if errs[0] == nil {
		b.keepResults(ops)
		b.version = vers[0]
	}
	return errs[0]
}

// keepResults copies the results of a written copy of the batch's ops.
func (b *Batch) keepResults(ops []op) {
	for i := range ops {
		if ops[i].kind == opAddInt {
			b.ops[i].result = ops[i].result
		}
	}
}

// batchOps copies a batch's operations, making TTLs absolute. The copy is
// carved from *slab if it has room (WriteBatches: one allocation for all
// its batches), else a new slice.
func (db *DB) batchOps(b *Batch, slab *[]op) ([]op, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.ops) == 0 {
		return nil, nil
	}
	var ops []op
	if slab != nil && cap(*slab)-len(*slab) >= len(b.ops) {
		n := len(*slab)
		*slab = append(*slab, b.ops...)
		ops = (*slab)[n:len(*slab):len(*slab)]
	} else {
		ops = make([]op, len(b.ops))
		copy(ops, b.ops)
	}
	now := int64(-1) // read once, and only for a batch with expiries
	for i := range ops {
		if ops[i].ttl != 0 {
			exp, err := db.expiryAfter(ops[i].ttl)
			if err != nil {
				return nil, err
			}
			ops[i].expiry, ops[i].ttl = exp, 0
		}
		if ops[i].kind != opSet || ops[i].expiry == 0 {
			continue
		}
		if now < 0 {
			now = db.nowMs()
		}
		if ops[i].expiry <= now {
			ops[i] = op{kind: opDelete, key: ops[i].key}
		}
	}
	return ops, nil
}
