package redis

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/resp"
	"github.com/caskade/caskade/server/internal/storerr"
)

// multiState is a transaction being queued (MULTI ... EXEC).
type multiState struct {
	cmds  []queued
	dirty bool // a command was refused while queueing: EXEC aborts
}

type queued struct {
	cmd  *command
	args [][]byte
}

// queue copies args (which point into the reader's buffer) and queues them.
func (m *multiState) queue(cmd *command, args [][]byte) {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	cp := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		cp[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	m.cmds = append(m.cmds, queued{cmd: cmd, args: cp})
}

// watchRec is a WATCHed key: its encoded key and the version seen (0 if
// absent).
type watchRec struct {
	key []byte
	ver uint64
}

// watchRegistry finds the clients that WATCH a key when a commit changes
// it, as Redis's watched_keys does. Versions alone cannot tell that a key
// absent at WATCH was set and deleted again before EXEC (it is absent, at
// no version, as before), yet that change must fail EXEC. Every commit
// reaches touch through DB.Subscribe, whichever protocol made it.
type watchRegistry struct {
	n atomic.Int64 // keys registered, read without the lock
	// probes counts the watches looked at to register or touch keys, for
	// tests of how the work grows.
	probes atomic.Int64
	mu     sync.Mutex
	keys   map[string]map[*client]struct{}
}

// add registers c as watching k, and reports false if it already was:
// one lookup, where a scan of the client's watches made WATCH of many
// keys quadratic.
func (r *watchRegistry) add(k []byte, c *client) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probes.Add(1)
	if r.keys == nil {
		r.keys = map[string]map[*client]struct{}{}
	}
	set := r.keys[string(k)]
	if set == nil {
		set = map[*client]struct{}{}
		r.keys[string(k)] = set
		r.n.Add(1)
	} else if _, dup := set[c]; dup {
		return false
	}
	set[c] = struct{}{}
	return true
}

// removeAll forgets that c watches the keys of watches, under one hold
// of the lock.
func (r *watchRegistry) removeAll(watches []watchRec, c *client) {
	if len(watches) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range watches {
		set := r.keys[string(w.key)]
		delete(set, c)
		if set != nil && len(set) == 0 {
			delete(r.keys, string(w.key))
			r.n.Add(-1)
		}
	}
}

// touch marks the clients watching any of keys (encoded keys a commit
// changed).
func (r *watchRegistry) touch(keys [][]byte) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		for c := range r.keys[string(k)] {
			r.probes.Add(1)
			c.watchTouched.Store(true)
		}
	}
}

func (c *client) setMulti(m *multiState) {
	c.multi = m
	c.syncInfo()
}

func (c *client) unwatchAll() {
	c.s.watchReg.removeAll(c.watches, c)
	clear(c.watches) // let the keys go
	c.watches = c.watches[:0]
	c.watchTouched.Store(false)
	c.syncInfo()
}

func cmdMulti(c *client, args [][]byte) {
	if c.multi != nil {
		c.replyErr("ERR MULTI calls can not be nested")
		return
	}
	c.setMulti(&multiState{})
	c.replyOK()
}

func cmdDiscard(c *client, args [][]byte) {
	if c.multi == nil {
		c.replyErr("ERR DISCARD without MULTI")
		return
	}
	c.setMulti(nil)
	c.unwatchAll()
	c.replyOK()
}

func cmdWatch(c *client, args [][]byte) {
	if c.multi != nil {
		c.replyErr("ERR WATCH inside MULTI is not allowed")
		return
	}
	for _, key := range args[1:] {
		k := bytes.Clone(c.k(key))
		// Registered before the version is read: a change after the read
		// marks the client, one before it shows in the version.
		if !c.s.watchReg.add(k, c) {
			continue // watched already
		}
		c.watches = append(c.watches, watchRec{key: k})
		info, err := c.s.DB.Stat(k)
		var ver uint64
		if err == nil {
			ver = info.Version
		} else if !errors.Is(err, caskade.ErrNotFound) {
			c.syncInfo()
			c.replyDBError(err)
			return
		}
		c.watches[len(c.watches)-1].ver = ver
	}
	c.syncInfo()
	c.replyOK()
}

func cmdUnwatch(c *client, args [][]byte) {
	c.unwatchAll()
	c.replyOK()
}

// watchedChanged reports whether a WATCHed key is no longer at the version
// seen by WATCH.
func (c *client) watchedChanged(watches []watchRec, snap *caskade.Snapshot) (bool, error) {
	for _, w := range watches {
		var info caskade.KeyInfo
		var err error
		if snap != nil {
			info, err = snap.Stat(w.key)
		} else {
			info, err = c.s.DB.Stat(w.key)
		}
		var ver uint64
		if err == nil {
			ver = info.Version
		} else if !errors.Is(err, caskade.ErrNotFound) {
			return false, err
		}
		if ver != w.ver {
			return true, nil
		}
	}
	return false, nil
}

// cmdExec runs the queued commands against one snapshot with their writes
// buffered, then commits all the writes as one batch, conditional on the
// WATCHed keys and every key the transaction read being unchanged. If a
// WATCHed key changed, EXEC replies the null array; if only a key read
// changed, the transaction is run again.
func cmdExec(c *client, args [][]byte) {
	if c.multi == nil {
		c.replyErr("ERR EXEC without MULTI")
		return
	}
	m := c.multi
	c.execN = len(m.cmds)
	c.setMulti(nil)
	// The WATCHes stay registered until EXEC ends, so that a change
	// during a retry below still counts.
	watches := append([]watchRec(nil), c.watches...)
	defer func() {
		c.execN = -1
		c.unwatchAll()
	}()
	if m.dirty {
		c.replyErr("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	if c.trk.on {
		for _, q := range m.cmds {
			if q.cmd.has(fReadonly) {
				c.s.track.remember(c, q.cmd, q.args)
			}
		}
	}
	exec := c.cur
	db0 := c.db
	c.turn = c.s.DB.Turn()
	turn := &c.turn
	defer turn.Done()
	rflags := c.rflags
	// The replies of the queued admin commands (CLIENT KILL, CLIENT PAUSE,
	// CONFIG SET, DEBUG, BGSAVE ...), whose effects lie outside the
	// transaction, from the first attempt: a retry after a conflict sends
	// them again rather than act twice (a second CLIENT KILL of the same
	// client would even answer 0).
	var once [][]byte
	// The MONITOR lines of the queued commands, sent once an attempt's
	// replies are: an attempt that is run again, or whose commit fails,
	// took no effect.
	var feed []byte
	// The statistics of the queued commands (but the admin ones, run
	// once), counted for the attempt that stands alone.
	var stats []queuedStat
	c.afterExec = 0
	for attempt := 0; ; attempt++ {
		c.db = db0
		c.rflags = rflags // a queued CLIENT REPLY of a failed attempt
		mark := len(c.out)
		st := &c.st
		st.begin(c.s.DB, true)
		st.checkRanges = true
		st.turn = turn
		// As for a command: the tracker tells the EXEC's writes from
		// the others' (NOLOOP).
		st.origin = c.origin()
		st.useSnapshot()
		// A WATCHed key changed before the snapshot if a commit touched it
		// or its version moved; after it, the commit's range checks fail.
		changed, err := c.watchedChanged(watches, st.snap)
		changed = changed || c.watchTouched.Load()
		if err != nil {
			st.end()
			c.replyDBError(err)
			return
		}
		if changed {
			st.end()
			c.out = resp.AppendNullArray(c.out, c.proto)
			return
		}
		for _, w := range watches {
			st.rangeReads = append(st.rangeReads, keyRange{begin: w.key, end: append(w.key[:len(w.key):len(w.key)], 0)})
		}
		if !c.muted() {
			// Muted, the whole reply is dropped (process), unless a
			// queued CLIENT REPLY ON unmutes it: then, as in Redis, the
			// replies from there on go out without the header.
			c.replyArray(len(m.cmds))
		}
		c.execing = true
		feed, stats = feed[:0], stats[:0]
		for i, q := range m.cmds {
			switch {
			case !q.cmd.has(fAdmin):
				stats = append(stats, c.runQueued(q, &feed))
			case attempt > 0:
				c.out = append(c.out, once[i]...)
			default:
				if once == nil {
					once = make([][]byte, len(m.cmds))
				}
				at := len(c.out)
				c.runQueued(q, &feed).count(c)
				once[i] = bytes.Clone(c.out[at:])
			}
		}
		if testHookExecAttempt != nil {
			testHookExecAttempt(attempt)
		}
		c.execing = false
		c.cur = exec
		err = st.commit()
		st.end()
		if err == nil {
			if len(feed) > 0 {
				c.s.monitors.send(feed)
			}
			for _, qs := range stats {
				qs.count(c)
			}
			c.startAfterExec()
			break
		}
		c.out = c.out[:mark]
		if errors.Is(err, caskade.ErrConflict) {
			changed, werr := c.watchedChanged(watches, nil)
			if werr == nil && (changed || c.watchTouched.Load()) {
				c.out = resp.AppendNullArray(c.out, c.proto)
				break
			}
			if c.retry(err, attempt, turn) {
				continue
			}
		}
		if storerr.Classify(err) != storerr.Other {
			// As Redis refuses an EXEC of writes when it cannot
			// persist them: with the MISCONF error itself.
			c.replyErr(c.s.engineError(err))
			break
		}
		c.replyErr("EXECABORT Transaction discarded because of: " + trimCode(c.s.engineError(err)))
		break
	}
	c.trk.afterCommand(exec, false)
}

// testHookExecAttempt, if set, runs when an attempt of EXEC has run its
// commands, before it commits.
var testHookExecAttempt func(attempt int)

// queuedStat is what a queued command run inside EXEC adds to its
// statistics.
type queuedStat struct {
	cmd    *command
	usec   int64
	failed bool
	errs   []string // its error replies, for errorstats
}

func (qs queuedStat) count(c *client) {
	qs.cmd.calls.Add(1)
	qs.cmd.usec.Add(qs.usec)
	if qs.failed {
		qs.cmd.failed.Add(1)
	}
	for _, msg := range qs.errs {
		c.s.countError(msg)
	}
	c.s.stats.commands.Add(1)
}

// runQueued executes one queued command inside EXEC, and returns its
// statistics, which the caller counts if the attempt stands; it appends
// its MONITOR line, if monitors are on, to feed.
func (c *client) runQueued(q queued, feed *[]byte) queuedStat {
	start := time.Now()
	c.cur = q.cmd
	c.errored = false
	mark := len(c.out)
	var errs []string
	c.heldErrs = &errs
	if c.db == 0 && q.cmd.firstKey > 0 && c.hasReservedKey(q.cmd, q.args) {
		// Queued while another database was selected.
		c.replyErr(errReservedKey)
	} else {
		q.cmd.fn(c, q.args)
	}
	c.heldErrs = nil
	d := time.Since(start)
	if c.s.monitors.active() && !q.cmd.has(fAdmin) {
		// After it ran, stamped with when it ended, as call does.
		*feed = monitorLine(*feed, c, q.args, start.Add(d))
	}
	if c.muted() {
		// After a queued CLIENT REPLY OFF, as in Redis, the replies are
		// dropped even though EXEC's header counted them.
		c.out = c.out[:mark]
	}
	return queuedStat{cmd: q.cmd, usec: d.Microseconds(), failed: c.errored, errs: errs}
}
