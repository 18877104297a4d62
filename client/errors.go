package client

import (
	"errors"
	"strings"
)

// Nil is returned for a missing value: GET of a missing key, SET NX of an
// existing key, TTL of a missing key. Compare with errors.Is(err, Nil).
var Nil = errors.New("client: nil")

var (
	// ErrClosed is returned by calls on a Client or Conn that was closed.
	ErrClosed = errors.New("client: closed")
	// ErrInvalidOptions is wrapped by the errors of Options.Validate.
	ErrInvalidOptions = errors.New("client: invalid options")
	// ErrMaybeExecuted is matched by errors.Is for a *ConnError whose
	// command may have executed on the server.
	ErrMaybeExecuted = errors.New("client: command may have executed")
	// ErrTxFailed is returned by a MULTI/EXEC transaction (TxPipelined in
	// Watch) when EXEC returned a null reply because a watched key
	// changed; nothing of it was applied. Watch retries it.
	ErrTxFailed = errors.New("client: transaction failed: a watched key changed")
	// ErrStateful is returned when a command that changes the state of a
	// connection (SELECT, WATCH, MULTI, SUBSCRIBE, CSK.BEGIN, CLIENT
	// TRACKING, ...) is sent through the Client's shared connections. Use
	// a Conn, Watch, TxPipelined or Transact, or set the state in Options.
	ErrStateful = errors.New("client: command changes connection state; use a dedicated Conn")
	// ErrPendingReplies is returned by Conn.Do and by pipelines on a Conn
	// while commands appended with Conn.Append have replies not yet
	// received.
	ErrPendingReplies = errors.New("client: replies pending; call Receive first")
	// ErrNoReply is returned by Conn.Receive when no command awaits a
	// reply.
	ErrNoReply = errors.New("client: no command awaits a reply")
	// ErrNoPush is returned by Conn.ReceivePush on a RESP2 connection,
	// which carries no push data.
	ErrNoPush = errors.New("client: push data needs RESP3 (the server refused HELLO 3, or Options.Protocol is 2)")
	// ErrReplyOwed is matched by errors.Is for a *ConnError of
	// Conn.Receive whose Owed is set: the wait ended (the context, or
	// ReadTimeout) before any of the reply was read, so the reply is
	// still owed and the next Receive returns it.
	ErrReplyOwed = errors.New("client: reply still owed")
	// ErrArgType is wrapped by the error for a command argument of a type
	// that cannot be encoded.
	ErrArgType = errors.New("client: unsupported argument type")
	// ErrUnexpectedReply is wrapped by the error for a reply of a type
	// the called method cannot convert.
	ErrUnexpectedReply = errors.New("client: unexpected reply type")
	// ErrUnknownCommand is matched by errors.Is for a server error
	// "ERR unknown command ..." (a command the server does not have).
	ErrUnknownCommand = errors.New("client: unknown command")
)

// Error is an error reply from the server. Prefix is its first word, the
// error code, such as "ERR", "WRONGTYPE" or "CONFLICT"; Msg is the rest of
// the text. Error returns the text as the server sent it.
//
// errors.Is(err, target) holds for a target *Error with an empty Msg and the
// same Prefix (the sentinels below), and for ErrUnknownCommand when the
// server does not know the command.
type Error struct {
	Prefix string
	Msg    string
}

// Sentinel server errors, matched by prefix with errors.Is.
var (
	ErrConflict   = &Error{Prefix: "CONFLICT"}  // caskade: a transaction conflicted (retryable)
	ErrTooOld     = &Error{Prefix: "TOOOLD"}    // caskade: a transaction outlived its lifetime (retryable)
	ErrWrongType  = &Error{Prefix: "WRONGTYPE"} // operation against a key of the wrong type
	ErrNoAuth     = &Error{Prefix: "NOAUTH"}    // authentication required
	ErrWrongPass  = &Error{Prefix: "WRONGPASS"} // bad user name or password
	ErrNoProto    = &Error{Prefix: "NOPROTO"}   // HELLO with an unsupported protocol
	ErrExecAbort  = &Error{Prefix: "EXECABORT"} // EXEC of a transaction with a rejected command
	ErrReadOnly   = &Error{Prefix: "READONLY"}  // write to a read-only replica
	ErrBusy       = &Error{Prefix: "BUSY"}      // the server is busy running a script
	ErrLoading    = &Error{Prefix: "LOADING"}   // the server is loading its data
	ErrDenied     = &Error{Prefix: "DENIED"}    // protected mode refused the connection
	ErrGenericErr = &Error{Prefix: "ERR"}       // any error with the generic ERR code
)

// Error returns the error text as the server sent it.
func (e *Error) Error() string {
	if e.Msg == "" {
		return e.Prefix
	}
	return e.Prefix + " " + e.Msg
}

// Is reports whether target is a sentinel *Error with e's Prefix, or
// ErrUnknownCommand for an unknown-command error.
func (e *Error) Is(target error) bool {
	if t, ok := target.(*Error); ok {
		return t.Msg == "" && t.Prefix == e.Prefix
	}
	if target == ErrUnknownCommand {
		return e.Prefix == "ERR" && strings.HasPrefix(e.Msg, "unknown command")
	}
	return false
}

// Retryable reports whether the error says a transaction may simply be run
// again: CONFLICT and TOOOLD.
func (e *Error) Retryable() bool {
	return e.Prefix == "CONFLICT" || e.Prefix == "TOOOLD"
}

// parseError splits an error reply's text into an *Error.
func parseError(s string) *Error {
	prefix, msg, _ := strings.Cut(s, " ")
	return &Error{Prefix: prefix, Msg: msg}
}

// ConnError is a failure of the connection, not a server reply: dialing,
// the handshake, a write, a read, or the caller giving up while waiting for
// a reply (Err is then the context's error). MaybeExecuted says whether the
// command may have reached the server and executed: false means it surely
// did not, so it is safe to send again. errors.Is(err, ErrMaybeExecuted)
// holds when MaybeExecuted is set, and errors.Is(err, context.DeadlineExceeded)
// and the like hold through Unwrap. Owed is set only by Conn.Receive, when
// the reply it waited for is still owed (errors.Is(err, ErrReplyOwed)).
type ConnError struct {
	Op            string // "dial", "handshake", "write", "read", "wait" or "closed"
	Addr          string // the server address
	MaybeExecuted bool
	Owed          bool
	Err           error
}

// Error describes the failure and whether the command may have executed.
func (e *ConnError) Error() string {
	s := "client: " + e.Op + " " + e.Addr + ": " + e.Err.Error()
	if e.MaybeExecuted {
		s += " (the command may have executed)"
	} else {
		s += " (the command was not executed)"
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *ConnError) Unwrap() error { return e.Err }

// Is reports whether target is ErrMaybeExecuted and the command may have
// executed, or ErrReplyOwed and the reply is still owed.
func (e *ConnError) Is(target error) bool {
	return target == ErrMaybeExecuted && e.MaybeExecuted ||
		target == ErrReplyOwed && e.Owed
}

// Timeout reports whether the cause was a timeout.
func (e *ConnError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// isRetryableTx reports whether a transaction that failed with err may be
// run again from the start.
func isRetryableTx(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable()
	}
	return false
}
