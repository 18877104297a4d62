package redis

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/resp"
	"github.com/caskade/caskade/server/internal/storerr"
	"github.com/caskade/caskade/server/netloop"
)

// flushThreshold is the reply buffer size at which replies are written even
// though more pipelined commands are waiting.
const flushThreshold = 64 << 10

// A command (or EXEC) whose commit conflicts with another writer's runs
// again. After caskade.TurnAfter attempts it waits for the database's turn
// lock (caskade.Turn), shared with the memcached and HTTP front ends, so
// that writers fighting over the same keys take turns rather than starve
// one another, and it retries until it commits: Redis never fails a
// command for contention. maxRetries only stops a runaway loop.
const maxRetries = 10000

// retry reports whether a command whose attempt (counted from 0) failed
// with err should run again, waiting for its turn when contended.
func (c *client) retry(err error, attempt int, turn *caskade.Turn) bool {
	if !errors.Is(err, caskade.ErrConflict) || attempt >= maxRetries {
		return false
	}
	turn.Wait(attempt + 1)
	return true
}

// client is one connection.
type client struct {
	s       *Server
	turn    caskade.Turn // of the command (or EXEC) running
	nc      net.Conn
	lc      *netloop.Conn // the connection's place on an event loop (loop.go), if it has one
	gone    func()        // called once the connection has ended
	id      int64
	rd      *resp.Reader
	br      *bufio.Reader // rd's buffer, peeked to see whether a command is complete
	args    [][]byte
	lower   []byte
	out     []byte
	wmu     sync.Mutex    // serialises writes to nc
	wdl     time.Duration // under wmu: the write deadline set, as time since created
	st      store
	keyIdx  []int
	created time.Time
	addr    string
	laddr   string
	unix    bool

	// Connection state, owned by the client goroutine; fields read by other
	// goroutines (CLIENT LIST) are under imu.
	proto        int
	db           int
	authed       bool
	multi        *multiState
	execN        int      // while EXEC runs: how many commands it runs, else -1
	tx           *txState // an open CSK.BEGIN transaction
	watches      []watchRec
	watchTouched atomic.Bool // a commit changed a WATCHed key
	cur          *command    // the command being executed
	errored      bool        // the current command replied an error
	// heldErrs, while an EXEC attempt runs a queued command, keeps its
	// error replies for errorstats, which count them only if the attempt
	// stands (see runQueued); nil otherwise.
	heldErrs  *[]string
	closeNow  bool          // close after writing the replies
	rflags    uint8         // reply modes (CLIENT REPLY): replyOff, replySkip, replySkipNext
	mark      int           // where the muted command's reply starts in out (process)
	blind     bool          // the current command may defer its commit (pipeline.go)
	deferred  bool          // the current command's commit is deferred
	execing   bool          // EXEC is running its queued commands
	afterExec int           // background work to start once EXEC commits (afterExecSave...)
	sum       caskade.Batch // an increment's commit (strings.go)
	buffered  int8          // commandBuffered's answer since the last read: 0 unknown, 1 yes, -1 no
	pend      pendingRun
	ended     time.Time       // when the last command ended, if the next one runs right after it
	unflushed int             // commands run since replies were last written
	leave     bool            // the command read must run off the event loop (loop.go)
	tc        *turnCommits    // the commits at the end of its event loop's turn, if it has one
	tcQueued  bool            // c is in tc's list
	awaiting  bool            // its turn's commit is in flight (SyncAlways): it runs nothing meanwhile
	held      bool            // the command read (c.args) waits for the commit of the writes before it
	paused    bool            // the command read (c.args) waits for the end of a CLIENT PAUSE (pause.go)
	pauseEnd  <-chan struct{} // closed when the pause holding it ends
	committed atomic.Bool     // the commit awaited is done, with turnErrs
	turnErrs  []error

	imu      sync.Mutex
	name     string
	libName  string
	libVer   string
	lastCmd  atomic.Pointer[string] // the name of the last command received (nil: unknown)
	noEvict  bool
	noTouch  bool
	lastSeen atomic.Int64 // Unix seconds of the last command

	inf clientInfo // under imu

	// Tracking (client-side caching) state; see tracking.go. Written by
	// the client goroutine under the tracker's mutex.
	trk trackState

	// Pushes (invalidations, MONITOR lines) written by other goroutines.
	pmu      sync.Mutex
	pending  []byte
	busy     bool // the client goroutine holds replies not yet written
	pushWake chan struct{}
	pusherOn atomic.Bool
	monitor  atomic.Bool

	// lifecycle
	lmu      sync.Mutex
	closing  bool
	stopc    chan struct{} // closed when closing is set
	deadline bool          // a read deadline is set (the idle timeout)
	idleAt   time.Time     // that deadline
	done     chan struct{}
}

func newClient(s *Server, nc net.Conn) *client {
	c := &client{
		inf:      clientInfo{proto: 2, multi: -1, redir: -1},
		s:        s,
		nc:       nc,
		id:       s.nextID.Add(1),
		proto:    2,
		execN:    -1,
		created:  time.Now(),
		pushWake: make(chan struct{}, 1),
		done:     make(chan struct{}),
		stopc:    make(chan struct{}),
	}
	c.lastSeen.Store(c.created.Unix())
	if ua, ok := nc.LocalAddr().(*net.UnixAddr); ok {
		c.unix = true
		c.addr = ua.Name + ":0"
		c.laddr = c.addr
	} else {
		c.addr = addrString(nc.RemoteAddr())
		c.laddr = addrString(nc.LocalAddr())
	}
	c.authed = s.cfg.access.Password() == ""
	c.br = bufio.NewReaderSize(countingReader{c}, resp.DefaultBufferSize)
	c.rd = resp.NewReader(c.br, &resp.Options{Limits: c.limits()})
	return c
}

type countingReader struct{ c *client }

func (r countingReader) Read(p []byte) (int, error) {
	var n int
	var err error
	if r.c.looped() {
		n, err = r.c.lc.Read(p)
	} else {
		n, err = r.c.nc.Read(p)
		if n > 0 && r.c.s.cfg.idleAtomic.Load() > 0 {
			r.c.stillActive()
		}
	}
	r.c.s.stats.netIn.Add(int64(n))
	return n, err
}

// stillActive moves the idle deadline of a client served by a goroutine
// on when input arrives: the timeout is for a client that sends nothing,
// not for one sending a big command more slowly than the timeout (Redis
// counts every read as interaction). The deadline is moved only when less
// than half of it is left.
func (c *client) stillActive() {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	idle := time.Duration(c.s.cfg.idleAtomic.Load())
	if !c.deadline || c.closing || idle <= 0 {
		return
	}
	if now := time.Now(); c.idleAt.Sub(now) < idle/2 {
		c.idleAt = now.Add(idle)
		c.nc.SetReadDeadline(c.idleAt)
	}
}

// limits returns the reader limits for the client's state.
func (c *client) limits() resp.Limits {
	c.s.cfg.mu.RLock()
	bulk := c.s.cfg.protoMaxBulkLen
	c.s.cfg.mu.RUnlock()
	return resp.Limits{MaxBulkLen: bulk, AuthRequired: !c.authed}
}

// interrupt makes an idle client stop: its next (or current) wait for a
// command returns at once.
func (c *client) interrupt() {
	c.lmu.Lock()
	c.setClosing()
	c.nc.SetReadDeadline(time.Unix(1, 0))
	c.lmu.Unlock()
	c.kick()
}

// kill closes the connection from another goroutine (CLIENT KILL, Close,
// a client that does not read its pushes); the goroutine or loop serving
// it then finds it closed (or closing, if its loop reads nothing from it
// while its replies wait for it to read) and ends it.
func (c *client) kill() {
	c.lmu.Lock()
	c.setClosing()
	c.lmu.Unlock()
	c.nc.Close()
	c.kick()
}

// setClosing marks the client as told to stop; the caller holds lmu.
func (c *client) setClosing() {
	if !c.closing {
		c.closing = true
		close(c.stopc) // wakes a wait for the end of a pause
	}
}

// stopping reports whether the client was told to stop (interrupt, kill).
func (c *client) stopping() bool {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	return c.closing
}

// kick makes the event loop serving the client, if any, look at it.
func (c *client) kick() {
	if c.lc != nil {
		c.lc.Kick()
	}
}

// readyToRead reports whether the client may wait for its next command,
// arming the idle timeout.
func (c *client) readyToRead() bool {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	if c.closing {
		return false
	}
	if c.looped() {
		return true // the loop keeps the idle timeout (Idle)
	}
	idle := time.Duration(c.s.cfg.idleAtomic.Load())
	if idle > 0 && !c.monitor.Load() {
		c.idleAt = time.Now().Add(idle)
		c.nc.SetReadDeadline(c.idleAt)
		c.deadline = true
	} else if c.deadline {
		c.nc.SetReadDeadline(time.Time{})
		c.deadline = false
	}
	return true
}

// serve serves the client on the calling goroutine until it closes.
func (c *client) serve() {
	defer c.endGoroutine()
	c.serveRead()
}

// endGoroutine ends a client served by a goroutine, as its last deferred
// call.
func (c *client) endGoroutine() {
	if r := recover(); r != nil {
		c.panicked(r)
	}
	c.end()
}

// panicked counts and logs a panic recovered while serving the client,
// whose connection is then closed.
func (c *client) panicked(r any) {
	c.s.panics.Add(1)
	c.s.log.Error("redis: panic serving a client; connection closed",
		"addr", c.addr, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
}

// end ends the client: a command that panicked in its turn must not keep
// the turn lock (every other commit of the database would wait for it),
// then the connection's state goes and the connection closes.
func (c *client) end() {
	c.turn.Done()
	c.cleanup()
	if c.gone != nil {
		c.gone()
	}
}

// serveRead reads and runs commands until the connection closes.
func (c *client) serveRead() {
	for {
		if !c.readyToRead() {
			c.flush()
			return
		}
		args, err := c.rd.ReadCommand(c.args)
		if err != nil {
			c.readFailed(err)
			return
		}
		if !c.run(args) {
			return
		}
	}
}

// run runs one command read and writes the replies when they are due. It
// reports false when the connection must close.
func (c *client) run(args [][]byte) bool {
	c.args = args
	c.buffered = 0
	if c.pusherOn.Load() {
		c.pmu.Lock()
		c.busy = true
		// Pushes queued before this command (an invalidation for a
		// write already acknowledged to another client) go before its
		// reply, as in Redis; those it causes itself go after.
		c.out = append(c.out, c.pending...)
		c.pending = c.pending[:0]
		c.pmu.Unlock()
	}
	c.process(args)
	if c.leave || c.held || c.paused {
		return true // not run yet: the goroutine the loop hands the client to, or the end of a commit, runs it
	}
	c.unflushed++
	if c.closeNow {
		c.flush()
		return false
	}
	if c.looped() {
		// The loop writes the replies at the end of its turn (EndTurn).
		if len(c.out) >= flushThreshold {
			c.unflushed = 0
			return c.flush()
		}
		return true
	}
	if len(c.out) >= flushThreshold || !c.commandBuffered() {
		c.ended = time.Time{} // the next command will not start now
		if c.unflushed > 1 {
			// A pipeline's replies: let the other ready connections
			// run their commands first, so that the replies of many
			// go out back to back, as Redis writes them at the end of
			// an event loop turn. A client then finds the next reply
			// while still reading the last one instead of sleeping in
			// between, and each write costs the server no wake-up of
			// the client (an inter-processor interrupt, dear on a
			// virtual machine): redis-benchmark -P 16 with the server
			// on one core ran 20-25% faster this way.
			runtime.Gosched()
		}
		if !c.flush() {
			return false
		}
		if c.unflushed == 1 {
			// A client that sent one command likely waits for the
			// reply before it sends the next: let the other ready
			// connections run first, so that this one's next read
			// more often finds its command there instead of waiting
			// in the network poller.
			runtime.Gosched()
		}
		c.unflushed = 0
	}
	return true
}

// commandBuffered reports whether a complete command is already buffered,
// so that reading it will not wait for the network. Replies are flushed
// before any wait, and only then: a pipeline's replies go out together.
func (c *client) commandBuffered() bool {
	if c.buffered != 0 {
		return c.buffered > 0 // nothing was read since it was asked
	}
	ok := c.rd.CommandBuffered()
	c.buffered = -1
	if ok {
		c.buffered = 1
	}
	return ok
}

func (c *client) readFailed(err error) {
	var pe *resp.ProtocolError
	switch {
	case errors.As(err, &pe):
		c.replyErr("ERR " + pe.Msg)
		c.s.log.Info("redis: protocol error; closing the connection", "addr", c.addr, "err", pe.Msg)
		c.flush()
	case errors.Is(err, resp.ErrQueryTooBig):
		c.s.log.Warn("redis: query buffer limit exceeded; closing the connection", "addr", c.addr)
		c.flush()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		c.flush()
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.flush()
	default:
		c.flush()
	}
}

// flush writes the replies, then any pushes queued meanwhile. It reports
// false if the connection failed.
func (c *client) flush() bool {
	c.commitPending() // replies are sent only once their writes are committed
	c.wmu.Lock()
	defer c.wmu.Unlock()
	ok := true
	if len(c.out) > 0 {
		ok = c.write(c.out)
		if cap(c.out) > 1<<20 {
			c.out = nil
		} else {
			c.out = c.out[:0]
		}
		c.mark = 0
	}
	if c.pusherOn.Load() {
		c.pmu.Lock()
		p := c.pending
		c.pending = nil
		c.busy = false
		c.pmu.Unlock()
		if ok && len(p) > 0 {
			ok = c.write(p)
		}
	}
	return ok
}

// writeTimeout is the default for Server.writeTimeout, which bounds how
// long a client off the event loops may take no part of a write of replies
// or pushes before it is dropped. It is a liveness check, not a limit on
// the whole write: Redis cuts no normal client for reading slowly (and an
// event loop never waits on a write), so a big reply is written in pieces
// of writePiece bytes, each with the whole timeout, and a client that
// keeps reading is never cut, while one that stops reading is dropped and
// frees its replies. The deadline of a small write is moved only when less
// than half of it is left, not at every write.
const (
	writeTimeout = time.Minute
	writePiece   = 256 << 10
)

// write writes p; the caller holds wmu.
func (c *client) write(p []byte) bool {
	if c.looped() {
		err := c.lc.Write(p) // queues what the socket does not take
		if err == nil {
			c.s.stats.netOut.Add(int64(len(p)))
		}
		return err == nil
	}
	wt := c.s.writeTimeout
	if wt == 0 {
		wt = writeTimeout
	}
	for len(p) > 0 {
		k := min(len(p), writePiece)
		if since := time.Since(c.created); k == writePiece || c.wdl-since < wt/2 {
			c.nc.SetWriteDeadline(time.Now().Add(wt))
			c.wdl = since + wt
		}
		n, err := c.nc.Write(p[:k])
		c.s.stats.netOut.Add(int64(n))
		if err != nil {
			return false
		}
		p = p[k:]
	}
	return true
}

// push queues out-of-band data (a RESP3 push or a MONITOR line) to be
// written at the next reply boundary. It never blocks on the network.
func (c *client) push(p []byte) {
	c.pmu.Lock()
	if len(c.pending) > 64<<20 {
		// The client does not read: drop it rather than grow forever.
		c.pmu.Unlock()
		c.kill()
		return
	}
	c.pending = append(c.pending, p...)
	c.pmu.Unlock()
	select {
	case c.pushWake <- struct{}{}:
	default:
	}
}

// startPusher starts the goroutine that writes pushes while the client is
// idle.
func (c *client) startPusher() {
	if !c.pusherOn.CompareAndSwap(false, true) {
		return
	}
	go func() {
		for {
			select {
			case <-c.done:
				return
			case <-c.pushWake:
			}
			// wmu first (the order flush takes them in): a command that
			// starts while these pushes are being written then finds no
			// pending pushes to put before its reply, but its reply waits
			// for wmu, so it still follows them.
			c.wmu.Lock()
			c.pmu.Lock()
			if c.busy || len(c.pending) == 0 {
				// The client goroutine writes them with its replies.
				c.pmu.Unlock()
				c.wmu.Unlock()
				continue
			}
			p := c.pending
			c.pending = nil
			c.pmu.Unlock()
			ok := c.write(p)
			c.wmu.Unlock()
			if !ok {
				c.kill()
				return
			}
		}
	}()
}

func (c *client) cleanup() {
	c.s.track.disable(c)
	if c.monitor.Load() {
		c.s.monitors.remove(c)
	}
	c.st.end()
	c.endTx()
	c.unwatchAll()
	close(c.done)
	c.nc.Close()
}

// Reply modes (CLIENT REPLY), as Redis's CLIENT_REPLY_* flags.
const (
	replyOff      = 1 << iota // CLIENT REPLY OFF: no replies until ON
	replySkip                 // the command being run replies nothing
	replySkipNext             // CLIENT REPLY SKIP: the next command replies nothing
)

// muted reports whether replies are being dropped (CLIENT REPLY).
func (c *client) muted() bool { return c.rflags&(replyOff|replySkip) != 0 }

// process runs one command, dropping its reply under CLIENT REPLY OFF or
// SKIP. Pushes (invalidations) are not replies and still go out, as in
// Redis 7.2 and later.
func (c *client) process(args [][]byte) {
	if c.rflags == 0 {
		c.dispatch(args)
		if c.rflags == 0 || c.leave || c.held || c.paused {
			return
		}
	} else {
		// Muted, nothing is deferred (deferrable), so no earlier reply
		// is rebuilt after the mark; a flush meanwhile (the wait for the
		// end of a pause) moves it to 0.
		muted := c.muted()
		c.mark = len(c.out)
		c.dispatch(args)
		if c.leave || c.held || c.paused {
			return
		}
		// A reply made while muted is dropped; CLIENT REPLY ON and
		// RESET unmute first, so theirs goes out.
		if muted && c.muted() {
			c.out = c.out[:c.mark]
		}
	}
	// As Redis's resetClient: a SKIP lasts one command, which may be any
	// command read, refused, queued or run.
	c.rflags &^= replySkip
	if c.rflags&replySkipNext != 0 {
		c.rflags = c.rflags&^replySkipNext | replySkip
	}
}

// dispatch dispatches one command.
func (c *client) dispatch(args [][]byte) {
	s := c.s
	// In a pipeline, a command starts when the one before it ended: one
	// clock read per command.
	now := c.ended
	if now.IsZero() {
		now = time.Now()
	}
	c.ended = time.Time{}
	c.lastSeen.Store(now.Unix())
	if isSecurityAttack(args[0]) {
		s.log.Warn("Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: commands to Redis. This is likely due to an attacker attempting to use Cross Protocol Scripting to compromise your Redis instance. Connection aborted.", "addr", c.addr)
		c.closeNow = true
		return
	}
	cmd, badSub, lower := s.cmds.lookup(args, c.lower)
	c.lower = lower
	// As in Redis, the command a client list shows is the one being run
	// (CLIENT INFO and CLIENT LIST show themselves), or queued, or
	// refused: set at lookup, NULL for an unknown command.
	if cmd != nil {
		c.lastCmd.Store(&cmd.name)
	} else {
		c.lastCmd.Store(nil)
	}
	blind := c.deferrable(cmd, args)
	if cmd != nil && c.looped() && s.offLoop(cmd, blind) {
		// It may wait (for an fsync, say): a goroutine runs it, and
		// the connection from then on.
		c.leave = true
		return
	}
	// Deferred commits are committed before anything but another blind
	// write runs, so that every other command sees them.
	c.blind = blind
	if !blind && len(c.pend.cmds) > 0 && s.syncAlways && c.tc != nil && c.looped() {
		// Committing the writes before it would hold the loop for an
		// fsync: they go with the turn's (turnCommits), and the command
		// runs once they are durable.
		c.tc.add(c)
		c.held = true
		return
	}
	if !c.blind && c.commitPending() {
		now = time.Now() // the commit is not this command's time
	}
	if cmd == nil {
		if badSub {
			c.reject(nil, fmt.Sprintf("ERR unknown subcommand '%s'. Try %s HELP.",
				sanitize(cstr(args[1]), 128), bytes.ToUpper(args[0])))
		} else {
			c.reject(nil, unknownCommand(args))
		}
		return
	}
	if (cmd.arity > 0 && cmd.arity != len(args)) || len(args) < -cmd.arity {
		c.reject(cmd, fmt.Sprintf("ERR wrong number of arguments for '%s' command", cmd.name))
		return
	}
	if !c.authed && !cmd.has(fNoAuth) {
		c.reject(cmd, "NOAUTH Authentication required.")
		return
	}
	if c.multi != nil && cmd.has(fNoMulti) {
		c.reject(cmd, noMultiRefusal(cmd))
		return
	}
	if c.tx != nil && !txAllowed(cmd) {
		c.reject(cmd, txRefusal(cmd))
		return
	}
	if c.db == 0 && cmd.firstKey > 0 && c.hasReservedKey(cmd, args) {
		c.reject(cmd, errReservedKey)
		return
	}
	if cmd.name == "ping" || (c.multi != nil && cmd.has(fWrite)) {
		// As Redis's processCommand: while writes fail (its
		// deny_write_type, our aof_last_write_status:err), PING gets
		// the MISCONF error writes get, so that a health check that
		// pings sees it, and so does a write to be queued in MULTI,
		// which fails the transaction. HELLO, AUTH, INFO and reads go
		// on. (A write outside MULTI is tried: it fails with the same
		// error unless there is room again.)
		if werr := s.DB.WriteStatus(); werr != nil {
			c.reject(cmd, misconf(storerr.Classify(werr), werr))
			return
		}
	}
	if c.monitor.Load() && cmd.has(fWrite|fReadonly) {
		// As in Redis, where a monitor is a replica, which CLIENT PAUSE
		// does not hold: it may not touch the keyspace.
		c.reject(cmd, "ERR Replica can't interact with the keyspace")
		return
	}
	if s.pause.on.Load() && c.pauseHolds(cmd) {
		return // held on its loop (c.paused), or the client closes
	}
	if c.multi != nil && !isTxControl(cmd) {
		c.multi.queue(cmd, args)
		c.syncInfo()
		c.out = resp.AppendSimpleString(c.out, "QUEUED")
		return
	}
	c.call(cmd, args, now)
}

// hasReservedKey reports whether a key argument begins with 0xff, which
// database 0 does not allow.
func (c *client) hasReservedKey(cmd *command, args [][]byte) bool {
	c.keyIdx = cmd.keyIndexes(args, c.keyIdx[:0])
	for _, i := range c.keyIdx {
		if len(args[i]) > 0 && args[i][0] == dbPrefixByte {
			return true
		}
	}
	return false
}

func isTxControl(cmd *command) bool {
	switch cmd.name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

// reject replies an error for a command refused before execution, and
// marks a transaction being queued as failed.
func (c *client) reject(cmd *command, msg string) {
	if cmd != nil {
		cmd.rejected.Add(1)
	}
	if c.multi != nil {
		c.multi.dirty = true
	}
	if cmd != nil && cmd.name == "exec" {
		c.multi = nil
		c.unwatchAll()
		msg = "EXECABORT Transaction discarded because of: " + trimCode(msg)
	}
	c.replyErr(msg)
}

// trimCode drops the generic ERR code, as Redis's EXECABORT text does.
func trimCode(msg string) string {
	if len(msg) > 4 && msg[:4] == "ERR " {
		return msg[4:]
	}
	return msg
}

// call executes a command, received at start, with statistics, slow log
// and MONITOR output.
func (c *client) call(cmd *command, args [][]byte, start time.Time) {
	s := c.s
	c.cur = cmd
	c.errored = false
	c.exec(cmd, args, start)
	// start has a monotonic clock reading: time.Since reads that clock
	// alone, where time.Now reads it and the wall clock (two vDSO calls,
	// not cheap in a VM).
	d := time.Since(start)
	c.ended = start.Add(d)
	// As in Redis, monitors see a command once it has run (so with the
	// database a SELECT chose, EXEC after the commands it ran, and RESET
	// of a monitor), stamped with the time it ended, as Redis's
	// replicationFeedMonitors reads the clock then; and never an
	// administrative one: its arguments may be secrets (CONFIG SET
	// requirepass).
	if s.monitors.active() && !cmd.has(fAdmin) {
		s.monitors.feed(c, args, c.ended)
	}
	us := d.Microseconds()
	cmd.calls.Add(1)
	cmd.usec.Add(us)
	if c.errored {
		cmd.failed.Add(1)
	}
	cmd.metric.Observe(d, c.errored)
	s.stats.commands.Add(1)
	if !cmd.has(fSkipSlowlog) {
		s.slow.maybeAdd(s, c, args, start, d)
	}
	c.cur = nil
}

// exec runs a command's handler, committing its writes and re-running it
// if the commit conflicted with another writer. now is the time it was
// received, the store's clock for its first attempt.
func (c *client) exec(cmd *command, args [][]byte, now time.Time) {
	if cmd.name == "exec" {
		cmd.fn(c, args) // runs its own commit loop
		return
	}
	if c.tx != nil {
		if fn := txHandler(cmd.name); fn != nil {
			c.execTx(cmd, args, fn)
			return
		}
	}
	if c.trk.on && cmd.has(fReadonly) {
		c.s.track.remember(c, cmd, args)
	}
	if c.blind && (len(c.pend.cmds) > 0 || c.commandBuffered() || (c.tc != nil && c.looped())) {
		// A blind write with more of the pipeline buffered, or on an
		// event loop: its commit joins the run's (pipeline.go), or the
		// loop's turn's. It reads nothing, so it cannot conflict.
		mark := len(c.out)
		c.st.beginAt(c.s.DB, false, now)
		c.deferred = true
		cmd.fn(c, args)
		c.deferred = false
		c.deferCommit(cmd, mark)
		c.st.end()
		c.trk.afterCommand(cmd, false)
		return
	}
	record := cmd.has(fWrite)
	c.turn = c.s.DB.Turn()
	turn := &c.turn // in the client, so that it does not escape per command
	for attempt := 0; ; attempt++ {
		mark := len(c.out)
		if attempt > 0 {
			now = time.Now()
		}
		c.st.beginAt(c.s.DB, record, now)
		c.st.turn = turn
		c.st.origin = c.origin()
		cmd.fn(c, args)
		err := c.st.commit()
		c.st.end()
		if err == nil {
			break
		}
		c.out = c.out[:mark]
		if c.retry(err, attempt, turn) {
			continue
		}
		c.replyErr(c.s.engineError(err))
		break
	}
	turn.Done()
	c.trk.afterCommand(cmd, c.multi != nil)
}

// Replies.

func (c *client) replyErr(msg string) {
	c.errored = true
	if c.heldErrs != nil {
		*c.heldErrs = append(*c.heldErrs, msg)
	} else {
		c.s.countError(msg)
	}
	c.out = resp.AppendError(c.out, msg)
}

func (c *client) replyOK()                 { c.out = append(c.out, "+OK\r\n"...) }
func (c *client) replyStatus(s string)     { c.out = resp.AppendSimpleString(c.out, s) }
func (c *client) replyInt(n int64)         { c.out = resp.AppendInt(c.out, n) }
func (c *client) replyBulk(p []byte)       { c.out = resp.AppendBulk(c.out, p) }
func (c *client) replyBulkString(s string) { c.out = resp.AppendBulkString(c.out, s) }
func (c *client) replyNull()               { c.out = resp.AppendNull(c.out, c.proto) }
func (c *client) replyArray(n int)         { c.out = resp.AppendArrayHeader(c.out, n) }
func (c *client) replyMap(n int)           { c.out = resp.AppendMapHeader(c.out, n, c.proto) }
func (c *client) replySet(n int)           { c.out = resp.AppendSetHeader(c.out, n, c.proto) }
func (c *client) replyVerbatim(s string)   { c.out = resp.AppendVerbatimString(c.out, "txt", s, c.proto) }
func (c *client) replyDouble(f float64)    { c.out = resp.AppendDouble(c.out, f, c.proto) }
func (c *client) replyBool(b bool)         { c.out = resp.AppendBool(c.out, b, c.proto) }

// replyDBError replies the error of a failed read or write.
func (c *client) replyDBError(err error) { c.replyErr(c.s.engineError(err)) }

// Errors.

const (
	errSyntax      = "ERR syntax error"
	errNotInt      = "ERR value is not an integer or out of range"
	errNotFloat    = "ERR value is not a valid float"
	errNoKey       = "ERR no such key"
	errSameObject  = "ERR source and destination objects are the same"
	errDBRange     = "ERR DB index is out of range"
	errOverflow    = "ERR increment or decrement would overflow"
	errReservedKey = "ERR keys beginning with byte 0xff are reserved for other databases"
	errMaxBulk     = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
)

func (c *client) errArity() {
	c.replyErr(fmt.Sprintf("ERR wrong number of arguments for '%s' command", c.cmdName()))
}

func (c *client) errExpireTime() {
	c.replyErr(fmt.Sprintf("ERR invalid expire time in '%s' command", c.cmdName()))
}

func (c *client) cmdName() string {
	if c.cur != nil {
		return c.cur.name
	}
	return ""
}

// engineError turns an engine error into an error reply. Storage errors
// name the server's files and system errors: their replies say what
// happened as Redis says it when its AOF cannot be written (MISCONF, with
// the system's reason and no path), and the log gets the cause.
func (s *Server) engineError(err error) string {
	switch k := storerr.Classify(err); k {
	case storerr.WritesStopped:
		// The database logged the cause when it stopped writes.
		return misconf(k, err)
	case storerr.NoSpace:
		s.storeErrs.Report(s.log, "redis", k, err)
		return misconf(k, err)
	case storerr.IO:
		s.storeErrs.Report(s.log, "redis", k, err)
		return "ERR I/O error in the data files (the server's log has the cause)"
	}
	msg := err.Error()
	const p = "caskade: "
	for len(msg) >= len(p) && msg[:len(p)] == p {
		msg = msg[len(p):]
	}
	switch {
	case errors.Is(err, caskade.ErrReadOnly):
		return "READONLY You can't write against a read only database."
	case errors.Is(err, caskade.ErrNotInteger):
		return errNotInt
	case errors.Is(err, caskade.ErrOverflow):
		return errOverflow
	}
	return "ERR " + msg
}

// misconf is the MISCONF error for err, of kind storerr.WritesStopped or
// storerr.NoSpace: what Redis replies while its AOF cannot be written,
// with the system's reason and no file path.
func misconf(k storerr.Kind, err error) string {
	if k == storerr.NoSpace {
		return "MISCONF Errors writing to the data files: No space left on device" +
			" (the write was refused; writes resume once there is room)"
	}
	maybe := ""
	if errors.Is(err, caskade.ErrCommitUnknownResult) {
		maybe = "the transaction may or may not have committed; "
	}
	return "MISCONF Errors writing to the data files: " + storerr.Reason(err) +
		" (" + maybe + "writes are stopped until the server restarts; its log has the cause)"
}

// unknownCommand returns Redis's reply to an unknown command.
func unknownCommand(args [][]byte) string {
	var b bytes.Buffer
	for i := 1; i < len(args) && b.Len() < 128; i++ {
		a := cstr(args[i])
		if room := 128 - b.Len(); len(a) > room {
			a = a[:room]
		}
		b.WriteByte('\'')
		b.Write(a)
		b.WriteString("' ")
	}
	name := cstr(args[0])
	if len(name) > 128 {
		name = name[:128]
	}
	return sanitize([]byte("ERR unknown command '"+string(name)+"', with args beginning with: "), 1<<20) + sanitize(b.Bytes(), 1<<20)
}

// cstr cuts p at its first NUL byte, as C's %s formatting does.
func cstr(p []byte) []byte {
	if i := bytes.IndexByte(p, 0); i >= 0 {
		return p[:i]
	}
	return p
}

// sanitize cuts p to n bytes and replaces CR and LF by spaces.
func sanitize(p []byte, n int) string {
	if len(p) > n {
		p = p[:n]
	}
	if bytes.IndexAny(p, "\r\n") < 0 {
		return string(p)
	}
	q := slices.Clone(p)
	for i, ch := range q {
		if ch == '\r' || ch == '\n' {
			q[i] = ' '
		}
	}
	return string(q)
}

func isSecurityAttack(name []byte) bool {
	return bytes.EqualFold(name, []byte("post")) || bytes.EqualFold(name, []byte("host:"))
}

// checkPassword compares in constant time.
func checkPassword(want, got []byte) bool {
	return subtle.ConstantTimeCompare(want, got) == 1
}

// Argument parsing.

// parseInt parses an integer argument as Redis's string2ll does.
func parseInt(p []byte) (int64, bool) { return string2ll(p) }

// eqFold reports whether the argument p is the option name s, compared
// as Redis's strcasecmp compares them: ignoring ASCII case, and with p a
// C string, ending at its first NUL ("NX\x00x" is NX).
func eqFold(p []byte, s string) bool {
	p = cstr(p)
	if len(p) != len(s) {
		return false
	}
	for i := range len(p) {
		a, b := p[i], s[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
