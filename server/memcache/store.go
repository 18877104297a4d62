package memcache

import (
	"errors"
	"strings"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/internal/storerr"
)

// maxAttempts bounds the retries of one read-modify-write that keeps
// losing to concurrent writers. From the third attempt on it waits for its
// turn (caskade.Turn), so contenders take turns and this bound only stops
// a runaway loop.
const maxAttempts = 10000

var errContended = errors.New("memcache: too many conflicting writes")

// storeResult is the outcome of a storage command.
type storeResult int

const (
	resStored    storeResult = iota // STORED / HD
	resNotStored                    // NOT_STORED / NS
	resExists                       // EXISTS / EX
	resNotFound                     // NOT_FOUND / NF
)

// storeMode is what a storage command does with an existing item.
type storeMode byte

const (
	modeSet     storeMode = 'S'
	modeAdd     storeMode = 'E'
	modeReplace storeMode = 'R'
	modeAppend  storeMode = 'A'
	modePrepend storeMode = 'P'
)

// storeReq is one storage command.
type storeReq struct {
	mode       storeMode
	key, data  []byte
	flags      uint32
	exp        time.Time // zero: never
	hasCas     bool
	cas        uint64
	invalidate bool      // meta I: a cas older than the item's stores a stale item
	vivify     bool      // meta N in append mode: create on miss
	vivifyExp  time.Time // expiry of an item created by vivify
	version    bool      // report the version written (storeOut.version)
}

// storeOut is the outcome of a storage command.
type storeOut struct {
	res     storeResult
	value   []byte // the value stored (after append or prepend)
	flags   uint32
	stale   bool
	was     uint64 // stale: the version the stale item replaced
	version uint64 // the version written (0 if not asked for: storeReq.version)
}

// store executes a storage command as one atomic read-modify-write:
// every condition (absent, present, cas) is a Batch.Check on the version
// read, so a concurrent write from any protocol makes it retry or fail
// as memcached would.
func (s *Server) store(req *storeReq) (storeOut, error) {
	db := s.DB
	opts := caskade.SetOptions{ExpiresAt: req.exp, Flags: req.flags}
	var b caskade.Batch
	switch {
	case req.mode == modeSet && !req.hasCas && !req.version:
		if err := db.SetEntry(req.key, req.data, opts); err != nil {
			return storeOut{}, err
		}
		return storeOut{res: resStored, value: req.data, flags: req.flags}, nil

	case req.mode == modeSet && !req.hasCas, req.mode == modeAdd:
		if req.mode == modeAdd {
			b.Check(req.key, 0)
		}
		b.SetEntry(req.key, req.data, opts)
		if err := db.Write(&b); err != nil {
			if errors.Is(err, caskade.ErrConflict) {
				return storeOut{res: resNotStored}, nil
			}
			return storeOut{}, err
		}
		return storeOut{res: resStored, value: req.data, flags: req.flags, version: s.written(&b)}, nil

	case req.mode == modeAppend || req.mode == modePrepend:
		turn := db.Turn()
		defer turn.Done()
		for attempt := range maxAttempts {
			turn.Wait(attempt)
			old, info, err := db.Lookup(req.key)
			b.Reset()
			var out storeOut
			switch {
			case errors.Is(err, caskade.ErrNotFound):
				if !req.vivify {
					return storeOut{res: resNotStored}, nil
				}
				b.Check(req.key, 0)
				b.SetEntry(req.key, req.data, caskade.SetOptions{ExpiresAt: req.vivifyExp, Flags: req.flags})
				out = storeOut{res: resStored, value: req.data, flags: req.flags}
			case err != nil:
				return storeOut{}, err
			case req.hasCas && req.cas != s.casOf(req.key, info.Version):
				return storeOut{res: resExists}, nil
			case len(old)+len(req.data) > s.maxItemSize:
				return storeOut{res: resNotStored}, nil
			default:
				v := make([]byte, 0, len(old)+len(req.data))
				if req.mode == modeAppend {
					v = append(append(v, old...), req.data...)
				} else {
					v = append(append(v, req.data...), old...)
				}
				b.Check(req.key, info.Version)
				b.SetEntry(req.key, v, caskade.SetOptions{ExpiresAt: info.ExpiresAt, Flags: info.Flags})
				out = storeOut{res: resStored, value: v, flags: info.Flags}
			}
			err = turn.Write(&b)
			if err == nil {
				out.version = s.written(&b)
				return out, nil
			}
			if !errors.Is(err, caskade.ErrConflict) {
				return storeOut{}, err
			}
		}
		return storeOut{}, errContended

	default: // replace, or set/replace with a cas unique
		turn := db.Turn()
		defer turn.Done()
		for attempt := range maxAttempts {
			turn.Wait(attempt)
			info, err := db.Stat(req.key)
			b.Reset()
			out := storeOut{res: resStored, value: req.data, flags: req.flags}
			switch {
			case errors.Is(err, caskade.ErrNotFound):
				if req.hasCas {
					return storeOut{res: resNotFound}, nil
				}
				return storeOut{res: resNotStored}, nil
			case err != nil:
				return storeOut{}, err
			case req.hasCas && (req.cas == 0 || req.cas != s.casOf(req.key, info.Version)):
				// memcached takes a cas of 0 for none given: it matches
				// no item (not one whose cas unique E0 made 0), and is
				// never older.
				if !req.invalidate || req.cas == 0 || req.cas > s.casOf(req.key, info.Version) {
					return storeOut{res: resExists}, nil
				}
				// Meta I: an older cas stores the data as a stale item,
				// keeping the item's expiry.
				b.Check(req.key, info.Version)
				b.SetEntry(req.key, req.data, caskade.SetOptions{ExpiresAt: info.ExpiresAt, Flags: req.flags})
				out.stale, out.was = true, info.Version
			default:
				b.Check(req.key, info.Version)
				b.SetEntry(req.key, req.data, opts)
			}
			err = turn.Write(&b)
			if err == nil {
				out.version = s.written(&b)
				return out, nil
			}
			if !errors.Is(err, caskade.ErrConflict) {
				return storeOut{}, err
			}
		}
		return storeOut{}, errContended
	}
}

// written returns the version a batch just written got. A batch that
// changed nothing (an item stored with a TTL in the past where there was
// none: the engine drops it) has none; memcached still gives such an item
// a cas unique, so this returns the database's version then.
func (s *Server) written(b *caskade.Batch) uint64 {
	if v := b.Version(); v != 0 {
		return v
	}
	return s.DB.Version()
}

// casOf returns the cas unique memcached clients see for key at version:
// the version itself, unless a touch kept the one from before or meta E
// named one. Those live in the item state table, which is bounded and not
// persisted: once one is lost, the cas unique is the version again, and a
// cas command with the old unique fails with EXISTS (never overwrites).
func (s *Server) casOf(key []byte, version uint64) uint64 {
	if st := s.items.get(key, version); st.named {
		return st.cas
	}
	return version
}

// setCas makes cas (0 too) the cas unique of key at version.
func (s *Server) setCas(key []byte, version, cas uint64) {
	if version != 0 && cas != version {
		s.items.update(key, version, func(e *itemState) { e.cas, e.named = cas, true })
	}
}

// touch sets key's expiry (zero: never; in the past: delete it), as one
// atomic step with reading it, and returns the value and KeyInfo from
// before, with Version and ExpiresAt as after. As memcached's touch leaves
// the item as it was, the key keeps its cas unique and its access marks,
// although the engine rewrites it at a new version.
func (s *Server) touch(key []byte, exp, now time.Time) ([]byte, caskade.KeyInfo, error) {
	var b caskade.Batch
	turn := s.DB.Turn()
	defer turn.Done()
	for attempt := range maxAttempts {
		turn.Wait(attempt)
		v, info, err := s.DB.Lookup(key)
		if err != nil {
			return nil, info, err
		}
		b.Reset()
		b.Check(key, info.Version)
		b.ExpireAt(key, exp)
		err = turn.Write(&b)
		if errors.Is(err, caskade.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, info, err
		}
		if !exp.IsZero() && !exp.After(now) {
			return v, info, nil // deleted: gat returns the value it had
		}
		st := s.items.get(key, info.Version)
		if !st.named {
			st.cas, st.named = info.Version, true
		}
		st.version = b.Version()
		s.items.update(key, st.version, func(e *itemState) { *e = st })
		info.Version, info.ExpiresAt = st.version, exp
		return v, info, nil
	}
	return nil, caskade.KeyInfo{}, errContended
}

// deleteKey deletes key if it exists (and, with hasCas, is at version cas),
// reporting DELETED (resStored), NOT_FOUND or EXISTS.
func (s *Server) deleteKey(key []byte, hasCas bool, cas uint64) (storeResult, error) {
	var b caskade.Batch
	turn := s.DB.Turn()
	defer turn.Done()
	for attempt := range maxAttempts {
		turn.Wait(attempt)
		info, err := s.DB.Stat(key)
		if errors.Is(err, caskade.ErrNotFound) {
			return resNotFound, nil
		}
		if err != nil {
			return 0, err
		}
		if hasCas && s.casOf(key, info.Version) != cas {
			return resExists, nil
		}
		b.Reset()
		b.Check(key, info.Version)
		b.Delete(key)
		err = turn.Write(&b)
		if err == nil {
			return resStored, nil
		}
		if !errors.Is(err, caskade.ErrConflict) {
			return 0, err
		}
	}
	return 0, errContended
}

// arithReq is one incr, decr or ma.
type arithReq struct {
	key       []byte
	incr      bool
	delta     uint64
	hasCas    bool
	cas       uint64
	vivify    bool      // ma N: create on miss
	initial   uint64    // ma J
	vivifyExp time.Time // the expiry of an item created (N and T resolved)
	setExp    bool      // ma T: set the expiry of an existing item
	exp       time.Time
}

// arithOut is the outcome of an arithmetic command.
type arithOut struct {
	res     storeResult // resStored (done), resNotFound, resExists, resNotStored
	value   uint64
	created bool
	flags   uint32
	exp     time.Time
	before  time.Time // the expiry before the command (none if created)
	number  []byte    // the stored decimal
	version uint64    // the version written
}

// errNonNumericValue means the item does not hold a decimal number.
var errNonNumericValue = errors.New("memcache: non-numeric value")

// arith executes incr/decr as an atomic read-modify-write.
func (s *Server) arith(req *arithReq) (arithOut, error) {
	var b caskade.Batch
	turn := s.DB.Turn()
	defer turn.Done()
	for attempt := range maxAttempts {
		turn.Wait(attempt)
		old, info, err := s.DB.Lookup(req.key)
		b.Reset()
		var out arithOut
		switch {
		case errors.Is(err, caskade.ErrNotFound):
			if !req.vivify {
				return arithOut{res: resNotFound}, nil
			}
			out = arithOut{res: resStored, value: req.initial, created: true, exp: req.vivifyExp}
			b.Check(req.key, 0)
		case err != nil:
			return arithOut{}, err
		case len(old) == 0:
			// An empty value is no number, whatever the cas unique:
			// memcached checks this before the cas, the digits after.
			return arithOut{}, errNonNumericValue
		case req.hasCas && req.cas != s.casOf(req.key, info.Version):
			return arithOut{res: resExists}, nil
		default:
			n, ok := parseCounter(old)
			if !ok {
				return arithOut{}, errNonNumericValue
			}
			switch {
			case req.incr:
				n += req.delta // wraps at 2^64, as memcached
			case req.delta > n:
				n = 0
			default:
				n -= req.delta
			}
			out = arithOut{res: resStored, value: n, flags: info.Flags, exp: info.ExpiresAt, before: info.ExpiresAt}
			if req.setExp {
				out.exp = req.exp
			}
			b.Check(req.key, info.Version)
		}
		out.number = appendUint(nil, out.value)
		b.SetEntry(req.key, out.number, caskade.SetOptions{ExpiresAt: out.exp, Flags: out.flags})
		err = turn.Write(&b)
		if err == nil {
			out.version = s.written(&b)
			return out, nil
		}
		if !errors.Is(err, caskade.ErrConflict) {
			return arithOut{}, err
		}
		if req.hasCas {
			// The item changed under us: its version is no longer cas
			// (or it is gone); the next read reports which.
			continue
		}
	}
	return arithOut{}, errContended
}

// parseCounter parses an item as memcached's incr does (safe_strtoull,
// which is strtoull on the item as a C string): optional leading white
// space, an optional '+' or '-', decimal digits, then the end, white space
// or a NUL byte. Empty values and overflow are not numeric; nor is a
// negative number, except where strtoull's negation leaves a number below
// 2^63, which memcached takes: "-0", and magnitudes above 2^63 (so
// "-18446744073709551615" is 1).
func parseCounter(v []byte) (uint64, bool) {
	i := 0
	for i < len(v) && isSpace(v[i]) {
		i++
	}
	neg := false
	if i < len(v) && (v[i] == '+' || v[i] == '-') {
		neg = v[i] == '-'
		i++
	}
	start := i
	var n uint64
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		d := uint64(v[i] - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = n*10 + d
		i++
	}
	if i == start {
		return 0, false
	}
	if i < len(v) && !isSpace(v[i]) && v[i] != 0 {
		return 0, false
	}
	if neg {
		n = -n
		if int64(n) < 0 {
			return 0, false
		}
	}
	return n, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// serverError maps a database error to a SERVER_ERROR line. Storage
// errors name the server's files and system errors: their lines say what
// happened, and the log gets the cause.
func (s *Server) serverError(err error) string {
	switch k := storerr.Classify(err); k {
	case storerr.WritesStopped:
		// The database logged the cause when it stopped writes.
		return "SERVER_ERROR writes stopped after an I/O error"
	case storerr.NoSpace:
		s.storeErrs.Report(s.log, "memcache", k, err)
		return "SERVER_ERROR no space left on device"
	case storerr.IO:
		s.storeErrs.Report(s.log, "memcache", k, err)
		return "SERVER_ERROR I/O error (the server's log has the cause)"
	}
	switch {
	case errors.Is(err, errContended):
		return errContention
	case errors.Is(err, caskade.ErrValueTooLarge), errors.Is(err, caskade.ErrBatchTooLarge):
		return errTooLarge
	case errors.Is(err, caskade.ErrKeyTooLarge):
		return "SERVER_ERROR key too large"
	case errors.Is(err, caskade.ErrReadOnly):
		return "SERVER_ERROR database is read-only"
	case errors.Is(err, caskade.ErrClosed):
		return "SERVER_ERROR database closed"
	}
	msg := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, err.Error())
	return "SERVER_ERROR " + strings.TrimPrefix(msg, "caskade: ")
}
