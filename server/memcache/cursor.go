package memcache

import (
	"bytes"
	"net/url"
	"strconv"

	"github.com/caskade/caskade"
)

// cursorPrefix starts okdb's prefix-cursor pseudo key.
const cursorPrefix = "?type=cursor"

// isCursorKey reports whether a get key is okdb's cursor request,
// "?type=cursor&prefix=P&limit=N" (a query string: P is URL-escaped).
func isCursorKey(k []byte) bool {
	return bytes.HasPrefix(k, []byte(cursorPrefix)) &&
		(len(k) == len(cursorPrefix) || k[len(cursorPrefix)] == '&')
}

// cursor answers okdb's prefix cursor inside a get or gets: it appends a
// VALUE item (with the cas unique for gets) for each of the first limit
// keys, in key order, that start with prefix and are at or after start
// (default: prefix). Keys that cannot appear on a VALUE line (longer than
// 250 bytes, or with spaces, control characters or the reserved 0xff
// prefix) are skipped. It returns an error line, or "" on success.
// maxCursorSkips bounds the keys a cursor request skips because they
// cannot appear on a VALUE line.
const maxCursorSkips = 100_000

// errCursorSkips is the reply of a cursor request that met maxCursorSkips
// such keys before any it could list.
const errCursorSkips = "CLIENT_ERROR cursor: too many keys in a row that cannot be listed (spaces, control characters or over 250 bytes); start after them"

func (ss *session) cursor(k []byte, withCas bool) string {
	q, err := url.ParseQuery(string(k[1:]))
	if err != nil {
		return "CLIENT_ERROR bad cursor query"
	}
	prefix := []byte(q.Get("prefix"))
	limit := DefaultCursorLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return "CLIENT_ERROR bad cursor limit"
		}
		limit = min(n, MaxCursorLimit)
	}
	begin := prefix
	if st := []byte(q.Get("start")); bytes.Compare(st, begin) > 0 {
		begin = st
	}
	if len(prefix) > 0 && prefix[0] == 0xff {
		return "CLIENT_ERROR bad cursor prefix"
	}
	end := caskade.PrefixEnd(prefix)
	if end == nil || bytes.Compare(end, []byte{0xff}) > 0 {
		end = []byte{0xff}
	}
	return ss.cursorPage(&cursorPage{begin: begin, end: end, limit: limit}, withCas)
}

// cursorPage is a cursor request's page in progress: the keys in
// [begin, end) still to list, and the counts so far.
type cursorPage struct {
	begin, end []byte
	limit      int
	n, skipped int
}

// cursorPage lists the keys of page. On an event loop whose client is not
// taking its replies, it stops after an item and leaves the rest of the
// page in ss.resume (see session.pause).
func (ss *session) cursorPage(page *cursorPage, withCas bool) string {
	begin, end, limit := page.begin, page.end, page.limit
	it, err := ss.s.DB.NewIterator(&caskade.IterOptions{LowerBound: begin, UpperBound: end})
	if err != nil {
		return ss.s.serverError(err)
	}
	defer it.Close()
	n, skipped := page.n, page.skipped
	maxSkips := ss.s.cursorSkips
	if maxSkips <= 0 {
		maxSkips = maxCursorSkips
	}
	for ok := it.Seek(begin); ok && n < limit; ok = it.Next() {
		key := it.Key()
		if !validKey(key) {
			if skipped++; skipped >= maxSkips {
				// A request scans at most limit keys it lists and this
				// many it cannot, on the event loop.
				if n == 0 {
					return errCursorSkips
				}
				break // a short page: the next one goes on from its last key
			}
			continue
		}
		val := it.Value()
		if val == nil && it.Err() != nil {
			break
		}
		ss.count.add(statCmdGet, 1)
		ss.count.add(statGetHits, 1)
		info := it.Info()
		if n > 0 {
			ss.mark()
		}
		ss.appendValue(key, val, info.Flags, ss.s.casOf(key, info.Version), withCas)
		n++
		if !ss.room() {
			return errReplyTooLarge
		}
		if n < limit && ss.pause() {
			next := append(append([]byte(nil), key...), 0)
			ss.resume = &resumeGet{page: &cursorPage{begin: next, end: end, limit: limit, n: n, skipped: skipped}}
			return ""
		}
	}
	if err := it.Err(); err != nil {
		return ss.s.serverError(err)
	}
	return ""
}
