// Package metrics collects caskade's Prometheus metrics for all front ends
// (Redis, memcached, HTTP) and for the database under them.
//
// A Metrics owns its own prometheus.Registry: nothing is registered with the
// global default registry and the package has no init side effects, so
// several servers (or tests) in one process never collide. New registers the
// standard Go and process collectors and a collector that reads
// caskade.DB.Stats at scrape time (keys, live, dead and disk bytes, data
// files, open snapshots, commit version, merge progress, stopped writes).
//
// Front ends report through a small API that keeps label cardinality
// bounded: a protocol label from a fixed set (ProtocolRedis,
// ProtocolMemcache, ProtocolHTTP; anything else is counted as "unknown") and
// a command label from the names a server declared with RegisterCommands
// (anything else is counted as "unknown"). Command handles returned by
// Command resolve the label lookups once, so the per-command cost on a hot
// path is two counter increments and one histogram observation.
//
// Exported series:
//
//	caskade_commands_total{protocol,command}            counter
//	caskade_command_errors_total{protocol,command}      counter
//	caskade_command_duration_seconds{protocol,command}  histogram
//	caskade_connections{protocol}                       gauge (open now)
//	caskade_connections_total{protocol}                 counter (accepted)
//	caskade_connections_rejected_total{protocol}        counter (refused: limits, protected mode)
//	caskade_db_*                                        read from DB.Stats
//	caskade_merge_duration_seconds, caskade_merge_*     the engine's merges (DB.Stats)
//	caskade_sync_duration_seconds, caskade_sync_errors_total  the engine's fsyncs (DB.Stats)
//	go_*, process_*                                     standard collectors
//
// The merge and sync series cover every merge and every fsync of the
// active data file since the database was opened (see caskade.Stats), read
// at scrape time like the caskade_db_* series. Merge progress of a running
// merge is visible through caskade_db_merge_running and
// caskade_db_merge_bytes_done.
package metrics

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caskade/caskade"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Protocol labels. Other protocol names are reported as Unknown.
const (
	ProtocolRedis    = "redis"
	ProtocolMemcache = "memcache"
	ProtocolHTTP     = "http"
	// Unknown is the label used for protocols and commands that were not
	// declared, so that client input can never create new series.
	Unknown = "unknown"
)

// DefaultDurationBuckets are the command latency histogram buckets, in
// seconds: 10 µs to 2.5 s.
var DefaultDurationBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
}

// Metrics holds the collectors of one caskade process. Create it with New.
// All methods are safe for concurrent use, and all of them accept a nil
// *Metrics and then do nothing, so servers can call them unconditionally.
type Metrics struct {
	reg *prometheus.Registry

	commands  *prometheus.CounterVec
	errors    *prometheus.CounterVec
	durations *prometheus.HistogramVec

	conns         *prometheus.GaugeVec
	connsTotal    *prometheus.CounterVec
	connsRejected *prometheus.CounterVec

	mu      sync.Mutex                  // serialises RegisterCommands
	handles atomic.Pointer[handleTable] // copy-on-write protocol → command → handle
	protos  map[string]*protoHandles    // fixed set, built by New
}

// handleTable maps protocol and command names to resolved handles.
type handleTable map[string]map[string]*CommandHandle

// protoHandles are the resolved connection series of one protocol.
type protoHandles struct {
	open     prometheus.Gauge
	total    prometheus.Counter
	rejected prometheus.Counter
}

// CommandHandle records executions of one command of one protocol. Get one
// from Metrics.Command and keep it; its methods are safe for concurrent use
// and do nothing on a nil handle.
type CommandHandle struct {
	calls    prometheus.Counter
	errors   prometheus.Counter
	duration prometheus.Observer
}

// Observe records one execution that took d; err says whether it ended in
// an error reply.
func (h *CommandHandle) Observe(d time.Duration, err bool) {
	if h == nil {
		return
	}
	h.calls.Inc()
	if err {
		h.errors.Inc()
	}
	h.duration.Observe(d.Seconds())
}

// New returns a Metrics with its own registry holding the Go and process
// collectors, the command and connection series, and (if db is not nil) a
// collector that reads db.Stats() at every scrape. db is only read, never
// closed.
func New(db *caskade.DB) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.commands = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caskade", Name: "commands_total",
		Help: "Commands executed, by protocol and command.",
	}, []string{"protocol", "command"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caskade", Name: "command_errors_total",
		Help: "Commands that ended in an error reply, by protocol and command.",
	}, []string{"protocol", "command"})
	m.durations = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "caskade", Name: "command_duration_seconds",
		Help:    "Command execution time, by protocol and command.",
		Buckets: DefaultDurationBuckets,
	}, []string{"protocol", "command"})
	m.conns = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "caskade", Name: "connections",
		Help: "Client connections open now, by protocol.",
	}, []string{"protocol"})
	m.connsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caskade", Name: "connections_total",
		Help: "Client connections accepted, by protocol.",
	}, []string{"protocol"})
	m.connsRejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caskade", Name: "connections_rejected_total",
		Help: "Client connections refused (limits, protected mode), by protocol.",
	}, []string{"protocol"})
	m.reg.MustRegister(
		m.commands, m.errors, m.durations,
		m.conns, m.connsTotal, m.connsRejected,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	if db != nil {
		m.reg.MustRegister(newDBCollector(db))
	}
	m.protos = map[string]*protoHandles{}
	for _, p := range []string{ProtocolRedis, ProtocolMemcache, ProtocolHTTP, Unknown} {
		m.protos[p] = &protoHandles{
			open:     m.conns.WithLabelValues(p),
			total:    m.connsTotal.WithLabelValues(p),
			rejected: m.connsRejected.WithLabelValues(p),
		}
	}
	t := handleTable{}
	for p := range m.protos {
		t[p] = map[string]*CommandHandle{Unknown: m.newHandle(p, Unknown)}
	}
	m.handles.Store(&t)
	return m
}

func (m *Metrics) newHandle(protocol, command string) *CommandHandle {
	return &CommandHandle{
		calls:    m.commands.WithLabelValues(protocol, command),
		errors:   m.errors.WithLabelValues(protocol, command),
		duration: m.durations.WithLabelValues(protocol, command),
	}
}

func protocolLabel(p string) string {
	switch p {
	case ProtocolRedis, ProtocolMemcache, ProtocolHTTP:
		return p
	}
	return Unknown
}

// RegisterCommands declares the command names a protocol may report; names
// not declared are reported as "unknown". Call it once per server at start
// with the server's fixed command table (never with names taken from client
// input). Registering a name twice is harmless.
func (m *Metrics) RegisterCommands(protocol string, names ...string) {
	if m == nil {
		return
	}
	protocol = protocolLabel(protocol)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.handles.Load()
	t := make(handleTable, len(old))
	for p, cmds := range old {
		t[p] = cmds
	}
	cmds := make(map[string]*CommandHandle, len(old[protocol])+len(names))
	for n, h := range old[protocol] {
		cmds[n] = h
	}
	for _, n := range names {
		if _, ok := cmds[n]; !ok {
			cmds[n] = m.newHandle(protocol, n)
		}
	}
	t[protocol] = cmds
	m.handles.Store(&t)
}

// Command returns the handle for a command of a protocol, or the protocol's
// "unknown" handle if the name was not registered. It returns nil (whose
// methods do nothing) on a nil Metrics.
func (m *Metrics) Command(protocol, name string) *CommandHandle {
	if m == nil {
		return nil
	}
	t := *m.handles.Load()
	cmds := t[protocolLabel(protocol)]
	if h, ok := cmds[name]; ok {
		return h
	}
	return cmds[Unknown]
}

// ObserveCommand records one execution of a command: it is
// Command(protocol, name).Observe(d, err).
func (m *Metrics) ObserveCommand(protocol, name string, d time.Duration, err bool) {
	if m == nil {
		return
	}
	m.Command(protocol, name).Observe(d, err)
}

func (m *Metrics) proto(protocol string) *protoHandles {
	return m.protos[protocolLabel(protocol)]
}

// ConnOpened records an accepted client connection.
func (m *Metrics) ConnOpened(protocol string) {
	if m == nil {
		return
	}
	p := m.proto(protocol)
	p.open.Inc()
	p.total.Inc()
}

// ConnClosed records the end of a connection counted by ConnOpened.
func (m *Metrics) ConnClosed(protocol string) {
	if m == nil {
		return
	}
	m.proto(protocol).open.Dec()
}

// ConnRejected records a connection refused (too many clients, protected
// mode). Redis and memcached refuse such a connection before serving it;
// HTTP refuses a connection in protected mode with its first request that
// is not a health probe (and closes it), so that one was counted by
// ConnOpened too.
func (m *Metrics) ConnRejected(protocol string) {
	if m == nil {
		return
	}
	m.proto(protocol).rejected.Inc()
}

// Registry returns the registry holding every collector, for callers that
// want to add their own.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Handler returns an http.Handler serving the registry in the Prometheus
// exposition formats. On a nil Metrics it serves 404.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
