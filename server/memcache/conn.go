package memcache

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"time"
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
	sess        session
	interrupted atomic.Bool
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc}
	c.sess.init(s, newReader(nc, readBufferSize), false)
	c.sess.authed = s.Password == ""
	c.sess.r.before = c.beforeRead
	c.sess.flush = c.flush
	return c
}

// interrupt wakes the connection's blocked read so it notices Shutdown.
func (c *conn) interrupt() {
	c.interrupted.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

// beforeRead runs before every blocking read: replies are flushed first (so
// a client waiting for them is never stuck behind our read), then the idle
// deadline is set, then shutdown is checked (after setting the deadline, so
// that a concurrent interrupt's deadline is never overwritten unseen).
func (c *conn) beforeRead() error {
	if err := c.flush(); err != nil {
		return err
	}
	if t := c.s.IdleTimeout; t > 0 {
		c.nc.SetReadDeadline(time.Now().Add(t))
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
	if t := c.s.IdleTimeout; t > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(t))
	}
	n, err := c.nc.Write(ss.out)
	ss.count.add(statBytesWritten, uint64(n))
	if cap(ss.out) > maxRetainedOutput {
		ss.out = nil
	} else {
		ss.out = ss.out[:0]
	}
	return err
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

func (c *conn) serve() {
	ss := &c.sess
	defer func() {
		c.flush()
		c.nc.Close()
		ss.count.add(statBytesRead, uint64(ss.r.nread))
		ss.r.nread = 0
	}()
	defer func() {
		if p := recover(); p != nil {
			c.s.log.Error("memcache: panic serving connection", "remote", c.nc.RemoteAddr().String(), "panic", p)
		}
	}()
	unflushed := 0 // commands run since replies were last written
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
		switch {
		case err == errLineTooLong:
			c.lingerClose()
		case errors.Is(err, os.ErrDeadlineExceeded):
			if !c.interrupted.Load() && !c.s.closing.Load() {
				ss.count.add(statIdleKicks, 1)
			}
		case err == errQuit, err == io.EOF, errors.Is(err, net.ErrClosed),
			err == errLineTooLong, err == ErrServerClosed, err == io.ErrUnexpectedEOF:
		default:
			c.s.log.Debug("memcache: connection error", "remote", c.nc.RemoteAddr().String(), "err", err)
		}
		return
	}
}
