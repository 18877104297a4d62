package caskade

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound means the key has no value (never set, deleted or expired).
	ErrNotFound = errors.New("caskade: not found")
	// ErrClosed means the DB, snapshot or iterator was closed.
	ErrClosed = errors.New("caskade: closed")
	// ErrReadOnly means a write was attempted on a read-only DB.
	ErrReadOnly = errors.New("caskade: database is read-only")
	// ErrLocked means another process (or another DB in this process) has
	// the directory open.
	ErrLocked = errors.New("caskade: database directory is in use")
	// ErrInvalidOptions means Options.Validate failed.
	ErrInvalidOptions = errors.New("caskade: invalid options")
	// ErrKeyTooLarge, ErrValueTooLarge and ErrBatchTooLarge mean a write
	// exceeds Options.MaxKeySize, MaxValueSize or MaxBatchSize. Nothing of
	// the write was applied.
	ErrKeyTooLarge   = errors.New("caskade: key too large")
	ErrValueTooLarge = errors.New("caskade: value too large")
	ErrBatchTooLarge = errors.New("caskade: batch too large")
	// ErrInvalidTTL means a TTL was not positive where one is required.
	ErrInvalidTTL = errors.New("caskade: invalid TTL")
	// ErrConflict means a conditional write (Batch.Check) found a key at
	// another version than required; nothing was written. Retrying after
	// reading the key again is safe.
	ErrConflict = errors.New("caskade: conflict")
	// ErrInvalidRange means a range's end is before its begin.
	ErrInvalidRange = errors.New("caskade: inverted range")
	// ErrWritesStopped means an earlier write or fsync failed in a way that
	// may have lost data, so the database accepts no more writes until it is
	// reopened. The error wraps the original cause. Reads keep working.
	ErrWritesStopped = errors.New("caskade: writes stopped after an I/O error")
	// ErrNotEmpty means a backup or restore target directory already holds
	// files.
	ErrNotEmpty = errors.New("caskade: directory is not empty")
	// ErrCorrupt means a data or hint file is damaged. It is wrapped by a
	// *CorruptionError naming the file and offset.
	ErrCorrupt = errors.New("caskade: corrupt data")
)

// CorruptionError reports damage at a place in a file. errors.Is(err,
// ErrCorrupt) holds for it.
type CorruptionError struct {
	Path   string // the damaged file
	Offset int64  // where the damage starts
	Err    error  // what is wrong
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("caskade: corrupt data in %s at offset %d: %v", e.Path, e.Offset, e.Err)
}

// Unwrap returns ErrCorrupt and the underlying cause.
func (e *CorruptionError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }
