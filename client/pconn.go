package client

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade/resp"
)

// pconn is a connection shared by concurrent callers with automatic
// pipelining. Callers append their encoded command to wbuf and their
// request to q under mu (so bytes and requests are in the same order); a
// writer goroutine writes everything queued in one write; a reader
// goroutine reads replies in order and completes the request at the head
// of q. Only the reader completes requests, also when the connection fails,
// so a request is never completed twice and never gets another's reply.
// A pconn never changes connection state: stateful commands are refused by
// the Client before they get here.
type pconn struct {
	cl    *Client
	nc    net.Conn
	rd    *resp.Reader
	alive *aliveChecker // used only while no reader goroutine reads
	addr  string
	rt    time.Duration // read timeout (liveness), 0 for none
	wt    time.Duration // write timeout, 0 for none

	mu      sync.Mutex
	wbuf    []byte // bytes not yet handed to the writer
	spare   []byte // a written buffer, for reuse
	writing bool   // a goroutine (a caller or the writer) is writing
	reading bool   // a goroutine (a caller, or the reader for good) reads replies
	async   bool   // the reader goroutine runs (and reads for good)
	q       ring   // requests awaiting replies, in write order
	unsent  int    // how many requests at q's tail have bytes not yet written
	dead    bool
	deadOp  string
	deadErr error
	armed   bool      // a read deadline is set
	rdl     time.Time // the read deadline, if armed
	wdl     time.Time // the write deadline

	isDead   atomic.Bool
	wake     chan struct{} // hands the writing role to the writer goroutine
	quit     chan struct{} // closed when the connection is closed
	quitOnce sync.Once
}

func newPconn(cl *Client, nc net.Conn, rd *resp.Reader) *pconn {
	p := &pconn{
		cl:    cl,
		nc:    nc,
		rd:    rd,
		alive: newAliveChecker(nc),
		addr:  cl.addr,
		rt:    cl.opt.ReadTimeout,
		wt:    cl.opt.WriteTimeout,
		wbuf:  make([]byte, 0, 4096),
		wake:  make(chan struct{}, 1),
		quit:  make(chan struct{}),
	}
	go p.writeLoop()
	return p
}

// enqueue queues r for writing. It returns false, queuing nothing, if the
// connection is dead. If no write is in progress, the writer goroutine is
// woken to write; but while the connection is used sequentially (no reader
// goroutine yet), the caller writes the queue itself, saving a goroutine
// switch, and hands what queued up meanwhile to the writer goroutine.
// syncRead reports that the caller got the reading role (see syncRead).
func (p *pconn) enqueue(r *request, trySync bool) (ok, syncRead bool) {
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		return false, false
	}
	p.wbuf = append(p.wbuf, r.cmd...)
	p.q.push(r)
	p.unsent++
	if !p.reading {
		p.reading = true
		if trySync && !p.async && p.q.len() == 1 {
			syncRead = true // the caller reads its own reply
		} else {
			p.startReader()
		}
	}
	if p.writing {
		p.mu.Unlock()
		return true, syncRead
	}
	p.writing = true
	if p.async {
		// Concurrent use: the writer goroutine batches what queues up
		// while it writes.
		p.mu.Unlock()
		p.wake <- struct{}{}
		return true, syncRead
	}
	buf, k := p.takeBatch()
	p.mu.Unlock()
	n, err := p.nc.Write(buf)
	p.mu.Lock()
	p.keepSpare(buf)
	if err != nil {
		if n == 0 {
			p.unsent += k // none of those reached the server
		}
		p.mu.Unlock()
		p.kill("write", err)
		return true, syncRead // the reader fails r
	}
	more := len(p.wbuf) > 0
	if !more {
		p.writing = false
	}
	p.mu.Unlock()
	if more {
		p.wake <- struct{}{} // hand the writing over; the buffer holds one token
	}
	return true, syncRead
}

// startReader starts the reader goroutine, which from then on holds the
// reading role for good; p.mu is held.
func (p *pconn) startReader() {
	if !p.async {
		p.async = true
		go p.readLoop()
	}
}

// syncRead reads the replies of r in the caller's goroutine: the
// connection had no reader yet and r was the only request, so the caller
// got the reading role (as rueidis does for sequential use, this saves two
// goroutine switches per call). It is used only for contexts that cannot
// be cancelled (only their deadline, if any, applies). When r is complete,
// the role goes to the reader goroutine if other requests were queued
// meanwhile. Like readLoop, it completes r (also on failure); the caller
// then collects the result with r.wait.
func (p *pconn) syncRead(ctx context.Context, r *request) {
	dl, hasDL := ctx.Deadline()
	if !hasDL && p.rt > 0 {
		dl = time.Now().Add(p.rt)
	}
	p.mu.Lock()
	p.rdl, p.armed = dl, !dl.IsZero()
	p.nc.SetReadDeadline(dl)
	p.mu.Unlock()
	for r.got < r.n {
		k, err := p.rd.PeekKind()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && hasDL && !time.Now().Before(dl) {
				// The caller's deadline passed with no byte of the reply
				// read: give r up and let the reader goroutine read and
				// drop its reply, keeping the connection in step.
				r.state.CompareAndSwap(stateWaiting, stateAbandoned)
				p.mu.Lock()
				if p.q.len() == 0 || p.dead {
					p.mu.Unlock()
					p.fail("read", err)
					return
				}
				p.handOver()
				p.mu.Unlock()
				return
			}
			p.fail("read", err)
			return
		}
		if k == resp.KindPush {
			if err := p.rd.SkipValue(); err != nil {
				p.fail("read", err)
				return
			}
			continue
		}
		if err := r.readReply(p.rd); err != nil {
			p.fail("read", err)
			return
		}
		if !hasDL && r.got < r.n {
			p.mu.Lock()
			p.rearm()
			p.mu.Unlock()
		}
	}
	p.mu.Lock()
	p.q.pop()
	if p.q.len() > 0 {
		p.handOver()
	} else {
		p.reading = false
	}
	p.mu.Unlock()
	r.finish()
}

// handOver gives the reading role to the reader goroutine at the end of
// syncRead; p.mu is held. The requests that queued up meanwhile were sent
// after the read deadline of syncRead was set, and with no deadline set
// for them (the writer arms the read deadline only for the reader
// goroutine): each gets a whole read timeout from now, so at least from
// when it was sent, not what is left of the caller's.
func (p *pconn) handOver() {
	var dl time.Time
	if p.rt > 0 {
		dl = time.Now().Add(p.rt)
	}
	p.rdl, p.armed = dl, !dl.IsZero()
	p.nc.SetReadDeadline(dl)
	p.startReader()
}

// takeBatch takes the queued bytes for writing; p.mu is held and the
// caller has the writing role.
func (p *pconn) takeBatch() (buf []byte, k int) {
	buf = p.wbuf
	p.wbuf = p.spare[:0]
	p.spare = nil
	k = p.unsent
	p.unsent = 0
	p.armDeadlines()
	return buf, k
}

// keepSpare keeps a written buffer for reuse; p.mu is held.
func (p *pconn) keepSpare(buf []byte) {
	if cap(buf) <= 1<<20 && cap(buf) > cap(p.spare) {
		p.spare = buf[:0]
	}
}

// writeLoop takes over the writing role from a caller that found more
// bytes queued after its own write, and writes until the queue is empty.
func (p *pconn) writeLoop() {
	for {
		select {
		case <-p.wake:
		case <-p.quit:
			return
		}
		for {
			p.mu.Lock()
			if p.dead {
				p.mu.Unlock()
				return
			}
			if len(p.wbuf) == 0 {
				p.writing = false
				p.mu.Unlock()
				break
			}
			buf, k := p.takeBatch()
			p.mu.Unlock()
			n, err := p.nc.Write(buf)
			p.mu.Lock()
			p.keepSpare(buf)
			if err != nil && n == 0 {
				p.unsent += k
			}
			p.mu.Unlock()
			if err != nil {
				p.kill("write", err)
				return
			}
		}
	}
}

// armDeadlines sets the write deadline, and the read deadline that bounds
// the wait for the replies of what is about to be written, unless the ones
// set are still at least 7/8 of the timeout away. p.mu is held.
func (p *pconn) armDeadlines() {
	if p.rt <= 0 && p.wt <= 0 {
		return
	}
	now := time.Now()
	if p.rt > 0 && p.async && (!p.armed || p.rdl.Sub(now) < p.rt-p.rt/8) {
		p.rdl = now.Add(p.rt)
		p.armed = true
		p.nc.SetReadDeadline(p.rdl)
	}
	if p.wt > 0 && p.wdl.Sub(now) < p.wt-p.wt/8 {
		p.wdl = now.Add(p.wt)
		p.nc.SetWriteDeadline(p.wdl)
	}
}

// readLoop reads replies and completes requests in order.
func (p *pconn) readLoop() {
	var cur *request
	for {
		k, err := p.rd.PeekKind()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && p.idleTimeout() {
				continue
			}
			p.fail("read", err)
			return
		}
		if k == resp.KindPush {
			// Out-of-band data (RESP3); the shared connections subscribe
			// to nothing, so it is dropped.
			if err := p.rd.SkipValue(); err != nil {
				p.fail("read", err)
				return
			}
			continue
		}
		if cur == nil {
			p.mu.Lock()
			cur = p.q.front()
			p.mu.Unlock()
			if cur == nil {
				p.fail("read", &resp.ProtocolError{Msg: "Protocol error: reply to no command (" + k.String() + ")"})
				return
			}
		}
		if err := cur.readReply(p.rd); err != nil {
			p.fail("read", err)
			return
		}
		if cur.got < cur.n {
			p.mu.Lock()
			p.rearm()
			p.mu.Unlock()
			continue
		}
		done := cur
		p.mu.Lock()
		p.q.pop()
		cur = p.q.front()
		if cur != nil {
			p.rearm()
		}
		p.mu.Unlock()
		done.finish()
	}
}

// rearm gives the next reply, when one is awaited after a reply was read,
// a full read timeout from now (to within an eighth), unless it has
// arrived already: each reply of a pipeline gets the timeout. p.mu is
// held; only the goroutine reading replies calls it.
func (p *pconn) rearm() {
	if p.rt <= 0 || p.rd.Buffered() > 0 {
		return
	}
	if now := time.Now(); p.rdl.Sub(now) < p.rt-p.rt/8 {
		p.rdl = now.Add(p.rt)
		p.armed = true
		p.nc.SetReadDeadline(p.rdl)
	}
}

// idleTimeout handles a read deadline that expired with no byte of a reply
// read: harmless if no written command awaits a reply (the deadline is then
// cleared), a dead server otherwise. It reports whether to keep reading.
func (p *pconn) idleTimeout() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return false
	}
	if p.q.len()-p.unsent == 0 {
		p.armed = false
		p.nc.SetReadDeadline(time.Time{})
		return true
	}
	if now := time.Now(); now.Before(p.rdl) {
		p.nc.SetReadDeadline(p.rdl)
		return true
	}
	return false
}

// kill marks the connection dead and closes it; the reader then fails the
// requests still queued.
func (p *pconn) kill(op string, err error) {
	p.mu.Lock()
	if !p.dead {
		p.dead = true
		p.isDead.Store(true)
		p.deadOp, p.deadErr = op, err
	}
	p.mu.Unlock()
	p.close()
}

func (p *pconn) close() {
	p.quitOnce.Do(func() {
		close(p.quit)
		p.nc.Close()
	})
}

// fail is called by the reader when the connection broke: it completes
// every queued request with a *ConnError saying whether its bytes may have
// reached the server.
func (p *pconn) fail(op string, err error) {
	p.mu.Lock()
	if !p.dead {
		p.dead = true
		p.isDead.Store(true)
		p.deadOp, p.deadErr = op, err
	}
	op, err = p.deadOp, p.deadErr
	reqs := p.q.drain()
	sent := len(reqs) - p.unsent
	p.unsent = 0
	p.wbuf = nil
	p.mu.Unlock()
	p.close()
	for i, r := range reqs {
		r.err = &ConnError{Op: op, Addr: p.addr, MaybeExecuted: i < sent, Err: err}
		r.finish()
	}
}

// ring is a FIFO of requests.
type ring struct {
	buf  []*request
	head int
	n    int
}

func (q *ring) len() int { return q.n }

func (q *ring) push(r *request) {
	if q.n == len(q.buf) {
		nb := make([]*request, max(2*len(q.buf), 64))
		for i := 0; i < q.n; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = r
	q.n++
}

func (q *ring) front() *request {
	if q.n == 0 {
		return nil
	}
	return q.buf[q.head]
}

func (q *ring) pop() {
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.n--
}

// drain removes and returns every request, oldest first.
func (q *ring) drain() []*request {
	out := make([]*request, 0, q.n)
	for q.n > 0 {
		out = append(out, q.front())
		q.pop()
	}
	return out
}

// asyncNow reports whether the reader goroutine runs.
func (p *pconn) asyncNow() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.async
}

// idleAlive checks a connection that has no reader goroutine (so nobody
// notices the server closing it) before a command is written on it, so
// that a connection closed while idle is re-dialed first rather than
// failing the command with an unknown outcome.
func (p *pconn) idleAlive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reading || p.q.len() > 0 {
		return true
	}
	// Under p.mu no reader can start, so nothing else uses the socket.
	return p.rd.Buffered() == 0 && p.alive.check()
}
