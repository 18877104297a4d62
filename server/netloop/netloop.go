// Package netloop serves many network connections from a few event loops,
// the way Redis and memcached do, instead of one goroutine blocked in Read
// per connection.
//
// With a goroutine per connection, every request that arrives wakes its
// goroutine through Go's network poller, and with more than one processor
// the scheduler hands it to another thread (a futex wake-up and two context
// switches), then the goroutine reads until EAGAIN before it sleeps again.
// A loop waits on epoll for all of its connections at once and serves each
// ready one in turn on its own goroutine, with one read and, at the end of
// the turn, one write per connection: on a 2-core machine the Redis
// front end carried 10-20% more single-request round trips that way.
//
// A connection's Handler runs on the loop's goroutine, so it must not block
// for long: a handler that is about to (a command waiting for an fsync, a
// command bigger than its buffer) detaches the connection and goes on
// serving it from a goroutine of its own. Writes never block the loop:
// what the socket does not take at once is queued and sent as it drains,
// and the handler reads nothing more from a connection with queued output
// (Backlogged), so a client that does not read its replies slows only
// itself.
//
// Loops exist on Linux only (epoll); elsewhere New reports ErrUnsupported
// and servers keep a goroutine per connection.
package netloop

import (
	"errors"
	"time"
)

// ErrWouldBlock is returned by Conn.Read when no input is waiting.
var ErrWouldBlock = errors.New("netloop: no input waiting")

// ErrUnsupported is returned by New where event loops do not exist.
var ErrUnsupported = errors.New("netloop: event loops are not supported on this system")

// ErrNotPollable is returned by Loop.Add for a connection without a file
// descriptor of its own (a TLS connection, net.Pipe).
var ErrNotPollable = errors.New("netloop: connection has no pollable file descriptor")

// Handler serves one connection from its loop. Its methods run on the
// loop's goroutine, one connection at a time.
type Handler interface {
	// Serve is called when the connection has input (or an error) waiting,
	// when output it had queued has drained, and after Kick. It reads with
	// Conn.Read, which never blocks.
	Serve()
	// EndTurn is called once a turn of the loop has served every ready
	// connection, for each connection served in it that is still
	// attached: the place to write replies, so that those of many
	// connections leave back to back.
	EndTurn()
	// Idle is called when the connection has neither read anything nor
	// sent any output for the loop's idle timeout.
	Idle()
}

// Options configure a Loop.
type Options struct {
	// IdleTimeout, if not nil, returns the current idle timeout (0: none);
	// it is asked once per turn.
	IdleTimeout func() time.Duration
	// TurnDone, if not nil, is called on the loop's goroutine once every
	// ready connection of a turn has been served, before their EndTurn
	// calls: where a server can commit the writes of the whole turn at
	// once, before the replies go out.
	TurnDone func()
}
