package memcache

import "errors"

var (
	// ErrServerClosed is returned by Serve and ServeUDP after Shutdown or
	// Close.
	ErrServerClosed = errors.New("memcache: server closed")
	// ErrUDPWithPassword is returned by ServeUDP when Password is set: UDP
	// requests cannot authenticate, so serving them would bypass it.
	ErrUDPWithPassword = errors.New("memcache: UDP cannot be served when a password is set")
	// ErrNoDB is returned by Serve and ServeUDP when Server.DB is nil.
	ErrNoDB = errors.New("memcache: Server.DB is nil")

	errLineTooLong = errors.New("memcache: line too long")
	errQuit        = errors.New("memcache: quit")
)
