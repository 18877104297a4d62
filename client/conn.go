package client

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/caskade/caskade/resp"
)

// Conn is a dedicated connection taken from a Client, for commands that
// change connection state (SELECT, WATCH/MULTI/EXEC, CSK.BEGIN, ...) and
// for the low-level pipelining API: Append queues commands, Flush writes
// them, Receive reads the replies in order, as hiredis offers.
//
// RESP3 push data, such as the invalidations of CLIENT TRACKING, reaches
// a Conn between replies: SetPushHandler receives what arrives while the
// Conn reads replies, and ReceivePush waits for it while none is owed;
// without a handler it is dropped. Under RESP2 there is no push data (a
// subscribed RESP2 connection's messages would be taken for replies:
// use go-redis or rueidis for pub/sub over RESP2).
//
// If the connection breaks, a Conn that never changed connection state is
// re-dialed before its next command; one that did reports the failure
// from then on (the state is lost), and should be closed. A Conn is not
// safe for concurrent use. Close it to return it to the Client.
type Conn struct {
	c      *Client
	d      *dconn
	closed bool
}

// Conn returns a dedicated connection: an idle one of the Client's, or a
// new one.
func (c *Client) Conn(ctx context.Context) (*Conn, error) {
	d, err := c.getDconn(ctx)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, d: d}, nil
}

func (cn *Conn) ready(ctx context.Context) error {
	if cn.closed {
		return ErrClosed
	}
	if cn.d.pending == 0 && cn.d.queued == 0 {
		cn.d.checkIdle()
		return cn.d.redialIfBroken(ctx)
	}
	return cn.d.err
}

// Do sends a command and returns its reply, as Client.Do does, except that
// every command is allowed. It fails with ErrPendingReplies while commands
// queued by Append await their replies. If ctx ends before the reply
// arrives, the reply is read and dropped by the next call.
func (cn *Conn) Do(ctx context.Context, args ...any) (Value, error) {
	if err := cn.ready(ctx); err != nil {
		return Value{}, err
	}
	if cn.d.queued > 0 || cn.d.pending > cn.d.skip {
		return Value{}, ErrPendingReplies
	}
	cmd, err := appendArgs(nil, args)
	if err != nil {
		return Value{}, err
	}
	cls := classify(args)
	if cls == classStateful {
		cn.d.dirty = true
	}
	res, err := cn.d.roundTrip(ctx, cmd, cls == classBlocking)
	if err != nil {
		return Value{}, err
	}
	return res.val, res.err
}

// Append encodes a command into the Conn's write buffer without sending
// it. It does not keep args.
func (cn *Conn) Append(args ...any) error {
	if cn.closed {
		return ErrClosed
	}
	if cn.d.err != nil && (cn.d.dirty || cn.d.pending > 0 || cn.d.queued > 0) {
		return cn.d.err
	}
	b, err := appendArgs(cn.d.wbuf, args)
	if err != nil {
		return err
	}
	cn.d.wbuf = b
	cn.d.queued++
	if classify(args) == classStateful {
		cn.d.dirty = true
	}
	return nil
}

// Flush writes the commands queued by Append. If ctx is done before
// anything was written, they stay queued.
func (cn *Conn) Flush(ctx context.Context) error {
	if cn.closed {
		return ErrClosed
	}
	cn.d.checkIdle()
	if cn.d.err != nil && cn.d.pending == 0 && !cn.d.dirty {
		// Broken with nothing owed: re-dial and write the queue there.
		wbuf, queued := cn.d.wbuf, cn.d.queued
		if err := cn.d.redialIfBroken(ctx); err != nil {
			return err
		}
		cn.d.wbuf, cn.d.queued = wbuf, queued
	}
	wbuf, queued := cn.d.wbuf, cn.d.queued
	err := cn.d.flush(ctx)
	if err != nil && cn.d.err == nil {
		// The context ended before the write: nothing was sent.
		cn.d.wbuf, cn.d.queued = wbuf, queued
	}
	return err
}

// Receive returns the next reply to a command sent with Append, flushing
// queued commands first. A server error reply is returned as a *Error.
// RESP3 push data read on the way goes to the push handler
// (SetPushHandler), or is dropped. It returns ErrNoReply when
// no reply is owed.
//
// A failure is a *ConnError, of one of two kinds, told apart by
// errors.Is(err, ErrReplyOwed). If ctx ended, or ReadTimeout passed,
// before any of the reply was read, the connection is intact and the reply
// stays owed (and queued commands stay queued if they were not written):
// the next Receive returns it (ErrReplyOwed). Otherwise the connection
// broke: this reply is lost, and so is every reply still owed, each of
// which the next Receives report with the same failure until ErrNoReply;
// after that the Conn re-dials if it changed no connection state.
func (cn *Conn) Receive(ctx context.Context) (Value, error) {
	if cn.closed {
		return Value{}, ErrClosed
	}
	var err error
	if cn.d.queued > 0 {
		err = cn.Flush(ctx)
	}
	d := cn.d
	if err == nil && d.pending-d.skip == 0 {
		return Value{}, ErrNoReply
	}
	var res result
	if err == nil {
		err = d.readRepliesOwed(ctx, 1, d.cl.opt.ReadTimeout, func(rd *resp.Reader) error {
			return readResult(rd, &res)
		}, false)
	}
	if err != nil {
		return Value{}, cn.receiveError(err)
	}
	return res.val, res.err
}

// SetPushHandler makes fn receive the RESP3 push messages (for example
// ["invalidate", [keys...]] of CLIENT TRACKING) that the Conn reads while
// it waits for replies (in Do, Receive, a pipeline), in the order they
// arrive, on the goroutine of that call, before it returns. fn must not
// use the Conn. What ReceivePush returns does not go to fn. nil, the
// default, drops push data. The handler is the Conn's: it is forgotten
// when the Conn is closed.
func (cn *Conn) SetPushHandler(fn func(Value)) { cn.d.onPush = fn }

// ReceivePush waits for the next push message and returns it, for a Conn
// that owes no reply: a tracking connection between commands, which would
// otherwise see invalidations only with its next reply. It waits without
// ReadTimeout, until ctx ends; then it returns the context's error and the
// connection stays usable. It returns ErrPendingReplies while commands
// await their replies (their push data goes to the handler), ErrNoPush on
// a RESP2 connection, and a *ConnError if the connection broke or the
// server sent something other than push data.
func (cn *Conn) ReceivePush(ctx context.Context) (Value, error) {
	if cn.closed {
		return Value{}, ErrClosed
	}
	d := cn.d
	if d.skip > 0 {
		// Replies of abandoned calls come first: discard them.
		if err := d.readReplies(ctx, 0, d.cl.opt.ReadTimeout, nil); err != nil {
			return Value{}, err
		}
	}
	switch {
	case d.err != nil:
		return Value{}, d.err
	case d.queued > 0 || d.pending > 0:
		return Value{}, ErrPendingReplies
	case d.proto < 3:
		return Value{}, ErrNoPush
	}
	stop := d.interrupt(ctx)
	defer stop()
	if err := d.armRead(ctx, 0); err != nil {
		return Value{}, ctx.Err()
	}
	k, err := d.rd.PeekKind()
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return Value{}, ioError(ctx, err) // nothing read: still usable
		}
		return Value{}, d.broke("read", err, false)
	}
	if k != resp.KindPush {
		return Value{}, d.broke("read", fmt.Errorf("client: a reply (%v) when none was owed", k), false)
	}
	v, err := d.rd.ReadValue()
	if err != nil {
		return Value{}, d.broke("read", ioError(ctx, err), false)
	}
	return own(v), nil
}

// receiveError is the error of a failed Receive: a *ConnError with Owed
// set if the reply it waited for will still come, as nothing of it was
// read: the connection is intact, or it broke with nothing owed and the
// commands queued stay queued, to be written on a new connection (the
// re-dial failed).
func (cn *Conn) receiveError(err error) error {
	d := cn.d
	if errors.Is(err, ErrClosed) || !(d.err == nil || !d.dirty && d.pending == 0 && d.queued > 0) {
		return err
	}
	var owed ConnError
	if ce := (*ConnError)(nil); errors.As(err, &ce) {
		owed = *ce
	} else {
		owed = ConnError{Op: "dial", Addr: cn.c.addr, Err: err} // from the re-dial
	}
	owed.Owed = true
	return &owed
}

// Pipeline returns an empty pipeline on this connection.
func (cn *Conn) Pipeline() *Pipe { return &Pipe{c: cn.c, d: cn.d} }

// TxPipeline returns an empty MULTI/EXEC pipeline on this connection.
func (cn *Conn) TxPipeline() *Pipe { return &Pipe{c: cn.c, d: cn.d, multi: true} }

// Pipelined queues commands with fn and runs them on this connection.
func (cn *Conn) Pipelined(ctx context.Context, fn func(p *Pipe) error) ([]*Cmd, error) {
	if err := cn.ready(ctx); err != nil {
		return nil, err
	}
	return runPipe(ctx, cn.Pipeline(), fn)
}

// TxPipelined queues commands with fn and runs them in MULTI/EXEC on this
// connection (after a WATCH sent with Do, for example).
func (cn *Conn) TxPipelined(ctx context.Context, fn func(p *Pipe) error) ([]*Cmd, error) {
	if err := cn.ready(ctx); err != nil {
		return nil, err
	}
	return runPipe(ctx, cn.TxPipeline(), fn)
}

// Close returns the connection to the Client for reuse if it is in its
// initial state with nothing owed, and closes it otherwise. Later calls
// return ErrClosed.
func (cn *Conn) Close() error {
	if cn.closed {
		return ErrClosed
	}
	cn.closed = true
	cn.c.putDconn(cn.d)
	return nil
}
