package caskade

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// A commit whose write or fsync fails may or may not be found at the next
// open: its result is unknown (1021), retryable and maybe committed, as in
// FoundationDB. A commit refused because writes had already stopped was
// never written: it fails with ErrWritesStopped alone, which is neither.
func TestCommitUnknownResultOnlyWhenWritten(t *testing.T) {
	for _, op := range []errorfs.Op{errorfs.OpSync, errorfs.OpWrite} {
		t.Run(op.String(), func(t *testing.T) { testCommitUnknownResult(t, op) })
	}
}

func testCommitUnknownResult(t *testing.T, failing errorfs.Op) {
	efs := errorfs.New(vfs.NewMem())
	db := openTest(t, "/db", &Options{FS: efs, Sync: SyncAlways, ExpiryPeriod: -1, MergeInterval: -1})
	if err := db.Set([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	efs.Inject(failing, syscall.EIO)

	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.Set([]byte("a"), []byte("2"))
	err = tx.Commit()
	var e *Error
	if !errors.Is(err, ErrCommitUnknownResult) || !errors.Is(err, ErrWritesStopped) || !errors.Is(err, syscall.EIO) ||
		!errors.As(err, &e) || e.Code != 1021 || !e.MaybeCommitted || !IsRetryable(err) {
		t.Fatalf("commit whose %s failed: %v, want 1021 commit_unknown_result wrapping the cause", failing, err)
	}

	tx, err = db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.Set([]byte("b"), []byte("1"))
	err = tx.Commit()
	if !errors.Is(err, ErrWritesStopped) {
		t.Fatalf("commit after writes stopped: %v, want ErrWritesStopped", err)
	}
	if errors.Is(err, ErrCommitUnknownResult) || IsRetryable(err) || errors.As(err, &e) {
		t.Fatalf("commit refused before anything was written reports %v: its result is known (not committed)", err)
	}
}

// Transact retries commit_unknown_result, as FoundationDB's retry loop
// (Transaction.onError) does: fn runs again, and its next commit meets
// the stopped writes.
func TestTransactRetriesCommitUnknownResult(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db := openTest(t, "/db", &Options{FS: efs, Sync: SyncAlways, ExpiryPeriod: -1, MergeInterval: -1})
	if err := db.Set([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	efs.Inject(errorfs.OpSync, syscall.EIO)
	calls := 0
	err := db.Transact(context.Background(), func(tx *Tx) error {
		calls++
		tx.Set([]byte("a"), []byte("2"))
		return nil
	})
	if calls != 2 {
		t.Fatalf("fn ran %d times, want 2: a commit_unknown_result is retried", calls)
	}
	if !errors.Is(err, ErrWritesStopped) || errors.Is(err, ErrCommitUnknownResult) {
		t.Fatalf("Transact: %v, want the retry's ErrWritesStopped", err)
	}
}
