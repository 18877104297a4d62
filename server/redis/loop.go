package redis

import (
	"errors"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/netloop"
)

// Event loops (package netloop) serve TCP and unix socket clients: each
// loop waits on epoll for its clients and runs the commands of each ready
// one in turn, writing all replies at the end of the turn, as Redis does.
// The blind writes of a turn (SET, MSET, INCR...; pipeline.go) are
// committed together at its end, with one DB.WriteBatches for all its
// clients, before any reply of the turn is written. Under SyncAlways a
// goroutine makes that commit, with its fsync, while the loop goes on;
// the clients in it run nothing more until it is durable.
//
// A client leaves its loop for a goroutine of its own, for good, when a
// command may wait on something other than the CPU: under SyncAlways a
// write that is not blind, or EXEC (its fsync would stall every client of
// the loop), and SAVE, DEBUG and SHUTDOWN. It leaves too when a command is
// bigger than the read buffer, which the reader then reads from the
// socket.
// Connections without a file descriptor (TLS, ServeConn's) always have a
// goroutine.

// initLoops sets up the event loops, which start with the first client
// (init).
func (s *Server) initLoops() {
	s.loops = netloop.Pool{
		N: s.EventLoops,
		Options: func(int) netloop.Options {
			tc := &turnCommits{s: s}
			s.turns = append(s.turns, tc)
			return netloop.Options{
				IdleTimeout: func() time.Duration { return time.Duration(s.cfg.idleAtomic.Load()) },
				TurnDone:    tc.commit,
			}
		},
		OnError: func(err error) {
			s.log.Warn("redis: no event loop; serving each client on a goroutine", "err", err)
		},
	}
	s.syncAlways = s.DB != nil && s.DB.SyncPolicy() == caskade.SyncAlways
}

// attach puts c on an event loop; false if it needs a goroutine.
func (s *Server) attach(c *client) bool {
	l, i, ok := s.loops.Pick()
	if !ok {
		return false
	}
	c.tc = s.turns[i]
	if err := l.Attach(c.lc, c); err != nil {
		return false
	}
	// Interrupted before it was attached: the interrupt's kick found no
	// loop to wake.
	c.lmu.Lock()
	closing := c.closing
	c.lmu.Unlock()
	if closing {
		c.lc.Kick()
	}
	return true
}

// offLoop reports whether cmd must run off the event loop; blind tells
// whether its commit may wait for the end of the turn (pipeline.go),
// which under SyncAlways a goroutine makes while the loop goes on.
func (s *Server) offLoop(cmd *command, blind bool) bool {
	if cmd.parent != nil {
		cmd = cmd.parent
	}
	switch cmd.name {
	case "save", "debug", "shutdown":
		return true
	case "exec", "csk.commit":
		return s.syncAlways
	}
	return s.syncAlways && cmd.has(fWrite) && !blind
}

// looped reports whether an event loop serves c.
func (c *client) looped() bool { return c.lc != nil && c.lc.Attached() }

// resume runs the command read before, which waited for the commit of
// the writes before it (held) or for the end of a CLIENT PAUSE (paused).
// It reports whether Serve may go on to read more: not if the client
// closed, left the loop, or has to wait again.
func (c *client) resume() bool {
	if !c.run(c.args) {
		c.closeOnLoop()
		return false
	}
	if c.leave {
		c.leave = false
		c.leaveLoop(c.args)
		return false
	}
	return !c.held && !c.paused
}

// Serve runs the commands that have arrived (netloop.Handler). It reads at
// most once: the loop comes back when more arrives.
func (c *client) Serve() {
	defer c.loopPanic()
	if c.awaiting {
		if !c.committed.Load() {
			return
		}
		c.awaiting = false
		c.committed.Store(false)
		c.pendingDone(c.turnErrs)
		c.turnErrs = nil
		if c.held {
			c.held = false
			if !c.resume() {
				return
			}
		}
	}
	if c.paused {
		if c.stopping() {
			c.closeOnLoop() // a shutdown or CLIENT KILL drops the held command
			return
		}
		select {
		case <-c.pauseEnd:
		default:
			// Served for input that arrived meanwhile, which stays
			// unread: running the command again would only hold it
			// again, and list it in the pause once more for each
			// arrival. The pause kicks the client when it ends.
			if c.lc.Hup() {
				// Unless the peer went away: then, as in Redis
				// (which reads the end of file meanwhile), the client
				// ends without running its held command, instead of
				// keeping its connection and its place under
				// MaxClients until the pause ends, and then writing.
				c.closeOnLoop()
			}
			return
		}
		c.paused, c.pauseEnd = false, nil
		if !c.resume() {
			return
		}
	}
	if c.lc.Backlogged() && (c.lc.WriteErr() != nil || c.stopping()) {
		// The loop reads nothing from a client whose replies wait for it
		// to read them, so it would never find out that its connection
		// failed (the peer went away without reading), was closed (CLIENT
		// KILL, Close) or is being shut down: the client would stay, with
		// its queued replies and its place under MaxClients, for good.
		c.closeOnLoop()
		return
	}
	read := false
	for !c.lc.Backlogged() {
		if !c.commandBuffered() {
			if read {
				return
			}
			read = true
			if c.br.Buffered() == c.br.Size() {
				// A command bigger than the buffer: the reader reads the
				// rest from the socket, which takes a goroutine.
				c.leaveLoop(nil)
				return
			}
			c.buffered = 0
			if _, err := c.br.Peek(c.br.Buffered() + 1); err != nil {
				if errors.Is(err, netloop.ErrWouldBlock) {
					return
				}
				c.readFailed(err)
				c.closeOnLoop()
				return
			}
			continue
		}
		if !c.readyToRead() {
			c.flush()
			c.closeOnLoop()
			return
		}
		args, err := c.rd.ReadCommand(c.args)
		if err != nil {
			c.readFailed(err)
			c.closeOnLoop()
			return
		}
		if !c.run(args) {
			c.closeOnLoop()
			return
		}
		if c.leave {
			c.leave = false
			c.leaveLoop(args)
			return
		}
		if c.held || c.paused {
			return // until its commit is done, or the pause ends
		}
	}
}

// EndTurn writes the replies of the commands run in the loop's turn
// (netloop.Handler).
func (c *client) EndTurn() {
	if c.awaiting {
		return // the replies wait for the commit
	}
	defer c.loopPanic()
	c.ended = time.Time{}
	c.unflushed = 0
	if !c.flush() {
		c.closeOnLoop()
	}
}

// Idle closes the client after the idle timeout, unless it is a MONITOR
// (netloop.Handler).
func (c *client) Idle() {
	if c.monitor.Load() || c.awaiting || c.paused {
		return // a client holding a command is not idle, as in Redis
	}
	c.flush()
	c.closeOnLoop()
}

// loopPanic ends, as the deferred call of a loop's call into the client,
// a client whose command panicked; the loop and its other clients go on.
func (c *client) loopPanic() {
	if r := recover(); r != nil {
		c.panicked(r)
		c.closeOnLoop()
	}
}

// detach takes c off its loop, returning the output the socket has not
// taken yet.
func (c *client) detach() []byte {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.lc.Detach()
}

// closeOnLoop ends a client its loop served.
func (c *client) closeOnLoop() {
	if !c.looped() {
		return
	}
	if rest := c.detach(); len(rest) > 0 {
		// Replies the client has not taken yet: a goroutine waits until
		// it does (or the write timeout) before closing.
		go func() {
			c.wmu.Lock()
			c.write(rest)
			c.wmu.Unlock()
			c.end()
		}()
		return
	}
	c.end()
}

// leaveLoop hands c to a goroutine of its own, which first runs args (a
// command read but not run), if not nil.
func (c *client) leaveLoop(args [][]byte) {
	c.commitPending() // not left for the end of the turn
	rest := c.detach()
	go func() {
		defer c.endGoroutine()
		if len(rest) > 0 {
			c.wmu.Lock()
			ok := c.write(rest)
			c.wmu.Unlock()
			if !ok {
				return
			}
		}
		if args != nil && !c.run(args) {
			return
		}
		c.serveRead()
	}()
}
