package client

import (
	"context"
	"strconv"
	"time"

	"github.com/caskade/caskade/resp"
)

// NoExpiry is the TTL of a key that exists but has no expiry.
const NoExpiry time.Duration = -1

// doStrings runs a command of string arguments on a shared connection.
func (c *Client) doStrings(ctx context.Context, cls class, args ...string) (result, error) {
	r := c.getRequest()
	r.cmd = resp.AppendCommandString(r.cmd[:0], args...)
	r.cls = cls
	return c.exec(ctx, r)
}

// doKeys runs name followed by keys.
func (c *Client) doKeys(ctx context.Context, cls class, name string, keys []string) (result, error) {
	r := c.getRequest()
	b := resp.AppendArrayHeader(r.cmd[:0], 1+len(keys))
	b = resp.AppendBulkString(b, name)
	for _, k := range keys {
		b = resp.AppendBulkString(b, k)
	}
	r.cmd = b
	r.cls = cls
	return c.exec(ctx, r)
}

func intResult(res result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.val.Int()
}

// Ping checks that the server answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.doStrings(ctx, classRead, "PING")
	return err
}

// Get returns the value of key, or Nil if the key does not exist. The
// returned slice is the caller's. This is the one allocation of a Get in
// the steady state.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	r := c.getRequest()
	r.cmd = resp.AppendCommandString(r.cmd[:0], "GET", key)
	r.cls = classRead
	res, err := c.exec(ctx, r)
	if err != nil {
		return nil, err
	}
	return res.val.Bytes()
}

// SetArgs are the options of SET. The zero value sets the key
// unconditionally and removes any expiry.
type SetArgs struct {
	// TTL makes the key expire after this long (EX, or PX for a TTL that
	// is not a whole number of seconds); 0 means no expiry. A negative TTL
	// is sent as it is, and refused as Redis refuses it ("invalid expire
	// time"), rather than taken for no expiry.
	TTL time.Duration
	// ExpireAt makes the key expire at this time (PXAT); zero means none.
	ExpireAt time.Time
	// KeepTTL keeps the key's current expiry (KEEPTTL).
	KeepTTL bool
	// NX sets the key only if it does not exist; XX only if it exists.
	NX, XX bool
	// Get returns the key's old value (GET).
	Get bool
}

func appendSet(b []byte, key string, value []byte, a SetArgs) []byte {
	n := 3
	if a.TTL != 0 {
		n += 2
	}
	if !a.ExpireAt.IsZero() {
		n += 2
	}
	for _, f := range [...]bool{a.KeepTTL, a.NX, a.XX, a.Get} {
		if f {
			n++
		}
	}
	b = resp.AppendArrayHeader(b, n)
	b = resp.AppendBulkString(b, "SET")
	b = resp.AppendBulkString(b, key)
	b = resp.AppendBulk(b, value)
	if a.TTL != 0 {
		if a.TTL%time.Second == 0 {
			b = resp.AppendBulkString(b, "EX")
			b = appendIntArg(b, int64(a.TTL/time.Second))
		} else {
			b = resp.AppendBulkString(b, "PX")
			b = appendIntArg(b, expireMillis(a.TTL))
		}
	}
	if !a.ExpireAt.IsZero() {
		b = resp.AppendBulkString(b, "PXAT")
		b = appendIntArg(b, a.ExpireAt.UnixMilli())
	}
	if a.KeepTTL {
		b = resp.AppendBulkString(b, "KEEPTTL")
	}
	if a.NX {
		b = resp.AppendBulkString(b, "NX")
	}
	if a.XX {
		b = resp.AppendBulkString(b, "XX")
	}
	if a.Get {
		b = resp.AppendBulkString(b, "GET")
	}
	return b
}

// Set sets key to value with the options in a. Without a.Get it returns
// (nil, nil) once the key is set, and (nil, Nil) if NX or XX kept it from
// being set. With a.Get it returns the old value, or Nil if there was none.
// Set does not keep value; the returned slice is the caller's. A plain Set
// does not allocate in the steady state.
func (c *Client) Set(ctx context.Context, key string, value []byte, a SetArgs) ([]byte, error) {
	r := c.getRequest()
	r.cmd = appendSet(r.cmd[:0], key, value, a)
	r.cls = classWrite
	res, err := c.exec(ctx, r)
	if err != nil {
		return nil, err
	}
	return setResult(res.val)
}

func setResult(v Value) ([]byte, error) {
	switch {
	case v.IsNil():
		return nil, Nil
	case v.kind == resp.KindSimpleString:
		return nil, nil
	}
	return v.Bytes()
}

// Del removes keys and returns how many existed.
func (c *Client) Del(ctx context.Context, keys ...string) (int64, error) {
	return intResult(c.doKeys(ctx, classWrite, "DEL", keys))
}

// Exists returns how many of keys exist (a key named twice counts twice).
func (c *Client) Exists(ctx context.Context, keys ...string) (int64, error) {
	return intResult(c.doKeys(ctx, classRead, "EXISTS", keys))
}

// Incr adds 1 to the integer value of key and returns the result.
func (c *Client) Incr(ctx context.Context, key string) (int64, error) {
	return intResult(c.doStrings(ctx, classWrite, "INCR", key))
}

// Decr subtracts 1 from the integer value of key and returns the result.
func (c *Client) Decr(ctx context.Context, key string) (int64, error) {
	return intResult(c.doStrings(ctx, classWrite, "DECR", key))
}

// IncrBy adds n to the integer value of key and returns the result.
func (c *Client) IncrBy(ctx context.Context, key string, n int64) (int64, error) {
	var tmp [24]byte
	return intResult(c.doStrings(ctx, classWrite, "INCRBY", key, string(strconv.AppendInt(tmp[:0], n, 10))))
}

// DecrBy subtracts n from the integer value of key and returns the result.
func (c *Client) DecrBy(ctx context.Context, key string, n int64) (int64, error) {
	var tmp [24]byte
	return intResult(c.doStrings(ctx, classWrite, "DECRBY", key, string(strconv.AppendInt(tmp[:0], n, 10))))
}

// MGet returns the values of keys, in order, with nil for a missing key.
// The slices are the caller's.
func (c *Client) MGet(ctx context.Context, keys ...string) ([][]byte, error) {
	res, err := c.doKeys(ctx, classRead, "MGET", keys)
	if err != nil {
		return nil, err
	}
	return bytesArray(res.val)
}

func bytesArray(v Value) ([][]byte, error) {
	elems, err := v.Array()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(elems))
	for i, e := range elems {
		if e.IsNil() {
			continue
		}
		if out[i], err = e.Bytes(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MSet sets every pair at once (atomically). It does not keep the slices.
func (c *Client) MSet(ctx context.Context, pairs ...KeyValue) error {
	r := c.getRequest()
	b := resp.AppendArrayHeader(r.cmd[:0], 1+2*len(pairs))
	b = resp.AppendBulkString(b, "MSET")
	for _, kv := range pairs {
		b = resp.AppendBulk(b, kv.Key)
		b = resp.AppendBulk(b, kv.Value)
	}
	r.cmd = b
	r.cls = classWrite
	_, err := c.exec(ctx, r)
	return err
}

// Expire makes key expire after ttl (EXPIRE, or PEXPIRE below whole
// seconds) and reports whether the key exists. A ttl of zero or less
// deletes the key, as in Redis.
func (c *Client) Expire(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	var tmp [24]byte
	var res result
	var err error
	if ttl%time.Second == 0 {
		res, err = c.doStrings(ctx, classWrite, "EXPIRE", key, string(strconv.AppendInt(tmp[:0], int64(ttl/time.Second), 10)))
	} else {
		res, err = c.doStrings(ctx, classWrite, "PEXPIRE", key, string(strconv.AppendInt(tmp[:0], expireMillis(ttl), 10)))
	}
	n, err := intResult(res, err)
	return n == 1, err
}

// expireMillis is ttl in whole milliseconds for PEXPIRE, at least 1 for a
// positive ttl: 0 would delete the key, which only a ttl of zero or less
// means.
func expireMillis(ttl time.Duration) int64 {
	ms := int64(ttl / time.Millisecond)
	if ttl > 0 {
		ms = max(ms, 1)
	}
	return ms
}

// TTL returns the time key has left to live (PTTL, millisecond precision),
// NoExpiry if it has no expiry, or Nil if it does not exist.
func (c *Client) TTL(ctx context.Context, key string) (time.Duration, error) {
	n, err := intResult(c.doStrings(ctx, classRead, "PTTL", key))
	switch {
	case err != nil:
		return 0, err
	case n == -2:
		return 0, Nil
	case n == -1:
		return NoExpiry, nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

// Persist removes the expiry of key and reports whether it had one.
func (c *Client) Persist(ctx context.Context, key string) (bool, error) {
	n, err := intResult(c.doStrings(ctx, classWrite, "PERSIST", key))
	return n == 1, err
}
