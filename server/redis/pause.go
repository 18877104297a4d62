package redis

import (
	"bytes"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade/internal/sockpeek"
)

// CLIENT PAUSE, as in Redis: for a while, the commands of every client
// (ALL) or only those that may write (WRITE: write commands, EXEC of a
// transaction with a write queued, CSK.COMMIT) are held, not refused: a
// client whose next command is held runs nothing more (its pipeline keeps
// its order) until the pause ends, by its timeout or CLIENT UNPAUSE, and
// then goes on. Replies of the commands it ran before are sent. As in
// Redis, a command is held after it was checked (an unknown command or a
// wrong number of arguments is answered at once) and before it runs or is
// queued by MULTI; under ALL, CLIENT UNPAUSE itself waits. QUIT is never
// held.
//
// A client served by a goroutine waits for the end of the pause on it. An
// event loop must not wait: a looped client holding a command returns to
// its loop (c.paused, like c.held), is listed in the pause, and is kicked
// when the pause ends; Serve then runs the command again, which holds it
// again if a new pause applies. Shutdown and Close end held clients
// without running their commands: beginClose interrupts every client,
// which a goroutine sees in its wait (c.stopc, s.done) and a loop in Serve.

// pauser is the server's CLIENT PAUSE state.
type pauser struct {
	on      atomic.Bool // a pause is in force: the only cost to commands otherwise
	mu      sync.Mutex
	all     bool          // ALL, not only WRITE
	end     time.Time     // when it ends
	timer   *time.Timer   // ends it
	ended   chan struct{} // closed when it ends
	waiting []*client     // looped clients holding a command, kicked when it ends
}

// pause starts a pause for d, or extends the one in force: as in Redis,
// the later end and the stricter mode win.
func (p *pauser) pause(d time.Duration, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := time.Now().Add(d)
	if !p.on.Load() {
		p.ended = make(chan struct{})
		p.all, p.end = all, end
		p.timer = time.AfterFunc(d, p.expire)
		p.on.Store(true)
		return
	}
	p.all = p.all || all
	if end.After(p.end) {
		p.end = end
		p.timer.Reset(d)
	}
}

// expire ends the pause if its time has come (the timer's function).
func (p *pauser) expire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on.Load() {
		return
	}
	if left := time.Until(p.end); left > 0 {
		p.timer.Reset(left) // extended meanwhile
		return
	}
	p.endLocked()
}

// unpause ends the pause in force, if any (CLIENT UNPAUSE, Close).
func (p *pauser) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.on.Load() {
		p.timer.Stop()
		p.endLocked()
	}
}

func (p *pauser) endLocked() {
	p.on.Store(false)
	close(p.ended)
	for _, c := range p.waiting {
		c.kick()
	}
	clear(p.waiting)
	p.waiting = p.waiting[:0]
}

// holds reports whether a command that writes (or not) is held now, and
// returns the channel closed when the pause ends. If c is not nil (a
// client on an event loop), it is kicked then.
func (p *pauser) holds(write bool, c *client) (bool, <-chan struct{}) {
	if !p.on.Load() {
		return false, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on.Load() || (!p.all && !write) {
		return false, nil
	}
	if c != nil {
		p.waiting = append(p.waiting, c)
	}
	return true, p.ended
}

// mayWrite reports whether cmd, about to run, counts as a write
// for CLIENT PAUSE WRITE.
func (c *client) mayWrite(cmd *command) bool {
	switch {
	case cmd.name == "exec":
		if c.multi != nil {
			for _, q := range c.multi.cmds {
				if q.cmd.has(fWrite) {
					return true
				}
			}
		}
		return false
	case cmd.name == "csk.commit":
		return true
	case c.tx != nil && txHandler(cmd.name) != nil:
		return false // buffered in the transaction: CSK.COMMIT writes
	}
	return cmd.has(fWrite)
}

// pauseHolds reports whether cmd must wait for a pause to end. A client
// on a goroutine waits here and then goes on (false), or is told to close
// if the server or the client is stopped meanwhile; one on an event loop
// is marked paused, and its loop runs the command again when the pause
// ends (true).
func (c *client) pauseHolds(cmd *command) bool {
	p := &c.s.pause
	if !p.on.Load() || cmd.name == "quit" {
		return false
	}
	write := c.mayWrite(cmd)
	if c.looped() {
		held, ended := p.holds(write, c)
		if held {
			c.paused, c.pauseEnd = true, ended
			if len(c.pend.cmds) > 0 && c.tc != nil {
				// The writes before it are committed at the end of the
				// turn (under SyncAlways by a goroutine), not by EndTurn's
				// flush on the loop.
				c.tc.add(c)
			}
		}
		return held
	}
	var tick *time.Ticker
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	for {
		held, ended := p.holds(write, nil)
		if !held {
			return false
		}
		// The replies of the commands before it go out meanwhile.
		if !c.flush() {
			c.closeNow = true
			return true
		}
		if tick == nil {
			tick = time.NewTicker(peerCheckEvery)
		}
	wait:
		for {
			select {
			case <-ended:
				break wait
			case <-c.stopc:
				break wait
			case <-c.s.done:
				break wait
			case <-tick.C:
				// Nothing reads the connection meanwhile, so look for
				// the peer hanging up: as in Redis (and the event
				// loops), the client then ends without running its
				// held command, and frees its place under MaxClients.
				if sockpeek.New(c.nc).Peek() == sockpeek.Closed {
					c.closeNow = true
					return true
				}
			}
		}
		// Close (CLIENT KILL, Shutdown) wins over the end of the pause,
		// which beginClose brings about too.
		if c.stopping() {
			c.closeNow = true
			return true
		}
		select {
		case <-c.s.done:
			c.closeNow = true
			return true
		default:
		}
	}
}

// peerCheckEvery is how often a client that a pause holds on its own
// goroutine looks for its peer hanging up.
const peerCheckEvery = 200 * time.Millisecond

// maxPause bounds a pause: Redis takes timeouts whose end, in Unix
// milliseconds, fits in an int64, which a time.Duration cannot hold.
const maxPause = time.Duration(math.MaxInt64)

// cmdClientPause is CLIENT PAUSE timeout [WRITE|ALL].
func cmdClientPause(c *client, args [][]byte) {
	if len(args) > 4 {
		c.errSubcommandSyntax(args)
		return
	}
	all := true
	if len(args) == 4 {
		switch {
		case eqFold(args[3], "write"):
			all = false
		case eqFold(args[3], "all"):
		default:
			c.replyErr("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	ms, ok := parseInt(args[2])
	if !ok {
		c.replyErr("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.replyErr("ERR timeout is negative")
		return
	}
	if ms > math.MaxInt64-time.Now().UnixMilli() {
		// As in Redis 7.2 and later: the end time would overflow.
		c.replyErr("ERR timeout is out of range")
		return
	}
	d := maxPause
	if ms < int64(maxPause/time.Millisecond) {
		d = time.Duration(ms) * time.Millisecond
	}
	c.s.pause.pause(d, all)
	c.replyOK()
}

// cmdClientUnpause is CLIENT UNPAUSE.
func cmdClientUnpause(c *client, args [][]byte) {
	c.s.pause.unpause()
	c.replyOK()
}

// cmdClientUnblock is CLIENT UNBLOCK id [TIMEOUT|ERROR]. caskade has no
// blocking commands, so no client is ever blocked: 0, as Redis replies
// for a client that is not.
func cmdClientUnblock(c *client, args [][]byte) {
	if len(args) > 4 {
		c.errSubcommandSyntax(args)
		return
	}
	if len(args) == 4 && !eqFold(args[3], "timeout") && !eqFold(args[3], "error") {
		c.replyErr("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
		return
	}
	if _, ok := parseInt(args[2]); !ok {
		c.replyErr(errNotInt)
		return
	}
	c.replyInt(0)
}

// errSubcommandSyntax replies Redis's error for a subcommand given the
// wrong arguments, which names the subcommand as the client spelled it.
func (c *client) errSubcommandSyntax(args [][]byte) {
	c.replyErr("ERR unknown subcommand or wrong number of arguments for '" +
		sanitize(cstr(args[1]), 128) + "'. Try " + string(bytes.ToUpper(args[0])) + " HELP.")
}
