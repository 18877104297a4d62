package memcache

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade/server/netloop"
)

// readBufferSize is the initial read buffer of a TCP connection; values
// that do not fit are read into their own buffers.
const readBufferSize = 16 << 10

// maxRetainedOutput is the output buffer capacity kept between flushes.
const maxRetainedOutput = 256 << 10

// conn is one TCP client.
type conn struct {
	s           *Server
	nc          net.Conn
	lc          *netloop.Conn // the connection's place on an event loop (loop.go), if it has one
	gone        func()        // called once the connection has ended
	tc          *turnCommits  // the commits at the end of its event loop's turn, if it has one
	tcQueued    bool          // c is in tc's list
	sess        session
	interrupted atomic.Bool
	werr        error // the write that failed, on a goroutine: nothing is written after it
}

func newConn(s *Server, nc net.Conn, lc *netloop.Conn) *conn {
	c := &conn{s: s, nc: nc, lc: lc}
	c.sess.init(s, newReader(connSource{c}, readBufferSize), false)
	c.sess.authed = s.access.Password() == ""
	c.sess.r.before = c.beforeRead
	c.sess.flush = c.flush
	c.sess.backlogged = func() bool { return c.looped() && c.lc.Backlogged() }
	return c
}

// connSource reads a connection's input from its loop while it has one,
// else from the socket, blocking.
type connSource struct{ c *conn }

func (r connSource) Read(p []byte) (int, error) {
	if r.c.looped() {
		return r.c.lc.Read(p)
	}
	return r.c.nc.Read(p)
}

// interrupt wakes the connection's blocked read so it notices Shutdown.
func (c *conn) interrupt() {
	c.interrupted.Store(true)
	c.nc.SetReadDeadline(time.Now())
	c.kick()
}

// kill closes the connection from another goroutine.
func (c *conn) kill() {
	c.nc.Close()
	c.kick()
}

// kick makes the event loop serving the connection, if any, look at it.
func (c *conn) kick() {
	if c.lc != nil {
		c.lc.Kick()
	}
}

// beforeRead runs before every blocking read: replies are flushed first (so
// a client waiting for them is never stuck behind our read), then the idle
// deadline is set, then shutdown is checked (after setting the deadline, so
// that a concurrent interrupt's deadline is never overwritten unseen). As
// in memcached, only a connection waiting for a command can be idle: a
// data block's reads have no deadline.
func (c *conn) beforeRead(data bool) error {
	c.sess.ended = time.Time{} // the next command will not start now
	if err := c.flush(); err != nil {
		return err
	}
	if t := c.s.IdleTimeout; t > 0 {
		if data {
			c.nc.SetReadDeadline(time.Time{})
		} else {
			c.nc.SetReadDeadline(time.Now().Add(t))
		}
	}
	if c.s.closing.Load() {
		return ErrServerClosed
	}
	return nil
}

// flush commits the deferred sets and writes the pending replies.
func (c *conn) flush() error {
	ss := &c.sess
	ss.commitPending()
	if len(ss.out) == 0 {
		return nil
	}
	if c.looped() {
		// The loop queues what the socket does not take.
		err := c.lc.Write(ss.out)
		if err == nil {
			ss.count.add(statBytesWritten, uint64(len(ss.out)))
		}
		ss.out = ss.out[:0]
		if cap(ss.out) > maxRetainedOutput {
			ss.out = nil
		}
		return err
	}
	n, err := c.write(ss.out)
	ss.count.add(statBytesWritten, uint64(n))
	if cap(ss.out) > maxRetainedOutput {
		ss.out = nil
	} else {
		ss.out = ss.out[:0]
	}
	return err
}

// write sends p from the connection's goroutine. IdleTimeout bounds the
// time the client takes none of it, not the whole write: a client that
// reads a large reply slowly is not idle (as on an event loop). Once a
// write has failed nothing more is written: the reply it cut cannot be
// followed by the next one.
func (c *conn) write(p []byte) (int, error) {
	if c.werr != nil {
		return 0, c.werr
	}
	t := c.s.IdleTimeout
	sent := 0
	for {
		if t > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(t))
		}
		n, err := c.nc.Write(p[sent:])
		sent += n
		if err == nil {
			return sent, nil
		}
		if n > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			continue // the client took some: not idle
		}
		c.werr = err
		return sent, err
	}
}

// lingerClose sends the pending replies and a FIN, then reads and drops
// what the client is still sending for a moment, so that closing does not
// reset the connection before the client has read the error.
func (c *conn) lingerClose() {
	if c.flush() != nil {
		return
	}
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	io.Copy(io.Discard, io.LimitReader(c.nc, 8<<20))
}

// serve serves the connection on the calling goroutine until it ends.
func (c *conn) serve() {
	defer c.endGoroutine()
	c.serveRead()
}

// endGoroutine ends a connection served by a goroutine, as its last
// deferred call.
func (c *conn) endGoroutine() {
	if p := recover(); p != nil {
		c.panicked(p)
	}
	c.end()
}

// panicked logs a panic recovered while serving the connection, which is
// then closed.
func (c *conn) panicked(p any) {
	c.s.log.Error("memcache: panic serving connection", "remote", c.nc.RemoteAddr().String(),
		"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
}

// end writes the last replies, closes the connection and counts it gone.
func (c *conn) end() {
	ss := &c.sess
	c.flush()
	c.nc.Close()
	ss.count.add(statBytesRead, uint64(ss.r.nread))
	ss.r.nread = 0
	if c.gone != nil {
		c.gone()
	}
}

// serveRead reads and runs commands until the connection must end.
func (c *conn) serveRead() {
	ss := &c.sess
	unflushed := 0 // commands run since replies were last written
	if ss.resume != nil {
		// A multi-get its event loop stopped part way (leaveLoop).
		ss.finishResume()
		unflushed++
	}
	for {
		err := ss.step()
		if ss.r.nread > 0 {
			ss.count.add(statBytesRead, uint64(ss.r.nread))
			ss.r.nread = 0
		}
		if err == nil {
			unflushed++
			if ss.r.buffered() == 0 || len(ss.out) >= maxRetainedOutput {
				if unflushed > 1 {
					// A pipeline's replies: let the other ready
					// connections run first, so that replies go out back
					// to back and clients are woken less (see the Redis
					// front end's serve loop).
					runtime.Gosched()
				}
				if c.flush() != nil {
					return
				}
				if unflushed == 1 {
					// One command, likely one client waiting for its
					// reply: let the other ready connections run first,
					// so that this one's next read more often finds a
					// command instead of waiting in the network poller.
					runtime.Gosched()
				}
				unflushed = 0
			}
			continue
		}
		c.failed(err)
		return
	}
}

// failed handles the error that ends a connection, before end.
func (c *conn) failed(err error) {
	switch {
	case err == errLineTooLong:
		c.lingerClose()
	case errors.Is(err, os.ErrDeadlineExceeded):
		if !c.interrupted.Load() && !c.s.closing.Load() {
			c.sess.count.add(statIdleKicks, 1)
		}
	case err == errQuit, err == io.EOF, errors.Is(err, net.ErrClosed),
		err == errLineTooLong, err == ErrServerClosed, err == io.ErrUnexpectedEOF:
	default:
		c.s.log.Debug("memcache: connection error", "remote", c.nc.RemoteAddr().String(), "err", err)
	}
}
