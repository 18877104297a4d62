package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
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

// Defaults for zero fields of Server.
const (
	DefaultMaxClients      = 10000
	DefaultDatabases       = 16
	DefaultSlowlogSlower   = 10 * time.Millisecond
	DefaultSlowlogMaxLen   = 128
	DefaultProtoMaxBulkLen = 512 << 20
	// DefaultTrackingTableMaxKeys is the default tracking-table-max-keys
	// (Redis's): the most keys the CLIENT TRACKING table remembers.
	DefaultTrackingTableMaxKeys = 1_000_000
	// MaxDatabases is the largest Databases value: database n > 0 lives
	// under the two-byte key prefix 0xff n.
	MaxDatabases = 256
	// RedisVersion is the Redis version caskade reports (HELLO, INFO
	// redis_version): the Redis release whose behaviour it follows.
	RedisVersion = "7.4.0"
)

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("redis: server closed")

// Server serves the Redis protocol (RESP2 and RESP3) over any number of
// listeners, on top of a caskade.DB. Set the exported fields before the
// first call of Serve and do not change them afterwards; runtime changes
// (CONFIG SET) are kept internally. A Server is safe for concurrent use;
// Serve may be called for several listeners at once.
type Server struct {
	// DB is the database served. It must be open; the Server never closes
	// it (its owner does, after Shutdown).
	DB *caskade.DB
	// Password, if set, is required (AUTH or HELLO AUTH) before any
	// command but AUTH, HELLO, QUIT and RESET. It is compared in constant
	// time. CONFIG SET requirepass changes it at run time.
	Password string
	// DisableProtectedMode accepts clients from non-loopback addresses
	// even without a Password. By default (protected mode, as in Redis)
	// such clients get a DENIED error and are disconnected.
	DisableProtectedMode bool
	// Access, if set, holds the password and protected mode instead of
	// Password and DisableProtectedMode (which are then ignored), shared
	// with other front ends: CONFIG SET requirepass and protected-mode
	// change them for every server given the same Settings.
	Access *access.Settings
	// MaxClients bounds the number of connected clients (default 10000).
	MaxClients int
	// IdleTimeout closes a client connection idle for longer (0: never).
	IdleTimeout time.Duration
	// Databases is the number of databases SELECT can choose from
	// (default 16, at most MaxDatabases).
	Databases int
	// SlowlogSlowerThan is the execution time above which a command is
	// logged in the SLOWLOG (default 10 ms; negative disables the log,
	// and a tiny positive value such as 1ns logs every command).
	SlowlogSlowerThan time.Duration
	// SlowlogMaxLen is the number of SLOWLOG entries kept (default 128).
	SlowlogMaxLen int
	// ProtoMaxBulkLen is the largest bulk string (argument) a client may
	// send once authenticated, and the largest value APPEND or SETRANGE may
	// build (default 512 MiB, Redis's proto-max-bulk-len).
	ProtoMaxBulkLen int64
	// Sync is ignored: CONFIG GET appendfsync and INFO persistence
	// report the policy DB was opened with (DB.SyncPolicy).
	//
	// Deprecated: set nothing; a Server left at the zero value here
	// reported "always" whatever its DB did.
	Sync caskade.SyncPolicy
	// Version is caskade's version, reported by INFO (caskade_version).
	Version string
	// ConfigFile is reported by INFO (config_file).
	ConfigFile string
	// BackupDir is where SAVE and BGSAVE write backups, each into a new
	// directory named after its time; empty disables them. It is never
	// chosen by a client.
	BackupDir string
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Metrics, if set, receives per-command counts, errors and latencies
	// and connection counts (see package metrics).
	Metrics *metrics.Metrics
	// ShutdownFunc is called by the SHUTDOWN command. It should stop the
	// process gracefully (for example by cancelling its context). If nil,
	// SHUTDOWN makes the Server shut itself down (Shutdown in a new
	// goroutine) without closing the DB.
	ShutdownFunc func()
	// EventLoops is the number of event loops serving TCP and unix socket
	// clients (see loop.go): 0 means one per processor (GOMAXPROCS), and
	// a negative number serves every client on a goroutine of its own.
	// Event loops exist on Linux; elsewhere every client has a goroutine.
	EventLoops int

	initOnce  sync.Once
	databases int // Databases with its default
	cfg       runtimeConfig
	log       *slog.Logger
	cmds      *commandTable

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	clients   map[*client]struct{}
	// byID indexes clients by id: an invalidation for a client that
	// REDIRECTs looks its target up, under the tracker's lock.
	byID map[int64]*client
	// idProbes counts the clients looked at to find one by id, for tests
	// of how the work grows.
	idProbes int
	closing  bool
	done     chan struct{} // closed when closing
	wg       sync.WaitGroup

	nextID      atomic.Int64
	nclients    atomic.Int64
	start       time.Time
	runID       string
	track       *tracker
	pause       pauser        // CLIENT PAUSE
	watchReg    watchRegistry // the WATCHed keys
	monitors    monitorSet
	slow        slowlog
	stats       serverStats
	scanCursor  scanCursors
	lastSave    atomic.Int64  // unix seconds
	saveVersion atomic.Uint64 // the DB version the last backup holds (or at start): rdb_changes_since_last_save
	saveStart   atomic.Int64  // unix nanoseconds of the backup running, or 0
	saveSecs    atomic.Int64  // seconds the last backup took, or -1
	saves       atomic.Int64  // backups written
	loaded      dbLoad        // the DB at start, for INFO persistence
	panics      atomic.Int64  // connections that panicked (a bug)
	bgsave      atomic.Bool
	merging     atomic.Bool
	saveFailed  atomic.Bool // the last SAVE or BGSAVE failed (INFO's rdb_last_bgsave_status)
	mergeFailed atomic.Bool // the last BGREWRITEAOF failed (aof_last_bgrewrite_status)
	storeErrs   storerr.Reporter
	unsub       func()

	loops      netloop.Pool
	turns      []*turnCommits // of each loop
	syncAlways bool           // the DB syncs every commit: commits leave the loops

	writeTimeout time.Duration // 0: the constant writeTimeout (tests shorten it)
}

// runtimeConfig holds the settings CONFIG SET may change: the access
// settings, shared with the other front ends, and the values under mu.
type runtimeConfig struct {
	mu     sync.RWMutex
	access *access.Settings // requirepass, protected-mode
	configValues
	// Copies read on every command, without the lock.
	idleAtomic     atomic.Int64 // time.Duration
	bulkAtomic     atomic.Int64
	slowAtomic     atomic.Int64 // slowlogSlower
	trackMaxAtomic atomic.Int64 // trackingMaxKeys
}

// configValues are the settings of this server alone that CONFIG SET may
// change.
type configValues struct {
	maxClients      int
	idleTimeout     time.Duration
	slowlogSlower   time.Duration
	slowlogHuge     int64 // the setting in µs when slowlogSlower is math.MaxInt64
	slowlogMaxLen   int
	protoMaxBulkLen int64
	// trackingMaxKeys is tracking-table-max-keys (0: no limit), read
	// lock-free through trackMaxAtomic.
	trackingMaxKeys int64
}

// configChange is what a CONFIG SET would make of the settings: each of
// its parameters is checked and applied to a configChange first, and the
// whole is published only if every one was valid (runtimeConfig.apply),
// so that no front end sees a part of it.
type configChange struct {
	configValues
	// The access settings, changed if their ...Set is true.
	password                      string
	protectedMode                 bool
	passwordSet, protectedModeSet bool
}

// apply publishes ch; the caller holds mu for writing. The access
// settings change in one step, so that the other front ends see the
// password and protected mode of before or after it, never a mix.
func (c *runtimeConfig) apply(ch *configChange) {
	c.configValues = ch.configValues
	if ch.passwordSet || ch.protectedModeSet {
		c.access.Update(func(password *string, protectedMode *bool) {
			if ch.passwordSet {
				*password = ch.password
			}
			if ch.protectedModeSet {
				*protectedMode = ch.protectedMode
			}
		})
	}
	c.publish()
}

type serverStats struct {
	connections    atomic.Int64
	rejected       atomic.Int64
	commands       atomic.Int64
	netIn          atomic.Int64
	netOut         atomic.Int64
	hits, misses   atomic.Int64
	errorReplies   atomic.Int64
	errMu          sync.Mutex
	errorCounts    map[string]int64
	trackingClient atomic.Int64
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.log = s.Logger
		if s.log == nil {
			s.log = slog.New(slog.DiscardHandler)
		}
		s.initLoops()
		c := &s.cfg
		c.access = s.Access
		if c.access == nil {
			c.access = access.New(s.Password, !s.DisableProtectedMode)
		}
		c.maxClients = s.MaxClients
		if c.maxClients <= 0 {
			c.maxClients = DefaultMaxClients
		}
		c.idleTimeout = s.IdleTimeout
		c.slowlogSlower = s.SlowlogSlowerThan
		if c.slowlogSlower == 0 {
			c.slowlogSlower = DefaultSlowlogSlower
		}
		c.slowlogMaxLen = s.SlowlogMaxLen
		if c.slowlogMaxLen <= 0 {
			c.slowlogMaxLen = DefaultSlowlogMaxLen
		}
		c.protoMaxBulkLen = s.ProtoMaxBulkLen
		if c.protoMaxBulkLen <= 0 {
			c.protoMaxBulkLen = DefaultProtoMaxBulkLen
		}
		c.trackingMaxKeys = DefaultTrackingTableMaxKeys
		c.publish()
		// Not written back to s.Databases: Serve for another listener
		// may be reading it (Validate) meanwhile.
		s.databases = s.Databases
		if s.databases <= 0 {
			s.databases = DefaultDatabases
		}
		if s.databases > MaxDatabases {
			s.databases = MaxDatabases
		}
		s.cmds = newCommandTable()
		if s.Metrics != nil {
			names := make([]string, len(s.cmds.list))
			for i, cmd := range s.cmds.list {
				names[i] = cmd.name
			}
			s.Metrics.RegisterCommands(metrics.ProtocolRedis, names...)
			for _, cmd := range s.cmds.list {
				cmd.metric = s.Metrics.Command(metrics.ProtocolRedis, cmd.name)
				for _, sub := range cmd.sub {
					sub.metric = cmd.metric // subcommands count under their command
				}
			}
		}
		s.listeners = map[net.Listener]struct{}{}
		s.clients = map[*client]struct{}{}
		s.byID = map[int64]*client{}
		s.done = make(chan struct{})
		s.start = time.Now()
		s.lastSave.Store(s.start.Unix())
		s.saveSecs.Store(-1)
		if s.DB != nil {
			st := s.DB.Stats()
			s.saveVersion.Store(st.Version)
			s.loaded = dbLoad{keys: st.Keys}
			for _, f := range st.Files {
				s.loaded.size += f.Size
			}
		}
		s.runID = newRunID()
		s.stats.errorCounts = map[string]int64{}
		s.track = newTracker(s)
		s.scanCursor.init()
		if s.DB != nil {
			s.unsub = s.DB.SubscribeOrigins(func(changed, expired [][]byte, origins []any) {
				// A key that expires is a change to those who WATCHed
				// it while it lived, which EXEC's version check sees;
				// dropping one that was expired already when WATCHed
				// is none, as in Redis.
				s.watchReg.touch(changed)
				keys := changed
				if len(expired) > 0 {
					keys = append(changed[:len(changed):len(changed)], expired...)
				}
				s.track.onCommit(keys, origins) // origins covers changed, then expired
			})
		}
	})
}

// Validate reports a configuration Serve would refuse.
func (s *Server) Validate() error {
	switch {
	case s.DB == nil:
		return errors.New("redis: Server.DB is nil")
	case s.Databases > MaxDatabases:
		return fmt.Errorf("redis: Databases %d exceeds %d", s.Databases, MaxDatabases)
	case s.Databases < 0:
		return fmt.Errorf("redis: negative Databases %d", s.Databases)
	case s.MaxClients < 0:
		return fmt.Errorf("redis: negative MaxClients %d", s.MaxClients)
	case s.IdleTimeout < 0:
		return fmt.Errorf("redis: negative IdleTimeout %v", s.IdleTimeout)
	}
	return nil
}

// Serve accepts connections on l and serves each in its own goroutine
// until Shutdown or Close, then returns ErrServerClosed. It closes l when
// it returns. TLS is served by passing a listener from tls.NewListener.
func (s *Server) Serve(l net.Listener) error {
	if err := s.Validate(); err != nil {
		l.Close()
		return err
	}
	s.init()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
	}()
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			select {
			case <-s.done:
				return ErrServerClosed
			default:
			}
			if isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("redis: accept error; retrying", "err", err, "delay", backoff)
				select {
				case <-time.After(backoff):
				case <-s.done:
					return ErrServerClosed
				}
				continue
			}
			return err
		}
		backoff = 0
		s.accept(nc)
	}
}

// isTemporary reports whether an accept error is worth retrying (too many
// open files and the like).
func isTemporary(err error) bool {
	type temporary interface{ Temporary() bool }
	var t temporary
	var ne net.Error
	return (errors.As(err, &t) && t.Temporary()) || (errors.As(err, &ne) && ne.Timeout())
}

// maxClientsReached is Redis's refusal of a client beyond maxclients.
const maxClientsReached = "-ERR max number of clients reached\r\n"

// reserveClient takes a client slot, or reports false (counting the
// refusal) if maxclients clients are connected. The check and the count
// are one atomic step, so listeners accepting at once never let more in.
// The slot is given back with s.nclients.Add(-1).
func (s *Server) reserveClient() bool {
	s.cfg.mu.RLock()
	maxc := int64(s.cfg.maxClients)
	s.cfg.mu.RUnlock()
	for {
		n := s.nclients.Load()
		if n >= maxc {
			s.stats.rejected.Add(1)
			s.Metrics.ConnRejected(metrics.ProtocolRedis)
			return false
		}
		if s.nclients.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// rejectProtected counts and logs a client refused in protected mode, as
// reserveClient counts one refused beyond maxclients (rejected_connections
// and caskade_connections_rejected_total).
func (s *Server) rejectProtected(nc net.Conn) {
	s.stats.rejected.Add(1)
	s.Metrics.ConnRejected(metrics.ProtocolRedis)
	s.log.Warn("redis: refused a non-loopback client in protected mode", "addr", addrString(nc.RemoteAddr()))
}

func (s *Server) accept(nc net.Conn) {
	s.stats.connections.Add(1)
	if s.protectedRefuses(nc.RemoteAddr()) {
		s.rejectProtected(nc)
		refuse(nc, deniedProtectedMode)
		return
	}
	if !s.reserveClient() {
		refuse(nc, maxClientsReached)
		return
	}
	c := newClient(s, nc)
	c.lc = s.loops.Wrap(nc)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.nclients.Add(-1)
		nc.Close()
		return
	}
	s.clients[c] = struct{}{}
	s.byID[c.id] = c
	s.wg.Add(1)
	s.mu.Unlock()
	s.Metrics.ConnOpened(metrics.ProtocolRedis)
	c.gone = func() {
		s.mu.Lock()
		delete(s.clients, c)
		delete(s.byID, c.id)
		s.mu.Unlock()
		s.nclients.Add(-1)
		s.Metrics.ConnClosed(metrics.ProtocolRedis)
		s.wg.Done()
	}
	if c.lc == nil || !s.attach(c) {
		go c.serve()
	}
}

// refuse sends a refused connection its error and closes it, on a
// goroutine of its own and within a second: on a TLS connection the write
// first runs the handshake, which waits for the client, so a client that
// connects and sends nothing would otherwise stop the accept loop.
func refuse(nc net.Conn, reply string) {
	go func() {
		nc.SetDeadline(time.Now().Add(time.Second))
		nc.Write([]byte(reply))
		nc.Close()
	}()
}

// ServeConn serves one already accepted connection on the calling
// goroutine until it closes. Protected mode and MaxClients are applied as
// for accepted connections. It is meant for tests and for embedding
// behind a custom transport.
func (s *Server) ServeConn(nc net.Conn) error {
	if err := s.Validate(); err != nil {
		nc.Close()
		return err
	}
	s.init()
	if s.protectedRefuses(nc.RemoteAddr()) {
		s.rejectProtected(nc)
		nc.Write([]byte(deniedProtectedMode))
		return nc.Close()
	}
	if !s.reserveClient() {
		nc.Write([]byte(maxClientsReached))
		return nc.Close()
	}
	c := newClient(s, nc)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.nclients.Add(-1)
		return nc.Close()
	}
	s.clients[c] = struct{}{}
	s.byID[c.id] = c
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.clients, c)
		delete(s.byID, c.id)
		s.mu.Unlock()
		s.nclients.Add(-1)
		s.wg.Done()
	}()
	c.serve()
	return nil
}

// Shutdown stops the server gracefully: it closes the listeners, lets
// every connection finish the commands it is executing (their replies are
// sent), closes the connections, and waits for them, or until ctx is done
// (then it closes the remaining connections at once and returns ctx's
// error). It does not close the DB; sync and close it afterwards.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.beginClose()
	waited := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		s.loops.Close()
		return nil
	case <-ctx.Done():
		s.Close()
		<-waited
		s.loops.Close()
		return ctx.Err()
	}
}

// Close closes the listeners and every connection at once, without
// waiting for commands in flight. It does not close the DB.
func (s *Server) Close() error {
	s.init()
	s.beginClose()
	s.mu.Lock()
	for c := range s.clients {
		c.kill()
	}
	s.mu.Unlock()
	go func() {
		s.wg.Wait()
		s.loops.Close()
	}()
	return nil
}

func (s *Server) beginClose() {
	s.mu.Lock()
	var unsub func()
	if !s.closing {
		s.closing = true
		close(s.done)
		unsub = s.unsub
	}
	for l := range s.listeners {
		l.Close()
	}
	for c := range s.clients {
		c.interrupt()
	}
	s.mu.Unlock()
	// Held clients were interrupted: they end without running their
	// commands, and no timer outlives the server.
	s.pause.unpause()
	// Outside s.mu: the subscription callback may be waiting for s.mu.
	if unsub != nil {
		unsub()
	}
}

// Addrs returns the addresses of the listeners being served.
func (s *Server) Addrs() []net.Addr {
	s.init()
	return s.addrs()
}

func (s *Server) addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	var a []net.Addr
	for l := range s.listeners {
		a = append(a, l.Addr())
	}
	return a
}

// port returns the TCP port of a listener, for INFO and CONFIG GET.
func (s *Server) port() int {
	for _, a := range s.addrs() {
		if t, ok := a.(*net.TCPAddr); ok {
			return t.Port
		}
	}
	return 0
}

func (s *Server) bindAddrs() string {
	var out string
	for _, a := range s.addrs() {
		if t, ok := a.(*net.TCPAddr); ok {
			if out != "" {
				out += " "
			}
			out += t.IP.String()
		}
	}
	return out
}

func (s *Server) clientByID(id int64) *client {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idProbes++
	return s.byID[id]
}

func (s *Server) allClients() []*client {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*client, 0, len(s.clients))
	for c := range s.clients {
		out = append(out, c)
	}
	sortClients(out)
	return out
}

func (s *Server) countError(msg string) {
	code := msg
	for i := 0; i < len(msg); i++ {
		if msg[i] == ' ' {
			code = msg[:i]
			break
		}
	}
	if len(code) > 64 {
		code = code[:64]
	}
	s.stats.errorReplies.Add(1)
	s.stats.errMu.Lock()
	if _, ok := s.stats.errorCounts[code]; ok || len(s.stats.errorCounts) < 128 {
		s.stats.errorCounts[code]++
	} else {
		s.stats.errorCounts["ERRORSTATS_OVERFLOW"]++
	}
	s.stats.errMu.Unlock()
}

func newRunID() string {
	var b [20]byte
	if f, err := os.Open("/dev/urandom"); err == nil {
		f.Read(b[:])
		f.Close()
	} else {
		t := time.Now().UnixNano()
		for i := range b {
			b[i] = byte(t >> (8 * (i % 8)))
		}
	}
	const hex = "0123456789abcdef"
	out := make([]byte, 40)
	for i, x := range b {
		out[2*i], out[2*i+1] = hex[x>>4], hex[x&15]
	}
	return string(out)
}

func addrString(a net.Addr) string {
	if a == nil {
		return "?:0"
	}
	switch t := a.(type) {
	case *net.TCPAddr:
		if ip4 := t.IP.To4(); ip4 != nil {
			return ip4.String() + ":" + strconv.Itoa(t.Port)
		}
		return "[" + t.IP.String() + "]:" + strconv.Itoa(t.Port)
	case *net.UnixAddr:
		return t.Name + ":0"
	}
	return a.String()
}

// publish updates the lock-free copies; the caller holds mu (or owns c).
func (c *runtimeConfig) publish() {
	c.idleAtomic.Store(int64(c.idleTimeout))
	c.bulkAtomic.Store(c.protoMaxBulkLen)
	c.slowAtomic.Store(int64(c.slowlogSlower))
	c.trackMaxAtomic.Store(c.trackingMaxKeys)
}

// dbLoad is what the database held when the server started (INFO's
// rdb_last_load_keys_loaded and, until a merge, aof_base_size).
type dbLoad struct {
	keys int
	size int64
}
