package redis

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/resp"
)

func cmdDel(c *client, args [][]byte) {
	var n int64
	for _, key := range args[1:] {
		k := c.k(key)
		e, ok := c.loadStat(k)
		if !ok {
			return
		}
		if e.found {
			c.st.del(k)
			n++
		}
	}
	c.replyInt(n)
}

func cmdExists(c *client, args [][]byte) {
	if len(args) > 2 {
		c.st.useSnapshot()
	}
	var n int64
	for _, key := range args[1:] {
		e, ok := c.stat(key)
		if !ok {
			return
		}
		if e.found {
			n++
		}
	}
	c.replyInt(n)
}

func cmdTouch(c *client, args [][]byte) { cmdExists(c, args) }

// EXPIRE option flags.
const (
	expNX = 1 << iota
	expXX
	expGT
	expLT
)

func cmdExpire(c *client, args [][]byte)    { c.expireGeneric(args, c.st.nowMs, true) }
func cmdPexpire(c *client, args [][]byte)   { c.expireGeneric(args, c.st.nowMs, false) }
func cmdExpireat(c *client, args [][]byte)  { c.expireGeneric(args, 0, true) }
func cmdPexpireat(c *client, args [][]byte) { c.expireGeneric(args, 0, false) }

// expireGeneric is Redis's expireGenericCommand.
func (c *client) expireGeneric(args [][]byte, basetime int64, seconds bool) {
	flags := 0
	for _, opt := range args[3:] {
		switch {
		case eqFold(opt, "nx"):
			flags |= expNX
		case eqFold(opt, "xx"):
			flags |= expXX
		case eqFold(opt, "gt"):
			flags |= expGT
		case eqFold(opt, "lt"):
			flags |= expLT
		default:
			c.replyErr("ERR Unsupported option " + string(cstr(opt)))
			return
		}
	}
	if flags&expNX != 0 && flags&(expXX|expGT|expLT) != 0 {
		c.replyErr("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if flags&expGT != 0 && flags&expLT != 0 {
		c.replyErr("ERR GT and LT options at the same time are not compatible")
		return
	}
	when, ok := parseInt(args[2])
	if !ok {
		c.replyErr(errNotInt)
		return
	}
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			c.errExpireTime()
			return
		}
		when *= 1000
	}
	if when > math.MaxInt64-basetime {
		c.errExpireTime()
		return
	}
	when += basetime
	k := c.k(args[1])
	e, ok := c.load(k)
	if !ok {
		return
	}
	if !e.found {
		c.replyInt(0)
		return
	}
	if flags != 0 {
		cur := e.exp
		if cur == 0 {
			cur = -1
		}
		if (flags&expNX != 0 && cur != -1) ||
			(flags&expXX != 0 && cur == -1) ||
			(flags&expGT != 0 && (when <= cur || cur == -1)) ||
			(flags&expLT != 0 && cur != -1 && when >= cur) {
			c.replyInt(0)
			return
		}
	}
	if when <= c.st.nowMs {
		c.st.del(k)
	} else {
		c.st.setKeep(k, e.val, when, e)
	}
	c.replyInt(1)
}

func cmdTTL(c *client, args [][]byte)         { c.ttlGeneric(args, false, false) }
func cmdPTTL(c *client, args [][]byte)        { c.ttlGeneric(args, true, false) }
func cmdExpiretime(c *client, args [][]byte)  { c.ttlGeneric(args, false, true) }
func cmdPexpiretime(c *client, args [][]byte) { c.ttlGeneric(args, true, true) }

func (c *client) ttlGeneric(args [][]byte, ms, abs bool) {
	e, ok := c.stat(args[1])
	if !ok {
		return
	}
	if !e.found {
		c.replyInt(-2)
		return
	}
	if e.exp == 0 {
		c.replyInt(-1)
		return
	}
	ttl := e.exp
	if !abs {
		ttl -= c.st.nowMs
	}
	ttl = max(ttl, 0)
	if !ms {
		ttl = (ttl + 500) / 1000
	}
	c.replyInt(ttl)
}

func cmdPersist(c *client, args [][]byte) {
	k := c.k(args[1])
	e, ok := c.load(k)
	if !ok {
		return
	}
	if !e.found || e.exp == 0 {
		c.replyInt(0)
		return
	}
	c.st.setKeep(k, e.val, 0, e)
	c.replyInt(1)
}

func cmdType(c *client, args [][]byte) {
	e, ok := c.stat(args[1])
	if !ok {
		return
	}
	if e.found {
		c.replyStatus("string")
	} else {
		c.replyStatus("none")
	}
}

func cmdRename(c *client, args [][]byte)   { c.renameGeneric(args, false) }
func cmdRenamenx(c *client, args [][]byte) { c.renameGeneric(args, true) }

func (c *client) renameGeneric(args [][]byte, nx bool) {
	same := bytes.Equal(args[1], args[2])
	src := c.k(args[1])
	e, ok := c.load(src)
	if !ok {
		return
	}
	if !e.found {
		c.replyErr(errNoKey)
		return
	}
	if same {
		if nx {
			c.replyInt(0)
		} else {
			c.replyOK()
		}
		return
	}
	dst := c.k(args[2])
	d, ok := c.loadStat(dst)
	if !ok {
		return
	}
	if d.found && nx {
		c.replyInt(0)
		return
	}
	c.st.setKeep(dst, e.val, e.exp, e)
	c.st.del(src)
	if nx {
		c.replyInt(1)
	} else {
		c.replyOK()
	}
}

// intArg parses an int argument as Redis's getIntFromObjectOrReply does;
// msg, if not empty, replaces the error text.
func (c *client) intArg(arg []byte, msg string) (int, bool) {
	v, ok := parseInt(arg)
	if !ok {
		if msg == "" {
			msg = errNotInt
		}
		c.replyErr(msg)
		return 0, false
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		if msg == "" {
			msg = "ERR value is out of range"
		}
		c.replyErr(msg)
		return 0, false
	}
	return int(v), true
}

func (c *client) validDB(db int) bool { return db >= 0 && db < c.s.databases }

func cmdCopy(c *client, args [][]byte) {
	dstDB, replace := c.db, false
	for j := 3; j < len(args); j++ {
		switch {
		case eqFold(args[j], "replace"):
			replace = true
		case eqFold(args[j], "db") && j+1 < len(args):
			db, ok := c.intArg(args[j+1], "")
			if !ok {
				return
			}
			if !c.validDB(db) {
				c.replyErr(errDBRange)
				return
			}
			dstDB = db
			j++
		default:
			c.replyErr(errSyntax)
			return
		}
	}
	if dstDB == c.db && bytes.Equal(args[1], args[2]) {
		c.replyErr(errSameObject)
		return
	}
	if dstDB == 0 && len(args[2]) > 0 && args[2][0] == dbPrefixByte {
		c.replyErr(errReservedKey)
		return
	}
	e, ok := c.get(args[1])
	if !ok {
		return
	}
	if !e.found {
		c.replyInt(0)
		return
	}
	dst := c.st.enc(dstDB, args[2])
	d, ok := c.loadStat(dst)
	if !ok {
		return
	}
	if d.found && !replace {
		c.replyInt(0)
		return
	}
	c.st.setKeep(dst, e.val, e.exp, e)
	c.replyInt(1)
}

func cmdMove(c *client, args [][]byte) {
	db, ok := c.intArg(args[2], "")
	if !ok {
		return
	}
	if !c.validDB(db) {
		c.replyErr(errDBRange)
		return
	}
	if db == c.db {
		c.replyErr(errSameObject)
		return
	}
	if db == 0 && len(args[1]) > 0 && args[1][0] == dbPrefixByte {
		c.replyErr(errReservedKey)
		return
	}
	src := c.k(args[1])
	e, ok := c.load(src)
	if !ok {
		return
	}
	if !e.found {
		c.replyInt(0)
		return
	}
	dst := c.st.enc(db, args[1])
	d, ok := c.loadStat(dst)
	if !ok {
		return
	}
	if d.found {
		c.replyInt(0)
		return
	}
	c.st.setKeep(dst, e.val, e.exp, e)
	c.st.del(src)
	c.replyInt(1)
}

// swapdbMaxBytes bounds the data SWAPDB rewrites in one commit.
const swapdbMaxBytes = 256 << 20

// cmdSwapdb swaps two databases by rewriting their keys under each other's
// prefix in one atomic commit, conditional on every key moved being
// unchanged since it was read.
func cmdSwapdb(c *client, args [][]byte) {
	a, ok := c.intArg(args[1], "ERR invalid first DB index")
	if !ok {
		return
	}
	b, ok := c.intArg(args[2], "ERR invalid second DB index")
	if !ok {
		return
	}
	if !c.validDB(a) || !c.validDB(b) {
		c.replyErr(errDBRange)
		return
	}
	if a == b {
		c.replyOK()
		return
	}
	c.st.useSnapshot()
	type kv struct {
		key []byte // user key
		e   entry
	}
	var total int64
	collect := func(db int) ([]kv, bool) {
		var out []kv
		begin, end := dbBounds(db)
		err := c.st.scan(begin, end, func(k []byte, e entry) bool {
			uk, _, _ := userKey(k)
			out = append(out, kv{key: bytes.Clone(uk)})
			total += int64(len(k) + e.size)
			return total <= swapdbMaxBytes
		})
		if err != nil {
			c.replyDBError(err)
			return nil, false
		}
		if total > swapdbMaxBytes {
			c.replyErr("ERR SWAPDB of databases larger than 256 MiB is not supported")
			return nil, false
		}
		for i := range out {
			e, err := c.st.get(c.st.enc(db, out[i].key))
			if err != nil {
				c.replyDBError(err)
				return nil, false
			}
			e.val = bytes.Clone(e.val)
			out[i].e = e
		}
		return out, true
	}
	ka, ok := collect(a)
	if !ok {
		return
	}
	kb, ok := collect(b)
	if !ok {
		return
	}
	// Database 0 cannot hold a key beginning with 0xff (its keys are
	// stored as they are, and those bytes begin the other databases'):
	// written there, the key would land in another database.
	for _, side := range []struct {
		to   int
		keys []kv
	}{{b, ka}, {a, kb}} {
		if side.to != 0 {
			continue
		}
		for _, x := range side.keys {
			if len(x.key) > 0 && x.key[0] == dbPrefixByte {
				c.replyErr(errReservedKey)
				return
			}
		}
	}
	for _, x := range ka {
		c.st.del(c.st.enc(a, x.key))
	}
	for _, x := range kb {
		c.st.del(c.st.enc(b, x.key))
	}
	for _, x := range ka {
		c.st.setKeep(c.st.enc(b, x.key), x.e.val, x.e.exp, x.e)
	}
	for _, x := range kb {
		c.st.setKeep(c.st.enc(a, x.key), x.e.val, x.e.exp, x.e)
	}
	c.replyOK()
}

func cmdKeys(c *client, args [][]byte) {
	pattern := args[1]
	all := len(pattern) == 1 && pattern[0] == '*'
	c.st.useSnapshot()
	begin, end := dbBounds(c.db)
	if pre := globPrefix(pattern); len(pre) > 0 {
		pb := c.st.enc(c.db, pre)
		begin = pb
		if pe := caskade.PrefixEnd(pb); pe != nil && (end == nil || bytes.Compare(pe, end) < 0) {
			end = pe
		}
	}
	var body []byte
	n := 0
	err := c.st.scan(begin, end, func(k []byte, e entry) bool {
		uk, _, _ := userKey(k)
		if all || globMatch(pattern, uk, false) {
			body = resp.AppendBulk(body, uk)
			n++
		}
		return true
	})
	if err != nil {
		c.replyDBError(err)
		return
	}
	c.replyArray(n)
	c.out = append(c.out, body...)
}

func cmdScan(c *client, args [][]byte) {
	cursor, ok := string2ull(args[1])
	if !ok {
		c.replyErr("ERR invalid cursor")
		return
	}
	count := int64(10)
	var pattern []byte
	typeFilter := ""
	for i := 2; i < len(args); {
		more := len(args) - i
		switch {
		case eqFold(args[i], "count") && more >= 2:
			n, ok := parseInt(args[i+1])
			if !ok {
				c.replyErr(errNotInt)
				return
			}
			if n < 1 {
				c.replyErr(errSyntax)
				return
			}
			count = n
			i += 2
		case eqFold(args[i], "match") && more >= 2:
			pattern = args[i+1]
			if len(pattern) == 1 && pattern[0] == '*' {
				pattern = nil
			}
			i += 2
		case eqFold(args[i], "type") && more >= 2:
			// Redis reads the name as a C string: it ends at a NUL.
			t := string(bytes.ToLower(cstr(args[i+1])))
			switch t {
			case "string", "list", "set", "zset", "hash", "stream":
			default:
				c.replyErr("ERR unknown type name '" + string(cstr(args[i+1])) + "'")
				return
			}
			typeFilter = t
			i += 2
		case eqFold(args[i], "novalues"):
			c.replyErr("ERR NOVALUES option can only be used in HSCAN")
			return
		default:
			c.replyErr(errSyntax)
			return
		}
	}
	begin, end := dbBounds(c.db)
	if cursor != 0 {
		begin = c.s.scanCursor.resume(cursor, c.db)
	}
	var body []byte
	n := 0
	var examined int64
	var next []byte
	err := c.st.scan(begin, end, func(k []byte, e entry) bool {
		if examined == count {
			next = bytes.Clone(k)
			return false
		}
		examined++
		uk, _, _ := userKey(k)
		if typeFilter != "" && typeFilter != "string" {
			return true
		}
		if pattern != nil && !globMatch(pattern, uk, false) {
			return true
		}
		body = resp.AppendBulk(body, uk)
		n++
		return true
	})
	if err != nil {
		c.replyDBError(err)
		return
	}
	c.replyArray(2)
	if next == nil {
		c.replyBulkString("0")
	} else {
		c.replyBulkString(strconv.FormatUint(c.s.scanCursor.save(next, c.db), 10))
	}
	c.replyArray(n)
	c.out = append(c.out, body...)
}

func cmdRandomkey(c *client, args [][]byte) {
	c.st.useSnapshot()
	begin, end := dbBounds(c.db)
	var probe [8]byte
	binary.BigEndian.PutUint64(probe[:], rand.Uint64())
	if c.db == 0 && probe[0] == dbPrefixByte {
		probe[0] = 0xfe
	}
	var found []byte
	first := func(k []byte, e entry) bool {
		found = bytes.Clone(k)
		return false
	}
	start := c.st.enc(c.db, probe[:])
	if err := c.st.scan(start, end, first); err != nil {
		c.replyDBError(err)
		return
	}
	if found == nil {
		if err := c.st.scan(begin, end, first); err != nil {
			c.replyDBError(err)
			return
		}
	}
	if found == nil {
		c.replyNull()
		return
	}
	uk, _, _ := userKey(found)
	c.replyBulk(uk)
}

// dbSize counts the keys of a database. Database 0's count is the total
// minus the other databases', so it stays cheap when they are small; it
// may include keys that expired but active expiry has not dropped yet,
// as Redis's DBSIZE does. The other databases' keys are counted as the
// total counts them, such expired keys included, or database 0 would
// count those as its own.
func (c *client) dbSize(db int) (int64, error) {
	count := func(begin, end []byte) (int64, error) {
		var n int64
		err := c.st.scan(begin, end, func([]byte, entry) bool { n++; return true })
		return n, err
	}
	if db != 0 || c.st.dirty() {
		begin, end := dbBounds(db)
		return count(begin, end)
	}
	total := int64(c.s.DB.Stats().Keys)
	others, _, err := c.s.DB.CountKeys([]byte{dbPrefixByte}, nil)
	if err != nil {
		return 0, err
	}
	return max(total-int64(others), 0), nil
}

func cmdDbsize(c *client, args [][]byte) {
	n, err := c.dbSize(c.db)
	if err != nil {
		c.replyDBError(err)
		return
	}
	c.replyInt(n)
}

func (c *client) flushFlags(args [][]byte) bool {
	if len(args) == 1 || (len(args) == 2 && (eqFold(args[1], "sync") || eqFold(args[1], "async"))) {
		return true
	}
	c.replyErr(errSyntax)
	return false
}

func cmdFlushdb(c *client, args [][]byte) {
	if !c.flushFlags(args) {
		return
	}
	begin, end := dbBounds(c.db)
	if begin == nil {
		begin = []byte{}
	}
	c.st.delRange(begin, end)
	c.replyOK()
}

func cmdFlushall(c *client, args [][]byte) {
	if !c.flushFlags(args) {
		return
	}
	c.st.delRange([]byte{}, nil)
	c.replyOK()
}

// OBJECT.

func objectEncoding(v []byte) string {
	if len(v) <= 20 {
		if _, ok := string2ll(v); ok {
			return "int"
		}
	}
	if len(v) <= 44 {
		return "embstr"
	}
	return "raw"
}

func cmdObjectEncoding(c *client, args [][]byte) {
	e, ok := c.get(args[2])
	if !ok {
		return
	}
	if !e.found {
		c.replyNull()
		return
	}
	c.replyBulkString(objectEncoding(e.val))
}

func cmdObjectFreq(c *client, args [][]byte) {
	e, ok := c.stat(args[2])
	if !ok {
		return
	}
	if !e.found {
		c.replyNull()
		return
	}
	c.replyErr("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
}

func cmdObjectIdletime(c *client, args [][]byte) {
	e, ok := c.stat(args[2])
	if !ok {
		return
	}
	if !e.found {
		c.replyNull()
		return
	}
	c.replyInt(0)
}

func cmdObjectRefcount(c *client, args [][]byte) {
	e, ok := c.get(args[2])
	if !ok {
		return
	}
	if !e.found {
		c.replyNull()
		return
	}
	if v, ok := string2ll(e.val); ok && len(e.val) <= 20 && v >= 0 && v < 10000 {
		c.replyInt(math.MaxInt32)
		return
	}
	c.replyInt(1)
}

func cmdObjectHelp(c *client, args [][]byte) {
	c.replyHelp("OBJECT", []string{
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.",
	})
}

// replyHelp replies a HELP text as Redis's addReplyHelp does.
func (c *client) replyHelp(cmd string, lines []string) {
	c.replyArray(len(lines) + 3)
	c.replyStatus(cmd + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.replyStatus(l)
	}
	c.replyStatus("HELP")
	c.replyStatus("    Print this help.")
}
