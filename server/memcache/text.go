package memcache

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/caskade/caskade"
)

// validKey reports whether k is a key the text protocol accepts: 1 to 250
// bytes, no control characters, spaces or DEL, and not starting with the
// byte 0xff (reserved for the Redis databases 1 and up).
func validKey(k []byte) bool {
	if len(k) == 0 || len(k) > MaxKeyLength || k[0] == 0xff {
		return false
	}
	for _, c := range k {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// validBinaryKey reports whether a decoded (meta b flag) key is usable:
// 1 to 250 bytes, any bytes, not starting with 0xff.
func validBinaryKey(k []byte) bool {
	return len(k) > 0 && len(k) <= MaxKeyLength && k[0] != 0xff
}

// parseUint parses a decimal of digits only that fits bits bits. As in
// memcached 1.6.4x (whose token parser takes digits and nothing else), a
// sign is refused: "+5" is no more a number than "-5" is.
// Like memcached's, it refuses a token longer than 11 bytes for 32 bits
// or 22 for 64 (MCMC_TOKTO32_MAX, MCMC_TOKTO64_MAX), leading zeros
// included.
func parseUint(b []byte, bits int) (uint64, bool) {
	if len(b) > maxTokenLen(bits) {
		return 0, false
	}
	return parseUintAnyLen(b, bits)
}

func parseUintAnyLen(b []byte, bits int) (uint64, bool) {
	if len(b) == 0 || b[0] == '+' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b), 10, bits)
	return n, err == nil
}

// parseInt parses a decimal of digits, optionally after a '-', that fits
// bits bits. A '+' is refused, as memcached 1.6.4x refuses it, and so is a
// token too long for memcached's parser (see parseUint). A '-' alone is
// 0: memcached's parser (mcmc_tokto32, mcmc_tokto64) reads the sign, then
// no digits, and so does 1.6.45 wherever it reads a signed number (a
// <bytes> or ms <datalen>, touch's, gat's and flush_all's exptime, meta
// T, N and R).
func parseInt(b []byte, bits int) (int64, bool) {
	if len(b) > maxTokenLen(bits) {
		return 0, false
	}
	if len(b) == 1 && b[0] == '-' {
		return 0, true
	}
	return parseIntAnyLen(b, bits)
}

func parseIntAnyLen(b []byte, bits int) (int64, bool) {
	if len(b) == 0 || b[0] == '+' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, bits)
	return n, err == nil
}

// maxTokenLen is the longest number token memcached's parser reads into
// a number of bits bits.
func maxTokenLen(bits int) int {
	if bits > 32 {
		return 22
	}
	return 11
}

// parseStrtol parses a storage command's flags (bits 32, unsigned) or
// exptime (signed): memcached reads those two with strtoul and strtol,
// which also take a leading '+' and any number of leading zeros; every
// other number it reads with a parser that does not.
func parseStrtol(b []byte, bits int, signed bool) (int64, bool) {
	if len(b) > 1 && b[0] == '+' && b[1] != '+' && b[1] != '-' {
		b = b[1:]
	}
	if !signed {
		n, ok := parseUintAnyLen(b, bits)
		return int64(n), ok
	}
	return parseIntAnyLen(b, bits)
}

// maxDataLen is the largest <bytes> (or ms <datalen>) memcached accepts:
// it adds 2 for the CRLF to a 32-bit signed length, so a larger one is a
// bad command line, answered at once with no data block skipped.
const maxDataLen = math.MaxInt32 - 2

// parseDataLen parses a storage command's <bytes> or ms's <datalen>.
func parseDataLen(b []byte) (int, bool) {
	n, ok := parseInt(b, 32)
	if !ok || n < 0 || n > maxDataLen {
		return 0, false
	}
	return int(n), true
}

// expiryTime converts a memcached exptime: 0 never (the zero Time), up to
// 30 days relative seconds, larger a Unix time, negative already expired.
func expiryTime(e int64, now time.Time) time.Time {
	switch {
	case e == 0:
		return time.Time{}
	case e < 0:
		return time.Unix(1, 0)
	case e <= relativeExpiryLimit:
		return now.Add(time.Duration(e) * time.Second)
	default:
		t := time.Unix(e, 0)
		if !t.After(now) {
			return time.Unix(1, 0)
		}
		return t
	}
}

// ttlSeconds is an item's remaining TTL in whole seconds (rounded up), or
// -1 if it never expires.
func ttlSeconds(exp time.Time, now time.Time) int64 {
	if exp.IsZero() {
		return -1
	}
	if !exp.After(now) {
		return 0
	}
	// In whole seconds and nanoseconds rather than a time.Duration, which
	// saturates at 292 years: a Redis PEXPIREAT can set an expiry
	// thousands of years ahead.
	s := exp.Unix() - now.Unix()
	if exp.Nanosecond() > now.Nanosecond() {
		s++
	}
	return s
}

func appendUint(b []byte, n uint64) []byte { return strconv.AppendUint(b, n, 10) }

// appendValue appends "VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n".
func (ss *session) appendValue(key, val []byte, flags uint32, cas uint64, withCas bool) {
	b := append(ss.out, "VALUE "...)
	b = append(b, key...)
	b = append(b, ' ')
	b = appendUint(b, uint64(flags))
	b = append(b, ' ')
	b = appendUint(b, uint64(len(val)))
	if withCas {
		b = append(b, ' ')
		b = appendUint(b, cas)
	}
	b = append(b, "\r\n"...)
	b = append(b, val...)
	ss.out = append(b, "\r\n"...)
}

// retrieve implements get, gets, gat and gats.
func (ss *session) retrieve(cmd commandID) {
	touch := cmd == cmdGat || cmd == cmdGats
	withCas := cmd == cmdGets || cmd == cmdGats
	first := 1
	var exp time.Time
	now := ss.now
	if touch {
		if len(ss.toks) < 3 {
			ss.replyError(errBadFormat)
			return
		}
		e, ok := parseInt(ss.toks[1], 32)
		if !ok {
			ss.replyError(errExptime)
			return
		}
		exp = expiryTime(e, now)
		first = 2
	} else if len(ss.toks) < 2 {
		ss.replyError(errBadFormat)
		return
	}
	keys := ss.toks[first:]
	for _, k := range keys {
		if !validKey(k) && !(!touch && isCursorKey(k)) {
			ss.replyError(errBadFormat)
			return
		}
	}
	ss.retrieveKeys(&resumeGet{keys: keys, touch: touch, withCas: withCas, exp: exp}, len(ss.out))
}

// resumeGet is what is left of a multi-get that an event loop stopped
// serving part way, for the connection's own goroutine to finish: the
// rest of a cursor page, then the keys still to look up.
type resumeGet struct {
	page    *cursorPage
	keys    [][]byte
	touch   bool
	withCas bool
	exp     time.Time
}

// retrieveKeys appends the items of g's keys, and END, to the reply
// begun at mark in out. On an event loop whose client is not taking its
// replies (see pause), it stops after an item and leaves the rest in
// ss.resume, copied, rather than pile up the whole reply unsent.
func (ss *session) retrieveKeys(g *resumeGet, mark int) {
	s := ss.s
	touch, withCas, exp, now := g.touch, g.withCas, g.exp, ss.now
	flushes := ss.midFlushes
	fail := func(msg string) {
		if ss.midFlushes != flushes {
			mark = 0 // part of the reply is already sent
		}
		ss.truncate(mark)
		ss.replyError(msg)
	}
	if g.page != nil {
		if msg := ss.cursorPage(g.page, withCas); msg != "" {
			fail(msg)
			return
		}
		if ss.resume != nil {
			ss.resume.keys, ss.resume.withCas = copyKeys(g.keys), withCas
			return
		}
	}
	keys := g.keys
	for i, k := range keys {
		if i > 0 || g.page != nil {
			// Over UDP each item is its own message; END goes with the
			// last key's (alone if it missed), as in memcached.
			ss.mark()
		}
		if !touch && isCursorKey(k) {
			if msg := ss.cursor(k, withCas); msg != "" {
				fail(msg)
				return
			}
			if ss.resume != nil {
				ss.resume.keys, ss.resume.withCas = copyKeys(keys[i+1:]), withCas
				return
			}
			continue
		}
		var (
			val  []byte
			info caskade.KeyInfo
			err  error
		)
		if touch {
			ss.count.add(statCmdTouch, 1)
			val, info, err = s.touch(k, exp, now)
		} else {
			ss.count.add(statCmdGet, 1)
			val, info, err = s.DB.Lookup(k)
		}
		if errors.Is(err, caskade.ErrNotFound) {
			if touch {
				ss.count.add(statTouchMisses, 1)
			} else {
				ss.count.add(statGetMisses, 1)
			}
			continue
		}
		if err != nil {
			fail(ss.s.serverError(err))
			s.log.Warn("memcache: read failed", "err", err)
			return
		}
		if touch {
			ss.count.add(statTouchHits, 1)
		} else {
			ss.count.add(statGetHits, 1)
		}
		cas := info.Version
		if prev := s.items.accessed(k, info.Version, now); prev.named {
			cas = prev.cas
		}
		ss.appendValue(k, val, info.Flags, cas, withCas)
		if !ss.room() {
			fail(errReplyTooLarge)
			return
		}
		if i+1 < len(keys) && ss.pause() {
			ss.resume = &resumeGet{keys: copyKeys(keys[i+1:]), touch: touch, withCas: withCas, exp: exp}
			return
		}
	}
	ss.out = append(ss.out, "END\r\n"...)
}

// copyKeys copies keys that point into the read buffer.
func copyKeys(keys [][]byte) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = append([]byte(nil), k...)
	}
	return out
}

// storage implements set, add, replace, append, prepend and cas:
//
//	<cmd> <key> <flags> <exptime> <bytes> [noreply]
//	cas <key> <flags> <exptime> <bytes> <cas unique> [noreply]
//
// As in memcached, a line whose <bytes> cannot be read gets an error and
// nothing is skipped (the data, if sent, is then read as commands); any
// other error skips the data block.
func (ss *session) storage(cmd commandID) error {
	s := ss.s
	t := ss.toks
	if len(t) < 5 {
		ss.replyError(errBadFormat)
		return nil
	}
	size, ok := parseDataLen(t[4])
	if !ok {
		ss.replyError(errBadFormat)
		return nil
	}
	ss.noreply = ss.lastIsNoreply()
	key := t[1]
	flags, okf := parseStrtol(t[2], 32, false)
	e, oke := parseStrtol(t[3], 32, true)
	var cas uint64
	okc := true
	if cmd == cmdCas {
		okc = len(t) >= 6
		if okc {
			cas, okc = parseUint(t[5], 64)
		}
	}
	if !validKey(key) || !okf || !oke || !okc {
		ss.replyError(errBadFormat)
		return ss.r.discard(size + 2)
	}
	if size > s.maxItemSize {
		ss.count.add(statStoreTooLarge, 1)
		ss.replyError(errTooLarge)
		return ss.r.discard(size + 2)
	}
	ss.keybuf = append(ss.keybuf[:0], key...)
	key = ss.keybuf
	data, err := ss.r.readFull(size + 2)
	if err != nil {
		return err
	}
	if data[size] != '\r' || data[size+1] != '\n' {
		ss.replyError(errBadChunk)
		return nil
	}
	data = data[:size]
	ss.count.add(statCmdSet, 1)
	now := ss.now
	req := storeReq{key: key, data: data, flags: uint32(flags), exp: expiryTime(e, now)}
	switch cmd {
	case cmdSet:
		req.mode = modeSet
	case cmdAdd:
		req.mode = modeAdd
	case cmdReplace:
		req.mode = modeReplace
	case cmdAppend:
		req.mode = modeAppend
	case cmdPrepend:
		req.mode = modePrepend
	case cmdCas:
		req.mode, req.hasCas, req.cas = modeSet, true, cas
	}
	if cmd == cmdSet && ss.canDefer() {
		// A pipeline: commit with the sets around it.
		ss.deferSet(cmd, &req, ss.noreply, ss.noreply)
		return nil
	}
	ss.commitPending()
	out, err := s.store(&req)
	if err != nil {
		ss.replyError(ss.s.serverError(err))
		s.log.Warn("memcache: store failed", "err", err)
		return nil
	}
	ss.storeStats(cmd == cmdCas, out.res)
	switch out.res {
	case resStored:
		ss.reply("STORED")
	case resNotStored:
		ss.reply("NOT_STORED")
	case resExists:
		ss.reply("EXISTS")
	case resNotFound:
		ss.reply("NOT_FOUND")
	}
	return nil
}

func (ss *session) storeStats(cas bool, res storeResult) {
	if res == resStored {
		ss.count.add(statTotalItems, 1)
	}
	if !cas {
		return
	}
	switch res {
	case resStored:
		ss.count.add(statCasHits, 1)
	case resExists:
		ss.count.add(statCasBadval, 1)
	case resNotFound:
		ss.count.add(statCasMisses, 1)
	}
}

// touch implements "touch <key> <exptime> [noreply]".
func (ss *session) touch() {
	t := ss.toks
	if len(t) < 3 {
		ss.replyError(errBadFormat)
		return
	}
	ss.noreply = ss.lastIsNoreply()
	if !validKey(t[1]) {
		ss.replyError(errBadFormat)
		return
	}
	e, ok := parseInt(t[2], 32)
	if !ok {
		ss.replyError(errExptime)
		return
	}
	ss.count.add(statCmdTouch, 1)
	_, info, err := ss.s.touch(t[1], expiryTime(e, ss.now), ss.now)
	found := err == nil
	if found {
		ss.s.items.accessed(t[1], info.Version, ss.now) // a touch is a fetch, in memcached
	}
	if errors.Is(err, caskade.ErrNotFound) {
		err = nil
	}
	if err != nil {
		ss.replyError(ss.s.serverError(err))
		return
	}
	if found {
		ss.count.add(statTouchHits, 1)
		ss.reply("TOUCHED")
	} else {
		ss.count.add(statTouchMisses, 1)
		ss.reply("NOT_FOUND")
	}
}

// delete implements "delete <key> [noreply]". As memcached 1.4 to 1.6
// did (and libmemcached's memcapable checks), a legacy hold time of 0 is
// accepted and any other extra argument is an error.
func (ss *session) delete() {
	t := ss.toks
	if len(t) < 2 {
		ss.replyError(errBadFormat)
		return
	}
	ss.noreply = ss.lastIsNoreply()
	if n := len(t); n > 2 {
		zero := string(t[2]) == "0"
		if !(n == 3 && (zero || ss.noreply) || n == 4 && zero && ss.noreply) {
			ss.replyError(errBadFormat + ".  Usage: delete <key> [noreply]")
			return
		}
	}
	if !validKey(t[1]) {
		ss.replyError(errBadFormat)
		return
	}
	res, err := ss.s.deleteKey(t[1], false, 0)
	if err != nil {
		ss.replyError(ss.s.serverError(err))
		return
	}
	if res == resStored {
		ss.count.add(statDeleteHits, 1)
		ss.reply("DELETED")
	} else {
		ss.count.add(statDeleteMisses, 1)
		ss.reply("NOT_FOUND")
	}
}

// arith implements "incr|decr <key> <value> [noreply]".
func (ss *session) arith(incr bool) {
	t := ss.toks
	if len(t) < 3 {
		ss.replyError(errBadFormat)
		return
	}
	ss.noreply = ss.lastIsNoreply()
	if !validKey(t[1]) {
		ss.replyError(errBadFormat)
		return
	}
	delta, ok := parseUint(t[2], 64)
	if !ok {
		ss.replyError(errDelta)
		return
	}
	out, err := ss.s.arith(&arithReq{key: t[1], incr: incr, delta: delta})
	if errors.Is(err, errNonNumericValue) {
		ss.replyError(errNonNumeric)
		return
	}
	if err != nil {
		ss.replyError(ss.s.serverError(err))
		return
	}
	hit, miss := statIncrHits, statIncrMisses
	if !incr {
		hit, miss = statDecrHits, statDecrMisses
	}
	if out.res == resNotFound {
		ss.count.add(miss, 1)
		ss.reply("NOT_FOUND")
		return
	}
	ss.count.add(hit, 1)
	ss.reply(string(out.number))
}

// flushAll implements "flush_all [delay] [noreply]": it deletes every key
// of the memcached key space (Redis database 0) now, or after the delay
// (an exptime: relative seconds or a Unix time). A later flush_all replaces
// a pending delayed one.
func (ss *session) flushAll() {
	s := ss.s
	ss.count.add(statCmdFlush, 1)
	var e int64
	want := 1
	if ss.noreply {
		want = 2
	}
	if len(ss.toks) != want {
		var ok bool
		e, ok = parseInt(ss.toks[1], 32)
		if !ok {
			ss.replyError(errExptime)
			return
		}
	}
	s.flushMu.Lock()
	if s.flushTimer != nil {
		s.flushTimer.Stop()
		s.flushTimer = nil
	}
	// A delay that has already passed (an absolute time in the past)
	// flushes now, before the reply, as flush_all 0 does: on a timer the
	// commands after it on the same connection could still read the keys
	// it answered OK for deleting.
	now := time.Now()
	if at := expiryTime(e, now); e > 0 && at.After(now) {
		s.flushTimer = time.AfterFunc(at.Sub(now), func() {
			if err := s.flushNow(); err != nil {
				s.log.Error("memcache: delayed flush_all failed", "err", err)
			}
		})
		s.flushMu.Unlock()
		ss.reply("OK")
		return
	}
	s.flushMu.Unlock()
	if err := s.flushNow(); err != nil {
		ss.replyError(ss.s.serverError(err))
		return
	}
	ss.reply("OK")
}

// flushNow deletes every key below the reserved 0xff prefix.
func (s *Server) flushNow() error {
	if err := s.DB.DeleteRange([]byte{}, []byte{0xff}); err != nil {
		return err
	}
	s.items.reset()
	return nil
}

// verbosityCmd implements "verbosity <level> [noreply]"; the level is
// recorded (stats settings) but logging is configured by Logger.
func (ss *session) verbosityCmd() {
	if len(ss.toks) < 2 {
		ss.replyError(errBadFormat)
		return
	}
	v, ok := parseUint(ss.toks[1], 32)
	if !ok {
		ss.replyError(errBadFormat)
		return
	}
	ss.s.verbosity.Store(int32(min(v, 2)))
	ss.reply("OK")
}

// stats implements "stats", "stats settings", "stats reset" and the
// slab-related forms (which report that caskade has no slabs).
func (ss *session) stats() {
	s := ss.s
	if len(ss.toks) == 1 {
		ss.out = s.generalStats(ss.out)
		return
	}
	switch string(ss.toks[1]) {
	case "settings":
		ss.out = s.settingsStats(ss.out)
	case "reset":
		s.resetStats()
		ss.reply("RESET")
	case "items":
		ss.out = append(ss.out, "END\r\n"...)
	case "slabs":
		ss.out = appendStat(ss.out, "active_slabs", "0")
		ss.out = appendStat(ss.out, "total_malloced", "0")
		ss.out = append(ss.out, "END\r\n"...)
	case "sizes":
		ss.out = appendStat(ss.out, "sizes_status", "disabled")
		ss.out = append(ss.out, "END\r\n"...)
	default:
		ss.replyError(errUnknownCmd)
	}
}

// maxAuthData is the largest data block of an authentication "set".
const maxAuthData = 16384

// authenticate handles a command on a connection that has not yet
// authenticated (Server.Password set): only memcached's ASCII
// authentication, "set <key> <flags> <exptime> <bytes>" with the data
// "<username> <password>", is accepted.
func (ss *session) authenticate(name []byte) error {
	if string(name) != "set" || len(ss.toks) < 5 {
		ss.replyErrorAlways(errUnauth)
		return nil
	}
	n, ok := parseUint(ss.toks[4], 32)
	if !ok {
		ss.replyErrorAlways(errUnauth)
		return nil
	}
	if n > maxAuthData {
		ss.replyErrorAlways("CLIENT_ERROR auth token too long")
		return nil
	}
	ss.count.add(statAuthCmds, 1)
	data, err := ss.r.readFull(int(n) + 2)
	if err != nil {
		return err
	}
	if !bytes.HasSuffix(data, []byte("\r\n")) {
		ss.replyErrorAlways("CLIENT_ERROR bad command line termination")
		ss.count.add(statAuthErrors, 1)
		return nil
	}
	data = data[:n]
	sp := bytes.IndexByte(data, ' ')
	if sp < 0 {
		ss.replyErrorAlways("CLIENT_ERROR bad authentication token format")
		ss.count.add(statAuthErrors, 1)
		return nil
	}
	got := sha256.Sum256(data[sp+1:])
	want := sha256.Sum256([]byte(ss.s.access.Password()))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		ss.replyErrorAlways("CLIENT_ERROR authentication failure")
		ss.count.add(statAuthErrors, 1)
		return nil
	}
	ss.authed = true
	ss.out = append(ss.out, "STORED\r\n"...)
	return nil
}
