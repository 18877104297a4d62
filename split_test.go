package caskade

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/caskade/caskade/vfs"
)

// A group whose records do not fit one file's offsets is split between
// files at commit boundaries, and one commit that does not fit is refused.
// The limit is 4 GiB; the test lowers it.
func TestGroupSplitAcrossFiles(t *testing.T) {
	defer func(old int) { maxCommitBytes = old }(maxCommitBytes)
	maxCommitBytes = 6 << 10
	fs := vfs.NewMem()
	o := memOpts(fs)
	o.MaxFileSize = 5 << 10
	db := openTest(t, "db", o)
	val := bytes.Repeat([]byte("v"), 200)
	var bs []*Batch
	for i := range 3 {
		b := new(Batch)
		for j := range 10 { // about 2.5 KiB of records
			b.Set(fmt.Appendf(nil, "b%d-%02d", i, j), val)
		}
		bs = append(bs, b)
	}
	for i, err := range db.WriteBatches(bs) {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	big := new(Batch)
	for j := range 30 { // about 7.5 KiB: more than one commit may hold
		big.Set(fmt.Appendf(nil, "big-%02d", j), val)
	}
	if err := db.Write(big); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("an oversized commit: %v", err)
	}
	check := func(db *DB, what string) {
		t.Helper()
		for i := range 3 {
			for j := range 10 {
				mustGet(t, db, fmt.Sprintf("b%d-%02d", i, j), string(val))
			}
		}
		if _, err := db.Get([]byte("big-00")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: the refused commit left big-00: %v", what, err)
		}
	}
	check(db, "open")
	if n := len(db.Stats().Files); n < 2 {
		t.Fatalf("the group went into %d file(s)", n)
	}
	db.Close()
	check(openTest(t, "db", o), "reopened")
}
