package caskade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// snapshotContents reads every pair of a view.
func viewContents(t *testing.T, v *view) map[string]string {
	t.Helper()
	v.files.acquire()
	v.db.mu.Lock()
	v.db.snapshots++
	v.db.mu.Unlock()
	it := newIterator(v, nil)
	defer it.Close()
	got := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	return got
}

// A backup taken during concurrent writes restores to exactly the state of
// a snapshot taken at the backup point.
func TestBackupRestoreDuringWrites(t *testing.T) {
	seed := testSeed(t)
	for _, link := range []bool{false, true} {
		t.Run(fmt.Sprintf("link=%v", link), func(t *testing.T) {
			dir := t.TempDir()
			db := openTest(t, dir, &Options{MaxFileSize: 16 << 10, Sync: SyncNone, ExpiryPeriod: -1})
			for i := range 500 {
				db.Set(fmt.Appendf(nil, "pre%03d", i), fmt.Appendf(nil, "v%d", i))
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(w)))
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						k := fmt.Appendf(nil, "w%d-%03d", w, r.IntN(300))
						if r.IntN(5) == 0 {
							db.Delete(k)
						} else {
							db.Set(k, fmt.Appendf(nil, "%d", i))
						}
					}
				})
			}
			backupDir := filepath.Join(t.TempDir(), "backup")
			st, v, err := db.backup(context.Background(), backupDir, &BackupOptions{Link: link})
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			want := viewContents(t, v)
			v.release()
			if link && st.Linked == 0 {
				t.Fatal("no file was linked")
			}
			restored := filepath.Join(t.TempDir(), "restored")
			if err := Restore(context.Background(), backupDir, restored, nil); err != nil {
				t.Fatal(err)
			}
			rdb := openTest(t, restored, nil)
			got := contents(t, rdb)
			if !maps.Equal(got, want) {
				t.Fatalf("restored %d keys, the backup point had %d", len(got), len(want))
			}
			if rdb.Version() != st.Version {
				t.Fatalf("restored version %d, backup version %d", rdb.Version(), st.Version)
			}
		})
	}
}

func TestRestoreRefusesAndVerifies(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, nil)
	for i := range 50 {
		db.Set(fmt.Appendf(nil, "k%02d", i), []byte("value"))
	}
	backupDir := filepath.Join(t.TempDir(), "b")
	if _, err := db.Backup(context.Background(), backupDir, nil); err != nil {
		t.Fatal(err)
	}
	// Backing up into a non-empty directory is refused.
	if _, err := db.Backup(context.Background(), backupDir, nil); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("backup into a full directory: %v", err)
	}
	// Restoring over a live database is refused (locked), and over a
	// non-empty directory without Force.
	if err := Restore(context.Background(), backupDir, dir, &RestoreOptions{Force: true}); !errors.Is(err, ErrLocked) {
		t.Fatalf("restore over an open database: %v", err)
	}
	target := t.TempDir()
	os.WriteFile(filepath.Join(target, "notes.txt"), []byte("mine"), 0o644)
	if err := Restore(context.Background(), backupDir, target, nil); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("restore into a non-empty directory: %v", err)
	}
	if err := Restore(context.Background(), backupDir, target, &RestoreOptions{Force: true}); err != nil {
		t.Fatalf("forced restore: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(target, "notes.txt")); err != nil || string(b) != "mine" {
		t.Fatal("forced restore touched a file it does not own")
	}
	// Forced over another backup, it removes that backup's manifest with
	// its files: left behind, the manifest would describe files that are
	// gone, and the directory would look like a damaged backup.
	other := filepath.Join(t.TempDir(), "other")
	if _, err := db.Backup(context.Background(), other, nil); err != nil {
		t.Fatal(err)
	}
	if err := Restore(context.Background(), backupDir, other, &RestoreOptions{Force: true}); err != nil {
		t.Fatalf("forced restore over a backup: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, ManifestName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("forced restore over a backup left its manifest: %v", err)
	}
	// A damaged backup is refused, and nothing is installed.
	data := filepath.Join(backupDir, segment.DataName(1))
	b, _ := os.ReadFile(data)
	b[len(b)-1] ^= 1
	os.WriteFile(data, b, 0o644)
	fresh := filepath.Join(t.TempDir(), "fresh")
	if err := Restore(context.Background(), backupDir, fresh, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("restore of a damaged backup: %v", err)
	}
	if names, _ := os.ReadDir(fresh); len(names) > 0 {
		t.Fatalf("damaged restore left %d files", len(names))
	}
	// A named pipe in place of a data file would block the restore for
	// ever: it is refused as not a regular file, without reading it.
	os.Remove(data)
	if err := syscall.Mkfifo(data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Restore(context.Background(), backupDir, fresh, nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("restore of a backup holding a named pipe: %v", err)
	}
	os.Remove(filepath.Join(backupDir, ManifestName))
	if err := Restore(context.Background(), backupDir, fresh, nil); err == nil {
		t.Fatal("restored a backup without a manifest")
	}
}

// A restore that fails (here: the disk fills up) removes what it wrote, so
// that a retry needs no Force.
func TestRestoreFailureCleansUp(t *testing.T) {
	db := openTest(t, t.TempDir(), &Options{MaxFileSize: 4 << 10})
	for i := range 100 {
		if err := db.Set(fmt.Appendf(nil, "k%03d", i), bytes.Repeat([]byte("v"), 100)); err != nil {
			t.Fatal(err)
		}
	}
	backupDir := filepath.Join(t.TempDir(), "b")
	if _, err := db.Backup(context.Background(), backupDir, nil); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "r")
	efs := errorfs.New(vfs.OS())
	var copied atomic.Int32
	efs.InjectFunc(errorfs.OpWrite, func(name string) error {
		if strings.HasPrefix(name, target) {
			if copied.Add(1) > 2 { // some writes get in first
				return syscall.ENOSPC
			}
		}
		return nil
	})
	if err := Restore(context.Background(), backupDir, target, &RestoreOptions{FS: efs, Workers: 1}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("restore on a full disk: %v", err)
	}
	if names, _ := os.ReadDir(target); len(names) != 1 || names[0].Name() != LockFileName {
		t.Fatalf("failed restore left %v", names)
	}
	efs.InjectFunc(errorfs.OpWrite, nil)
	if err := Restore(context.Background(), backupDir, target, &RestoreOptions{FS: efs}); err != nil {
		t.Fatalf("restore once there is room: %v", err)
	}
	if got := contents(t, openTest(t, target, nil)); len(got) != 100 {
		t.Fatalf("restored %d keys, want 100", len(got))
	}
}

// A backup that fails (here: the disk fills up) removes what it wrote, so
// that links do not keep retired files' space and the directory can be
// used again.
func TestBackupFailureCleansUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		link bool
		fail string // a write to a file with this suffix fails
	}{
		{"copy", false, ".data"},
		{"link", true, ManifestName + ".tmp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			efs := errorfs.New(vfs.OS())
			db := openTest(t, t.TempDir(), &Options{FS: efs, MaxFileSize: 4 << 10, ExpiryPeriod: -1})
			for i := range 100 {
				if err := db.Set(fmt.Appendf(nil, "k%03d", i), bytes.Repeat([]byte("v"), 100)); err != nil {
					t.Fatal(err)
				}
			}
			backupDir := filepath.Join(t.TempDir(), "b")
			efs.InjectFunc(errorfs.OpWrite, func(name string) error {
				if strings.HasPrefix(name, backupDir) && strings.HasSuffix(name, tc.fail) {
					return syscall.ENOSPC
				}
				return nil
			})
			st, err := db.Backup(context.Background(), backupDir, &BackupOptions{Link: tc.link})
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("backup on a full disk: %v", err)
			}
			if tc.link && st.Linked == 0 {
				t.Fatal("no file was linked before the manifest failed")
			}
			if _, err := os.Stat(backupDir); !errors.Is(err, os.ErrNotExist) {
				names, _ := os.ReadDir(backupDir)
				t.Fatalf("failed backup left %s behind (%d entries, stat: %v)", backupDir, len(names), err)
			}
			efs.InjectFunc(errorfs.OpWrite, nil)
			if _, err := db.Backup(context.Background(), backupDir, &BackupOptions{Link: tc.link}); err != nil {
				t.Fatalf("backup once there is room: %v", err)
			}
			restored := filepath.Join(t.TempDir(), "r")
			if err := Restore(context.Background(), backupDir, restored, nil); err != nil {
				t.Fatal(err)
			}
			if got := contents(t, openTest(t, restored, nil)); len(got) != 100 {
				t.Fatalf("restored %d keys, want 100", len(got))
			}
		})
	}
}

// A read-only database keeps a torn tail it found in its newest file (it
// writes nothing), so a hard-linked backup would share that tail: opening
// the backup would cut the source's file too. Backup copies such a file.
func TestBackupLinkSkipsTornFile(t *testing.T) {
	dir, backupDir := t.TempDir(), filepath.Join(t.TempDir(), "b")
	db := openTest(t, dir, &Options{ExpiryPeriod: -1})
	for i := range 10 {
		if err := db.Set(fmt.Appendf(nil, "k%d", i), []byte("value")); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	data := filepath.Join(dir, segment.DataName(1))
	os.Remove(filepath.Join(dir, segment.HintName(1)))
	f, err := os.OpenFile(data, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("torn record"))
	f.Close()
	before, _ := os.Stat(data)

	ro := openTest(t, dir, &Options{ReadOnly: true, ExpiryPeriod: -1})
	st, err := ro.Backup(context.Background(), backupDir, &BackupOptions{Link: true})
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
	if st.Linked != 0 {
		t.Fatalf("the file with a torn tail was linked: %+v", st)
	}
	b := openTest(t, backupDir, &Options{ExpiryPeriod: -1})
	mustGet(t, b, "k9", "value")
	b.Close()
	if after, _ := os.Stat(data); after.Size() != before.Size() {
		t.Fatalf("opening the backup changed the source's file: %d bytes, was %d", after.Size(), before.Size())
	}
}
