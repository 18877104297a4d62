package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/caskade/caskade/resp"
)

// Txn is an interactive, serializable caskade transaction
// (CSK.BEGIN ... CSK.COMMIT) on a dedicated connection, the remote
// counterpart of caskade.Tx: reads see a snapshot at the transaction's read
// version plus its own writes; writes are buffered by the client and sent
// with the next read or at commit; the commit fails with CONFLICT if
// something the transaction read changed meanwhile. Mutation methods
// (Set, Clear, ClearRange, Atomic) return nothing: an error from one is
// reported by the next read and by the commit, which is then not made.
// Methods do not keep the slices passed to them; slices they return are
// the caller's. A Txn is not safe for concurrent use and must not be used
// after the function given to Transact returns.
type Txn struct {
	c          *Client
	d          *dconn
	ctx        context.Context
	acks       int   // replies owed for BEGIN and buffered writes
	writes     bool  // acks include writes
	werr       error // the first error among those replies
	committing bool
}

// TxnReader reads within a Txn; the one Snapshot returns adds no read
// conflicts (CSK.SNAPSHOT): what it reads may change before the transaction
// commits without failing it. It still sees the transaction's own writes.
type TxnReader struct {
	tx     *Txn
	prefix []byte // nil, or "CSK.SNAPSHOT"
}

var snapshotPrefix = []byte("CSK.SNAPSHOT")

// Transact runs fn in a caskade transaction and commits it, retrying the
// whole of fn on CONFLICT and TOOOLD (whether from the commit or from fn)
// with FoundationDB's backoff: 10 ms doubling to 1 s, each times a random
// factor in [0.5, 1.5), until ctx is done. An error from fn, or a panic,
// rolls the transaction back; a panic is then re-raised. A broken
// connection before the commit was sent also makes it run again (up to
// Options.MaxRetries times); one during the commit is returned as a
// *ConnError with MaybeExecuted set. fn may run several times, so it
// should have no effects beyond the transaction. The shape is that of
// caskade.DB.Transact, so code can move between embedded and remote use.
//
// Transact needs a server with caskade's CSK commands; against another
// server it returns the server's unknown-command error (errors.Is(err,
// ErrUnknownCommand)).
func (c *Client) Transact(ctx context.Context, fn func(tx *Txn) error) error {
	backoff := 10 * time.Millisecond
	connRetries := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, err := c.getDconn(ctx)
		if err != nil {
			return err
		}
		tx := &Txn{c: c, d: d, ctx: ctx}
		err = tx.run(fn)
		c.putDconn(d)
		if err == nil {
			return nil
		}
		var ce *ConnError
		switch {
		case isRetryableTx(err):
			wait := time.Duration(float64(backoff) * (0.5 + rand.Float64()))
			if err := c.sleep(ctx, wait); err != nil {
				return err
			}
			backoff = min(2*backoff, time.Second)
		case errors.As(err, &ce) && !tx.committing && ctx.Err() == nil && connRetries < c.opt.MaxRetries:
			connRetries++
		default:
			return err
		}
	}
}

// run makes one attempt: BEGIN, fn, COMMIT (or ROLLBACK).
func (tx *Txn) run(fn func(tx *Txn) error) (err error) {
	if err := tx.begin(); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			tx.rollback()
			panic(p)
		}
	}()
	if err := fn(tx); err != nil {
		tx.rollback()
		return err
	}
	return tx.commit()
}

func (tx *Txn) begin() error {
	cmd := resp.AppendCommandString(nil, "CSK.BEGIN")
	if tx.c.cskTxn.Load() {
		// Known to work: send it with the first read.
		tx.d.appendCmd(cmd, 1)
		tx.acks = 1
		return nil
	}
	// Not known yet: make sure it works before anything else is sent, so
	// that writes never run outside a transaction.
	res, err := tx.d.roundTrip(tx.ctx, cmd, false)
	if err == nil {
		err = res.err
	}
	if err != nil {
		return err
	}
	tx.c.cskTxn.Store(true)
	return nil
}

// write buffers a mutation.
func (tx *Txn) write(cmd []byte) {
	tx.d.appendCmd(cmd, 1)
	tx.acks++
	tx.writes = true
}

// settle sends what is buffered plus cmd (if not nil), reads the owed
// acknowledgements (recording the first error in werr) and then cmd's
// reply into res. It returns only connection errors.
func (tx *Txn) settle(cmd []byte, res *result) error {
	n := tx.acks
	if cmd != nil {
		tx.d.appendCmd(cmd, 1)
		n++
	}
	// Never re-dial: what was sent (CSK.BEGIN, writes) is lost with the
	// connection, and what follows would run outside a transaction.
	if err := tx.d.flush(tx.ctx); err != nil {
		// Not written (the context ended), the commands are dropped, but
		// the transaction may be open on the server: never reuse.
		tx.d.dirty = true
		return err
	}
	i := 0
	err := tx.d.readReplies(tx.ctx, n, tx.c.opt.ReadTimeout, func(rd *resp.Reader) error {
		defer func() { i++ }()
		if i < tx.acks {
			var ack result
			if err := readResult(rd, &ack); err != nil {
				return err
			}
			if ack.err != nil && tx.werr == nil {
				tx.werr = ack.err
			}
			return nil
		}
		return readResult(rd, res)
	})
	tx.acks = max(tx.acks-i, 0)
	if err != nil {
		tx.d.dirty = true // in a transaction on the server: never reuse
		return err
	}
	tx.writes = false
	return nil
}

// read runs a read command in the transaction.
func (tx *Txn) read(cmd []byte) (Value, error) {
	var res result
	if err := tx.settle(cmd, &res); err != nil {
		return Value{}, err
	}
	if tx.werr != nil {
		return Value{}, tx.werr
	}
	return res.val, res.err
}

func (tx *Txn) commit() error {
	if tx.acks > 0 && tx.writes {
		if err := tx.settle(nil, nil); err != nil {
			return err
		}
	}
	if tx.werr != nil {
		tx.rollback()
		return tx.werr
	}
	tx.committing = true
	v, err := tx.read(resp.AppendCommandString(nil, "CSK.COMMIT"))
	if err != nil {
		return err
	}
	if !v.IsOK() {
		tx.d.dirty = true
		return v.typeError("OK")
	}
	return nil
}

// rollback abandons the transaction; a connection that cannot confirm it
// is not reused.
func (tx *Txn) rollback() {
	if tx.d.err != nil {
		return
	}
	var res result
	if err := tx.settle(resp.AppendCommandString(nil, "CSK.ROLLBACK"), &res); err != nil || res.err != nil {
		tx.d.dirty = true
	}
}

// Snapshot returns a reader whose reads add no read conflicts.
func (tx *Txn) Snapshot() *TxnReader { return &TxnReader{tx: tx, prefix: snapshotPrefix} }

func (tx *Txn) reader() *TxnReader { return &TxnReader{tx: tx} }

// Get returns the value of key as the transaction sees it, or Nil.
func (tx *Txn) Get(key []byte) ([]byte, error) { return tx.reader().Get(key) }

// GetKey resolves a key selector as the transaction sees the database: the
// key, the empty key at the start clamp, or nil past the end.
func (tx *Txn) GetKey(sel KeySelector) ([]byte, error) { return tx.reader().GetKey(sel) }

// GetRange returns the pairs between two key selectors (begin inclusive,
// end exclusive); opts may be nil.
func (tx *Txn) GetRange(begin, end KeySelector, opts *RangeOptions) ([]KeyValue, error) {
	return tx.reader().GetRange(begin, end, opts)
}

// Range returns the pairs with a.From <= key < a.To.
func (tx *Txn) Range(a RangeArgs) ([]KeyValue, error) { return tx.reader().Range(a) }

// Set sets key to value.
func (tx *Txn) Set(key, value []byte) {
	tx.write(resp.AppendCommand(nil, []byte("SET"), key, value))
}

// Clear removes key.
func (tx *Txn) Clear(key []byte) {
	tx.write(resp.AppendCommand(nil, []byte("DEL"), key))
}

// ClearRange removes every key in [begin, end); nil leaves a side open.
func (tx *Txn) ClearRange(begin, end []byte) {
	tx.write(appendClearRange(nil, begin, end))
}

// Atomic applies an atomic operation to key's value at commit.
func (tx *Txn) Atomic(op AtomicOp, key, param []byte) {
	tx.write(appendAtomic(nil, op, key, param))
}

// Do runs any command in the transaction (after the buffered writes) and
// returns its reply.
func (tx *Txn) Do(args ...any) (Value, error) {
	cmd, err := appendArgs(nil, args)
	if err != nil {
		return Value{}, err
	}
	return tx.read(cmd)
}

func (r *TxnReader) cmd(args ...[]byte) []byte {
	if r.prefix != nil {
		args = append([][]byte{r.prefix}, args...)
	}
	return resp.AppendCommand(nil, args...)
}

// Get returns the value of key, or Nil.
func (r *TxnReader) Get(key []byte) ([]byte, error) {
	v, err := r.tx.read(r.cmd([]byte("GET"), key))
	if err != nil {
		return nil, err
	}
	return v.Bytes()
}

// GetKey resolves a key selector: the key, the empty key at the start
// clamp, or nil past the end.
func (r *TxnReader) GetKey(sel KeySelector) ([]byte, error) {
	v, err := r.tx.read(appendGetKey(nil, r.prefix, sel))
	if err != nil {
		return nil, err
	}
	return keyResult(v)
}

// GetRange returns the pairs between two key selectors; opts may be nil.
func (r *TxnReader) GetRange(begin, end KeySelector, opts *RangeOptions) ([]KeyValue, error) {
	var o RangeOptions
	if opts != nil {
		o = *opts
	}
	v, err := r.tx.read(appendRangeSel(nil, r.prefix, begin, end, o))
	if err != nil {
		return nil, err
	}
	return kvResult(v, o.KeysOnly)
}

// Range returns the pairs with a.From <= key < a.To.
func (r *TxnReader) Range(a RangeArgs) ([]KeyValue, error) {
	v, err := r.tx.read(appendRange(nil, r.prefix, a))
	if err != nil {
		return nil, err
	}
	return kvResult(v, a.KeysOnly)
}
