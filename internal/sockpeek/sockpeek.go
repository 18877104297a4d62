// Package sockpeek tells what waits on a connection's socket (nothing,
// input, or the end of the connection) without reading it or blocking.
// Both the client (is an idle pooled connection still open?) and the
// server (did a client held by CLIENT PAUSE hang up?) need it.
package sockpeek

// State is what a peek found.
type State int

const (
	Unknown State = iota // the connection is no socket, or not on this platform
	Empty                // open, nothing to read
	Input                // open, with input to read
	Closed               // the peer closed it, or it failed
)
