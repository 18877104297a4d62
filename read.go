package caskade

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/caskade/caskade/internal/keydir"
	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
)

// KeyInfo describes a key without reading its value.
type KeyInfo struct {
	// Version is the commit version that last wrote the key. It changes
	// whenever the key is set, and only then, so it can serve as a
	// compare-and-swap token.
	Version uint64
	// ExpiresAt is when the key expires; the zero Time means never.
	ExpiresAt time.Time
	// ValueSize is the value's length in bytes.
	ValueSize int
	// Flags are the 32 bits stored beside the value (see SetOptions). They
	// live in the record, not the key directory: Lookup and Iterator.Info
	// after Iterator.Value report them; Stat reports 0.
	Flags uint32
}

// TTL returns the time left before the key expires, measured from now, or
// -1 if it never expires.
func (k KeyInfo) TTL(now time.Time) time.Duration {
	if k.ExpiresAt.IsZero() {
		return -1
	}
	return max(k.ExpiresAt.Sub(now), 0)
}

func infoOf(e keydir.Entry) KeyInfo {
	ki := KeyInfo{Version: e.Version, ValueSize: int(e.ValLen)}
	if e.Expiry != 0 {
		ki.ExpiresAt = time.UnixMilli(e.Expiry)
	}
	return ki
}

// Get returns the value of key, or ErrNotFound. The returned slice is the
// caller's own. Safe for concurrent use.
func (db *DB) Get(key []byte) ([]byte, error) {
	v, _, err := db.Lookup(key)
	return v, err
}

// Lookup returns the value of key together with its KeyInfo, both from the
// same version of the key: the version to pass to Batch.Check for a
// read-modify-write.
func (db *DB) Lookup(key []byte) ([]byte, KeyInfo, error) {
	db.mu.RLock()
	e, ok, verify := db.tree.Probe(key)
	var f *segment.File
	if ok {
		f = db.fset.acquireFile(e.FileID)
	}
	db.mu.RUnlock()
	if !ok {
		if db.shut.Load() {
			return nil, KeyInfo{}, ErrClosed
		}
		return nil, KeyInfo{}, ErrNotFound
	}
	if f != nil {
		defer f.Release()
	}
	if e.Expiry != 0 && e.Expired(db.nowMs()) {
		// With verify, e may be another key's (see keydir.Tree.Probe):
		// the drop checks key's own entry, so that is harmless.
		db.expiredOnRead(key, e.Version)
		return nil, KeyInfo{}, ErrNotFound
	}
	if f == nil {
		return nil, KeyInfo{}, db.fileGone(e.FileID)
	}
	v, flags, err := db.readMaybe(f, key, e, verify)
	if err != nil {
		return nil, KeyInfo{}, err
	}
	info := infoOf(e)
	info.Flags = flags
	return v, info, nil
}

// Stat returns what the key directory knows about key, without a disk read,
// or ErrNotFound.
func (db *DB) Stat(key []byte) (KeyInfo, error) {
	db.mu.RLock()
	e, ok := db.tree.Get(key)
	db.mu.RUnlock()
	if !ok {
		return KeyInfo{}, ErrNotFound
	}
	if e.Expiry != 0 && e.Expired(db.nowMs()) {
		db.expiredOnRead(key, e.Version)
		return KeyInfo{}, ErrNotFound
	}
	return infoOf(e), nil
}

// Has reports whether key has a value.
func (db *DB) Has(key []byte) (bool, error) {
	_, err := db.Stat(key)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Version returns the newest committed version: every commit gets a larger
// one.
func (db *DB) Version() uint64 {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.version
}

// readProbed reads and verifies the record e points to, in the files of
// set, and returns its value. With verify (e came from keydir.Tree.Probe or
// FindProbe and may be another key's), a record of another key means key
// is absent (ErrNotFound).
func (db *DB) readProbed(set *fileSet, key []byte, e keydir.Entry, verify bool) ([]byte, uint32, error) {
	f := set.acquireFile(e.FileID)
	if f == nil {
		return nil, 0, db.fileGone(e.FileID)
	}
	defer f.Release()
	return db.readMaybe(f, key, e, verify)
}

func (db *DB) readMaybe(f *segment.File, key []byte, e keydir.Entry, verify bool) ([]byte, uint32, error) {
	return db.readChecked(f, key, e, nil, verify)
}

// readFrom reads the record e points to from f, on which the caller holds a
// reference, checks it against the key directory, and returns its value and
// flags.
func (db *DB) readFrom(f *segment.File, key []byte, e keydir.Entry, scratch *[]byte) ([]byte, uint32, error) {
	return db.readChecked(f, key, e, scratch, false)
}

// viewFrom is readFrom without a copy where f is mapped: the value then
// aliases the read-only mapping, must not be modified, and is valid while
// the caller holds f.
func (db *DB) viewFrom(f *segment.File, key []byte, e keydir.Entry, scratch *[]byte) ([]byte, uint32, error) {
	if v, flags, ok := f.ViewValue(e.Offset, key, e.Version, e.ValLen); ok {
		return v, flags, nil
	}
	return db.readFrom(f, key, e, scratch)
}

// readChecked is readFrom; with candidate, e is an entry keydir.Probe could
// not tell was key's, and a record of another key means key is absent.
func (db *DB) readChecked(f *segment.File, key []byte, e keydir.Entry, scratch *[]byte, candidate bool) ([]byte, uint32, error) {
	if v, flags, ok := f.CopyValue(e.Offset, key, e.Version, e.ValLen, scratch); ok {
		return v, flags, nil
	}
	// Not mapped, or not the record expected: the general path reads it
	// and, if it is damaged or another key's, says so.
	r, err := f.ReadRecord(e.Offset, uint32(len(key)), e.ValLen, db.lim, scratch)
	return db.matchRecord(f, key, e, r, err, candidate)
}

// matchRecord checks the record r (read with err) that entry e of key
// points to: a record of another key or version is corruption, or, for a
// candidate, means key is absent.
func (db *DB) matchRecord(f *segment.File, key []byte, e keydir.Entry, r record.Record, err error, candidate bool) ([]byte, uint32, error) {
	if err == nil && !bytes.Equal(r.Key, key) && candidate {
		return nil, 0, ErrNotFound
	}
	if err == nil && (!bytes.Equal(r.Key, key) || r.Version != e.Version) {
		err = &segment.CorruptError{Path: f.Path, Offset: e.Offset,
			Err: fmt.Errorf("%w: record does not match the key directory", record.ErrCorrupt)}
	}
	if err != nil {
		return nil, 0, corruption(err)
	}
	return r.Value, r.Flags, nil
}

func (db *DB) fileGone(id uint32) error {
	db.cmu.Lock()
	closed := db.closed
	db.cmu.Unlock()
	if closed {
		return ErrClosed
	}
	return fmt.Errorf("caskade: data file %s: %w", segment.DataName(id), fs.ErrNotExist)
}
