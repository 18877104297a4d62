package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade"
)

type txnReply struct {
	Succeeded bool `json:"succeeded"`
	Version   uint64
	Responses []struct {
		Put    *struct{}       `json:"put"`
		Delete *txnDeleteReply `json:"delete"`
		Get    *txnGetReply    `json:"get"`
		Range  *txnRangeReply  `json:"range"`
	} `json:"responses"`
}

func (ts *testServer) txn(t *testing.T, body string) txnReply {
	t.Helper()
	r := ts.do(t, "POST", "/v1/txn", body).want(t, 200, "")
	var tr txnReply
	if err := json.Unmarshal([]byte(r.body), &tr); err != nil {
		t.Fatalf("txn reply %q: %v", r.body, err)
	}
	return tr
}

func TestTxn(t *testing.T) {
	ts := startServer(t)
	// Create only if absent: succeeds once.
	create := `{"compare":[{"key":"k","target":"exists","result":"==","exists":false}],
		"success":[{"put":{"key":"k","value":"v1"}},{"get":{"key":"k"}}],
		"failure":[{"get":{"key":"k"}}]}`
	tr := ts.txn(t, create)
	if !tr.Succeeded || len(tr.Responses) != 2 || tr.Responses[0].Put == nil || tr.Version == 0 {
		t.Fatalf("first create: %+v", tr)
	}
	if g := tr.Responses[1].Get; !g.Found || *g.Value != "v1" || g.Version != 0 {
		t.Fatalf("get after put in txn: %+v", g)
	}
	tr = ts.txn(t, create)
	if tr.Succeeded || len(tr.Responses) != 1 {
		t.Fatalf("second create: %+v", tr)
	}
	g := tr.Responses[0].Get
	if !g.Found || *g.Value != "v1" || g.Version == 0 {
		t.Fatalf("failure branch get: %+v", g)
	}
	ver := g.Version

	// Compare on version.
	swap := func(v uint64, val string) bool {
		tr := ts.txn(t, fmt.Sprintf(`{"compare":[{"key":"k","target":"version","result":"==","version":%d}],
			"success":[{"put":{"key":"k","value":%q}}]}`, v, val))
		return tr.Succeeded
	}
	if swap(ver+100, "bad") {
		t.Fatal("swap with a wrong version succeeded")
	}
	if !swap(ver, "v2") {
		t.Fatal("swap with the right version failed")
	}
	if v, _ := ts.db.Get([]byte("k")); string(v) != "v2" {
		t.Fatalf("value %q", v)
	}
	// The version matches the HTTP ETag.
	etag := ts.do(t, "GET", "/v1/kv/k", "").header.Get(HeaderVersion)
	cur, _ := strconv.ParseUint(etag, 10, 64)
	for _, tc := range []struct {
		result string
		v      uint64
		want   bool
	}{
		{"==", cur, true}, {"!=", cur, false}, {">", cur - 1, true}, {"<", cur + 1, true},
		{">=", cur, true}, {"<=", cur - 1, false}, {"GREATER", cur, false}, {"LESS", cur + 1, true},
		{"EQUAL", cur, true}, {"NOT_EQUAL", 1, true},
	} {
		tr := ts.txn(t, fmt.Sprintf(`{"compare":[{"key":"k","target":"version","result":%q,"version":%d}]}`, tc.result, tc.v))
		if tr.Succeeded != tc.want {
			t.Errorf("version %d %s %d: %v", cur, tc.result, tc.v, tr.Succeeded)
		}
	}
	// Compare on value, including a missing key.
	for _, tc := range []struct {
		cmp  string
		want bool
	}{
		{`{"key":"k","target":"value","result":"==","value":"v2"}`, true},
		{`{"key":"k","target":"value","result":">","value":"v1"}`, true},
		{`{"key":"k","target":"value","result":"<","value":"v1"}`, false},
		{`{"key":"k","target":"value","result":"==","value":"djI=","value_b64":true}`, true},
		{`{"key":"nope","target":"value","result":"==","value":""}`, false},
		{`{"key":"nope","target":"value","result":"!=","value":""}`, true},
		{`{"key":"nope","target":"version","result":"==","version":0}`, true},
		{`{"key":"k","target":"exists","result":"!=","exists":false}`, true},
	} {
		if tr := ts.txn(t, `{"compare":[`+tc.cmp+`]}`); tr.Succeeded != tc.want {
			t.Errorf("%s: %v", tc.cmp, tr.Succeeded)
		}
	}

	// Range and delete with a prefix, binary keys.
	tr = ts.txn(t, `{"success":[
		{"put":{"key":"p/1","value":"a"}},{"put":{"key":"p/2","value":"b"}},
		{"put":{"key":"cC8z","key_b64":true,"value":"gA==","value_b64":true}},
		{"range":{"key":"p/","prefix":true}},
		{"range":{"key":"p/","prefix":true,"limit":1,"reverse":true,"keys_only":true}},
		{"delete":{"key":"p/","prefix":true}},
		{"range":{"key":"p/","range_end":"p0"}},
		{"delete":{"key":"nope"}},
		{"delete":{"key":"k"}}]}`)
	rs := tr.Responses
	if !tr.Succeeded || len(rs) != 9 {
		t.Fatalf("range txn: %+v", tr)
	}
	if its := rs[3].Range.Items; len(its) != 3 || its[0].Key != "p/1" || its[2].Key != "p/3" || !its[2].ValueB64 || rs[3].Range.More {
		t.Fatalf("range: %+v", rs[3].Range)
	}
	if its := rs[4].Range.Items; len(its) != 1 || its[0].Key != "p/3" || its[0].Value != nil || !rs[4].Range.More {
		t.Fatalf("limited reverse range: %+v", rs[4].Range)
	}
	if rs[5].Delete.Deleted != 3 || len(rs[6].Range.Items) != 0 || rs[7].Delete.Deleted != 0 || rs[8].Delete.Deleted != 1 {
		t.Fatalf("deletes: %+v %+v %+v %+v", rs[5].Delete, rs[6].Range, rs[7].Delete, rs[8].Delete)
	}
	if kvs, _ := ts.db.Range(nil, nil, nil); len(kvs) != 0 {
		t.Fatalf("left %d keys", len(kvs))
	}

	// Malformed requests change nothing.
	for _, tc := range []struct{ body, code string }{
		{`{"compare":[{"key":"k","target":"version","result":"~","version":1}]}`, "invalid_argument"},
		{`{"compare":[{"key":"k","target":"size","result":"==","version":1}]}`, "invalid_argument"},
		{`{"compare":[{"key":"k","target":"version","result":"=="}]}`, "invalid_argument"},
		{`{"compare":[{"key":"k","target":"exists","result":">","exists":true}]}`, "invalid_argument"},
		{`{"success":[{"put":{"key":"\u00ff","value":"x"}}]}`, ""},
		{`{"success":[{"put":{"key":"/w==","key_b64":true,"value":"x"}}]}`, "invalid_argument"},
		{`{"success":[{"put":{"key":"","value":"x"}}]}`, "invalid_argument"},
		{`{"success":[{"put":{"key":"a","value":"x"},"get":{"key":"a"}}]}`, "invalid_argument"},
		{`{"success":[{}]}`, "invalid_argument"},
		{`{"success":[{"put":{"key":"a","value":"x","lease":5}}]}`, "invalid_json"},
		{`{"success":[{"put":{"key":"a","value":"x","ttl":-5}}]}`, "invalid_argument"},
		{`{"success":[{"put":{"key":"a","value":"x","ttl":5,"expires_at":99999999999}}]}`, "invalid_argument"},
		{`{"success":[{"delete":{"key":"b","range_end":"a"}}]}`, "invalid_argument"},
		{`{"success":[{"put":{"key":"a","value":"!!","value_b64":true}}]}`, "invalid_argument"},
		{`{"bogus":1}`, "invalid_json"},
		{`{"success":[]} {}`, "invalid_json"},
		{`not json`, "invalid_json"},
		{`{"success":[` + strings.Repeat(`{"get":{"key":"a"}},`, MaxTxnOps) + `{"get":{"key":"a"}}]}`, "too_many_operations"},
	} {
		r := ts.do(t, "POST", "/v1/txn", tc.body)
		if tc.code == "" {
			// "\u00ff" is the UTF-8 encoding c3 bf, not the byte 0xff.
			r.want(t, 200, "")
			continue
		}
		r.want(t, 400, tc.code)
	}
	if _, err := ts.db.Get([]byte("a")); err == nil {
		t.Fatal("a malformed transaction wrote")
	}
	// Puts with a TTL and flags.
	tr = ts.txn(t, `{"success":[{"put":{"key":"t","value":"x","ttl":100,"flags":9}},{"put":{"key":"u","value":"y","expires_at":4102444800}}]}`)
	if !tr.Succeeded {
		t.Fatal("txn with ttl failed")
	}
	if _, info, err := ts.db.Lookup([]byte("t")); err != nil || info.Flags != 9 || time.Until(info.ExpiresAt) < 90*time.Second {
		t.Fatalf("put with ttl and flags: %+v %v", info, err)
	}
	if info, err := ts.db.Stat([]byte("u")); err != nil || info.ExpiresAt.Unix() != 4102444800 {
		t.Fatalf("put with expires_at: %+v %v", info, err)
	}
	ts.do(t, "GET", "/v1/txn", "").want(t, 405, "method_not_allowed")
}

// TestTxnAtomicIncrement runs compare-and-swap increments from many
// goroutines: no increment may be lost.
func TestTxnAtomicIncrement(t *testing.T) {
	ts := startServer(t)
	if err := ts.db.Set([]byte("n"), []byte("0")); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				r := ts.do(t, "POST", "/v1/txn", `{"success":[{"get":{"key":"n"}}]}`)
				var tr txnReply
				if err := json.Unmarshal([]byte(r.body), &tr); err != nil || r.status != 200 {
					t.Errorf("read: %d %s", r.status, r.body)
					return
				}
				g := tr.Responses[0].Get
				n, _ := strconv.Atoi(*g.Value)
				body := fmt.Sprintf(`{"compare":[{"key":"n","target":"value","result":"==","value":"%d"}],
					"success":[{"put":{"key":"n","value":"%d"}}]}`, n, n+1)
				r = ts.do(t, "POST", "/v1/txn", body)
				if err := json.Unmarshal([]byte(r.body), &tr); err != nil || r.status != 200 {
					t.Errorf("swap: %d %s", r.status, r.body)
					return
				}
				if tr.Succeeded {
					done++
				}
			}
		}()
	}
	wg.Wait()
	if v, _ := ts.db.Get([]byte("n")); string(v) != fmt.Sprint(workers*each) {
		t.Fatalf("counter %q, want %d", v, workers*each)
	}
}

// TestTxnVersionOfKeyChangedSinceReadVersion checks the version a
// transaction compares and reports for a key that another writer deleted,
// or rewrote, after the transaction's read version: the attempt must be
// retried (ErrConflict), never answered as if the key were absent. A
// read-only transaction commits without a conflict check, so before the
// fix "version == 0" held for a key that a get in the same transaction
// then found.
func TestTxnVersionOfKeyChangedSinceReadVersion(t *testing.T) {
	ts := startServer(t)
	k := []byte("k")
	for _, change := range []struct {
		name string
		fn   func() error
	}{
		{"deleted", func() error { return ts.db.Delete(k) }},
		{"rewritten", func() error { return ts.db.Set(k, []byte("v2")) }},
	} {
		if err := ts.db.Set(k, []byte("v1")); err != nil {
			t.Fatal(err)
		}
		tx, err := ts.db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		run := &txnRun{s: ts.s, tx: tx}
		before, err := run.version(k)
		if err != nil || before == 0 {
			t.Fatalf("%s: version before the change: %d, %v", change.name, before, err)
		}
		if err := change.fn(); err != nil {
			t.Fatal(err)
		}
		if v, err := run.version(k); !errors.Is(err, caskade.ErrConflict) {
			t.Errorf("%s after the read version: version %d, %v; want ErrConflict", change.name, v, err)
		}
		if _, err := tx.Get(k); err != nil {
			t.Fatalf("%s: the snapshot lost the key: %v", change.name, err)
		}
		tx.Rollback()
	}
	// A key absent at the read version is 0 whatever happens later (the
	// read conflict fails a read-write commit).
	if err := ts.db.Delete(k); err != nil {
		t.Fatal(err)
	}
	tx, err := ts.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := ts.db.Set(k, []byte("v3")); err != nil {
		t.Fatal(err)
	}
	if v, err := (&txnRun{s: ts.s, tx: tx}).version(k); v != 0 || err != nil {
		t.Fatalf("key created after the read version: version %d, %v; want 0", v, err)
	}
}

// A put's expires_at is bounded as PUT's ?expires_at= is: a time past the
// year 9999 overflows the engine's millisecond expiry (the key vanished
// as soon as it was written, and the reply still said it succeeded) or
// cannot be written as RFC 3339.
func TestTxnPutExpiresAtBounded(t *testing.T) {
	ts := startServer(t)
	for _, at := range []string{"9000000000000000000", strconv.Itoa(maxExpiresAt + 1)} {
		ts.do(t, "POST", "/v1/txn", `{"success":[{"put":{"key":"k","value":"v","expires_at":`+at+`}}]}`).
			want(t, 400, "invalid_argument")
		ts.do(t, "GET", "/v1/kv/k", "").want(t, 404, "not_found")
	}
	ts.txn(t, `{"success":[{"put":{"key":"k","value":"v","expires_at":`+strconv.Itoa(maxExpiresAt)+`}}]}`)
	r := ts.do(t, "GET", "/v1/kv/k", "").want(t, 200, "")
	if got := r.header.Get(HeaderExpiresAt); got != "9999-12-31T23:59:59Z" {
		t.Fatalf("expires at %q", got)
	}
}

// The keys and values a transaction returns are bounded
// (MaxTxnReplyBytes, lowered here): 128 range operations of 10,000 pairs
// each, or 128 gets of big values, were held in memory and encoded in one
// piece. A transaction that reads more is refused whole, writes included.
func TestTxnReplyBounded(t *testing.T) {
	defer func(old int) { maxTxnReply = old }(maxTxnReply)
	maxTxnReply = 1 << 20
	ts := startServer(t)
	val := strings.Repeat("v", 200<<10)
	for i := range 10 {
		if err := ts.db.Set([]byte(fmt.Sprintf("big/%d", i)), []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.db.Set([]byte("lt"), []byte(strings.Repeat("<", 200<<10))); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"success":[{"put":{"key":"x","value":"y"}},{"range":{"key":"big/","prefix":true}}]}`,
		`{"success":[{"range":{"key":"big/","prefix":true,"limit":4}},{"range":{"key":"big/","prefix":true,"limit":4}}]}`,
		`{"success":[{"get":{"key":"big/1"}},{"get":{"key":"big/1"}},{"get":{"key":"big/1"}},{"get":{"key":"big/1"}},{"get":{"key":"big/1"}},{"get":{"key":"big/1"}}]}`,
		// 200 KiB of '<' is 1.2 MiB in JSON (\u003c).
		`{"success":[{"get":{"key":"lt"}}]}`,
	} {
		ts.do(t, "POST", "/v1/txn", body).want(t, 400, "reply_too_large")
	}
	if _, err := ts.db.Get([]byte("x")); !errors.Is(err, caskade.ErrNotFound) {
		t.Fatalf("the put of a refused transaction was committed: %v", err)
	}
	// Within the budget: a page of the range, and every key without values.
	r := ts.do(t, "POST", "/v1/txn", `{"success":[{"range":{"key":"big/","prefix":true,"limit":4}}]}`).want(t, 200, "")
	if len(r.body) > maxTxnReply+1000 {
		t.Fatalf("reply of %d bytes", len(r.body))
	}
	tr := ts.txn(t, `{"success":[{"range":{"key":"big/","prefix":true,"keys_only":true}}]}`)
	if rg := tr.Responses[0].Range; len(rg.Items) != 10 || rg.More {
		t.Fatalf("keys_only range: %d items, more %v", len(rg.Items), rg.More)
	}
}
