package client

import (
	"context"
	"sync/atomic"

	"github.com/caskade/caskade/resp"
)

// Request states: a waiting request is completed by the connection's reader
// (done) or given up by its caller (abandoned); whoever loses the race
// leaves the request to the other (see finish and wait).
const (
	stateWaiting int32 = iota
	stateDone
	stateAbandoned
)

// request is one unit sent on a connection: a single command, a pipeline
// or a MULTI/EXEC block. Its bytes are written contiguously and its replies
// read in order. Single-command requests are pooled.
type request struct {
	cmd     []byte
	n       int      // replies expected
	got     int      // replies read
	multi   bool     // cmd is MULTI, n-2 commands, EXEC
	cls     class    // class of a single command, for retries
	res     result   // a single command's result; a block's EXEC-level error
	results []result // a pipeline's results, one per command
	err     error    // the connection failed (*ConnError)
	state   atomic.Int32
	done    chan struct{}
	pooled  bool
	cl      *Client
}

func newRequest() *request {
	return &request{done: make(chan struct{}, 1), n: 1}
}

// reset prepares the request to be sent (again).
func (r *request) reset() {
	r.got = 0
	r.res = result{}
	clear(r.results)
	r.err = nil
	r.state.Store(stateWaiting)
	select {
	case <-r.done:
	default:
	}
}

// finish is called by the reader once all replies were read, or the
// connection failed. It wakes the caller, or recycles the request if the
// caller gave up.
func (r *request) finish() {
	if r.state.CompareAndSwap(stateWaiting, stateDone) {
		r.done <- struct{}{}
		return
	}
	if r.pooled {
		r.cl.putRequest(r)
	}
}

// wait blocks until the request finished or ctx is done. It returns false
// if the caller gave up: the request then belongs to the reader.
func (r *request) wait(ctx context.Context) bool {
	done := ctx.Done()
	if done == nil {
		<-r.done
		return true
	}
	select {
	case <-r.done:
		return true
	case <-done:
		if r.state.CompareAndSwap(stateWaiting, stateAbandoned) {
			return false
		}
		<-r.done
		return true
	}
}

// abandoned reports whether the caller gave up on the request.
func (r *request) abandoned() bool { return r.state.Load() == stateAbandoned }

// readReply reads the next reply of the request.
func (r *request) readReply(rd *resp.Reader) error {
	i := r.got
	r.got++
	if r.abandoned() {
		return rd.SkipValue()
	}
	if !r.multi {
		if r.results == nil {
			return readResult(rd, &r.res)
		}
		return readResult(rd, &r.results[i])
	}
	switch {
	case i == 0: // MULTI
		e, err := readStatus(rd)
		if e != nil && r.res.err == nil {
			r.res.err = e
		}
		return err
	case i < r.n-1: // +QUEUED or a rejected command
		e, err := readStatus(rd)
		if e != nil {
			r.results[i-1].err = e
		}
		return err
	}
	return r.readExec(rd)
}

// readExec reads the reply of EXEC into the block's results.
func (r *request) readExec(rd *resp.Reader) error {
	k, err := rd.PeekKind()
	if err != nil {
		return err
	}
	if k != resp.KindArray {
		var res result
		if err := readResult(rd, &res); err != nil {
			return err
		}
		e := res.err
		if e == nil && res.val.IsNil() {
			e = ErrTxFailed
		}
		if e == nil {
			e = res.val.typeError("array")
		}
		if r.res.err == nil {
			r.res.err = e
		}
		for i := range r.results {
			if r.results[i].err == nil {
				r.results[i].err = e
			}
		}
		return nil
	}
	h, err := rd.ReadHeader()
	if err != nil {
		return err
	}
	if h.Len < 0 && h.Len != resp.StreamedLen {
		r.res.err = ErrTxFailed
		for i := range r.results {
			r.results[i].err = ErrTxFailed
		}
		return nil
	}
	for i := 0; h.Len == resp.StreamedLen || int64(i) < h.Len; i++ {
		if h.Len == resp.StreamedLen {
			k, err := rd.PeekKind()
			if err != nil {
				return err
			}
			if k == resp.KindEnd {
				_, err := rd.ReadHeader()
				return err
			}
		}
		if i >= len(r.results) {
			if err := rd.SkipValue(); err != nil {
				return err
			}
			continue
		}
		if err := readResult(rd, &r.results[i]); err != nil {
			return err
		}
	}
	return nil
}
