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
	// exceeds Options.MaxKeySize, MaxValueSize or MaxBatchSize (for a
	// transaction, TxnSizeLimit). Nothing of the write was applied.
	ErrKeyTooLarge   = &Error{Code: 2102, Name: "key_too_large", Msg: "key too large"}
	ErrValueTooLarge = &Error{Code: 2103, Name: "value_too_large", Msg: "value too large"}
	ErrBatchTooLarge = &Error{Code: 2101, Name: "transaction_too_large", Msg: "batch or transaction too large"}
	// ErrInvalidTTL means a TTL was not positive where one is required.
	ErrInvalidTTL = errors.New("caskade: invalid TTL")
	// ErrConflict means a commit did not happen because of a conflict: a
	// conditional write (Batch.Check) found a key at another version, or a
	// transaction read something that a transaction committed after its
	// read version changed. Nothing was written; retrying is safe.
	ErrConflict = &Error{Code: 1020, Name: "not_committed", Msg: "transaction not committed due to conflict with another transaction", Retryable: true}
	// ErrTransactionTooOld means a transaction outlived Options.TxnLifetime;
	// retrying with a new transaction is safe.
	ErrTransactionTooOld = &Error{Code: 1007, Name: "transaction_too_old", Msg: "transaction is too old to perform reads or be committed", Retryable: true}
	// ErrCommitUnknownResult means a transaction's commit failed at a point
	// where it may or may not have been applied: the write or fsync of its
	// records failed, so the next open may or may not find them. The error
	// wraps the cause (and ErrWritesStopped: the database takes no more
	// writes until reopened). A commit refused because writes had stopped
	// before it fails with ErrWritesStopped alone: it was not applied.
	// As FoundationDB's, it is retryable and Transact retries it: the
	// transaction must be idempotent for that to be safe.
	ErrCommitUnknownResult = &Error{Code: 1021, Name: "commit_unknown_result", Msg: "transaction may or may not have committed", Retryable: true, MaybeCommitted: true}
	// ErrTransactionDone means a transaction was used after it committed
	// or was rolled back.
	ErrTransactionDone = &Error{Code: 2017, Name: "used_during_commit", Msg: "transaction already committed or rolled back"}
	// ErrTransactionCancelled is what the watches of a transaction rolled
	// back before it committed report.
	ErrTransactionCancelled = &Error{Code: 1025, Name: "transaction_cancelled", Msg: "operation aborted because the transaction was cancelled"}
	// ErrOperationCancelled is what a watch stopped with Watch.Cancel
	// reports.
	ErrOperationCancelled = &Error{Code: 1101, Name: "operation_cancelled", Msg: "asynchronous operation cancelled"}
	// ErrTooManyWatches is what a watch reports when Tx.Watch found
	// Options.MaxWatches watches outstanding already. As in FoundationDB
	// it is not retryable (a retry would most likely meet the same limit)
	// and it fails only that watch, not its transaction.
	ErrTooManyWatches = &Error{Code: 1032, Name: "too_many_watches", Msg: "too many watches currently set"}
	// ErrNotInteger and ErrOverflow mean that Batch.AddInt found a value
	// that is not a base-10 64-bit integer, or would overflow one. Nothing
	// of the batch was applied.
	ErrNotInteger = errors.New("caskade: value is not an integer")
	ErrOverflow   = errors.New("caskade: increment would overflow")
	// ErrAccessedUnreadable means a transaction read a key whose value it
	// set with SetVersionstampedValue: the value is known only at commit.
	ErrAccessedUnreadable = &Error{Code: 1036, Name: "accessed_unreadable", Msg: "read or wrote an unreadable key"}
	// ErrInvalidOperation means a call was invalid, such as a versionstamp
	// offset outside the key or value of SetVersionstampedKey or
	// SetVersionstampedValue.
	ErrInvalidOperation = &Error{Code: 2000, Name: "client_invalid_operation", Msg: "invalid API call"}
	// ErrRangeLimitsInvalid means a range read's RangeOptions.Limit is
	// negative.
	ErrRangeLimitsInvalid = &Error{Code: 2012, Name: "range_limits_invalid", Msg: "range limits not valid"}
	// ErrInvalidRange means a range's end is before its begin.
	ErrInvalidRange = &Error{Code: 2005, Name: "inverted_range", Msg: "range begin key larger than end key"}
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

// Error is an error with a FoundationDB error code, so code written for
// FoundationDB's retry rules carries over. The package's sentinels of this
// type are compared with errors.Is; errors.As gives the code.
type Error struct {
	Code int    // FoundationDB's numeric code
	Name string // FoundationDB's name for it, such as "not_committed"
	Msg  string
	// Retryable says a retry of the whole transaction is safe (Transact
	// retries these); with MaybeCommitted, only if the transaction is
	// idempotent.
	Retryable bool
	// MaybeCommitted says the transaction may have been applied
	// (FoundationDB's maybe_committed predicate).
	MaybeCommitted bool
}

func (e *Error) Error() string { return fmt.Sprintf("caskade: %s (%d %s)", e.Msg, e.Code, e.Name) }

// IsRetryable reports whether err (or an error it wraps) says a retry of
// the transaction is safe, as FoundationDB's retry loop judges it: for
// ErrCommitUnknownResult (MaybeCommitted), only if it is idempotent.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}
