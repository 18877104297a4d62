package caskade

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

// CheckReport is what Check found.
type CheckReport struct {
	Files   int   // data files checked
	Records int   // committed records that verified
	Bytes   int64 // bytes of data files read
	// Damage lists every damaged range of every data file.
	Damage []CheckDamage
	// TornBytes counts the bytes of an unfinished last write at the end of
	// the newest data file, which Open cuts off; it is not damage.
	TornBytes int64
	// BadHints names hint files that do not match their data files. Open
	// ignores one that is damaged or does not fit its data file's size and
	// scans the data file (and replaces it, if it opens for writing and
	// the data file is intact), but trusts one that is intact and fits,
	// even if its entries are wrong; removing it makes Open scan. A valid
	// hint file of a damaged data file is not listed: Open reads it
	// instead of the data file, and the data file's damage is in Damage;
	// nor is one that describes more bytes than its data file holds,
	// which means the data file lost records (in Damage too).
	BadHints []string
	// TrustedBadHints lists those of BadHints that Open reads (they are
	// intact and fit their data files' sizes) instead of scanning the
	// data files: they must be removed.
	TrustedBadHints []string
}

// CheckDamage is one damaged byte range.
type CheckDamage struct {
	Path        string
	Offset, End int64
	Err         error
}

// OK reports whether Check found no damage.
func (r CheckReport) OK() bool { return len(r.Damage) == 0 }

// CheckOptions configure Check. The zero value, or nil, checks a
// directory of the operating system's file system.
type CheckOptions struct {
	// FS is the file system; nil means the operating system's.
	FS vfs.FS
	// Progress, if set, is told how far the check has come: done of total
	// bytes, where total is the size of the data files (CheckReport.Bytes,
	// once it is done). It is called with done 0 once the files are
	// listed, then as each data file is read, a chunk (4 MiB) at a time.
	// It is never called concurrently, done never goes back, and it
	// reaches total when the check succeeds.
	Progress func(done, total int64)
}

// Check verifies every record of every data file in dir, and every hint
// file against its data file, without changing anything, and reports every
// damaged range; a data file shorter than its (valid) hint file says is
// damaged from the last record it holds whole to the size the hint
// records. It takes the directory's lock if a writer ever created
// one, so it refuses a directory an open database holds. (The size limits
// of Options bound new writes, not what the files may hold: Check needs
// none.)
func Check(ctx context.Context, dir string, opts *CheckOptions) (CheckReport, error) {
	var rep CheckReport
	var co CheckOptions
	if opts != nil {
		co = *opts
	}
	o := (&Options{FS: co.FS}).withDefaults()
	o.ReadOnly = true
	db := &DB{opts: o, dir: dir, fs: o.FS}
	if err := db.takeLock(); err != nil {
		return rep, err
	}
	if db.lock != nil {
		defer db.lock.Close()
	}
	lim := storedLimits
	names, err := o.FS.List(dir)
	if err != nil {
		return rep, fmt.Errorf("caskade: check: %w", err)
	}
	var ids []uint32
	for _, n := range names {
		if id, kind := segment.Parse(n); kind == segment.KindData {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	// The sizes the files have now are the meter's total; a file that
	// cannot be read fails the check below.
	var sizes []int64
	var pm *meter
	if co.Progress != nil {
		sizes = make([]int64, len(ids))
		var total int64
		for i, id := range ids {
			if fi, err := o.FS.Stat(filepath.Join(dir, segment.DataName(id))); err == nil {
				sizes[i] = fi.Size()
				total += fi.Size()
			}
		}
		pm = newMeter(co.Progress, total, 1)
	}
	newest := newestWriterFile(o.FS, dir, ids)
	// One chunk buffer for every data file (segment.ScanFile reads a file
	// a chunk at a time): nothing in the report aliases it.
	var scratch []byte
	for i, id := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		path := filepath.Join(dir, segment.DataName(id))
		// The meter hears of each chunk as the scan reads it, so that a
		// large file moves the progress along as it is checked.
		var read int64 // of the file, told to the meter
		sr, idx, size, err := segment.ScanFileIndex(o.FS, path, segment.ScanSalvage, lim, &scratch, func(n int64) {
			read += n
			pm.add(n)
		})
		var ce *segment.CorruptError
		if err != nil && !errors.As(err, &ce) {
			return rep, fmt.Errorf("caskade: check: %w", err)
		}
		rep.Files++
		rep.Bytes += size
		if pm != nil {
			if size != sizes[i] {
				pm.resize(size - sizes[i])
			}
			// A damaged file's scan may stop short of its end.
			pm.add(size - read)
		}
		if size < record.FileHeaderSize {
			// The newest file is left without a whole header when the
			// process dies as it creates it (the next open removes it);
			// any other file had its header synced before a later one was
			// made.
			if i == newest {
				rep.TornBytes += size
			} else {
				rep.Damage = append(rep.Damage, CheckDamage{Path: path, Offset: 0, End: size,
					Err: fmt.Errorf("%w: %d bytes, too short for a file header", ErrCorrupt, size)})
			}
			continue
		}
		if err != nil {
			rep.Damage = append(rep.Damage, CheckDamage{Path: path, Offset: 0, End: size, Err: err})
			continue
		}
		rep.Records += idx.Len()
		hintPath := filepath.Join(dir, segment.HintName(id))
		hb, err := segment.ReadAll(o.FS, hintPath)
		hasHint := !errors.Is(err, fs.ErrNotExist)
		if err != nil && hasHint {
			return rep, fmt.Errorf("caskade: check: %w", err)
		}
		// A hint file is written once its data file is sealed and synced:
		// a data file shorter than its valid hint file says was cut short
		// (a truncated copy, a damaged file system), which loses committed
		// records, deletes too. That is damage, never a torn write; so is
		// damage at the end of a file of the size its hint file records
		// (which open reads instead of scanning the file).
		described := hintDataSize(hb, lim)
		cut := described > size
		for j, d := range sr.Damage {
			if j == len(sr.Damage)-1 && d.End == size {
				if cut {
					rep.Damage = append(rep.Damage, cutShort(path, d.Offset, size, described))
					cut = false
					continue
				}
				// Damage running to the end of the newest file with
				// nothing valid after it is a torn write, not damage.
				if i == newest && described != size {
					rep.TornBytes += d.End - d.Offset
					continue
				}
			}
			rep.Damage = append(rep.Damage, CheckDamage{Path: path, Offset: d.Offset, End: d.End, Err: d.Err})
		}
		if cut {
			rep.Damage = append(rep.Damage, cutShort(path, size, size, described))
		}
		if !hasHint {
			continue
		}
		_, herr := segment.ReadHints(hb, size, lim)
		switch {
		case herr != nil && described > size:
			// Valid, for the size its data file had: the data file was
			// cut short, which is reported as its damage above.
		case herr != nil:
			// Damaged, or made for another size: open ignores it and
			// scans the data file.
			rep.BadHints = append(rep.BadHints, hintPath)
		case len(sr.Damage) > 0:
			// Valid, for a data file that is damaged: open reads it,
			// not the data file, and the damage is reported above. The
			// damaged records cannot be read back to compare it with.
		case !equalBytes(hb, idx.Build(sr.End)):
			// Valid, but it describes other records: open would trust
			// it.
			rep.BadHints = append(rep.BadHints, hintPath)
			rep.TrustedBadHints = append(rep.TrustedBadHints, hintPath)
		}
	}
	return rep, nil
}

// cutShort is the damage of a data file of size bytes whose hint file
// describes described bytes, from offset from on.
func cutShort(path string, from, size, described int64) CheckDamage {
	return CheckDamage{Path: path, Offset: from, End: described,
		Err: fmt.Errorf("%w: the file ends at byte %d, but its hint file describes %d bytes", ErrCorrupt, size, described)}
}

// hintDataSize returns the data file size that the hint file hb records in
// its trailer, if hb is a whole, valid hint file for that size, or 0.
func hintDataSize(hb []byte, lim record.Limits) int64 {
	if record.CheckHintFileHeader(hb) != nil {
		return 0
	}
	for off := record.FileHeaderSize; off < len(hb); {
		_, tr, n, err := record.DecodeHint(hb[off:], lim)
		if err != nil {
			return 0
		}
		off += n
		if tr != nil {
			if _, err := segment.ReadHints(hb, tr.DataSize, lim); err != nil {
				return 0
			}
			return tr.DataSize
		}
	}
	return 0
}

func equalBytes(a, b []byte) bool { return string(a) == string(b) }

// newestWriterFile returns the index in ids of the newest data file not
// written by merge (the only one that may end in a torn write), or -1.
func newestWriterFile(fsys vfs.FS, dir string, ids []uint32) int {
	for i := len(ids) - 1; i >= 0; i-- {
		if merged, err := segment.IsMerged(fsys, filepath.Join(dir, segment.DataName(ids[i]))); err == nil && !merged {
			return i
		}
	}
	return -1
}

// HoldReadOnly takes the lock of the database directory dir as a
// read-only Open does, and holds it until the returned Closer is closed:
// read-only opens, Check and Repair still run meanwhile (the lock is
// shared), but no database opens dir for writing, so each of them sees the
// same files. Use it to run them one after the other on one state of dir,
// as "caskade check --repair" does. It fails with ErrLocked if an open
// database holds dir. Like a read-only Open it takes the lock only if a
// writer ever created the lock file, and otherwise holds nothing. opts
// supplies FS; other fields are ignored.
func HoldReadOnly(dir string, opts *Options) (io.Closer, error) {
	o := opts.withDefaults()
	o.ReadOnly = true
	db := &DB{opts: o, dir: dir, fs: o.FS}
	if err := db.takeLock(); err != nil {
		return nil, err
	}
	if db.lock == nil {
		return nopCloser{}, nil
	}
	return db.lock, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// Repair writes a salvaged copy of the database in dir into the new
// directory dst: it opens dir read-only with Options.Salvage, so damaged
// ranges are skipped, and copies every live key, with its value and expiry,
// into a fresh database. The source is never changed. It returns how many
// keys it copied. Where a damaged record was a key's newer value or its
// delete, the copy has the key's older value, or the deleted key, back.
func Repair(ctx context.Context, dir, dst string, opts *Options) (int, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	src := o
	src.ReadOnly, src.Salvage = true, true
	sdb, err := Open(dir, &src)
	if err != nil {
		return 0, err
	}
	defer sdb.Close()
	if err := o.withDefaults().FS.MkdirAll(dst, 0o755); err != nil {
		return 0, err
	}
	if err := checkEmpty(o.withDefaults().FS, dst); err != nil {
		return 0, err
	}
	out := o
	out.ReadOnly, out.Salvage, out.Sync = false, false, SyncNone
	ddb, err := Open(dst, &out)
	if err != nil {
		return 0, err
	}
	n, err := copyLive(ctx, sdb, ddb)
	if err == nil {
		err = ddb.Sync()
	}
	if cerr := ddb.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// copyLive copies every live pair of src into dst in large batches. A
// value that cannot be read (damaged) is skipped and counted out.
func copyLive(ctx context.Context, src, dst *DB) (int, error) {
	it, err := src.NewIterator(nil)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var b Batch
	n, pending := 0, 0
	for ok := it.First(); ok; ok = it.Next() {
		v := it.Value()
		if v == nil && it.Err() != nil {
			src.opts.Logger.Warn("caskade: repair skips an unreadable value", "key", it.Key(), "err", it.Err())
			it.err = nil
			continue
		}
		info := it.Info()
		b.SetEntry(it.Key(), v, SetOptions{ExpiresAt: info.ExpiresAt, Flags: info.Flags})
		n++
		pending += len(it.Key()) + len(v)
		if pending >= 4<<20 || b.Len() >= 10000 {
			pending = 0
			if err := ctx.Err(); err != nil {
				return n, err
			}
			if err := dst.Write(&b); err != nil {
				return n, err
			}
			b.Reset()
		}
	}
	return n, dst.Write(&b)
}
