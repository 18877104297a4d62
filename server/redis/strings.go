package redis

import (
	"math"
	"math/big"
)

// k returns the encoded key of key in the client's database.
func (c *client) k(key []byte) []byte { return c.st.enc(c.db, key) }

// get reads a key of the client's database, replying the error if the
// read failed (ok false).
func (c *client) get(key []byte) (entry, bool) { return c.load(c.k(key)) }

// stat is get without the value.
func (c *client) stat(key []byte) (entry, bool) { return c.loadStat(c.k(key)) }

// load reads the stored (encoded) key k, replying with the error and
// reporting false if the read fails.
func (c *client) load(k []byte) (entry, bool) {
	e, err := c.st.get(k)
	if err != nil {
		c.replyDBError(err)
		return e, false
	}
	return e, true
}

// loadStat is load without the value.
func (c *client) loadStat(k []byte) (entry, bool) {
	e, err := c.st.stat(k)
	if err != nil {
		c.replyDBError(err)
		return e, false
	}
	return e, true
}

func (c *client) maxBulk() int64 { return c.s.cfg.bulkAtomic.Load() }

func cmdGet(c *client, args [][]byte) {
	e, ok := c.get(args[1])
	if !ok {
		return
	}
	if !e.found {
		c.s.stats.misses.Add(1)
		c.replyNull()
		return
	}
	c.s.stats.hits.Add(1)
	c.replyBulk(e.val)
}

// SET and GETEX option flags.
const (
	setNX = 1 << iota
	setXX
	setEX
	setPX
	setKeepTTL
	setGet
	setEXAT
	setPXAT
	setPersist
)

// parseExtended parses the options of SET (forSet) or GETEX, as Redis's
// parseExtendedStringArgumentsOrReply does.
func parseExtended(args [][]byte, from int, forSet bool) (flags int, expire []byte, ok bool) {
	anyExpire := func() bool { return flags&(setEX|setPX|setEXAT|setPXAT) != 0 }
	for j := from; j < len(args); j++ {
		opt := args[j]
		var next []byte
		if j < len(args)-1 {
			next = args[j+1]
		}
		switch {
		case eqFold(opt, "nx") && flags&setXX == 0 && forSet:
			flags |= setNX
		case eqFold(opt, "xx") && flags&setNX == 0 && forSet:
			flags |= setXX
		case eqFold(opt, "get") && forSet:
			flags |= setGet
		case eqFold(opt, "keepttl") && flags&setPersist == 0 && !anyExpire() && forSet:
			flags |= setKeepTTL
		case eqFold(opt, "persist") && !forSet && !anyExpire() && flags&setKeepTTL == 0:
			flags |= setPersist
		case eqFold(opt, "ex") && flags&(setKeepTTL|setPersist|setEXAT|setPX|setPXAT) == 0 && next != nil:
			flags |= setEX
			expire = next
			j++
		case eqFold(opt, "px") && flags&(setKeepTTL|setPersist|setEX|setEXAT|setPXAT) == 0 && next != nil:
			flags |= setPX
			expire = next
			j++
		case eqFold(opt, "exat") && flags&(setKeepTTL|setPersist|setEX|setPX|setPXAT) == 0 && next != nil:
			flags |= setEXAT
			expire = next
			j++
		case eqFold(opt, "pxat") && flags&(setKeepTTL|setPersist|setEX|setEXAT|setPX) == 0 && next != nil:
			flags |= setPXAT
			expire = next
			j++
		default:
			return 0, nil, false
		}
	}
	return flags, expire, true
}

// expireMs converts an EX/PX/EXAT/PXAT argument to Unix milliseconds, or
// replies the error (Redis's getExpireMillisecondsOrReply).
func (c *client) expireMs(arg []byte, flags int) (int64, bool) {
	ms, ok := parseInt(arg)
	if !ok {
		c.replyErr(errNotInt)
		return 0, false
	}
	seconds := flags&(setEX|setEXAT) != 0
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		c.errExpireTime()
		return 0, false
	}
	if seconds {
		ms *= 1000
	}
	if flags&(setEX|setPX) != 0 {
		ms += c.st.nowMs
	}
	if ms <= 0 {
		c.errExpireTime()
		return 0, false
	}
	return ms, true
}

func cmdSet(c *client, args [][]byte) {
	flags, expire, ok := parseExtended(args, 3, true)
	if !ok {
		c.replyErr(errSyntax)
		return
	}
	c.setGeneric(flags, args[1], args[2], expire, "", "")
}

func cmdSetnx(c *client, args [][]byte) {
	c.setGeneric(setNX, args[1], args[2], nil, ":1\r\n", ":0\r\n")
}

func cmdSetex(c *client, args [][]byte) {
	c.setGeneric(setEX, args[1], args[3], args[2], "", "")
}

func cmdPsetex(c *client, args [][]byte) {
	c.setGeneric(setPX, args[1], args[3], args[2], "", "")
}

// setGeneric implements SET and its variants (Redis's setGenericCommand).
// okReply and abortReply, if not empty, replace +OK and the null reply.
func (c *client) setGeneric(flags int, key, val, expire []byte, okReply, abortReply string) {
	var exp int64
	if expire != nil {
		var ok bool
		if exp, ok = c.expireMs(expire, flags); !ok {
			return
		}
	}
	if int64(len(val)) > c.maxBulk() {
		c.replyErr(errMaxBulk)
		return
	}
	k := c.k(key)
	var cur entry
	var err error
	if flags&setGet != 0 {
		cur, err = c.st.get(k)
		if err != nil {
			c.replyDBError(err)
			return
		}
		if cur.found {
			c.replyBulk(cur.val)
		} else {
			c.replyNull()
		}
	} else if flags&(setNX|setXX|setKeepTTL) != 0 {
		if cur, err = c.st.stat(k); err != nil {
			c.replyDBError(err)
			return
		}
	}
	if (flags&setNX != 0 && cur.found) || (flags&setXX != 0 && !cur.found) {
		if flags&setGet == 0 {
			if abortReply != "" {
				c.out = append(c.out, abortReply...)
			} else {
				c.replyNull()
			}
		}
		return
	}
	if flags&setKeepTTL != 0 && cur.found {
		exp = cur.exp
	}
	c.st.set(k, val, exp)
	if flags&setGet == 0 {
		if okReply != "" {
			c.out = append(c.out, okReply...)
		} else {
			c.replyOK()
		}
	}
}

func cmdGetex(c *client, args [][]byte) {
	flags, expire, ok := parseExtended(args, 2, false)
	if !ok {
		c.replyErr(errSyntax)
		return
	}
	k := c.k(args[1])
	e, ok := c.load(k)
	if !ok {
		return
	}
	if !e.found {
		c.replyNull()
		return
	}
	var exp int64
	if expire != nil {
		if exp, ok = c.expireMs(expire, flags); !ok {
			return
		}
	}
	c.replyBulk(e.val)
	switch {
	case flags&(setEXAT|setPXAT) != 0 && exp <= c.st.nowMs:
		c.st.del(k)
	case expire != nil:
		c.st.setKeep(k, e.val, exp, e)
	case flags&setPersist != 0 && e.exp != 0:
		c.st.setKeep(k, e.val, 0, e)
	}
}

func cmdGetdel(c *client, args [][]byte) {
	k := c.k(args[1])
	e, ok := c.load(k)
	if !ok {
		return
	}
	if !e.found {
		c.replyNull()
		return
	}
	c.replyBulk(e.val)
	c.st.del(k)
}

func cmdGetset(c *client, args [][]byte) {
	k := c.k(args[1])
	e, ok := c.load(k)
	if !ok {
		return
	}
	if int64(len(args[2])) > c.maxBulk() {
		c.replyErr(errMaxBulk)
		return
	}
	if e.found {
		c.replyBulk(e.val)
	} else {
		c.replyNull()
	}
	c.st.set(k, args[2], 0)
}

func cmdMget(c *client, args [][]byte) {
	if len(args) > 2 {
		c.st.useSnapshot()
	}
	c.replyArray(len(args) - 1)
	for _, key := range args[1:] {
		e, err := c.st.get(c.k(key))
		switch {
		case err != nil:
			c.replyDBError(err)
		case e.found:
			c.s.stats.hits.Add(1)
			c.replyBulk(e.val)
		default:
			c.s.stats.misses.Add(1)
			c.replyNull()
		}
	}
}

func cmdMset(c *client, args [][]byte) {
	if len(args)%2 == 0 {
		c.errArity()
		return
	}
	for i := 1; i < len(args); i += 2 {
		c.st.set(c.k(args[i]), args[i+1], 0)
	}
	c.replyOK()
}

func cmdMsetnx(c *client, args [][]byte) {
	if len(args)%2 == 0 {
		c.errArity()
		return
	}
	for i := 1; i < len(args); i += 2 {
		e, ok := c.stat(args[i])
		if !ok {
			return
		}
		if e.found {
			c.replyInt(0)
			return
		}
	}
	for i := 1; i < len(args); i += 2 {
		c.st.set(c.k(args[i]), args[i+1], 0)
	}
	c.replyInt(1)
}

func cmdAppend(c *client, args [][]byte) {
	k := c.k(args[1])
	e, ok := c.load(k)
	if !ok {
		return
	}
	if !e.found {
		c.st.set(k, args[2], 0)
		c.replyInt(int64(len(args[2])))
		return
	}
	if int64(len(e.val))+int64(len(args[2])) > c.maxBulk() {
		c.replyErr(errMaxBulk)
		return
	}
	v := make([]byte, 0, len(e.val)+len(args[2]))
	v = append(append(v, e.val...), args[2]...)
	c.st.setKeep(k, v, e.exp, e)
	c.replyInt(int64(len(v)))
}

func cmdStrlen(c *client, args [][]byte) {
	e, ok := c.stat(args[1])
	if !ok {
		return
	}
	c.replyInt(int64(e.size))
}

func cmdGetrange(c *client, args [][]byte) {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.replyErr(errNotInt)
		return
	}
	e, ok := c.get(args[1])
	if !ok {
		return
	}
	n := int64(len(e.val))
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if n == 0 || start >= n || end < 0 || start > end {
		c.out = append(c.out, "$0\r\n\r\n"...)
		return
	}
	start = max(start, 0)
	end = min(end, n-1)
	c.replyBulk(e.val[start : end+1])
}

func cmdSetrange(c *client, args [][]byte) {
	offset, ok := parseInt(args[2])
	if !ok {
		c.replyErr(errNotInt)
		return
	}
	if offset < 0 {
		c.replyErr("ERR offset is out of range")
		return
	}
	val := args[3]
	k := c.k(args[1])
	e, ok := c.load(k)
	if !ok {
		return
	}
	if len(val) == 0 {
		c.replyInt(int64(len(e.val)))
		return
	}
	total := offset + int64(len(val))
	if total > c.maxBulk() || total < offset {
		c.replyErr(errMaxBulk)
		return
	}
	n := max(int64(len(e.val)), total)
	v := make([]byte, n)
	copy(v, e.val)
	copy(v[offset:], val)
	c.st.setKeep(k, v, e.exp, e)
	c.replyInt(n)
}

func cmdIncr(c *client, args [][]byte) { c.incrDecr(args[1], 1) }
func cmdDecr(c *client, args [][]byte) { c.incrDecr(args[1], -1) }

func cmdIncrby(c *client, args [][]byte) {
	if n, ok := c.amount(args[2], false); ok {
		c.incrDecr(args[1], n)
	}
}

func cmdDecrby(c *client, args [][]byte) {
	if n, ok := c.amount(args[2], true); ok {
		c.incrDecr(args[1], n)
	}
}

// amount parses the argument of INCRBY (or, negated, of DECRBY), replying
// Redis's error if it is not one.
func (c *client) amount(arg []byte, negate bool) (int64, bool) {
	n, ok := parseInt(arg)
	switch {
	case !ok:
		c.replyErr(errNotInt)
		return 0, false
	case negate && n == math.MinInt64:
		c.replyErr("ERR decrement would overflow")
		return 0, false
	case negate:
		n = -n
	}
	return n, true
}

// addInt returns v+incr, or false if that overflows int64.
func addInt(v, incr int64) (int64, bool) {
	if (incr < 0 && v < 0 && incr < math.MinInt64-v) || (incr > 0 && v > 0 && incr > math.MaxInt64-v) {
		return 0, false
	}
	return v + incr, true
}

func (c *client) incrDecr(key []byte, incr int64) {
	k := c.k(key)
	switch {
	case c.deferred:
		// A deferred commit (pipeline.go) makes the sum, and the reply.
		c.st.add(k, incr)
		return
	case !c.execing && !c.trk.on:
		// On its own, an increment is made by its commit, on the value
		// then current (caskade.Batch.AddInt): it never conflicts.
		b := &c.sum
		b.Reset()
		i := b.AddInt(k, incr)
		if err := c.s.DB.Write(b); err != nil {
			c.replyDBError(err)
			return
		}
		c.replyInt(b.Int(i))
		return
	}
	e, ok := c.load(k)
	if !ok {
		return
	}
	var v int64
	if e.found {
		var ok bool
		if v, ok = string2ll(e.val); !ok {
			c.replyErr(errNotInt)
			return
		}
	}
	if v, ok = addInt(v, incr); !ok {
		c.replyErr(errOverflow)
		return
	}
	c.st.setKeep(k, c.st.keepInt(v), e.exp, e)
	c.replyInt(v)
}

func cmdIncrbyfloat(c *client, args [][]byte) {
	k := c.k(args[1])
	e, ok := c.load(k)
	if !ok {
		return
	}
	v := new(big.Float)
	if e.found {
		var ok bool
		if v, ok = string2ld(e.val); !ok {
			c.replyErr(errNotFloat)
			return
		}
	}
	incr, ok := string2ld(args[2])
	if !ok {
		c.replyErr(errNotFloat)
		return
	}
	if v, ok = ldAdd(v, incr); !ok {
		c.replyErr("ERR increment would produce NaN or Infinity")
		return
	}
	s := []byte(formatLongDouble(v))
	c.st.setKeep(k, s, e.exp, e)
	c.replyBulk(s)
}
