//go:build linux

package netloop

import (
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// wakeID marks the loop's wake-up pipe in epoll events.
const wakeID = -1

// epollET is EPOLLET as the uint32 of an event (syscall's is negative).
const epollET = 1 << 31

// Loop is one event loop: a goroutine waiting on an epoll set.
type Loop struct {
	epfd   int
	wakeR  int // the wake-up pipe
	wakeW  int
	opts   Options
	done   chan struct{}
	closed atomic.Bool

	mu     sync.Mutex
	slots  []slot
	free   []int32
	kicked []*Conn
	woken  bool // a byte is (about to be) in the wake-up pipe
	stop   bool

	// Owned by the loop goroutine.
	turn      []*Conn
	now       time.Time
	lastCheck time.Time
}

// slot is a connection's place in the loop; gen tells a slot's successive
// connections apart in events.
type slot struct {
	c   *Conn
	gen int32
}

// Conn is a connection attached to a loop.
type Conn struct {
	loop atomic.Pointer[Loop]
	rc   syscall.RawConn
	h    Handler
	id   int32
	gen  int32

	mu      sync.Mutex // wq, armed, werr
	wq      []byte     // output the socket has not taken yet
	armed   bool       // waiting for writability instead of input
	werr    error
	backlog atomic.Bool // len(wq) > 0
	// active is when the connection last read data or sent output (Unix
	// nanoseconds): a peer that takes its replies is not idle, as in
	// Redis, whose writes to a client count as interaction too.
	active atomic.Int64

	// Owned by the loop goroutine.
	events uint32
	inTurn bool
	more   bool // the last read filled the buffer: more input may be waiting
	// drained: the last read found the socket empty (it returned less
	// than asked, or nothing), and no input event has come since. Events
	// are edge-triggered, so input arriving later brings one; until then
	// Read need not ask the kernel, which saves a failing read(2) each
	// time the loop serves c for another reason (a kick, writability).
	drained bool
	// hup: the peer has closed its side (or the socket failed), so after
	// the bytes left to read comes an end of file that brings no event of
	// its own; a short read then asks the loop to serve c again (more)
	// instead of marking it drained, so that its handler reads that end.
	hup bool

	// The functions Read and writeSome hand to rc, made once in Wrap, and
	// their arguments and results: a function literal made at each call
	// would be allocated at each call, as rc is an interface.
	readFn, writeFn func(fd uintptr) bool
	rbuf, wbuf      []byte
	rn, wn          int
	rerr, werrno    error
}

// New starts an event loop.
func New(opts Options) (*Loop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("pipe2", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | epollET, Fd: wakeID}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p[0], &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	l := &Loop{epfd: epfd, wakeR: p[0], wakeW: p[1], opts: opts, done: make(chan struct{})}
	go l.run()
	return l, nil
}

// Close stops the loop and waits for it. Connections still attached are
// no longer served: detach or close them first.
func (l *Loop) Close() error {
	if l.closed.Swap(true) {
		<-l.done
		return nil
	}
	l.mu.Lock()
	l.stop = true
	l.wake()
	l.mu.Unlock()
	<-l.done
	return nil
}

// Wrap prepares nc to be served by a loop. It fails with ErrNotPollable
// for a connection without a file descriptor of its own.
func Wrap(nc net.Conn) (*Conn, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, ErrNotPollable
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, ErrNotPollable
	}
	c := &Conn{rc: rc}
	c.readFn, c.writeFn = c.readFd, c.writeFd
	return c, nil
}

// Attach makes the loop serve c with h. The loop may call h at once, from
// its goroutine.
func (l *Loop) Attach(c *Conn, h Handler) error {
	c.h = h
	c.active.Store(time.Now().UnixNano())
	l.mu.Lock()
	if l.stop {
		l.mu.Unlock()
		return net.ErrClosed
	}
	var id int32
	if n := len(l.free); n > 0 {
		id = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		id = int32(len(l.slots))
		l.slots = append(l.slots, slot{})
	}
	l.slots[id].gen++
	l.slots[id].c = c
	c.id, c.gen = id, l.slots[id].gen
	c.loop.Store(l)
	l.mu.Unlock()
	var cerr error
	err := c.rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET, Fd: c.id, Pad: c.gen}
		cerr = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err == nil && cerr != nil {
		err = os.NewSyscallError("epoll_ctl", cerr)
	}
	if err != nil {
		c.loop.Store(nil)
		l.release(c)
		return err
	}
	return nil
}

// release frees c's slot.
func (l *Loop) release(c *Conn) {
	l.mu.Lock()
	if l.slots[c.id].c == c {
		l.slots[c.id].c = nil
		l.free = append(l.free, c.id)
	}
	l.mu.Unlock()
}

// wake writes to the wake-up pipe; l.mu is held, so that the loop cannot
// have closed it (a full pipe already wakes the loop).
func (l *Loop) wake() {
	if l.wakeW >= 0 {
		var b = [1]byte{1}
		syscall.Write(l.wakeW, b[:])
	}
}

// idleTimeout returns the current idle timeout.
func (l *Loop) idleTimeout() time.Duration {
	if l.opts.IdleTimeout == nil {
		return 0
	}
	return l.opts.IdleTimeout()
}

func (l *Loop) run() {
	// The loop waits for its epoll set in Go's network poller, as for a
	// socket, rather than in a blocking epoll_wait: a goroutine blocked in
	// a system call holds a thread that the scheduler must replace, and
	// one that returns must find a processor again, which cost a quarter
	// of the requests of a one-request-at-a-time client.
	ep := os.NewFile(uintptr(l.epfd), "epoll")
	defer func() {
		ep.Close()
		l.mu.Lock()
		syscall.Close(l.wakeR)
		syscall.Close(l.wakeW)
		l.wakeW = -1
		l.mu.Unlock()
		close(l.done)
	}()
	rc, err := ep.SyscallConn()
	if err != nil {
		panic("netloop: epoll descriptor: " + err.Error())
	}
	evs := make([]syscall.EpollEvent, 256)
	var drain [64]byte
	var deadline time.Time
	var again []*Conn // connections with input left after their last read
	n := 0
	// Read calls poll again each time the poller finds the set ready; the
	// set is empty when it returns false, so no event can be missed while
	// the goroutine sleeps. The connections are edge-triggered:
	// level-triggered ones would be put back in the set after each wait,
	// and wake the poller once more every turn. (Made once: a function
	// literal passed to rc at each turn would be allocated each time.)
	poll := func(fd uintptr) bool {
		k, err := epollPoll(int(fd), evs)
		if err != nil {
			return err != syscall.EINTR // EINTR: try again
		}
		n = k
		return k > 0 || len(again) > 0
	}
	for {
		idle := l.idleTimeout()
		if idle > 0 && (deadline.IsZero() || !l.now.Before(deadline)) {
			// Check about four times per timeout, to close idle
			// connections at most a quarter late.
			deadline = time.Now().Add(min(max(idle/4, time.Millisecond), time.Second))
			ep.SetReadDeadline(deadline)
		} else if idle == 0 && !deadline.IsZero() {
			deadline = time.Time{}
			ep.SetReadDeadline(deadline)
		}
		n = 0
		if rc.Read(poll) != nil {
			// A deadline that passed while the loop was busy (a turn
			// longer than it, a stall) ends Read before it polls: poll
			// now, so that the input that came meanwhile is served
			// before the idle check below takes its connections for
			// idle ones.
			poll(uintptr(l.epfd))
		}
		l.now = time.Now()
		l.mu.Lock()
		for i := range n {
			ev := &evs[i]
			if ev.Fd == wakeID {
				for {
					if k, _ := syscall.Read(l.wakeR, drain[:]); k < len(drain) {
						break
					}
				}
				l.woken = false
				continue
			}
			s := &l.slots[ev.Fd]
			if s.c == nil || s.gen != ev.Pad {
				continue // a connection detached since
			}
			c := s.c
			c.events |= ev.Events
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
				c.drained = false
			}
			if ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
				c.hup = true
			}
			if !c.inTurn {
				c.inTurn = true
				l.turn = append(l.turn, c)
			}
		}
		for _, c := range l.kicked {
			if c.loop.Load() == l && !c.inTurn {
				c.inTurn = true
				l.turn = append(l.turn, c)
			}
		}
		clear(l.kicked)
		l.kicked = l.kicked[:0]
		for i, c := range again {
			if c.loop.Load() == l && !c.inTurn {
				c.inTurn = true
				l.turn = append(l.turn, c)
			}
			again[i] = nil
		}
		again = again[:0]
		stop := l.stop
		l.mu.Unlock()

		for _, c := range l.turn {
			if c.events&syscall.EPOLLOUT != 0 {
				c.drain(l.now)
			}
			c.events = 0
			if c.loop.Load() == l {
				c.more = false
				c.h.Serve()
				if c.more && c.loop.Load() == l {
					again = append(again, c)
				}
			}
		}
		if l.opts.TurnDone != nil && len(l.turn) > 0 {
			l.opts.TurnDone()
		}
		for i, c := range l.turn {
			c.inTurn = false
			if c.loop.Load() == l {
				c.h.EndTurn()
			}
			l.turn[i] = nil
		}
		l.turn = l.turn[:0]
		if idle > 0 && l.now.Sub(l.lastCheck) >= idle/4 {
			l.lastCheck = l.now
			l.expire(idle)
		}
		if stop {
			return
		}
	}
}

// expire calls Idle for the connections that read nothing for idle.
func (l *Loop) expire(idle time.Duration) {
	var old []*Conn
	l.mu.Lock()
	for _, s := range l.slots {
		if s.c != nil && l.now.Sub(time.Unix(0, s.c.active.Load())) >= idle {
			old = append(old, s.c)
		}
	}
	l.mu.Unlock()
	for _, c := range old {
		if c.loop.Load() == l {
			c.h.Idle()
		}
	}
}

// Read reads what is waiting, without blocking: ErrWouldBlock if nothing
// is, io.EOF once the peer has closed its side.
func (c *Conn) Read(p []byte) (int, error) {
	var n int
	var errno error
	c.rbuf = p
	for {
		// Through rc even when drained: a connection closed meanwhile
		// (to end it from outside) must fail here, not seem idle.
		if err := c.rc.Read(c.readFn); err != nil {
			c.rbuf = nil
			return 0, err
		}
		if n, errno = c.rn, c.rerr; errno != syscall.EINTR {
			break
		}
	}
	c.rbuf = nil
	switch {
	case errno == syscall.EAGAIN:
		c.drained = true
		return 0, ErrWouldBlock
	case errno != nil:
		return 0, os.NewSyscallError("read", errno)
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	if l := c.loop.Load(); l != nil {
		c.active.Store(l.now.UnixNano())
	}
	switch {
	case n == len(p) || c.hup:
		// Events are edge-triggered: the loop serves c again without
		// one, as what is left (more input, or the end of it) brings
		// none.
		c.more = true
	default:
		c.drained = true
	}
	return n, nil
}

func (c *Conn) readFd(fd uintptr) bool {
	if c.drained && len(c.rbuf) > 0 {
		c.rn, c.rerr = 0, syscall.EAGAIN
		return true
	}
	c.rn, c.rerr = rawRead(int(fd), c.rbuf)
	return true
}

// Write sends p, queueing what the socket does not take at once; the loop
// sends the queue as the socket drains. It fails once a write has failed.
// Writes from several goroutines must be serialised by the caller.
func (c *Conn) Write(p []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if len(c.wq) > 0 {
		c.wq = append(c.wq, p...)
		return nil
	}
	n, err := c.writeSome(p)
	if err != nil {
		c.werr = err
		return err
	}
	if n > 0 {
		c.active.Store(time.Now().UnixNano())
	}
	if n < len(p) {
		c.wq = append(c.wq, p[n:]...)
		c.backlog.Store(true)
		c.arm(true)
	}
	return c.werr // set if arm failed
}

// writeSome writes as much of p as the socket takes now; c.mu is held.
func (c *Conn) writeSome(p []byte) (int, error) {
	done := 0
	var err error
	for done < len(p) && err == nil {
		c.wbuf = p[done:]
		if err = c.rc.Write(c.writeFn); err != nil {
			break
		}
		switch errno := c.werrno; errno {
		case nil:
			done += c.wn
		case syscall.EINTR:
		case syscall.EAGAIN:
			c.wbuf = nil
			return done, nil
		default:
			err = os.NewSyscallError("write", errno)
		}
	}
	c.wbuf = nil
	return done, err
}

func (c *Conn) writeFd(fd uintptr) bool {
	c.wn, c.werrno = rawWrite(int(fd), c.wbuf)
	return true
}

// arm makes the loop wait for writability (out) or for input; c.mu is
// held. Input is not waited for while output is queued: the handler reads
// nothing more until the client has taken its replies.
func (c *Conn) arm(out bool) {
	l := c.loop.Load()
	if l == nil || c.armed == out {
		return
	}
	c.armed = out
	events := uint32(syscall.EPOLLIN | syscall.EPOLLRDHUP | epollET)
	if out {
		events = syscall.EPOLLOUT | epollET
	}
	var errno error
	err := c.rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: events, Fd: c.id, Pad: c.gen}
		errno = syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev)
	})
	if err == nil && errno != nil {
		err = os.NewSyscallError("epoll_ctl", errno)
	}
	if err != nil && c.werr == nil {
		// The loop would never serve c again: fail its writes, so that
		// its handler closes it.
		c.werr = err
	}
}

// drain sends queued output (on the loop, when the socket is writable;
// now is the loop's time).
func (c *Conn) drain(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.wq) == 0 || c.werr != nil {
		return
	}
	n, err := c.writeSome(c.wq)
	if err != nil {
		c.werr = err
		return
	}
	if n > 0 {
		c.active.Store(now.UnixNano())
	}
	c.wq = c.wq[:copy(c.wq, c.wq[n:])]
	if len(c.wq) == 0 {
		if cap(c.wq) > 1<<20 {
			c.wq = nil
		}
		c.backlog.Store(false)
		c.arm(false)
	}
}

// Backlogged reports whether output is queued: the handler should then
// leave further input waiting until it has drained.
func (c *Conn) Backlogged() bool { return c.backlog.Load() }

// Queued returns the number of output bytes queued, waiting for the
// socket to take them.
func (c *Conn) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.wq)
}

// WriteErr reports the error of a failed write, if any.
func (c *Conn) WriteErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.werr
}

// Hup reports whether the peer has closed its side, or the socket failed
// (an EPOLLRDHUP, EPOLLHUP or EPOLLERR event came), whether or not the
// input before that end was read. Call it from the loop (in a Handler
// method).
func (c *Conn) Hup() bool { return c.hup }

// Attached reports whether c is still served by its loop.
func (c *Conn) Attached() bool { return c.loop.Load() != nil }

// Detach takes c off its loop, for its handler to go on serving it from a
// goroutine with the ordinary blocking calls. It returns the output still
// queued, which the new owner must write first. Call it from the loop (in
// a Handler method) or when nothing else serves c.
func (c *Conn) Detach() []byte {
	l := c.loop.Swap(nil)
	if l == nil {
		return nil
	}
	c.rc.Control(func(fd uintptr) {
		syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil)
	})
	l.release(c)
	c.mu.Lock()
	q := c.wq
	c.wq = nil
	c.backlog.Store(false)
	c.mu.Unlock()
	return q
}

// Kick makes the loop call Serve soon (from any goroutine): after closing
// the connection from outside, say, so that its handler finds out.
func (c *Conn) Kick() {
	l := c.loop.Load()
	if l == nil {
		return
	}
	l.mu.Lock()
	l.kicked = append(l.kicked, c)
	if !l.woken {
		l.woken = true
		l.wake()
	}
	l.mu.Unlock()
}

// The loop's system calls on its sockets and on its epoll set never block
// (the sockets are non-blocking and epoll_wait is given no timeout), so
// they are made as raw system calls, which the scheduler does not see:
// through syscall.Read and the like, each one would mark the goroutine's
// processor as in a system call, and the runtime's monitor, finding it
// there on a busy machine, would hand the processor to another thread
// (a wake-up and two context switches) for a call that was about to
// return anyway.

func rawRead(fd int, p []byte) (int, error) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

func rawWrite(fd int, p []byte) (int, error) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// epollPoll returns the events waiting in the epoll set epfd, without
// waiting for any.
func epollPoll(epfd int, evs []syscall.EpollEvent) (int, error) {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(unsafe.SliceData(evs))), uintptr(len(evs)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
