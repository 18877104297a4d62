package memcache

import (
	"encoding/base64"
	"errors"
	"time"

	"github.com/caskade/caskade"
)

// maxMetaTokens is memcached's MFLAG_MAX_OPT_LENGTH: a meta command line
// has at most this many tokens.
const maxMetaTokens = 20

// metaTokenizerMax is how many tokens of a line memcached's tokenizer
// reads (MCMC_PARSER_MAX_TOKENS-1); it checks the first byte of the flag
// tokens among them only.
const metaTokenizerMax = 23

// metaReq is a parsed meta command: its key and flags.
type metaReq struct {
	key    []byte // decoded if binary
	binary bool   // b: the key was base64
	seen   [128]bool
	toks   [][]byte // the flag tokens, in order

	n, t, r int64  // N, T, R tokens (TTL-like)
	f       uint32 // F client flags
	c, e    uint64 // C compare cas, E new cas
	j, d    uint64 // J initial, D delta
	mode    byte   // M

	// flagErr: parseMeta's error is one of memcached's flag parser
	// (_meta_flag_preparse), which ma words as "invalid or duplicate
	// flag" whatever it was.
	flagErr bool
	// lineErr: parseMeta's error is the tokenizer's, for which memcached
	// refuses the line before it is an ms: its data is not skipped.
	lineErr bool
}

func (m *metaReq) has(c byte) bool { return m.seen[c] }

// metaFlagsTokenize reports whether every flag token starts with a byte
// memcached's meta tokenizer takes: a letter (the bytes 'A' to 'z') or a
// digit. Any other first byte ("!", "~", 0x80 and up) makes memcached
// (1.6.4x) refuse the line as a whole, with "bad command line format",
// before it looks at what the flags mean ("invalid flag" is for a letter
// the command does not know).
func metaFlagsTokenize(toks [][]byte) bool {
	for _, tok := range toks {
		if c := tok[0]; (c < 'A' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// parseMeta parses a meta command's key (token 1) and flags (tokens from
// first on), with memcached's checks and error strings. It returns "" or
// the error line.
func (ss *session) parseMeta(first int, m *metaReq) string {
	t := ss.toks
	if len(t) < 2 {
		return errBadFormat
	}
	// memcached's tokenizer refuses the line before its flag parser sees
	// the key or counts the tokens.
	if !metaFlagsTokenize(t[min(first, len(t)):min(len(t), metaTokenizerMax)]) {
		m.lineErr = true
		return errBadFormat
	}
	if e := m.preparse(t, first); e != "" {
		m.flagErr = true
		return e
	}
	if m.binary && !validBinaryKey(m.key) || !m.binary && !validKey(m.key) {
		return errBadFormat
	}
	for _, tok := range m.toks {
		if tok[0] == 'O' && len(tok) > MaxOpaqueLength {
			return errOpaqueLong
		}
	}
	return ""
}

// preparse reads the key and the flags as memcached's _meta_flag_preparse
// does, with its checks and error strings: it returns "" or the error line.
func (m *metaReq) preparse(t [][]byte, first int) string {
	if len(t[1]) > MaxKeyLength {
		return errBadFormat
	}
	if len(t) > maxMetaTokens {
		return errTooManyOpts
	}
	m.key = t[1]
	m.toks = t[min(first, len(t)):]
	errstr := ""
	for _, tok := range m.toks {
		o := tok[0]
		if o >= 127 || m.seen[o] {
			return errDupFlag
		}
		m.seen[o] = true
		arg := tok[1:]
		var ok bool
		switch o {
		case 'b':
			dec, err := decodeBase64Key(t[1])
			if err != nil {
				errstr = errDecodeKey
				continue
			}
			m.key, m.binary = dec, true
		case 'N', 'T', 'R':
			var v int64
			v, ok = parseInt(arg, 32)
			if !ok {
				errstr = errBadToken
				continue
			}
			switch o {
			case 'N':
				m.n = v
			case 'T':
				m.t = v
			default:
				m.r = v
			}
		case 'F':
			var v uint64
			v, ok = parseUint(arg, 32)
			if !ok {
				if errstr == "" {
					errstr = errBadFormat
				}
				continue
			}
			m.f = uint32(v)
		case 'C', 'E':
			var v uint64
			v, ok = parseUint(arg, 64)
			if !ok {
				errstr = errBadToken
				continue
			}
			if o == 'C' {
				m.c = v
			} else {
				m.e = v
			}
		case 'J':
			m.j, ok = parseUint(arg, 64)
			if !ok {
				errstr = "CLIENT_ERROR invalid numeric initial value"
			}
		case 'D':
			m.d, ok = parseUint(arg, 64)
			if !ok {
				errstr = "CLIENT_ERROR invalid numeric delta value"
			}
		case 'M':
			// memcached takes the byte after the M, so a bare M reads
			// the separator after it: an invalid mode, never the
			// default one.
			m.mode = ' '
			if len(arg) > 0 {
				m.mode = arg[0]
			}
		case 'l', 'O', 'P', 'L', 'k', 's', 't', 'c', 'f', 'v', 'h', 'u', 'q', 'x', 'I':
		default:
			return errBadFlag
		}
	}
	return errstr
}

// decodeBase64Key decodes a meta b-flag key (standard base64) as memcached
// does: bytes outside the base64 alphabet are skipped, the others (padding
// included) must make whole groups of four, and decoding ends with the
// first group that has padding (one or two '='; more is an error).
// Nothing decoded is an error too.
func decodeBase64Key(k []byte) ([]byte, error) {
	bad := errors.New("bad base64 key")
	var group [4]byte
	n, pad := 0, 0
	valid := 0
	for _, c := range k {
		if base64Value(c) >= 0 {
			valid++
		}
	}
	if valid == 0 || valid%4 != 0 {
		return nil, bad
	}
	dst := make([]byte, 0, valid/4*3)
	for _, c := range k {
		v := base64Value(c)
		if v < 0 {
			continue
		}
		if c == '=' {
			pad++
		}
		group[n] = byte(v)
		n++
		if n < 4 {
			continue
		}
		dst = append(dst, group[0]<<2|group[1]>>4, group[1]<<4|group[2]>>2, group[2]<<6|group[3])
		n = 0
		if pad > 0 {
			if pad > 2 {
				return nil, bad
			}
			dst = dst[:len(dst)-pad]
			break
		}
	}
	if len(dst) == 0 {
		return nil, bad
	}
	return dst, nil
}

// base64Value is c's value in the standard base64 alphabet, 0 for the
// padding '=', and -1 outside it.
func base64Value(c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26
	case c >= '0' && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	case c == '=':
		return 0
	}
	return -1
}

// appendMetaKey appends " k<key>", base64-encoded and followed by " b" for
// a binary key.
func appendMetaKey(b []byte, m *metaReq) []byte {
	b = append(b, " k"...)
	if !m.binary {
		return append(b, m.key...)
	}
	b = base64.StdEncoding.AppendEncode(b, m.key)
	return append(b, " b"...)
}

// appendOpaqueAndKey appends the O and k flags in request order (the only
// flags echoed on misses and failures).
func appendOpaqueAndKey(b []byte, m *metaReq) []byte {
	for _, tok := range m.toks {
		switch tok[0] {
		case 'O':
			b = append(b, ' ')
			b = append(b, tok...)
		case 'k':
			b = appendMetaKey(b, m)
		}
	}
	return b
}

// metaGet implements "mg <key> <flags>*".
func (ss *session) metaGet() {
	s := ss.s
	var m metaReq
	if e := ss.parseMeta(2, &m); e != "" {
		ss.replyErrorAlways(e)
		return
	}
	now := ss.now
	var nExp, tExp time.Time
	if m.has('N') {
		nExp = expiryTime(m.n, now)
	}
	if m.has('T') {
		tExp = expiryTime(m.t, now)
	}
	val, info, err := s.DB.Lookup(m.key)
	created, expired := false, false
	if errors.Is(err, caskade.ErrNotFound) && m.has('N') {
		// The item made is stored with the TTL it ends up with.
		exp := createdExpiry(&m, nExp, tExp)
		var b caskade.Batch
		b.Check(m.key, 0)
		b.SetEntry(m.key, nil, caskade.SetOptions{ExpiresAt: exp})
		werr := s.DB.Write(&b)
		if werr != nil && !errors.Is(werr, caskade.ErrConflict) {
			ss.replyErrorAlways(ss.s.serverError(werr))
			return
		}
		created = werr == nil
		val, info, err = s.DB.Lookup(m.key)
		if created && err == nil && (len(val) != 0 || info.Flags != 0) {
			created = false // replaced already; not our stub
		}
		if created && errors.Is(err, caskade.ErrNotFound) {
			// A TTL in the past (N-1): memcached answers the item it
			// made, expired at once, as a hit that wins the token. The
			// engine stored nothing: the item has no state to keep.
			val, info, err = nil, caskade.KeyInfo{Version: s.written(&b), ExpiresAt: exp}, nil
			expired = true
		}
	}
	// memcached answers the flags in their order, and an item's TTL
	// changes where N (creating it) or T comes: a t before them shows the
	// TTL it had before.
	var before time.Time
	if err == nil && !created {
		before = info.ExpiresAt
	}
	// R, too, sees the TTL as set by the N and T before it.
	recache := false
	if m.has('R') && !created {
		exp, rExp := before, expiryTime(m.r, now)
		for _, tok := range m.toks {
			switch tok[0] {
			case 'T':
				exp = tExp
			case 'R':
				// In whole seconds, as memcached's clock counts.
				recache = !exp.IsZero() && exp.Unix() < rExp.Unix()
			}
		}
	}
	touched := created && m.has('T')
	if err == nil && m.has('T') && !created {
		touched = true
		val, info, err = s.touch(m.key, tExp, now)
		info.ExpiresAt = tExp
	}
	if touched {
		ss.count.add(statCmdTouch, 1)
	} else {
		ss.count.add(statCmdGet, 1)
	}
	if errors.Is(err, caskade.ErrNotFound) {
		// A miss counts as a get, T or not, as in memcached (and so
		// cmd_get stays get_hits plus get_misses); a touch that lost the
		// item it had found counts as a touch miss.
		if touched {
			ss.count.add(statTouchMisses, 1)
		} else {
			ss.count.add(statGetMisses, 1)
		}
		if m.has('q') {
			return
		}
		b := append(ss.out, "EN"...)
		b = appendOpaqueAndKey(b, &m)
		ss.out = append(b, "\r\n"...)
		return
	}
	if err != nil {
		ss.replyErrorAlways(ss.s.serverError(err))
		return
	}
	if touched {
		ss.count.add(statTouchHits, 1)
	} else {
		ss.count.add(statGetHits, 1)
	}

	var st itemState
	if !expired {
		st = s.items.get(m.key, info.Version)
	}
	won := created
	if recache && !st.tokenSent {
		won = true
	}
	if st.stale && !st.tokenSent {
		won = true
	}
	prev := st
	if !m.has('u') && !expired {
		prev = s.items.accessed(m.key, info.Version, now)
	}
	if won && !expired {
		s.items.update(m.key, info.Version, func(e *itemState) { e.tokenSent = true })
	}

	cas := info.Version
	if st.named {
		cas = st.cas
	}
	if created && m.has('E') {
		// As in memcached, E names the cas unique of the item N makes
		// (E0 makes it 0).
		if !expired {
			s.setCas(m.key, info.Version, m.e)
		}
		cas = m.e
	}
	withValue := m.has('v')
	if m.has('C') && m.c == cas {
		withValue = false
	}
	b := ss.out
	if withValue {
		b = append(b, "VA "...)
		b = appendUint(b, uint64(len(val)))
	} else {
		b = append(b, "HD"...)
	}
	for _, tok := range m.toks {
		switch tok[0] {
		case 's':
			b = append(b, " s"...)
			b = appendUint(b, uint64(len(val)))
		case 't':
			b = append(b, " t"...)
			b = appendInt(b, ttlSeconds(before, now))
		case 'N':
			if created {
				before = nExp
			}
		case 'T':
			before = tExp
		case 'c':
			b = append(b, " c"...)
			b = appendUint(b, cas)
		case 'f':
			b = append(b, " f"...)
			b = appendUint(b, uint64(info.Flags))
		case 'l':
			b = append(b, " l"...)
			var la int64
			if !prev.lastAccess.IsZero() {
				la = int64(now.Sub(prev.lastAccess) / time.Second)
			}
			b = appendInt(b, la)
		case 'h':
			if prev.fetched {
				b = append(b, " h1"...)
			} else {
				b = append(b, " h0"...)
			}
		case 'O':
			b = append(b, ' ')
			b = append(b, tok...)
		case 'k':
			b = appendMetaKey(b, &m)
		}
	}
	if st.tokenSent {
		b = append(b, " Z"...)
	}
	if st.stale {
		b = append(b, " X"...)
	}
	if won {
		b = append(b, " W"...)
	}
	b = append(b, "\r\n"...)
	if withValue {
		b = append(b, val...)
		b = append(b, "\r\n"...)
	}
	ss.out = b
}

// createdExpiry is the expiry of an item that N makes (mg, ma): as in
// memcached, N and T each set it where they come in the request, so the
// later of the two wins.
func createdExpiry(m *metaReq, nExp, tExp time.Time) time.Time {
	exp := nExp
	for _, tok := range m.toks {
		switch tok[0] {
		case 'N':
			exp = nExp
		case 'T':
			exp = tExp
		}
	}
	return exp
}

func appendInt(b []byte, n int64) []byte {
	if n < 0 {
		b = append(b, '-')
		return appendUint(b, uint64(-n))
	}
	return appendUint(b, uint64(n))
}

// metaSet implements "ms <key> <datalen> <flags>*" followed by the data.
func (ss *session) metaSet() error {
	s := ss.s
	t := ss.toks
	if len(t) < 3 {
		ss.replyErrorAlways(errBadFormat)
		return nil
	}
	size, ok := parseDataLen(t[2])
	if !ok {
		ss.replyErrorAlways(errBadFormat)
		return nil
	}
	var m metaReq
	e := ss.parseMeta(3, &m)
	mode := modeSet
	if e == "" {
		// The modes are upper case only, as in memcached (protocol.txt
		// lists E, A, P, R and S; "Me" is not an add).
		switch m.mode {
		case 0, 'S':
		case 'E':
			mode = modeAdd
		case 'A':
			mode = modeAppend
		case 'P':
			mode = modePrepend
		case 'R':
			mode = modeReplace
		default:
			e = "CLIENT_ERROR invalid mode for ms M token"
		}
	}
	if e != "" {
		ss.replyErrorAlways(e)
		if m.lineErr {
			return nil // what follows is read as commands
		}
		return ss.r.discard(size + 2)
	}
	if size > s.maxItemSize {
		ss.count.add(statStoreTooLarge, 1)
		ss.replyErrorAlways(errTooLarge)
		return ss.r.discard(size + 2)
	}
	ss.keybuf = append(ss.keybuf[:0], m.key...)
	m.key = ss.keybuf
	// The flag tokens alias the read buffer too; keep a copy of them.
	toks := make([][]byte, len(m.toks))
	for i, tok := range m.toks {
		toks[i] = append([]byte(nil), tok...)
	}
	m.toks = toks
	data, err := ss.r.readFull(size + 2)
	if err != nil {
		return err
	}
	if data[size] != '\r' || data[size+1] != '\n' {
		ss.replyErrorAlways(errBadChunk)
		return nil
	}
	data = data[:size]
	ss.count.add(statCmdSet, 1)
	now := ss.now
	req := storeReq{mode: mode, key: m.key, data: data, flags: m.f, invalidate: m.has('I'),
		version: m.has('c') || m.has('E')}
	if m.has('T') {
		req.exp = expiryTime(m.t, now)
	}
	// An append or prepend with C0 checks nothing, as in memcached.
	if m.has('C') && mode != modeAdd && !(m.c == 0 && (mode == modeAppend || mode == modePrepend)) {
		req.hasCas, req.cas = true, m.c
	}
	if m.has('N') && (mode == modeAppend || mode == modePrepend) {
		req.vivify, req.vivifyExp = true, expiryTime(m.n, now)
	}
	if mode == modeSet && !req.hasCas && !req.invalidate && !req.version && m.has('q') && ss.canDefer() {
		// A quiet set in a pipeline: commit with the sets around it. It
		// replies only on failure, and a failure is a SERVER_ERROR.
		ss.deferSet(cmdMs, &req, true, false)
		return nil
	}
	ss.commitPending()
	out, err := s.store(&req)
	if err != nil {
		ss.replyErrorAlways(ss.s.serverError(err))
		return nil
	}
	ss.storeStats(req.hasCas, out.res)
	cas := out.version
	if out.res == resStored {
		// As in memcached, a stale item keeps the win token's mark. Read
		// it first: the table keeps one version's state per key, and
		// naming the new version's cas unique drops the old one's.
		sent := out.stale && s.items.get(m.key, out.was).tokenSent
		if m.has('E') && m.e != 0 {
			// E names the new item's cas unique (memcached, like us,
			// takes E0 for none).
			s.setCas(m.key, out.version, m.e)
			cas = m.e
		}
		if out.stale {
			s.items.update(m.key, out.version, func(e *itemState) { e.stale, e.tokenSent = true, sent })
		}
	}
	if out.res == resStored && m.has('q') {
		return nil
	}
	b := ss.out
	switch out.res {
	case resStored:
		b = append(b, "HD"...)
	case resNotStored:
		b = append(b, "NS"...)
	case resExists:
		b = append(b, "EX"...)
	case resNotFound:
		b = append(b, "NF"...)
	}
	for _, tok := range m.toks {
		switch tok[0] {
		case 'O':
			b = append(b, ' ')
			b = append(b, tok...)
		case 'k':
			b = appendMetaKey(b, &m)
		case 'c':
			b = append(b, " c"...)
			b = appendUint(b, cas)
		case 's':
			b = append(b, " s"...)
			if out.value != nil {
				b = appendUint(b, uint64(len(out.value)))
			} else {
				b = appendUint(b, uint64(size))
			}
		}
	}
	ss.out = append(b, "\r\n"...)
	return nil
}

// metaDelete implements "md <key> <flags>*".
func (ss *session) metaDelete() {
	s := ss.s
	var m metaReq
	if e := ss.parseMeta(2, &m); e != "" {
		ss.replyErrorAlways(e)
		return
	}
	now := ss.now
	code, err := func() (string, error) {
		var b caskade.Batch
		turn := s.DB.Turn()
		defer turn.Done()
		for attempt := range maxAttempts {
			turn.Wait(attempt)
			var (
				val  []byte
				info caskade.KeyInfo
				err  error
			)
			if m.has('I') && !m.has('x') {
				val, info, err = s.DB.Lookup(m.key)
			} else {
				info, err = s.DB.Stat(m.key)
			}
			if errors.Is(err, caskade.ErrNotFound) {
				ss.count.add(statDeleteMisses, 1)
				return "NF", nil
			}
			if err != nil {
				return "", err
			}
			if m.has('C') && m.c != s.casOf(m.key, info.Version) {
				ss.count.add(statDeleteMisses, 1)
				return "EX", nil
			}
			b.Reset()
			b.Check(m.key, info.Version)
			var newVal []byte
			var newFlags uint32
			switch {
			case m.has('x'):
				var exp time.Time
				if m.has('T') {
					exp = expiryTime(m.t, now)
				}
				newVal, newFlags = []byte{}, m.f
				b.SetEntry(m.key, newVal, caskade.SetOptions{ExpiresAt: exp, Flags: newFlags})
			case m.has('I'):
				exp := info.ExpiresAt
				if m.has('T') {
					exp = expiryTime(m.t, now)
				}
				newVal, newFlags = val, info.Flags
				b.SetEntry(m.key, newVal, caskade.SetOptions{ExpiresAt: exp, Flags: newFlags})
			default:
				b.Delete(m.key)
			}
			err = turn.Write(&b)
			if errors.Is(err, caskade.ErrConflict) {
				continue
			}
			if err != nil {
				return "", err
			}
			if m.has('I') {
				// memcached marks the same item stale, with a new cas
				// unique (E's, if given): it stays fetched, and loses its
				// win token so the next reader can win.
				old := s.items.get(m.key, info.Version)
				if m.has('x') {
					// x made a new, empty item: never fetched.
					old = itemState{}
				}
				s.items.update(m.key, b.Version(), func(e *itemState) {
					e.stale, e.tokenSent, e.fetched, e.lastAccess = true, false, old.fetched, old.lastAccess
					e.cas, e.named = m.e, m.has('E')
				})
			} else {
				ss.count.add(statDeleteHits, 1)
				if m.has('x') {
					// memcached's empty item keeps the cas unique of
					// the one it replaces, or takes E's.
					cas := s.casOf(m.key, info.Version)
					if m.has('E') {
						cas = m.e
					}
					s.setCas(m.key, b.Version(), cas)
				}
			}
			return "HD", nil
		}
		return "", errContended
	}()
	if err != nil {
		ss.replyErrorAlways(ss.s.serverError(err))
		return
	}
	if code == "HD" && m.has('q') {
		return
	}
	b := append(ss.out, code...)
	b = appendOpaqueAndKey(b, &m)
	ss.out = append(b, "\r\n"...)
}

// metaArith implements "ma <key> <flags>*".
func (ss *session) metaArith() {
	s := ss.s
	var m metaReq
	if e := ss.parseMeta(2, &m); e != "" {
		if m.flagErr {
			// As memcached words every error of its flag parser for ma
			// (a key too long and too many tokens too).
			e = "CLIENT_ERROR invalid or duplicate flag"
		}
		ss.replyErrorAlways(e)
		return
	}
	incr := true
	switch m.mode { // as in memcached: I, +, D, - and nothing else
	case 0, 'I', '+':
	case 'D', '-':
		incr = false
	default:
		ss.replyErrorAlways("CLIENT_ERROR invalid mode for ma M token")
		return
	}
	now := ss.now
	req := arithReq{key: m.key, incr: incr, delta: 1}
	if m.has('D') {
		req.delta = m.d
	}
	// memcached's ma checks a cas unique of 0 (C0) against nothing.
	if m.has('C') && m.c != 0 {
		req.hasCas, req.cas = true, m.c
	}
	var nExp, tExp time.Time
	if m.has('N') {
		nExp = expiryTime(m.n, now)
	}
	if m.has('T') {
		tExp = expiryTime(m.t, now)
		req.setExp, req.exp = true, tExp
	}
	if m.has('N') {
		req.vivify, req.initial, req.vivifyExp = true, m.j, createdExpiry(&m, nExp, tExp)
	}
	out, err := s.arith(&req)
	if errors.Is(err, errNonNumericValue) {
		ss.replyErrorAlways(errNonNumeric)
		return
	}
	if err != nil {
		ss.replyErrorAlways(ss.s.serverError(err))
		return
	}
	hit, miss := statIncrHits, statIncrMisses
	if !incr {
		hit, miss = statDecrHits, statDecrMisses
	}
	b := ss.out
	switch out.res {
	case resNotFound:
		ss.count.add(miss, 1)
		b = append(b, "NF"...)
		b = appendOpaqueAndKey(b, &m)
		ss.out = append(b, "\r\n"...)
		return
	case resExists:
		b = append(b, "EX"...)
		b = appendOpaqueAndKey(b, &m)
		ss.out = append(b, "\r\n"...)
		return
	}
	if !out.created {
		// memcached counts neither a hit nor a miss for an item N made.
		ss.count.add(hit, 1)
	}
	cas := out.version
	if m.has('E') {
		// E0 makes the cas unique 0, as in memcached's ma.
		s.setCas(m.key, out.version, m.e)
		cas = m.e
	}
	if m.has('q') {
		return
	}
	if m.has('v') {
		b = append(b, "VA "...)
		b = appendUint(b, uint64(len(out.number)))
	} else {
		b = append(b, "HD"...)
	}
	for _, tok := range m.toks {
		switch tok[0] {
		case 'c':
			b = append(b, " c"...)
			b = appendUint(b, cas)
		case 't': // as in mg, the TTL changes where N or T comes
			b = append(b, " t"...)
			b = appendInt(b, ttlSeconds(out.before, now))
		case 'N':
			if out.created {
				out.before = nExp
			}
		case 'T':
			out.before = tExp
		case 'O':
			b = append(b, ' ')
			b = append(b, tok...)
		case 'k':
			b = appendMetaKey(b, &m)
		}
	}
	b = append(b, "\r\n"...)
	if m.has('v') {
		b = append(b, out.number...)
		b = append(b, "\r\n"...)
	}
	ss.out = b
}

// metaDebug implements "me <key> [b]": a human-readable line of what is
// known about the item.
func (ss *session) metaDebug() {
	s := ss.s
	t := ss.toks
	if len(t) < 2 || len(t[1]) > MaxKeyLength {
		ss.replyErrorAlways(errBadFormat)
		return
	}
	if !metaFlagsTokenize(t[2:]) {
		ss.replyErrorAlways(errBadFormat)
		return
	}
	m := metaReq{key: t[1]}
	if len(t) >= 3 && string(t[2]) == "b" {
		dec, err := decodeBase64Key(t[1])
		if err != nil {
			ss.replyErrorAlways(errBadFormat)
			return
		}
		m.key, m.binary = dec, true
	}
	if m.binary && !validBinaryKey(m.key) || !m.binary && !validKey(m.key) {
		ss.replyErrorAlways(errBadFormat)
		return
	}
	info, err := s.DB.Stat(m.key)
	if errors.Is(err, caskade.ErrNotFound) {
		ss.out = append(ss.out, "EN\r\n"...)
		return
	}
	if err != nil {
		ss.replyErrorAlways(ss.s.serverError(err))
		return
	}
	now := ss.now
	st := s.items.get(m.key, info.Version)
	b := append(ss.out, "ME "...)
	if m.binary {
		b = base64.StdEncoding.AppendEncode(b, m.key)
	} else {
		b = append(b, m.key...)
	}
	b = append(b, " exp="...)
	b = appendInt(b, ttlSeconds(info.ExpiresAt, now))
	b = append(b, " la="...)
	var la int64
	if !st.lastAccess.IsZero() {
		la = int64(now.Sub(st.lastAccess) / time.Second)
	}
	b = appendInt(b, la)
	b = append(b, " cas="...)
	cas := info.Version
	if st.named {
		cas = st.cas
	}
	b = appendUint(b, cas)
	if st.fetched {
		b = append(b, " fetch=yes"...)
	} else {
		b = append(b, " fetch=no"...)
	}
	b = append(b, " cls=1 size="...)
	b = appendUint(b, uint64(len(m.key)+info.ValueSize))
	ss.out = append(b, "\r\n"...)
}
