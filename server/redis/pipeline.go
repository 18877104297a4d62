package redis

import (
	"slices"
	"time"

	"github.com/caskade/caskade"
)

// Deferred commits of pipelined writes that read nothing.
//
// Two kinds of command write without reading: blind writes, whose reply
// does not depend on the database (plain SET, where EX, PX, EXAT and PXAT
// only set an absolute expiry; SETEX, PSETEX and MSET), and increments
// (INCR, DECR, INCRBY, DECRBY), which the commit itself computes
// (caskade.Batch.AddInt) and whose reply waits for it. When such a command
// runs while more pipelined commands are already buffered, its writes are
// not committed at once: they are kept in a batch of their own, and a run
// of consecutive deferred commands is committed with one DB.WriteBatches
// (one write and, under SyncAlways, one fsync) when the run ends: before
// any other command runs, when no complete command is buffered any more,
// at a bound on the run's size, and in any case before replies are
// written. Each command stays atomic on its own, and each gets the reply
// it would have got alone: +OK or the new value, or the error of its own
// batch.
//
// Deferral is off while the connection is in MULTI, WATCHes keys, is in
// a CSK.BEGIN transaction, tracks keys (CLIENT TRACKING), is a MONITOR
// or has replies turned off or skipped (CLIENT REPLY), so that those keep
// their exact semantics.

// Bounds of one run of deferred commits.
const (
	maxDeferCmds  = 1024
	maxDeferBytes = 8 << 20
)

// deferred is one command whose commit waits for the end of its run.
type deferred struct {
	cmd        *command
	start, end int // its reply, c.out[start:end]
	batch      int // its batch in pendingRun.batches; -1: it wrote nothing
	sum        int // an increment's AddInt index in its batch, whose result is the reply; -1: none
}

// pendingRun is a connection's run of deferred commits.
type pendingRun struct {
	cmds    []deferred
	batches []*caskade.Batch // the first nb are in use; the rest are kept for reuse
	nb      int
	bytes   int
	sums    int    // deferred increments, whose replies are made after the commit
	tail    []byte // scratch for rebuilding replies
}

// markBlind flags the commands whose commits may be deferred.
func (t *commandTable) markBlind() {
	for _, name := range []string{"set", "setex", "psetex", "mset", "incr", "decr", "incrby", "decrby"} {
		t.m[name].blind = true
	}
}

// deferrable reports whether cmd, about to run with args, is a blind write
// whose commit may wait, given the connection's state.
func (c *client) deferrable(cmd *command, args [][]byte) bool {
	if cmd == nil || !cmd.blind || c.multi != nil || c.tx != nil || len(c.watches) > 0 ||
		c.trk.on || c.monitor.Load() || c.rflags != 0 {
		return false
	}
	if cmd.fn == nil || len(args) <= 3 || cmd.name != "set" {
		return true
	}
	// SET with options: only the absolute expiries keep it blind. A syntax
	// error also is (it replies without reading).
	flags, _, ok := parseExtended(args, 3, true)
	return !ok || flags&(setNX|setXX|setGet|setKeepTTL) == 0
}

// deferCommit moves the store's buffered writes of the command just run
// (whose reply starts at c.out[mark:]) into the pending run, and commits
// the run if it has reached its bounds or no further command is buffered.
func (c *client) deferCommit(cmd *command, mark int) {
	p := &c.pend
	d := deferred{cmd: cmd, start: mark, end: len(c.out), batch: -1, sum: -1}
	if st := &c.st; len(st.ops) > 0 {
		if p.nb == len(p.batches) {
			p.batches = append(p.batches, new(caskade.Batch))
		}
		b := p.batches[p.nb]
		for i := range st.ops {
			o := &st.ops[i]
			switch o.kind {
			case opSet:
				if o.flags != 0 {
					b.SetEntry(o.key, o.val, o.setOptions())
				} else if o.exp == 0 {
					b.Set(o.key, o.val)
				} else {
					b.SetWithExpiry(o.key, o.val, time.UnixMilli(o.exp))
				}
			case opDel:
				b.Delete(o.key)
			case opDelRange:
				b.DeleteRange(o.key, o.end)
			case opAdd:
				d.sum = b.AddInt(o.key, o.delta)
				p.sums++
			}
			p.bytes += len(o.key) + len(o.val)
		}
		d.batch = p.nb
		p.nb++
	}
	p.cmds = append(p.cmds, d)
	switch {
	case len(p.cmds) >= maxDeferCmds || p.bytes >= maxDeferBytes:
		c.commitPending()
	case c.commandBuffered():
	case c.tc != nil && c.looped():
		// On an event loop, the run waits for the end of the loop's
		// turn, to be committed with those of the other clients served
		// in it (one write and, under SyncAlways, one fsync for all),
		// before any reply of the turn is written.
		c.tc.add(c)
	default:
		c.commitPending()
	}
}

// commitPending commits the pending run, if any, replacing the reply of
// each command whose batch failed by the error reply. It reports whether
// there was a run.
func (c *client) commitPending() bool {
	p := &c.pend
	if len(p.cmds) == 0 {
		return false
	}
	var errs []error
	if p.nb == 1 {
		errs = []error{c.s.DB.Write(p.batches[0])}
	} else if p.nb > 1 {
		errs = c.s.DB.WriteBatches(p.batches[:p.nb])
	}
	c.pendingDone(errs)
	return true
}

// pendingDone ends the pending run, whose batches were committed with
// errs (one per batch).
func (c *client) pendingDone(errs []error) {
	p := &c.pend
	failed := false
	for _, err := range errs {
		if err != nil {
			failed = true
			break
		}
	}
	if failed || p.sums > 0 {
		c.rebuildReplies(errs)
	}
	for i := range p.nb {
		if p.batches[i].Len() > 64 || p.bytes > 1<<20 {
			p.batches[i] = new(caskade.Batch) // do not keep large buffers
		} else {
			p.batches[i].Reset()
		}
	}
	clear(p.cmds)
	p.cmds = p.cmds[:0]
	p.nb, p.bytes, p.sums = 0, 0, 0
}

// turnCommits gathers, for one event loop, the clients whose pending runs
// wait for the end of the loop's turn, and commits them together.
type turnCommits struct {
	s       *Server
	clients []*client
	batches []*caskade.Batch
}

// add queues c's pending run for the end of the turn.
func (t *turnCommits) add(c *client) {
	if !c.tcQueued {
		c.tcQueued = true
		t.clients = append(t.clients, c)
	}
}

// commit commits the queued runs with one DB.WriteBatches, each batch
// still atomic on its own (netloop.Options.TurnDone).
func (t *turnCommits) commit() {
	if len(t.clients) == 0 {
		return
	}
	kept := t.clients[:0]
	for _, c := range t.clients {
		if !c.looped() {
			continue // gone to a goroutine, which committed its run first
		}
		c.tcQueued = false
		if len(c.pend.cmds) > 0 && !c.awaiting {
			kept = append(kept, c)
			t.batches = append(t.batches, c.pend.batches[:c.pend.nb]...)
		}
	}
	if len(t.batches) > 0 && t.s.syncAlways {
		// The commit waits for an fsync: a goroutine waits for it, and
		// the loop goes on with its other clients. These clients run
		// nothing more until it is done (Serve): their replies, and
		// their next commands, wait for it.
		cs := slices.Clone(kept)
		bs := slices.Clone(t.batches)
		for _, c := range cs {
			c.awaiting = true
		}
		go func() {
			errs := t.s.DB.WriteBatches(bs)
			at := 0
			for _, c := range cs {
				n := c.pend.nb
				c.turnErrs = errs[at : at+n]
				at += n
				c.committed.Store(true)
				c.lc.Kick()
			}
		}()
	} else if len(t.batches) > 0 {
		errs := t.s.DB.WriteBatches(t.batches)
		at := 0
		for _, c := range kept {
			n := c.pend.nb
			c.pendingDone(errs[at : at+n])
			at += n
		}
	}
	clear(t.clients)
	t.clients = t.clients[:0]
	clear(t.batches)
	t.batches = t.batches[:0]
}

// rebuildReplies replaces the replies of the deferred commands whose
// batch failed by their error replies and fills in the replies of
// increments, keeping every other reply (those that succeeded, and those
// of commands refused in between) in order.
func (c *client) rebuildReplies(errs []error) {
	p := &c.pend
	base := p.cmds[0].start
	p.tail = append(p.tail[:0], c.out[base:]...)
	tail := p.tail
	c.out = c.out[:base]
	prev := 0
	errored := c.errored
	for _, d := range p.cmds {
		s, e := d.start-base, d.end-base
		c.out = append(c.out, tail[prev:s]...)
		if d.batch >= 0 && errs[d.batch] != nil {
			d.cmd.failed.Add(1)
			c.replyErr(c.s.engineError(errs[d.batch]))
		} else if d.sum >= 0 {
			c.replyInt(p.batches[d.batch].Int(d.sum))
		} else {
			c.out = append(c.out, tail[s:e]...)
		}
		prev = e
	}
	c.out = append(c.out, tail[prev:]...)
	c.errored = errored
	if cap(p.tail) > 1<<20 {
		p.tail = nil
	}
}
