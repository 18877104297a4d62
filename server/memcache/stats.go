package memcache

import (
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

// stat names a counter reported by "stats".
type stat int

const (
	statCmdGet stat = iota
	statCmdSet
	statCmdFlush
	statCmdTouch
	statCmdMeta
	statGetHits
	statGetMisses
	statGetExpired
	statGetFlushed
	statDeleteMisses
	statDeleteHits
	statIncrMisses
	statIncrHits
	statDecrMisses
	statDecrHits
	statCasMisses
	statCasHits
	statCasBadval
	statTouchHits
	statTouchMisses
	statStoreTooLarge
	statStoreNoMemory
	statAuthCmds
	statAuthErrors
	statIdleKicks
	statBytesRead
	statBytesWritten
	statTotalItems
	statTotalConns
	statRejectedConns
	statUDPDropped
	numStats
)

// statNames are the names "stats" prints, in memcached's spelling.
var statNames = [numStats]string{
	statCmdGet:        "cmd_get",
	statCmdSet:        "cmd_set",
	statCmdFlush:      "cmd_flush",
	statCmdTouch:      "cmd_touch",
	statCmdMeta:       "cmd_meta",
	statGetHits:       "get_hits",
	statGetMisses:     "get_misses",
	statGetExpired:    "get_expired",
	statGetFlushed:    "get_flushed",
	statDeleteMisses:  "delete_misses",
	statDeleteHits:    "delete_hits",
	statIncrMisses:    "incr_misses",
	statIncrHits:      "incr_hits",
	statDecrMisses:    "decr_misses",
	statDecrHits:      "decr_hits",
	statCasMisses:     "cas_misses",
	statCasHits:       "cas_hits",
	statCasBadval:     "cas_badval",
	statTouchHits:     "touch_hits",
	statTouchMisses:   "touch_misses",
	statStoreTooLarge: "store_too_large",
	statStoreNoMemory: "store_no_memory",
	statAuthCmds:      "auth_cmds",
	statAuthErrors:    "auth_errors",
	statIdleKicks:     "idle_kicks",
	statBytesRead:     "bytes_read",
	statBytesWritten:  "bytes_written",
	statTotalItems:    "total_items",
	statTotalConns:    "total_connections",
	statRejectedConns: "rejected_connections",
	statUDPDropped:    "udp_dropped",
}

// counters are one set of statistics. Each connection and UDP worker has
// its own (uncontended atomics); the server folds a connection's counters
// into its own when the connection ends, and "stats" sums them all.
type counters [numStats]atomic.Uint64

func (c *counters) add(s stat, n uint64) { c[s].Add(n) }

func (c *counters) fold(o *counters) {
	for i := range c {
		c[i].Add(o[i].Load())
	}
}

func (c *counters) reset() {
	for i := range c {
		c[i].Store(0)
	}
}

// snapshot sums the server's counters with those of every live session.
func (s *Server) snapshot() [numStats]uint64 {
	var t [numStats]uint64
	add := func(c *counters) {
		for i := range c {
			t[i] += c[i].Load()
		}
	}
	s.mu.Lock()
	add(&s.stats.counters)
	for c := range s.conns {
		add(&c.sess.count)
	}
	for _, c := range s.udpCounters {
		add(c)
	}
	s.mu.Unlock()
	return t
}

// resetStats implements "stats reset".
func (s *Server) resetStats() {
	s.mu.Lock()
	s.stats.counters.reset()
	for c := range s.conns {
		c.sess.count.reset()
	}
	for _, c := range s.udpCounters {
		c.reset()
	}
	s.stats.totalConns.Store(0)
	s.stats.rejectedConns.Store(0)
	s.mu.Unlock()
}

// serverStats holds the server-wide counters.
type serverStats struct {
	counters
	totalConns    atomic.Uint64
	rejectedConns atomic.Uint64
}

func (st *serverStats) fold(c *counters) { st.counters.fold(c) }

func appendStat(b []byte, name string, v string) []byte {
	b = append(b, "STAT "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, v...)
	return append(b, "\r\n"...)
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

// generalStats appends the reply to "stats".
func (s *Server) generalStats(b []byte) []byte {
	now := time.Now()
	t := s.snapshot()
	t[statTotalConns] += s.stats.totalConns.Load()
	t[statRejectedConns] += s.stats.rejectedConns.Load()
	st := s.DB.Stats()
	user, sys := rusage()
	b = appendStat(b, "pid", strconv.Itoa(os.Getpid()))
	b = appendStat(b, "uptime", itoa(int64(now.Sub(s.start).Seconds())))
	b = appendStat(b, "time", itoa(now.Unix()))
	b = appendStat(b, "version", MemcachedVersion)
	b = appendStat(b, "pointer_size", strconv.Itoa(strconv.IntSize))
	b = appendStat(b, "rusage_user", user)
	b = appendStat(b, "rusage_system", sys)
	b = appendStat(b, "max_connections", strconv.Itoa(s.maxConns))
	b = appendStat(b, "curr_connections", itoa(s.nconns.Load()))
	b = appendStat(b, "total_connections", u64(t[statTotalConns]))
	b = appendStat(b, "rejected_connections", u64(t[statRejectedConns]))
	b = appendStat(b, "connection_structures", itoa(s.nconns.Load()))
	for _, k := range []stat{statCmdGet, statCmdSet, statCmdFlush, statCmdTouch, statCmdMeta,
		statGetHits, statGetMisses, statGetExpired, statGetFlushed,
		statDeleteMisses, statDeleteHits, statIncrMisses, statIncrHits,
		statDecrMisses, statDecrHits, statCasMisses, statCasHits, statCasBadval,
		statTouchHits, statTouchMisses, statStoreTooLarge, statStoreNoMemory,
		statAuthCmds, statAuthErrors, statIdleKicks, statBytesRead, statBytesWritten} {
		b = appendStat(b, statNames[k], u64(t[k]))
	}
	b = appendStat(b, "limit_maxbytes", "0")
	accepting := "1"
	if s.closing.Load() {
		accepting = "0"
	}
	b = appendStat(b, "accepting_conns", accepting)
	b = appendStat(b, "threads", strconv.Itoa(runtime.GOMAXPROCS(0)))
	b = appendStat(b, "curr_items", strconv.Itoa(st.Keys))
	b = appendStat(b, "total_items", u64(t[statTotalItems]))
	b = appendStat(b, "bytes", itoa(st.LiveBytes))
	b = appendStat(b, "evictions", "0")
	b = appendStat(b, "reclaimed", "0")
	b = appendStat(b, "udp_dropped", u64(t[statUDPDropped]))
	b = appendStat(b, "caskade_dead_bytes", itoa(st.DeadBytes))
	b = appendStat(b, "caskade_disk_bytes", itoa(st.DiskBytes))
	b = appendStat(b, "caskade_version", u64(st.Version))
	return append(b, "END\r\n"...)
}

// settingsStats appends the reply to "stats settings".
func (s *Server) settingsStats(b []byte) []byte {
	yn := func(v bool) string {
		if v {
			return "yes"
		}
		return "no"
	}
	b = appendStat(b, "maxbytes", "0")
	b = appendStat(b, "maxconns", strconv.Itoa(s.maxConns))
	b = appendStat(b, "tcpport", strconv.Itoa(int(s.tcpPort.Load())))
	b = appendStat(b, "udpport", strconv.Itoa(int(s.udpPort.Load())))
	b = appendStat(b, "verbosity", strconv.Itoa(int(s.verbosity.Load())))
	b = appendStat(b, "oldest", "0")
	b = appendStat(b, "evictions", "off")
	b = appendStat(b, "cas_enabled", "yes")
	b = appendStat(b, "item_size_max", strconv.Itoa(s.maxItemSize))
	b = appendStat(b, "idle_time", itoa(int64(s.IdleTimeout/time.Second)))
	b = appendStat(b, "binding_protocol", "ascii")
	password, protected := s.access.Get()
	b = appendStat(b, "auth_enabled_ascii", yn(password != ""))
	b = appendStat(b, "auth_enabled_sasl", "no")
	b = appendStat(b, "flush_enabled", "yes")
	b = appendStat(b, "client_flags_size", "4")
	b = appendStat(b, "num_threads", strconv.Itoa(runtime.GOMAXPROCS(0)))
	b = appendStat(b, "protected_mode", yn(protected && password == ""))
	b = appendStat(b, "max_line_length", strconv.Itoa(MaxLineLength))
	b = appendStat(b, "udp_workers", strconv.Itoa(s.udpWorkers))
	return append(b, "END\r\n"...)
}
