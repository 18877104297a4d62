// Command hotcold measures what the automatic merges write for a common
// shape of data: a large cold set written once and a small hot set
// overwritten over and over, so that the files the hot writes fill are
// soon all dead while the cold files stay live.
//
//	cd bench && go run ./cmd/hotcold
//
// It loads the cold keys, then overwrites the hot keys in rounds, giving
// the automatic merges (checked every 50 ms, 16 MiB data files, 8 MiB of
// dead bytes at least) time to run every 20 rounds, waits for them to
// catch up, and prints the bytes they wrote and the disk use at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade"
)

var (
	coldKeys = flag.Int("cold", 200_000, "cold keys, written once")
	hotKeys  = flag.Int("hot", 1000, "hot keys, overwritten each round")
	rounds   = flag.Int("rounds", 400, "rounds of hot overwrites")
	valSize  = flag.Int("value", 500, "value bytes")
)

// mergeLog sums what the "caskade: merged" log records report.
type mergeLog struct {
	merges, out *atomic.Int64
}

func (h mergeLog) Enabled(context.Context, slog.Level) bool { return true }
func (h mergeLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "caskade: merged" {
		h.merges.Add(1)
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "output_bytes" {
				h.out.Add(a.Value.Int64())
			}
			return true
		})
	}
	return nil
}
func (h mergeLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h mergeLog) WithGroup(string) slog.Handler      { return h }

func main() {
	flag.Parse()
	dir, err := os.MkdirTemp("", "hotcold")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	log := mergeLog{new(atomic.Int64), new(atomic.Int64)}
	db, err := caskade.Open(dir, &caskade.Options{Sync: caskade.SyncNone, MaxFileSize: 16 << 20,
		MergeInterval: 50 * time.Millisecond, MergeMinDeadBytes: 8 << 20, Logger: slog.New(log)})
	if err != nil {
		fail(err)
	}
	val := make([]byte, *valSize)
	var b caskade.Batch
	write := func() {
		if err := db.Write(&b); err != nil {
			fail(err)
		}
		b.Reset()
	}
	for i := range *coldKeys {
		b.Set(fmt.Appendf(nil, "cold%010d", i), val)
		if b.Len() == 1000 {
			write()
		}
	}
	write()
	start := time.Now()
	for round := range *rounds {
		for i := range *hotKeys {
			b.Set(fmt.Appendf(nil, "hot%010d", i), val)
		}
		write()
		if round%20 == 19 {
			time.Sleep(60 * time.Millisecond) // a merge interval
		}
	}
	// Let the automatic merges catch up.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !db.NeedsMerge() && !db.Stats().Merge.Running {
			break
		}
	}
	elapsed := time.Since(start)
	st := db.Stats()
	if err := db.Close(); err != nil {
		fail(err)
	}
	mb := func(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }
	rec := int64(len("cold0000000000") + *valSize + 28) // about one record
	fmt.Printf("Command (from bench/): `go run ./cmd/hotcold %s`\n\n", strings.Join(os.Args[1:], " "))
	fmt.Println("| cold data | hot overwrites | automatic merges | bytes they wrote | disk at the end | time |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	fmt.Printf("| %s | %s | %d | %s | %s | %.1fs |\n", mb(int64(*coldKeys)*rec), mb(int64(*rounds)*int64(*hotKeys)*rec),
		log.merges.Load(), mb(log.out.Load()), mb(st.DiskBytes), elapsed.Seconds())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hotcold:", err)
	os.Exit(1)
}
