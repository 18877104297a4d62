package httpapi

import "testing"

// TestKVBadInput checks that malformed query strings, expiry times and
// version headers get 400 invalid_argument (JSON) and change nothing.
func TestKVBadInput(t *testing.T) {
	ts := startServer(t)
	ts.do(t, "PUT", "/v1/kv/k", "old").want(t, 201, "")

	// A bad %-escape in the query string: r.URL.Query() would drop the
	// pair and store a key without its TTL, or list every key.
	ts.do(t, "PUT", "/v1/kv/fresh?ttl=%zz", "v").want(t, 400, "invalid_argument")
	ts.do(t, "PUT", "/v1/kv/fresh?flags=1&ttl=5%", "v").want(t, 400, "invalid_argument")
	ts.do(t, "GET", "/v1/kv/fresh", "").want(t, 404, "not_found")
	ts.do(t, "GET", "/v1/kv?prefix=%zz", "").want(t, 400, "invalid_argument")
	ts.do(t, "GET", "/v1/kv?prefix=%6b", "").want(t, 200, "")
	// A parameter given twice: which value counts would be a guess.
	ts.do(t, "PUT", "/v1/kv/fresh?ttl=5&ttl=x", "v").want(t, 400, "invalid_argument")
	ts.do(t, "PUT", "/v1/kv/fresh?ttl=5&ttl=5", "v").want(t, 400, "invalid_argument")
	ts.do(t, "GET", "/v1/kv?prefix=a&prefix=b", "").want(t, 400, "invalid_argument")
	ts.do(t, "GET", "/v1/kv/fresh", "").want(t, 404, "not_found")

	// TTLs: positive whole seconds up to 100 years.
	for _, ttl := range []string{"0", "-1", "-0", "abc", "1.5", "99999999999999999999",
		"9223372036854775807", "3153600001"} {
		ts.do(t, "PUT", "/v1/kv/fresh?ttl="+ttl, "v").want(t, 400, "invalid_argument")
	}
	ts.do(t, "PUT", "/v1/kv/fresh?ttl="+"3153600000", "v").want(t, 201, "")

	// An expiry past what the engine can hold (Unix milliseconds) would
	// wrap into the past: the key was acknowledged and gone at once.
	for _, at := range []string{"9223372036854775807", "253402300800", "-1", "0",
		// In the year 10000 in UTC: the expiry could not be written back
		// as RFC 3339 (Caskade-Expires-At: 10000-01-01T23:58:59Z).
		"9999-12-31T23:59:59-23:59", "9999-12-31T23:00:00-01:00"} {
		ts.do(t, "PUT", "/v1/kv/far?expires_at="+at, "v").want(t, 400, "invalid_argument")
	}
	ts.do(t, "GET", "/v1/kv/far", "").want(t, 404, "not_found")
	ts.do(t, "PUT", "/v1/kv/far?expires_at=253402300799", "v").want(t, 201, "")
	ts.do(t, "GET", "/v1/kv/far", "").want(t, 200, "")
	ts.do(t, "PUT", "/v1/kv/far?expires_at=9999-12-31T23:59:59%2B01:00", "v").want(t, 204, "")
	if got := ts.do(t, "GET", "/v1/kv/far", "").header.Get(HeaderExpiresAt); got != "9999-12-31T22:59:59Z" {
		t.Fatalf("expires at %q", got)
	}

	// Version headers that are not versions: 400, not a 412 the client
	// cannot explain, and never a write (If-None-Match: abc used to let
	// the PUT through).
	for _, tag := range []string{"abc", `"abc"`, `"`, `""`, `"1`, `W/`, "-1", "+1",
		"99999999999999999999", ",", " ", `1, x`} {
		for _, h := range []string{"If-Match", "If-None-Match"} {
			ts.do(t, "PUT", "/v1/kv/k", "new", h, tag).want(t, 400, "invalid_argument")
			ts.do(t, "DELETE", "/v1/kv/k", "", h, tag).want(t, 400, "invalid_argument")
			ts.do(t, "GET", "/v1/kv/k", "", h, tag).want(t, 400, "invalid_argument")
			ts.do(t, "HEAD", "/v1/kv/k", "", h, tag).want(t, 400, "")
		}
	}
	if r := ts.do(t, "GET", "/v1/kv/k", "").want(t, 200, ""); r.body != "old" {
		t.Fatalf("value after refused writes: %q", r.body)
	}
	v := ts.do(t, "GET", "/v1/kv/k", "").header.Get(HeaderVersion)
	ts.do(t, "PUT", "/v1/kv/k", "new", "If-Match", `W/"`+v+`"`).want(t, 204, "")
	ts.do(t, "HEAD", "/v1/kv/missing", "").want(t, 404, "")
}
