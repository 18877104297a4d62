package storerr

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/caskade/caskade"
)

func TestClassify(t *testing.T) {
	path := func(err error) error { return &fs.PathError{Op: "write", Path: "/data/000003.data", Err: err} }
	for _, tc := range []struct {
		err    error
		kind   Kind
		reason string
	}{
		{fmt.Errorf("%w: %w", caskade.ErrWritesStopped, path(syscall.EIO)), WritesStopped, "Input/output error"},
		{fmt.Errorf("%w: %w", caskade.ErrWritesStopped, path(syscall.ENOSPC)), WritesStopped, "No space left on device"},
		{fmt.Errorf("caskade: write x: %w", path(syscall.ENOSPC)), NoSpace, "No space left on device"},
		{&caskade.CorruptionError{Path: "/data/1.data", Err: errors.New("bad crc")}, IO, "I/O error"},
		{path(syscall.EACCES), IO, "Permission denied"},
		{caskade.ErrKeyTooLarge, Other, "I/O error"},
		{caskade.ErrConflict, Other, "I/O error"},
	} {
		if got := Classify(tc.err); got != tc.kind {
			t.Errorf("Classify(%v) = %d, want %d", tc.err, got, tc.kind)
		}
		if got := Reason(tc.err); got != tc.reason {
			t.Errorf("Reason(%v) = %q, want %q", tc.err, got, tc.reason)
		}
	}
}

// A burst of refusals for lack of space logs one line, and the next one
// after a second says how many it left out; other I/O errors log each.
func TestReporter(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var r Reporter
	err := fmt.Errorf("write /data/1.data: %w", syscall.ENOSPC)
	for range 100 {
		r.Report(log, "redis", NoSpace, err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("a burst of 100 refusals logged %d lines:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "/data/1.data") {
		t.Fatalf("the log lacks the cause: %s", buf.String())
	}
	r.last = r.last.Add(-2e9) // as if a second had passed
	r.Report(log, "redis", NoSpace, err)
	if !strings.Contains(buf.String(), "refused_since_last_logged=99") {
		t.Fatalf("the second line does not count the left-out refusals:\n%s", buf.String())
	}
	buf.Reset()
	r.Report(log, "redis", IO, err)
	r.Report(log, "redis", IO, err)
	r.Report(log, "redis", WritesStopped, err)
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("two I/O errors and writes stopped logged %d lines:\n%s", n, buf.String())
	}
}
