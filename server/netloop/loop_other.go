//go:build !linux

package netloop

import "net"

// Loop is an event loop; there are none on this system.
type Loop struct{}

// Conn is a connection attached to a loop.
type Conn struct{}

// New reports ErrUnsupported: event loops need epoll.
func New(Options) (*Loop, error) { return nil, ErrUnsupported }

// Close does nothing.
func (*Loop) Close() error { return nil }

// Wrap reports ErrUnsupported.
func Wrap(net.Conn) (*Conn, error) { return nil, ErrUnsupported }

// Attach reports ErrUnsupported.
func (*Loop) Attach(*Conn, Handler) error { return ErrUnsupported }

// Read reports ErrUnsupported.
func (*Conn) Read([]byte) (int, error) { return 0, ErrUnsupported }

// Write reports ErrUnsupported.
func (*Conn) Write([]byte) error { return ErrUnsupported }

// Backlogged reports false.
func (*Conn) Backlogged() bool { return false }

// WriteErr reports nil.
func (*Conn) WriteErr() error { return nil }

// Hup reports false.
func (*Conn) Hup() bool { return false }

// Queued reports 0.
func (*Conn) Queued() int { return 0 }

// Attached reports false.
func (*Conn) Attached() bool { return false }

// Detach returns nil.
func (*Conn) Detach() []byte { return nil }

// Kick does nothing.
func (*Conn) Kick() {}
