package caskade

import (
	"bytes"
	"fmt"
	"slices"
)

// A transaction's size is counted as FoundationDB counts it: a mutation
// is its two parameters (key and value, or a range's bounds) plus the
// in-memory size of FoundationDB's MutationRef, a conflict range its
// bounds plus that of its KeyRangeRef, both as on 64-bit platforms.
const (
	txMutationOverhead = 56
	txRangeOverhead    = 32
)

// mutationSize is what o adds to the size FoundationDB checks at commit
// (its Transaction::getSize): the mutation it sends. A cleared key is the
// range [key, key+"\x00"); a write conflict range is no mutation.
func mutationSize(o op) int {
	switch o.kind {
	case opWriteConflict:
		return 0
	case opDelete:
		return txMutationOverhead + 2*len(o.key) + 1
	}
	return txMutationOverhead + len(o.key) + len(o.value)
}

// approxMutationSize is what o adds to ApproximateSize, by the estimates
// FoundationDB's read-your-writes layer keeps as each call is made: the
// mutation and, for all but SetVersionstampedKey (whose key is not known
// yet), its write conflict range.
func approxMutationSize(o op) int {
	keyRange := txRangeOverhead + 2*len(o.key) + 1 // [key, key+"\x00")
	switch o.kind {
	case opWriteConflict:
		return txRangeOverhead + len(o.key) + len(o.value)
	case opDeleteRange:
		r := len(o.key) + len(o.value)
		return txMutationOverhead + r + txRangeOverhead + r
	case opDelete:
		// FoundationDB counts a KeyRangeRef here, not a MutationRef.
		return keyRange + keyRange
	case opSetVSKey:
		return txMutationOverhead + len(o.key) + len(o.value)
	}
	return txMutationOverhead + len(o.key) + len(o.value) + keyRange
}

// rangeSize is what a conflict range adds to a transaction's size.
func rangeSize(r keyRange) int { return txRangeOverhead + len(r.begin) + len(r.end) }

// ApproximateSize returns the transaction's size so far as FoundationDB's
// GetApproximateSize estimates it: the bytes of each mutation and of each
// read and write conflict range (its keys or bounds, plus 56 bytes for a
// mutation and 32 for a range), added up as they are made, without
// merging ranges that overlap. Options.TxnSizeLimit is checked against
// the exact size at commit, which merges them, so this is usually a
// little more. It is 0 for a new transaction.
func (tx *Tx) ApproximateSize() int { return tx.approx }

// checkSize fails the commit, as FoundationDB's does with
// transaction_too_large, if the mutations to commit (ops) with the read
// and write conflict ranges, overlapping and adjacent ones merged, are
// more than Options.TxnSizeLimit bytes. The ranges are merged only when
// their sum unmerged is over the limit.
func (tx *Tx) checkSize(ops []op) error {
	limit := tx.db.opts.TxnSizeLimit
	size := tx.size
	for _, o := range ops {
		switch o.kind {
		case opWriteConflict, opDeleteRange:
			size += txRangeOverhead + len(o.key) + len(o.value)
		case opSetVSKey:
		default:
			size += txRangeOverhead + 2*len(o.key) + 1 // as writeConflictRange's
		}
	}
	for _, r := range tx.reads {
		size += rangeSize(r)
	}
	if size <= limit {
		return nil
	}
	var writes []keyRange
	for _, o := range ops {
		if r, ok := writeConflictRange(o); ok {
			writes = append(writes, r)
		}
	}
	size = tx.size + mergedSize(writes) + mergedSize(slices.Clone(tx.reads))
	if size <= limit {
		return nil
	}
	return fmt.Errorf("%w: %d bytes with its conflict ranges, limit %d", ErrBatchTooLarge, size, limit)
}

// writeConflictRange returns the write conflict range o adds at commit,
// if any. SetVersionstampedKey's is known only after FoundationDB's size
// check, which does not count it.
func writeConflictRange(o op) (keyRange, bool) {
	switch o.kind {
	case opWriteConflict, opDeleteRange:
		return keyRange{o.key, o.value}, true
	case opSetVSKey:
		return keyRange{}, false
	}
	return keyRange{o.key, keyAfter(o.key)}, true
}

// mergedSize returns the size of ranges once those that overlap or touch
// are merged, as FoundationDB's coalesced conflict maps do. It reorders
// ranges.
func mergedSize(ranges []keyRange) int {
	slices.SortFunc(ranges, func(a, b keyRange) int { return bytes.Compare(a.begin, b.begin) })
	size := 0
	for i := 0; i < len(ranges); {
		cur := ranges[i]
		for i++; i < len(ranges) && (cur.end == nil || bytes.Compare(ranges[i].begin, cur.end) <= 0); i++ {
			if cur.end != nil && (ranges[i].end == nil || bytes.Compare(ranges[i].end, cur.end) > 0) {
				cur.end = ranges[i].end
			}
		}
		size += rangeSize(cur)
	}
	return size
}
