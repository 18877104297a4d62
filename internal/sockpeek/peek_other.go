//go:build !unix

package sockpeek

import "net"

// Peeker cannot peek on this platform.
type Peeker struct{}

// New returns nil: there is no peeking on this platform.
func New(net.Conn) *Peeker { return nil }

// Peek says Unknown.
func (*Peeker) Peek() State { return Unknown }
