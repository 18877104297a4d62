package caskade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// TestAutomaticMergeSettles drives the automatic merge tick by tick with
// a tiny MergeMinDeadBytes and nothing written: it may merge once, and
// never again. The tombstone a merge writes to carry the newest version
// used to count as dead, so its output was due again at the next tick, for
// ever (on its own, and beside a live record no larger than itself).
func TestAutomaticMergeSettles(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep map[string]string // keys left live
	}{
		{"all deleted", nil},
		{"empty key left", map[string]string{"": ""}},
		{"small key left", map[string]string{"a": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := "/db"
			opts := &Options{FS: vfs.NewMem(), MaxFileSize: 4 << 10, ExpiryPeriod: -1, MergeInterval: -1, MergeMinDeadBytes: 1}
			db := openTest(t, dir, opts)
			for k, v := range tc.keep {
				if err := db.Set([]byte(k), []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 60 {
				if err := db.Set(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte("x"), 100)); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 60 {
				if err := db.Delete(fmt.Appendf(nil, "k%02d", i)); err != nil {
					t.Fatal(err)
				}
			}
			sealActive(t, db)
			ticks := func(db *DB, want int) {
				t.Helper()
				before := db.Stats().Merges
				a := db.newAutoMerger(time.Minute)
				for range 50 {
					a.tick(context.Background())
				}
				if n := db.Stats().Merges - before; n != want {
					t.Fatalf("%d automatic merges in 50 ticks with nothing written, want %d: files %+v", n, want, db.Stats().Files)
				}
				if db.NeedsMerge() {
					t.Fatalf("NeedsMerge after the automatic merges: files %+v", db.Stats().Files)
				}
			}
			ticks(db, 1)
			version := db.Version()
			// The statistics rebuilt by Open from the files must agree.
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openTest(t, dir, opts)
			ticks(db, 0)
			if v := db.Version(); v != version {
				t.Fatalf("version %d after reopening, want %d", v, version)
			}
			if n := db.Stats().Keys; n != len(tc.keep) {
				t.Fatalf("%d keys, want %d", n, len(tc.keep))
			}
			for k, v := range tc.keep {
				mustGet(t, db, k, v)
			}
		})
	}
}

// logRecorder is a slog.Handler that keeps the level and message of every
// record, for tests that count log lines.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// take returns the records whose message starts with prefix, as "LEVEL
// message" lines, and forgets every record.
func (h *logRecorder) take(prefix string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.recs {
		if strings.HasPrefix(r.Message, prefix) {
			line := r.Level.String() + " " + r.Message
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "retry_in" {
					line += " retry_in=" + a.Value.String()
				}
				return true
			})
			out = append(out, line)
		}
	}
	h.recs = nil
	return out
}

// TestAutomaticMergeBacksOff drives the automatic merge tick by tick on a
// disk too full for its output. It used to try, and log an error, at
// every tick; now the wait doubles after each failure (one warning per
// attempt after the first error), a merge is tried at once when the room
// comes back, and Merge is never held back.
func TestAutomaticMergeBacksOff(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	logs := &logRecorder{}
	db := openTest(t, "/db", &Options{FS: efs, MaxFileSize: 4 << 10, ExpiryPeriod: -1, MergeInterval: -1,
		MergeMinDeadBytes: 1, Logger: slog.New(logs)})
	fill := func() {
		t.Helper()
		for round := range 2 {
			for i := range 40 {
				if err := db.Set(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte{byte('a' + round)}, 100)); err != nil {
					t.Fatal(err)
				}
			}
		}
		sealActive(t, db)
	}
	fill()
	const period = time.Minute
	a := db.newAutoMerger(period)
	attempts := func() int { return int(db.Stats().MergeTimings.Count) }
	ticks := func(n int) (tried []int) {
		t.Helper()
		for i := range n {
			before := attempts()
			a.tick(context.Background())
			if attempts() != before {
				tried = append(tried, i)
			}
		}
		return tried
	}
	logs.take("")
	efs.SetSpace(1000) // less than the live data
	// Attempts at ticks 0, 2, 6, 14, 30, 62, 122, then every hour (60
	// ticks): 2^k periods after the k-th failure, at most an hour.
	want := []int{0, 2, 6, 14, 30, 62, 122, 182}
	if got := ticks(200); !slices.Equal(got, want) {
		t.Fatalf("attempts at ticks %v, want %v", got, want)
	}
	wantLog := []string{"ERROR caskade: automatic merge failed retry_in=2m0s"}
	for _, d := range []string{"4m0s", "8m0s", "16m0s", "32m0s", "1h0m0s", "1h0m0s", "1h0m0s"} {
		wantLog = append(wantLog, "WARN caskade: automatic merge failed again retry_in="+d)
	}
	if got := logs.take("caskade: automatic merge"); !slices.Equal(got, wantLog) {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantLog, "\n"))
	}
	if n := db.Stats().MergeFailures; n != len(want) {
		t.Fatalf("MergeFailures = %d, want %d", n, len(want))
	}

	// Merge runs at once, backoff or not.
	before := attempts()
	if _, err := db.Merge(context.Background()); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Merge on a full disk: %v, want ENOSPC", err)
	}
	if attempts() != before+1 {
		t.Fatal("Merge did not run")
	}

	// Room again: the next tick merges, without waiting out the hour.
	efs.SetSpace(1 << 30)
	if got := ticks(1); !slices.Equal(got, []int{0}) {
		t.Fatalf("with room again, the next tick did not merge (attempts at %v)", got)
	}
	if n := db.Stats().Merges; n != 1 {
		t.Fatalf("Merges = %d, want 1 (%v)", n, db.Stats().MergeFailures)
	}
	if got, want := logs.take("caskade: automatic merge"), []string{"INFO caskade: automatic merge succeeded after failing"}; !slices.Equal(got, want) {
		t.Fatalf("log %q, want %q", got, want)
	}
	for i := range 40 {
		mustGet(t, db, fmt.Sprintf("k%02d", i), strings.Repeat("b", 100))
	}

	// A success forgets the failures: the next failure is an error again,
	// with the shortest wait.
	fill()
	efs.SetSpace(1000)
	if got, want := ticks(3), []int{0, 2}; !slices.Equal(got, want) {
		t.Fatalf("attempts at ticks %v after a success, want %v", got, want)
	}
	wantLog = []string{"ERROR caskade: automatic merge failed retry_in=2m0s", "WARN caskade: automatic merge failed again retry_in=4m0s"}
	if got := logs.take("caskade: automatic merge"); !slices.Equal(got, wantLog) {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantLog, "\n"))
	}
	// So does a Merge that succeeds.
	efs.SetSpace(-1)
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatal(err)
	}
	fill()
	efs.SetSpace(1000)
	if got, want := ticks(1), []int{0}; !slices.Equal(got, want) {
		t.Fatalf("attempts at ticks %v after a Merge, want %v", got, want)
	}
}

// TestAutomaticMergeBacksOffOnIOError: a persistent I/O error backs off as
// a full disk does; a failure with another cause is an error again.
func TestAutomaticMergeBacksOffOnIOError(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	logs := &logRecorder{}
	db := openTest(t, "/db", &Options{FS: efs, MaxFileSize: 4 << 10, ExpiryPeriod: -1, MergeInterval: -1,
		MergeMinDeadBytes: 1, Logger: slog.New(logs)})
	for round := range 2 {
		for i := range 40 {
			if err := db.Set(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte{byte('a' + round)}, 100)); err != nil {
				t.Fatal(err)
			}
		}
	}
	sealActive(t, db)
	efs.InjectFunc(errorfs.OpCreate, func(name string) error {
		if strings.HasSuffix(name, ".data.tmp") {
			return syscall.EIO
		}
		return nil
	})
	a := db.newAutoMerger(time.Second)
	logs.take("")
	for range 20 { // attempts at 0, 2, 6, 14
		a.tick(context.Background())
	}
	want := []string{"ERROR caskade: automatic merge failed retry_in=2s", "WARN caskade: automatic merge failed again retry_in=4s",
		"WARN caskade: automatic merge failed again retry_in=8s", "WARN caskade: automatic merge failed again retry_in=16s"}
	if got := logs.take("caskade: automatic merge"); !slices.Equal(got, want) {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Now the disk is full instead: another cause, an error again, and
	// the wait keeps doubling.
	efs.Reset()
	efs.SetSpace(1000)
	for range 32 { // attempt at 30
		a.tick(context.Background())
	}
	want = []string{"ERROR caskade: automatic merge failed retry_in=32s"}
	if got := logs.take("caskade: automatic merge"); !slices.Equal(got, want) {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
