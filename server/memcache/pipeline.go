package memcache

import (
	"bytes"
	"time"

	"github.com/caskade/caskade"
)

// Limits of one run of deferred sets.
const (
	maxDeferredSets  = 256
	maxDeferredBytes = 1 << 20
)

// pendingSets are plain sets (text set without cas, quiet meta sets in set
// mode without a cas) that a TCP connection received while more commands
// were already buffered behind them. They are committed together, each
// atomically and on its own, as one group commit (caskade.DB.WriteBatches):
// under --sync always, a pipeline of sets costs one fsync instead of one
// each. A run ends before any other command but mn (so the connection
// reads its own writes), whenever replies are flushed, and at
// maxDeferredSets or maxDeferredBytes; each set's reply then goes where
// the set was in the output, before the replies of the commands that
// followed it.
type pendingSets struct {
	batches []*caskade.Batch
	sets    []pendingSet
	n       int
	bytes   int
	scratch []byte
}

// pendingSet is how one deferred set replies, and what its metrics need:
// it is observed when its commit ends, so that its latency includes the
// commit and a failed commit counts as its error.
type pendingSet struct {
	at       int  // position in the output of its reply
	quietOK  bool // no reply when stored (text noreply, meta q)
	quietErr bool // no reply on failure (text noreply)
	cmd      commandID
	start    time.Time
}

// joinsRun reports whether a command line is a set that may join a run
// of deferred sets rather than end it, or mn, which reads nothing and
// whose reply pendingDone keeps after those of the sets before it: a
// pipeline of quiet sets ended by mn, as clients send them, is committed
// with those of the other connections of its turn, not on its own.
func joinsRun(line []byte) bool {
	return bytes.HasPrefix(line, []byte("set ")) || bytes.HasPrefix(line, []byte("ms ")) ||
		bytes.HasPrefix(line, []byte("mn\r\n")) || bytes.HasPrefix(line, []byte("mn\n"))
}

// canDefer reports whether a plain set should join the run: over TCP,
// with a run already going or more input buffered behind it.
func (ss *session) canDefer() bool {
	return ss.flush != nil && (ss.pend.n > 0 || ss.r.buffered() > 0 || ss.onLoop)
}

// deferSet adds the plain set req, of command cmd, to the run.
func (ss *session) deferSet(cmd commandID, req *storeReq, quietOK, quietErr bool) {
	p := &ss.pend
	if p.n == len(p.batches) {
		p.batches = append(p.batches, new(caskade.Batch))
		p.sets = append(p.sets, pendingSet{})
	}
	p.batches[p.n].SetEntry(req.key, req.data, caskade.SetOptions{ExpiresAt: req.exp, Flags: req.flags})
	p.sets[p.n] = pendingSet{at: len(ss.out), quietOK: quietOK, quietErr: quietErr, cmd: cmd, start: ss.now}
	p.n++
	ss.deferred = true
	p.bytes += len(req.key) + len(req.data)
	if p.n >= maxDeferredSets || p.bytes >= maxDeferredBytes {
		ss.commitPending()
	}
}

// commitPending commits the run of deferred sets, if any, and puts their
// replies in place.
func (ss *session) commitPending() {
	p := &ss.pend
	if p.n == 0 {
		return
	}
	var errs []error
	if p.n == 1 {
		errs = []error{ss.s.DB.Write(p.batches[0])}
	} else {
		errs = ss.s.DB.WriteBatches(p.batches[:p.n])
	}
	ss.pendingDone(errs)
}

// pendingDone puts in place the replies of the run of deferred sets,
// committed with errs (one per set), and ends the run.
func (ss *session) pendingDone(errs []error) {
	p := &ss.pend
	// The output after the first set's place (replies of commands that
	// came between the sets) is moved aside and put back around the sets'
	// replies.
	first := p.sets[0].at
	p.scratch = append(p.scratch[:0], ss.out[first:]...)
	ss.out = ss.out[:first]
	prev := first
	start := p.sets[0].start
	end := start.Add(time.Since(start)) // one clock read, not time.Now's two
	ss.ended = end
	for i, err := range errs {
		st := p.sets[i]
		ss.out = append(ss.out, p.scratch[prev-first:st.at-first]...)
		prev = st.at
		ss.s.observe(st.cmd, st.start, end, err != nil)
		if err != nil {
			msg := ss.s.serverError(err) // logs a storage error's cause
			if !st.quietErr {
				ss.out = append(append(ss.out, msg...), "\r\n"...)
			}
			continue
		}
		ss.count.add(statTotalItems, 1)
		if !st.quietOK {
			ss.out = append(ss.out, "STORED\r\n"...)
		}
	}
	ss.out = append(ss.out, p.scratch[prev-first:]...)
	for i := range p.n {
		if p.batches[i].Len() > 1 || p.bytes > maxDeferredBytes/4 {
			p.batches[i] = new(caskade.Batch) // do not keep large buffers
		} else {
			p.batches[i].Reset()
		}
	}
	if cap(p.scratch) > maxRetainedOutput {
		p.scratch = nil
	}
	p.n, p.bytes = 0, 0
}

// turnCommits gathers, for one event loop, the connections served in the
// loop's turn, and commits their runs of deferred sets together at its
// end: one write and, under SyncAlways, one fsync for all, before any
// reply of the turn is written.
type turnCommits struct {
	s       *Server
	conns   []*conn
	batches []*caskade.Batch
}

// add notes that c is served in the turn.
func (t *turnCommits) add(c *conn) {
	if !c.tcQueued {
		c.tcQueued = true
		t.conns = append(t.conns, c)
	}
}

// commit commits the runs of the connections served in the turn with one
// DB.WriteBatches, each set still atomic on its own
// (netloop.Options.TurnDone).
func (t *turnCommits) commit() {
	kept := t.conns[:0]
	for _, c := range t.conns {
		if !c.looped() {
			continue // gone to a goroutine, which commits its own run
		}
		c.tcQueued = false
		if p := &c.sess.pend; p.n > 0 {
			kept = append(kept, c)
			t.batches = append(t.batches, p.batches[:p.n]...)
		}
	}
	if len(t.batches) > 0 {
		errs := t.s.DB.WriteBatches(t.batches)
		at := 0
		for _, c := range kept {
			n := c.sess.pend.n
			c.sess.pendingDone(errs[at : at+n])
			at += n
		}
	}
	clear(t.conns)
	t.conns = t.conns[:0]
	clear(t.batches)
	t.batches = t.batches[:0]
}
