package client

import (
	"context"
	"time"

	"github.com/caskade/caskade/resp"
)

// Cmd is a command queued in a Pipe; its result is set by Exec. A Cmd is
// not safe for concurrent use with the Exec that fills it.
type Cmd struct {
	res result
}

// Err returns the command's error: a server *Error, ErrTxFailed, or the
// error that kept the pipeline from running.
func (c *Cmd) Err() error { return c.res.err }

// Value returns the reply and the command's error.
func (c *Cmd) Value() (Value, error) { return c.res.val, c.res.err }

// Bytes returns the reply as bytes, or Nil for a null (a missing key).
func (c *Cmd) Bytes() ([]byte, error) {
	if c.res.err != nil {
		return nil, c.res.err
	}
	return c.res.val.Bytes()
}

// Str returns the reply as a string, or Nil for a null.
func (c *Cmd) Str() (string, error) {
	if c.res.err != nil {
		return "", c.res.err
	}
	return c.res.val.Str()
}

// Int returns the reply as an integer.
func (c *Cmd) Int() (int64, error) {
	if c.res.err != nil {
		return 0, c.res.err
	}
	return c.res.val.Int()
}

// Float returns the reply as a float.
func (c *Cmd) Float() (float64, error) {
	if c.res.err != nil {
		return 0, c.res.err
	}
	return c.res.val.Float()
}

// Bool returns the reply as a boolean (an integer 1, or OK, is true).
func (c *Cmd) Bool() (bool, error) {
	if c.res.err != nil {
		return false, c.res.err
	}
	return c.res.val.Bool()
}

// Array returns the reply's elements.
func (c *Cmd) Array() ([]Value, error) {
	if c.res.err != nil {
		return nil, c.res.err
	}
	return c.res.val.Array()
}

// Pipe queues commands and sends them together with Exec, one write and
// one wait for all replies. A Pipe from TxPipeline (or TxPipelined) wraps
// them in MULTI/EXEC, so they run as one atomic transaction. Queuing methods
// copy their arguments. A Pipe is not safe for concurrent use; after Exec it
// is empty and may be reused.
type Pipe struct {
	c     *Client
	d     *dconn // a dedicated connection (Conn, Tx), or nil for the shared ones
	multi bool
	watch bool // d is a Watch's: never re-dialed, which would drop the WATCH

	buf      []byte
	cmds     []*Cmd
	nonRead  bool // a command is not read-only
	stateful bool
	blocking bool
	err      error // the first argument error
}

// Pipeline returns an empty pipeline over the Client's shared connections.
func (c *Client) Pipeline() *Pipe { return &Pipe{c: c} }

// TxPipeline returns an empty pipeline whose commands Exec wraps in
// MULTI/EXEC.
func (c *Client) TxPipeline() *Pipe { return &Pipe{c: c, multi: true} }

// Pipelined calls fn to queue commands in a pipeline, then runs it (see
// Pipe.Exec). If fn returns an error nothing is sent.
func (c *Client) Pipelined(ctx context.Context, fn func(p *Pipe) error) ([]*Cmd, error) {
	return runPipe(ctx, c.Pipeline(), fn)
}

// TxPipelined is Pipelined with the commands in a MULTI/EXEC transaction.
func (c *Client) TxPipelined(ctx context.Context, fn func(p *Pipe) error) ([]*Cmd, error) {
	return runPipe(ctx, c.TxPipeline(), fn)
}

func runPipe(ctx context.Context, p *Pipe, fn func(p *Pipe) error) ([]*Cmd, error) {
	if err := fn(p); err != nil {
		return nil, err
	}
	return p.Exec(ctx)
}

// Len returns the number of queued commands.
func (p *Pipe) Len() int { return len(p.cmds) }

func (p *Pipe) add(cls class) *Cmd {
	switch cls {
	case classStateful:
		p.stateful = true
	case classBlocking:
		p.blocking = true
	}
	if cls != classRead {
		p.nonRead = true
	}
	cmd := &Cmd{}
	p.cmds = append(p.cmds, cmd)
	return cmd
}

// Do queues a command of any arguments (see Client.Do).
func (p *Pipe) Do(args ...any) *Cmd {
	b, err := appendArgs(p.buf, args)
	if err != nil {
		if p.err == nil {
			p.err = err
		}
		cmd := &Cmd{res: result{err: err}}
		return cmd
	}
	p.buf = b
	return p.add(classify(args))
}

// Get queues GET key.
func (p *Pipe) Get(key string) *Cmd {
	p.buf = resp.AppendCommandString(p.buf, "GET", key)
	return p.add(classRead)
}

// Set queues SET key value with options (see Client.Set; the reply is OK,
// a null, or the old value with a.Get).
func (p *Pipe) Set(key string, value []byte, a SetArgs) *Cmd {
	p.buf = appendSet(p.buf, key, value, a)
	return p.add(classWrite)
}

// Del queues DEL keys.
func (p *Pipe) Del(keys ...string) *Cmd {
	p.buf = resp.AppendArrayHeader(p.buf, 1+len(keys))
	p.buf = resp.AppendBulkString(p.buf, "DEL")
	for _, k := range keys {
		p.buf = resp.AppendBulkString(p.buf, k)
	}
	return p.add(classWrite)
}

// Incr queues INCR key.
func (p *Pipe) Incr(key string) *Cmd {
	p.buf = resp.AppendCommandString(p.buf, "INCR", key)
	return p.add(classWrite)
}

// IncrBy queues INCRBY key n.
func (p *Pipe) IncrBy(key string, n int64) *Cmd {
	p.buf = resp.AppendArrayHeader(p.buf, 3)
	p.buf = resp.AppendBulkString(p.buf, "INCRBY")
	p.buf = resp.AppendBulkString(p.buf, key)
	p.buf = appendIntArg(p.buf, n)
	return p.add(classWrite)
}

// Expire queues PEXPIRE key ttl (at least 1 ms for a positive ttl; zero or
// less deletes the key).
func (p *Pipe) Expire(key string, ttl time.Duration) *Cmd {
	p.buf = resp.AppendArrayHeader(p.buf, 3)
	p.buf = resp.AppendBulkString(p.buf, "PEXPIRE")
	p.buf = resp.AppendBulkString(p.buf, key)
	p.buf = appendIntArg(p.buf, expireMillis(ttl))
	return p.add(classWrite)
}

// Exec sends the queued commands and waits for every reply, then empties
// the Pipe. On a Conn it fails with ErrPendingReplies while commands
// queued by Conn.Append await their replies. Each Cmd gets its result;
// Exec returns the commands and the first error among them (nil if every
// command succeeded; a null reply is not an error here). ctx bounds the whole pipeline; Options.ReadTimeout
// bounds the wait for each reply, so a long pipeline is not cut short for
// being long. For a MULTI/EXEC pipeline whose EXEC returned a null (a
// WATCHed key changed) every Cmd and Exec return ErrTxFailed.
func (p *Pipe) Exec(ctx context.Context) ([]*Cmd, error) {
	cmds, buf, perr := p.cmds, p.buf, p.err
	stateful, blocking, nonRead := p.stateful, p.blocking, p.nonRead
	p.cmds, p.buf, p.err = nil, nil, nil
	p.stateful, p.blocking, p.nonRead = false, false, false
	if len(cmds) == 0 {
		return cmds, perr
	}
	fail := func(err error) ([]*Cmd, error) {
		for _, c := range cmds {
			if c.res.err == nil {
				c.res = result{err: err}
			}
		}
		return cmds, err
	}
	if perr != nil {
		return fail(perr)
	}
	if p.d == nil && stateful {
		return fail(ErrStateful)
	}
	if p.d != nil && (p.d.queued > 0 || p.d.pending > p.d.skip) {
		// Replies owed to Conn.Receive come first on the connection.
		return fail(ErrPendingReplies)
	}
	r := &request{done: make(chan struct{}, 1), n: len(cmds), results: make([]result, len(cmds))}
	r.cmd = buf
	if p.multi {
		r.multi = true
		r.n += 2
		b := make([]byte, 0, len(buf)+32)
		b = resp.AppendCommandString(b, "MULTI")
		b = append(b, buf...)
		r.cmd = resp.AppendCommandString(b, "EXEC")
	}
	if !nonRead {
		r.cls = classRead
	}
	var err error
	switch {
	case p.d != nil:
		if p.watch {
			err = p.d.err
		} else {
			err = p.d.redialIfBroken(ctx)
		}
		if err == nil {
			err = p.d.runRequest(ctx, r, blocking)
		}
		if stateful {
			p.d.dirty = true
		}
	case blocking:
		err = p.c.execDedicated(ctx, r)
	default:
		var abandoned bool
		abandoned, err = p.c.roundTrip(ctx, r)
		if abandoned {
			return fail(err)
		}
	}
	if err != nil {
		return fail(err)
	}
	for i, c := range cmds {
		c.res = r.results[i]
	}
	if r.res.err != nil {
		return cmds, r.res.err
	}
	for _, c := range cmds {
		if c.res.err != nil {
			return cmds, c.res.err
		}
	}
	return cmds, nil
}

// execDedicated runs a request holding a blocking command on a dedicated
// connection.
func (c *Client) execDedicated(ctx context.Context, r *request) error {
	d, err := c.getDconn(ctx)
	if err != nil {
		return err
	}
	defer c.putDconn(d)
	return d.runRequest(ctx, r, true)
}
