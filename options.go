package caskade

import (
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/caskade/caskade/internal/keydir"
	"github.com/caskade/caskade/vfs"
)

// SyncPolicy says when writes are made durable.
type SyncPolicy int

const (
	// SyncAlways acknowledges a write only after it has been fsynced.
	// Concurrent writers share one fsync (group commit). This is the default.
	SyncAlways SyncPolicy = iota
	// SyncEverySec fsyncs in the background every Options.SyncInterval
	// (default one second): a crash can lose the writes of the last interval,
	// but never part of a batch.
	SyncEverySec
	// SyncNone leaves flushing to the operating system. As under every
	// policy, a write is in the page cache when it is acknowledged, so only
	// a crash of the machine, not of the process, can lose it.
	//
	// Under SyncEverySec and SyncNone the active file's appends are handed
	// to the operating system for writing every 4 MiB, without waiting
	// (write-behind, on Linux), so that the fsync that seals a full data
	// file finds little left to write and commits do not wait behind it.
	SyncNone
)

// String returns the policy's name as the server's --sync flag spells it.
func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncEverySec:
		return "everysec"
	case SyncNone:
		return "none"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// ParseSyncPolicy parses "always", "everysec" or "none".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch s {
	case "always":
		return SyncAlways, nil
	case "everysec":
		return SyncEverySec, nil
	case "none":
		return SyncNone, nil
	}
	return 0, fmt.Errorf("%w: unknown sync policy %q (want always, everysec or none)", ErrInvalidOptions, s)
}

// Defaults for zero Options fields.
const (
	DefaultMaxKeySize    = 64 << 10
	DefaultMaxValueSize  = 512 << 20
	DefaultMaxBatchSize  = 1 << 30
	DefaultMaxFileSize   = 256 << 20
	DefaultSyncInterval  = time.Second
	DefaultExpiryPeriod  = 100 * time.Millisecond
	DefaultMergeInterval = time.Minute
	DefaultMergeMinDead  = 64 << 20
	DefaultMaxWatches    = 10_000
	maxWatchesLimit      = 1_000_000
	maxFileSizeLimit     = 1 << 32 // offsets in the key directory are 32-bit
	maxRecordLengthLimit = 1<<32 - 1
)

// Options configures Open. The zero value, or a nil *Options, means the
// defaults. Options are read once by Open and not retained.
type Options struct {
	// FS is the file system; nil means the operating system's.
	FS vfs.FS
	// Sync is the durability policy; the zero value is SyncAlways.
	Sync SyncPolicy
	// SyncInterval is the background fsync period for SyncEverySec.
	SyncInterval time.Duration
	// ReadOnly opens the database without writing anything to the
	// directory: no lock file is created, no torn tail is cut, no hint file
	// is written. Writes fail with ErrReadOnly.
	ReadOnly bool
	// Salvage makes Open skip damaged records in any data file instead of
	// failing, logging each skipped range and counting it in Stats. It
	// never rewrites the damaged files.
	Salvage bool
	// MaxKeySize, MaxValueSize and MaxBatchSize bound what a write may
	// carry: a key's length, a value's length, and the encoded size of one
	// batch. They default to 64 KiB, 512 MiB and 1 GiB. MaxKeySize is at
	// most 1 MiB, the longest key the key directory holds. Deletes (and
	// Tx's clears and conflict ranges) are not held to MaxKeySize: a key
	// written under a larger one can still be deleted.
	MaxKeySize   int
	MaxValueSize int
	MaxBatchSize int
	// MaxFileSize is the size at which the active data file is sealed and a
	// new one started (default 256 MiB). A single batch larger than this
	// still goes into one file. At most 4 GiB.
	MaxFileSize int64
	// RecoveryWorkers is how many data and hint files Open reads in
	// parallel (default GOMAXPROCS).
	RecoveryWorkers int
	// ExpiryPeriod is how often active expiry samples keys with a TTL
	// (default 100 ms); a negative value disables active expiry (expired
	// keys are still never returned).
	ExpiryPeriod time.Duration
	// MergeInterval is how often the database checks whether to merge on
	// its own (default one minute); a negative value disables automatic
	// merges (Merge still works). An automatic merge that keeps failing
	// (a disk too full for its output, an I/O error) backs off: the wait
	// doubles after each failure in a row, up to an hour, and ends early
	// once the free space it lacked is there or a merge succeeds. The
	// first failure of a run is logged as an error, the next ones as
	// warnings saying when the merge is tried again.
	MergeInterval time.Duration
	// MergeDeadRatio triggers a merge of every sealed file when dead bytes
	// make up at least this share of them (default 0.5), provided there
	// are at least MergeMinDeadBytes of them (default 64 MiB).
	MergeDeadRatio    float64
	MergeMinDeadBytes int64
	// MergeFileDeadRatio triggers, short of MergeDeadRatio, a merge of just
	// the sealed files that are at least this dead (default 0.9), again
	// given MergeMinDeadBytes in all: a few files that overwrites or
	// deletes emptied do not cost a rewrite of the whole database. Such a
	// merge keeps the tombstones that may still hide older records in the
	// files it leaves; they do not count towards this ratio, and the next
	// merge of every file drops them.
	MergeFileDeadRatio float64
	// MergeBytesPerSec caps the rate at which merge reads and rewrites
	// records, to keep foreground latency steady; 0 means no cap.
	MergeBytesPerSec int64
	// TxnLifetime is how long a transaction may live: after it, reads and
	// Commit fail with ErrTransactionTooOld (default 5 s, as FoundationDB;
	// longer is allowed at the cost of more conflict history).
	TxnLifetime time.Duration
	// TxnSizeLimit caps a transaction's size (default 10,000,000 bytes,
	// as FoundationDB's), counted as FoundationDB counts it at commit:
	// each mutation's key and value (a range's bounds) plus 56 bytes, and
	// each read and write conflict range's bounds plus 32, overlapping and
	// adjacent ranges merged. A mutation that a later set or clear of the
	// same key (or a clear of a range holding it) replaced counts no
	// more, and is not committed. A transaction past it fails
	// with ErrBatchTooLarge (2101 transaction_too_large): at once when its
	// mutations alone are, at Commit otherwise; one that wrote nothing
	// commits whatever it read. See Tx.ApproximateSize.
	TxnSizeLimit int
	// MaxWatches caps the watches outstanding at once (Tx.Watch); one set
	// beyond it fails with ErrTooManyWatches. A watch counts from the
	// Tx.Watch call that sets it up until it fires, is cancelled, or its
	// transaction fails or is rolled back (or dropped and collected). The
	// default is 10,000 and the largest allowed 1,000,000, as for
	// FoundationDB's max_watches database option; a negative value allows
	// none (every watch fails with ErrTooManyWatches), as max_watches 0
	// does in FoundationDB.
	MaxWatches int
	// Logger receives the database's log; nil discards it.
	Logger *slog.Logger
	// Now is the clock used for TTLs; nil means time.Now. Tests set it.
	Now func() time.Time
}

// Validate reports the first invalid field.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Sync < SyncAlways || o.Sync > SyncNone:
		return bad("unknown sync policy %d", o.Sync)
	case o.SyncInterval < 0:
		return bad("negative SyncInterval %v", o.SyncInterval)
	case o.MaxKeySize < 0 || o.MaxKeySize > keydir.MaxKeyLen:
		return bad("MaxKeySize %d out of range (at most %d)", o.MaxKeySize, keydir.MaxKeyLen)
	case o.MaxValueSize < 0 || o.MaxValueSize > maxRecordLengthLimit:
		return bad("MaxValueSize %d out of range", o.MaxValueSize)
	case o.MaxBatchSize < 0:
		return bad("negative MaxBatchSize %d", o.MaxBatchSize)
	case o.MaxFileSize < 0 || o.MaxFileSize > maxFileSizeLimit:
		return bad("MaxFileSize %d out of range", o.MaxFileSize)
	case o.MergeDeadRatio < 0 || o.MergeDeadRatio > 1 || o.MergeFileDeadRatio < 0 || o.MergeFileDeadRatio > 1:
		return bad("merge ratios must be between 0 and 1")
	case o.MergeMinDeadBytes < 0 || o.MergeBytesPerSec < 0:
		return bad("negative merge limits")
	case o.TxnLifetime < 0 || o.TxnSizeLimit < 0:
		return bad("negative transaction limits")
	case o.MaxWatches > maxWatchesLimit:
		return bad("MaxWatches %d out of range (at most %d)", o.MaxWatches, maxWatchesLimit)
	case o.RecoveryWorkers < 0:
		return bad("negative RecoveryWorkers %d", o.RecoveryWorkers)
	case o.ReadOnly && o.Salvage:
		// Salvage is read-only in effect anyway, but say so explicitly.
	}
	return nil
}

// withDefaults returns a copy with zero fields filled in.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.FS == nil {
		c.FS = vfs.OS()
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = DefaultSyncInterval
	}
	if c.MaxKeySize == 0 {
		c.MaxKeySize = DefaultMaxKeySize
	}
	if c.MaxValueSize == 0 {
		c.MaxValueSize = DefaultMaxValueSize
	}
	if c.MaxBatchSize == 0 {
		c.MaxBatchSize = DefaultMaxBatchSize
	}
	if c.MaxFileSize == 0 {
		c.MaxFileSize = DefaultMaxFileSize
	}
	if c.RecoveryWorkers == 0 {
		c.RecoveryWorkers = runtime.GOMAXPROCS(0)
	}
	if c.ExpiryPeriod == 0 {
		c.ExpiryPeriod = DefaultExpiryPeriod
	}
	if c.MergeInterval == 0 {
		c.MergeInterval = DefaultMergeInterval
	}
	if c.MergeDeadRatio == 0 {
		c.MergeDeadRatio = 0.5
	}
	if c.MergeFileDeadRatio == 0 {
		c.MergeFileDeadRatio = 0.9
	}
	if c.MergeMinDeadBytes == 0 {
		c.MergeMinDeadBytes = DefaultMergeMinDead
	}
	if c.TxnLifetime == 0 {
		c.TxnLifetime = 5 * time.Second
	}
	if c.TxnSizeLimit == 0 {
		c.TxnSizeLimit = 10_000_000
	}
	switch {
	case c.MaxWatches == 0:
		c.MaxWatches = DefaultMaxWatches
	case c.MaxWatches < 0:
		c.MaxWatches = 0 // none
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
