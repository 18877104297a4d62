package caskade

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/caskade/caskade/internal/keydir"
	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
)

// opKind is the kind of one mutation of a commit.
type opKind uint8

const (
	opSet           opKind = iota // key = value, with expiry
	opDelete                      // delete key
	opDeleteRange                 // delete [key, value); nil value: to the end
	opExpire                      // change key's expiry (0: persist); sets found
	opForget                      // drop key from memory if it is at version and expired
	opCheck                       // fail the commit unless key is at version (0: absent)
	opSeal                        // seal the active file and capture a view (for Backup)
	opAtomic                      // atomic operation atomic with operand value
	opSetVSKey                    // set key, whose versionstamp placeholder is filled in, to value
	opSetVSValue                  // set key to value, whose placeholder is filled in
	opWriteConflict               // add [key, value) to the write conflict history
	opAddInt                      // add delta to key's base-10 integer value; result out
	opCheckRange                  // fail the commit if [key, value) changed after version, or a key live at expiry (the reader's instant) expired
)

// op is one mutation. Results (found) are written by the commit leader and
// read by the caller after the commit returns.
type op struct {
	kind    opKind
	key     []byte
	value   []byte
	expiry  int64         // absolute, Unix milliseconds; 0 for none
	flags   uint32        // opSet: stored beside the value
	version uint64        // opForget
	ttl     time.Duration // Batch.SetWithTTL, made absolute by DB.Write
	found   bool
	view    *view    // opSeal: the state at the seal
	atomic  atomicOp // opAtomic
	delta   int64    // opAddInt
	result  int64    // opAddInt: the new value
	// opSeal: queue the sealed file's hint file for the hint worker
	// instead of writing it at once (Merge, which retires the file).
	hintLater bool
}

// commitReq is one commit: its ops become one batch with one version.
type commitReq struct {
	ops     []op
	txn     *txnReq    // for transactions: the read conflict check
	checked prechecked // what precheck found of its range reads
	version uint64
	err     error // this commit's own failure (a failed check)
	origin  any   // Batch.SetOrigin, Tx.SetOrigin: reported to SubscribeOrigins
	done    chan error
}

var reqPool = sync.Pool{New: func() any { return &commitReq{done: make(chan error, 1)} }}

// errLead tells a waiting committer that it is now the leader.
var errLead = errors.New("caskade: lead the next group")

// apply is one change to the key directory that a group makes after its
// records are written.
type apply struct {
	key     []byte
	del     bool   // remove the key (tombstone or forget)
	rel     int64  // offset of the record from the start of the group's buffer; -1: no record
	fid     uint32 // the data file the record went to (set by writeGroup)
	req     uint32 // the index in its group of the commit that made it, for notify
	size    int64  // record size
	valLen  uint32
	flags   uint32
	version uint64
	expiry  int64
	pos     keydir.Pos // where the group's lookup found the key, if it did: applied without a second search
	carrier bool       // a tombstone that only carries its commit's version to disk (versionCarrier)
}

// commit runs ops as one atomic batch and returns its version (0 if the
// batch changed nothing). It blocks until the batch is applied and, under
// SyncAlways, durable. Concurrent callers are grouped: one of them, the
// leader, writes every queued batch with one write and one fsync.
func (db *DB) commit(ops []op, txn ...*txnReq) (uint64, error) {
	var t *txnReq
	if len(txn) > 0 {
		t = txn[0]
	}
	return db.commitFrom(nil, ops, t)
}

// commitFrom is commit for a commit whose changes subscribers hear of as
// origin's (SubscribeOrigins); nil: none.
func (db *DB) commitFrom(origin any, ops []op, t *txnReq) (uint64, error) {
	var vers [1]uint64
	var errs [1]error
	var origins [1]any
	origins[0] = origin
	db.commitMany([][]op{ops}, []*txnReq{t}, origins[:], vers[:], errs[:], false)
	return vers[0], errs[0]
}

// commitMany runs several commits, in order, queued together so that they
// share one group (one write, one fsync); each succeeds or fails on its
// own. txns[i] may be nil; origins[i] is what subscribers hear each
// commit's changes come from (SubscribeOrigins). It fills vers and errs.
// Unless turn is set (the commits are a Turn holder's), it first gives a
// Turn that holds the lock its quiet moment (awaitTurn).
func (db *DB) commitMany(opss [][]op, txns []*txnReq, origins []any, vers []uint64, errs []error, turn bool) {
	if db.opts.ReadOnly {
		for i := range errs {
			errs[i] = ErrReadOnly
		}
		return
	}
	if !turn && db.turnHeld.Load() {
		db.awaitTurn()
	}
	// Range reads are checked here, outside the leader (precheck); a
	// commit that fails its check is not queued.
	var checked []prechecked
	for i := range opss {
		rs := rangeReads(opss[i], txns[i])
		if len(rs) == 0 {
			continue
		}
		if checked == nil {
			checked = make([]prechecked, len(opss))
		}
		id, p, conflict := db.precheck(rs)
		defer db.unprecheck(id)
		checked[i] = p
		if conflict {
			errs[i] = ErrConflict
		}
	}
	if checked != nil && testHookAfterPrecheck != nil {
		testHookAfterPrecheck()
	}
	if checked != nil && slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		db.commitSome(opss, txns, origins, checked, vers, errs)
		return
	}
	db.commitQueued(opss, txns, origins, checked, vers, errs)
}

// testHookAfterPrecheck, if set, runs between a commit's precheck and its
// turn in the leader.
var testHookAfterPrecheck func()

// commitSome queues the commits whose errs are not set yet, filling their
// vers and errs.
func (db *DB) commitSome(opss [][]op, txns []*txnReq, origins []any, checked []prechecked, vers []uint64, errs []error) {
	var o [][]op
	var t []*txnReq
	var g []any
	var c []prechecked
	var idx []int
	for i := range opss {
		if errs[i] == nil {
			o, t, g, c, idx = append(o, opss[i]), append(t, txns[i]), append(g, origins[i]), append(c, checked[i]), append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	v, e := make([]uint64, len(idx)), make([]error, len(idx))
	db.commitQueued(o, t, g, c, v, e)
	for j, i := range idx {
		vers[i], errs[i] = v[j], e[j]
	}
}

// commitQueued queues the commits and waits for them, leading groups as
// its turn comes. checked, if not nil, holds what each one's precheck found.
func (db *DB) commitQueued(opss [][]op, txns []*txnReq, origins []any, checked []prechecked, vers []uint64, errs []error) {
	reqs := make([]*commitReq, len(opss))
	for i := range reqs {
		r := reqPool.Get().(*commitReq)
		r.ops, r.version, r.txn, r.checked, r.origin = opss[i], 0, txns[i], prechecked{}, origins[i]
		if checked != nil {
			r.checked = checked[i]
		}
		reqs[i] = r
	}
	defer func() {
		for _, r := range reqs {
			r.ops, r.txn, r.origin = nil, nil, nil
			reqPool.Put(r)
		}
	}()
	db.cmu.Lock()
	if err := db.writeErr; db.closed || err != nil {
		db.cmu.Unlock()
		if db.closed {
			err = ErrClosed
		}
		for i := range errs {
			errs[i] = err
		}
		return
	}
	db.queue = append(db.queue, reqs...)
	lead := !db.leading
	if !lead {
		db.cmu.Unlock()
		// Our requests sit together in the queue; only the first can be
		// handed the lead, and then the group it takes holds them all.
		if err := <-reqs[0].done; err != errLead {
			errs[0], vers[0] = err, reqs[0].version
			for i := 1; i < len(reqs); i++ {
				errs[i], vers[i] = <-reqs[i].done, reqs[i].version
			}
			return
		}
		db.cmu.Lock()
	}
	db.leading = true
	if db.opts.Sync == SyncAlways {
		// Let writers that are ready to run (those the last group just
		// released) queue first, so that they share this group's fsync:
		// otherwise, with one P, they cannot run until the leader is in
		// fsync, and every group holds one commit. Next to an fsync the
		// yield costs nothing; without one it would slow a lone writer.
		db.cmu.Unlock()
		runtime.Gosched()
		db.cmu.Lock()
	}
	group := db.queue
	db.queue = db.spare[:0]
	db.cmu.Unlock()

	db.runGroup(group)

	db.cmu.Lock()
	clear(group)
	db.spare = group[:0]
	if len(db.queue) > 0 {
		// Hand the lead to the oldest waiter so that no caller waits for
		// more than one group besides its own.
		db.queue[0].done <- errLead
	} else {
		db.leading = false
		db.idle.Broadcast()
	}
	db.cmu.Unlock()
	for i, r := range reqs {
		errs[i], vers[i] = <-r.done, r.version
	}
}

// WriteBatches applies several batches in order, each atomically and on
// its own (a failed Check fails only its batch), sharing one write and,
// under SyncAlways, one fsync: what a server needs to make a pipeline of
// writes cost one group commit. It returns one error per batch.
func (db *DB) WriteBatches(bs []*Batch) []error {
	errs := make([]error, len(bs))
	opss := make([][]op, 0, len(bs))
	idx := make([]int, 0, len(bs))
	total := 0
	for _, b := range bs {
		total += len(b.ops)
	}
	slab := make([]op, 0, total)
	for i, b := range bs {
		b.version = 0
		ops, err := db.batchOps(b, &slab)
		if err == nil {
			err = db.checkOps(ops)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		if len(ops) > 0 {
			opss = append(opss, ops)
			idx = append(idx, i)
		}
	}
	if len(opss) == 0 {
		return errs
	}
	vers := make([]uint64, len(opss))
	cerrs := make([]error, len(opss))
	origins := make([]any, len(opss))
	for j, i := range idx {
		origins[j] = bs[i].origin
	}
	db.commitMany(opss, make([]*txnReq, len(opss)), origins, vers, cerrs, false)
	for j, i := range idx {
		errs[i] = cerrs[j]
		if cerrs[j] == nil {
			bs[i].keepResults(opss[j])
			bs[i].version = vers[j]
		}
	}
	return errs
}

// runGroup evaluates, writes, syncs and applies a group of commits, then
// answers each of them on its done channel.
func (db *DB) runGroup(group []*commitReq) {
	db.cmu.Lock()
	stopped := db.writeErr
	db.cmu.Unlock()
	if stopped != nil {
		for _, r := range group {
			r.done <- stopped
		}
		return
	}
	db.groups.Add(1)
	db.commits.Add(uint64(len(group)))
	nowT := db.opts.Now()
	now := nowT.UnixMilli()
	buf := db.wbuf[:0]
	applies := db.applies[:0]
	// The overlay lets an operation see the changes made before it in the
	// group; a group of blind sets (a bulk load, say) needs none.
	var overlay map[string]int // key -> index in applies of its newest change
	reads, size, nops := groupNeeds(group)
	if reads && (len(group) > 1 || nops > 1) {
		overlay = make(map[string]int, nops) // sized once: no rehash as it fills
	}
	if size > cap(buf) {
		buf = make([]byte, 0, size)
	}
	ver := db.lastVer
	var wranges []histRange

	db.mu.RLock()
	var found keydir.Pos // where the last lookup found its key in the tree
	// inGroup returns key's entry as an earlier change of this group left
	// it (Offset: -1 - its index in applies), if one did.
	inGroup := func(key []byte) (e keydir.Entry, live, changed bool) {
		i, changed := overlay[string(key)] // (a nil overlay has no keys)
		if !changed || applies[i].del {
			return keydir.Entry{}, false, changed
		}
		a := applies[i]
		return keydir.Entry{ValLen: a.valLen, Version: a.version, Expiry: a.expiry, Offset: -1 - int64(i)}, true, true
	}
	lookup := func(key []byte) (keydir.Entry, bool) {
		found = keydir.Pos{}
		if e, live, changed := inGroup(key); changed {
			return e, live
		}
		e, p, ok := db.tree.Find(key)
		if ok && e.Expired(now) {
			return e, false
		}
		found = p
		return e, ok
	}
	// current reads key's value, flags and expiry as the group sees it; a
	// key without a value (or expired) has none of them. It finds the key
	// as Probe does: the record it reads confirms the key, so the key
	// directory's copy of it (a likely cache miss) is not read.
	current := func(key []byte) (val []byte, flags uint32, exp int64, live bool, err error) {
		found = keydir.Pos{}
		e, live, changed := inGroup(key)
		verify := false
		if !changed {
			var p keydir.Pos
			if e, p, live, verify = db.tree.FindProbe(key); live && !e.Expired(now) {
				found = p
			} else {
				live = false
			}
		}
		if !live {
			return nil, 0, 0, false, nil
		}
		val, flags, err = db.valueFor(key, e, verify, applies, buf)
		if verify && errors.Is(err, ErrNotFound) {
			found = keydir.Pos{} // another key's record: key is absent
			return nil, 0, 0, false, nil
		}
		return val, flags, e.Expiry, err == nil, err
	}
	var readErr error
	ends := db.ends[:0] // where each commit's records end in buf
	for ri, r := range group {
		r.err = nil
		if r.txn != nil && outlived(r.txn.deadline, nowT) {
			// The history may no longer hold what its conflict check
			// needs (recordHistory).
			r.err = ErrTransactionTooOld
			continue
		}
		if !db.checksHold(r.ops, r.checked, now, lookup, overlay, applies, wranges) || (r.txn != nil && db.txnConflict(r.txn, r.checked, now, overlay, applies, wranges)) {
			r.err = ErrConflict
			continue
		}
		v := ver + 1
		last := -1
		bufMark, appMark, wrMark := len(buf), len(applies), len(wranges)
		var failed error // an operation that refused (AddInt): the request applies nothing
		put := func(a apply, kind record.Kind, value []byte) {
			last = len(buf)
			a.rel = int64(len(buf))
			buf = record.AppendRecord(buf, kind, false, v, a.expiry, a.flags, a.key, value)
			a.size = int64(len(buf) - last)
			a.version = v
			a.req = uint32(ri)
			applies = append(applies, a)
			if overlay != nil && !a.carrier {
				overlay[string(a.key)] = len(applies) - 1
			}
		}
	ops:
		for i := range r.ops {
			o := &r.ops[i]
			switch o.kind {
			case opAddInt:
				val, flags, exp, live, err := current(o.key)
				if err != nil {
					readErr = err
					break
				}
				var cur int64
				if live {
					var ok bool
					if cur, ok = parseDecimal(val); !ok {
						failed = ErrNotInteger
						break ops
					}
				}
				if (o.delta > 0 && cur > math.MaxInt64-o.delta) || (o.delta < 0 && cur < math.MinInt64-o.delta) {
					failed = ErrOverflow
					break ops
				}
				o.result = cur + o.delta
				db.numBuf = strconv.AppendInt(db.numBuf[:0], o.result, 10)
				put(apply{key: o.key, valLen: uint32(len(db.numBuf)), expiry: exp, flags: flags, pos: found}, record.KindPut, db.numBuf)
			case opSet:
				put(apply{key: o.key, valLen: uint32(len(o.value)), expiry: o.expiry, flags: o.flags}, record.KindPut, o.value)
			case opDelete:
				_, live := lookup(o.key)
				o.found = live
				if live {
					put(apply{key: o.key, del: true}, record.KindDelete, nil)
				} else if _, inTree := db.tree.Get(o.key); inTree {
					applies = append(applies, apply{key: o.key, del: true, rel: -1, req: uint32(ri)})
				}
			case opDeleteRange:
				for _, k := range db.keysInRange(o.key, o.value, overlay, applies) {
					if _, live := lookup(k); live {
						put(apply{key: k, del: true}, record.KindDelete, nil)
					}
				}
			case opExpire:
				e, live := lookup(o.key)
				o.found = live
				if !live {
					break
				}
				if o.expiry != 0 && o.expiry <= now {
					put(apply{key: o.key, del: true}, record.KindDelete, nil)
					break
				}
				val, flags, err := db.valueFor(o.key, e, false, applies, buf)
				if err != nil {
					readErr = err
					break
				}
				put(apply{key: o.key, valLen: e.ValLen, expiry: o.expiry, flags: flags, pos: found}, record.KindPut, val)
			case opAtomic:
				cur, flags, exp, live, err := current(o.key)
				if err != nil {
					readErr = err
					break
				}
				nv, del := applyAtomic(o.atomic, cur, live, o.value, db.opts.MaxValueSize)
				switch {
				case del && live:
					put(apply{key: o.key, del: true}, record.KindDelete, nil)
				case !del && live && bytes.Equal(nv, cur):
					// Unchanged (a max below the value, a compare and
					// clear that did not match): no new version for the
					// key, no watch or invalidation fires.
				case !del:
					put(apply{key: o.key, valLen: uint32(len(nv)), expiry: exp, flags: flags, pos: found}, record.KindPut, nv)
				}
			case opSetVSKey, opSetVSValue:
				k, val := o.key, o.value
				var ok bool
				if o.kind == opSetVSKey {
					k, ok = fillVersionstamp(k, versionstamp(v))
				} else {
					val, ok = fillVersionstamp(val, versionstamp(v))
				}
				if ok {
					put(apply{key: k, valLen: uint32(len(val))}, record.KindPut, val)
				}
			case opWriteConflict:
				wranges = append(wranges, histRange{keyRange{o.key, o.value}, v})
			case opForget:
				if overlay != nil {
					if _, changed := overlay[string(o.key)]; changed {
						break
					}
				}
				if e, ok := db.tree.Get(o.key); ok && e.Version == o.version && e.Expired(now) {
					applies = append(applies, apply{key: o.key, del: true, rel: -1, req: uint32(ri)})
				}
			}
		}
		if failed == nil && last < 0 && (len(wranges) > wrMark || r.txn != nil) {
			// A transaction that changes no key (write conflict ranges
			// alone, a clear of what is absent) still commits at a
			// version of its own (CommittedVersion, Versionstamp), as in
			// FoundationDB: a record must carry it to disk, or the next
			// open would hand it out again.
			put(apply{key: versionCarrier(db.tree, overlay), del: true, carrier: true}, record.KindDelete, nil)
		}
		if failed == nil && len(buf)-bufMark > maxCommitBytes {
			failed = fmt.Errorf("%w: %d bytes of records in one commit, limit %d", ErrBatchTooLarge, len(buf)-bufMark, maxCommitBytes)
		}
		if failed != nil {
			buf = buf[:bufMark]
			wranges = wranges[:wrMark]
			undoOverlay(overlay, applies, appMark)
			clear(applies[appMark:])
			applies = applies[:appMark]
			r.err = failed
			continue
		}
		if last >= 0 {
			record.SetCommit(buf[last:])
			ver = v
			r.version = v
			ends = append(ends, commitEnd{len(buf), v})
		}
	}
	db.mu.RUnlock()

	var err error
	if readErr != nil {
		err = readErr
	} else if len(buf) > 0 {
		err = db.writeGroup(buf, applies, ends)
		switch {
		case err == nil:
			if db.refused.Load() != nil {
				db.refused.Store(nil)
			}
		case errors.Is(err, syscall.ENOSPC) && !errors.Is(err, ErrWritesStopped):
			db.refused.Store(&refusal{err: err, need: int64(len(buf))})
		}
	}
	if err == nil {
		db.lastVer = ver
		db.applyGroup(applies, wranges, ver)
		db.notify(group, applies)
		// Arm the watches of the group's transactions now, before any
		// later commit can change their keys unseen.
		for _, r := range group {
			if r.err == nil && r.txn != nil {
				for _, w := range r.txn.watches {
					db.addWatch(w)
				}
			}
		}
		if serr := db.sealFor(group); serr != nil {
			for _, r := range group {
				if slices.ContainsFunc(r.ops, func(o op) bool { return o.kind == opSeal }) {
					r.err = serr
				}
			}
		}
	} else {
		for _, r := range group {
			r.version = 0
		}
	}
	for i := range applies {
		applies[i] = apply{}
	}
	if cap(buf) <= 4<<20 {
		db.wbuf = buf[:0]
	} else {
		db.wbuf = nil
	}
	db.applies = applies[:0]
	db.ends = ends[:0]
	for _, r := range group {
		if err == nil && r.err != nil {
			r.done <- r.err
		} else {
			r.done <- err
		}
	}
}

// groupNeeds reports whether any operation of a group reads the state that
// earlier ones change, the size of the records of its sets and the number
// of its operations.
func groupNeeds(group []*commitReq) (reads bool, size, nops int) {
	for _, r := range group {
		if r.txn != nil {
			reads = true
		}
		nops += len(r.ops)
		for i := range r.ops {
			switch o := &r.ops[i]; o.kind {
			case opSet:
				size += record.EncodedSize(o.key, o.value)
			case opSetVSKey, opSetVSValue, opWriteConflict, opSeal:
			default:
				reads = true
			}
		}
	}
	return reads, size, nops
}

// undoOverlay points the overlay entries of the keys changed by
// applies[from:] back at their change before from, if any.
func undoOverlay(overlay map[string]int, applies []apply, from int) {
	if overlay == nil {
		return
	}
	undone := map[string]bool{}
	for _, a := range applies[from:] {
		delete(overlay, string(a.key))
		undone[string(a.key)] = true
	}
	for j := from - 1; j >= 0 && len(undone) > 0; j-- {
		if k := string(applies[j].key); undone[k] {
			overlay[k] = j
			delete(undone, k)
		}
	}
}

// parseDecimal parses a base-10 signed 64-bit integer as Redis does: no
// sign but a leading '-', no leading zeros, no spaces.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 || b[0] == '+' || (len(b) > 1 && b[0] == '0') ||
		(len(b) > 2 && b[0] == '-' && b[1] == '0') || (len(b) == 2 && b[0] == '-' && b[1] == '0') {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// checksHold reports whether every opCheck and opCheckRange of a commit
// holds at now; checked is what precheck found of its ranges.
func (db *DB) checksHold(ops []op, checked prechecked, now int64, lookup func([]byte) (keydir.Entry, bool), overlay map[string]int, applies []apply, wranges []histRange) bool {
	for i := range ops {
		if ops[i].kind == opCheckRange {
			r := txnReq{readVersion: ops[i].version, readTime: ops[i].expiry, reads: []keyRange{{ops[i].key, ops[i].value}}}
			if db.txnConflict(&r, checked, now, overlay, applies, wranges) {
				return false
			}
			continue
		}
		if ops[i].kind != opCheck {
			continue
		}
		var cur uint64
		if e, live := lookup(ops[i].key); live {
			cur = e.Version
		}
		if cur != ops[i].version {
			return false
		}
	}
	return true
}

// keysInRange lists the keys in [begin, end) in the tree and in this group's
// earlier changes.
func (db *DB) keysInRange(begin, end []byte, overlay map[string]int, applies []apply) [][]byte {
	var keys [][]byte
	it := db.tree.Iter()
	defer it.Release()
	for ok := it.Seek(begin); ok; ok = it.Next() {
		k := it.Key()
		if end != nil && bytes.Compare(k, end) >= 0 {
			break
		}
		keys = append(keys, k)
	}
	for k, i := range overlay {
		if !applies[i].del && k >= string(begin) && (end == nil || k < string(end)) {
			if _, inTree := db.tree.Get([]byte(k)); !inTree {
				keys = append(keys, []byte(k))
			}
		}
	}
	return keys
}

// valueFor returns the current value and flags of key, from this group's
// buffer if an earlier commit of the group wrote it; verify is readProbed's.
func (db *DB) valueFor(key []byte, e keydir.Entry, verify bool, applies []apply, buf []byte) ([]byte, uint32, error) {
	if e.Offset < 0 {
		a := applies[-1-e.Offset]
		r, err := record.Decode(buf[a.rel:], db.lim)
		if err != nil {
			return nil, 0, err
		}
		return bytes.Clone(r.Value), r.Flags, nil
	}
	return db.readProbed(db.fset, key, e, verify) // the caller holds mu
}

// writeGroup appends a group's records to the active data file (starting a
// new one if needed) and syncs them under SyncAlways. It turns the applies'
// relative offsets into file offsets.
// maxCommitBytes bounds the records of one commit: they go into one data
// file, whose offsets the key directory keeps in 32 bits.
var maxCommitBytes = keydir.MaxOffset - record.FileHeaderSize // a variable for tests

// commitEnd is where a commit's records end in a group's buffer, and its
// version.
type commitEnd struct {
	off int
	ver uint64
}

// writeGroup appends a group's records to the active data file (starting a
// new one if needed) and syncs them under SyncAlways. It turns the applies'
// relative offsets into file offsets. A group too large for one file's
// offsets is split between files at commit boundaries (ends).
//
// An error after some of the records may have reached the file (a failed
// write or fsync, or a failure after an earlier part was written) is a
// *maybeWritten: the commits may be found at the next open.
func (db *DB) writeGroup(buf []byte, applies []apply, ends []commitEnd) (err error) {
	written := false
	defer func() {
		if err != nil && written {
			err = &maybeWritten{err}
		}
	}()
	start, ai, ei := 0, 0, 0
	for start < len(buf) {
		// The longest run of whole commits that fits one file.
		for ends[ei].off <= start {
			ei++
		}
		for ei+1 < len(ends) && ends[ei+1].off-start <= maxCommitBytes {
			ei++
		}
		end := ends[ei].off
		f, err := db.activeFor(int64(end-start), ends[ei].ver)
		if err != nil {
			return err
		}
		base, err := f.Append(buf[start:end])
		if err != nil {
			if start == 0 && errors.Is(err, syscall.ENOSPC) && !errors.Is(err, segment.ErrTruncateFailed) {
				// Nothing was written and nothing acknowledged: refuse this
				// write and take the next one once there is room again.
				return fmt.Errorf("caskade: write %s: %w", f.Path, err)
			}
			written = true // perhaps in part
			return db.stopWrites(fmt.Errorf("write %s: %w", f.Path, err))
		}
		written = true
		if db.opts.Sync == SyncAlways {
			t := time.Now()
			err := f.SyncWith(&db.syncer)
			db.syncTimes.observe(t, err)
			if err != nil {
				return db.stopWrites(fmt.Errorf("sync %s: %w", f.Path, err))
			}
		} else {
			db.dirty.Store(true)
			if db.writeBehind != nil && f.WriteBehindPending() >= db.behindBytes {
				select {
				case db.writeBehind <- struct{}{}:
				default:
				}
			}
		}
		for ; ai < len(applies) && applies[ai].rel < int64(end); ai++ {
			if applies[ai].rel >= 0 {
				applies[ai].rel += base - int64(start)
			}
			applies[ai].fid = f.ID
		}
		start = end
	}
	return nil
}

// activeFor returns the file the next n bytes go to, sealing the active one
// and starting another when it would grow past MaxFileSize.
func (db *DB) activeFor(n int64, lastVer uint64) (*segment.File, error) {
	f := db.active.Load()
	if f != nil && (f.Size() == record.FileHeaderSize || f.Size()+n <= db.opts.MaxFileSize) &&
		f.Size()+n <= keydir.MaxOffset && lastVer-db.activeBase <= keydir.MaxVersionDelta {
		return f, nil
	}

	if f != nil {
		// Seal: make it durable whatever the policy, so that only the newest
		// file can ever have a torn tail.
		if err := f.Seal(); err != nil {
			return nil, db.stopWrites(fmt.Errorf("sync %s: %w", f.Path, err))
		}
		db.queueHint(f)
		// Sealed for good: if starting the next file fails (a full disk),
		// the next write tries again without sealing this one twice.
		db.mu.Lock()
		db.active.Store(nil)
		db.mu.Unlock()
	}
	id, err := db.allocFileID()
	if err != nil {
		return nil, db.stopWrites(err)
	}
	nf, err := segment.Create(db.fs, db.dir, id)
	if err != nil {
		// Give the id back unless merge took the next one meanwhile: under
		// a full disk every group tries again, and burning an id apiece
		// would run out of them (keydir.MaxFileID) within the hour.
		db.nextID.CompareAndSwap(id+1, id)
		return nil, fmt.Errorf("caskade: create data file: %w", err)
	}
	nf.MapFor(db.opts.MaxFileSize)
	if db.opts.Sync == SyncAlways {
		nf.ZeroAhead(db.opts.MaxFileSize)
	} else {
		nf.MapAppends(db.opts.MaxFileSize)
	}
	// Versions of this file's entries are kept relative to its first one.
	db.activeBase = db.lastVer + 1
	db.mu.Lock()
	db.tree.SetFileBase(nf.ID, db.activeBase)
	old := db.fset
	db.fset = old.with(nf.ID, nf)
	old.release()
	nf.Release() // the set holds it now
	db.fstats[nf.ID] = &fileStat{}
	db.active.Store(nf) // under mu, so that merge sees files and active agree
	db.mu.Unlock()
	return nf, nil
}

// maybeWritten is a commit error raised once the commit's records may have
// reached the data file: whether the commit is found at the next open is
// unknown (a transaction's Commit reports ErrCommitUnknownResult). Its
// message is the cause's.
type maybeWritten struct{ err error }

func (e *maybeWritten) Error() string { return e.err.Error() }
func (e *maybeWritten) Unwrap() error { return e.err }

// stopWrites records err as the reason writes stop and returns the error
// callers see.
func (db *DB) stopWrites(err error) error {
	werr := fmt.Errorf("%w: %w", ErrWritesStopped, err)
	db.cmu.Lock()
	if db.writeErr == nil {
		db.writeErr = werr
		db.stopped.Store(&werr)
		db.opts.Logger.Error("caskade: writes stopped", "err", err)
	} else {
		werr = db.writeErr
	}
	db.cmu.Unlock()
	return werr
}

// applyGroup makes a written group visible, and records its history in
// the same instant (a reader that registers sees either both or neither).
func (db *DB) applyGroup(applies []apply, wranges []histRange, ver uint64) {
	db.mu.Lock()
	defer db.mu.Unlock()
	defer db.recordHistory(applies, wranges, ver)
	for i := range applies {
		a := &applies[i]
		if a.rel >= 0 && a.del {
			// The tombstone itself is dead weight until merge drops it.
			db.fstats[a.fid].dead += a.size
			db.fstats[a.fid].tomb += a.size
			db.fstats[a.fid].maxVer = max(db.fstats[a.fid].maxVer, a.version)
		}
		if a.carrier {
			continue // its key is absent: nothing changes
		}
		var old keydir.Entry
		var had bool
		if a.del {
			old, had = db.tree.Delete(a.key)
			if had && old.Expiry != 0 {
				delete(db.expiring, string(a.key))
				if a.rel < 0 {
					a.expiry = old.Expiry // a drop of an expired key, for recordHistory
					db.expiredKeys++
				}
			}
		} else {
			e := keydir.Entry{FileID: a.fid, ValLen: a.valLen, Offset: a.rel, Version: a.version, Expiry: a.expiry}
			if old, had = db.tree.SetAt(a.pos, a.key, e); !had {
				old, had = db.tree.Set(a.key, e)
			}
			st := db.fstats[a.fid]
			st.live += a.size
			st.liveKeys++
			st.maxVer = max(st.maxVer, a.version)
			if a.expiry != 0 {
				db.expiring[string(a.key)] = struct{}{}
			} else if had && old.Expiry != 0 {
				delete(db.expiring, string(a.key))
			}
		}
		if had {
			if st := db.fstats[old.FileID]; st != nil {
				size := record.HeaderSize + int64(len(a.key)) + int64(old.ValLen)
				st.live -= size
				st.dead += size
				st.liveKeys--
			}
		}
	}
	if ver > db.version {
		db.version = ver
	}
	if len(applies) > 0 {
		db.snap = nil // the cached clone is stale; holding it would keep old nodes alive
	}
}

// syncDirty fsyncs the active file if anything was appended since the
// last time; run every SyncInterval under SyncEverySec. It reports false
// once a failed fsync stopped writes.
func (db *DB) syncDirty() bool {
	if !db.dirty.Swap(false) {
		return true
	}
	if f := db.active.Load(); f != nil {
		t := time.Now()
		err := f.Sync()
		db.syncTimes.observe(t, err)
		if err != nil {
			db.stopWrites(fmt.Errorf("background sync %s: %w", f.Path, err))
			return false
		}
	}
	return true
}

// Sync makes every acknowledged write durable now, whatever the policy.
func (db *DB) Sync() error {
	if db.opts.ReadOnly {
		return nil
	}
	db.cmu.Lock()
	err := db.writeErr
	db.cmu.Unlock()
	if err != nil {
		return err
	}
	if f := db.active.Load(); f != nil {
		t := time.Now()
		err := f.Sync()
		db.syncTimes.observe(t, err)
		if err != nil {
			return db.stopWrites(fmt.Errorf("sync %s: %w", f.Path, err))
		}
	}
	return nil
}

// Subscribe registers fn to be told of every key a commit changes (set,
// deleted, expiry changed, or dropped by expiry), after the change is
// visible and before the writer is acknowledged. An expired key is dropped
// by active expiry (Options.ExpiryPeriod) or, while anyone subscribes, soon
// after a read (Get, Lookup, Stat, Has, a Snapshot's, or an iterator or
// range read that skips it) finds it expired,
// as Redis deletes an expired key on access: fn then hears of it from a
// background goroutine, shortly after that read returned. fn runs on the committing
// goroutine, so it must be quick and must not write to the database; the
// key slices are valid only during the call. Servers use it for client-side
// cache invalidation. The returned function unsubscribes.
func (db *DB) Subscribe(fn func(keys [][]byte)) (cancel func()) {
	return db.SubscribeExpiry(func(changed, expired [][]byte) {
		switch {
		case len(expired) == 0:
			fn(changed)
		case len(changed) == 0:
			fn(expired)
		default:
			fn(append(changed[:len(changed):len(changed)], expired...))
		}
	})
}

// SubscribeExpiry is Subscribe for a subscriber that must tell apart the
// keys a commit changed from those it only dropped because they had
// expired (by active expiry, after a read found them expired, or by a
// delete of an expired key): no read could see those any more, so for
// some purposes nothing changed. Redis's WATCH, for one, ignores the
// deletion of a key that was already expired when it was watched.
// Either slice may be empty.
func (db *DB) SubscribeExpiry(fn func(changed, expired [][]byte)) (cancel func()) {
	return db.SubscribeOrigins(func(changed, expired [][]byte, _ []any) { fn(changed, expired) })
}

// SubscribeOrigins is SubscribeExpiry for a subscriber that must know who
// made each change: the writes of several writers can share one call (one
// group commit), in commit order. origins, unless nil, has one entry per
// key of changed followed by one per key of expired: the origin given to
// the Batch or Tx whose commit changed (or deleted) the key
// (Batch.SetOrigin, Tx.SetOrigin), or nil for a commit without one and
// for a key dropped by expiry alone (active or after a read). origins is
// nil when no commit of the call had an origin. Like the keys, it is
// valid only during the call.
func (db *DB) SubscribeOrigins(fn func(changed, expired [][]byte, origins []any)) (cancel func()) {
	db.obsMu.Lock()
	defer db.obsMu.Unlock()
	db.obsSeq++
	id := db.obsSeq
	if db.observers == nil {
		db.observers = map[uint64]func(changed, expired [][]byte, origins []any){}
	}
	db.observers[id] = fn
	db.hasObservers.Store(true)
	return func() {
		db.obsMu.Lock()
		defer db.obsMu.Unlock()
		delete(db.observers, id)
		db.hasObservers.Store(len(db.observers) > 0)
	}
}

// dropsExpired reports whether a is the drop of a key that had expired:
// a deletion that writes no record (opForget, or opDelete of an expired
// key still in the key directory).
func (a *apply) dropsExpired() bool { return a.del && a.rel < 0 }

// versionCarrier returns the key of the tombstone that carries the version
// of a commit that writes no record of its own: the shortest run of zero
// bytes that neither tree nor an earlier change of the group (overlay)
// holds, so the tombstone deletes nothing.
func versionCarrier(tree *keydir.Tree, overlay map[string]int) []byte {
	key := []byte{}
	for {
		_, inTree := tree.Get(key)
		_, inGroup := overlay[string(key)]
		if !inTree && !inGroup {
			return key
		}
		key = append(key, 0)
	}
}

// notify tells the subscribers what the group's applies changed.
func (db *DB) notify(group []*commitReq, applies []apply) {
	if !db.hasObservers.Load() || len(applies) == 0 {
		return
	}
	// keys[:n] changed, keys[n:] only dropped because expired (see
	// SubscribeExpiry), each in commit order; origins[i] made keys[i],
	// if any commit of the group has an origin (SubscribeOrigins).
	keys := make([][]byte, len(applies))
	var origins []any
	for _, r := range group {
		if r.origin != nil {
			origins = make([]any, len(applies))
			break
		}
	}
	n := 0
	for i := range applies {
		if a := &applies[i]; !a.dropsExpired() && !a.carrier {
			keys[n] = a.key
			if origins != nil {
				origins[n] = group[a.req].origin
			}
			n++
		}
	}
	m := n
	for i := range applies {
		if a := &applies[i]; a.dropsExpired() {
			keys[m] = a.key
			if origins != nil {
				origins[m] = group[a.req].origin
			}
			m++
		}
	}
	if m == 0 {
		return // only version carriers
	}
	if origins != nil {
		origins = origins[:m:m]
	}
	db.obsMu.Lock()
	defer db.obsMu.Unlock()
	for _, fn := range db.observers {
		fn(keys[:n:n], keys[n:m], origins)
	}
}

// queueHint hands the sealed file f to the hint worker, or, if its queue
// is full, to hintRetrier.
func (db *DB) queueHint(f *segment.File) {
	select {
	case db.hints <- f.ID:
	default:
		db.hintFailed(f.ID)
		db.opts.Logger.Warn("caskade: hint queue full; writing the hint file later", "file", f.Path)
	}
}

// sealFor handles opSeal requests of a group: it seals the active file, so
// that every file holding committed data is immutable, and hands each
// request a view of exactly that state. The next write starts a new file.
func (db *DB) sealFor(group []*commitReq) error {
	var seals []*op
	later := true
	for _, r := range group {
		for i := range r.ops {
			if r.ops[i].kind == opSeal {
				seals = append(seals, &r.ops[i])
				later = later && r.ops[i].hintLater
			}
		}
	}
	if len(seals) == 0 {
		return nil
	}
	if f := db.active.Load(); f != nil {
		if err := f.Seal(); err != nil {
			return db.stopWrites(fmt.Errorf("sync %s: %w", f.Path, err))
		}
		db.mu.Lock()
		db.active.Store(nil)
		db.mu.Unlock()
		if later {
			// A merge is about to retire the file: writing its hint file
			// here, with every commit waiting, was time lost (seconds for
			// a full file). The hint worker writes it if the merge fails.
			db.queueHint(f)
		} else {
			// The hint is written now rather than queued, so a backup
			// finds it.
			db.writeHint(f.ID)
		}
	}
	for _, o := range seals {
		o.view = db.newView()
	}
	return nil
}
