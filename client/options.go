package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"runtime"
	"time"
)

// Defaults applied to zero fields of Options.
const (
	DefaultDialTimeout     = 5 * time.Second
	DefaultReadTimeout     = 3 * time.Second
	DefaultWriteTimeout    = 3 * time.Second
	DefaultMaxRetries      = 3
	DefaultMinRetryBackoff = 8 * time.Millisecond
	DefaultMaxRetryBackoff = 512 * time.Millisecond
	DefaultMaxIdleConns    = 8
	DefaultWatchRetries    = 100
)

// DefaultPoolSize returns the number of auto-pipelined connections a Client
// uses when Options.PoolSize is zero: a quarter of GOMAXPROCS, between 1
// and 8. Few connections carry many concurrent callers, because each
// connection batches the commands queued on it into one write, and fewer
// connections batch more: on 2 cores one connection gave 64 goroutines
// about 1.6x the throughput of two.
func DefaultPoolSize() int {
	return min(max(runtime.GOMAXPROCS(0)/4, 1), 8)
}

// Options configure a Client. The zero value (or a nil *Options) means every
// default. Options are copied by Dial; changing them afterwards has no effect.
type Options struct {
	// Username and Password authenticate each connection (HELLO AUTH, or
	// AUTH with RESP2). An empty Username with a Password authenticates
	// as the user "default".
	Username string
	Password string
	// DB is the database selected (SELECT) on every connection.
	DB int
	// ClientName is set on every connection (HELLO SETNAME, or CLIENT
	// SETNAME with RESP2).
	ClientName string
	// Protocol is the RESP version: 3 (the default) tries HELLO 3 and
	// falls back to RESP2 when the server refuses it; 2 never sends HELLO.
	Protocol int

	// DialTimeout bounds dialing and the connection handshake (default
	// DefaultDialTimeout; a context deadline that comes first wins).
	DialTimeout time.Duration
	// ReadTimeout bounds the wait for a reply (default DefaultReadTimeout;
	// negative: no limit). On an auto-pipelined connection it is a
	// liveness check, applied to within an eighth: when replies are
	// awaited and none has arrived for that long, the connection is
	// considered broken and closed. On a dedicated connection (Conn,
	// Watch, Transact) it applies to each reply when the call's context
	// has no deadline. Blocking commands (BLPOP, ...) are bounded by their
	// context only.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write to the server (default
	// DefaultWriteTimeout; negative: no limit).
	WriteTimeout time.Duration

	// PoolSize is the number of connections shared, with automatic
	// pipelining, by concurrent callers (default DefaultPoolSize()).
	PoolSize int
	// MaxIdleConns is the number of idle dedicated connections (used by
	// Conn, Watch, Transact and blocking commands) kept for reuse
	// (default DefaultMaxIdleConns; negative: none).
	MaxIdleConns int

	// MaxRetries is how many times a call re-dials a broken connection or
	// re-sends a command that never reached the server (default
	// DefaultMaxRetries; negative: never). Commands that may have
	// executed are re-sent only if they are idempotent (see Idempotent).
	MaxRetries int
	// MinRetryBackoff and MaxRetryBackoff bound the exponential backoff,
	// with jitter, between dial attempts (defaults DefaultMinRetryBackoff
	// and DefaultMaxRetryBackoff).
	MinRetryBackoff time.Duration
	MaxRetryBackoff time.Duration
	// WatchRetries bounds the attempts of Watch when EXEC reports that a
	// watched key changed (default DefaultWatchRetries).
	WatchRetries int

	// TLSConfig, if set, makes connections use TLS. If its ServerName is
	// empty, the host of the address is used.
	TLSConfig *tls.Config
	// Dialer, if set, opens the network connections instead of a
	// net.Dialer. network is "tcp" or "unix".
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Validate reports a field with a value that has no meaning.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	switch {
	case o.DB < 0:
		return fmt.Errorf("%w: DB %d is negative", ErrInvalidOptions, o.DB)
	case o.Protocol != 0 && o.Protocol != 2 && o.Protocol != 3:
		return fmt.Errorf("%w: Protocol %d is not 2 or 3", ErrInvalidOptions, o.Protocol)
	case o.DialTimeout < 0:
		return fmt.Errorf("%w: DialTimeout is negative", ErrInvalidOptions)
	case o.PoolSize < 0:
		return fmt.Errorf("%w: PoolSize %d is negative", ErrInvalidOptions, o.PoolSize)
	case o.PoolSize > 1024:
		return fmt.Errorf("%w: PoolSize %d is above 1024", ErrInvalidOptions, o.PoolSize)
	case o.MinRetryBackoff < 0 || o.MaxRetryBackoff < 0:
		return fmt.Errorf("%w: retry backoff is negative", ErrInvalidOptions)
	case o.MinRetryBackoff > 0 && o.MaxRetryBackoff > 0 && o.MinRetryBackoff > o.MaxRetryBackoff:
		return fmt.Errorf("%w: MinRetryBackoff %v is above MaxRetryBackoff %v", ErrInvalidOptions, o.MinRetryBackoff, o.MaxRetryBackoff)
	case o.WatchRetries < 0:
		return fmt.Errorf("%w: WatchRetries is negative", ErrInvalidOptions)
	case o.Username != "" && o.Password == "":
		return fmt.Errorf("%w: Username without Password", ErrInvalidOptions)
	}
	return nil
}

// withDefaults returns a copy with zero fields set to their defaults and
// "no limit" negatives turned into zero.
func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Protocol == 0 {
		r.Protocol = 3
	}
	if r.DialTimeout == 0 {
		r.DialTimeout = DefaultDialTimeout
	}
	r.ReadTimeout = defaultDuration(r.ReadTimeout, DefaultReadTimeout)
	r.WriteTimeout = defaultDuration(r.WriteTimeout, DefaultWriteTimeout)
	if r.PoolSize == 0 {
		r.PoolSize = DefaultPoolSize()
	}
	switch {
	case r.MaxIdleConns == 0:
		r.MaxIdleConns = DefaultMaxIdleConns
	case r.MaxIdleConns < 0:
		r.MaxIdleConns = 0
	}
	switch {
	case r.MaxRetries == 0:
		r.MaxRetries = DefaultMaxRetries
	case r.MaxRetries < 0:
		r.MaxRetries = 0
	}
	if r.MinRetryBackoff == 0 {
		r.MinRetryBackoff = min(DefaultMinRetryBackoff, max(r.MaxRetryBackoff, time.Millisecond))
	}
	if r.MaxRetryBackoff == 0 {
		r.MaxRetryBackoff = max(DefaultMaxRetryBackoff, r.MinRetryBackoff)
	}
	if r.WatchRetries == 0 {
		r.WatchRetries = DefaultWatchRetries
	}
	if r.TLSConfig != nil {
		r.TLSConfig = r.TLSConfig.Clone()
	}
	return r
}

func defaultDuration(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}
