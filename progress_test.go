package caskade

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/caskade/caskade/internal/segment"
)

// progressLog records the calls of a Progress callback and fails the test
// if one breaks the promise: called concurrently, done first 0, then never
// going back, never past total.
type progressLog struct {
	t      *testing.T
	inside atomic.Bool
	dones  []int64
	totals []int64
}

func (p *progressLog) fn(done, total int64) {
	if !p.inside.CompareAndSwap(false, true) {
		p.t.Errorf("Progress(%d, %d) called while another call runs", done, total)
		return
	}
	defer p.inside.Store(false)
	switch {
	case len(p.dones) == 0 && done != 0:
		p.t.Errorf("first Progress call with done %d, want 0", done)
	case len(p.dones) > 0 && done < p.dones[len(p.dones)-1]:
		p.t.Errorf("Progress done went back from %d to %d", p.dones[len(p.dones)-1], done)
	case done > total:
		p.t.Errorf("Progress done %d past total %d", done, total)
	}
	p.dones = append(p.dones, done)
	p.totals = append(p.totals, total)
}

// ended checks that the last call reported done == total == want, after
// at least calls calls.
func (p *progressLog) ended(what string, want int64, calls int) {
	p.t.Helper()
	if len(p.dones) < calls {
		p.t.Fatalf("%s: %d Progress calls, want at least %d", what, len(p.dones), calls)
	}
	done, total := p.dones[len(p.dones)-1], p.totals[len(p.totals)-1]
	if done != want || total != want {
		p.t.Errorf("%s: Progress ended at %d of %d, want %d of %d", what, done, total, want, want)
	}
	for i, tot := range p.totals {
		if tot != want {
			p.t.Errorf("%s: Progress call %d had total %d, want %d (the files do not change)", what, i, tot, want)
			break
		}
	}
}

// Backup, Restore and Check tell their Progress callback, never
// concurrently, how many of their files' bytes they have handled, from 0
// up to the total they report; with several copy workers on a file of
// several chunks too.
func TestProgressOfBackupRestoreAndCheck(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, &Options{MaxFileSize: 64 << 10, Sync: SyncNone, ExpiryPeriod: -1, MergeInterval: -1})
	for i := range 400 {
		if err := db.Set(fmt.Appendf(nil, "key%04d", i), bytes.Repeat([]byte{byte(i)}, 500)); err != nil {
			t.Fatal(err)
		}
	}
	// A file of two 4 MiB chunks, copied by two workers at once.
	if err := db.Set([]byte("big"), bytes.Repeat([]byte("b"), 4<<20+1000)); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("after"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var backup string
	var st BackupStats
	for _, link := range []bool{true, false} {
		bp := &progressLog{t: t}
		backup = filepath.Join(t.TempDir(), "backup")
		var err error
		st, err = db.Backup(ctx, backup, &BackupOptions{Link: link, Workers: 4, Progress: bp.fn})
		if err != nil {
			t.Fatal(err)
		}
		if st.Files < 4 || st.Bytes < 4<<20 {
			t.Fatalf("backup of %d files, %d bytes: want several files and the big value", st.Files, st.Bytes)
		}
		// Every file is copied (or linked) and read back: more calls than
		// files.
		bp.ended(fmt.Sprintf("backup (link %v)", link), st.Bytes, st.Files+1)
	}

	rp := &progressLog{t: t}
	restored := filepath.Join(t.TempDir(), "restored")
	if err := Restore(ctx, backup, restored, &RestoreOptions{Workers: 4, Progress: rp.fn}); err != nil {
		t.Fatal(err)
	}
	rp.ended("restore", st.Bytes, 3*st.Files+1)
	// The backup verified whole, before a byte was copied, is a third of
	// the work.
	if !slices.Contains(rp.dones, st.Bytes/3) {
		t.Errorf("restore: no Progress call at %d of %d, the end of the verify pass", st.Bytes/3, st.Bytes)
	}

	cp := &progressLog{t: t}
	rep, err := Check(ctx, restored, &CheckOptions{Progress: cp.fn})
	if err != nil || !rep.OK() {
		t.Fatalf("check of the restored copy: %+v, %v", rep, err)
	}
	cp.ended("check", rep.Bytes, rep.Files+1)
}

// Without a callback, nothing is metered: the copy goes straight to the
// file.
func TestNilMeterDoesNothing(t *testing.T) {
	m := newMeter(nil, 10, 1)
	if m != nil {
		t.Fatalf("newMeter without a callback = %v, want nil", m)
	}
	m.add(5)
	m.resize(3)
}

// Check moves its progress along as it reads a large data file, a chunk
// at a time, not only once the file is done: checking a 256 MiB file takes
// seconds.
func TestCheckProgressPerChunk(t *testing.T) {
	const files = 2
	fs, _, _ := writeScanMemFiles(t, files)
	var ends []int64 // where each file's bytes end in the count
	var total int64
	for id := uint32(1); id <= files; id++ {
		fi, err := fs.Stat(filepath.Join("/db", segment.DataName(id)))
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
		ends = append(ends, total)
	}
	cp := &progressLog{t: t}
	rep, err := Check(context.Background(), "/db", &CheckOptions{FS: fs, Progress: cp.fn})
	if err != nil || !rep.OK() {
		t.Fatalf("check: %+v, %v", rep, err)
	}
	cp.ended("check", total, files+1)
	// Each file is more than two 4 MiB chunks: at least two calls fall
	// inside it.
	start := int64(0)
	for i, end := range ends {
		inside := 0
		for _, d := range cp.dones {
			if d > start && d < end {
				inside++
			}
		}
		if inside < 2 {
			t.Errorf("file %d (bytes %d to %d of the count): %d Progress calls inside it, want at least 2; calls: %v",
				i+1, start, end, inside, cp.dones)
		}
		start = end
	}
}
