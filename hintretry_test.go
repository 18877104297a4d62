package caskade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// TestHintRetriedWhenSpaceReturns: a merge whose output's hint file does
// not fit on the disk leaves the data file without a hint file. It used
// to stay so until the next Open scanned the file; now the hint file is
// written again in the background, backing off while the disk stays
// full, and at the next tick once there is room, so that the next Open
// reads it.
func TestHintRetriedWhenSpaceReturns(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.New(mem)
	logs := &logRecorder{}
	db := openTest(t, "/db", &Options{FS: efs, MaxFileSize: 64 << 10, ExpiryPeriod: -1, MergeInterval: -1,
		Logger: slog.New(logs)})
	// Long keys and empty values: the hint file is about as large as the
	// data file.
	key := func(i int) []byte { return fmt.Appendf(nil, "%s%03d", strings.Repeat("k", 60), i) }
	for range 2 {
		for i := range 200 {
			if err := db.Set(key(i), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	sealActive(t, db) // and writes its hint file, before space runs short
	live := db.Stats().LiveBytes
	// Room for the merge's output (checkRoom), not for its hint file too.
	efs.SetSpace(live + record.FileHeaderSize + 4096 + 100)
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	ids := sealedIDs(db)
	if len(ids) != 1 {
		t.Fatalf("sealed files %v after the merge, want one", ids)
	}
	hint := "/db/" + segment.HintName(ids[0])
	hasHint := func() bool {
		t.Helper()
		_, err := mem.Stat(hint)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		return err == nil
	}
	if hasHint() {
		t.Fatalf("the merge wrote its hint file with %d bytes free", efs.Space())
	}
	if n := db.Stats().HintsPending; n != 1 {
		t.Fatalf("HintsPending = %d after a hint file failed, want 1", n)
	}
	// The retired input files gave their room back: take it again.
	efs.SetSpace(1000)
	r := db.newHintRetrier(hintRetryPeriod)
	tries := func(n int) (tried []int) {
		t.Helper()
		for i := range n {
			before := efs.Count(errorfs.OpCreate)
			r.tick()
			if efs.Count(errorfs.OpCreate) != before {
				tried = append(tried, i)
			}
		}
		return tried
	}
	logs.take("")
	// Still no room: tries at ticks 0, 2, 6, 14, then every 10 minutes
	// (60 ticks of 10 s).
	if got, want := tries(100), []int{0, 2, 6, 14, 30, 62}; !slices.Equal(got, want) {
		t.Fatalf("hint file tried at ticks %v, want %v", got, want)
	}
	var wantLog []string
	for _, d := range []string{"20s", "40s", "1m20s", "2m40s", "5m20s", "10m0s"} {
		wantLog = append(wantLog, "WARN caskade: cannot write hint files yet retry_in="+d)
	}
	if got := logs.take("caskade: cannot write hint"); !slices.Equal(got, wantLog) {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantLog, "\n"))
	}
	if hasHint() || db.Stats().HintsPending != 1 {
		t.Fatalf("hint file written without room, or no longer pending (%d)", db.Stats().HintsPending)
	}
	// Room again: the next tick writes it, without waiting out the backoff.
	efs.SetSpace(1 << 30)
	if got := tries(1); !slices.Equal(got, []int{0}) {
		t.Fatalf("with room again, the next tick did not write the hint file")
	}
	if !hasHint() {
		t.Fatal("no hint file after a retry with room")
	}
	if n := db.Stats().HintsPending; n != 0 {
		t.Fatalf("HintsPending = %d after the hint file was written, want 0", n)
	}
	if got := tries(10); got != nil {
		t.Fatalf("hint files tried at ticks %v with none pending", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, "/db", &Options{FS: mem, ExpiryPeriod: -1, MergeInterval: -1})
	if rs := db.Stats().Recovery; rs.Files != 1 || rs.FromHints != 1 {
		t.Fatalf("reopened with %d files, %d through hint files; want 1, 1", rs.Files, rs.FromHints)
	}
	for i := range 200 {
		mustGet(t, db, string(key(i)), "")
	}
}

// TestHintRetriedAfterSealFailure: the hint file of a file sealed while
// hint files cannot be written is written later, in the background.
func TestHintRetriedAfterSealFailure(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.New(mem)
	db := openTest(t, "/db", &Options{FS: efs, ExpiryPeriod: -1, MergeInterval: -1})
	for i := range 50 {
		if err := db.Set(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte("v"), 50)); err != nil {
			t.Fatal(err)
		}
	}
	efs.InjectFunc(errorfs.OpCreate, func(name string) error {
		if strings.Contains(name, ".hint") {
			return syscall.EIO
		}
		return nil
	})
	sealActive(t, db) // writes the hint file at once
	ids := sealedIDs(db)
	if n := db.Stats().HintsPending; n != 1 || len(ids) != 1 {
		t.Fatalf("HintsPending = %d with sealed files %v, want 1 and one file", n, ids)
	}
	r := db.newHintRetrier(time.Second)
	r.tick()
	efs.Reset()
	r.tick() // waiting: an I/O error says nothing of when to try again
	if _, err := mem.Stat("/db/" + segment.HintName(ids[0])); err == nil {
		t.Fatal("hint file written during the backoff")
	}
	r.tick()
	if _, err := mem.Stat("/db/" + segment.HintName(ids[0])); err != nil {
		t.Fatalf("hint file not written after the backoff: %v", err)
	}
	if n := db.Stats().HintsPending; n != 0 {
		t.Fatalf("HintsPending = %d, want 0", n)
	}
}

// TestHintNotRetriedForDamage: a data file whose hint file fails because
// the file turns out damaged is not scanned again and again.
func TestHintNotRetriedForDamage(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.New(mem)
	logs := &logRecorder{}
	db := openTest(t, "/db", &Options{FS: efs, ExpiryPeriod: -1, MergeInterval: -1, Logger: slog.New(logs)})
	for i := range 50 {
		if err := db.Set(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte("v"), 50)); err != nil {
			t.Fatal(err)
		}
	}
	efs.Inject(errorfs.OpCreate, syscall.EIO)
	sealActive(t, db)
	efs.Reset()
	ids := sealedIDs(db)
	if n := db.Stats().HintsPending; n != 1 || len(ids) != 1 {
		t.Fatalf("HintsPending = %d with sealed files %v, want 1 and one file", n, ids)
	}
	// Damage a record in the middle of the sealed file.
	f, err := mem.OpenReadWrite("/db/" + segment.DataName(ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff, 0xff}, 1000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	logs.take("")
	r := db.newHintRetrier(time.Second)
	for range 10 {
		r.tick()
	}
	if n := db.Stats().HintsPending; n != 0 {
		t.Fatalf("HintsPending = %d for a damaged file, want 0", n)
	}
	if got := logs.take("caskade: cannot write hint"); len(got) != 1 || !strings.HasPrefix(got[0], "ERROR ") {
		t.Fatalf("log %q, want one error", got)
	}
}

// TestHintRetriedAtClose: a hint file that failed and waits for its retry
// is written at Close, if there is room then, rather than left for the
// next Open to scan its data file.
func TestHintRetriedAtClose(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.New(mem)
	tried := make(chan struct{}, 1)
	efs.InjectFunc(errorfs.OpCreate, func(name string) error {
		if !strings.Contains(name, ".hint") {
			return nil
		}
		select {
		case tried <- struct{}{}:
		default:
		}
		return syscall.EIO
	})
	db, err := Open("/db", &Options{FS: efs, MaxFileSize: 16 << 10, ExpiryPeriod: -1, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Enough to fill and seal the first data file.
	for i := 0; len(sealedIDs(db)) == 0; i++ {
		if err := db.Set(fmt.Appendf(nil, "key%05d", i), bytes.Repeat([]byte("v"), 200)); err != nil {
			t.Fatal(err)
		}
	}
	id := sealedIDs(db)[0]
	<-tried // the hint worker's attempt failed (or is failing)
	efs.InjectFunc(errorfs.OpCreate, nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat("/db/" + segment.HintName(id)); err != nil {
		t.Fatalf("no hint file for sealed file %d after Close: %v", id, err)
	}
}
