package memcache

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	gomc "github.com/bradfitz/gomemcache/memcache"
)

func newGomemcache(t *testing.T, ts *testServer) *gomc.Client {
	t.Helper()
	c := gomc.New(ts.addr)
	c.Timeout = 5 * time.Second
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGomemcache(t *testing.T) {
	ts := startServer(t)
	mc := newGomemcache(t, ts)

	if err := mc.Ping(); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.Get("missing"); !errors.Is(err, gomc.ErrCacheMiss) {
		t.Fatalf("Get missing: %v", err)
	}
	if err := mc.Set(&gomc.Item{Key: "foo", Value: []byte("bar"), Flags: 0xdeadbeef}); err != nil {
		t.Fatal(err)
	}
	it, err := mc.Get("foo")
	if err != nil || string(it.Value) != "bar" || it.Flags != 0xdeadbeef {
		t.Fatalf("Get foo: %+v %v", it, err)
	}

	// Add fails on an existing key, succeeds on a new one.
	if err := mc.Add(&gomc.Item{Key: "foo", Value: []byte("x")}); !errors.Is(err, gomc.ErrNotStored) {
		t.Fatalf("Add existing: %v", err)
	}
	if err := mc.Add(&gomc.Item{Key: "new", Value: []byte("n")}); err != nil {
		t.Fatal(err)
	}
	// Replace needs an existing key.
	if err := mc.Replace(&gomc.Item{Key: "nokey", Value: []byte("x")}); !errors.Is(err, gomc.ErrNotStored) {
		t.Fatalf("Replace missing: %v", err)
	}
	if err := mc.Replace(&gomc.Item{Key: "new", Value: []byte("m"), Flags: 3}); err != nil {
		t.Fatal(err)
	}
	// Append and prepend.
	if err := mc.Append(&gomc.Item{Key: "new", Value: []byte(">")}); err != nil {
		t.Fatal(err)
	}
	if err := mc.Prepend(&gomc.Item{Key: "new", Value: []byte("<")}); err != nil {
		t.Fatal(err)
	}
	if err := mc.Append(&gomc.Item{Key: "nokey", Value: []byte(">")}); !errors.Is(err, gomc.ErrNotStored) {
		t.Fatalf("Append missing: %v", err)
	}
	if it, err := mc.Get("new"); err != nil || string(it.Value) != "<m>" || it.Flags != 3 {
		t.Fatalf("after append/prepend: %+v %v", it, err)
	}

	// GetMulti.
	m, err := mc.GetMulti([]string{"foo", "new", "nokey"})
	if err != nil || len(m) != 2 || string(m["foo"].Value) != "bar" || string(m["new"].Value) != "<m>" {
		t.Fatalf("GetMulti: %v %v", m, err)
	}

	// CompareAndSwap: succeeds once with the token from Get, then conflicts.
	it, err = mc.Get("foo")
	if err != nil {
		t.Fatal(err)
	}
	it.Value = []byte("baz")
	if err := mc.CompareAndSwap(it); err != nil {
		t.Fatalf("CAS: %v", err)
	}
	it.Value = []byte("qux")
	if err := mc.CompareAndSwap(it); !errors.Is(err, gomc.ErrCASConflict) {
		t.Fatalf("second CAS: %v", err)
	}
	if err := mc.Delete("new"); err != nil {
		t.Fatal(err)
	}
	if err := mc.CompareAndSwap(&gomc.Item{Key: "new", Value: []byte("x")}); !errors.Is(err, gomc.ErrCacheMiss) && !errors.Is(err, gomc.ErrNotStored) {
		t.Fatalf("CAS on deleted: %v", err)
	}
	if err := mc.Delete("new"); !errors.Is(err, gomc.ErrCacheMiss) {
		t.Fatalf("Delete missing: %v", err)
	}

	// Increment and Decrement.
	if err := mc.Set(&gomc.Item{Key: "n", Value: []byte("10")}); err != nil {
		t.Fatal(err)
	}
	if v, err := mc.Increment("n", 5); err != nil || v != 15 {
		t.Fatalf("Increment: %d %v", v, err)
	}
	if v, err := mc.Decrement("n", 100); err != nil || v != 0 {
		t.Fatalf("Decrement: %d %v", v, err)
	}
	if _, err := mc.Increment("nokey", 1); !errors.Is(err, gomc.ErrCacheMiss) {
		t.Fatalf("Increment missing: %v", err)
	}
	if _, err := mc.Increment("foo", 1); err == nil {
		t.Fatal("Increment of a non-number succeeded")
	}

	// Touch and GetAndTouch, with expiry.
	if err := mc.Touch("foo", 100); err != nil {
		t.Fatal(err)
	}
	if err := mc.Touch("nokey", 100); !errors.Is(err, gomc.ErrCacheMiss) {
		t.Fatalf("Touch missing: %v", err)
	}
	if it, err := mc.GetAndTouch("foo", 200); err != nil || string(it.Value) != "baz" {
		t.Fatalf("GetAndTouch: %+v %v", it, err)
	}
	info, err := ts.db.Stat([]byte("foo"))
	if err != nil || info.ExpiresAt.IsZero() || time.Until(info.ExpiresAt) < 190*time.Second {
		t.Fatalf("expiry after GetAndTouch: %+v %v", info, err)
	}
	if err := mc.Set(&gomc.Item{Key: "gone", Value: []byte("x"), Expiration: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.Get("gone"); !errors.Is(err, gomc.ErrCacheMiss) {
		t.Fatalf("negative expiration: %v", err)
	}

	// Malformed keys are refused by the client; the server refuses the
	// ones the client lets through.
	if err := mc.Set(&gomc.Item{Key: "\xffx", Value: []byte("x")}); err == nil {
		t.Fatal("set of a 0xff key succeeded")
	}

	// FlushAll.
	if err := mc.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.Get("foo"); !errors.Is(err, gomc.ErrCacheMiss) {
		t.Fatalf("after FlushAll: %v", err)
	}
}

// TestGomemcacheConcurrentIncr checks that increments from many clients
// are atomic: none is lost.
func TestGomemcacheConcurrentIncr(t *testing.T) {
	ts := startServer(t)
	mc := newGomemcache(t, ts)
	mc.MaxIdleConns = 16
	if err := mc.Set(&gomc.Item{Key: "ctr", Value: []byte("0")}); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := mc.Increment("ctr", 1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	it, err := mc.Get("ctr")
	if err != nil || string(it.Value) != fmt.Sprint(workers*each) {
		t.Fatalf("counter = %q, %v; want %d", it.Value, err, workers*each)
	}
}

// TestGomemcacheModel runs random operations against the server and a map
// model.
func TestGomemcacheModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	ts := startServer(t)
	mc := newGomemcache(t, ts)
	type item struct {
		v     []byte
		flags uint32
	}
	model := map[string]item{}
	keys := []string{"a", "b", "c", "d", "e"}
	for i := range 2000 {
		k := keys[r.IntN(len(keys))]
		v := []byte(fmt.Sprint(r.IntN(1000)))
		fl := r.Uint32()
		cur, present := model[k]
		switch op := r.IntN(7); op {
		case 0:
			if err := mc.Set(&gomc.Item{Key: k, Value: v, Flags: fl}); err != nil {
				t.Fatal(i, err)
			}
			model[k] = item{v, fl}
		case 1:
			err := mc.Add(&gomc.Item{Key: k, Value: v, Flags: fl})
			if present != errors.Is(err, gomc.ErrNotStored) || (!present && err != nil) {
				t.Fatalf("op %d add %s present=%v: %v", i, k, present, err)
			}
			if !present {
				model[k] = item{v, fl}
			}
		case 2:
			err := mc.Replace(&gomc.Item{Key: k, Value: v, Flags: fl})
			if present != (err == nil) {
				t.Fatalf("op %d replace %s present=%v: %v", i, k, present, err)
			}
			if present {
				model[k] = item{v, fl}
			}
		case 3:
			err := mc.Append(&gomc.Item{Key: k, Value: v})
			if present != (err == nil) {
				t.Fatalf("op %d append %s present=%v: %v", i, k, present, err)
			}
			if present {
				model[k] = item{append(bytes.Clone(cur.v), v...), cur.flags}
			}
		case 4:
			err := mc.Delete(k)
			if present != (err == nil) {
				t.Fatalf("op %d delete %s present=%v: %v", i, k, present, err)
			}
			delete(model, k)
		case 5:
			n, err := mc.Increment(k, 7)
			if !present {
				if !errors.Is(err, gomc.ErrCacheMiss) {
					t.Fatalf("op %d incr missing %s: %v", i, k, err)
				}
				break
			}
			// Decimal, as memcached reads it: "0490" is 490 (fmt.Sscan would
			// take it for octal).
			want, perr := strconv.ParseUint(string(cur.v), 10, 64)
			if perr != nil || !isDigits(cur.v) {
				if err == nil {
					t.Fatalf("op %d incr of %q succeeded", i, cur.v)
				}
				break
			}
			if err != nil || n != want+7 {
				t.Fatalf("op %d incr %s (%q): %d %v", i, k, cur.v, n, err)
			}
			model[k] = item{[]byte(fmt.Sprint(n)), cur.flags}
		case 6:
			it, err := mc.Get(k)
			if !present {
				if !errors.Is(err, gomc.ErrCacheMiss) {
					t.Fatalf("op %d get missing %s: %v", i, k, err)
				}
				break
			}
			if err != nil || !bytes.Equal(it.Value, cur.v) || it.Flags != cur.flags {
				t.Fatalf("op %d get %s: %+v %v, want %q %d", i, k, it, err, cur.v, cur.flags)
			}
		}
	}
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0 // any length: strconv.ParseUint reports overflow
}
