package redis

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/caskade/caskade"
)

// TestContendedCommandsNeverFail runs many connections against the same
// keys under SyncAlways, where every commit waits for an fsync and
// read-modify-writes conflict often: INCR, APPEND (a read-modify-write
// through the store), EXEC, and pipelines of INCR. Redis never fails a
// command for contention, so no reply may be an error, and nothing may
// be lost.
func TestContendedCommandsNeverFail(t *testing.T) {
	db, err := caskade.Open(t.TempDir(), &caskade.Options{Sync: caskade.SyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := startServerOn(t, db)
	const conns, each = 32, 40
	var wg sync.WaitGroup
	for w := range conns {
		wg.Go(func() {
			c := ts.dial()
			for i := range each {
				var req strings.Builder
				req.WriteString(cmd("INCR", "n"))
				req.WriteString(cmd("APPEND", "s", "x"))
				req.WriteString(cmd("MULTI"))
				req.WriteString(cmd("INCRBY", "m", "2"))
				req.WriteString(cmd("APPEND", "ms", "y"))
				req.WriteString(cmd("EXEC"))
				if i%2 == 0 {
					c.send(req.String()) // pipelined
				} else {
					for _, part := range strings.SplitAfter(req.String(), "\r\n*") {
						c.send(part) // one part at a time
					}
				}
				var replies []string
				for range 5 {
					replies = append(replies, c.readLine())
				}
				for range 3 { // EXEC: *2, then two integer replies
					replies = append(replies, c.readLine())
				}
				for _, r := range replies {
					if strings.HasPrefix(r, "-") {
						t.Errorf("conn %d round %d: %q", w, i, r)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for k, want := range map[string]string{
		"n": fmt.Sprint(conns * each), "m": fmt.Sprint(2 * conns * each),
		"s": strings.Repeat("x", conns*each), "ms": strings.Repeat("y", conns*each),
	} {
		if v, err := db.Get([]byte(k)); err != nil || string(v) != want {
			t.Errorf("%s = %.40q (%d bytes), %v; want %d bytes", k, v, len(v), err, len(want))
		}
	}
}
