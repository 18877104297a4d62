package caskade

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/caskade/caskade/vfs"
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
				for range 50 {
					db.autoMerge(context.Background())
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
