package record

import "errors"

var (
	// ErrTruncated means the input ends before the record or entry does.
	ErrTruncated = errors.New("record: truncated")
	// ErrCorrupt means a checksum, kind or length is wrong.
	ErrCorrupt = errors.New("record: corrupt")
	// ErrUnsupportedVersion means the file was written by an unknown format
	// version.
	ErrUnsupportedVersion = errors.New("record: unsupported format version")
)
