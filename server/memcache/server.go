package memcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/access"
	"github.com/caskade/caskade/server/internal/storerr"
	"github.com/caskade/caskade/server/metrics"
	"github.com/caskade/caskade/server/netloop"
)

// Defaults for zero fields of Server, and fixed protocol limits.
const (
	// DefaultMaxItemSize is the default largest value (memcached's -I).
	DefaultMaxItemSize = 1 << 20
	// DefaultMaxConns is the default connection limit (memcached's -c).
	DefaultMaxConns = 1024
	// MaxKeyLength is the longest key memcached accepts.
	MaxKeyLength = 250
	// MaxLineLength is the longest command line other than get and gets: a
	// line without a newline in its first MaxLineLength bytes closes the
	// connection, as in memcached.
	MaxLineLength = 2048
	// MaxGetLineLength bounds the command line of get and gets (and gat
	// and gats), which memcached lets grow with the number of keys.
	MaxGetLineLength = 1 << 20
	// MaxOpaqueLength is the longest meta O(opaque) token.
	MaxOpaqueLength = 32
	// MaxUDPPayload is the largest datagram the server sends, header
	// included (memcached's UDP_MAX_PAYLOAD_SIZE); each carries
	// MaxUDPPayload-8 bytes of reply.
	MaxUDPPayload = 1400
	// MaxUDPRequest is the largest datagram read; a request must fit one.
	MaxUDPRequest = 65536
	// DefaultCursorLimit is the number of keys the okdb cursor returns
	// when no limit is given, and MaxCursorLimit the most it returns.
	DefaultCursorLimit = 100
	MaxCursorLimit     = 10000
	// MemcachedVersion is the memcached release whose protocol caskade
	// follows; "version" replies with it.
	MemcachedVersion = "1.6.45"
	// relativeExpiryLimit is the largest exptime taken as relative seconds
	// (30 days); larger values are Unix times.
	relativeExpiryLimit = 60 * 60 * 24 * 30
)

// Server serves the memcached text and meta protocols over TCP (Serve) and
// UDP (ServeUDP) on top of a caskade.DB. Set the exported fields before the
// first call of Serve or ServeUDP and do not change them afterwards. A Server
// is safe for concurrent use; Serve and ServeUDP may run for several
// listeners at once.
type Server struct {
	// DB is the database served. It must be open; the Server never closes
	// it (its owner does, after Shutdown).
	DB *caskade.DB
	// MaxItemSize is the largest value a storage command may carry
	// (default 1 MiB). Larger ones get "SERVER_ERROR object too large for
	// cache" and their data is skipped.
	MaxItemSize int
	// MaxConns bounds the number of open TCP connections (default 1024).
	// Further clients get "ERROR Too many open connections" and are
	// disconnected, as memcached does.
	MaxConns int
	// IdleTimeout closes a TCP connection that sends nothing for longer
	// while it should send a command (0: never), as memcached's
	// idle_timeout does; a stall in the middle of a data block is not
	// idleness. A client that takes
	// none of its replies for that long is closed too; one that reads them
	// slowly is not.
	IdleTimeout time.Duration
	// Password, if set, requires memcached's ASCII authentication on every
	// TCP connection: the first command must be "set <any key> <flags>
	// <exptime> <bytes>" whose data is "<username> <password>" (the
	// username is not checked). The password is compared in constant time.
	// UDP cannot authenticate, so ServeUDP refuses to run with a password.
	Password string
	// DisableProtectedMode accepts clients from non-loopback addresses
	// without a Password. By default (protected mode) such TCP clients get
	// "SERVER_ERROR ..." and are disconnected, and such UDP datagrams are
	// dropped.
	DisableProtectedMode bool
	// Access, if set, holds the password and protected mode instead of
	// Password and DisableProtectedMode (which are then ignored), shared
	// with other front ends, so that a change made through one of them
	// (Redis's CONFIG SET requirepass or protected-mode) applies here too:
	// to connections accepted after it, and to every UDP datagram (which
	// are dropped while a password is set).
	Access *access.Settings
	// UDPWorkers is the number of goroutines reading datagrams in each
	// ServeUDP (default GOMAXPROCS).
	UDPWorkers int
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Metrics receives command and connection metrics; nil records none.
	Metrics *metrics.Metrics
	// EventLoops is the number of event loops serving TCP connections
	// (see loop.go): 0 means one per processor (GOMAXPROCS), and a
	// negative number serves every connection on a goroutine of its own.
	// Event loops exist on Linux; elsewhere every connection has a
	// goroutine.
	EventLoops int

	initOnce sync.Once
	// Effective settings (defaults applied), fixed by init.
	maxItemSize int
	maxConns    int
	udpWorkers  int
	log         *slog.Logger
	cmdh        [numCommands]*metrics.CommandHandle
	items       *itemStates
	access      *access.Settings // Access, or one made of Password and DisableProtectedMode
	storeErrs   storerr.Reporter

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	packets   map[net.PacketConn]struct{}
	conns     map[*conn]struct{}
	// udpCounters are the counters of the running UDP workers.
	udpCounters []*counters
	closing     atomic.Bool
	wg          sync.WaitGroup

	nconns    atomic.Int64
	start     time.Time
	stats     serverStats
	verbosity atomic.Int32
	tcpPort   atomic.Int32
	udpPort   atomic.Int32

	flushMu    sync.Mutex
	flushTimer *time.Timer

	loops      netloop.Pool
	turns      []*turnCommits // of each loop
	syncAlways bool           // the DB syncs every commit: commands that write leave the loops

	cursorSkips int // keys a cursor request may skip (0: maxCursorSkips; tests lower it)
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.log = s.Logger
		if s.log == nil {
			s.log = slog.New(slog.DiscardHandler)
		}
		s.initLoops()
		s.access = s.Access
		if s.access == nil {
			s.access = access.New(s.Password, !s.DisableProtectedMode)
		}
		s.maxItemSize = s.MaxItemSize
		if s.maxItemSize <= 0 {
			s.maxItemSize = DefaultMaxItemSize
		}
		s.maxConns = s.MaxConns
		if s.maxConns <= 0 {
			s.maxConns = DefaultMaxConns
		}
		s.udpWorkers = s.UDPWorkers
		if s.udpWorkers <= 0 {
			s.udpWorkers = runtime.GOMAXPROCS(0)
		}
		s.listeners = map[net.Listener]struct{}{}
		s.packets = map[net.PacketConn]struct{}{}
		s.conns = map[*conn]struct{}{}
		s.start = time.Now()
		s.items = newItemStates(itemStateCapacity)
		s.Metrics.RegisterCommands(metrics.ProtocolMemcache, commandNames[:]...)
		for i := range s.cmdh {
			s.cmdh[i] = s.Metrics.Command(metrics.ProtocolMemcache, commandNames[i])
		}
	})
}

// Validate reports a configuration Serve would refuse.
func (s *Server) Validate() error {
	switch {
	case s.DB == nil:
		return ErrNoDB
	case s.MaxItemSize < 0:
		return fmt.Errorf("memcache: negative MaxItemSize %d", s.MaxItemSize)
	case s.MaxConns < 0:
		return fmt.Errorf("memcache: negative MaxConns %d", s.MaxConns)
	case s.IdleTimeout < 0:
		return fmt.Errorf("memcache: negative IdleTimeout %v", s.IdleTimeout)
	}
	return nil
}

// Serve accepts connections on l and serves each in its own goroutine until
// Shutdown or Close, then returns ErrServerClosed (or the accept error
// that stopped it; temporary accept errors are retried). It closes l when
// it returns.
func (s *Server) Serve(l net.Listener) error {
	if err := s.Validate(); err != nil {
		l.Close()
		return err
	}
	s.init()
	if !s.track(l, true) {
		l.Close()
		return ErrServerClosed
	}
	defer s.track(l, false)
	defer l.Close()
	if a, ok := l.Addr().(*net.TCPAddr); ok {
		s.tcpPort.Store(int32(a.Port))
	}
	var delay time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			var ne net.Error
			var te interface{ Temporary() bool }
			if errors.As(err, &ne) && ne.Timeout() || errors.As(err, &te) && te.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("memcache: accept error; retrying", "err", err, "delay", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.accept(nc)
	}
}

func (s *Server) track(l net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.closing.Load() {
			return false
		}
		s.listeners[l] = struct{}{}
		return true
	}
	delete(s.listeners, l)
	return true
}

// accept starts serving nc, or refuses it (limits, protected mode).
func (s *Server) accept(nc net.Conn) {
	s.stats.totalConns.Add(1)
	if s.access.Refuses() && !isLoopback(nc.RemoteAddr()) {
		s.stats.rejectedConns.Add(1)
		s.Metrics.ConnRejected(metrics.ProtocolMemcache)
		s.log.Warn("memcache: refused non-loopback client in protected mode", "remote", nc.RemoteAddr().String())
		go refuse(nc, "SERVER_ERROR protected mode: connections from non-loopback addresses are refused while no password is set\r\n")
		return
	}
	if s.nconns.Add(1) > int64(s.maxConns) {
		s.nconns.Add(-1)
		s.stats.rejectedConns.Add(1)
		s.Metrics.ConnRejected(metrics.ProtocolMemcache)
		go refuse(nc, "ERROR Too many open connections\r\n")
		return
	}
	c := newConn(s, nc, s.loops.Wrap(nc))
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		s.nconns.Add(-1)
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.Metrics.ConnOpened(metrics.ProtocolMemcache)
	c.gone = func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.stats.fold(&c.sess.count) // under mu: counted exactly once
		s.mu.Unlock()
		s.nconns.Add(-1)
		s.Metrics.ConnClosed(metrics.ProtocolMemcache)
		s.wg.Done()
	}
	if c.lc == nil || !s.attach(c) {
		go c.serve()
	}
}

// refuse sends a last line to a refused client and closes the connection,
// off the accept loop (a client that does not read cannot stall it).
func refuse(nc net.Conn, line string) {
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	nc.Write([]byte(line))
	nc.Close()
}

// isLoopback reports whether a is a loopback IP address or a unix socket.
func isLoopback(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UDPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	case nil:
		return false
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		host = a.String()
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback() || a.Network() == "pipe"
}

// Shutdown stops the server gracefully: it closes the listeners and UDP
// sockets, lets every connection finish the commands it has already
// received (replies are flushed), and waits for the connections to end.
// If ctx ends first it closes the remaining connections and returns
// ctx.Err(). Shutdown does not close the DB. A pending delayed flush_all
// is cancelled.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.beginClose()
	s.mu.Lock()
	for c := range s.conns {
		c.interrupt()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.loops.Close()
		return nil
	case <-ctx.Done():
		s.closeConns()
		<-done
		s.loops.Close()
		return ctx.Err()
	}
}

// Close closes the listeners, UDP sockets and every connection at once and
// waits for their goroutines to end. It does not close the DB.
func (s *Server) Close() error {
	s.init()
	s.beginClose()
	s.closeConns()
	s.wg.Wait()
	s.loops.Close()
	return nil
}

func (s *Server) beginClose() {
	s.mu.Lock()
	s.closing.Store(true)
	for l := range s.listeners {
		l.Close()
	}
	for p := range s.packets {
		p.Close()
	}
	s.mu.Unlock()
	s.flushMu.Lock()
	if s.flushTimer != nil {
		s.flushTimer.Stop()
		s.flushTimer = nil
	}
	s.flushMu.Unlock()
}

func (s *Server) closeConns() {
	s.mu.Lock()
	for c := range s.conns {
		c.kill()
	}
	s.mu.Unlock()
}

// observe records the metrics of a command that ran from start to end.
func (s *Server) observe(cmd commandID, start, end time.Time, failed bool) {
	if s.Metrics == nil {
		return
	}
	s.cmdh[cmd].Observe(end.Sub(start), failed)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
