package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/caskade/caskade"
)

// Response headers of the key endpoints.
const (
	// HeaderVersion carries the key's commit version (the value of its
	// ETag, unquoted).
	HeaderVersion = "Caskade-Version"
	// HeaderFlags carries the 32-bit client flags stored beside the value
	// (memcached's flags).
	HeaderFlags = "Caskade-Flags"
	// HeaderExpiresAt carries the key's expiry time (RFC 3339, UTC) when
	// it has one.
	HeaderExpiresAt = "Caskade-Expires-At"
)

// maxAttempts bounds the retries of a conditional write that keeps losing
// to concurrent writers. From the third attempt on it waits for its turn
// (caskade.Turn), so contenders take turns and this bound only stops a
// runaway loop.
const maxAttempts = 10000

var errContended = errors.New("httpapi: too many conflicting writes")

// pathKey extracts the key of /v1/kv/{key} (URL-escaped in the path).
func pathKey(r *http.Request) ([]byte, string, string) {
	raw := r.URL.EscapedPath()
	if !strings.HasPrefix(raw, kvPrefix) {
		return nil, "invalid_key", "bad key path"
	}
	k, err := url.PathUnescape(raw[len(kvPrefix):])
	if err != nil {
		return nil, "invalid_key", "bad URL escape in key"
	}
	if k == "" {
		return nil, "invalid_key", "empty key"
	}
	if k[0] == 0xff {
		return nil, "reserved_key", "keys starting with the byte 0xff are reserved"
	}
	return []byte(k), "", ""
}

// etagOf formats a version as an entity tag.
func etagOf(v uint64) string { return `"` + strconv.FormatUint(v, 10) + `"` }

// precondition is a parsed If-Match or If-None-Match header.
type precondition struct {
	present  bool
	any      bool // "*"
	versions []uint64
	bad      bool // a tag that is not a version, or no tag at all
}

// parsePrecondition reads a list of entity tags ("123", W/"123", 123, *).
// A tag that is none of those (say "abc", an unbalanced quote, a number
// past 2^64-1) or a header with no tag marks it bad: the request is then
// refused (badPrecondition), rather than compared with a tag no version
// can match, which would fail an If-Match for a reason the client cannot
// see and let an If-None-Match write over anything.
func parsePrecondition(h http.Header, name string) precondition {
	vals := h.Values(name)
	if len(vals) == 0 {
		return precondition{}
	}
	p := precondition{present: true}
	tags := 0
	for _, v := range vals {
		for _, tag := range strings.Split(v, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "" {
				continue
			}
			tags++
			if tag == "*" {
				p.any = true
				continue
			}
			tag = strings.TrimPrefix(tag, "W/")
			if len(tag) >= 2 && tag[0] == '"' && tag[len(tag)-1] == '"' {
				tag = tag[1 : len(tag)-1]
			}
			if tag == "" || tag[0] < '0' || tag[0] > '9' {
				p.bad = true
				continue
			}
			n, err := strconv.ParseUint(tag, 10, 64)
			if err != nil {
				p.bad = true
				continue
			}
			p.versions = append(p.versions, n)
		}
	}
	if tags == 0 {
		p.bad = true
	}
	return p
}

// badPrecondition answers 400 if either parsed header is malformed, and
// reports whether it did.
func badPrecondition(w http.ResponseWriter, ifMatch, ifNoneMatch precondition) bool {
	name := "If-Match"
	switch {
	case ifMatch.bad:
	case ifNoneMatch.bad:
		name = "If-None-Match"
	default:
		return false
	}
	writeError(w, http.StatusBadRequest, "invalid_argument",
		name+` must be a list of versions ("123", W/"123" or 123) or *`)
	return true
}

// parseQuery parses r's query string, answering 400 if it does not parse
// (a bad %-escape, a semicolon): r.URL.Query() drops such a pair
// silently, so a PUT with ?ttl=%zz would store a key that never expires
// and a listing with ?prefix=%zz would list every key. A parameter given
// twice is refused too: only one of its values could count, and which
// one a client meant is anyone's guess (?ttl=5&ttl=x stored a 5-second
// TTL without a word about the x).
func parseQuery(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_argument", "bad query string: "+err.Error())
		return nil, false
	}
	for name, vs := range q {
		if len(vs) > 1 {
			writeError(w, http.StatusBadRequest, "invalid_argument", fmt.Sprintf("query parameter %q given %d times", name, len(vs)))
			return nil, false
		}
	}
	return q, true
}

// matches reports whether the precondition's tags match a key that exists
// (at version) or not.
func (p precondition) matches(exists bool, version uint64) bool {
	if !exists {
		return false
	}
	if p.any {
		return true
	}
	for _, v := range p.versions {
		if v == version {
			return true
		}
	}
	return false
}

// allows reports whether the If-Match and If-None-Match preconditions let
// a request proceed on a key that exists (at version) or not.
func allows(ifMatch, ifNoneMatch precondition, exists bool, version uint64) bool {
	if ifMatch.present && !ifMatch.matches(exists, version) {
		return false
	}
	if ifNoneMatch.present && ifNoneMatch.matches(exists, version) {
		return false
	}
	return true
}

func setKeyHeaders(h http.Header, info caskade.KeyInfo) {
	v := strconv.FormatUint(info.Version, 10)
	h.Set("ETag", `"`+v+`"`)
	h.Set(HeaderVersion, v)
	h.Set(HeaderFlags, strconv.FormatUint(uint64(info.Flags), 10))
	if !info.ExpiresAt.IsZero() {
		h.Set(HeaderExpiresAt, info.ExpiresAt.UTC().Format(time.RFC3339Nano))
	}
}

// kv serves GET, HEAD, PUT and DELETE on /v1/kv/{key}.
func (s *Server) kv(w http.ResponseWriter, r *http.Request) {
	key, code, msg := pathKey(r)
	if code != "" {
		writeError(w, http.StatusBadRequest, code, msg)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.kvGet(w, r, key)
	case http.MethodPut:
		s.kvPut(w, r, key)
	case http.MethodDelete:
		s.kvDelete(w, r, key)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, DELETE")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+" not allowed")
	}
}

func (s *Server) kvGet(w http.ResponseWriter, r *http.Request, key []byte) {
	val, info, err := s.DB.Lookup(key)
	exists := err == nil
	if err != nil && !errors.Is(err, caskade.ErrNotFound) {
		s.writeDBError(w, err)
		return
	}
	ifMatch := parsePrecondition(r.Header, "If-Match")
	inm := parsePrecondition(r.Header, "If-None-Match")
	if badPrecondition(w, ifMatch, inm) {
		return
	}
	if ifMatch.present && !ifMatch.matches(exists, info.Version) {
		writeError(w, http.StatusPreconditionFailed, "precondition_failed", "If-Match does not match the key's version")
		return
	}
	if !exists {
		writeError(w, http.StatusNotFound, "not_found", "key not found")
		return
	}
	h := w.Header()
	setKeyHeaders(h, info)
	if inm.present && inm.matches(true, info.Version) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(val)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(val)
	}
}

const (
	// maxTTL bounds ?ttl= (seconds): 100 years.
	maxTTL = 100 * 365 * 24 * 3600
	// maxExpiresAt bounds ?expires_at= (Unix seconds): the end of the
	// year 9999, the last time RFC 3339 can write. The engine keeps
	// expiry in Unix milliseconds, so a much larger time would overflow
	// into the past and the key would vanish as soon as it was written.
	maxExpiresAt = 253402300799
)

// writeOptions parses ?ttl= (seconds), ?expires_at= (Unix seconds or RFC
// 3339) and ?flags= (uint32).
func writeOptions(q url.Values, now time.Time) (caskade.SetOptions, string) {
	var o caskade.SetOptions
	ttl, at := q.Get("ttl"), q.Get("expires_at")
	if ttl != "" && at != "" {
		return o, "give ttl or expires_at, not both"
	}
	if ttl != "" {
		n, err := strconv.ParseInt(ttl, 10, 64)
		if err != nil || n <= 0 || n > maxTTL {
			return o, "ttl must be a whole number of seconds from 1 to " + strconv.Itoa(maxTTL) + " (100 years)"
		}
		o.ExpiresAt = now.Add(time.Duration(n) * time.Second)
	}
	if at != "" {
		if n, err := strconv.ParseInt(at, 10, 64); err == nil && n > 0 && n <= maxExpiresAt {
			o.ExpiresAt = time.Unix(n, 0)
		} else if t, err := time.Parse(time.RFC3339Nano, at); err == nil && t.Unix() > 0 && t.Unix() <= maxExpiresAt {
			// The bound applies in UTC: 9999-12-31T23:59:59-01:00 is in
			// the year 10000, which RFC 3339 cannot write.
			o.ExpiresAt = t
		} else {
			return o, "expires_at must be a Unix time in seconds or an RFC 3339 time, after 1970 and before the year 10000"
		}
	}
	if f := q.Get("flags"); f != "" {
		n, err := strconv.ParseUint(f, 10, 32)
		if err != nil {
			return o, "flags must be an unsigned 32-bit number"
		}
		o.Flags = uint32(n)
	}
	return o, ""
}

func (s *Server) kvPut(w http.ResponseWriter, r *http.Request, key []byte) {
	q, ok := parseQuery(w, r)
	if !ok {
		return
	}
	opts, msg := writeOptions(q, time.Now())
	if msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_argument", msg)
		return
	}
	ifMatch := parsePrecondition(r.Header, "If-Match")
	ifNoneMatch := parsePrecondition(r.Header, "If-None-Match")
	if badPrecondition(w, ifMatch, ifNoneMatch) {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", "request body larger than "+strconv.FormatInt(s.maxBody, 10)+" bytes")
			return
		}
		writeError(w, http.StatusBadRequest, "bad_body", err.Error())
		return
	}
	var b caskade.Batch
	created := false
	err = errContended
	turn := s.DB.Turn()
	defer turn.Done()
	for attempt := range maxAttempts {
		turn.Wait(attempt)
		info, serr := s.DB.Stat(key)
		exists := serr == nil
		if serr != nil && !errors.Is(serr, caskade.ErrNotFound) {
			err = serr
			break
		}
		if !allows(ifMatch, ifNoneMatch, exists, info.Version) {
			writeError(w, http.StatusPreconditionFailed, "precondition_failed", "the key's version does not satisfy If-Match / If-None-Match")
			return
		}
		b.Reset()
		b.Check(key, info.Version)
		b.SetEntry(key, body, opts)
		err = turn.Write(&b)
		if !errors.Is(err, caskade.ErrConflict) {
			created = !exists
			break
		}
	}
	if err != nil {
		s.writeDBError(w, err)
		return
	}
	if v := b.Version(); v != 0 {
		w.Header().Set("ETag", etagOf(v))
		w.Header().Set(HeaderVersion, strconv.FormatUint(v, 10))
	}
	if created {
		w.WriteHeader(http.StatusCreated)
	} else {
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) kvDelete(w http.ResponseWriter, r *http.Request, key []byte) {
	ifMatch := parsePrecondition(r.Header, "If-Match")
	ifNoneMatch := parsePrecondition(r.Header, "If-None-Match")
	if badPrecondition(w, ifMatch, ifNoneMatch) {
		return
	}
	var b caskade.Batch
	err := errContended
	turn := s.DB.Turn()
	defer turn.Done()
	for attempt := range maxAttempts {
		turn.Wait(attempt)
		info, serr := s.DB.Stat(key)
		exists := serr == nil
		if serr != nil && !errors.Is(serr, caskade.ErrNotFound) {
			err = serr
			break
		}
		if !allows(ifMatch, ifNoneMatch, exists, info.Version) {
			writeError(w, http.StatusPreconditionFailed, "precondition_failed", "the key's version does not satisfy If-Match / If-None-Match")
			return
		}
		if !exists {
			writeError(w, http.StatusNotFound, "not_found", "key not found")
			return
		}
		b.Reset()
		b.Check(key, info.Version)
		b.Delete(key)
		err = turn.Write(&b)
		if !errors.Is(err, caskade.ErrConflict) {
			break
		}
	}
	if err != nil {
		s.writeDBError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
