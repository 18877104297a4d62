package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/caskade/caskade"
)

// The CSK command family: ordered range reads, FoundationDB key selectors,
// clear-range, atomic operations, key versions and interactive
// serializable transactions (CSK.BEGIN ... CSK.COMMIT) on a connection.
// See doc.go for the commands and their replies.

const (
	errInvertedRange = "ERR inverted range"
	errOrEqual       = "ERR orequal must be 0 or 1"
	// errNegativeLimit is Redis's reply to a negative count where 0 is
	// allowed (ZPOPMIN, LPOP): a negative LIMIT is not "no limit" (the
	// engine refuses it, as FoundationDB does, with range_limits_invalid).
	errNegativeLimit  = "ERR value is out of range, must be positive"
	errTxNested       = "ERR CSK.BEGIN calls can not be nested"
	errTxInMulti      = "ERR CSK.BEGIN inside MULTI is not allowed"
	errMultiInTx      = "ERR MULTI inside CSK.BEGIN is not allowed"
	errTxNotAllowed   = "ERR command not allowed in a caskade transaction"
	errTxPlainSet     = "ERR only plain SET is supported in a caskade transaction"
	errTxNoCommit     = "ERR CSK.COMMIT without CSK.BEGIN"
	errTxNoRollback   = "ERR CSK.ROLLBACK without CSK.BEGIN"
	errTxNoSnapshot   = "ERR CSK.SNAPSHOT without CSK.BEGIN"
	errSnapshotSubcmd = "ERR CSK.SNAPSHOT runs only GET, MGET, EXISTS, CSK.RANGE, CSK.RANGESEL and CSK.GETKEY"
)

func orderedSpecs() []spec {
	return []spec{
		{name: "csk.range", arity: -1, flags: fReadonly | fNoMulti, acl: "keyspace", fn: cmdCskRange},
		{name: "csk.rangesel", arity: -7, flags: fReadonly | fNoMulti, acl: "keyspace", fn: cmdCskRangesel},
		{name: "csk.getkey", arity: 4, flags: fReadonly | fFast | fNoMulti, acl: "keyspace", fn: cmdCskGetkey},
		{name: "csk.clearrange", arity: -1, flags: fWrite | fNoMulti, acl: "keyspace", fn: cmdCskClearrange},
		{name: "csk.atomic", arity: 4, flags: fWrite | fDenyOOM | fFast | fNoMulti, first: 2, last: 2, step: 1, acl: "string", fn: cmdCskAtomic},
		{name: "csk.version", arity: 2, flags: fReadonly | fFast | fNoMulti, first: 1, last: 1, step: 1, acl: "keyspace", fn: cmdCskVersion},
		{name: "csk.begin", arity: 1, flags: cx | fFast | fNoMulti, acl: "transaction", fn: cmdCskBegin},
		{name: "csk.commit", arity: 1, flags: cx | fNoMulti, acl: "transaction", fn: cmdCskCommit},
		{name: "csk.rollback", arity: 1, flags: cx | fFast | fNoMulti, acl: "transaction", fn: cmdCskRollback},
		{name: "csk.snapshot", arity: -2, flags: fReadonly | fNoMulti, acl: "transaction", fn: cmdCskSnapshot},
	}
}

// txState is a connection's open interactive transaction (CSK.BEGIN). It
// is owned by the client goroutine.
type txState struct {
	tx      *caskade.Tx
	snap    bool // the command being run is under CSK.SNAPSHOT
	tooOld  bool // a read failed with ErrTransactionTooOld
	cleared bool // it cleared a range: its commit is not the client's own (origin)
}

// txHandler returns the handler of a command inside a CSK transaction, or
// nil if the command does not run against the transaction.
func txHandler(name string) cmdFunc {
	switch name {
	case "get":
		return txGet
	case "mget":
		return txMget
	case "exists":
		return txExists
	case "set":
		return txSet
	case "mset":
		return txMset
	case "del":
		return txDel
	case "incr":
		return func(c *client, args [][]byte) { c.txIncr(args[1], 1) }
	case "decr":
		return func(c *client, args [][]byte) { c.txIncr(args[1], -1) }
	case "incrby":
		return txIncrby
	case "decrby":
		return txDecrby
	case "csk.range":
		return func(c *client, args [][]byte) { c.cskRange(c.txReader(), args) }
	case "csk.rangesel":
		return func(c *client, args [][]byte) { c.cskRangesel(c.txReader(), args) }
	case "csk.getkey":
		return func(c *client, args [][]byte) { c.cskGetkey(c.txReader(), args) }
	case "csk.clearrange":
		return txClearrange
	case "csk.atomic":
		return txAtomic
	}
	return nil
}

// txAllowed reports whether cmd may run while a CSK transaction is open:
// the commands that run against it, the transaction's own commands, and
// connection housekeeping that touches no data.
func txAllowed(cmd *command) bool {
	switch cmd.name {
	case "csk.begin", "csk.commit", "csk.rollback", "csk.snapshot",
		"ping", "echo", "quit", "reset", "hello", "auth", "time", "command":
		return true
	}
	if strings.HasPrefix(cmd.name, "client|") || strings.HasPrefix(cmd.name, "command|") {
		return true
	}
	return txHandler(cmd.name) != nil
}

// txRefusal is the error for a command refused inside a CSK transaction.
func txRefusal(cmd *command) string {
	if cmd.name == "multi" {
		return errMultiInTx
	}
	return errTxNotAllowed
}

// noMultiRefusal is the error for a no_multi command queued inside MULTI.
func noMultiRefusal(cmd *command) string {
	if cmd.name == "csk.begin" {
		return errTxInMulti
	}
	return "ERR Command not allowed inside a transaction"
}

// execTx runs a command against the open CSK transaction.
func (c *client) execTx(cmd *command, args [][]byte, fn cmdFunc) {
	if c.tx.tooOld {
		c.replyErr(c.s.txErrMsg(caskade.ErrTransactionTooOld))
	} else {
		if c.trk.on && cmd.has(fReadonly) {
			c.s.track.remember(c, cmd, args)
		}
		c.st.begin(c.s.DB, false) // only for its key-encoding arena
		fn(c, args)
		c.st.end()
		if c.trk.on && cmd.has(fReadonly) {
			c.s.track.snapshotRead(c, cmd, args)
		}
	}
	c.trk.afterCommand(cmd, false)
}

// endTx rolls back the open CSK transaction, if any.
func (c *client) endTx() {
	if c.tx != nil {
		c.tx.tx.Rollback()
		c.tx = nil
	}
}

// txErrMsg is the error reply for a failed transaction read or commit:
// the retryable FoundationDB errors get their own codes, so that clients
// can tell them apart and retry.
func (s *Server) txErrMsg(err error) string {
	var e *caskade.Error
	if errors.As(err, &e) {
		switch e.Code {
		case caskade.ErrConflict.Code:
			return fmt.Sprintf("CONFLICT %s (%d)", e.Msg, e.Code)
		case caskade.ErrTransactionTooOld.Code:
			return fmt.Sprintf("TOOOLD %s (%d)", e.Msg, e.Code)
		}
	}
	return s.engineError(err)
}

// replyReadErr replies the error of a failed read. A transaction found
// too old stays so: the engine reads the clock only every so many calls,
// and from the first TOOOLD on every command of the transaction fails
// with it, until CSK.COMMIT (which replies it) or CSK.ROLLBACK.
func (c *client) replyReadErr(err error) {
	if c.tx != nil && errors.Is(err, caskade.ErrTransactionTooOld) {
		c.tx.tooOld = true
	}
	c.replyErr(c.s.txErrMsg(err))
}

// Readers.

// ordReader is what the CSK read commands read from: a database snapshot
// or a transaction (with or without read conflicts). Keys are encoded.
type ordReader interface {
	get(k []byte) ([]byte, error)
	getKey(sel caskade.KeySelector) ([]byte, error)
	// rangeRead reads [begin, end); begin is not nil, a nil end is the
	// end of the key space.
	rangeRead(begin, end []byte, o *caskade.RangeOptions) ([]caskade.KeyValue, error)
}

type snapReader struct{ s *caskade.Snapshot }

func (r snapReader) get(k []byte) ([]byte, error) { return r.s.Get(k) }

func (r snapReader) getKey(sel caskade.KeySelector) ([]byte, error) {
	k, err := r.s.GetKey(sel)
	if err != nil {
		return nil, err
	}
	return pastEnd(k, r.s.Get), nil
}

// pastEnd turns the engine's answer for a selector past the last key back
// into nil, which the CSK commands use. The engine answers with the end of
// the key space ("\xff\xff", or the key after the last key where keys from
// there on exist, as in the last database): a key from "\xff\xff" on that
// has no value. get reads without a read conflict.
func pastEnd(k []byte, get func([]byte) ([]byte, error)) []byte {
	if bytes.Compare(k, []byte{0xff, 0xff}) < 0 {
		return k
	}
	if _, err := get(k); errors.Is(err, caskade.ErrNotFound) {
		return nil
	}
	return k
}

func (r snapReader) rangeRead(begin, end []byte, o *caskade.RangeOptions) ([]caskade.KeyValue, error) {
	return r.s.Range(begin, end, o)
}

// txReader reads in a transaction. Reads go through the transaction's
// snapshot reader (which sees its own writes), and the read conflicts of
// ranges and selectors are added here, limited to the database's span:
// the answers inside a database depend only on its keys, so writes to
// other databases never conflict with them.
type txReader struct {
	tx   *caskade.Tx
	snap bool // CSK.SNAPSHOT: no read conflicts
	sp   dbSpan
}

func (r txReader) get(k []byte) ([]byte, error) {
	if r.snap {
		return r.tx.Snapshot().Get(k)
	}
	return r.tx.Get(k)
}

func (r txReader) getKey(sel caskade.KeySelector) ([]byte, error) {
	k, err := r.tx.Snapshot().GetKey(sel)
	if err != nil {
		return nil, err
	}
	k = pastEnd(k, r.tx.Snapshot().Get)
	if r.snap {
		return k, nil
	}
	// The answer depends on the keys between the selector's key and the
	// answer (to the end of the key space if it is past the last key).
	lo, hi := sel.Key, keyAfter(sel.Key)
	switch {
	case k == nil:
		hi = nil
	case bytes.Compare(k, lo) < 0:
		lo = k
	default:
		hi = keyAfter(k)
	}
	r.conflict(lo, hi)
	return k, nil
}

func (r txReader) rangeRead(begin, end []byte, o *caskade.RangeOptions) ([]caskade.KeyValue, error) {
	if r.snap {
		return r.tx.Snapshot().Range(begin, end, o)
	}
	// The engine adds the read conflict: the range, or up to the last key
	// returned when the limit cut the read short, as FoundationDB does.
	return r.tx.Range(begin, end, o)
}

// conflict adds the read conflict range [lo, hi) (nil hi: the end of the
// key space), limited to the database's span.
func (r txReader) conflict(lo, hi []byte) {
	if bytes.Compare(lo, r.sp.begin) < 0 {
		lo = r.sp.begin
	}
	if r.sp.end != nil && (hi == nil || bytes.Compare(hi, r.sp.end) > 0) {
		hi = r.sp.end
	}
	if hi == nil || bytes.Compare(lo, hi) < 0 {
		r.tx.AddReadConflictRange(lo, hi)
	}
}

// keyAfter returns the smallest key greater than k.
func keyAfter(k []byte) []byte { return append(k[:len(k):len(k)], 0) }

// txReader returns the reader of the open transaction: with read
// conflicts, or without them under CSK.SNAPSHOT.
func (c *client) txReader() ordReader {
	return txReader{tx: c.tx.tx, snap: c.tx.snap, sp: spanOf(c.db)}
}

// snapshotReader returns a reader over a snapshot of the database taken
// for the command.
func (c *client) snapshotReader() ordReader {
	c.st.useSnapshot()
	return snapReader{c.st.snap}
}

// The database's span of the key space.

// dbSpan is the encoded key range [begin, end) of a database; end is nil
// for the last database (the end of the key space).
type dbSpan struct {
	begin, end []byte
}

func spanOf(db int) dbSpan {
	b, e := dbBounds(db)
	if b == nil {
		b = []byte{}
	}
	return dbSpan{b, e}
}

// clamp limits an encoded user key to the span's end: only keys of
// database 0 from 0xff on lie beyond it.
func (s dbSpan) clamp(k []byte) []byte {
	if s.end != nil && bytes.Compare(k, s.end) > 0 {
		return s.end
	}
	return k
}

// bound turns a resolved selector (nil: past the last key) into a range
// bound inside the span.
func (s dbSpan) bound(k []byte) []byte {
	switch {
	case k == nil:
		return s.end
	case bytes.Compare(k, s.begin) < 0:
		return s.begin
	}
	return s.clamp(k)
}

// user returns the user key of an encoded key inside the span.
func (s dbSpan) user(k []byte) []byte { return k[len(s.begin):] }

// Argument parsing.

type rangeArgs struct {
	from, to       []byte
	hasFrom, hasTo bool
	limit          int
	rev, keysOnly  bool
}

// parseRangeArgs parses [FROM begin] [TO end] (if bounds) and [LIMIT n]
// [REV] [KEYSONLY] (if read), replying the error if they are bad.
func (c *client) parseRangeArgs(args [][]byte, bounds, read bool) (rangeArgs, bool) {
	var ra rangeArgs
	for i := 0; i < len(args); i++ {
		a := args[i]
		more := i+1 < len(args)
		switch {
		case bounds && more && eqFold(a, "from"):
			i++
			ra.from, ra.hasFrom = args[i], true
		case bounds && more && eqFold(a, "to"):
			i++
			ra.to, ra.hasTo = args[i], true
		case read && more && eqFold(a, "limit"):
			i++
			n, ok := parseInt(args[i])
			if !ok {
				c.replyErr(errNotInt)
				return ra, false
			}
			if n < 0 {
				c.replyErr(errNegativeLimit)
				return ra, false
			}
			ra.limit = int(min(n, int64(math.MaxInt)))
		case read && eqFold(a, "rev"):
			ra.rev = true
		case read && eqFold(a, "keysonly"):
			ra.keysOnly = true
		default:
			c.replyErr(errSyntax)
			return ra, false
		}
	}
	if ra.hasFrom && ra.hasTo && bytes.Compare(ra.from, ra.to) > 0 {
		c.replyErr(errInvertedRange)
		return ra, false
	}
	return ra, true
}

// bounds returns the encoded range of ra in the client's database.
func (c *client) bounds(sp dbSpan, ra rangeArgs) (begin, end []byte) {
	begin, end = sp.begin, sp.end
	if ra.hasFrom {
		begin = sp.clamp(c.k(ra.from))
	}
	if ra.hasTo {
		end = sp.clamp(c.k(ra.to))
	}
	return begin, end
}

// parseSelector parses key orequal offset into a selector on the encoded
// key space, replying the error if they are bad.
func (c *client) parseSelector(sp dbSpan, args [][]byte) (caskade.KeySelector, bool) {
	var sel caskade.KeySelector
	switch string(args[1]) {
	case "0":
	case "1":
		sel.OrEqual = true
	default:
		c.replyErr(errOrEqual)
		return sel, false
	}
	off, ok := parseInt(args[2])
	if !ok || off < math.MinInt || off > math.MaxInt {
		c.replyErr(errNotInt)
		return sel, false
	}
	sel.Offset = int(off)
	sel.Key = c.k(args[0])
	if sp.end != nil && bytes.Compare(sel.Key, sp.end) >= 0 {
		// A key of database 0 at or after 0xff is after all its keys:
		// the last key before it is the database's last key.
		sel.Key, sel.OrEqual = sp.end, false
	}
	return sel, true
}

// Ordered reads.

func cmdCskRange(c *client, args [][]byte)    { c.cskRange(c.snapshotReader(), args) }
func cmdCskRangesel(c *client, args [][]byte) { c.cskRangesel(c.snapshotReader(), args) }
func cmdCskGetkey(c *client, args [][]byte)   { c.cskGetkey(c.snapshotReader(), args) }

// cskRange is CSK.RANGE [FROM begin] [TO end] [LIMIT n] [REV] [KEYSONLY].
func (c *client) cskRange(r ordReader, args [][]byte) {
	ra, ok := c.parseRangeArgs(args[1:], true, true)
	if !ok {
		return
	}
	sp := spanOf(c.db)
	begin, end := c.bounds(sp, ra)
	c.replyRange(r, sp, begin, end, ra)
}

// cskRangesel is CSK.RANGESEL bkey borequal boffset ekey eorequal eoffset
// [LIMIT n] [REV] [KEYSONLY].
func (c *client) cskRangesel(r ordReader, args [][]byte) {
	sp := spanOf(c.db)
	bsel, ok := c.parseSelector(sp, args[1:4])
	if !ok {
		return
	}
	esel, ok := c.parseSelector(sp, args[4:7])
	if !ok {
		return
	}
	ra, ok := c.parseRangeArgs(args[7:], false, true)
	if !ok {
		return
	}
	b, err := r.getKey(bsel)
	if err != nil {
		c.replyReadErr(err)
		return
	}
	e, err := r.getKey(esel)
	if err != nil {
		c.replyReadErr(err)
		return
	}
	c.replyRange(r, sp, sp.bound(b), sp.bound(e), ra)
}

// replyRange reads the encoded range [begin, end) inside sp and replies
// the flat array of keys and values (or keys only).
func (c *client) replyRange(r ordReader, sp dbSpan, begin, end []byte, ra rangeArgs) {
	if end != nil && bytes.Compare(begin, end) >= 0 {
		c.replyArray(0)
		return
	}
	kvs, err := r.rangeRead(begin, end, &caskade.RangeOptions{Limit: ra.limit, Reverse: ra.rev, KeysOnly: ra.keysOnly})
	if err != nil {
		c.replyReadErr(err)
		return
	}
	if ra.keysOnly {
		c.replyArray(len(kvs))
		for _, kv := range kvs {
			c.replyBulk(sp.user(kv.Key))
		}
		return
	}
	c.replyArray(2 * len(kvs))
	for _, kv := range kvs {
		c.replyBulk(sp.user(kv.Key))
		if kv.Value == nil {
			kv.Value = []byte{}
		}
		c.replyBulk(kv.Value)
	}
}

// cskGetkey is CSK.GETKEY key orequal offset.
func (c *client) cskGetkey(r ordReader, args [][]byte) {
	sp := spanOf(c.db)
	sel, ok := c.parseSelector(sp, args[1:4])
	if !ok {
		return
	}
	k, err := r.getKey(sel)
	if err != nil {
		c.replyReadErr(err)
		return
	}
	// The engine resolves over the whole key space; a result outside the
	// database is where the resolution inside it clamps.
	switch {
	case k == nil || (sp.end != nil && bytes.Compare(k, sp.end) >= 0):
		c.replyNull()
	case bytes.Compare(k, sp.begin) < 0:
		c.replyBulk([]byte{})
	default:
		c.replyBulk(sp.user(k))
	}
}

// Writes.

func cmdCskClearrange(c *client, args [][]byte) {
	ra, ok := c.parseRangeArgs(args[1:], true, false)
	if !ok {
		return
	}
	begin, end := c.bounds(spanOf(c.db), ra)
	if end == nil || bytes.Compare(begin, end) < 0 {
		c.st.delRange(begin, end)
	}
	c.replyOK()
}

func txClearrange(c *client, args [][]byte) {
	ra, ok := c.parseRangeArgs(args[1:], true, false)
	if !ok {
		return
	}
	begin, end := c.bounds(spanOf(c.db), ra)
	if end == nil || bytes.Compare(begin, end) < 0 {
		c.tx.tx.ClearRange(begin, end)
		c.tx.cleared = true
		if c.txRefused() {
			return
		}
	}
	c.replyOK()
}

// atomicOp returns the transaction method of an atomic operation.
func atomicOp(name []byte) func(tx *caskade.Tx, key, param []byte) {
	switch {
	case eqFold(name, "add"):
		return (*caskade.Tx).Add
	case eqFold(name, "and"):
		return (*caskade.Tx).BitAnd
	case eqFold(name, "or"):
		return (*caskade.Tx).BitOr
	case eqFold(name, "xor"):
		return (*caskade.Tx).BitXor
	case eqFold(name, "max"):
		return (*caskade.Tx).Max
	case eqFold(name, "min"):
		return (*caskade.Tx).Min
	case eqFold(name, "bytemax"):
		return (*caskade.Tx).ByteMax
	case eqFold(name, "bytemin"):
		return (*caskade.Tx).ByteMin
	case eqFold(name, "appendiffits"):
		return (*caskade.Tx).AppendIfFits
	case eqFold(name, "compareandclear"):
		return (*caskade.Tx).CompareAndClear
	}
	return nil
}

func (c *client) parseAtomic(args [][]byte) func(tx *caskade.Tx, key, param []byte) {
	op := atomicOp(args[1])
	if op == nil {
		c.replyErr("ERR unknown atomic operation '" + sanitize(cstr(args[1]), 128) + "'")
	}
	return op
}

// cmdCskAtomic is CSK.ATOMIC op key param: a one-operation transaction,
// which never conflicts.
func cmdCskAtomic(c *client, args [][]byte) {
	op := c.parseAtomic(args)
	if op == nil {
		return
	}
	k, param := c.k(args[2]), args[3]
	origin := c.origin()
	err := c.s.DB.Transact(context.Background(), func(tx *caskade.Tx) error {
		tx.SetOrigin(origin)
		op(tx, k, param)
		return nil
	})
	if err != nil {
		c.replyErr(c.s.txErrMsg(err))
		return
	}
	c.replyOK()
}

func txAtomic(c *client, args [][]byte) {
	op := c.parseAtomic(args)
	if op == nil {
		return
	}
	op(c.tx.tx, c.k(args[2]), args[3])
	if c.txRefused() {
		return
	}
	c.replyOK()
}

// cmdCskVersion is CSK.VERSION key: the commit version that last wrote
// the key, 0 if it has no value.
func cmdCskVersion(c *client, args [][]byte) {
	info, err := c.s.DB.Stat(c.k(args[1]))
	switch {
	case errors.Is(err, caskade.ErrNotFound):
		c.replyInt(0)
	case err != nil:
		c.replyDBError(err)
	default:
		c.replyInt(int64(info.Version))
	}
}

// Interactive transactions.

func cmdCskBegin(c *client, args [][]byte) {
	switch {
	case c.tx != nil:
		c.replyErr(errTxNested)
		return
	case c.multi != nil:
		c.replyErr(errTxInMulti)
		return
	}
	tx, err := c.s.DB.Begin()
	if err != nil {
		c.replyDBError(err)
		return
	}
	c.tx = &txState{tx: tx}
	c.replyOK()
}

func cmdCskCommit(c *client, args [][]byte) {
	if c.tx == nil {
		c.replyErr(errTxNoCommit)
		return
	}
	t := c.tx
	c.tx = nil
	defer t.tx.Rollback() // releases the transaction whatever Commit did
	if !t.cleared {
		t.tx.SetOrigin(c.origin())
	}
	if t.tooOld {
		c.replyErr(c.s.txErrMsg(caskade.ErrTransactionTooOld))
		return
	}
	if err := t.tx.Commit(); err != nil {
		c.replyErr(c.s.txErrMsg(err))
		return
	}
	c.replyOK()
}

func cmdCskRollback(c *client, args [][]byte) {
	if c.tx == nil {
		c.replyErr(errTxNoRollback)
		return
	}
	c.endTx()
	c.replyOK()
}

// snapshotReadable reports whether CSK.SNAPSHOT may run a command.
func snapshotReadable(name string) bool {
	switch name {
	case "get", "mget", "exists", "csk.range", "csk.rangesel", "csk.getkey":
		return true
	}
	return false
}

// cmdCskSnapshot is CSK.SNAPSHOT command args...: one read command of
// the open transaction, read without read conflicts.
func cmdCskSnapshot(c *client, args [][]byte) {
	if c.tx == nil {
		c.replyErr(errTxNoSnapshot)
		return
	}
	inner := args[1:]
	cmd, _, lower := c.s.cmds.lookup(inner, c.lower)
	c.lower = lower
	if cmd == nil || !snapshotReadable(cmd.name) {
		c.replyErr(errSnapshotSubcmd)
		return
	}
	if (cmd.arity > 0 && cmd.arity != len(inner)) || len(inner) < -cmd.arity {
		c.replyErr(fmt.Sprintf("ERR wrong number of arguments for '%s' command", cmd.name))
		return
	}
	if c.db == 0 && cmd.firstKey > 0 && c.hasReservedKey(cmd, inner) {
		c.replyErr(errReservedKey)
		return
	}
	if c.tx.tooOld {
		c.replyErr(c.s.txErrMsg(caskade.ErrTransactionTooOld))
		return
	}
	if c.trk.on {
		c.s.track.remember(c, cmd, inner)
	}
	outer := c.cur
	c.cur = cmd
	c.tx.snap = true
	txHandler(cmd.name)(c, inner)
	c.tx.snap = false
	c.cur = outer
	if c.trk.on {
		c.s.track.snapshotRead(c, cmd, inner)
	}
}

// txRefused replies the error a write the engine refused failed the
// transaction with (an oversized key, say), at the command that made it,
// as Redis refuses such a write; the transaction stays failed, so its
// later reads and CSK.COMMIT get the same error.
func (c *client) txRefused() bool {
	if err := c.tx.tx.Err(); err != nil {
		c.replyReadErr(err)
		return true
	}
	return false
}

// txValue reads a key in the transaction, replying the error if the read
// failed (ok false).
func (c *client) txValue(key []byte) (v []byte, found, ok bool) {
	v, err := c.txReader().get(c.k(key))
	switch {
	case errors.Is(err, caskade.ErrNotFound):
		return nil, false, true
	case err != nil:
		c.replyReadErr(err)
		return nil, false, false
	}
	return v, true, true
}

func txGet(c *client, args [][]byte) {
	v, found, ok := c.txValue(args[1])
	switch {
	case !ok:
	case !found:
		c.s.stats.misses.Add(1)
		c.replyNull()
	default:
		c.s.stats.hits.Add(1)
		c.replyBulk(v)
	}
}

func txMget(c *client, args [][]byte) {
	vals := make([][]byte, len(args)-1)
	for i, key := range args[1:] {
		v, found, ok := c.txValue(key)
		if !ok {
			return
		}
		if found && v == nil {
			v = []byte{}
		}
		vals[i] = v
	}
	c.replyArray(len(vals))
	for _, v := range vals {
		if v == nil {
			c.s.stats.misses.Add(1)
			c.replyNull()
		} else {
			c.s.stats.hits.Add(1)
			c.replyBulk(v)
		}
	}
}

func txExists(c *client, args [][]byte) {
	var n int64
	for _, key := range args[1:] {
		_, found, ok := c.txValue(key)
		if !ok {
			return
		}
		if found {
			n++
		}
	}
	c.replyInt(n)
}

func txSet(c *client, args [][]byte) {
	if len(args) != 3 {
		c.replyErr(errTxPlainSet)
		return
	}
	if int64(len(args[2])) > c.maxBulk() {
		c.replyErr(errMaxBulk)
		return
	}
	c.tx.tx.Set(c.k(args[1]), args[2])
	if c.txRefused() {
		return
	}
	c.replyOK()
}

func txMset(c *client, args [][]byte) {
	if len(args)%2 == 0 {
		c.errArity()
		return
	}
	for i := 2; i < len(args); i += 2 {
		if int64(len(args[i])) > c.maxBulk() {
			c.replyErr(errMaxBulk)
			return
		}
	}
	for i := 1; i < len(args); i += 2 {
		c.tx.tx.Set(c.k(args[i]), args[i+1])
		if c.txRefused() {
			return
		}
	}
	c.replyOK()
}

func txDel(c *client, args [][]byte) {
	var n int64
	for _, key := range args[1:] {
		_, found, ok := c.txValue(key)
		if !ok {
			return
		}
		if found {
			c.tx.tx.Clear(c.k(key))
			n++
		}
	}
	c.replyInt(n)
}

func txIncrby(c *client, args [][]byte) {
	if n, ok := c.amount(args[2], false); ok {
		c.txIncr(args[1], n)
	}
}

func txDecrby(c *client, args [][]byte) {
	if n, ok := c.amount(args[2], true); ok {
		c.txIncr(args[1], n)
	}
}

// txIncr is INCR and its variants in a transaction, with Redis's integer
// rules.
func (c *client) txIncr(key []byte, incr int64) {
	cur, found, ok := c.txValue(key)
	if !ok {
		return
	}
	var v int64
	if found {
		if v, ok = string2ll(cur); !ok {
			c.replyErr(errNotInt)
			return
		}
	}
	if v, ok = addInt(v, incr); !ok {
		c.replyErr(errOverflow)
		return
	}
	nv, k := strconv.AppendInt(nil, v, 10), c.k(key)
	switch {
	case !found:
		c.tx.tx.Set(k, nv)
	// INCR keeps the key's TTL (and the memcached flags beside its
	// value), which Set would clear. The transaction read cur (a read
	// conflict: the commit fails if the key changed since), so an atomic
	// byte-max or byte-min with the new number, which keeps both, stores
	// exactly nv.
	case bytes.Compare(nv, cur) > 0:
		c.tx.tx.ByteMax(k, nv)
	case bytes.Compare(nv, cur) < 0:
		c.tx.tx.ByteMin(k, nv)
	default:
		// INCRBY 0 still writes the key, as in Redis (a WATCH of it
		// fails), but an atomic op that leaves a value unchanged writes
		// nothing: empty the value (byte-min with "") and store nv again.
		c.tx.tx.ByteMin(k, nil)
		c.tx.tx.ByteMax(k, nv)
	}
	c.replyInt(v)
}
