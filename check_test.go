package caskade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/caskade/caskade/internal/record"
	"github.com/caskade/caskade/internal/segment"
	"github.com/caskade/caskade/vfs"
)

func buildOnDisk(t *testing.T, n int) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	db, err := Open(dir, &Options{MaxFileSize: 2 << 10, ExpiryPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range n {
		k, v := fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%03d-%s", i, bytes.Repeat([]byte("x"), i%50))
		db.Set([]byte(k), []byte(v))
		want[k] = v
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, want
}

// Check finds every injected corruption, wherever it is; repair keeps every
// record that is not damaged.
func TestCheckAndRepair(t *testing.T) {
	dir, want := buildOnDisk(t, 120)
	rep, err := Check(context.Background(), dir, nil)
	if err != nil || !rep.OK() || len(rep.BadHints) != 0 || rep.Records != 120 {
		t.Fatalf("clean database: %+v %v", rep, err)
	}
	names, _ := os.ReadDir(dir)
	var data []string
	for _, e := range names {
		if _, kind := segment.Parse(e.Name()); kind == segment.KindData {
			data = append(data, filepath.Join(dir, e.Name()))
		}
	}
	if len(data) < 4 {
		t.Fatalf("only %d data files", len(data))
	}
	// Damage one byte in the middle of three files, sealed ones included.
	damaged := []string{data[0], data[1], data[len(data)-1]}
	for _, p := range damaged {
		b, _ := os.ReadFile(p)
		b[len(b)/2] ^= 0x40
		os.WriteFile(p, b, 0o644)
	}
	rep, err = Check(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, d := range rep.Damage {
		found[d.Path] = true
	}
	for _, p := range damaged {
		if !found[p] {
			t.Fatalf("damage in %s not reported: %+v", p, rep.Damage)
		}
	}
	// Their hint files are intact: open reads them instead of the data
	// files, so they are not bad (removing one would make open scan a
	// damaged file, and cut the newest one's damage off as a torn tail).
	if len(rep.BadHints) != 0 {
		t.Fatalf("intact hint files of damaged data files flagged as bad: %v", rep.BadHints)
	}
	// The damaged database either refuses to open (damage found by a
	// scan) or, opened through intact hints, fails loudly on damaged values.
	if db, err := Open(dir, &Options{ReadOnly: true}); err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("open of a damaged database: %v", err)
		}
	} else {
		bad := 0
		for k := range want {
			if _, err := db.Get([]byte(k)); errors.Is(err, ErrCorrupt) {
				bad++
			}
		}
		db.Close()
		if bad == 0 {
			t.Fatal("damaged values read without an error")
		}
	}
	// ...and repair copies every undamaged record.
	dst := filepath.Join(t.TempDir(), "repaired")
	n, err := Repair(context.Background(), dir, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	rdb := openTest(t, dst, nil)
	got := contents(t, rdb)
	if len(got) != n || len(got) < len(want)-len(damaged)*4 || len(got) >= len(want) {
		t.Fatalf("repaired %d of %d keys (copied %d)", len(got), len(want), n)
	}
	for k, v := range got {
		if want[k] != v {
			t.Fatalf("repaired %s = %q, want %q", k, v, want[k])
		}
	}
}

func TestCheckRefusesOpenDatabase(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir, nil).Set([]byte("k"), []byte("v"))
	if _, err := Check(context.Background(), dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("check of an open database: %v", err)
	}
}

// HoldReadOnly keeps writers out of a directory, and refuses one a writer
// holds, while Check and Repair still run beside it; closing it lets a
// writer in again. A memory file system, as the locks of one process on
// one lock file: flock would do the same.
func TestHoldReadOnly(t *testing.T) {
	mem := vfs.NewMem()
	db := openTest(t, "/db", memOpts(mem))
	if err := db.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := HoldReadOnly("/db", &Options{FS: mem}); !errors.Is(err, ErrLocked) {
		t.Fatalf("hold of an open database: %v, want ErrLocked", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	hold, err := HoldReadOnly("/db", &Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	if db, err := Open("/db", memOpts(mem)); !errors.Is(err, ErrLocked) {
		if err == nil {
			db.Close()
		}
		t.Fatalf("open for writing while held: %v, want ErrLocked", err)
	}
	if rep, err := Check(context.Background(), "/db", &CheckOptions{FS: mem}); err != nil || !rep.OK() || rep.Records != 1 {
		t.Fatalf("check while held: %+v, %v", rep, err)
	}
	if n, err := Repair(context.Background(), "/db", "/repaired", &Options{FS: mem}); err != nil || n != 1 {
		t.Fatalf("repair while held: %d keys, %v", n, err)
	}
	if err := hold.Close(); err != nil {
		t.Fatal(err)
	}
	openTest(t, "/db", memOpts(mem))
}

func TestDumpLoad(t *testing.T) {
	clk := newTestClock()
	src := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1})
	want := map[string]string{}
	for i := range 1000 {
		k, v := fmt.Sprintf("k%04d", i), string(bytes.Repeat([]byte{byte(i)}, i%300))
		src.Set([]byte(k), []byte(v))
		want[k] = v
	}
	src.Set([]byte(""), []byte("empty key"))
	want[""] = "empty key"
	src.SetWithTTL([]byte("ttl"), []byte("x"), time.Hour)
	want["ttl"] = "x"
	src.SetEntry([]byte("flagged"), []byte("f"), SetOptions{Flags: 42})
	want["flagged"] = "f"
	var buf bytes.Buffer
	st, err := src.Dump(context.Background(), &buf)
	if err != nil || st.Pairs != len(want) {
		t.Fatalf("dump: %+v %v", st, err)
	}
	dst := openTest(t, t.TempDir(), &Options{Now: clk.Now, ExpiryPeriod: -1})
	batches := 0
	ls, err := dst.Load(context.Background(), bytes.NewReader(buf.Bytes()), &LoadOptions{BatchBytes: 16 << 10, Progress: func(DumpStats) { batches++ }})
	if err != nil || ls.Pairs != len(want) {
		t.Fatalf("load: %+v %v", ls, err)
	}
	if batches < 5 {
		t.Fatalf("load used %d batches", batches)
	}
	if got := contents(t, dst); !maps.Equal(got, want) {
		t.Fatalf("loaded %d keys, want %d", len(got), len(want))
	}
	if info, _ := dst.Stat([]byte("ttl")); info.TTL(clk.Now()) != time.Hour {
		t.Fatalf("TTL after load: %v", info.TTL(clk.Now()))
	}
	if _, info, _ := dst.Lookup([]byte("flagged")); info.Flags != 42 {
		t.Fatalf("flags after load: %d", info.Flags)
	}
	// Damage and truncation are caught.
	b := buf.Bytes()
	for _, bad := range [][]byte{
		b[:len(b)-3],                // cut
		b[:len(dumpHeader)+100],     // cut mid-stream
		[]byte("not a dump"),        // wrong header
		flip(b, len(dumpHeader)+10), // damaged frame
		flip(b, len(b)-1),           // damaged end frame
	} {
		fresh := openTest(t, t.TempDir(), nil)
		if _, err := fresh.Load(context.Background(), bytes.NewReader(bad), nil); !errors.Is(err, ErrBadDump) {
			t.Fatalf("bad stream loaded: %v", err)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 1
	return c
}

// Load never lets a batch grow past BatchBytes by more than one pair: a
// large pair on top of an almost full batch is written in a batch of its
// own, so batches stay within MaxBatchSize when BatchBytes is half of it.
func TestLoadKeepsBatchesWithinMaxBatchSize(t *testing.T) {
	src := openTest(t, t.TempDir(), nil)
	want := map[string]string{"a": string(bytes.Repeat([]byte("a"), 31<<10)), "b": string(bytes.Repeat([]byte("b"), 33<<10))}
	for k, v := range want {
		if err := src.Set([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := src.Dump(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	dst := openTest(t, t.TempDir(), &Options{MaxBatchSize: 64 << 10})
	st, err := dst.Load(context.Background(), &buf, &LoadOptions{BatchBytes: 32 << 10})
	if err != nil || st.Pairs != 2 {
		t.Fatalf("load: %+v, %v", st, err)
	}
	if got := contents(t, dst); !maps.Equal(got, want) {
		t.Fatalf("loaded %d keys, want %d", len(got), len(want))
	}
}

// Check lists a hint file as bad only if it does not match its data file:
// damaged, or intact but describing other records. An intact hint file of
// a damaged data file is not bad (open reads it instead of the data file;
// the data file's damage is reported), nor is one that describes more
// bytes than its data file holds (the data file lost records: damage).
func TestCheckJudgesHintFiles(t *testing.T) {
	base, _ := buildOnDisk(t, 120)
	flip := func(t *testing.T, path string, at func(n int) int) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[at(len(b))] ^= 0x40
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name           string
		harm           func(t *testing.T, data, hint string)
		damage, bad    bool
		opensWithHints bool // Open reads the file through its hint file
	}{
		{"damaged data file", func(t *testing.T, data, hint string) {
			flip(t, data, func(n int) int { return n / 2 })
		}, true, false, true},
		{"damaged hint file", func(t *testing.T, data, hint string) {
			flip(t, hint, func(n int) int { return n / 2 })
		}, false, true, false},
		{"hint file of other records", func(t *testing.T, data, hint string) {
			hb, err := os.ReadFile(hint)
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(data)
			if err != nil {
				t.Fatal(err)
			}
			var hints []record.Hint
			for c := segment.NewHintCursor(hb); c.Valid(); c.Next() {
				hints = append(hints, *c.Hint())
			}
			hints[0].Expiry = 12345 // checksums and sizes stay valid
			if err := os.WriteFile(hint, segment.BuildHints(hints, fi.Size()), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false, true, true},
		{"data file cut short", func(t *testing.T, data, hint string) {
			fi, err := os.Stat(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(data, fi.Size()-5); err != nil {
				t.Fatal(err)
			}
		}, true, false, false},
	}
	for _, which := range []string{"sealed", "newest"} {
		for _, c := range cases {
			t.Run(which+"/"+c.name, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "db")
				if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
					t.Fatal(err)
				}
				var ids []uint32
				names, _ := os.ReadDir(dir)
				for _, e := range names {
					if id, kind := segment.Parse(e.Name()); kind == segment.KindData {
						ids = append(ids, id)
					}
				}
				id := ids[1]
				if which == "newest" {
					id = ids[len(ids)-1]
				}
				data, hint := filepath.Join(dir, segment.DataName(id)), filepath.Join(dir, segment.HintName(id))
				if _, err := os.Stat(hint); err != nil {
					t.Fatalf("the test needs %s's hint file: %v", data, err)
				}
				c.harm(t, data, hint)
				rep, err := Check(context.Background(), dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				if damaged := len(rep.Damage) > 0; damaged != c.damage || (damaged && rep.Damage[0].Path != data) {
					t.Errorf("damage %+v, want damage of %s: %v", rep.Damage, data, c.damage)
				}
				if rep.TornBytes != 0 {
					t.Errorf("%d torn bytes, want none: the file has an intact hint file", rep.TornBytes)
				}
				if bad := len(rep.BadHints) > 0; bad != c.bad || (bad && (len(rep.BadHints) != 1 || rep.BadHints[0] != hint)) {
					t.Errorf("bad hints %v, want %s bad: %v", rep.BadHints, hint, c.bad)
				}
				if trusted := len(rep.TrustedBadHints) > 0; trusted != (c.bad && c.opensWithHints) {
					t.Errorf("bad hints open trusts: %v, want %s: %v", rep.TrustedBadHints, hint, c.bad && c.opensWithHints)
				}
				// What check says about the hint file is what open does
				// with it.
				db, err := Open(dir, &Options{ReadOnly: true, ExpiryPeriod: -1})
				if c.name == "data file cut short" {
					if !errors.Is(err, ErrCorrupt) {
						t.Fatalf("open of a data file cut short: %v, want ErrCorrupt", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				defer db.Close()
				if got := db.Stats().Recovery.FromHints == len(ids); got != c.opensWithHints {
					t.Errorf("open read every file through its hint file: %v, want %v", got, c.opensWithHints)
				}
			})
		}
	}
}
