package caskade

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// TestMergeSealWritesNoHint: Merge seals an active file that holds dead
// records and retires it at once, so the seal leaves its hint file to the
// hint worker (which then finds the file gone) instead of writing it in
// the commit path, where every commit waited for it: a scan and sort of
// up to MaxFileSize, for a file about to go.
func TestMergeSealWritesNoHint(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db := openTest(t, "/db", &Options{FS: efs, ExpiryPeriod: -1, MergeInterval: -1})
	for round := range 2 {
		for i := range 20 {
			if err := db.Set(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte{byte('a' + round)}, 100)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var mu sync.Mutex
	var hints []string
	efs.InjectFunc(errorfs.OpCreate, func(name string) error {
		if strings.Contains(name, ".hint") {
			mu.Lock()
			hints = append(hints, name)
			mu.Unlock()
		}
		return nil
	})
	st, err := db.Merge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.InputFiles != 1 || st.OutputFiles != 1 {
		t.Fatalf("merge %+v, want one input and one output", st)
	}
	if err := db.Close(); err != nil { // the hint worker is done
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hints) != 1 {
		t.Fatalf("hint files created: %q, want only the merge output's", hints)
	}
}
