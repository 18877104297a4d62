package httpapi

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade"
)

// TestPutVersionIsItsOwn: the version a PUT reports (ETag,
// Caskade-Version) is the one its own commit made, never that of a write
// from another protocol right after it (here an expiry change, as a Redis
// EXPIRE or a memcached touch makes, which keeps the bytes and flags), so
// an If-Match with it cannot overwrite a change the client never saw.
func TestPutVersionIsItsOwn(t *testing.T) {
	ts := startServer(t)
	if err := ts.db.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		theirs = map[uint64]bool{}
		stop   = make(chan struct{})
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		var b caskade.Batch
		for {
			select {
			case <-stop:
				return
			default:
			}
			b.Reset()
			b.ExpireAt([]byte("k"), time.Now().Add(time.Hour))
			if err := ts.db.Write(&b); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			theirs[b.Version()] = true
			mu.Unlock()
		}
	}()
	bad := 0
	for range 500 {
		r := ts.do(t, "PUT", "/v1/kv/k", "v")
		v, err := strconv.ParseUint(r.header.Get(HeaderVersion), 10, 64)
		if err != nil {
			continue
		}
		mu.Lock()
		if theirs[v] {
			bad++
		}
		mu.Unlock()
	}
	close(stop)
	<-done
	if bad > 0 {
		t.Fatalf("%d PUTs reported the version of another client's write", bad)
	}
}
