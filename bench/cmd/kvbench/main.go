// Command kvbench runs the same workloads against caskade and its peers
// (pebble, bbolt, badger, bitcask) in one process and prints markdown tables
// with caskade's ratio against each peer. See bench/README.md.
//
// Run it from the bench module:
//
//	cd bench && go run ./cmd/kvbench [flags]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	flagWorkloads  = flag.String("workloads", "set,get,scan,open,mem", "comma-separated workloads to run: set, get, scan, open, mem")
	flagPeers      = flag.String("peers", "pebble,bbolt,badger,bitcask", "comma-separated peers to compare with (\"none\" for caskade alone)")
	flagKeys       = flag.Uint64("keys", 1_000_000, "keys pre-loaded for get, scan, open and mem")
	flagBigKeys    = flag.Uint64("bigkeys", 0, "if set (e.g. 10000000), also run get, scan, open and mem with this many keys (slow)")
	flagDuration   = flag.Duration("duration", 3*time.Second, "length of each timed run (set, get, scan)")
	flagSyncDur    = flag.Duration("sync-duration", 0, "length of each fsync-per-write set run (0: -duration)")
	flagGoroutines = flag.String("goroutines", "1,16,64", "writer goroutine counts for set")
	flagReaders    = flag.String("readers", "", "reader goroutine counts for get (default \"1,GOMAXPROCS\")")
	flagScanLen    = flag.Int("scan-len", 1000, "keys per range scan")
	flagOpenReps   = flag.Int("open-reps", 3, "opens per open measurement; the median is reported")
	flagReps       = flag.Int("reps", 1, "repetitions of each set, get and scan run; the one with the median throughput is reported")
	flagBitcaskMax = flag.Int("bitcask-max-datafile-size", 0, "bitcask WithMaxDatafileSize in bytes (0: caskade's file size; bitcask's own default, 1 MiB, makes large loads quadratic)")
	flagBoltDelay  = flag.Duration("bbolt-max-batch-delay", 0, "bbolt DB.MaxBatchDelay for concurrent set (0: bbolt's default, 10ms)")
	flagFileSize   = flag.Int64("caskade-max-file-size", 0, "caskade Options.MaxFileSize in bytes (0: caskade's default, 256 MiB)")
	flagSettle     = flag.Duration("settle", 2*time.Minute, "after a bulk load, wait up to this long for LSM engines (pebble, badger) to finish flushes and compactions before closing it and running open, get and scan (0: do not wait)")
	flagOut        = flag.String("out", "", "also write the report (markdown) to this file")
	flagTmp        = flag.String("tmpdir", "", "parent of the temporary data directory (default os.TempDir())")
	flagLabel      = flag.String("label", "", "free text printed in the report header (e.g. the caskade commit)")
)

// run holds the state of one kvbench invocation.
type run struct {
	tmp     string
	engines []*engine // caskade first
	procs   int       // GOMAXPROCS at start
	start   time.Time
	// loadStart is /proc/loadavg when the run began: other processes on
	// the machine skew every number.
	loadStart string
	dirSeq    int

	setT, loadT, getT, scanT, openT, memT *table
}

func main() {
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./cmd/kvbench [flags]   (from the bench module)\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "kvbench:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	workloads, err := parseSet(*flagWorkloads, []string{"set", "get", "scan", "open", "mem"})
	if err != nil {
		return fmt.Errorf("-workloads: %w", err)
	}
	var peers []string
	if p := strings.TrimSpace(*flagPeers); p != "" && p != "none" {
		set, err := parseSet(p, peerOrder)
		if err != nil {
			return fmt.Errorf("-peers: %w", err)
		}
		for _, name := range peerOrder {
			if set[name] {
				peers = append(peers, name)
			}
		}
	}
	goroutines, err := parseInts(*flagGoroutines)
	if err != nil {
		return fmt.Errorf("-goroutines: %w", err)
	}
	procs := runtime.GOMAXPROCS(0)
	readersFlag := *flagReaders
	if readersFlag == "" {
		readersFlag = "1," + strconv.Itoa(procs)
	}
	readers, err := parseInts(readersFlag)
	if err != nil {
		return fmt.Errorf("-readers: %w", err)
	}
	readers = uniq(readers)
	if *flagKeys == 0 || *flagScanLen <= 0 || *flagOpenReps <= 0 || *flagReps <= 0 || *flagDuration <= 0 {
		return fmt.Errorf("-keys, -scan-len, -open-reps, -reps and -duration must be positive")
	}
	if *flagSyncDur == 0 {
		*flagSyncDur = *flagDuration
	}
	caskadeMaxFileSize = *flagFileSize
	bboltMaxBatchDelay = *flagBoltDelay
	bitcaskMaxDatafileSize = *flagBitcaskMax

	parent := *flagTmp
	if parent == "" {
		parent = os.TempDir()
	}
	tmp, err := os.MkdirTemp(parent, "kvbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "\nkvbench: %v: removing %s\n", s, tmp)
		os.RemoveAll(tmp)
		os.Exit(130)
	}()

	r := &run{tmp: tmp, procs: procs, start: time.Now(), loadStart: loadAvg()}
	r.engines = append(r.engines, caskadeEngine)
	for _, p := range peers {
		r.engines = append(r.engines, engines[p])
	}
	r.setT = &table{name: "set", intro: fmt.Sprintf("Writes of new %d-byte keys with %d-byte values into an empty database, for a fixed time per run (%v; %v for fsync-per-write runs), g goroutines writing at once. Result: acknowledged writes per second. Ratio: caskade ops/s ÷ peer ops/s under the same durability (peer fsync-per-write vs caskade SyncAlways; peer no-sync vs caskade SyncNone, and in parentheses vs SyncEverySec).", keySize, valueSize, *flagDuration, *flagSyncDur)}
	r.loadT = &table{name: "load (setup of the read workloads; informational)", intro: "The bulk load that precedes get, scan, open and mem: keys in random order through each engine's batch API without fsync per write (bbolt: sorted keys, 100k per transaction; bitcask has no batch API: one Put per key). Result: keys/s and the size on disk after closing. Ratio: keys/s."}
	r.getT = &table{name: "get", intro: fmt.Sprintf("Point reads of random existing keys (uniform over all pre-loaded keys, warm page cache) for %v, g goroutines. Result: ops/s · p50 · p99 latency per Get (latency includes two clock reads). Ratio: caskade ops/s ÷ peer ops/s · peer p50 ÷ caskade p50 · peer p99 ÷ caskade p99.", *flagDuration)}
	r.scanT = &table{name: "scan", intro: fmt.Sprintf("Forward iterator from a random existing key, reading %d keys and their values, one goroutine for %v. Result: scans/s · keys/s. Ratio: caskade ÷ peer for each.", *flagScanLen, *flagDuration)}
	r.openT = &table{name: "open", intro: fmt.Sprintf("Time for Open of the pre-loaded data after a clean Close (warm page cache; median of %d opens, with the fastest and slowest in parentheses). caskade \"no hints\" deletes every *.hint file before each open (Open then scans the data files and writes the hint files again, inside the timed region); bitcask \"no index\" deletes its index file likewise. Ratio: peer time ÷ caskade time, against caskade at the default GOMAXPROCS with hints (bitcask's no-index row against caskade's no-hints row).", *flagOpenReps)}
	r.memT = &table{name: "mem", intro: "Go heap held per key by engines whose key directory lives on the heap (caskade, bitcask): runtime.GC() twice, HeapAlloc before opening vs with the DB open, divided by the key count. \"after load\" measures the DB that wrote the keys, once its background work (hint files) is done; \"after reopen\" a fresh Open of the same data (from hint / index files). Ratio: peer bytes ÷ caskade bytes. Get latency at each size is in the get table."}

	if slices.Contains(peers, "bbolt") {
		r.setT.notes = append(r.setT.notes, "bbolt with g>1 uses db.Batch, which starts a batch when MaxBatchSize (1000) calls have queued or MaxBatchDelay has passed; with fewer than 1000 writers every batch waits out the delay, so bbolt's concurrent rate is capped near g writes per delay (tune with -bbolt-max-batch-delay).")
	}
	r.setT.notes = append(r.setT.notes, "fsync cost on a VM disk varies a lot from second to second; compare fsync-per-write rows from the same run only, and prefer -reps=3 or a longer -sync-duration for decisions.")
	if slices.Contains(peers, "bitcask") {
		r.scanT.notes = append(r.scanT.notes, "bitcask has no seek: its Range walks its radix tree from the first key sharing start's and end's common prefix (here all keys), so a scan's cost grows with the start key's rank.")
	}
	r.getT.notes = append(r.getT.notes, "caskade's Get returns a copy the caller owns; pebble's value is read and released through its Closer; bbolt and badger read inside a read-only transaction (View); bitcask returns a fresh slice.")
	r.openT.notes = append(r.openT.notes, "pebble, bbolt and badger keep their indexes on disk and read them lazily, so their Open does far less work than a Bitcask-style engine (caskade, bitcask) that rebuilds an in-memory key directory; only caskade vs bitcask is like for like.")

	r.header(os.Stderr)
	r.checkDisk(workloads)

	if workloads["set"] {
		r.runSet(goroutines)
	}
	sizes := []uint64{*flagKeys}
	if *flagBigKeys > 0 {
		sizes = append(sizes, *flagBigKeys)
	}
	if workloads["get"] || workloads["scan"] || workloads["open"] || workloads["mem"] {
		for _, n := range sizes {
			for _, e := range r.engines {
				r.runDataset(e, n, workloads, readers)
			}
		}
	}
	if workloads["mem"] && !slices.Contains(peers, "bitcask") {
		r.memT.notes = append(r.memT.notes, "bitcask was not selected, so caskade has no peer here (pebble, bbolt and badger keep their index in files and block caches, not in a Go-heap key directory, so heap per key does not compare).")
	}

	var buf bytes.Buffer
	r.header(&buf)
	for _, t := range []*table{r.setT, r.getT, r.scanT, r.openT, r.memT, r.loadT} {
		t.write(&buf)
	}
	fmt.Fprintf(&buf, "Total time: %s. Load average (1, 5, 15 min) at start: %s; at end: %s.\n", time.Since(r.start).Round(time.Second), r.loadStart, loadAvg())
	os.Stdout.Write(buf.Bytes())
	if *flagOut != "" {
		if err := os.WriteFile(*flagOut, buf.Bytes(), 0o644); err != nil {
			return err
		}
		r.logf("wrote %s", *flagOut)
	}
	return nil
}

// ---------------------------------------------------------------- header

func commandLine() string {
	var b strings.Builder
	exe := os.Args[0]
	if strings.Contains(exe, "go-build") {
		b.WriteString("go run ./cmd/kvbench")
	} else {
		b.WriteString(exe)
	}
	for _, a := range os.Args[1:] {
		b.WriteByte(' ')
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=.,/:+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (r *run) header(w io.Writer) {
	fmt.Fprintf(w, "# kvbench\n\n")
	fmt.Fprintf(w, "Command (from bench/): `%s`\n\n", commandLine())
	var fl []string
	flag.VisitAll(func(f *flag.Flag) { fl = append(fl, fmt.Sprintf("-%s=%s", f.Name, f.Value)) })
	fmt.Fprintf(w, "Effective flags: `%s`\n\n", strings.Join(fl, " "))
	if *flagLabel != "" {
		fmt.Fprintf(w, "Label: %s\n\n", *flagLabel)
	}
	fmt.Fprintf(w, "- started %s; %s %s/%s, NumCPU=%d, GOMAXPROCS=%d\n", r.start.Format(time.RFC3339), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), r.procs)
	fmt.Fprintf(w, "- load average at start (1, 5, 15 min): %s (anything else running on the machine skews the results)\n", r.loadStart)
	fmt.Fprintf(w, "- data under %s (%s free at start); removed at exit\n", r.tmp, fmtBytes(freeBytes(r.tmp)))
	fmt.Fprintf(w, "- engines: %s\n", strings.Join(r.engineVersions(), ", "))
	fmt.Fprintf(w, "- keys %d bytes (\"%s\" + 8 bytes), values %d bytes pseudo-random (incompressible); every engine's Get and scan values are checked for length and order\n\n", keySize, keyPrefix, valueSize)
}

func (r *run) engineVersions() []string {
	mods := map[string]string{
		"caskade": "github.com/caskade/caskade",
		"pebble":  "github.com/cockroachdb/pebble/v2",
		"bbolt":   "go.etcd.io/bbolt",
		"badger":  "github.com/dgraph-io/badger/v4",
		"bitcask": "git.mills.io/prologic/bitcask",
	}
	vers := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v = "replaced by " + d.Replace.Path
				if d.Replace.Version != "" {
					v += "@" + d.Replace.Version
				}
			}
			vers[d.Path] = v
		}
	}
	var out []string
	for _, e := range r.engines {
		m := mods[e.name]
		out = append(out, fmt.Sprintf("%s (%s %s)", e.name, m, vers[m]))
	}
	return out
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// median runs f -reps times and returns the result with the median first
// metric (throughput), or the first error.
func median(f func() ([]metric, error)) ([]metric, error) {
	var all [][]metric
	for range *flagReps {
		m, err := f()
		if err != nil {
			return nil, err
		}
		all = append(all, m)
	}
	sort.Slice(all, func(i, j int) bool { return all[i][0].value < all[j][0].value })
	return all[len(all)/2], nil
}

func freeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// checkDisk warns when the temp file system looks too small.
func (r *run) checkDisk(workloads map[string]bool) {
	n := *flagKeys
	if *flagBigKeys > n {
		n = *flagBigKeys
	}
	// One engine's data set at a time; badger's vlog plus LSM is the
	// largest, at well under 600 bytes per key.
	need := int64(n)*600 + 2<<30
	if free := freeBytes(r.tmp); free >= 0 && free < need {
		r.logf("WARNING: %s has %s free; the largest data set may need about %s", r.tmp, fmtBytes(free), fmtBytes(need))
	}
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%7.1fs] %s\n", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

// newDir returns a fresh data directory path (not yet created).
func (r *run) newDir(name string) string {
	r.dirSeq++
	return filepath.Join(r.tmp, fmt.Sprintf("%s-%d", name, r.dirSeq))
}

// ---------------------------------------------------------------- set

func (r *run) runSet(goroutines []int) {
	for _, g := range goroutines {
		wl := fmt.Sprintf("set g=%d", g)
		for _, e := range r.engines {
			for _, m := range e.modes {
				rw := &row{workload: wl, engine: e.name, config: e.config(m, g), match: m.String()}
				if e.name != "caskade" && m == syncNone {
					rw.alt = syncEverySec.String()
				}
				rw.metrics, rw.err = median(func() ([]metric, error) { return r.setRun(e, m, g) })
				if rw.err != nil {
					r.logf("%s %s %s: %v", wl, e.name, m, rw.err)
				}
				r.setT.add(rw)
			}
		}
	}
}

func (r *run) setRun(e *engine, m syncMode, g int) ([]metric, error) {
	dir := r.newDir(e.name)
	defer os.RemoveAll(dir)
	s, err := e.open(dir, openCfg{sync: m, writers: g})
	if err != nil {
		return nil, err
	}
	d := *flagDuration
	if m == syncAlways {
		d = *flagSyncDur
	}
	keys, vals := make([][]byte, g), make([][]byte, g)
	for w := range g {
		keys[w], vals[w] = make([]byte, keySize), make([]byte, valueSize)
	}
	res := runFor(d, g, false, func(w int, i uint64) error {
		n := uint64(w)<<40 | i
		keyAt(keys[w], n)
		valueAt(vals[w], n)
		return s.set(keys[w], vals[w])
	})
	if err := s.close(); res.err == nil {
		res.err = err
	}
	if res.err != nil {
		return nil, res.err
	}
	ops := res.opsPerSec()
	r.logf("set g=%d %s %s: %s (%d writes in %v)", g, e.name, m, fmtRate(ops, "ops/s"), res.ops, res.elapsed.Round(time.Millisecond))
	return []metric{{value: ops, text: fmtRate(ops, "ops/s"), higherBetter: true}}, nil
}

// ---------------------------------------------------------------- data set

// runDataset loads n keys into e and runs the read-side workloads on them:
// open (reopen timings), mem (heap per key), get and scan.
func (r *run) runDataset(e *engine, n uint64, workloads map[string]bool, readers []int) {
	dir := r.newDir(e.name)
	defer os.RemoveAll(dir)
	ns := fmtCount(n)
	memOn := workloads["mem"] && e.inMemoryIndex
	memWl := "mem " + ns + " keys"

	// Load.
	var h0 uint64
	if memOn {
		h0 = heapAlloc()
	}
	s, err := e.open(dir, openCfg{sync: syncNone, writers: 1})
	if err == nil {
		t := time.Now()
		err = s.load(n)
		d := time.Since(t)
		var settle string
		if err == nil {
			settle = r.settle(e, s, ns, "load")
		}
		if err == nil && memOn {
			// After the background work of the load (caskade's hint
			// files), whose transient buffers are not the index's.
			h1 := heapAlloc()
			r.memT.add(memRow(memWl, e.name, "after load (DB still open)", "load", h0, h1, n))
		}
		if cerr := s.close(); err == nil {
			err = cerr
		}
		if err == nil {
			size, files := dirSize(dir)
			rate := float64(n) / d.Seconds()
			cfg := fmt.Sprintf("%s on disk, %d files", fmtBytes(size), files)
			if settle != "" {
				cfg += "; " + settle + " after the load (not timed)"
			}
			r.loadT.add(&row{workload: "load " + ns + " keys", engine: e.name, config: cfg, match: "load",
				metrics: []metric{{value: rate, text: fmt.Sprintf("%s (%s)", fmtRate(rate, "keys/s"), fmtDur(d)), higherBetter: true}}})
			r.logf("load %s %s: %s in %v, %s on disk", ns, e.name, fmtRate(rate, "keys/s"), d.Round(time.Millisecond), fmtBytes(size))
		}
	}
	if err != nil {
		r.logf("load %s %s: %v", ns, e.name, err)
		r.loadT.add(&row{workload: "load " + ns + " keys", engine: e.name, match: "load", err: err})
		return
	}

	if workloads["open"] {
		r.runOpen(e, dir, n)
	}

	if !(workloads["get"] || workloads["scan"] || memOn) {
		return
	}
	if memOn {
		h0 = heapAlloc()
	}
	s, err = e.open(dir, openCfg{sync: syncNone, writers: 1})
	if err != nil {
		r.logf("reopen %s %s: %v", ns, e.name, err)
		return
	}
	defer s.close()
	if memOn {
		h1 := heapAlloc()
		how := "after reopen (from hint files)"
		if e.name == "bitcask" {
			how = "after reopen (from index file)"
		}
		r.memT.add(memRow(memWl, e.name, how, "reopen", h0, h1, n))
	}
	readCfg := ""
	if sd := r.settle(e, s, ns, "reopen"); sd != "" {
		readCfg = "; after reopen " + sd
	}
	if workloads["get"] || memOn {
		rs := readers
		if !workloads["get"] {
			rs = []int{1}
		}
		for _, g := range rs {
			r.getT.add(r.getRun(e, s, n, g, readCfg))
		}
	}
	if workloads["scan"] {
		r.scanT.add(r.scanRun(e, s, n, readCfg))
	}
}

// settle waits (up to -settle) for an LSM engine's flushes and compactions
// to finish, that is for a second in which none ran, and describes the wait;
// "" if there was nothing to wait for.
func (r *run) settle(e *engine, s store, ns, after string) string {
	st, ok := s.(settler)
	if !ok || *flagSettle <= 0 {
		return ""
	}
	const poll, quietPolls = 100 * time.Millisecond, 10
	t := time.Now()
	var lastBusy time.Time
	for quiet := 0; quiet < quietPolls; {
		if st.busy() {
			quiet = 0
			lastBusy = time.Now()
		} else {
			quiet++
		}
		if time.Since(t) >= *flagSettle {
			r.logf("%s %s: still compacting %v after %s", e.name, ns, *flagSettle, after)
			return fmt.Sprintf("still compacting after a %v wait", *flagSettle)
		}
		time.Sleep(poll)
	}
	if lastBusy.IsZero() {
		r.logf("%s %s: no flush or compaction running after %s", e.name, ns, after)
		return ""
	}
	d := lastBusy.Sub(t)
	r.logf("%s %s: compactions done %s after %s", e.name, ns, fmtDur(d), after)
	return fmt.Sprintf("compactions ran %s more", fmtDur(d))
}

func memRow(wl, engine, config, match string, h0, h1, n uint64) *row {
	grown := int64(h1) - int64(h0)
	per := float64(grown) / float64(n)
	return &row{workload: wl, engine: engine, config: config, match: match,
		metrics: []metric{{value: per, text: fmt.Sprintf("%.1f B/key (heap +%s)", per, fmtBytes(grown))}}}
}

func (r *run) getRun(e *engine, s store, n uint64, g int, cfg string) *row {
	wl := fmt.Sprintf("get %s keys, g=%d", fmtCount(n), g)
	rw := &row{workload: wl, engine: e.name, config: "random existing keys" + cfg, match: "get"}
	rw.metrics, rw.err = median(func() ([]metric, error) { return r.getOnce(wl, e, s, n, g) })
	return rw
}

func (r *run) getOnce(wl string, e *engine, s store, n uint64, g int) ([]metric, error) {
	keys := make([][]byte, g)
	rngs := make([]*rand.Rand, g)
	for w := range g {
		keys[w] = make([]byte, keySize)
		rngs[w] = rand.New(rand.NewPCG(uint64(w)+1, 0x5EED))
	}
	res := runFor(*flagDuration, g, true, func(w int, _ uint64) error {
		keyAt(keys[w], rngs[w].Uint64N(n))
		l, err := s.get(keys[w])
		if err != nil {
			return fmt.Errorf("get %x: %w", keys[w], err)
		}
		if l != valueSize {
			return fmt.Errorf("get %x: value of %d bytes, want %d", keys[w], l, valueSize)
		}
		return nil
	})
	if res.err != nil {
		r.logf("%s %s: %v", wl, e.name, res.err)
		return nil, res.err
	}
	ops := res.opsPerSec()
	p50, p99 := res.lat.quantile(0.50), res.lat.quantile(0.99)
	r.logf("%s %s: %s p50 %s p99 %s", wl, e.name, fmtRate(ops, "ops/s"), fmtDur(p50), fmtDur(p99))
	return []metric{
		{value: ops, text: fmtRate(ops, "ops/s"), higherBetter: true},
		{value: float64(p50), text: "p50 " + fmtDur(p50)},
		{value: float64(p99), text: "p99 " + fmtDur(p99)},
	}, nil
}

func (r *run) scanRun(e *engine, s store, n uint64, cfg string) *row {
	wl := fmt.Sprintf("scan %d of %s keys", *flagScanLen, fmtCount(n))
	rw := &row{workload: wl, engine: e.name, config: "forward iterator, values read" + cfg, match: "scan"}
	if e.name == "bitcask" {
		rw.config = "Range (walks from the key-space start) + Get per key"
	}
	rw.metrics, rw.err = median(func() ([]metric, error) { return r.scanOnce(wl, e, s, n) })
	return rw
}

func (r *run) scanOnce(wl string, e *engine, s store, n uint64) ([]metric, error) {
	scanLen := *flagScanLen
	rng := rand.New(rand.NewPCG(7, 0x5EED))
	start := make([]byte, keySize)
	prev := make([]byte, 0, keySize)
	var total uint64
	var bad error
	res := runFor(*flagDuration, 1, false, func(int, uint64) error {
		keyAt(start, rng.Uint64N(n))
		prev = prev[:0]
		c, err := s.scan(start, scanLen, func(k, v []byte) {
			switch {
			case bad != nil:
			case len(prev) == 0 && !bytes.Equal(k, start):
				bad = fmt.Errorf("scan from %x began at %x", start, k)
			case len(prev) > 0 && bytes.Compare(k, prev) <= 0:
				bad = fmt.Errorf("scan from %x: %x after %x", start, k, prev)
			case len(v) != valueSize:
				bad = fmt.Errorf("scan from %x: value of %x has %d bytes", start, k, len(v))
			}
			prev = append(prev[:0], k...)
		})
		if err == nil && c == 0 {
			err = fmt.Errorf("scan from existing key %x found nothing", start)
		}
		if err == nil {
			err = bad
		}
		total += uint64(c)
		return err
	})
	if res.err != nil {
		r.logf("%s %s: %v", wl, e.name, res.err)
		return nil, res.err
	}
	sps := res.opsPerSec()
	kps := float64(total) / res.elapsed.Seconds()
	r.logf("%s %s: %s, %s", wl, e.name, fmtRate(sps, "scans/s"), fmtRate(kps, "keys/s"))
	return []metric{
		{value: sps, text: fmtRate(sps, "scans/s"), higherBetter: true},
		{value: kps, text: fmtRate(kps, "keys/s"), higherBetter: true},
	}, nil
}

// ---------------------------------------------------------------- open

func (r *run) runOpen(e *engine, dir string, n uint64) {
	wl := fmt.Sprintf("open %s keys", fmtCount(n))
	size, files := dirSize(dir)
	disk := fmt.Sprintf("%s, %d files", fmtBytes(size), files)
	if e.name != "caskade" {
		rw := &row{workload: wl, engine: e.name, config: "reopen; " + disk, match: "hints"}
		rw.metrics, rw.err = r.timeOpens(e, dir, 0, false)
		r.openT.add(rw)
		if e.dropIndex != nil {
			rw := &row{workload: wl, engine: e.name, config: "no index file (rebuilt from data files)", match: "nohints"}
			rw.metrics, rw.err = r.timeOpens(e, dir, 0, true)
			r.openT.add(rw)
		}
		return
	}
	procs := uniq([]int{1, 2, r.procs})
	for _, drop := range []bool{false, true} {
		for _, p := range procs {
			how, key := "hints", "hints"
			if drop {
				how, key = "no hints", "nohints"
			}
			cfg := fmt.Sprintf("%s, GOMAXPROCS=%d, RecoveryWorkers=%d", how, p, p)
			if p != r.procs {
				key += fmt.Sprintf("/procs=%d", p)
			}
			if !drop {
				cfg += "; " + disk
			}
			rw := &row{workload: wl, engine: e.name, config: cfg, match: key}
			rw.metrics, rw.err = r.timeOpens(e, dir, p, drop)
			r.openT.add(rw)
		}
	}
}

// timeOpens opens and closes the store -open-reps times and reports the
// median time Open took. procs > 0 sets GOMAXPROCS and caskade's
// RecoveryWorkers for the duration; drop removes the index files before each
// open.
func (r *run) timeOpens(e *engine, dir string, procs int, drop bool) ([]metric, error) {
	var ds []time.Duration
	for range *flagOpenReps {
		if drop {
			if err := e.dropIndex(dir); err != nil {
				return nil, err
			}
		}
		if procs > 0 {
			runtime.GOMAXPROCS(procs)
		}
		runtime.GC()
		t := time.Now()
		s, err := e.open(dir, openCfg{sync: syncNone, writers: 1, recoveryWorkers: procs})
		d := time.Since(t)
		if err == nil {
			err = s.close()
		}
		if procs > 0 {
			runtime.GOMAXPROCS(r.procs)
		}
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	med := ds[len(ds)/2]
	how := "index"
	if drop {
		how = "no index"
	}
	r.logf("open %s %s procs=%d: median %s of %v", e.name, how, procs, fmtDur(med), ds)
	text := fmtDur(med)
	if len(ds) > 1 {
		text += fmt.Sprintf(" (%s–%s)", fmtDur(ds[0]), fmtDur(ds[len(ds)-1]))
	}
	return []metric{{value: float64(med), text: text}}, nil
}

// ---------------------------------------------------------------- helpers

func dirSize(dir string) (size int64, files int) {
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
				files++
			}
		}
		return nil
	})
	return size, files
}

func parseSet(s string, allowed []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !slices.Contains(allowed, f) {
			return nil, fmt.Errorf("unknown %q (want some of %s)", f, strings.Join(allowed, ","))
		}
		out[f] = true
	}
	return out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

func uniq(xs []int) []int {
	var out []int
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
