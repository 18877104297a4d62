// Command openmem measures Open as a server start meets it: in a fresh
// process, once per process. kvbench's open workload reopens in one process,
// where the heap of the opens before is there to reuse; here every open
// pays for its memory.
//
//	cd bench && go run ./cmd/openmem                 # 2M keys in a temporary directory
//	go run ./cmd/openmem -dir /data/db -keys 0       # an existing database, as it is
//
// It loads -keys keys (16 bytes, random order, -value bytes each) into a
// new database with -max-file-size data files unless -keys is 0, closes it
// (which writes the hint files), then runs itself -reps times as a child
// that opens the database and reports: how long Open took, the bytes it
// allocated, the heap in use and the resident set size right after it, and
// the resident set's peak. It prints the median of each with every run.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caskade/caskade"
)

var (
	dir         = flag.String("dir", "", "database directory (default: a new temporary one, removed at exit)")
	keys        = flag.Int("keys", 2_000_000, "keys to load first; 0: open -dir as it is")
	valSize     = flag.Int("value", 100, "value bytes")
	maxFileSize = flag.Int64("max-file-size", 64<<20, "data file size for the load")
	reps        = flag.Int("reps", 3, "opens, each in a new process")
	child       = flag.Bool("child", false, "internal: open once and report as JSON")
)

// report is what one child measured.
type report struct {
	Open      time.Duration
	Allocated uint64 // bytes allocated by Open
	HeapInUse uint64 // after Open
	RSS, Peak uint64 // bytes, after Open (VmRSS, VmHWM; 0 where unknown)
}

func main() {
	flag.Parse()
	if *child {
		json.NewEncoder(os.Stdout).Encode(openOnce())
		return
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "openmem-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	if *keys > 0 {
		start := time.Now()
		load()
		fmt.Printf("loaded %d keys of %d-byte values in %v\n", *keys, *valSize, time.Since(start).Round(time.Millisecond))
	}
	var rs []report
	for range *reps {
		out, err := exec.Command(os.Args[0], "-child", "-dir", *dir).Output()
		if err != nil {
			log.Fatalf("child: %v", err)
		}
		var r report
		if err := json.Unmarshal(out, &r); err != nil {
			log.Fatalf("child said %q: %v", out, err)
		}
		rs = append(rs, r)
	}
	fmt.Printf("\nCommand (from bench/): `go run ./cmd/openmem %s`, GOMAXPROCS=%d, %d cores, %s\n\n",
		strings.Join(os.Args[1:], " "), runtime.GOMAXPROCS(0), runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339))
	fmt.Println("| measure | median | all runs |")
	fmt.Println("| --- | --- | --- |")
	row := func(name string, get func(report) float64, unit string) {
		vs := make([]float64, len(rs))
		for i, r := range rs {
			vs[i] = get(r)
		}
		all := make([]string, len(vs))
		for i, v := range vs {
			all[i] = strconv.FormatFloat(v, 'f', 0, 64)
		}
		sorted := slices.Sorted(slices.Values(vs))
		fmt.Printf("| %s | %.0f %s | %s |\n", name, sorted[len(sorted)/2], unit, strings.Join(all, ", "))
	}
	const mb = 1 << 20
	row("Open", func(r report) float64 { return float64(r.Open.Milliseconds()) }, "ms")
	row("allocated by Open", func(r report) float64 { return float64(r.Allocated) / mb }, "MiB")
	row("heap in use after Open", func(r report) float64 { return float64(r.HeapInUse) / mb }, "MiB")
	row("resident after Open", func(r report) float64 { return float64(r.RSS) / mb }, "MiB")
	row("resident peak", func(r report) float64 { return float64(r.Peak) / mb }, "MiB")
}

func load() {
	db, err := caskade.Open(*dir, &caskade.Options{Sync: caskade.SyncNone, MaxFileSize: *maxFileSize})
	if err != nil {
		log.Fatal(err)
	}
	val := make([]byte, *valSize)
	var b caskade.Batch
	for i := range *keys {
		k := make([]byte, 16)
		copy(k, "openmem-")
		binary.BigEndian.PutUint64(k[8:], uint64(i)*0x9E3779B97F4A7C15)
		b.Set(k, val)
		if b.Len() == 1000 || i == *keys-1 {
			if err := db.Write(&b); err != nil {
				log.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
}

func openOnce() report {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	start := time.Now()
	db, err := caskade.Open(*dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	r := report{Open: time.Since(start)}
	runtime.ReadMemStats(&ms)
	r.Allocated, r.HeapInUse = ms.TotalAlloc-before, ms.HeapInuse
	r.RSS, r.Peak = procStatus("VmRSS:"), procStatus("VmHWM:")
	db.Close()
	return r
}

// procStatus returns a size field of /proc/self/status in bytes, or 0.
func procStatus(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
