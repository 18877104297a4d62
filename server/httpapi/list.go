package httpapi

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/caskade/caskade"
)

// reservedStart begins the key space of Redis databases 1 and up, which the
// HTTP API never lists or touches.
var reservedStart = []byte{0xff}

// item is one pair of a listing. A key or value that is not valid UTF-8
// is base64-encoded (standard alphabet, padded) and marked with key_b64 or
// value_b64.
type item struct {
	Key       string  `json:"key"`
	KeyB64    bool    `json:"key_b64,omitempty"`
	Value     *string `json:"value,omitempty"`
	ValueB64  bool    `json:"value_b64,omitempty"`
	Version   uint64  `json:"version,omitempty"`
	Flags     uint32  `json:"flags,omitempty"`
	ExpiresAt string  `json:"expires_at,omitempty"`
}

// encodeBytes returns b as a JSON string: itself if valid UTF-8, else its
// base64 (and true).
func encodeBytes(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

// Cursor tokens are base64url of a direction byte and the last key
// returned.
const (
	cursorForward = 'f'
	cursorReverse = 'r'
)

func encodeCursor(dir byte, key []byte) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{dir}, key...))
}

func decodeCursor(s string) (byte, []byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 2 || (b[0] != cursorForward && b[0] != cursorReverse) {
		return 0, nil, false
	}
	return b[0], b[1:], true
}

func parseBool(s string) (bool, bool) {
	switch s {
	case "", "0", "false", "no":
		return false, true
	case "1", "true", "yes":
		return true, true
	}
	return false, false
}

// listRange computes the [lo, hi) range of a listing from prefix, start,
// end and cursor; hi is never past the reserved 0xff key space.
func listRange(q url.Values, reverse bool) (lo, hi []byte, msg string) {
	prefix := []byte(q.Get("prefix"))
	if len(prefix) > 0 && prefix[0] == 0xff {
		return nil, nil, "keys starting with the byte 0xff are reserved"
	}
	lo = prefix
	if st := []byte(q.Get("start")); bytes.Compare(st, lo) > 0 {
		lo = st
	}
	hi = caskade.PrefixEnd(prefix)
	if hi == nil || bytes.Compare(hi, reservedStart) > 0 {
		hi = reservedStart
	}
	if q.Has("end") {
		if e := []byte(q.Get("end")); bytes.Compare(e, hi) < 0 {
			hi = e
		}
	}
	if c := q.Get("cursor"); c != "" {
		dir, k, ok := decodeCursor(c)
		want := byte(cursorForward)
		if reverse {
			want = cursorReverse
		}
		if !ok || dir != want {
			return nil, nil, "bad cursor"
		}
		if reverse {
			if bytes.Compare(k, hi) < 0 {
				hi = k
			}
		} else if next := append(k, 0); bytes.Compare(next, lo) > 0 {
			lo = next
		}
	}
	return lo, hi, ""
}

// list serves GET /v1/kv: the pairs in key order (or reverse), streamed as
//
//	{"items":[{"key":...,"value":...,"version":...},...],"count":n,"next":"<cursor>"}
//
// where next (present only when more pairs follow) is passed back as
// ?cursor= with the same other parameters to get the next page. A read
// error after the first byte ends the object with an "error" member.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q, ok := parseQuery(w, r)
	if !ok {
		return
	}
	reverse, ok1 := parseBool(q.Get("reverse"))
	keysOnly, ok2 := parseBool(q.Get("keys_only"))
	if !ok1 || !ok2 {
		writeError(w, http.StatusBadRequest, "invalid_argument", "reverse and keys_only take true or false")
		return
	}
	limit := DefaultListLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if errors.Is(err, strconv.ErrRange) && n > 0 {
			err = nil // past the int range: reduced to MaxListLimit as well
		}
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, "invalid_argument", "limit must be a positive number")
			return
		}
		limit = min(n, MaxListLimit)
	}
	lo, hi, msg := listRange(q, reverse)
	if msg != "" {
		code := "invalid_argument"
		if msg != "bad cursor" {
			code = "reserved_key"
		}
		writeError(w, http.StatusBadRequest, code, msg)
		return
	}
	// HEAD runs the listing too, so that its status and headers are
	// GET's (net/http drops the body): an error before the first byte
	// gets its own status, and a short listing its Content-Length.
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 32<<10)
	defer bw.Flush()
	bw.WriteString(`{"items":[`)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	var last []byte
	more := false
	var iterErr error
	if bytes.Compare(lo, hi) < 0 {
		it, err := s.DB.NewIterator(&caskade.IterOptions{LowerBound: lo, UpperBound: hi})
		if err != nil {
			iterErr = err
		} else {
			ok := false
			if reverse {
				ok = it.Last()
			} else {
				ok = it.First()
			}
			for ; ok; ok = step(it, reverse) {
				if n == limit {
					more = true
					break
				}
				var e item
				e.Key, e.KeyB64 = encodeBytes(it.Key())
				if !keysOnly {
					v := it.Value()
					if v == nil && it.Err() != nil {
						break
					}
					var sv string
					sv, e.ValueB64 = encodeBytes(v)
					e.Value = &sv
				}
				info := it.Info()
				e.Version, e.Flags = info.Version, info.Flags
				if !info.ExpiresAt.IsZero() {
					e.ExpiresAt = info.ExpiresAt.UTC().Format(time.RFC3339Nano)
				}
				if n > 0 {
					bw.WriteByte(',')
				}
				if err := enc.Encode(&e); err != nil {
					iterErr = err
					break
				}
				last = append(last[:0], it.Key()...)
				n++
			}
			if err := it.Err(); err != nil && iterErr == nil {
				iterErr = err
			}
			it.Close()
		}
	}
	if iterErr != nil && cw.n == 0 {
		// Nothing has been sent: the error gets its own status, as on
		// the other endpoints, rather than a 200 that a client checking
		// only the status would take for a complete listing.
		bw.Reset(w)
		s.writeDBError(w, iterErr)
		return
	}
	bw.WriteString(`],"count":`)
	bw.WriteString(strconv.Itoa(n))
	if more && iterErr == nil {
		dir := byte(cursorForward)
		if reverse {
			dir = cursorReverse
		}
		bw.WriteString(`,"next":"`)
		bw.WriteString(encodeCursor(dir, last))
		bw.WriteByte('"')
	}
	if iterErr != nil {
		_, code := dbErrorStatus(iterErr)
		b, _ := json.Marshal(errorDetail{Code: code, Message: s.errMessage(code, iterErr)})
		bw.WriteString(`,"error":`)
		bw.Write(b)
	}
	bw.WriteString("}\n")
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

func step(it *caskade.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}
