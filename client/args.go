package client

import (
	"encoding"
	"fmt"
	"strconv"

	"github.com/caskade/caskade/resp"
)

// appendArgs encodes a command of arbitrary arguments. Supported types:
// string, []byte, every integer type, float32, float64, bool (1 or 0),
// encoding.BinaryMarshaler and fmt.Stringer.
func appendArgs(b []byte, args []any) ([]byte, error) {
	if len(args) == 0 {
		return b, fmt.Errorf("%w: empty command", ErrArgType)
	}
	b = resp.AppendArrayHeader(b, len(args))
	for i, a := range args {
		var err error
		if b, err = appendArg(b, a); err != nil {
			return b, fmt.Errorf("argument %d: %w", i, err)
		}
	}
	return b, nil
}

func appendArg(b []byte, a any) ([]byte, error) {
	switch v := a.(type) {
	case string:
		return resp.AppendBulkString(b, v), nil
	case []byte:
		return resp.AppendBulk(b, v), nil
	case int:
		return appendIntArg(b, int64(v)), nil
	case int64:
		return appendIntArg(b, v), nil
	case int32:
		return appendIntArg(b, int64(v)), nil
	case int16:
		return appendIntArg(b, int64(v)), nil
	case int8:
		return appendIntArg(b, int64(v)), nil
	case uint:
		return appendUintArg(b, uint64(v)), nil
	case uint64:
		return appendUintArg(b, v), nil
	case uint32:
		return appendUintArg(b, uint64(v)), nil
	case uint16:
		return appendUintArg(b, uint64(v)), nil
	case uint8:
		return appendUintArg(b, uint64(v)), nil
	case float64:
		return appendFloatArg(b, v, 64), nil
	case float32:
		return appendFloatArg(b, float64(v), 32), nil
	case bool:
		if v {
			return resp.AppendBulkString(b, "1"), nil
		}
		return resp.AppendBulkString(b, "0"), nil
	case encoding.BinaryMarshaler:
		p, err := v.MarshalBinary()
		if err != nil {
			return b, err
		}
		return resp.AppendBulk(b, p), nil
	case fmt.Stringer:
		return resp.AppendBulkString(b, v.String()), nil
	}
	return b, fmt.Errorf("%w: %T", ErrArgType, a)
}

// appendIntArg appends n as a bulk string without allocating.
func appendIntArg(b []byte, n int64) []byte {
	var tmp [24]byte
	return resp.AppendBulk(b, strconv.AppendInt(tmp[:0], n, 10))
}

func appendUintArg(b []byte, n uint64) []byte {
	var tmp [24]byte
	return resp.AppendBulk(b, strconv.AppendUint(tmp[:0], n, 10))
}

func appendFloatArg(b []byte, f float64, bits int) []byte {
	var tmp [32]byte
	return resp.AppendBulk(b, strconv.AppendFloat(tmp[:0], f, 'f', -1, bits))
}

// Command classes, deciding where a command may run.
type class uint8

const (
	classWrite    class = iota // may change data: never re-sent once it may have executed
	classRead                  // reads only: re-sent once after a connection failure
	classBlocking              // may block for long: runs on a dedicated connection
	classStateful              // changes connection state: only on a Conn
)

// argName returns the bytes of a command-name argument (string or []byte).
func argName(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case []byte:
		return string(v) // only compared, does not escape
	}
	return ""
}

// lowerName lower-cases a command name into buf (ASCII), for a switch
// without allocating.
func lowerName(buf []byte, s string) []byte {
	if len(s) > len(buf) {
		return nil
	}
	buf = buf[:len(s)]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf
}

// classify returns the class of a command from its name and, for commands
// with subcommands, the second argument.
func classify(args []any) class {
	if len(args) == 0 {
		return classWrite
	}
	var buf [32]byte
	name := lowerName(buf[:], argName(args[0]))
	switch string(name) {
	case "get", "mget", "exists", "ttl", "pttl", "expiretime", "pexpiretime", "strlen",
		"getrange", "substr", "type", "keys", "scan", "dbsize", "randomkey", "echo", "ping",
		"time", "lastsave", "info", "lcs", "touch", "object",
		"csk.range", "csk.rangesel", "csk.getkey", "csk.version",
		"hget", "hgetall", "hmget", "hexists", "hlen", "hkeys", "hvals", "hscan",
		"llen", "lrange", "lindex", "scard", "smembers", "sismember", "sscan",
		"zcard", "zscore", "zrange", "zrangebyscore", "zrank", "zscan":
		return classRead
	case "select", "auth", "hello", "reset", "quit", "multi", "exec", "discard", "watch",
		"unwatch", "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe",
		"sunsubscribe", "monitor", "readonly", "readwrite", "asking", "sync", "psync",
		"replconf", "csk.begin", "csk.commit", "csk.rollback", "csk.snapshot":
		return classStateful
	case "blpop", "brpop", "brpoplpush", "blmove", "blmpop", "bzpopmin", "bzpopmax",
		"bzmpop", "xread", "xreadgroup", "wait", "waitaof":
		return classBlocking
	case "client":
		if len(args) < 2 {
			return classWrite
		}
		var sb [16]byte
		switch string(lowerName(sb[:], argName(args[1]))) {
		case "tracking", "setname", "reply", "caching", "no-evict", "no-touch", "setinfo":
			return classStateful
		case "id", "info", "getname", "list", "trackinginfo", "getredir":
			return classRead
		}
	}
	return classWrite
}
