package caskade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// TestMergeWithoutRoomLeavesSpace runs a merge on a disk with room for
// some of its output files and not all: it must fail without using up the
// room, which writes need. (It used to install the outputs that fit and
// then fail, keeping both them and its inputs: each automatic merge on a
// nearly full disk took whatever room an operator had freed.)
func TestMergeWithoutRoomLeavesSpace(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.New(mem)
	opts := &Options{FS: efs, MaxFileSize: 4096, ExpiryPeriod: -1, MergeInterval: -1}
	db := openTest(t, "/db", opts)
	val := bytes.Repeat([]byte("v"), 200)
	for round := range 2 {
		for i := range 64 {
			if err := db.Set(fmt.Appendf(nil, "k%02d", i), append(val, byte('0'+round))); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The hint files of sealed data files are written in the background:
	// only those may take room while the merge fails.
	hintsWritten := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); db.Stats().HintsPending > 0; {
			if time.Now().After(deadline) {
				t.Fatal("hint files still pending after 10 s")
			}
			time.Sleep(time.Millisecond)
		}
	}
	names := func() map[string]int64 {
		t.Helper()
		ents, err := mem.List("/db")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, name := range ents {
			info, err := mem.Stat("/db/" + name)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = info.Size()
		}
		return out
	}
	hintsWritten()
	before := names()
	const room = 6000 // over one output file, under the live data
	efs.SetSpace(room)
	_, err := db.Merge(context.Background())
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("merge with %d bytes free: %v, want ENOSPC", room, err)
	}
	hintsWritten()
	var hints int64
	for name, size := range names() {
		if _, ok := before[name]; ok {
			continue
		}
		if !strings.HasSuffix(name, ".hint") {
			t.Errorf("a failed merge left %s (%d bytes)", name, size)
		}
		hints += size
	}
	if left := efs.Space(); left < room-hints {
		t.Errorf("a failed merge left %d bytes of %d free (new hint files: %d bytes)", left, room, hints)
	}
	for i := range 64 {
		mustGet(t, db, fmt.Sprintf("k%02d", i), string(val)+"1")
	}
	if err := db.Set([]byte("after"), []byte("x")); err != nil {
		t.Fatalf("set after the failed merge: %v", err)
	}
	efs.SetSpace(-1)
	if _, err := db.Merge(context.Background()); err != nil {
		t.Fatalf("merge with room: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, "/db", &Options{FS: mem, MaxFileSize: 4096, ExpiryPeriod: -1, MergeInterval: -1})
	for i := range 64 {
		mustGet(t, db, fmt.Sprintf("k%02d", i), string(val)+"1")
	}
	mustGet(t, db, "after", "x")
}
