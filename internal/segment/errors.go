package segment

import (
	"errors"
	"fmt"
)

// ErrTruncateFailed means a failed append could not be cut back, so the
// file may end in a partial record: the writer must stop using it.
var ErrTruncateFailed = errors.New("segment: cannot remove a partial append")

// CorruptError reports damage at a place in a file.
type CorruptError struct {
	Path   string
	Offset int64
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s at offset %d: %v", e.Path, e.Offset, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// ErrFileTooLarge means a data file is larger than any data file may be
// (4 GiB: the key directory's offsets are 32-bit).
var ErrFileTooLarge = errors.New("segment: data file larger than 4 GiB")
