package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/caskade/caskade/resp"
)

// Tx is the dedicated connection of a Watch call: reads made with it see
// the current data, and TxPipelined runs the writes in MULTI/EXEC, which
// fails with ErrTxFailed if a watched key changed since WATCH. A Tx is not
// safe for concurrent use and must not be used after fn returns.
type Tx struct {
	d     *dconn
	c     *Client
	execd bool // EXEC or DISCARD ended the WATCH
	multi bool // Do opened MULTI, not yet ended by EXEC or DISCARD
	sent  bool // an EXEC (or a pipeline, which may hold one) may have been written
}

// mayHaveSent reports whether a command that failed with err may have
// been written.
func mayHaveSent(err error) bool {
	var ce *ConnError
	return !errors.As(err, &ce) || ce.MaybeExecuted
}

// Do sends a command on the transaction's connection.
func (tx *Tx) Do(ctx context.Context, args ...any) (Value, error) {
	cmd, err := appendArgs(nil, args)
	if err != nil {
		return Value{}, err
	}
	var buf [16]byte
	name := string(lowerName(buf[:], argName(args[0])))
	switch name {
	case "exec", "discard", "unwatch", "multi", "watch":
	default:
		if classify(args) == classStateful {
			tx.d.dirty = true
		}
	}
	broken := tx.d.err != nil // then nothing is written
	res, err := tx.d.roundTrip(ctx, cmd, classify(args) == classBlocking)
	if name == "exec" && !broken && mayHaveSent(err) {
		tx.sent = true
	}
	if err != nil {
		return Value{}, err
	}
	switch name {
	case "multi":
		if res.err == nil {
			tx.multi = true
		}
	case "exec", "discard":
		// Inside MULTI they end it and the WATCH, whatever their reply;
		// outside they fail and change nothing.
		if tx.multi {
			tx.multi, tx.execd = false, true
		}
	case "unwatch":
		if !tx.multi { // inside MULTI it is only queued
			tx.execd = true
		}
	}
	return res.val, res.err
}

// Get returns the value of key, or Nil.
func (tx *Tx) Get(ctx context.Context, key string) ([]byte, error) {
	res, err := tx.d.roundTrip(ctx, resp.AppendCommandString(nil, "GET", key), false)
	if err == nil {
		err = res.err
	}
	if err != nil {
		return nil, err
	}
	return res.val.Bytes()
}

// Watch adds keys to the watched keys.
func (tx *Tx) Watch(ctx context.Context, keys ...string) error {
	b := resp.AppendArrayHeader(nil, 1+len(keys))
	b = resp.AppendBulkString(b, "WATCH")
	for _, k := range keys {
		b = resp.AppendBulkString(b, k)
	}
	res, err := tx.d.roundTrip(ctx, b, false)
	if err == nil {
		err = res.err
	}
	return err
}

// Pipelined runs commands in a pipeline on the transaction's connection,
// without MULTI/EXEC.
func (tx *Tx) Pipelined(ctx context.Context, fn func(p *Pipe) error) ([]*Cmd, error) {
	p := &Pipe{c: tx.c, d: tx.d, watch: true}
	if err := fn(p); err != nil {
		return nil, err
	}
	unsent := p.Len() == 0 || p.err != nil || tx.d.err != nil
	cmds, err := p.Exec(ctx)
	if !unsent && mayHaveSent(err) {
		tx.sent = true
	}
	return cmds, err
}

// TxPipelined runs the commands queued by fn in MULTI/EXEC. It returns
// ErrTxFailed if a watched key changed (nothing was applied), which makes
// Watch run its function again.
func (tx *Tx) TxPipelined(ctx context.Context, fn func(p *Pipe) error) ([]*Cmd, error) {
	p := &Pipe{c: tx.c, d: tx.d, multi: true, watch: true}
	if err := fn(p); err != nil {
		return nil, err
	}
	// EXEC ends the WATCH if it may have been written; if not (no
	// command, a bad argument, a broken connection, the context ended
	// first), the WATCH is still on and Watch must end it.
	unsent := p.Len() == 0 || p.err != nil || tx.d.err != nil
	cmds, err := p.Exec(ctx)
	if !unsent && mayHaveSent(err) {
		tx.execd, tx.sent = true, true
	}
	return cmds, err
}

// Watch runs fn with a dedicated connection on which keys are WATCHed, as
// go-redis's Watch: fn reads with the Tx and writes with tx.TxPipelined.
// When EXEC reports that a watched key changed (ErrTxFailed), Watch runs
// fn again, up to Options.WatchRetries times in all, with a growing random
// backoff between attempts; then it returns ErrTxFailed. It also runs fn
// again when the connection broke before EXEC was sent (a *ConnError from
// a command before it, even one that may have executed). Other errors from
// fn are returned as they are. fn may run several times, so it should have
// no effects beyond the transaction.
func (c *Client) Watch(ctx context.Context, fn func(tx *Tx) error, keys ...string) error {
	connRetries := 0
	for attempt := 1; ; attempt++ {
		d, err := c.getDconn(ctx)
		if err != nil {
			return err
		}
		sent, err := c.watchOnce(ctx, d, fn, keys)
		c.putDconn(d)
		if err == nil {
			return nil
		}
		var ce *ConnError
		switch {
		case errors.Is(err, ErrTxFailed) && attempt < c.opt.WatchRetries:
			if err := c.sleep(ctx, watchBackoff(attempt)); err != nil {
				return err
			}
		case errors.As(err, &ce) && (!ce.MaybeExecuted || !sent) && ctx.Err() == nil && connRetries < c.opt.MaxRetries:
			connRetries++
		default:
			return err
		}
	}
}

// watchBackoff is a random wait below 1 ms doubling per attempt, capped at
// 100 ms ("full jitter", which spreads contending clients best).
func watchBackoff(attempt int) time.Duration {
	d := time.Millisecond << min(attempt-1, 7)
	d = min(d, 100*time.Millisecond)
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// watchOnce runs fn once; sent reports whether an EXEC may have been
// written.
func (c *Client) watchOnce(ctx context.Context, d *dconn, fn func(tx *Tx) error, keys []string) (sent bool, err error) {
	tx := &Tx{d: d, c: c}
	if len(keys) > 0 {
		if err := tx.Watch(ctx, keys...); err != nil {
			return false, err
		}
	}
	defer func() {
		if p := recover(); p != nil {
			d.dirty = true // still watching: never reuse
			panic(p)
		}
		if (!tx.execd || tx.multi) && d.err == nil {
			// End the WATCH, and a MULTI that fn opened with Do and left
			// open: inside it UNWATCH would only be queued, and the
			// connection would go back to the pool in MULTI.
			end := "UNWATCH"
			if tx.multi {
				end = "DISCARD"
			}
			res, uerr := d.roundTrip(ctx, resp.AppendCommandString(nil, end), false)
			if uerr != nil || res.err != nil {
				d.dirty = true
			}
		}
	}()
	err = fn(tx)
	return tx.sent, err
}
