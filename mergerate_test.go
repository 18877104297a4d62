package caskade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// TestMergeRateLimitCancels: a merge paced by a small MergeBytesPerSec
// stops as soon as its context is cancelled (by the caller, or by Close
// for the automatic merge), instead of finishing the sleep the rate calls
// for: at 1 byte a second, a few hundred bytes kept Close waiting for
// minutes.
func TestMergeRateLimitCancels(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db := openTest(t, "/db", &Options{FS: efs, ExpiryPeriod: -1, MergeInterval: -1, MergeBytesPerSec: 1})
	for round := range 2 {
		for i := range 3 {
			if err := db.Set(fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte{byte('a' + round)}, 100)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The merge creates its output just before it paces its first record.
	created := make(chan struct{})
	var once sync.Once
	efs.InjectFunc(errorfs.OpCreate, func(name string) error {
		if strings.HasSuffix(name, ".data.tmp") {
			once.Do(func() { close(created) })
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := db.Merge(ctx)
		done <- err
	}()
	<-created
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled merge: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled merge still sleeping for its rate limit after 10 s")
	}
	for i := range 3 {
		mustGet(t, db, fmt.Sprintf("k%d", i), strings.Repeat("b", 100))
	}
}
