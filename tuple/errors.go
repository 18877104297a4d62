package tuple

import (
	"errors"
	"fmt"
	"strings"
)

// Decoding errors. Every error returned by Unpack is a *DecodeError, matches
// ErrMalformed under errors.Is, and also matches the more specific ErrTruncated
// or ErrUnknownTypeCode.
var (
	// ErrMalformed is the class of every decoding error: the input is not a
	// valid FoundationDB tuple encoding.
	ErrMalformed = errors.New("tuple: malformed encoding")

	// ErrTruncated reports that the input ends inside an element: a
	// fixed-size element (integer, float, UUID, versionstamp) with too few
	// bytes, an arbitrary-precision integer without its length byte or with
	// fewer bytes than its length says, a byte or text string without its
	// terminator, or a nested tuple without its terminator.
	ErrTruncated = errors.New("tuple: truncated element")

	// ErrUnknownTypeCode reports a type code this package does not decode,
	// such as 0xff, a reserved or deprecated code, or 0x00 0xff at the top
	// level.
	ErrUnknownTypeCode = errors.New("tuple: unknown type code")
)

// Encoding errors. Pack and Range panic with an error wrapping one of these;
// PackErr and PackWithVersionstamp return it instead.
var (
	// ErrUnsupportedType reports an element of a Go type the tuple layer
	// cannot encode (or a nil *big.Int).
	ErrUnsupportedType = errors.New("tuple: unsupported element type")

	// ErrTooLarge reports a value beyond the encoding's limits: an integer
	// whose magnitude needs more than 255 bytes, or a versionstamp offset
	// that does not fit in 32 bits.
	ErrTooLarge = errors.New("tuple: value too large to encode")

	// ErrIncompleteVersionstamp reports an incomplete versionstamp in a tuple
	// given to Pack, PackErr or Range; such tuples must be packed with
	// PackWithVersionstamp.
	ErrIncompleteVersionstamp = errors.New("tuple: incomplete versionstamp outside PackWithVersionstamp")

	// ErrNoIncompleteVersionstamp reports a tuple without an incomplete
	// versionstamp given to PackWithVersionstamp.
	ErrNoIncompleteVersionstamp = errors.New("tuple: no incomplete versionstamp in tuple")

	// ErrMultipleIncompleteVersionstamps reports a tuple (including its nested
	// tuples) holding more than one incomplete versionstamp.
	ErrMultipleIncompleteVersionstamps = errors.New("tuple: more than one incomplete versionstamp in tuple")
)

// DecodeError describes malformed input to Unpack. It matches ErrMalformed
// under errors.Is, and unwraps to Err.
type DecodeError struct {
	// Offset is the index in the input of the type code of the element that
	// could not be decoded (for an unterminated nested tuple, of its 0x05).
	Offset int
	// Code is the type code found at Offset.
	Code byte
	// Err is ErrTruncated or ErrUnknownTypeCode.
	Err error
}

// Error describes the problem and where it is.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("tuple: malformed encoding at offset %d (type code 0x%02x): %s",
		e.Offset, e.Code, strings.TrimPrefix(e.Err.Error(), "tuple: "))
}

// Unwrap returns Err.
func (e *DecodeError) Unwrap() error { return e.Err }

// Is reports whether target is ErrMalformed, so that every decoding error
// belongs to that class.
func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }
