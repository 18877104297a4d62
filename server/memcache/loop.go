package memcache

import (
	"bytes"
	"errors"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/netloop"
)

// Event loops (package netloop) serve TCP connections: each loop waits on
// epoll for its connections and runs the commands of each ready one in
// turn, writing all replies at the end of the turn, as memcached's worker
// threads do. A command runs on the loop only once it has arrived whole
// (commandReady), its data block included; the read buffer grows for a
// value up to the item size limit. Plain sets are committed at the end of
// the turn, those of all its connections with one DB.WriteBatches
// (turnCommits), before the replies go out.
//
// A connection leaves its loop for a goroutine of its own, for good,
// before a command that may wait on something other than the CPU: under
// SyncAlways anything but a read, whose fsync would stall the loop's other
// connections (committing a turn's sets together with one fsync at its
// end made pipelined sets half as fast: the loop waited for the disk
// instead of reading). It leaves too before a command the loop cannot
// hold: a data block over the item size limit, skipped as it arrives.

// initLoops sets up the event loops, which start with the first
// connection (init).
func (s *Server) initLoops() {
	s.loops = netloop.Pool{
		N: s.EventLoops,
		Options: func(int) netloop.Options {
			tc := &turnCommits{s: s}
			s.turns = append(s.turns, tc)
			return netloop.Options{IdleTimeout: func() time.Duration { return s.IdleTimeout }, TurnDone: tc.commit}
		},
		OnError: func(err error) {
			s.log.Warn("memcache: no event loop; serving each connection on a goroutine", "err", err)
		},
	}
	s.syncAlways = s.DB != nil && s.DB.SyncPolicy() == caskade.SyncAlways
}

// attach puts c on an event loop; false if it needs a goroutine.
func (s *Server) attach(c *conn) bool {
	l, i, ok := s.loops.Pick()
	if !ok {
		return false
	}
	c.tc = s.turns[i]
	c.sess.onLoop = true
	if err := l.Attach(c.lc, c); err != nil {
		c.sess.onLoop = false
		return false
	}
	if s.closing.Load() {
		// Shutdown's interrupt may have found no loop to wake.
		c.lc.Kick()
	}
	return true
}

// looped reports whether an event loop serves c.
func (c *conn) looped() bool { return c.lc != nil && c.lc.Attached() }

// Serve runs the commands that have arrived (netloop.Handler). It reads at
// most once: the loop comes back when more arrives.
func (c *conn) Serve() {
	defer c.loopPanic()
	ss := &c.sess
	c.tc.add(c)
	ss.ended = time.Time{} // commands left from the last turn do not start then
	if c.lc.Backlogged() && (c.lc.WriteErr() != nil || c.interrupted.Load() || c.s.closing.Load()) {
		// Nothing is read from a connection whose replies wait for the
		// client to read them, so the loop would never find out that it
		// failed (the peer went away without reading) or is being shut
		// down: it would stay, with its queued replies, for good.
		c.closeOnLoop(nil)
		return
	}
	read := false
	for !c.lc.Backlogged() {
		line, need := c.commandReady()
		if need > 0 {
			ss.ended = time.Time{} // the next command will not start now
			if read {
				return
			}
			read = true
			if c.s.closing.Load() {
				// Shutdown: the commands received have run.
				c.closeOnLoop(ErrServerClosed)
				return
			}
			if need > c.loopBufferLimit() {
				c.leaveLoop()
				return
			}
			switch err := c.fill(need); {
			case errors.Is(err, netloop.ErrWouldBlock):
				return
			case err != nil:
				c.closeOnLoop(err)
				return
			}
			continue
		}
		if c.s.syncAlways && !readOnlyLine(line) {
			c.leaveLoop()
			return
		}
		err := ss.step()
		if ss.r.nread > 0 {
			ss.count.add(statBytesRead, uint64(ss.r.nread))
			ss.r.nread = 0
		}
		if err == nil && len(ss.out) >= maxRetainedOutput {
			err = c.flush()
		}
		if err != nil {
			c.closeOnLoop(err)
			return
		}
		if ss.resume != nil {
			// A multi-get whose client is not taking its reply: its
			// goroutine finishes it, waiting for the client.
			c.leaveLoop()
			return
		}
	}
}

// EndTurn writes the replies of the commands run in the loop's turn
// (netloop.Handler).
func (c *conn) EndTurn() {
	defer c.loopPanic()
	if err := c.flush(); err != nil {
		c.closeOnLoop(err)
	}
}

// Idle closes the connection after the idle timeout (netloop.Handler),
// unless it is in the middle of a data block: as in memcached, only a
// connection waiting for a command is idle.
func (c *conn) Idle() {
	if c.inDataBlock() {
		return
	}
	c.sess.count.add(statIdleKicks, 1)
	c.closeOnLoop(nil)
}

// loopPanic ends, as the deferred call of a loop's call into the
// connection, a connection whose command panicked; the loop and its other
// connections go on.
func (c *conn) loopPanic() {
	if p := recover(); p != nil {
		c.panicked(p)
		c.closeOnLoop(nil)
	}
}

// closeOnLoop ends a connection its loop served, after err (nil: the idle
// timeout or a panic). A goroutine writes the replies the socket has not
// taken yet and closes it.
func (c *conn) closeOnLoop(err error) {
	if !c.looped() {
		return
	}
	c.sess.onLoop = false
	rest := c.lc.Detach()
	go func() {
		if len(rest) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(time.Minute))
			if _, werr := c.nc.Write(rest); werr != nil {
				c.end()
				return
			}
		}
		if err != nil {
			c.failed(err)
		}
		c.end()
	}()
}

// leaveLoop hands c to a goroutine of its own.
func (c *conn) leaveLoop() {
	c.sess.onLoop = false
	c.sess.commitPending() // not left for the end of the turn
	rest := c.lc.Detach()
	go func() {
		defer c.endGoroutine()
		if len(rest) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(time.Minute))
			if _, err := c.nc.Write(rest); err != nil {
				return
			}
		}
		c.serveRead()
	}()
}

// loopBufferLimit is the largest command (line and data block) a loop
// buffers whole.
func (c *conn) loopBufferLimit() int {
	return c.s.maxItemSize + MaxLineLength + 2
}

// fill reads once what has arrived after the buffered input, first making
// room for need bytes in all (growing the buffer if it is full, at most to
// loopBufferLimit) and, when the buffer is empty, shrinking one that grew
// for a large value back to its usual size.
func (c *conn) fill(need int) error {
	b := c.sess.r
	if b.r == b.w {
		b.r, b.w = 0, 0
		if len(b.buf) > 4*readBufferSize {
			b.buf = make([]byte, readBufferSize)
		}
	} else if b.r > 0 && (b.w == len(b.buf) || need > len(b.buf)-b.r) {
		n := copy(b.buf, b.buf[b.r:b.w])
		b.r, b.w = 0, n
	}
	if b.w == len(b.buf) {
		nb := make([]byte, min(max(2*len(b.buf), need), c.loopBufferLimit()))
		copy(nb, b.buf[:b.w])
		b.buf = nb
	}
	n, err := c.lc.Read(b.buf[b.w:])
	b.w += n
	b.nread += int64(n)
	if err == nil && n == 0 {
		return netloop.ErrWouldBlock
	}
	return err
}

// commandReady examines the buffered input the way session.step reads
// it: need is 0 when the next command is all there (or fails at once),
// line then being its command line; otherwise need is the size the
// buffered input must reach for it (at least one byte more than now).
func (c *conn) commandReady() (line []byte, need int) {
	b := c.sess.r
	in := b.buf[b.r:b.w]
	i := bytes.IndexByte(in, '\n')
	if i < 0 {
		if len(in) > MaxGetLineLength || (len(in) > MaxLineLength && !isGetLine(in)) {
			return in, 0 // too long: the reader fails at once
		}
		return nil, len(in) + 1
	}
	line = in[:i+1]
	size, ok := dataSize(line, c.sess.authed)
	if !ok {
		return line, 0
	}
	if total := len(line) + size + 2; len(in) < total {
		return nil, total
	}
	return line, 0
}

// inDataBlock reports whether the buffered input holds a command line
// whose data block has not all arrived.
func (c *conn) inDataBlock() bool {
	b := c.sess.r
	in := b.buf[b.r:b.w]
	i := bytes.IndexByte(in, '\n')
	if i < 0 {
		return false
	}
	size, ok := dataSize(in[:i+1], c.sess.authed)
	return ok && len(in) < i+1+size+2
}

// dataSize returns the size of the data block that session.dispatch reads
// (or skips) after a command line; ok is false when it reads none.
func dataSize(line []byte, authed bool) (int, bool) {
	body := line[:len(line)-1]
	if len(body) > 0 && body[len(body)-1] == '\r' {
		body = body[:len(body)-1]
	}
	if len(line) < 4 {
		return 0, false // too short to be a command
	}
	var toks [5][]byte
	n := 0
	for tok, rest := nextToken(body); tok != nil && n < len(toks); tok, rest = nextToken(rest) {
		toks[n], n = tok, n+1
	}
	name := body
	if i := bytes.IndexByte(body, ' '); i >= 0 {
		name = body[:i]
	}
	if !authed {
		// Only the authentication "set", with a data block of at most
		// maxAuthData bytes.
		if string(name) != "set" || n < 5 {
			return 0, false
		}
		size, ok := parseUint(toks[4], 32)
		if !ok || size > maxAuthData {
			return 0, false
		}
		return int(size), true
	}
	at := 4 // set <key> <flags> <exptime> <bytes>
	switch string(name) {
	case "set", "add", "replace", "append", "prepend", "cas":
	case "ms":
		at = 2 // ms <key> <datalen> <flags>*
		if !metaLineTokenizes(body, 3) {
			return 0, false // refused whole, its data read as commands (parseMeta)
		}
	default:
		return 0, false
	}
	if n <= at {
		return 0, false
	}
	return parseDataLen(toks[at])
}

// metaLineTokenizes is parseMeta's tokenizer check on a meta command
// line whose flags begin at token first: whether every flag token among
// the first metaTokenizerMax tokens starts with a letter or a digit.
func metaLineTokenizes(body []byte, first int) bool {
	i := 0
	for tok, rest := nextToken(body); tok != nil && i < metaTokenizerMax; tok, rest = nextToken(rest) {
		if i >= first && !metaFlagsTokenize([][]byte{tok}) {
			return false
		}
		i++
	}
	return true
}

// nextToken splits the first space-separated token off b: nil when b
// holds only spaces.
func nextToken(b []byte) (tok, rest []byte) {
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	if len(b) == 0 {
		return nil, nil
	}
	j := bytes.IndexByte(b, ' ')
	if j < 0 {
		j = len(b)
	}
	return b[:j], b[j:]
}

// readOnlyLine reports whether a command line only reads (it may then run
// on a loop under SyncAlways).
func readOnlyLine(line []byte) bool {
	name := line
	if i := bytes.IndexAny(line, " \r\n"); i >= 0 {
		name = line[:i]
	}
	switch string(name) {
	case "get", "gets", "mn", "me", "version", "stats", "verbosity", "quit":
		return true
	}
	return false
}
