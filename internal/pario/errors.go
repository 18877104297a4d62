package pario

import "errors"

var (
	// ErrInvalidOptions is returned (wrapped, with the offending field) by
	// Options.Validate and by every function given invalid Options.
	ErrInvalidOptions = errors.New("pario: invalid options")
	// ErrInvalidSize is returned (wrapped) for a negative size or offset, or
	// when offset plus length would overflow an int64.
	ErrInvalidSize = errors.New("pario: invalid size or offset")
	// ErrTooLarge is returned (wrapped) by ReadFull and ReadPath when the size
	// does not fit in one []byte on this platform, and by ReadAll when the
	// number of buffers does not fit in an int.
	ErrTooLarge = errors.New("pario: size too large for one buffer")
)
