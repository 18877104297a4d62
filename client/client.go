package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Client is a connection pool to one server. Commands from concurrent
// callers are pipelined automatically over Options.PoolSize shared
// connections; transactions, Conn and blocking commands use dedicated
// connections. A broken connection is re-dialed before the next command
// that needs it. A Client is safe for concurrent use by any number of
// goroutines; close it with Close.
type Client struct {
	opt         Options
	strictProto bool // Options.Protocol was 3: no fallback to RESP2
	addr        string
	network     string
	address     string

	slots []slot
	rr    atomic.Uint32

	reqPool sync.Pool

	idleMu sync.Mutex
	idle   []*dconn

	noHello atomic.Bool // the server refused HELLO 3: dial with RESP2
	cskTxn  atomic.Bool // CSK.BEGIN worked on this server

	closed    atomic.Bool
	closeCh   chan struct{}
	closeOnce sync.Once
}

// slot holds one shared connection and what is needed to re-dial it.
type slot struct {
	cur      atomic.Pointer[pconn]
	lock     chan struct{} // held while dialing
	attempts atomic.Uint64 // dial attempts made
	fails    int           // consecutive failed dials, under lock
	next     time.Time     // earliest next dial, under lock
	lastErr  error         // error of the last failed dial, under lock
}

// Dial connects to the server at addr: "host:port" for TCP (with TLS if
// opts.TLSConfig is set) or "unix:///path/to/socket". It dials one
// connection at once, so a wrong address or password is reported here; the
// others are dialed when first needed. opts may be nil for defaults; Dial
// copies it.
func Dial(ctx context.Context, addr string, opts *Options) (*Client, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	network, address, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	c := &Client{
		opt:         opts.withDefaults(),
		strictProto: opts != nil && opts.Protocol == 3,
		addr:        addr,
		network:     network,
		address:     address,
		closeCh:     make(chan struct{}),
	}
	c.reqPool.New = func() any {
		r := newRequest()
		r.pooled = true
		r.cl = c
		return r
	}
	c.slots = make([]slot, c.opt.PoolSize)
	for i := range c.slots {
		c.slots[i].lock = make(chan struct{}, 1)
	}
	if _, err := c.redial(ctx, &c.slots[0]); err != nil {
		return nil, err
	}
	return c, nil
}

// Close closes every connection. Calls in flight fail with a *ConnError
// wrapping ErrClosed; later calls return ErrClosed. Conns taken from the
// Client keep working until they are closed.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.closeCh)
		for i := range c.slots {
			if p := c.slots[i].cur.Load(); p != nil {
				p.kill("closed", ErrClosed)
			}
		}
		c.idleMu.Lock()
		idle := c.idle
		c.idle = nil
		c.idleMu.Unlock()
		for _, d := range idle {
			d.nc.Close()
		}
	})
	return nil
}

// Protocol returns the RESP version of the Client's connections: 3, or 2
// if the server refused HELLO 3 or Options.Protocol is 2.
func (c *Client) Protocol() int {
	if c.opt.Protocol == 2 || c.noHello.Load() {
		return 2
	}
	return 3
}

// shared returns a live shared connection, re-dialing its slot if needed.
func (c *Client) shared(ctx context.Context) (*pconn, error) {
	s := &c.slots[0]
	if n := uint32(len(c.slots)); n > 1 {
		s = &c.slots[c.rr.Add(1)%n]
	}
	if p := s.cur.Load(); p != nil && !p.isDead.Load() {
		return p, nil
	}
	return c.redial(ctx, s)
}

// redial dials a new connection for s, with exponential backoff and jitter
// between attempts. Attempts are shared by the callers waiting on the
// slot: a caller gives up after seeing Options.MaxRetries+1 failures.
func (c *Client) redial(ctx context.Context, s *slot) (*pconn, error) {
	start := s.attempts.Load()
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closeCh:
		return nil, ErrClosed
	}
	defer func() { <-s.lock }()
	for {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		if p := s.cur.Load(); p != nil && !p.isDead.Load() {
			return p, nil
		}
		if s.attempts.Load()-start > uint64(c.opt.MaxRetries) {
			return nil, s.lastErr
		}
		if wait := time.Until(s.next); wait > 0 {
			if err := c.sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
		nc, rd, _, err := c.dialHandshake(ctx)
		s.attempts.Add(1)
		if err == nil {
			p := newPconn(c, nc, rd)
			s.fails = 0
			s.cur.Store(p)
			// Checked after the Store: Close sets closed before it kills
			// the slots' connections, so either it finds p or this sees
			// closed. Checked before, a Close in between would miss p,
			// which would then serve calls after Close and never close.
			if c.closed.Load() {
				p.kill("closed", ErrClosed)
				return nil, ErrClosed
			}
			return p, nil
		}
		s.lastErr = err
		s.fails++
		s.next = time.Now().Add(c.backoff(s.fails))
		if isServerError(err) || ctx.Err() != nil {
			return nil, err
		}
	}
}

// backoff returns the wait before dial attempt n+1 after n failures:
// MinRetryBackoff doubling up to MaxRetryBackoff, times a random factor
// in [0.5, 1.5).
func (c *Client) backoff(n int) time.Duration {
	d := c.opt.MinRetryBackoff
	for i := 1; i < n && d < c.opt.MaxRetryBackoff; i++ {
		d *= 2
	}
	d = min(d, c.opt.MaxRetryBackoff)
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}

// sleep waits for d, or until ctx is done or the Client closed.
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closeCh:
		return ErrClosed
	}
}

func (c *Client) getRequest() *request {
	return c.reqPool.Get().(*request)
}

func (c *Client) putRequest(r *request) {
	r.res = result{}
	r.err = nil
	r.results = nil
	if cap(r.cmd) > 64<<10 {
		r.cmd = nil
	}
	c.reqPool.Put(r)
}

type idempotentKey struct{}

// Idempotent returns a context that marks the calls made with it as
// idempotent: a command that may have executed when its connection broke
// is then sent once more on a new connection. Without it only read-only
// commands are re-sent that way; a command that surely never reached the
// server is always re-sent (up to Options.MaxRetries times).
func Idempotent(ctx context.Context) context.Context {
	return context.WithValue(ctx, idempotentKey{}, true)
}

func isIdempotent(ctx context.Context) bool {
	v, _ := ctx.Value(idempotentKey{}).(bool)
	return v
}

// roundTrip sends r on a shared connection and waits for its replies,
// re-sending it when that is safe. If the caller gives up (ctx done) it
// returns abandoned: r then belongs to the connection's reader and must not
// be touched.
func (c *Client) roundTrip(ctx context.Context, r *request) (abandoned bool, err error) {
	retried := 0
	maybeRetried := false
	idleDead := 0
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		p, err := c.shared(ctx)
		if err != nil {
			return false, err
		}
		r.reset()
		// A connection with no reader goroutine yet (fresh, or used only
		// sequentially) notices no close by the server: check it before
		// writing, whatever the context, so that a command is not sent on
		// a connection that died while idle and failed as maybe executed.
		async := p.asyncNow()
		if !async && !p.idleAlive() {
			err := errors.New("connection closed while idle")
			p.kill("read", err)
			// The first is the usual close of an idle connection (a
			// server restart, its idle timeout); more count as retries,
			// so that a server that ends every new connection at once
			// is not re-dialed for ever.
			if idleDead++; idleDead > 1 {
				if retried >= c.opt.MaxRetries {
					return false, &ConnError{Op: "read", Addr: c.addr, Err: err}
				}
				retried++
			}
			continue
		}
		trySync := ctx.Done() == nil && !async
		ok, syncRead := p.enqueue(r, trySync)
		if !ok {
			if retried < c.opt.MaxRetries {
				retried++
				continue
			}
			return false, &ConnError{Op: "write", Addr: c.addr, Err: errors.New("connection broken")}
		}
		if syncRead {
			p.syncRead(ctx, r)
		}
		if !r.wait(ctx) {
			return true, &ConnError{Op: "wait", Addr: c.addr, MaybeExecuted: true, Err: ctx.Err()}
		}
		if r.err == nil {
			return false, nil
		}
		ce, _ := r.err.(*ConnError)
		if ce == nil || c.closed.Load() || retried >= c.opt.MaxRetries {
			return false, r.err
		}
		if ce.MaybeExecuted {
			if maybeRetried || !(r.cls == classRead || isIdempotent(ctx)) {
				return false, r.err
			}
			maybeRetried = true
		}
		retried++
	}
}

// exec runs a single-command request and recycles it.
func (c *Client) exec(ctx context.Context, r *request) (result, error) {
	abandoned, err := c.roundTrip(ctx, r)
	if abandoned {
		return result{}, err
	}
	res := r.res
	c.putRequest(r)
	if err != nil {
		return result{}, err
	}
	return res, res.err
}

// Do sends a command and returns its reply. args are the command name and
// arguments: strings, []byte, integers, floats, bools (sent as 1 or 0),
// encoding.BinaryMarshaler or fmt.Stringer values. A server error reply is
// returned as a *Error; a null reply as a Value whose IsNil is true (not as
// Nil). Commands that change connection state (SELECT, WATCH, MULTI,
// SUBSCRIBE, CSK.BEGIN, ...) fail with ErrStateful: use a Conn. Blocking
// commands (BLPOP, XREAD, WAIT, ...) run on a dedicated connection bounded
// by ctx only. Do does not keep args after it returns.
func (c *Client) Do(ctx context.Context, args ...any) (Value, error) {
	cls := classify(args)
	switch cls {
	case classStateful:
		return Value{}, ErrStateful
	case classBlocking:
		return c.doDedicated(ctx, args)
	}
	r := c.getRequest()
	var err error
	if r.cmd, err = appendArgs(r.cmd[:0], args); err != nil {
		c.putRequest(r)
		return Value{}, err
	}
	r.cls = cls
	res, err := c.exec(ctx, r)
	return res.val, err
}

// doDedicated runs a blocking command on a dedicated connection.
func (c *Client) doDedicated(ctx context.Context, args []any) (Value, error) {
	d, err := c.getDconn(ctx)
	if err != nil {
		return Value{}, err
	}
	defer c.putDconn(d)
	cmd, err := appendArgs(nil, args)
	if err != nil {
		return Value{}, err
	}
	res, err := d.roundTrip(ctx, cmd, true)
	if err != nil {
		return Value{}, err
	}
	return res.val, res.err
}
