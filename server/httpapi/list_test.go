package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/internal/wiretest"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

type listReply struct {
	Items []item       `json:"items"`
	Count int          `json:"count"`
	Next  string       `json:"next"`
	Error *errorDetail `json:"error"`
}

func (ts *testServer) list(t *testing.T, q url.Values) listReply {
	t.Helper()
	r := ts.do(t, "GET", "/v1/kv?"+q.Encode(), "").want(t, 200, "")
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var lr listReply
	if err := json.Unmarshal([]byte(r.body), &lr); err != nil {
		t.Fatalf("listing is not JSON: %v\n%s", err, r.body)
	}
	if lr.Count != len(lr.Items) {
		t.Fatalf("count %d for %d items", lr.Count, len(lr.Items))
	}
	return lr
}

func keysOf(lr listReply) []string {
	var ks []string
	for _, it := range lr.Items {
		ks = append(ks, it.Key)
	}
	return ks
}

func TestList(t *testing.T) {
	ts := startServer(t)
	for _, k := range []string{"a", "b/1", "b/2", "b/3", "c"} {
		if err := ts.db.SetEntry([]byte(k), []byte("v"+k), caskade.SetOptions{Flags: 7}); err != nil {
			t.Fatal(err)
		}
	}
	// Binary key and value, and keys of Redis databases 1+ (never listed).
	if err := ts.db.Set([]byte("bin\xff\x00"), []byte("\x80\x81")); err != nil {
		t.Fatal(err)
	}
	if err := ts.db.Set([]byte("\xff\x01hidden"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	lr := ts.list(t, url.Values{})
	if got, want := keysOf(lr), []string{"a", "b/1", "b/2", "b/3", base64.StdEncoding.EncodeToString([]byte("bin\xff\x00")), "c"}; !slices.Equal(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
	bin := lr.Items[4]
	if !bin.KeyB64 || !bin.ValueB64 || *bin.Value != base64.StdEncoding.EncodeToString([]byte("\x80\x81")) {
		t.Fatalf("binary item %+v", bin)
	}
	if a := lr.Items[0]; a.KeyB64 || a.ValueB64 || *a.Value != "va" || a.Flags != 7 || a.Version == 0 {
		t.Fatalf("item a %+v", a)
	}
	if lr.Next != "" {
		t.Fatal("next on a complete listing")
	}

	for _, tc := range []struct {
		q    url.Values
		want []string
	}{
		{url.Values{"prefix": {"b/"}}, []string{"b/1", "b/2", "b/3"}},
		{url.Values{"prefix": {"b/"}, "start": {"b/2"}}, []string{"b/2", "b/3"}},
		{url.Values{"prefix": {"b/"}, "end": {"b/3"}}, []string{"b/1", "b/2"}},
		{url.Values{"start": {"b"}, "end": {"c"}}, []string{"b/1", "b/2", "b/3", base64.StdEncoding.EncodeToString([]byte("bin\xff\x00"))}},
		{url.Values{"prefix": {"b/"}, "reverse": {"true"}}, []string{"b/3", "b/2", "b/1"}},
		{url.Values{"prefix": {"b/"}, "reverse": {"1"}, "limit": {"2"}}, []string{"b/3", "b/2"}},
		{url.Values{"start": {"x"}, "end": {"a"}}, nil},
		{url.Values{"prefix": {"zzz"}}, nil},
		{url.Values{"start": {"\xfe"}}, nil},
		{url.Values{"end": {"\xff\xff"}, "start": {"c"}}, []string{"c"}},
	} {
		if got := keysOf(ts.list(t, tc.q)); !slices.Equal(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.q, got, tc.want)
		}
	}
	ko := ts.list(t, url.Values{"prefix": {"a"}, "keys_only": {"true"}})
	if len(ko.Items) != 1 || ko.Items[0].Value != nil || ko.Items[0].Version == 0 {
		t.Fatalf("keys_only: %+v", ko.Items)
	}
	for _, q := range []string{"limit=0", "limit=x", "reverse=maybe", "keys_only=2", "cursor=%21%21", "prefix=%FF"} {
		r := ts.do(t, "GET", "/v1/kv?"+q, "")
		if r.status != 400 {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
	// A forward cursor is refused for a reverse listing.
	first := ts.list(t, url.Values{"limit": {"1"}})
	ts.do(t, "GET", "/v1/kv?reverse=true&cursor="+first.Next, "").want(t, 400, "invalid_argument")
}

// TestListPaging pages through a few thousand keys forwards and backwards
// with random page sizes and checks nothing is missed or repeated.
func TestListPaging(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	ts := startServer(t)
	const n = 3000
	var want []string
	var b caskade.Batch
	for i := range n {
		k := fmt.Sprintf("key/%05d/%x", i, r.Uint32())
		want = append(want, k)
		b.Set([]byte(k), []byte(fmt.Sprint(i)))
	}
	b.Set([]byte("other"), []byte("x"))
	if err := ts.db.Write(&b); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	for _, reverse := range []bool{false, true} {
		var got []string
		cursor := ""
		pages := 0
		for {
			q := url.Values{"prefix": {"key/"}, "limit": {fmt.Sprint(1 + r.IntN(400))}}
			if reverse {
				q.Set("reverse", "true")
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			lr := ts.list(t, q)
			got = append(got, keysOf(lr)...)
			pages++
			if lr.Next == "" {
				break
			}
			cursor = lr.Next
			if pages > n {
				t.Fatal("paging does not end")
			}
		}
		exp := slices.Clone(want)
		if reverse {
			slices.Reverse(exp)
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("reverse=%v: %d keys in %d pages, want %d", reverse, len(got), pages, len(exp))
		}
	}
	// The default limit applies, and larger limits are capped.
	if lr := ts.list(t, url.Values{}); lr.Count != DefaultListLimit || lr.Next == "" {
		t.Fatalf("default page: %d items, next %q", lr.Count, lr.Next)
	}
}

// A listing that fails before any of it was sent answers with the error's
// status, as every other endpoint does: it used to answer 200 with an
// empty item list and an "error" member, which a client checking the
// status took for a complete, empty listing. A failure after part of the
// listing was sent still ends it with the "error" member (and no next).
func TestListErrorStatus(t *testing.T) {
	ts := startServer(t)
	if err := ts.db.Set([]byte("a"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := ts.db.Close(); err != nil {
		t.Fatal(err)
	}
	ts.do(t, "GET", "/v1/kv", "").want(t, 503, "closed")

	efs := errorfs.New(vfs.NewMem())
	db, err := caskade.Open("/db", &caskade.Options{FS: efs, Sync: caskade.SyncNone, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // after the server's shutdown
	const n = 200
	val := strings.Repeat("v", 1000) // n values are well over the reply's buffer
	for i := range n {
		if err := db.Set(fmt.Appendf(nil, "k%03d", i), []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	ts = startServer(t, func(s *Server) { s.DB = db })
	efs.Inject(errorfs.OpRead, syscall.EIO)
	ts.do(t, "GET", "/v1/kv", "").want(t, 500, "internal")
	efs.Reset()
	efs.InjectAfter(errorfs.OpRead, n/2, syscall.EIO)
	lr := ts.list(t, url.Values{})
	if lr.Error == nil || lr.Error.Code != "internal" || lr.Next != "" || lr.Count == 0 || lr.Count >= n {
		t.Fatalf("listing failing midway: %d items, next %q, error %+v", lr.Count, lr.Next, lr.Error)
	}
	efs.Reset()
	if lr := ts.list(t, url.Values{}); lr.Error != nil || lr.Count != n {
		t.Fatalf("listing after the fault: %d items, error %+v", lr.Count, lr.Error)
	}
}

// HEAD /v1/kv answers what GET would, without the body: it used to
// answer 200 without reading anything, also on a closed database where
// GET answers 503.
func TestListHeadMatchesGet(t *testing.T) {
	ts := startServer(t)
	for i := range 3 {
		if err := ts.db.Set(fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"", "?limit=2", "?limit=x"} {
		get := ts.do(t, "GET", "/v1/kv"+q, "")
		head := ts.do(t, "HEAD", "/v1/kv"+q, "")
		if head.status != get.status || head.body != "" {
			t.Fatalf("HEAD %s: %d %q; GET: %d", q, head.status, head.body, get.status)
		}
		for _, h := range []string{"Content-Type", "Content-Length"} {
			if head.header.Get(h) != get.header.Get(h) {
				t.Fatalf("HEAD %s: %s %q; GET: %q", q, h, head.header.Get(h), get.header.Get(h))
			}
		}
	}
	if err := ts.db.Close(); err != nil {
		t.Fatal(err)
	}
	ts.do(t, "GET", "/v1/kv", "").want(t, 503, "")
	if r := ts.do(t, "HEAD", "/v1/kv", ""); r.status != 503 {
		t.Fatalf("HEAD on a closed database: %d, want GET's 503", r.status)
	}
}

// A limit past the int range is reduced to MaxListLimit, as the doc says
// of every larger limit, in listings and in txn ranges; it used to be
// refused with 400.
func TestListHugeLimit(t *testing.T) {
	ts := startServer(t)
	for i := range 3 {
		if err := ts.db.Set(fmt.Appendf(nil, "k%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	const huge = "99999999999999999999999"
	if lr := ts.list(t, url.Values{"limit": {huge}}); lr.Count != 3 || lr.Next != "" {
		t.Fatalf("limit=%s: %d items, next %q", huge, lr.Count, lr.Next)
	}
	ts.do(t, "GET", "/v1/kv?limit=-"+huge, "").want(t, 400, "invalid_argument")
	tr := ts.txn(t, `{"success":[{"range":{"key":"k","prefix":true,"limit":`+huge+`}}]}`)
	if rg := tr.Responses[0].Range; len(rg.Items) != 3 || rg.More {
		t.Fatalf("txn range with limit %s: %+v", huge, rg)
	}
	for _, l := range []string{"-" + huge, "1.5", `"3"`} {
		ts.do(t, "POST", "/v1/txn", `{"success":[{"range":{"key":"k","limit":`+l+`}}]}`).want(t, 400, "")
	}
}

// A failed read answers 500 internal without its cause, which names the
// server's files (and here its directory); the cause goes to the log.
func TestInternalErrorCauseStaysInLog(t *testing.T) {
	const dir = "/srv/secret-dir"
	efs := errorfs.New(vfs.NewMem())
	db, err := caskade.Open(dir, &caskade.Options{FS: efs, Sync: caskade.SyncNone, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for i := range 50 {
		if err := db.Set(fmt.Appendf(nil, "k%02d", i), []byte(strings.Repeat("v", 2000))); err != nil {
			t.Fatal(err)
		}
	}
	var log wiretest.LogBuffer
	ts := startServer(t, func(s *Server) {
		s.DB = db
		s.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	efs.Inject(errorfs.OpRead, syscall.EIO)
	for _, path := range []string{"/v1/kv/k01", "/v1/kv"} {
		if r := ts.do(t, "GET", path, "").want(t, 500, "internal"); strings.Contains(r.body, "secret-dir") || strings.Contains(r.body, "input/output") {
			t.Errorf("GET %s: the reply carries the cause: %s", path, r.body)
		}
	}
	efs.Reset()
	efs.InjectAfter(errorfs.OpRead, 40, syscall.EIO)
	if lr := ts.list(t, url.Values{}); lr.Error == nil || lr.Error.Code != "internal" || strings.Contains(lr.Error.Message, "secret-dir") {
		t.Errorf("listing failing midway: error %+v", lr.Error)
	}
	efs.Reset()
	if got := log.String(); strings.Count(got, "secret-dir") < 3 || !strings.Contains(got, "input/output error") {
		t.Errorf("the log lacks the causes:\n%s", got)
	}
}

// A negative limit is refused with a 400 that names the limit, in
// listings and in txn ranges: the engine refuses one too (caskade's
// range_limits_invalid), where it once meant no limit.
func TestNegativeLimit(t *testing.T) {
	ts := startServer(t)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/kv?limit=-1", ""},
		{"POST", "/v1/txn", `{"success":[{"range":{"key":"k","limit":-1}}]}`},
	} {
		r := ts.do(t, c.method, c.path, c.body).want(t, 400, "invalid_argument")
		var e errorBody
		if err := json.Unmarshal([]byte(r.body), &e); err != nil || !strings.Contains(e.Error.Message, "limit") {
			t.Errorf("%s %s: error %q does not name the limit (%v)", c.method, c.path, r.body, err)
		}
	}
}
