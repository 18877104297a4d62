// Command maintbench measures caskade's maintenance operations (issue #3):
// Get and Set latency with and without a merge running, merge throughput,
// and backup and restore speed:
//
//	cd bench && go run ./cmd/maintbench
//
// It loads -keys pairs (16-byte keys, 100-byte random values) into a
// database in a temporary directory with SyncNone and -max-file-size data
// files, overwrites a random half of them so that the sealed files hold
// dead bytes, and then:
//
//   - runs one reader goroutine (Get of a random loaded key) and one writer
//     goroutine (Set of a random loaded key) in closed loops for -duration
//     without a merge, timing every operation;
//   - runs the same load for exactly as long as DB.Merge runs. A merge of
//     the default data set takes less than -duration, so this is repeated
//     in rounds, each after overwriting another random half (not timed),
//     until the rounds' merge time adds up to -duration (or -max-rounds);
//     the latencies of all rounds are pooled;
//   - merges once more after another overwrite with no foreground load, for
//     the merge throughput of an idle database;
//   - backs the database up with DB.Backup and restores the backup with
//     Restore, -reps times each, and reports the median.
//
// With -gen-db and -gen-resp it instead writes the same pairs into a new
// database (for `caskade dump`) and as RESP SET commands (for `redis-cli
// --pipe`), and exits; bench/maint.sh uses that for its load comparison
// with Redis.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/caskade/caskade"
)

const (
	keySize   = 16
	valueSize = 100
	batchLen  = 10000 // pairs per batch when loading and overwriting
)

var (
	keys        = flag.Int("keys", 1_000_000, "pairs loaded (16-byte keys, 100-byte values)")
	duration    = flag.Duration("duration", 5*time.Second, "foreground load time without merge, and the least total merge time to measure under")
	maxFileSize = flag.Int64("max-file-size", 64<<20, "caskade Options.MaxFileSize in bytes")
	mergeRate   = flag.Int64("merge-bytes-per-sec", 0, "caskade Options.MergeBytesPerSec (0: the default, no cap)")
	maxRounds   = flag.Int("max-rounds", 20, "most merge rounds under foreground load")
	reps        = flag.Int("reps", 3, "backups and restores timed (median reported)")
	out         = flag.String("out", "", "also write the markdown report to this file")
	genDB       = flag.String("gen-db", "", "only write the pairs into a new database in this directory (with -gen-resp)")
	genRESP     = flag.String("gen-resp", "", "only write the pairs as RESP SET commands to this file (with -gen-db)")
)

func key(k []byte, i uint64) []byte {
	k = append(k[:0], "maintbch"...)
	return binary.BigEndian.AppendUint64(k, i)
}

func value(v []byte, r *rand.Rand) []byte {
	v = v[:0]
	for len(v) < valueSize {
		v = binary.LittleEndian.AppendUint64(v, r.Uint64())
	}
	return v[:valueSize]
}

// fill writes pairs 0..n-1 with values from r in batches, calling each (if
// set) with every pair.
func fill(db *caskade.DB, n int, r *rand.Rand, each func(k, v []byte) error) error {
	var b caskade.Batch
	var k, v []byte
	for i := range n {
		k, v = key(k, uint64(i)), value(v, r)
		b.Set(k, v)
		if each != nil {
			if err := each(k, v); err != nil {
				return err
			}
		}
		if b.Len() == batchLen {
			if err := db.Write(&b); err != nil {
				return err
			}
			b.Reset()
		}
	}
	return db.Write(&b)
}

// overwriteHalf gives a random half of the keys new values.
func overwriteHalf(db *caskade.DB, r *rand.Rand) error {
	var b caskade.Batch
	var k, v []byte
	for _, i := range r.Perm(*keys)[:*keys/2] {
		b.Set(key(k, uint64(i)), value(v, r))
		if b.Len() == batchLen {
			if err := db.Write(&b); err != nil {
				return err
			}
			b.Reset()
		}
	}
	return db.Write(&b)
}

// samples holds operation latencies in nanoseconds and the time they were
// taken over.
type samples struct {
	ns      []int64
	elapsed time.Duration
}

func (s *samples) add(o samples) {
	s.ns = append(s.ns, o.ns...)
	s.elapsed += o.elapsed
}

func (s *samples) rate() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(len(s.ns)) / s.elapsed.Seconds()
}

// pct returns the q-quantile (nearest rank); s.ns must be sorted.
func (s *samples) pct(q float64) time.Duration {
	if len(s.ns) == 0 {
		return 0
	}
	i := int(float64(len(s.ns))*q+0.999999) - 1
	return time.Duration(s.ns[min(max(i, 0), len(s.ns)-1)])
}

// foreground runs one Get goroutine and one Set goroutine over random
// loaded keys until stop is set, timing every operation.
func foreground(db *caskade.DB, stop *atomic.Bool, seed uint64) (get, set samples, err error) {
	var wg sync.WaitGroup
	var gerr, serr error
	start := time.Now()
	wg.Go(func() {
		r := rand.New(rand.NewPCG(seed, 1))
		get.ns = make([]int64, 0, 1<<20)
		var k []byte
		for !stop.Load() {
			k = key(k, r.Uint64N(uint64(*keys)))
			t := time.Now()
			v, err := db.Get(k)
			d := time.Since(t)
			if err == nil && len(v) != valueSize {
				err = fmt.Errorf("Get %x: %d-byte value, want %d", k, len(v), valueSize)
			}
			if err != nil {
				gerr = err
				return
			}
			get.ns = append(get.ns, int64(d))
		}
	})
	wg.Go(func() {
		r := rand.New(rand.NewPCG(seed, 2))
		set.ns = make([]int64, 0, 1<<20)
		var k, v []byte
		for !stop.Load() {
			k, v = key(k, r.Uint64N(uint64(*keys))), value(v, r)
			t := time.Now()
			err := db.Set(k, v)
			d := time.Since(t)
			if err != nil {
				serr = err
				return
			}
			set.ns = append(set.ns, int64(d))
		}
	})
	wg.Wait()
	get.elapsed = time.Since(start)
	set.elapsed = get.elapsed
	return get, set, errors.Join(gerr, serr)
}

// quiesce flushes dirty pages of earlier steps to disk and collects
// garbage, so that a measurement does not pay for the step before it.
func quiesce() {
	syscall.Sync()
	runtime.GC()
}

// dirBytes sums the sizes of the regular files in dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	return n, err
}

func mb(n int64) float64 { return float64(n) / 1e6 }

func mbps(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return mb(n) / d.Seconds()
}

func fmtDur(d time.Duration) string {
	us := float64(d) / 1e3
	switch {
	case us < 10:
		return fmt.Sprintf("%.2fµs", us)
	case us < 1000:
		return fmt.Sprintf("%.1fµs", us)
	case us < 1e6:
		return fmt.Sprintf("%.2fms", us/1e3)
	}
	return fmt.Sprintf("%.2fs", us/1e6)
}

func fmtRate(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }

// lats formats ops/s · p50 · p99 · p999 of sorted samples.
func lats(s *samples) string {
	return fmt.Sprintf("%s ops/s · %s · %s · %s", fmtRate(s.rate()), fmtDur(s.pct(0.5)), fmtDur(s.pct(0.99)), fmtDur(s.pct(0.999)))
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "maintbench: "+format+"\n", args...)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// mergeRun is one merge and what the database looked like around it.
type mergeRun struct {
	label          string
	st             caskade.MergeStats
	before, after  caskade.Stats
	get, set       samples // foreground latencies, if any
	liveBytesTotal int64   // Stats().Merge.BytesTotal seen while it ran
}

// merge runs db.Merge, with the foreground load for as long as it runs if
// withLoad.
func merge(ctx context.Context, db *caskade.DB, label string, withLoad bool, seed uint64) (mergeRun, error) {
	m := mergeRun{label: label, before: db.Stats()}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var fgErr error
	if withLoad {
		wg.Go(func() { m.get, m.set, fgErr = foreground(db, &stop, seed) })
	}
	poll := make(chan struct{})
	wg.Go(func() {
		for {
			if mp := db.Stats().Merge; mp.Running && mp.BytesTotal > 0 {
				m.liveBytesTotal = mp.BytesTotal
				return
			}
			select {
			case <-poll:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	st, err := db.Merge(ctx)
	stop.Store(true)
	close(poll)
	wg.Wait()
	m.st = st
	m.after = db.Stats()
	return m, errors.Join(err, fgErr)
}

// timed is one timed backup or restore.
type timed struct {
	d     time.Duration
	bytes int64
}

// medianOf returns the run with the median time.
func medianOf(ts []timed) timed {
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b timed) int { return cmp.Compare(a.d, b.d) })
	return s[len(s)/2]
}

func allOf(ts []timed) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmtDur(t.d))
	}
	return strings.Join(parts, ", ")
}

func run(ctx context.Context, report func(string)) error {
	tmp, err := os.MkdirTemp("", "maintbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "db")
	opts := &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1, MaxFileSize: *maxFileSize, MergeBytesPerSec: *mergeRate}
	db, err := caskade.Open(dir, opts)
	if err != nil {
		return err
	}
	defer db.Close()
	r := rand.New(rand.NewPCG(1, 1))
	start := time.Now()
	if err := fill(db, *keys, r, nil); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	progress("loaded %d pairs in %v", *keys, time.Since(start).Round(time.Millisecond))
	if err := overwriteHalf(db, r); err != nil {
		return fmt.Errorf("overwrite: %w", err)
	}
	st0 := db.Stats()
	quiesce()

	rate := "0 (no cap, the default)"
	if *mergeRate > 0 {
		rate = fmt.Sprintf("%d bytes/s", *mergeRate)
	}
	report(fmt.Sprintf("Command (from bench/): `go run ./cmd/maintbench %s`\n\n", strings.Join(os.Args[1:], " ")))
	report(fmt.Sprintf("%d keys (%d-byte keys, %d-byte values), then a random half overwritten: %d data file(s), %.1f MB on disk, %.1f MB dead. "+
		"Options: Sync none, MaxFileSize %d, MergeBytesPerSec %s, MergeInterval -1 (no automatic merge). "+
		"GOMAXPROCS=%d, %s, %s, load average %s. MB = 10^6 bytes.\n\n",
		*keys, keySize, valueSize, len(st0.Files), mb(st0.DiskBytes), mb(st0.DeadBytes),
		*maxFileSize, rate, runtime.GOMAXPROCS(0), runtime.Version(), time.Now().UTC().Format(time.RFC3339), loadAvg()))

	// Foreground latency without a merge.
	progress("foreground load without merge for %v", *duration)
	var stop atomic.Bool
	timer := time.AfterFunc(*duration, func() { stop.Store(true) })
	get0, set0, err := foreground(db, &stop, 10)
	timer.Stop()
	if err != nil {
		return fmt.Errorf("foreground: %w", err)
	}

	// The same load while merges run.
	var rounds []mergeRun
	var get1, set1 samples
	for round := 1; round <= *maxRounds && get1.elapsed < *duration; round++ {
		if round > 1 {
			if err := overwriteHalf(db, r); err != nil {
				return fmt.Errorf("overwrite: %w", err)
			}
		}
		quiesce()
		m, err := merge(ctx, db, fmt.Sprintf("round %d, under foreground load", round), true, 10+uint64(round))
		if err != nil {
			return fmt.Errorf("merge round %d: %w", round, err)
		}
		if m.st.InputFiles == 0 {
			return fmt.Errorf("merge round %d had no sealed file to merge: lower -max-file-size (now %d) or raise -keys", round, *maxFileSize)
		}
		progress("merge round %d: %v", round, m.st.Duration.Round(time.Millisecond))
		get1.add(m.get)
		set1.add(m.set)
		rounds = append(rounds, m)
	}
	if err := overwriteHalf(db, r); err != nil {
		return fmt.Errorf("overwrite: %w", err)
	}
	quiesce()
	alone, err := merge(ctx, db, "alone, no foreground load", false, 0)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	progress("merge alone: %v", alone.st.Duration.Round(time.Millisecond))

	for _, s := range []*samples{&get0, &set0, &get1, &set1} {
		slices.Sort(s.ns)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "### Foreground latency with and without merge\n\n")
	fmt.Fprintf(&sb, "One goroutine doing Get of a random loaded key and one doing Set of a random loaded key (new random value), each in a closed loop, every operation timed. "+
		"Without merge: %v. During merge: the same load for exactly as long as each merge ran, %d merge round(s) (see the merge table), %v in all.\n\n",
		get0.elapsed.Round(time.Millisecond), len(rounds), get1.elapsed.Round(time.Millisecond))
	fmt.Fprintf(&sb, "| op | without merge: ops/s · p50 · p99 · p999 | during merge: ops/s · p50 · p99 · p999 | p99 during ÷ without | target ≤ 2x |\n| --- | --- | --- | --- | --- |\n")
	for _, o := range []struct {
		name   string
		s0, s1 *samples
	}{{"Get", &get0, &get1}, {"Set", &set0, &set1}} {
		x := float64(o.s1.pct(0.99)) / float64(o.s0.pct(0.99))
		verdict := "met"
		if x > 2 {
			verdict = "missed"
		}
		fmt.Fprintf(&sb, "| %s | %s | %s | %.2fx | %s |\n", o.name, lats(o.s0), lats(o.s1), x, verdict)
	}
	report(sb.String() + "\n")

	sb.Reset()
	fmt.Fprintf(&sb, "### Merge throughput\n\n")
	fmt.Fprintf(&sb, "Each round follows an overwrite of a random half of the keys (round 1: the initial one). Input: the sealed files merged (MergeStats.InputBytes); "+
		"live: the live bytes of those files when the merge began (Stats().Merge.BytesTotal); output: the files written (MergeStats.OutputBytes). MB/s is over the merge's wall time (MergeStats.Duration).\n\n")
	fmt.Fprintf(&sb, "| merge | input files | input MB | live MB | output MB | records | wall time | input MB/s | output MB/s | disk MB before → after |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, m := range append(rounds, alone) {
		fmt.Fprintf(&sb, "| %s | %d | %.1f | %.1f | %.1f | %d | %s | %.1f | %.1f | %.1f → %.1f |\n",
			m.label, m.st.InputFiles, mb(m.st.InputBytes), mb(m.liveBytesTotal), mb(m.st.OutputBytes), m.st.Records,
			fmtDur(m.st.Duration), mbps(m.st.InputBytes, m.st.Duration), mbps(m.st.OutputBytes, m.st.Duration),
			mb(m.before.DiskBytes), mb(m.after.DiskBytes))
	}
	report(sb.String() + "\n")

	// Backup and restore.
	var backups, restores []timed
	var bst caskade.BackupStats
	var last string
	for i := range *reps {
		dst := filepath.Join(tmp, fmt.Sprintf("backup%d", i))
		quiesce()
		t := time.Now()
		bst, err = db.Backup(ctx, dst, nil)
		d := time.Since(t)
		if err != nil {
			return fmt.Errorf("backup: %w", err)
		}
		n, err := dirBytes(dst)
		if err != nil {
			return err
		}
		backups = append(backups, timed{d, n})
		if last != "" {
			os.RemoveAll(last)
		}
		last = dst
	}
	for i := range *reps {
		dst := filepath.Join(tmp, fmt.Sprintf("restore%d", i))
		quiesce()
		t := time.Now()
		err := caskade.Restore(ctx, last, dst, nil)
		d := time.Since(t)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		n, err := dirBytes(dst)
		if err != nil {
			return err
		}
		restores = append(restores, timed{d, n})
		if i == *reps-1 {
			// Check that the restored database is the one backed up.
			rdb, err := caskade.Open(dst, &caskade.Options{ReadOnly: true})
			if err != nil {
				return fmt.Errorf("open restored: %w", err)
			}
			rst := rdb.Stats()
			rdb.Close()
			if rst.Keys != *keys || rst.Version != bst.Version {
				return fmt.Errorf("restored database has %d keys at version %d, want %d at %d", rst.Keys, rst.Version, *keys, bst.Version)
			}
		}
		os.RemoveAll(dst)
	}
	progress("backup and restore done")
	bm, rm := medianOf(backups), medianOf(restores)
	sb.Reset()
	fmt.Fprintf(&sb, "### Backup and restore\n\n")
	fmt.Fprintf(&sb, "DB.Backup(ctx, dst, nil) of the database after the merges (%d data and hint files, %d keys; a copy, not hard links) into a new directory, then caskade.Restore(ctx, backup, newDir, nil) of the last backup into a new directory, %d times each, warm page cache. "+
		"Bytes: the sum of the file sizes in the destination. Backup seals the active file, copies and fsyncs every data and hint file, then reads each copy back for its CRC-32C; "+
		"Restore reads and checks every file of the backup, copies and fsyncs it, and reads and checks the copy. The last restore was opened and has every key at the backup's version.\n\n",
		bst.Files, *keys, *reps)
	fmt.Fprintf(&sb, "| op | MB | median time | MB/s (median run) | all runs |\n| --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(&sb, "| Backup | %.1f | %s | %.1f | %s |\n", mb(bm.bytes), fmtDur(bm.d), mbps(bm.bytes, bm.d), allOf(backups))
	fmt.Fprintf(&sb, "| Restore | %.1f | %s | %.1f | %s |\n", mb(rm.bytes), fmtDur(rm.d), mbps(rm.bytes, rm.d), allOf(restores))
	report(sb.String() + "\n")
	return nil
}

// gen writes the benchmark's pairs into a new database in dir and as RESP
// SET commands to respPath.
func gen(dir, respPath string) error {
	db, err := caskade.Open(dir, &caskade.Options{Sync: caskade.SyncNone, MergeInterval: -1})
	if err != nil {
		return err
	}
	f, err := os.Create(respPath)
	if err != nil {
		db.Close()
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var cmd []byte
	err = fill(db, *keys, rand.New(rand.NewPCG(1, 1)), func(k, v []byte) error {
		cmd = fmt.Appendf(cmd[:0], "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(v), v)
		_, err := w.Write(cmd)
		return err
	})
	err = errors.Join(err, w.Flush(), f.Close(), db.Close())
	if err == nil {
		progress("wrote %d pairs into %s and %s", *keys, dir, respPath)
	}
	return err
}

func main() {
	flag.Parse()
	if *keys < 2 || *duration <= 0 || *maxRounds <= 0 || *reps <= 0 || *mergeRate < 0 {
		fail(errors.New("-keys must be at least 2; -duration, -max-rounds and -reps positive; -merge-bytes-per-sec not negative"))
	}
	if *genDB != "" || *genRESP != "" {
		if *genDB == "" || *genRESP == "" {
			fail(errors.New("-gen-db and -gen-resp go together"))
		}
		if err := gen(*genDB, *genRESP); err != nil {
			fail(err)
		}
		return
	}
	var sb strings.Builder
	report := func(s string) {
		fmt.Print(s)
		sb.WriteString(s)
	}
	if err := run(context.Background(), report); err != nil {
		fail(err)
	}
	if *out != "" {
		if err := os.WriteFile(*out, []byte(sb.String()), 0o644); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "maintbench:", err)
	os.Exit(1)
}
