package resp

import (
	"errors"
	"fmt"
)

var (
	// ErrProtocol is the class of every error that leaves the stream
	// impossible to resynchronise: errors.Is(err, ErrProtocol) holds for
	// every *ProtocolError and for ErrQueryTooBig. A server that gets one
	// must close the connection (after replying, for a *ProtocolError); a
	// client must discard the connection.
	ErrProtocol = errors.New("resp: protocol error")

	// ErrQueryTooBig is returned by ReadCommand when one command would
	// exceed Limits.MaxQueryLen (or UnauthMaxQueryLen while
	// Limits.AuthRequired is set). Redis closes such a connection without
	// a reply; errors.Is(ErrQueryTooBig, ErrProtocol) holds.
	ErrQueryTooBig = fmt.Errorf("%w: query buffer limit exceeded", ErrProtocol)

	// ErrNoBlob is returned by ReadBlob when the last header read was not
	// a blob header, or its body was already read.
	ErrNoBlob = errors.New("resp: no blob body to read")

	// ErrInvalidOptions is wrapped by the errors of Options.Validate and
	// Limits.Validate.
	ErrInvalidOptions = errors.New("resp: invalid options")
)

// ProtocolError is a malformed or over-limit request or reply. Msg is the
// text Redis sends for it, without the error code: a server replies
// "-ERR " + Msg + "\r\n" (for example with AppendError(b, "ERR "+e.Msg))
// and then closes the connection, as Redis does. errors.Is(err,
// ErrProtocol) holds for every *ProtocolError.
//
// The request errors carry Redis's exact texts:
//
//	Protocol error: invalid multibulk length
//	Protocol error: invalid bulk length
//	Protocol error: expected '$', got 'X'
//	Protocol error: too big inline request
//	Protocol error: too big mbulk count string
//	Protocol error: too big bulk count string
//	Protocol error: unbalanced quotes in request
//	Protocol error: unauthenticated multibulk length
//	Protocol error: unauthenticated bulk length
//
// Reply errors (seen by a client) use the same "Protocol error: " form with
// texts of this package's own.
type ProtocolError struct {
	Msg string // the error text, such as "Protocol error: invalid bulk length"
}

// Error returns e.Msg.
func (e *ProtocolError) Error() string { return e.Msg }

// Is reports whether target is ErrProtocol.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

// Request errors, worded exactly as in Redis's src/networking.c.
var (
	errInvalidMultibulkLen = &ProtocolError{"Protocol error: invalid multibulk length"}
	errInvalidBulkLen      = &ProtocolError{"Protocol error: invalid bulk length"}
	errTooBigInline        = &ProtocolError{"Protocol error: too big inline request"}
	errTooBigMbulkCount    = &ProtocolError{"Protocol error: too big mbulk count string"}
	errTooBigBulkCount     = &ProtocolError{"Protocol error: too big bulk count string"}
	errUnbalancedQuotes    = &ProtocolError{"Protocol error: unbalanced quotes in request"}
	errUnauthMultibulkLen  = &ProtocolError{"Protocol error: unauthenticated multibulk length"}
	errUnauthBulkLen       = &ProtocolError{"Protocol error: unauthenticated bulk length"}
)

// expectedDollar returns Redis's error for a bulk header that does not
// start with '$'. Like Redis (addReplyErrorFormat), a CR or LF byte is
// shown as a space so the reply cannot break framing.
func expectedDollar(c byte) error {
	if c == '\r' || c == '\n' {
		c = ' '
	}
	return &ProtocolError{"Protocol error: expected '$', got '" + string([]byte{c}) + "'"}
}

// Reply errors. Not Redis texts (Redis does not parse replies); hiredis
// words some of them differently.
var (
	errReplyLineTooLong   = &ProtocolError{"Protocol error: too big reply line"}
	errReplyNoCRLF        = &ProtocolError{"Protocol error: line not terminated by CRLF"}
	errReplyBadInt        = &ProtocolError{"Protocol error: invalid integer"}
	errReplyBadDouble     = &ProtocolError{"Protocol error: invalid double"}
	errReplyBadBool       = &ProtocolError{"Protocol error: invalid boolean"}
	errReplyBadNull       = &ProtocolError{"Protocol error: invalid null"}
	errReplyBadBigNumber  = &ProtocolError{"Protocol error: invalid big number"}
	errReplyBadVerbatim   = &ProtocolError{"Protocol error: invalid verbatim string"}
	errReplyBadAggregate  = &ProtocolError{"Protocol error: invalid aggregate length"}
	errReplyBadChunk      = &ProtocolError{"Protocol error: invalid streamed string chunk"}
	errReplyOddMap        = &ProtocolError{"Protocol error: streamed map with an odd number of elements"}
	errReplyUnexpectedEnd = &ProtocolError{"Protocol error: unexpected end of streamed aggregate"}
	errReplyTooDeep       = &ProtocolError{"Protocol error: reply nested too deeply"}
)

// invalidTypeByte returns the error for an unknown reply type byte.
func invalidTypeByte(c byte) error {
	return &ProtocolError{fmt.Sprintf("Protocol error: invalid reply type byte %q", c)}
}
