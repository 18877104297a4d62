package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/access"
	"github.com/caskade/caskade/server/metrics"
)

// Defaults for zero fields of Server, and fixed limits.
const (
	DefaultMaxBodyBytes      = 32 << 20
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = time.Minute
	DefaultWriteTimeout      = time.Minute
	DefaultIdleTimeout       = 2 * time.Minute
	// DefaultMaxConns is the default connection limit (Redis's default
	// maxclients).
	DefaultMaxConns = 10000
	// DefaultListLimit is the page size of GET /v1/kv without limit, and
	// MaxListLimit the largest page (larger limits are reduced to it).
	DefaultListLimit = 1000
	MaxListLimit     = 10000
	// MaxTxnOps bounds the compares and the operations of each branch of
	// a POST /v1/txn (as etcd's --max-txn-ops).
	MaxTxnOps = 128
	// MaxTxnReplyBytes bounds the keys and values (as JSON strings) that
	// the get and range operations of a POST /v1/txn may return, all
	// operations together; a transaction that reads more is not committed
	// and gets 400 reply_too_large.
	MaxTxnReplyBytes = 64 << 20
	// TxnTimeout bounds how long POST /v1/txn retries on conflicts.
	TxnTimeout = 10 * time.Second
	// maxHeaderBytes bounds the request line and headers: room for three
	// keys of caskade.DefaultMaxKeySize with every byte %-escaped (three
	// characters each), as a listing's prefix, start and end, so every
	// key the other protocols can write can be reached here.
	maxHeaderBytes = 9*caskade.DefaultMaxKeySize + 64<<10
)

// Server is caskade's HTTP API over a caskade.DB. It implements
// http.Handler; Serve and Shutdown run it on listeners with a net/http
// server configured from the fields (keep-alive, timeouts). Set the fields
// before first use and do not change them afterwards. A Server is safe for
// concurrent use.
type Server struct {
	// DB is the database served. It must be open; the Server never closes
	// it.
	DB *caskade.DB
	// Password, if set, is required as "Authorization: Bearer <password>"
	// on every request except /healthz and /readyz (compared in constant
	// time; 401 otherwise). Without it, protected mode applies.
	Password string
	// DisableProtectedMode serves clients from non-loopback addresses
	// without a Password. By default (protected mode, as in Redis) they get
	// 403.
	DisableProtectedMode bool
	// Access, if set, holds the password and protected mode instead of
	// Password and DisableProtectedMode (which are then ignored), shared
	// with other front ends and read on every request, so that a change
	// made through one of them (Redis's CONFIG SET requirepass or
	// protected-mode) applies to the next request.
	Access *access.Settings
	// MaxConns bounds the connections Serve serves at once, over all its
	// listeners (default DefaultMaxConns). A connection beyond it gets
	// 503 max_clients to its first request and is closed, as Redis
	// refuses a client beyond maxclients; it is counted in
	// caskade_connections_rejected_total, not as an accepted connection.
	MaxConns int
	// MaxBodyBytes bounds request bodies (PUT values, transactions);
	// larger ones get 413. Default 32 MiB.
	MaxBodyBytes int64
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout
	// configure the net/http server Serve runs (defaults 10 s, 1 min,
	// 1 min, 2 min; negative means none). IdleTimeout bounds keep-alive
	// connections between requests.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// EnablePprof serves the runtime profiles under /debug/pprof/ (behind
	// the same protection as the API). Off by default.
	EnablePprof bool
	// Metrics is served at /metrics and receives request metrics; nil
	// serves 404 there and records nothing.
	Metrics *metrics.Metrics
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger

	initOnce sync.Once
	log      *slog.Logger
	maxBody  int64
	maxConns int64
	access   *access.Settings // Access, or one made of Password and DisableProtectedMode
	routes   [numRoutes]*metrics.CommandHandle

	nconns atomic.Int64 // connections served, not refused
	conns  sync.Map     // net.Conn → *connInfo, while Serve serves it

	mu      sync.Mutex
	srv     *http.Server
	closing bool
	// stopped is set once Shutdown or Close waits for the handlers:
	// requests that reach ServeHTTP afterwards are refused, so that none
	// starts on the DB once they have returned.
	stopped  bool
	handlers sync.WaitGroup // requests running in ServeHTTP
	// base is the context of every request served by Serve; it is
	// cancelled when connections are closed, so that handlers waiting on
	// their request's context (transaction retries, profiles) end.
	base       context.Context
	cancelBase context.CancelFunc
}

// route identifies an endpoint, for metrics.
type route int

const (
	routeKVGet route = iota
	routeKVHead
	routeKVPut
	routeKVDelete
	routeKVList
	routeTxn
	routeMetrics
	routeHealthz
	routeReadyz
	routePprof
	routeUnknown
	numRoutes
)

var routeNames = [numRoutes]string{
	routeKVGet: "kv_get", routeKVHead: "kv_head", routeKVPut: "kv_put",
	routeKVDelete: "kv_delete", routeKVList: "kv_list", routeTxn: "txn",
	routeMetrics: "metrics", routeHealthz: "healthz", routeReadyz: "readyz",
	routePprof: "pprof", routeUnknown: "unknown",
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.log = s.Logger
		if s.log == nil {
			s.log = slog.New(slog.DiscardHandler)
		}
		s.maxBody = s.MaxBodyBytes
		if s.maxBody <= 0 {
			s.maxBody = DefaultMaxBodyBytes
		}
		s.maxConns = int64(s.MaxConns)
		if s.maxConns <= 0 {
			s.maxConns = DefaultMaxConns
		}
		s.access = s.Access
		if s.access == nil {
			s.access = access.New(s.Password, !s.DisableProtectedMode)
		}
		s.Metrics.RegisterCommands(metrics.ProtocolHTTP, routeNames[:]...)
		for i := range s.routes {
			s.routes[i] = s.Metrics.Command(metrics.ProtocolHTTP, routeNames[i])
		}
	})
}

func timeout(v, def time.Duration) time.Duration {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

func (s *Server) httpServer() (*http.Server, error) {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, http.ErrServerClosed
	}
	if s.srv == nil {
		s.base, s.cancelBase = context.WithCancel(context.Background())
		s.srv = &http.Server{
			Handler:           s,
			BaseContext:       func(net.Listener) context.Context { return s.base },
			ReadHeaderTimeout: timeout(s.ReadHeaderTimeout, DefaultReadHeaderTimeout),
			ReadTimeout:       timeout(s.ReadTimeout, DefaultReadTimeout),
			WriteTimeout:      timeout(s.WriteTimeout, DefaultWriteTimeout),
			IdleTimeout:       timeout(s.IdleTimeout, DefaultIdleTimeout),
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
			ConnContext:       s.connContext,
			ConnState:         s.connState,
		}
	}
	return s.srv, nil
}

// connInfo is what the Server knows of a connection Serve accepted.
type connInfo struct {
	refused bool // beyond MaxConns: its first request is refused
}

type connKey struct{}

// connContext admits a new connection under MaxConns, or marks it
// refused. The check and the count are one step, so listeners accepting
// at once never let more in.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	ci := &connInfo{}
	if s.nconns.Add(1) > s.maxConns {
		s.nconns.Add(-1)
		ci.refused = true
		s.Metrics.ConnRejected(metrics.ProtocolHTTP)
	}
	s.conns.Store(c, ci)
	return context.WithValue(ctx, connKey{}, ci)
}

// connState counts the connections served, for MaxConns and metrics.
// net/http reports StateNew after ConnContext, and StateClosed or
// StateHijacked once for every connection.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		if v, ok := s.conns.Load(c); ok && !v.(*connInfo).refused {
			s.Metrics.ConnOpened(metrics.ProtocolHTTP)
		}
	case http.StateClosed, http.StateHijacked:
		if v, ok := s.conns.LoadAndDelete(c); ok && !v.(*connInfo).refused {
			s.nconns.Add(-1)
			s.Metrics.ConnClosed(metrics.ProtocolHTTP)
		}
	}
}

// Serve serves HTTP on l (HTTP/1.1 with keep-alive) until Shutdown or
// Close, then returns http.ErrServerClosed. It may be called for several
// listeners.
func (s *Server) Serve(l net.Listener) error {
	if s.DB == nil {
		l.Close()
		return errors.New("httpapi: Server.DB is nil")
	}
	if s.MaxConns < 0 {
		l.Close()
		return errors.New("httpapi: negative Server.MaxConns")
	}
	srv, err := s.httpServer()
	if err != nil {
		l.Close()
		return err
	}
	return srv.Serve(l)
}

// Shutdown stops the listeners, waits for requests in progress to finish
// and closes idle connections, as http.Server.Shutdown does. If ctx ends
// first, it closes the remaining connections (as Close does) and returns
// ctx's error. Either way it returns only once every request has left
// ServeHTTP, so the DB may be closed then; requests that reach ServeHTTP
// afterwards get 503 closed. It does not close the DB.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		s.closeConns(srv)
	}
	s.waitHandlers()
	return err
}

// Close closes the listeners and all connections at once, cancels the
// context of the requests in progress and waits for them to leave
// ServeHTTP. It does not close the DB.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := s.closeConns(srv)
	s.waitHandlers()
	return err
}

// closeConns closes srv's listeners and connections and cancels its
// requests' context: a handler blocked writing to a client that does not
// read, or waiting on its context, returns.
func (s *Server) closeConns(srv *http.Server) error {
	s.cancelBase()
	return srv.Close()
}

// waitHandlers refuses further requests and waits for those in ServeHTTP.
func (s *Server) waitHandlers() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.handlers.Wait()
}

// enter counts a request in ServeHTTP, or reports false once Shutdown or
// Close waits for them. Under s.mu, every Add happens before that Wait.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.handlers.Add(1)
	return true
}

// statusWriter records the status of a response, for metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.init()
	if ci, ok := r.Context().Value(connKey{}).(*connInfo); ok && ci.refused {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusServiceUnavailable, "max_clients", "max number of clients reached")
		return
	}
	rt := classify(r.URL.Path, r.Method)
	if !s.enter() {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusServiceUnavailable, "closed", "the server is shutting down")
		return
	}
	defer s.handlers.Done()
	if s.Metrics == nil {
		s.serve(w, r, rt)
		return
	}
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	s.serve(sw, r, rt)
	st := sw.status
	if st == 0 {
		st = http.StatusOK
	}
	// Misses, failed preconditions and not-modified replies are normal
	// outcomes, not errors.
	failed := st >= 400 && st != http.StatusNotFound && st != http.StatusPreconditionFailed
	s.routes[rt].Observe(time.Since(start), failed)
}

const kvPrefix = "/v1/kv/"

// classify names the endpoint of a request, for metrics.
func classify(path, method string) route {
	switch {
	case strings.HasPrefix(path, kvPrefix):
		switch method {
		case http.MethodGet:
			return routeKVGet
		case http.MethodHead:
			return routeKVHead
		case http.MethodPut:
			return routeKVPut
		case http.MethodDelete:
			return routeKVDelete
		}
	case path == "/v1/kv":
		return routeKVList
	case path == "/v1/txn":
		return routeTxn
	case path == "/metrics":
		return routeMetrics
	case path == "/healthz":
		return routeHealthz
	case path == "/readyz":
		return routeReadyz
	case strings.HasPrefix(path, "/debug/pprof"):
		return routePprof
	}
	return routeUnknown
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt route) {
	switch rt {
	case routeHealthz:
		if !allowMethods(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return
	case routeReadyz:
		if !allowMethods(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		s.readyz(w)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	switch rt {
	case routeKVGet, routeKVHead, routeKVPut, routeKVDelete:
		s.kv(w, r)
	case routeKVList:
		if allowMethods(w, r, http.MethodGet, http.MethodHead) {
			s.list(w, r)
		}
	case routeTxn:
		if allowMethods(w, r, http.MethodPost) {
			s.txn(w, r)
		}
	case routeMetrics:
		if !allowMethods(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		if s.Metrics == nil {
			writeError(w, http.StatusNotFound, "not_found", "metrics are not enabled")
			return
		}
		s.Metrics.Handler().ServeHTTP(w, r)
	case routePprof:
		if !s.EnablePprof {
			writeError(w, http.StatusNotFound, "not_found", "profiling is not enabled")
			return
		}
		servePprof(w, r, timeout(s.WriteTimeout, DefaultWriteTimeout))
	default:
		if strings.HasPrefix(r.URL.Path, kvPrefix) {
			w.Header().Set("Allow", "GET, HEAD, PUT, DELETE")
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+" not allowed")
			return
		}
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.URL.Path)
	}
}

// authorized enforces protected mode and the bearer password.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	password, protected := s.access.Get()
	if password == "" {
		if !protected || isLoopback(r.RemoteAddr) {
			return true
		}
		// As Redis and memcached refuse such a client: the connection
		// is closed and counted as rejected.
		w.Header().Set("Connection", "close")
		s.Metrics.ConnRejected(metrics.ProtocolHTTP)
		writeError(w, http.StatusForbidden, "protected_mode",
			"caskade is running in protected mode: no password is set, so only loopback clients are served; set a password or disable protected mode")
		return false
	}
	const bearer = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) > len(bearer) && strings.EqualFold(h[:len(bearer)], bearer) {
		got, want := sha256.Sum256([]byte(h[len(bearer):])), sha256.Sum256([]byte(password))
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			return true
		}
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="caskade"`)
	writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token")
	return false
}

// isLoopback reports whether a RemoteAddr is a loopback address (or not an
// IP address at all, as for unix sockets).
func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	if host == "" || host == "@" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+" not allowed")
	return false
}

// readyz answers 200 when the database is open and accepts writes, and
// 503 otherwise: closed, writes_stopped (a failed write or fsync stopped
// them until a restart) or no_space (the last write was refused for lack
// of space and none has gone through since). Its messages name no file,
// and it logs nothing: a probe asks often, and the database and the
// refused writes logged the causes.
func (s *Server) readyz(w http.ResponseWriter) {
	tx, err := s.DB.Begin()
	if err != nil {
		s.writeDBError(w, err)
		return
	}
	tx.Rollback()
	switch werr := s.DB.WriteStatus(); {
	case werr == nil:
	case errors.Is(werr, caskade.ErrWritesStopped):
		writeError(w, http.StatusServiceUnavailable, "writes_stopped", s.errMessage("writes_stopped", werr))
		return
	default:
		writeError(w, http.StatusServiceUnavailable, "no_space",
			"the disk is full: the last write was refused for lack of space, and none has gone through since")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
