package caskade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/caskade/caskade/internal/pario"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

// ManifestName is the file that completes a backup: it lists every file of
// the backup with its size and CRC-32C. A directory without it is not a
// (complete) backup.
const ManifestName = "MANIFEST.json"

const manifestFormat = 1

type manifest struct {
	Format  int            `json:"format"`
	Version uint64         `json:"version"` // newest commit version in the backup
	Created time.Time      `json:"created"`
	Files   []manifestFile `json:"files"`
}

type manifestFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BackupOptions configure Backup. The zero value copies every file.
type BackupOptions struct {
	// Link hard-links data and hint files into the backup instead of
	// copying them, where the file system allows (the same file system and
	// one that supports links); it falls back to copying. Files are never
	// changed in place, so a linked backup stays consistent.
	Link bool
	// Workers is the number of parallel copy workers (default GOMAXPROCS,
	// at most 1024).
	Workers int
	// Progress, if set, is told how far the backup has come: done of
	// total bytes, where total is the size of the files it copies or links
	// (BackupStats.Bytes, once it is done). It is called with done 0 once
	// the files are known, then after each chunk (a few MiB) copied or
	// checksummed: each file is copied and then read back for its
	// checksum, and counts half its bytes for each pass (a linked file
	// counts half at once). It is never called concurrently, done never
	// goes back, and it reaches total when the backup succeeds. It should
	// return quickly: the copy waits for it.
	Progress func(done, total int64)
}

// BackupStats describes a backup.
type BackupStats struct {
	Version  uint64 // the backup holds exactly the commits up to this version
	Files    int
	Bytes    int64
	Linked   int // files hard-linked rather than copied
	Duration time.Duration
}

// Backup writes a consistent point-in-time copy of the database into dst,
// which must not exist or be empty, while reads and writes go on. It seals
// the active data file, so that every file holding committed data is
// immutable, then copies (or links) those files and their hint files in
// parallel, and finally writes a manifest of sizes and checksums. The copy
// holds exactly the commits up to the returned version. Restore verifies and
// installs a backup; a backup directory is also a database directory that
// Open (read-only, if you like) accepts as it is. A backup that fails (a
// full disk, a cancelled ctx) removes the files it wrote, and dst too if
// it made it.
func (db *DB) Backup(ctx context.Context, dst string, opts *BackupOptions) (BackupStats, error) {
	st, v, err := db.backup(ctx, dst, opts)
	if v != nil {
		v.release()
	}
	return st, err
}

// backup does Backup and returns the view of the backup point, which the
// caller releases.
func (db *DB) backup(ctx context.Context, dst string, opts *BackupOptions) (st BackupStats, v *view, err error) {
	start := time.Now()
	var o BackupOptions
	if opts != nil {
		o = *opts
	}
	// Merge would retire files under the copy; backups and merges take
	// turns.
	db.mergeMu.Lock()
	defer db.mergeMu.Unlock()
	_, serr := db.fs.Stat(dst)
	made := errors.Is(serr, fs.ErrNotExist)
	if err := db.fs.MkdirAll(dst, 0o755); err != nil {
		return BackupStats{}, nil, fmt.Errorf("caskade: backup: %w", err)
	}
	if err := checkEmpty(db.fs, dst); err != nil {
		return BackupStats{}, nil, err
	}
	defer func() {
		if err != nil {
			db.discardBackup(dst, made)
		}
	}()
	if db.opts.ReadOnly {
		v = db.newView() // nothing is active
	} else {
		ops := []op{{kind: opSeal}}
		if _, err := db.commit(ops); err != nil {
			return BackupStats{}, nil, fmt.Errorf("caskade: backup: %w", err)
		}
		v = ops[0].view
	}
	st = BackupStats{Version: v.version}
	m := manifest{Format: manifestFormat, Version: v.version, Created: time.Now().UTC()}
	ids := slices.Sorted(maps.Keys(v.files.files))
	popts := pario.Options{Workers: o.Workers}
	// The files to copy, with the size of each hint file as found now
	// (the meter's total; it is corrected if one turns out otherwise).
	type backupFile struct {
		id   uint32
		name string
		size int64
	}
	var files []backupFile
	var total int64
	for _, id := range ids {
		f := v.files.files[id]
		files = append(files, backupFile{id, segment.DataName(id), f.Size()})
		total += f.Size()
		if fi, err := db.fs.Stat(filepath.Join(db.dir, segment.HintName(id))); err == nil {
			files = append(files, backupFile{id, segment.HintName(id), fi.Size()})
			total += fi.Size()
		}
	}
	pm := newMeter(o.Progress, total, 2)
	for _, bf := range files {
		name := bf.name
		f := v.files.files[bf.id]
		if err := ctx.Err(); err != nil {
			return st, v, err
		}
		src := filepath.Join(db.dir, name)
		to := filepath.Join(dst, name)
		size := f.Size()
		linked := false
		if o.Link && (name != segment.DataName(bf.id) || exactSize(db.fs, src, size)) {
			linked = db.fs.Link(src, to) == nil
		}
		if !linked {
			var err error
			if name == segment.DataName(bf.id) {
				err = copyFile(ctx, db.fs, to, f, size, popts, pm)
			} else {
				size, err = copyPath(ctx, db.fs, src, to, popts, pm)
			}
			if err != nil {
				return st, v, fmt.Errorf("caskade: backup %s: %w", name, err)
			}
		} else {
			st.Linked++
			if name != segment.DataName(bf.id) {
				fi, err := db.fs.Stat(to)
				if err != nil {
					return st, v, err
				}
				size = fi.Size()
			}
		}
		if size != bf.size {
			pm.resize(size - bf.size)
		}
		if linked {
			pm.add(size) // the copy it did not need
		}
		sum, err := checksum(ctx, db.fs, to, size, popts, pm)
		if err != nil {
			return st, v, fmt.Errorf("caskade: backup %s: %w", name, err)
		}
		m.Files = append(m.Files, manifestFile{Name: name, Size: size, CRC32C: sum})
		st.Files++
		st.Bytes += size
	}
	if err := db.fs.SyncDir(dst); err != nil {
		return st, v, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return st, v, err
	}
	if err := writeFileAtomic(db.fs, dst, ManifestName, append(b, '\n')); err != nil {
		return st, v, fmt.Errorf("caskade: backup manifest: %w", err)
	}
	st.Duration = time.Since(start)
	db.opts.Logger.Info("caskade: backup", "dst", dst, "version", st.Version, "files", st.Files, "bytes", st.Bytes)
	return st, v, nil
}

// discardBackup removes what a failed backup wrote into dst, which was
// empty when it started: the copies and links of data and hint files (a
// link would keep a file's space after merge retires it), the manifest (it
// may be in place when only the final directory sync failed), and dst
// itself if the backup made it. A retry can then use dst
// again. It is best effort: the backup's own error is what is reported.
func (db *DB) discardBackup(dst string, made bool) {
	names, err := db.fs.List(dst)
	if err != nil {
		return
	}
	for _, n := range names {
		if _, kind := segment.Parse(n); kind != segment.KindOther || n == ManifestName || n == ManifestName+".tmp" {
			db.fs.Remove(filepath.Join(dst, n))
		}
	}
	if made {
		db.fs.Remove(dst)
	}
}

// RestoreOptions configure Restore.
type RestoreOptions struct {
	// FS is the file system of both directories; nil means the OS's.
	FS vfs.FS
	// Force allows restoring into a directory that already holds a
	// database (or a backup): its data, hint and temporary files, and a
	// backup's manifest, are removed first. Files caskade does not own are
	// never touched.
	Force bool
	// Workers is the number of parallel copy workers (default GOMAXPROCS,
	// at most 1024).
	Workers int
	// Progress, if set, is told how far the restore has come: done of
	// total bytes, where total is the size of the backup's files (as its
	// manifest lists them). It is called with done 0 once the manifest is
	// read, then after each chunk (a few MiB) read or written. Restore
	// makes three passes over each file, each counting a third of its
	// bytes: it verifies every file of the backup, then copies each one
	// and verifies the copy; so a third of the way, every file has
	// verified and the copy starts. It is never called concurrently, done
	// never goes back, and it reaches total when the restore succeeds. It
	// should return quickly: the copy waits for it.
	Progress func(done, total int64)
}

// Restore verifies the backup in src against its manifest (every file's
// size and CRC-32C) and installs it as the database in dir. It refuses a
// dir that is in use by an open database, and one that is not empty unless
// opts.Force is set. Nothing is installed unless every file verifies, nor
// from a src that holds a data file the manifest does not list.
func Restore(ctx context.Context, src, dir string, opts *RestoreOptions) error {
	var o RestoreOptions
	if opts != nil {
		o = *opts
	}
	if o.FS == nil {
		o.FS = vfs.OS()
	}
	fsys := o.FS
	popts := pario.Options{Workers: o.Workers}
	b, err := segment.ReadAll(fsys, filepath.Join(src, ManifestName))
	if err != nil {
		return fmt.Errorf("caskade: restore: %s is not a complete backup: %w", src, err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return &CorruptionError{Path: filepath.Join(src, ManifestName), Err: fmt.Errorf("unreadable manifest: %v", err)}
	}
	if m.Format != manifestFormat {
		return &CorruptionError{Path: filepath.Join(src, ManifestName), Err: fmt.Errorf("manifest format %d, want %d", m.Format, manifestFormat)}
	}
	listed := make(map[string]bool, len(m.Files))
	for _, f := range m.Files {
		listed[f.Name] = true
	}
	// Backup writes no data file it does not list: one the manifest does
	// not name means the manifest lost entries, or the backup was opened
	// and written to after it was taken; restoring without it would lose
	// its records unseen. (A hint file it does not list is harmless: an
	// open of the backup may write one for a data file that had none.)
	names, err := fsys.List(src)
	if err != nil {
		return fmt.Errorf("caskade: restore: %w", err)
	}
	for _, n := range names {
		if _, kind := segment.Parse(n); kind == segment.KindData && !listed[n] {
			return &CorruptionError{Path: filepath.Join(src, ManifestName), Err: fmt.Errorf("the backup holds %s, which the manifest does not list", n)}
		}
	}
	var total int64
	for _, f := range m.Files {
		if _, kind := segment.Parse(f.Name); (kind != segment.KindData && kind != segment.KindHint) || filepath.Base(f.Name) != f.Name {
			return &CorruptionError{Path: filepath.Join(src, ManifestName), Err: fmt.Errorf("manifest names %q", f.Name)}
		}
		total += max(f.Size, 0)
	}
	pm := newMeter(o.Progress, total, 3)
	for _, f := range m.Files {
		if err := verify(ctx, fsys, filepath.Join(src, f.Name), f, popts, pm); err != nil {
			return err
		}
	}
	// Force would remove the backup's own files before copying them.
	if sameDir(fsys, src, dir) {
		return fmt.Errorf("caskade: restore: %s and %s are the same directory: a backup cannot be restored onto itself", src, dir)
	}
	if fi, err := fsys.Stat(dir); err == nil && fi.IsDir() && !o.Force {
		// Refuse before making a lock file in a directory that has none:
		// a refused restore leaves it as it was. (Checked again under the
		// lock.)
		if _, err := fsys.Stat(filepath.Join(dir, LockFileName)); errors.Is(err, fs.ErrNotExist) {
			if err := checkEmpty(fsys, dir); err != nil {
				return err
			}
		}
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("caskade: restore: %w", err)
	}
	lock, err := fsys.Lock(filepath.Join(dir, LockFileName))
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return fmt.Errorf("%w: %s: %w", ErrLocked, dir, err)
		}
		return fmt.Errorf("caskade: restore: %w", err)
	}
	defer lock.Close()
	if err := checkEmpty(fsys, dir); err != nil {
		if !o.Force {
			return err
		}
		if err := clearDir(fsys, dir); err != nil {
			return fmt.Errorf("caskade: restore: %w", err)
		}
	}
	if err := restoreFiles(ctx, fsys, src, dir, m.Files, popts, pm); err != nil {
		// dir held none of caskade's files before (or Force cleared
		// them): leave it so, for a retry without Force.
		clearDir(fsys, dir)
		return err
	}
	return nil
}

// sameDir reports whether a and b name the same directory.
func sameDir(fsys vfs.FS, a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ai, err := fsys.Stat(a)
	if err != nil {
		return false
	}
	bi, err := fsys.Stat(b)
	return err == nil && os.SameFile(ai, bi)
}

// restoreFiles copies the files of a backup into dir under temporary
// names, then renames them: an interrupted restore leaves nothing a later
// open would take for data.
func restoreFiles(ctx context.Context, fsys vfs.FS, src, dir string, files []manifestFile, popts pario.Options, pm *meter) error {
	for _, f := range files {
		tmp := filepath.Join(dir, f.Name) + ".tmp"
		if _, err := copyPath(ctx, fsys, filepath.Join(src, f.Name), tmp, popts, pm); err != nil {
			return fmt.Errorf("caskade: restore %s: %w", f.Name, err)
		}
		if err := verify(ctx, fsys, tmp, f, popts, pm); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := fsys.Rename(filepath.Join(dir, f.Name)+".tmp", filepath.Join(dir, f.Name)); err != nil {
			return fmt.Errorf("caskade: restore: %w", err)
		}
	}
	return fsys.SyncDir(dir)
}

// checkEmpty fails with ErrNotEmpty if dir holds any file but a lock file.
func checkEmpty(fsys vfs.FS, dir string) error {
	names, err := fsys.List(dir)
	if err != nil {
		return fmt.Errorf("caskade: %w", err)
	}
	for _, n := range names {
		if n != LockFileName {
			return fmt.Errorf("%w: %s holds %s", ErrNotEmpty, dir, n)
		}
	}
	return nil
}

// clearDir removes caskade's own files (data, hint, temporary, and a
// backup's manifest) from dir.
func clearDir(fsys vfs.FS, dir string) error {
	names, err := fsys.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, kind := segment.Parse(n); kind != segment.KindOther || n == ManifestName {
			if err := fsys.Remove(filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	return fsys.SyncDir(dir)
}

// copyFile copies size bytes of src into a new file to, telling pm of
// every chunk written.
func copyFile(ctx context.Context, fsys vfs.FS, to string, src pario.ReaderAt, size int64, o pario.Options, pm *meter) error {
	out, err := fsys.Create(to)
	if err != nil {
		return err
	}
	var w pario.SyncWriterAt = out
	if pm != nil {
		w = &meteredWriter{SyncWriterAt: out, m: pm}
	}
	if err := pario.Copy(ctx, w, src, size, o); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func copyPath(ctx context.Context, fsys vfs.FS, from, to string, o pario.Options, pm *meter) (int64, error) {
	in, err := fsys.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), copyFile(ctx, fsys, to, in, fi.Size(), o, pm)
}

// checksum returns the CRC-32C of the first size bytes of the file at
// path, telling pm of every chunk read.
func checksum(ctx context.Context, fsys vfs.FS, path string, size int64, o pario.Options, pm *meter) (uint32, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var sum uint32
	err = pario.Stream(ctx, f, size, o, func(_ int64, chunk []byte) error {
		sum = crc32.Update(sum, castagnoli, chunk)
		pm.add(int64(len(chunk)))
		return nil
	})
	return sum, err
}

func verify(ctx context.Context, fsys vfs.FS, path string, want manifestFile, o pario.Options, pm *meter) error {
	fi, err := fsys.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &CorruptionError{Path: path, Err: fmt.Errorf("missing from the backup: %w", err)}
		}
		return err
	}
	if !fi.Mode().IsRegular() {
		// A named pipe would block the restore, a device read from it.
		return &CorruptionError{Path: path, Err: fmt.Errorf("not a regular file (%v)", fi.Mode().Type())}
	}
	if fi.Size() != want.Size {
		return &CorruptionError{Path: path, Err: fmt.Errorf("size %d, manifest says %d", fi.Size(), want.Size)}
	}
	sum, err := checksum(ctx, fsys, path, want.Size, o, pm)
	if err != nil {
		return err
	}
	if sum != want.CRC32C {
		return &CorruptionError{Path: path, Err: fmt.Errorf("CRC-32C %08x, manifest says %08x", sum, want.CRC32C)}
	}
	return nil
}

func writeFileAtomic(fsys vfs.FS, dir, name string, b []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := fsys.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return fsys.SyncDir(dir)
}

// exactSize reports whether the file at path is size bytes long. A data
// file longer than its valid size holds a torn tail that a read-only
// database left in place: a hard link would share it, and opening the
// backup would cut it from the source's file too, so it is copied instead.
func exactSize(fs vfs.FS, path string, size int64) bool {
	fi, err := fs.Stat(path)
	return err == nil && fi.Size() == size
}
