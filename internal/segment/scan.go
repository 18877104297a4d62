package segment

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/vfs"
)

// ScanMode says how a scan treats damage.
type ScanMode int

const (
	// ScanStrict treats any damage, and a batch without its commit marker,
	// as an error: the rule for every data file but the newest.
	ScanStrict ScanMode = iota
	// ScanTail is for the newest data file: damage after which no valid
	// record follows is a torn tail, cut off at the end of the last committed
	// batch; damage followed by valid records is still an error.
	ScanTail
	// ScanSalvage skips damaged ranges, and batches they cut, and reports them.
	ScanSalvage
)

// Damage is a byte range a salvage scan skipped.
type Damage struct {
	Offset, End int64
	Err         error
}

// ScanResult is what a scan learned from a data file.
type ScanResult struct {
	// Hints lists the committed records in file order. Their keys alias the
	// scanned buffer.
	Hints []record.Hint
	// End is the end of the last committed batch: the length the file
	// should have.
	End int64
	// MaxVersion is the highest commit version seen in a committed batch.
	MaxVersion uint64
	// Torn is the number of bytes after End that a ScanTail scan dropped.
	Torn int64
	// Damage lists the ranges a ScanSalvage scan skipped.
	Damage []Damage
}

// ErrIncompleteBatch means a batch's records are not followed by its commit
// marker.
var ErrIncompleteBatch = errors.New("segment: batch without a commit marker")

// ErrVersionMismatch means records of one batch carry different versions.
var ErrVersionMismatch = errors.New("segment: records of one batch carry different versions")

// ScanData parses the contents b of the data file at path.
func ScanData(b []byte, path string, mode ScanMode, lim record.Limits) (ScanResult, error) {
	var res ScanResult
	corrupt := func(off int64, err error) error { return &CorruptError{Path: path, Offset: off, Err: err} }
	if err := record.CheckFileHeader(b); err != nil {
		switch {
		case mode == ScanTail && len(b) <= record.FileHeaderSize && nextValid(b, 0, lim) < 0:
			// The file was being created when the process died.
			res.Torn = int64(len(b))
			return res, nil
		case mode == ScanSalvage && len(b) >= record.FileHeaderSize:
			res.Damage = append(res.Damage, Damage{Offset: 0, End: record.FileHeaderSize, Err: err})
		default:
			return res, corrupt(0, err)
		}
	}
	var pending []record.Hint
	pendingStart := int64(record.FileHeaderSize)
	committed := int64(record.FileHeaderSize)
	off := int64(record.FileHeaderSize)
	for off < int64(len(b)) {
		r, err := record.Decode(b[off:], lim)
		if err == nil && len(pending) > 0 && r.Version != pending[0].Version {
			// The previous batch never got its commit marker.
			err = ErrVersionMismatch
		}
		if err != nil {
			next := nextValid(b, off+1, lim)
			switch mode {
			case ScanTail:
				if next < 0 {
					res.End, res.Torn = committed, int64(len(b))-committed
					return res, nil
				}
				return res, corrupt(off, err)
			case ScanStrict:
				return res, corrupt(off, err)
			}
			end := int64(len(b))
			if next >= 0 {
				end = next
			}
			res.Damage = append(res.Damage, Damage{Offset: pendingStart, End: end, Err: err})
			pending = pending[:0]
			if next < 0 {
				break
			}
			off, pendingStart = next, next
			continue
		}
		pending = append(pending, record.Hint{
			Kind: r.Kind, Version: r.Version, Expiry: r.Expiry, Offset: off, ValLen: r.ValLen, Key: r.Key,
		})
		off += r.Size()
		if r.Commit {
			res.Hints = append(res.Hints, pending...)
			res.MaxVersion = max(res.MaxVersion, r.Version)
			pending = pending[:0]
			committed, pendingStart = off, off
		}
	}
	if len(pending) > 0 {
		switch mode {
		case ScanTail:
			res.Torn = int64(len(b)) - committed
		case ScanStrict:
			return res, corrupt(pendingStart, ErrIncompleteBatch)
		case ScanSalvage:
			res.Damage = append(res.Damage, Damage{Offset: pendingStart, End: int64(len(b)), Err: ErrIncompleteBatch})
		}
	}
	res.End = committed
	return res, nil
}

// nextValid returns the first offset >= from at which a whole, valid record
// starts, or -1.
func nextValid(b []byte, from int64, lim record.Limits) int64 {
	for i := from; i+record.HeaderSize <= int64(len(b)); i++ {
		if _, err := record.Decode(b[i:], lim); err == nil {
			return i
		}
	}
	return -1
}

// ReadHints parses the contents b of a hint file that must describe a data
// file of dataSize bytes. Any damage is an error: the caller then scans the
// data file instead. The hints' keys alias b.
func ReadHints(b []byte, dataSize int64, lim record.Limits) ([]record.Hint, uint64, error) {
	if err := record.CheckHintFileHeader(b); err != nil {
		return nil, 0, err
	}
	var hints []record.Hint
	var maxVer uint64
	off := record.FileHeaderSize
	for off < len(b) {
		h, tr, n, err := record.DecodeHint(b[off:], lim)
		if err != nil {
			return nil, 0, fmt.Errorf("hint entry at offset %d: %w", off, err)
		}
		off += n
		if tr != nil {
			if off != len(b) {
				return nil, 0, fmt.Errorf("%w: data after the hint trailer", record.ErrCorrupt)
			}
			if tr.Entries != uint64(len(hints)) || tr.DataSize != dataSize {
				return nil, 0, fmt.Errorf("%w: hint trailer says %d entries for %d bytes, found %d entries for %d bytes",
					record.ErrCorrupt, tr.Entries, tr.DataSize, len(hints), dataSize)
			}
			return hints, maxVer, nil
		}
		hints = append(hints, h)
		maxVer = max(maxVer, h.Version)
	}
	return nil, 0, fmt.Errorf("%w: hint file has no trailer", record.ErrTruncated)
}

// WriteHints writes the hint file of data file id atomically: to a temporary
// file, synced, renamed into place, and the directory synced.
func WriteHints(fs vfs.FS, dir string, id uint32, hints []record.Hint, dataSize int64) error {
	buf := record.AppendHintFileHeader(nil)
	for _, h := range hints {
		buf = record.AppendHint(buf, h)
	}
	buf = record.AppendHintTrailer(buf, uint64(len(hints)), dataSize)
	final := filepath.Join(dir, HintName(id))
	tmp := final + tmpExt
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(buf, 0); err != nil {
		f.Close()
		fs.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		fs.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		fs.Remove(tmp)
		return err
	}
	if err := fs.Rename(tmp, final); err != nil {
		fs.Remove(tmp)
		return err
	}
	return fs.SyncDir(dir)
}
