package client

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"github.com/caskade/caskade/resp"
)

// dconn is a dedicated connection, used by one goroutine at a time with
// synchronous I/O: Conn, Watch, Transact and blocking commands.
type dconn struct {
	cl      *Client
	nc      net.Conn
	rd      *resp.Reader
	proto   int
	wbuf    []byte
	queued  int   // commands in wbuf
	pending int   // replies owed for written commands
	skip    int   // of those, replies at the front to discard (abandoned calls)
	err     error // the connection broke (*ConnError); it is unusable
	dirty   bool  // connection state was changed: never reuse it

	alive    *aliveChecker // made by checkIdle on first use
	aliveSet bool

	onPush func(Value) // Conn.SetPushHandler; nil drops push data
}

var aLongTimeAgo = time.Unix(1, 0)

func (c *Client) newDconn(ctx context.Context) (*dconn, error) {
	nc, rd, proto, err := c.dialHandshake(ctx)
	if err != nil {
		return nil, err
	}
	return &dconn{cl: c, nc: nc, rd: rd, proto: proto}, nil
}

// getDconn returns an idle dedicated connection that is still open, or
// dials one (with retries and backoff as for the shared ones).
func (c *Client) getDconn(ctx context.Context) (*dconn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	for {
		c.idleMu.Lock()
		n := len(c.idle)
		if n == 0 {
			c.idleMu.Unlock()
			break
		}
		d := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.idleMu.Unlock()
		if d.rd.Buffered() == 0 && connAlive(d.nc) {
			return d, nil
		}
		d.nc.Close()
	}
	var err error
	for attempt := 0; attempt <= c.opt.MaxRetries; attempt++ {
		if attempt > 0 {
			if err := c.sleep(ctx, c.backoff(attempt)); err != nil {
				return nil, err
			}
		}
		var d *dconn
		if d, err = c.newDconn(ctx); err == nil {
			return d, nil
		}
		if isServerError(err) || ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

// putDconn returns d to the idle pool if it is clean, or closes it.
func (c *Client) putDconn(d *dconn) {
	d.onPush = nil
	if d.err != nil || d.dirty || d.pending > 0 || d.queued > 0 || c.closed.Load() {
		d.nc.Close()
		return
	}
	c.idleMu.Lock()
	if len(c.idle) < c.opt.MaxIdleConns && !c.closed.Load() {
		c.idle = append(c.idle, d)
		d = nil
	}
	c.idleMu.Unlock()
	if d != nil {
		d.nc.Close()
	}
}

// broke marks d unusable and closes it.
func (d *dconn) broke(op string, err error, maybe bool) error {
	ce := &ConnError{Op: op, Addr: d.cl.addr, MaybeExecuted: maybe, Err: err}
	if d.err == nil {
		d.err = ce
	}
	d.nc.Close()
	return ce
}

// armRead sets the read deadline for the next reply: ctx's deadline, or
// now+timeout if ctx has none and timeout > 0, or none. It fails if ctx is
// done: checked after the deadline is set, so that a cancellation is
// either seen here or interrupts the read (see interrupt).
func (d *dconn) armRead(ctx context.Context, timeout time.Duration) error {
	dl, ok := ctx.Deadline()
	if !ok && timeout > 0 {
		dl = time.Now().Add(timeout)
	}
	d.nc.SetReadDeadline(dl)
	if err := ctx.Err(); err != nil {
		return &ConnError{Op: "read", Addr: d.cl.addr, MaybeExecuted: true, Err: err}
	}
	return nil
}

// interrupt makes the I/O in progress fail at once when ctx is cancelled.
// The returned function must be called when the I/O is over.
func (d *dconn) interrupt(ctx context.Context) func() {
	if ctx.Done() == nil {
		return func() {}
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		d.nc.SetDeadline(aLongTimeAgo)
		close(fired)
	})
	return func() {
		if !stop() {
			<-fired // let the interruption finish before later deadlines are set
		}
	}
}

// ioError turns an I/O error into the caller's: the context's error if it
// caused the failure.
func ioError(ctx context.Context, err error) error {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded // the deadline set from ctx passed first
	}
	return err
}

// appendCmd queues an encoded command of n replies.
func (d *dconn) appendCmd(cmd []byte, n int) {
	d.wbuf = append(d.wbuf, cmd...)
	d.queued += n
}

// flush writes the queued commands.
func (d *dconn) flush(ctx context.Context) error {
	if d.err != nil {
		return d.err
	}
	if d.queued == 0 {
		return nil
	}
	dl, ok := ctx.Deadline()
	if !ok && d.cl.opt.WriteTimeout > 0 {
		dl = time.Now().Add(d.cl.opt.WriteTimeout)
	}
	d.nc.SetWriteDeadline(dl)
	stop := d.interrupt(ctx)
	if err := ctx.Err(); err != nil {
		// Checked after the deadline was set: a cancellation from now on
		// interrupts the write.
		stop()
		d.queued = 0
		d.wbuf = d.wbuf[:0]
		return &ConnError{Op: "write", Addr: d.cl.addr, Err: err}
	}
	n, err := d.nc.Write(d.wbuf)
	stop()
	if err != nil {
		d.queued = 0
		d.wbuf = d.wbuf[:0]
		return d.broke("write", ioError(ctx, err), n > 0)
	}
	d.pending += d.queued
	d.queued = 0
	if cap(d.wbuf) > 1<<20 {
		d.wbuf = nil
	} else {
		d.wbuf = d.wbuf[:0]
	}
	return nil
}

// next waits for the first byte of the next reply, skipping push data.
// A timeout or cancellation here consumes nothing: the reply is still owed
// and the connection stays usable (owed is then true).
func (d *dconn) next(ctx context.Context) (owed bool, err error) {
	for {
		if d.err != nil {
			return false, d.err
		}
		k, err := d.rd.PeekKind()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return true, &ConnError{Op: "read", Addr: d.cl.addr, MaybeExecuted: true, Err: ioError(ctx, err)}
			}
			return false, d.broke("read", err, true)
		}
		if k != resp.KindPush || d.proto < 3 {
			return false, nil
		}
		if err := d.readPush(); err != nil {
			return false, d.broke("read", err, true)
		}
	}
}

// readPush reads the push message at the front of the stream and hands it
// to onPush, or drops it if there is none.
func (d *dconn) readPush() error {
	if d.onPush == nil {
		return d.rd.SkipValue()
	}
	v, err := d.rd.ReadValue()
	if err != nil {
		return err
	}
	d.onPush(own(v))
	return nil
}

// readTimeout is the per-reply timeout: ReadTimeout, or none for blocking
// commands.
func (d *dconn) readTimeout(blocking bool) time.Duration {
	if blocking {
		return 0
	}
	return d.cl.opt.ReadTimeout
}

// readReplies reads n owed replies, each within the read timeout (so a
// long pipeline's time is spread over its commands), passing each to fill
// (which reads it; nil discards). The first d.skip replies are discarded
// first. If ctx ends or the timeout passes before a reply starts, the
// replies not read stay owed and are discarded by the next call.
func (d *dconn) readReplies(ctx context.Context, n int, timeout time.Duration, fill func(*resp.Reader) error) error {
	return d.readRepliesOwed(ctx, n, timeout, fill, true)
}

// readRepliesOwed is readReplies; skipOwed false leaves unread replies owed
// to the caller (Receive) instead of discarding them later.
func (d *dconn) readRepliesOwed(ctx context.Context, n int, timeout time.Duration, fill func(*resp.Reader) error, skipOwed bool) (err error) {
	stop := d.interrupt(ctx)
	defer stop()
	i := 0
	defer func() {
		if err != nil && d.err != nil {
			// The connection broke: the replies to discard and the rest of
			// this call's will never come. Only replies owed to Receive
			// (for commands of other Appends) stay owed, and each reports
			// the failure; once none is owed, the Conn can be re-dialed.
			d.pending -= d.skip + n - i
			d.skip = 0
		}
	}()
	for d.skip > 0 {
		err := d.armRead(ctx, d.cl.opt.ReadTimeout)
		if err == nil {
			_, err = d.next(ctx)
		}
		if err != nil {
			if d.err == nil && skipOwed {
				// The replies to discard are still owed, and this call's
				// come after them: discard those as well.
				d.skip += n
			}
			return err
		}
		if err := d.rd.SkipValue(); err != nil {
			return d.broke("read", ioError(ctx, err), true)
		}
		d.skip--
		d.pending--
	}
	for ; i < n; i++ {
		err := d.armRead(ctx, timeout)
		owed := true
		if err == nil {
			owed, err = d.next(ctx)
		}
		if err != nil {
			if owed && skipOwed {
				d.skip += n - i
			}
			return err
		}
		if fill == nil {
			err = d.rd.SkipValue()
		} else {
			err = fill(d.rd)
		}
		if err != nil {
			return d.broke("read", ioError(ctx, err), true)
		}
		d.pending--
	}
	return nil
}

// roundTrip sends one command and reads its reply.
func (d *dconn) roundTrip(ctx context.Context, cmd []byte, blocking bool) (result, error) {
	d.appendCmd(cmd, 1)
	if err := d.flush(ctx); err != nil {
		return result{}, err
	}
	var res result
	err := d.readReplies(ctx, 1, d.readTimeout(blocking), func(rd *resp.Reader) error {
		return readResult(rd, &res)
	})
	return res, err
}

// runRequest sends a pipeline or MULTI/EXEC block and reads its replies;
// blocking says it holds a blocking command (no ReadTimeout then).
func (d *dconn) runRequest(ctx context.Context, r *request, blocking bool) error {
	d.appendCmd(r.cmd, r.n)
	if err := d.flush(ctx); err != nil {
		return err
	}
	return d.readReplies(ctx, r.n, d.readTimeout(blocking), r.readReply)
}

// checkIdle marks d broken, as not executed, if the server closed it while
// it owed no reply and carried no state, so that the next command is sent
// on a new connection (redialIfBroken) rather than written into a closed
// one and failed as maybe executed.
func (d *dconn) checkIdle() {
	if d.err != nil || d.dirty || d.pending > 0 || d.rd.Buffered() > 0 {
		return
	}
	if !d.aliveSet {
		d.alive, d.aliveSet = newAliveChecker(d.nc), true
	}
	if !d.alive.check() {
		d.broke("read", errors.New("connection closed while idle"), false)
	}
}

// redialIfBroken replaces a broken connection that carried no state.
func (d *dconn) redialIfBroken(ctx context.Context) error {
	if d.err == nil {
		return nil
	}
	if d.dirty {
		return d.err
	}
	nd, err := d.cl.getDconn(ctx)
	if err != nil {
		return err
	}
	onPush := d.onPush
	*d = *nd
	d.onPush = onPush
	return nil
}
