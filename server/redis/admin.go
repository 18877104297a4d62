package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/internal/storerr"
)

// INFO.

var defaultInfoSections = []string{"server", "clients", "memory", "persistence", "stats",
	"replication", "cpu", "modules", "errorstats", "cluster", "keyspace"}

var allInfoSections = []string{"server", "clients", "memory", "persistence", "stats",
	"replication", "cpu", "modules", "commandstats", "errorstats", "cluster", "keyspace"}

func cmdInfo(c *client, args [][]byte) {
	want := map[string]bool{}
	if len(args) == 1 {
		for _, s := range defaultInfoSections {
			want[s] = true
		}
	}
	for _, a := range args[1:] {
		switch s := strings.ToLower(string(cstr(a))); s {
		case "default":
			for _, s := range defaultInfoSections {
				want[s] = true
			}
		case "all", "everything":
			for _, s := range allInfoSections {
				want[s] = true
			}
		case "module_list":
			want["modules"] = true
		default:
			want[s] = true
		}
	}
	c.replyVerbatim(c.s.info(c, want))
}

func bytesToHuman(n int64) string {
	f := float64(n)
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + "B"
	case n < 1<<20:
		return fmt.Sprintf("%.2fK", f/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.2fM", f/(1<<20))
	case n < 1<<40:
		return fmt.Sprintf("%.2fG", f/(1<<30))
	}
	return fmt.Sprintf("%.2fT", f/(1<<40))
}

func (s *Server) info(c *client, want map[string]bool) string {
	var b strings.Builder
	sections := 0
	section := func(name, title string) bool {
		if !want[name] {
			return false
		}
		if sections > 0 {
			b.WriteString("\r\n")
		}
		sections++
		b.WriteString("# " + title + "\r\n")
		return true
	}
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s:%v\r\n", k, v) }
	now := time.Now()
	uptime := int64(now.Sub(s.start).Seconds())
	s.cfg.mu.RLock()
	maxClients := s.cfg.maxClients
	s.cfg.mu.RUnlock()
	if section("server", "Server") {
		kv("redis_version", RedisVersion)
		kv("redis_git_sha1", "00000000")
		kv("redis_git_dirty", 0)
		kv("redis_build_id", "0")
		kv("redis_mode", "standalone")
		kv("os", runtime.GOOS+" "+runtime.GOARCH)
		kv("arch_bits", strconv.Itoa(32<<(^uint(0)>>63)))
		kv("monotonic_clock", "POSIX clock_gettime")
		kv("multiplexing_api", "epoll")
		kv("atomicvar_api", "c11-builtin")
		kv("gcc_version", "0.0.0")
		kv("process_id", os.Getpid())
		kv("process_supervised", "no")
		kv("run_id", s.runID)
		kv("tcp_port", s.port())
		kv("server_time_usec", now.UnixMicro())
		kv("uptime_in_seconds", uptime)
		kv("uptime_in_days", uptime/86400)
		kv("hz", 10)
		kv("configured_hz", 10)
		kv("lru_clock", now.Unix()&(1<<24-1))
		exe, _ := os.Executable()
		kv("executable", exe)
		kv("config_file", s.ConfigFile)
		kv("io_threads_active", 0)
		kv("caskade_version", s.Version)
		kv("go_version", runtime.Version())
	}
	if section("clients", "Clients") {
		kv("connected_clients", s.nclients.Load())
		kv("cluster_connections", 0)
		kv("maxclients", maxClients)
		kv("client_recent_max_input_buffer", 0)
		kv("client_recent_max_output_buffer", 0)
		kv("blocked_clients", 0)
		kv("tracking_clients", s.stats.trackingClient.Load())
		kv("pubsub_clients", 0)
		kv("watching_clients", 0)
		kv("clients_in_timeout_table", 0)
		kv("total_watched_keys", 0)
		kv("total_blocking_keys", 0)
		kv("total_blocking_keys_on_nokey", 0)
	}
	var dbStats caskade.Stats
	if want["memory"] || want["persistence"] || want["keyspace"] || want["stats"] {
		dbStats = s.DB.Stats()
	}
	if section("memory", "Memory") {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		used := int64(ms.HeapAlloc)
		kv("used_memory", used)
		kv("used_memory_human", bytesToHuman(used))
		kv("used_memory_rss", ms.Sys)
		kv("used_memory_rss_human", bytesToHuman(int64(ms.Sys)))
		kv("used_memory_peak", ms.HeapSys)
		kv("used_memory_peak_human", bytesToHuman(int64(ms.HeapSys)))
		kv("used_memory_overhead", 0)
		kv("used_memory_startup", 0)
		kv("used_memory_dataset", used)
		kv("total_system_memory", 0)
		kv("used_memory_lua", 0)
		kv("used_memory_scripts", 0)
		kv("maxmemory", 0)
		kv("maxmemory_human", "0B")
		kv("maxmemory_policy", "noeviction")
		kv("mem_fragmentation_ratio", fmt.Sprintf("%.2f", float64(ms.Sys)/float64(max(used, 1))))
		kv("mem_allocator", "go")
		kv("caskade_disk_bytes", dbStats.DiskBytes)
		kv("caskade_live_bytes", dbStats.LiveBytes)
		kv("caskade_dead_bytes", dbStats.DeadBytes)
	}
	if section("persistence", "Persistence") {
		// As Redis's: err from a failed write until a write succeeds;
		// for good once writes are stopped.
		status := okOrErr(dbStats.WriteError != nil || dbStats.WriteRefused != nil)
		kv("loading", 0)
		kv("async_loading", 0)
		kv("current_cow_peak", 0)
		kv("current_cow_size", 0)
		kv("current_cow_size_age", 0)
		kv("current_fork_perc", "0.00")
		kv("current_save_keys_processed", 0)
		kv("current_save_keys_total", 0)
		// A backup (SAVE, BGSAVE) is our RDB save; a merge of the data
		// files, BGREWRITEAOF's or the engine's own, our AOF rewrite.
		kv("rdb_changes_since_last_save", dbStats.Version-min(s.saveVersion.Load(), dbStats.Version))
		kv("rdb_bgsave_in_progress", b2i(s.bgsave.Load()))
		kv("rdb_last_save_time", s.lastSave.Load())
		kv("rdb_last_bgsave_status", okOrErr(s.saveFailed.Load()))
		kv("rdb_last_bgsave_time_sec", s.saveSecs.Load())
		saveSecs := int64(-1)
		if t := s.saveStart.Load(); t != 0 {
			saveSecs = int64(time.Since(time.Unix(0, t)).Seconds())
		}
		kv("rdb_current_bgsave_time_sec", saveSecs)
		kv("rdb_saves", s.saves.Load())
		kv("rdb_last_cow_size", 0)
		kv("rdb_last_load_keys_expired", 0)
		kv("rdb_last_load_keys_loaded", s.loaded.keys)
		kv("aof_enabled", 1)
		kv("aof_rewrite_in_progress", b2i(s.merging.Load() || dbStats.Merge.Running))
		kv("aof_rewrite_scheduled", 0)
		lastMerge, curMerge := int64(-1), int64(-1)
		if dbStats.Merges > 0 {
			lastMerge = int64(dbStats.LastMerge.Duration.Seconds())
		}
		if dbStats.Merge.Running {
			curMerge = int64(time.Since(dbStats.Merge.Started).Seconds())
		}
		kv("aof_last_rewrite_time_sec", lastMerge)
		kv("aof_current_rewrite_time_sec", curMerge)
		kv("aof_last_bgrewrite_status", okOrErr(s.mergeFailed.Load() || dbStats.MergeFailures > 0))
		kv("aof_rewrites", dbStats.Merges)
		kv("aof_rewrites_consecutive_failures", dbStats.MergeFailures)
		kv("aof_last_write_status", status)
		kv("aof_last_cow_size", 0)
		kv("module_fork_in_progress", 0)
		kv("module_fork_last_cow_size", 0)
		var size int64
		for _, f := range dbStats.Files {
			size += f.Size
		}
		base := s.loaded.size
		if dbStats.Merges > 0 {
			base = dbStats.LastMerge.OutputBytes
		}
		kv("aof_current_size", size)
		kv("aof_base_size", base)
		kv("aof_pending_rewrite", 0)
		kv("aof_buffer_length", 0)
		kv("aof_pending_bio_fsync", 0)
		kv("aof_delayed_fsync", 0)
		kv("caskade_sync", s.DB.SyncPolicy().String())
		kv("caskade_data_files", len(dbStats.Files))
		kv("caskade_version", dbStats.Version)
	}
	if section("stats", "Stats") {
		tk, ti, tp := s.track.totals()
		kv("total_connections_received", s.stats.connections.Load())
		kv("total_commands_processed", s.stats.commands.Load())
		kv("instantaneous_ops_per_sec", 0)
		kv("total_net_input_bytes", s.stats.netIn.Load())
		kv("total_net_output_bytes", s.stats.netOut.Load())
		kv("total_net_repl_input_bytes", 0)
		kv("total_net_repl_output_bytes", 0)
		kv("instantaneous_input_kbps", "0.00")
		kv("instantaneous_output_kbps", "0.00")
		kv("rejected_connections", s.stats.rejected.Load())
		kv("sync_full", 0)
		kv("sync_partial_ok", 0)
		kv("sync_partial_err", 0)
		kv("expired_keys", dbStats.ExpiredKeys)
		kv("evicted_keys", 0)
		kv("evicted_clients", 0)
		kv("keyspace_hits", s.stats.hits.Load())
		kv("keyspace_misses", s.stats.misses.Load())
		kv("pubsub_channels", 0)
		kv("pubsub_patterns", 0)
		kv("latest_fork_usec", 0)
		kv("total_forks", 0)
		kv("tracking_total_keys", tk)
		kv("tracking_total_items", ti)
		kv("tracking_total_prefixes", tp)
		kv("unexpected_error_replies", 0)
		kv("total_error_replies", s.stats.errorReplies.Load())
	}
	if section("replication", "Replication") {
		kv("role", "master")
		kv("connected_slaves", 0)
		kv("master_failover_state", "no-failover")
		kv("master_replid", s.runID)
		kv("master_replid2", strings.Repeat("0", 40))
		kv("master_repl_offset", 0)
		kv("second_repl_offset", -1)
		kv("repl_backlog_active", 0)
		kv("repl_backlog_size", 1048576)
		kv("repl_backlog_first_byte_offset", 0)
		kv("repl_backlog_histlen", 0)
	}
	if section("cpu", "CPU") {
		var self, children syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &self)
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
		tv := func(t syscall.Timeval) string { return fmt.Sprintf("%d.%06d", t.Sec, t.Usec) }
		kv("used_cpu_sys", tv(self.Stime))
		kv("used_cpu_user", tv(self.Utime))
		kv("used_cpu_sys_children", tv(children.Stime))
		kv("used_cpu_user_children", tv(children.Utime))
	}
	section("modules", "Modules")
	if section("commandstats", "Commandstats") {
		emit := func(cmd *command) {
			calls, usec := cmd.calls.Load(), cmd.usec.Load()
			rej, fail := cmd.rejected.Load(), cmd.failed.Load()
			if calls == 0 && rej == 0 && fail == 0 {
				return
			}
			per := 0.0
			if calls > 0 {
				per = float64(usec) / float64(calls)
			}
			fmt.Fprintf(&b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
				cmd.name, calls, usec, per, rej, fail)
		}
		for _, cmd := range s.cmds.list {
			emit(cmd)
			for _, sub := range sortedSubs(cmd) {
				emit(sub)
			}
		}
	}
	if section("errorstats", "Errorstats") {
		s.stats.errMu.Lock()
		codes := make([]string, 0, len(s.stats.errorCounts))
		for k := range s.stats.errorCounts {
			codes = append(codes, k)
		}
		sort.Strings(codes)
		for _, k := range codes {
			fmt.Fprintf(&b, "errorstat_%s:count=%d\r\n", k, s.stats.errorCounts[k])
		}
		s.stats.errMu.Unlock()
	}
	if section("cluster", "Cluster") {
		kv("cluster_enabled", 0)
	}
	if section("keyspace", "Keyspace") {
		for _, ks := range s.keyspace(dbStats) {
			fmt.Fprintf(&b, "db%d:keys=%d,expires=%d,avg_ttl=%d,subexpiry=0\r\n", ks.db, ks.keys, ks.expires, ks.avgTTL)
		}
	}
	return b.String()
}

type keyspaceStat struct {
	db                    int
	keys, expires, avgTTL int64
}

// keyspace counts the keys of each database. Databases above 0 are
// counted by iterating them; database 0 gets the rest of the engine's
// totals, so INFO stays cheap when most keys are in database 0 (its
// avg_ttl is then not computed and reported as 0).
func (s *Server) keyspace(st caskade.Stats) []keyspaceStat {
	var out []keyspaceStat
	// Database 0's counts are the totals minus the others', counted as
	// the totals count them: with the keys that expired but were not
	// dropped yet, which the iterator below skips (and may drop), or
	// database 0 would count those.
	var otherKeys, otherExp int64
	if n, x, err := s.DB.CountKeys([]byte{dbPrefixByte}, nil); err == nil {
		otherKeys, otherExp = int64(n), int64(x)
	}
	it, err := s.DB.NewIterator(&caskade.IterOptions{LowerBound: []byte{dbPrefixByte}})
	if err == nil {
		nowMs := time.Now().UnixMilli()
		cur := keyspaceStat{db: -1}
		// A sum of milliseconds in int64 would overflow with a thousand
		// keys that expire a few hundred years ahead (PEXPIREAT allows
		// it); an average needs no more than a float's precision.
		var ttlSum float64
		flush := func() {
			if cur.db > 0 && cur.keys > 0 {
				if cur.expires > 0 {
					cur.avgTTL = int64(ttlSum / float64(cur.expires))
				}
				out = append(out, cur)
			}
		}
		for ok := it.First(); ok; ok = it.Next() {
			_, db, valid := userKey(it.Key())
			info := it.Info()
			if !valid || db >= s.databases {
				continue
			}
			if db != cur.db {
				flush()
				cur, ttlSum = keyspaceStat{db: db}, 0
			}
			cur.keys++
			if !info.ExpiresAt.IsZero() {
				cur.expires++
				ttlSum += float64(max(info.ExpiresAt.UnixMilli()-nowMs, 0))
			}
		}
		flush()
		it.Close()
	}
	k0 := max(int64(st.Keys)-otherKeys, 0)
	e0 := max(int64(st.ExpiringKeys)-otherExp, 0)
	if k0 > 0 {
		out = append([]keyspaceStat{{db: 0, keys: k0, expires: min(e0, k0)}}, out...)
	}
	return out
}

func sortedSubs(cmd *command) []*command {
	if cmd.sub == nil {
		return nil
	}
	out := make([]*command, 0, len(cmd.sub))
	for _, s := range cmd.sub {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// CONFIG.

type configParam struct {
	name string
	get  func(s *Server) string
	// set checks v and applies it to ch, the change a CONFIG SET makes;
	// it returns an error text, "" on success.
	set func(ch *configChange, v string) string
	// immutable parameters refuse CONFIG SET; protected ones (file paths)
	// too, with Redis's "protected config" error.
	immutable, protected bool
}

func boolText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// setInt parses v as Redis parses an integer parameter (string2ll: no
// blanks, signs other than a leading '-', fractions or exponents) and
// applies it if it is within [lo, hi].
func setInt(v string, lo, hi int64, apply func(int64)) string {
	n, ok := string2ll([]byte(v))
	if !ok {
		return "argument couldn't be parsed into an integer"
	}
	return setInRange(n, lo, hi, apply)
}

func setInRange(n, lo, hi int64, apply func(int64)) string {
	if n < lo || n > hi {
		return fmt.Sprintf("argument must be between %d and %d inclusive", lo, hi)
	}
	apply(n)
	return ""
}

// setMem parses v as Redis parses a memory parameter (memtoull): decimal
// digits and an optional unit, b, k (1000), kb (1024), m, mb, g or gb,
// in any case. As in Redis, no digits count as 0 and a value past 64 bits
// wraps, so that both end up as out of range rather than unparsable.
func setMem(v string, lo, hi int64, apply func(int64)) string {
	const errMem = "argument must be a memory value"
	digits := 0
	for digits < len(v) && v[digits] >= '0' && v[digits] <= '9' {
		digits++
	}
	var mul uint64
	switch strings.ToLower(v[digits:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1024
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1024 * 1024
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1024 * 1024 * 1024
	default:
		return errMem
	}
	if digits >= 128 { // Redis's buffer for the digits
		return errMem
	}
	n, err := strconv.ParseUint(v[:digits], 10, 64)
	if err != nil && digits > 0 {
		n = math.MaxUint64 // strtoull saturates
	}
	return setInRange(int64(n*mul), lo, hi, apply)
}

var configParams = []configParam{
	{name: "maxclients", get: func(s *Server) string { return strconv.Itoa(s.cfg.maxClients) },
		set: func(ch *configChange, v string) string {
			return setInt(v, 1, math.MaxUint32, func(n int64) { ch.maxClients = int(n) })
		}},
	{name: "timeout", get: func(s *Server) string { return strconv.FormatInt(int64(s.cfg.idleTimeout/time.Second), 10) },
		set: func(ch *configChange, v string) string {
			return setInt(v, 0, math.MaxInt32, func(n int64) { ch.idleTimeout = time.Duration(n) * time.Second })
		}},
	{name: "requirepass", get: func(s *Server) string { return s.cfg.access.Password() },
		set: func(ch *configChange, v string) string { ch.password, ch.passwordSet = v, true; return "" }},
	{name: "protected-mode", get: func(s *Server) string { return boolText(s.cfg.access.ProtectedMode()) },
		set: func(ch *configChange, v string) string {
			v, _, _ = strings.Cut(v, "\x00") // a C string, as Redis's yesnotoi reads it
			switch strings.ToLower(v) {
			case "yes":
				ch.protectedMode, ch.protectedModeSet = true, true
			case "no":
				ch.protectedMode, ch.protectedModeSet = false, true
			default:
				return "argument must be 'yes' or 'no'"
			}
			return ""
		}},
	{name: "proto-max-bulk-len", get: func(s *Server) string { return strconv.FormatInt(s.cfg.protoMaxBulkLen, 10) },
		set: func(ch *configChange, v string) string {
			return setMem(v, 1<<20, math.MaxInt64, func(n int64) { ch.protoMaxBulkLen = n })
		}},
	{name: "tracking-table-max-keys", get: func(s *Server) string { return strconv.FormatInt(s.cfg.trackingMaxKeys, 10) },
		set: func(ch *configChange, v string) string {
			return setInt(v, 0, math.MaxInt64, func(n int64) { ch.trackingMaxKeys = n })
		}},
	{name: "slowlog-log-slower-than", get: func(s *Server) string {
		if s.cfg.slowlogSlower < 0 {
			return "-1"
		}
		if s.cfg.slowlogSlower == math.MaxInt64 && s.cfg.slowlogHuge > 0 {
			return strconv.FormatInt(s.cfg.slowlogHuge, 10)
		}
		return strconv.FormatInt(s.cfg.slowlogSlower.Microseconds(), 10)
	}, set: func(ch *configChange, v string) string {
		return setInt(v, -1, math.MaxInt64, func(n int64) {
			switch {
			case n < 0:
				ch.slowlogSlower = -1
			case n == 0:
				ch.slowlogSlower = 1 // log everything
			case n >= math.MaxInt64/int64(time.Microsecond):
				// Beyond a Duration: never logged; CONFIG GET shows n.
				ch.slowlogSlower, ch.slowlogHuge = math.MaxInt64, n
			default:
				ch.slowlogSlower = time.Duration(n) * time.Microsecond
			}
		})
	}},
	{name: "slowlog-max-len", get: func(s *Server) string { return strconv.Itoa(s.cfg.slowlogMaxLen) },
		set: func(ch *configChange, v string) string {
			return setInt(v, 0, math.MaxInt64, func(n int64) { ch.slowlogMaxLen = int(n) })
		}},
	{name: "databases", get: func(s *Server) string { return strconv.Itoa(s.databases) }, immutable: true},
	{name: "appendonly", get: func(s *Server) string { return "yes" }, immutable: true},
	{name: "appendfsync", get: func(s *Server) string {
		if s.DB.SyncPolicy() == caskade.SyncNone {
			return "no"
		}
		return s.DB.SyncPolicy().String()
	}, immutable: true},
	{name: "save", get: func(s *Server) string { return "" }, immutable: true},
	{name: "port", get: func(s *Server) string { return strconv.Itoa(s.port()) }, immutable: true},
	{name: "bind", get: func(s *Server) string { return s.bindAddrs() }, immutable: true},
	{name: "dir", get: func(s *Server) string { return s.DB.Dir() }, protected: true},
	{name: "maxmemory", get: func(s *Server) string { return "0" }, immutable: true},
	{name: "maxmemory-policy", get: func(s *Server) string { return "noeviction" }, immutable: true},
}

func findConfig(name string) *configParam {
	for i := range configParams {
		if strings.EqualFold(configParams[i].name, name) {
			return &configParams[i]
		}
	}
	return nil
}

func cmdConfigGet(c *client, args [][]byte) {
	s := c.s
	var matched []*configParam
	var names []string // as replied: a name without glob characters as it was given
	seen := map[string]bool{}
	for _, a := range args[2:] {
		glob := bytes.ContainsAny(a, "[*?")
		for i := range configParams {
			p := &configParams[i]
			if seen[p.name] {
				continue
			}
			if glob && globMatch(a, []byte(p.name), true) || !glob && strings.EqualFold(string(a), p.name) {
				seen[p.name] = true
				matched = append(matched, p)
				if glob {
					names = append(names, p.name)
				} else {
					names = append(names, string(a))
				}
			}
		}
	}
	s.cfg.mu.RLock()
	vals := make([]string, len(matched))
	for i, p := range matched {
		vals[i] = p.get(s)
	}
	s.cfg.mu.RUnlock()
	c.replyMap(len(matched))
	for i := range matched {
		c.replyBulkString(names[i])
		c.replyBulkString(vals[i])
	}
}

func cmdConfigSet(c *client, args [][]byte) {
	if len(args)%2 == 1 {
		c.replyErr(errSyntax)
		return
	}
	var params []*configParam
	for i := 2; i < len(args); i += 2 {
		p := findConfig(string(args[i]))
		if p == nil {
			c.replyErr("ERR Unknown option or number of arguments for CONFIG SET - '" + string(cstr(args[i])) + "'")
			return
		}
		if p.immutable || p.protected || p.set == nil {
			why := "can't set immutable config"
			if p.protected {
				why = "can't set protected config"
			}
			c.replyErr("ERR CONFIG SET failed (possibly related to argument '" + string(cstr(args[i])) + "') - " + why)
			return
		}
		for _, q := range params {
			if q == p {
				c.replyErr("ERR CONFIG SET failed (possibly related to argument '" + string(cstr(args[i])) + "') - duplicate parameter")
				return
			}
		}
		params = append(params, p)
	}
	// All or nothing, as seen from every front end: every value is
	// checked and applied to a copy first, and the copy published once
	// (the access settings, which the memcached and HTTP front ends read
	// on every request, in one atomic step).
	s := c.s
	s.cfg.mu.Lock()
	ch := configChange{configValues: s.cfg.configValues}
	for i, p := range params {
		if msg := p.set(&ch, string(args[2+2*i+1])); msg != "" {
			s.cfg.mu.Unlock()
			c.replyErr("ERR CONFIG SET failed (possibly related to argument '" + p.name + "') - " + msg)
			return
		}
		if testHookConfigStaged != nil {
			testHookConfigStaged(p.name)
		}
	}
	s.cfg.apply(&ch)
	s.cfg.mu.Unlock()
	c.replyOK()
}

// testHookConfigStaged, if set, runs when CONFIG SET has checked a
// parameter and staged its value, before it publishes any.
var testHookConfigStaged func(param string)

func cmdConfigResetstat(c *client, args [][]byte) {
	s := c.s
	for _, cmd := range s.cmds.list {
		for _, x := range append([]*command{cmd}, sortedSubs(cmd)...) {
			x.calls.Store(0)
			x.usec.Store(0)
			x.rejected.Store(0)
			x.failed.Store(0)
		}
	}
	s.stats.errMu.Lock()
	clear(s.stats.errorCounts)
	s.stats.errMu.Unlock()
	s.stats.errorReplies.Store(0)
	s.stats.commands.Store(0)
	s.stats.connections.Store(0)
	s.stats.rejected.Store(0)
	s.stats.netIn.Store(0)
	s.stats.netOut.Store(0)
	s.stats.hits.Store(0)
	s.stats.misses.Store(0)
	c.replyOK()
}

func cmdConfigRewrite(c *client, args [][]byte) {
	c.replyErr("ERR The server is running without a config file")
}

func cmdConfigHelp(c *client, args [][]byte) {
	c.replyHelp("CONFIG", []string{
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>",
		"    Set the configuration <directive> to <value>.",
		"RESETSTAT",
		"    Reset statistics reported by the INFO command.",
		"REWRITE",
		"    Rewrite the configuration file.",
	})
}

// COMMAND.

func (c *client) replyCommandInfo(cmd *command) {
	c.replyArray(10)
	c.replyBulkString(cmd.name)
	c.replyInt(int64(cmd.arity))
	var flags []string
	for _, f := range flagNames {
		if cmd.flags&f.bit != 0 {
			flags = append(flags, f.name)
		}
	}
	c.replySet(len(flags))
	for _, f := range flags {
		c.replyStatus(f)
	}
	c.replyInt(int64(cmd.firstKey))
	c.replyInt(int64(cmd.lastKey))
	c.replyInt(int64(cmd.step))
	cats := cmd.aclCategories()
	c.replySet(len(cats))
	for _, a := range cats {
		c.replyStatus("@" + a)
	}
	tips := commandTips[cmd.name]
	c.replySet(len(tips))
	for _, tip := range tips {
		c.replyBulkString(tip)
	}
	c.replySet(0) // key specs
	subs := sortedSubs(cmd)
	if len(subs) == 0 {
		c.replySet(0) // as Redis: a set when empty, else an array
	} else {
		c.replyArray(len(subs))
	}
	for _, sub := range subs {
		c.replyCommandInfo(sub)
	}
}

func cmdCommand(c *client, args [][]byte) {
	c.replyArray(len(c.s.cmds.list))
	for _, cmd := range c.s.cmds.list {
		c.replyCommandInfo(cmd)
	}
}

func cmdCommandCount(c *client, args [][]byte) { c.replyInt(int64(len(c.s.cmds.list))) }

func cmdCommandInfo(c *client, args [][]byte) {
	if len(args) == 2 {
		cmdCommand(c, args)
		return
	}
	c.replyArray(len(args) - 2)
	for _, name := range args[2:] {
		if cmd := c.s.findCommand(name); cmd != nil {
			c.replyCommandInfo(cmd)
		} else {
			c.replyNull()
		}
	}
}

// findCommand finds a command by name, "name|sub" for subcommands.
func (s *Server) findCommand(name []byte) *command {
	n := strings.ToLower(string(name))
	top, sub, hasSub := strings.Cut(n, "|")
	cmd := s.cmds.m[top]
	if cmd == nil || !hasSub {
		return cmd
	}
	return cmd.sub[sub]
}

func cmdCommandDocs(c *client, args [][]byte) {
	var cmds []*command
	if len(args) == 2 {
		cmds = c.s.cmds.list
	} else {
		for _, name := range args[2:] {
			if cmd := c.s.findCommand(name); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.replyMap(len(cmds))
	for _, cmd := range cmds {
		c.replyBulkString(cmd.name)
		c.replyCommandDoc(cmd)
	}
}

func (c *client) replyCommandDoc(cmd *command) {
	subs := sortedSubs(cmd)
	n := 3
	if len(subs) > 0 {
		n++
	}
	c.replyMap(n)
	c.replyBulkString("summary")
	c.replyBulkString("")
	c.replyBulkString("since")
	c.replyBulkString("1.0.0")
	c.replyBulkString("group")
	c.replyBulkString(cmd.docGroup())
	if len(subs) > 0 {
		c.replyBulkString("subcommands")
		c.replyMap(len(subs))
		for _, s := range subs {
			c.replyBulkString(s.name)
			c.replyCommandDoc(s)
		}
	}
}

func cmdCommandList(c *client, args [][]byte) {
	var pattern []byte
	if len(args) > 2 {
		if len(args) == 5 && eqFold(args[2], "filterby") {
			switch {
			case eqFold(args[3], "pattern"):
				pattern = args[4]
			case eqFold(args[3], "module"):
				c.replyArray(0)
				return
			case eqFold(args[3], "aclcat"):
				cat := strings.ToLower(string(args[4]))
				var names []string
				for _, cmd := range c.s.cmds.list {
					for _, x := range append([]*command{cmd}, sortedSubs(cmd)...) {
						if slices.Contains(x.aclCategories(), cat) {
							names = append(names, x.name)
						}
					}
				}
				c.replyArray(len(names))
				for _, n := range names {
					c.replyBulkString(n)
				}
				return
			default:
				c.replyErr(errSyntax)
				return
			}
		} else {
			c.replyErr(errSyntax)
			return
		}
	}
	var names []string
	for _, cmd := range c.s.cmds.list {
		for _, x := range append([]*command{cmd}, sortedSubs(cmd)...) {
			if pattern == nil || globMatch(pattern, []byte(x.name), true) {
				names = append(names, x.name)
			}
		}
	}
	c.replyArray(len(names))
	for _, n := range names {
		c.replyBulkString(n)
	}
}

func cmdCommandGetkeys(c *client, args [][]byte) {
	sub := args[2:]
	cmd, _, _ := c.s.cmds.lookup(sub, nil)
	if cmd == nil {
		c.replyErr("ERR Invalid command specified")
		return
	}
	// Redis checks for key arguments before the arity.
	if cmd.firstKey <= 0 {
		c.replyErr("ERR The command has no key arguments")
		return
	}
	if (cmd.arity > 0 && cmd.arity != len(sub)) || len(sub) < -cmd.arity {
		c.replyErr("ERR Invalid number of arguments specified for command")
		return
	}
	idx := cmd.keyIndexes(sub, nil)
	if len(idx) == 0 {
		c.replyErr("ERR Invalid arguments specified for command")
		return
	}
	c.replyArray(len(idx))
	for _, i := range idx {
		c.replyBulk(sub[i])
	}
}

func cmdCommandHelp(c *client, args [][]byte) {
	c.replyHelp("COMMAND", []string{
		"(no subcommand)",
		"    Return details about all commands.",
		"COUNT",
		"    Return the total number of commands in this server.",
		"LIST",
		"    Return a list of all commands in this server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>",
		"    Return the keys from a full command.",
	})
}

// Server commands.

func cmdTime(c *client, args [][]byte) {
	now := time.Now()
	c.replyArray(2)
	c.replyBulkString(strconv.FormatInt(now.Unix(), 10))
	c.replyBulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

func cmdLastsave(c *client, args [][]byte) { c.replyInt(c.s.lastSave.Load()) }

// okOrErr is an INFO status field: "err" after a failure, else "ok".
func okOrErr(failed bool) string {
	if failed {
		return "err"
	}
	return "ok"
}

// backup writes a backup of the database into a new directory under
// Server.BackupDir and returns its path.
func (s *Server) backup(ctx context.Context) (_ string, err error) {
	start := time.Now()
	s.saveStart.Store(start.UnixNano())
	defer func() {
		// As Redis's rdb_last_bgsave_time_sec, failed or not.
		s.saveSecs.Store(int64(time.Since(start).Seconds()))
		s.saveStart.Store(0)
		s.saveFailed.Store(err != nil)
	}()
	if s.BackupDir == "" {
		return "", errors.New("backups are not configured (no backup directory was set at start-up)")
	}
	if err := os.MkdirAll(s.BackupDir, 0o755); err != nil {
		return "", err
	}
	s.removeIncompleteBackups()
	name := backupPrefix + time.Now().UTC().Format(backupTime)
	dst := filepath.Join(s.BackupDir, name)
	st, err := s.DB.Backup(ctx, dst, &caskade.BackupOptions{Link: true})
	if err != nil {
		return "", err
	}
	s.lastSave.Store(time.Now().Unix())
	s.saveVersion.Store(st.Version)
	s.saves.Add(1)
	s.log.Info("redis: backup written", "dir", dst, "files", st.Files, "bytes", st.Bytes, "version", st.Version)
	return dst, nil
}

// The names of the backups SAVE and BGSAVE write: backupPrefix and the
// time in backupTime's layout.
const (
	backupPrefix = "backup-"
	backupTime   = "20060102T150405.000000000Z"
)

// removeIncompleteBackups removes the backups under BackupDir that a
// SAVE or BGSAVE cut short by a crash or a kill left without their
// manifest (a backup that fails removes its files itself): they hold
// links to, or copies of, data files that are otherwise gone, and no
// restore accepts them. Only directories named as backup names them are
// touched; the caller holds s.bgsave, so none is being written.
func (s *Server) removeIncompleteBackups() {
	ents, err := os.ReadDir(s.BackupDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		stamp, ok := strings.CutPrefix(e.Name(), backupPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		if _, err := time.Parse(backupTime, stamp); err != nil {
			continue
		}
		dir := filepath.Join(s.BackupDir, e.Name())
		if _, err := os.Lstat(filepath.Join(dir, caskade.ManifestName)); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			s.log.Warn("redis: cannot remove an incomplete backup", "dir", dir, "err", err)
			continue
		}
		s.log.Warn("redis: removed an incomplete backup (a SAVE or BGSAVE was cut short)", "dir", dir)
	}
}

// cmdSave writes a backup (a consistent copy of the database, which
// Open accepts as it is) into a new directory under the backup directory.
func cmdSave(c *client, args [][]byte) {
	if !c.s.bgsave.CompareAndSwap(false, true) {
		c.replyErr("ERR Background save already in progress")
		return
	}
	defer c.s.bgsave.Store(false)
	if _, err := c.s.backup(context.Background()); err != nil {
		if storerr.Classify(err) == storerr.Other {
			c.replyErr("ERR " + trimCode(c.s.engineError(err)))
			return
		}
		// The backup's files are the server's: the log gets them.
		c.s.log.Error("redis: SAVE failed", "err", err)
		c.replyErr("ERR the backup failed: " + storerr.Reason(err) + " (the server's log has the cause)")
		return
	}
	c.replyOK()
}

func cmdBgsave(c *client, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !eqFold(args[1], "schedule")) {
		c.replyErr(errSyntax)
		return
	}
	s := c.s
	if s.BackupDir == "" {
		c.replyErr("ERR backups are not configured (no backup directory was set at start-up)")
		return
	}
	if c.execing {
		// As in Redis, a BGSAVE in a transaction is scheduled: it starts
		// once EXEC has committed, so the backup holds the transaction's
		// writes (and a retried EXEC does not start it twice).
		if s.bgsave.Load() {
			c.replyErr("ERR Background save already in progress")
			return
		}
		c.afterExec |= afterExecSave
		c.replyStatus("Background saving scheduled")
		return
	}
	if !s.startBgsave() {
		c.replyErr("ERR Background save already in progress")
		return
	}
	c.replyStatus("Background saving started")
}

// startBgsave starts writing a backup, unless one is being written.
func (s *Server) startBgsave() bool {
	if !s.bgsave.CompareAndSwap(false, true) {
		return false
	}
	go func() {
		defer s.bgsave.Store(false)
		if _, err := s.backup(context.Background()); err != nil {
			s.log.Error("redis: BGSAVE failed", "err", err)
		}
	}()
	return true
}

// What a committed EXEC starts (client.afterExec).
const (
	afterExecSave  = 1 << iota // BGSAVE
	afterExecMerge             // BGREWRITEAOF
)

// startAfterExec starts the background work a transaction scheduled.
func (c *client) startAfterExec() {
	if c.afterExec&afterExecSave != 0 {
		c.s.startBgsave() // if one runs already, it is as good
	}
	if c.afterExec&afterExecMerge != 0 {
		c.s.startMerge()
	}
	c.afterExec = 0
}

// cmdBgrewriteaof starts a merge (compaction) of the data files.
func cmdBgrewriteaof(c *client, args [][]byte) {
	s := c.s
	if c.execing {
		// Scheduled, as BGSAVE is (cmdBgsave).
		if s.merging.Load() {
			c.replyErr("ERR Background append only file rewriting already in progress")
			return
		}
		c.afterExec |= afterExecMerge
		c.replyStatus("Background append only file rewriting scheduled")
		return
	}
	if !s.startMerge() {
		c.replyErr("ERR Background append only file rewriting already in progress")
		return
	}
	c.replyStatus("Background append only file rewriting started")
}

// startMerge starts a merge of the data files, unless one is running.
func (s *Server) startMerge() bool {
	if !s.merging.CompareAndSwap(false, true) {
		return false
	}
	go func() {
		defer s.merging.Store(false)
		st, err := s.DB.Merge(context.Background())
		s.mergeFailed.Store(err != nil)
		if err != nil {
			s.log.Error("redis: BGREWRITEAOF (merge) failed", "err", err)
			return
		}
		s.log.Info("redis: merge done", "input_files", st.InputFiles, "output_files", st.OutputFiles,
			"input_bytes", st.InputBytes, "output_bytes", st.OutputBytes, "duration", st.Duration)
	}()
	return true
}

func cmdShutdown(c *client, args [][]byte) {
	var save, nosave, other, abort bool
	for _, a := range args[1:] {
		switch {
		case eqFold(a, "nosave"):
			nosave = true
		case eqFold(a, "save"):
			save = true
		case eqFold(a, "now"), eqFold(a, "force"):
			other = true
		case eqFold(a, "abort"):
			abort = true
		default:
			c.replyErr(errSyntax)
			return
		}
	}
	// As in Redis, ABORT with any flag, or SAVE with NOSAVE, is a syntax
	// error, not a shutdown.
	if (abort && (save || nosave || other)) || (save && nosave) {
		c.replyErr(errSyntax)
		return
	}
	if abort {
		c.replyErr("ERR No shutdown in progress.")
		return
	}
	s := c.s
	s.log.Warn("redis: SHUTDOWN requested by a client", "addr", c.addr)
	if err := s.DB.Sync(); err != nil {
		s.log.Error("redis: sync before shutdown failed", "err", err)
	}
	c.closeNow = true
	if s.ShutdownFunc != nil {
		go s.ShutdownFunc()
	} else {
		go s.Shutdown(context.Background())
	}
}

func cmdDebug(c *client, args [][]byte) {
	if !eqFold(args[1], "sleep") || len(args) != 3 {
		c.replyErr("ERR DEBUG subcommand not allowed")
		return
	}
	secs, err := strconv.ParseFloat(string(args[2]), 64)
	if err != nil || math.IsNaN(secs) {
		secs = 0
	}
	if secs > 0 {
		t := time.NewTimer(time.Duration(min(secs, 1e9) * float64(time.Second)))
		select {
		case <-t.C:
		case <-c.s.done:
			t.Stop()
		}
	}
	c.replyOK()
}

// SLOWLOG.

type slowEntry struct {
	id       int64
	at       int64 // Unix seconds
	usec     int64
	args     [][]byte
	addr     string
	name     string
	overflow int
}

type slowlog struct {
	mu      sync.Mutex
	nextID  int64
	entries []slowEntry // newest first
}

// Redis's SLOWLOG_ENTRY_MAX_ARGC and SLOWLOG_ENTRY_MAX_STRING.
const (
	slowMaxArgc   = 32
	slowMaxString = 128
)

func (l *slowlog) maybeAdd(s *Server, c *client, args [][]byte, start time.Time, d time.Duration) {
	if thr := time.Duration(s.cfg.slowAtomic.Load()); thr < 0 || d < thr {
		return // the common case, without the lock
	}
	s.cfg.mu.RLock()
	thr, maxLen := s.cfg.slowlogSlower, s.cfg.slowlogMaxLen
	s.cfg.mu.RUnlock()
	if thr < 0 || d < thr || maxLen == 0 {
		return
	}
	n := min(len(args), slowMaxArgc)
	e := slowEntry{at: start.Unix(), usec: d.Microseconds(), addr: c.addr}
	e.args = make([][]byte, n)
	for i := range n {
		a := args[i]
		switch {
		case n < len(args) && i == n-1:
			a = []byte(fmt.Sprintf("... (%d more arguments)", len(args)-slowMaxArgc+1))
		case len(a) > slowMaxString:
			a = append(append([]byte{}, a[:slowMaxString]...), fmt.Sprintf("... (%d more bytes)", len(a)-slowMaxString)...)
		default:
			a = append([]byte{}, a...)
		}
		e.args[i] = a
	}
	// As Redis does: AUTH's and HELLO's credentials as MONITOR hides
	// them, and the values CONFIG SET gives sensitive parameters.
	hide := redacted(args)
	if c.cur != nil && c.cur.name == "config|set" {
		hide = make([]bool, len(args))
		for i := 3; i < len(args); i += 2 {
			hide[i] = eqFold(args[i-1], "requirepass")
		}
	}
	for i := range e.args {
		if hide != nil && hide[i] && !(n < len(args) && i == n-1) {
			e.args[i] = []byte("(redacted)")
		}
	}
	c.imu.Lock()
	e.name = c.name
	c.imu.Unlock()
	l.mu.Lock()
	e.id = l.nextID
	l.nextID++
	l.entries = append([]slowEntry{e}, l.entries...)
	if len(l.entries) > maxLen {
		l.entries = l.entries[:maxLen]
	}
	l.mu.Unlock()
}

func cmdSlowlogGet(c *client, args [][]byte) {
	count := int64(10)
	if len(args) == 3 {
		n, ok := parseInt(args[2])
		if !ok || n < -1 {
			c.replyErr("ERR count should be greater than or equal to -1")
			return
		}
		count = n
		if n == -1 {
			count = math.MaxInt64
		}
	} else if len(args) > 3 {
		c.replyErr(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try SLOWLOG HELP.", cstr(args[1])))
		return
	}
	l := &c.s.slow
	l.mu.Lock()
	entries := l.entries
	if int64(len(entries)) > count {
		entries = entries[:count]
	}
	entries = append([]slowEntry(nil), entries...)
	l.mu.Unlock()
	c.replyArray(len(entries))
	for _, e := range entries {
		c.replyArray(6)
		c.replyInt(e.id)
		c.replyInt(e.at)
		c.replyInt(e.usec)
		c.replyArray(len(e.args))
		for _, a := range e.args {
			c.replyBulk(a)
		}
		c.replyBulkString(e.addr)
		c.replyBulkString(e.name)
	}
}

func cmdSlowlogLen(c *client, args [][]byte) {
	c.s.slow.mu.Lock()
	n := len(c.s.slow.entries)
	c.s.slow.mu.Unlock()
	c.replyInt(int64(n))
}

func cmdSlowlogReset(c *client, args [][]byte) {
	c.s.slow.mu.Lock()
	c.s.slow.entries = nil
	c.s.slow.mu.Unlock()
	c.replyOK()
}

func cmdSlowlogHelp(c *client, args [][]byte) {
	c.replyHelp("SLOWLOG", []string{
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN",
		"    Return the length of the slowlog.",
		"RESET",
		"    Reset the slowlog.",
	})
}

// MONITOR.

type monitorSet struct {
	mu sync.Mutex
	m  map[*client]struct{}
	n  atomic.Int32
}

func (ms *monitorSet) active() bool { return ms.n.Load() > 0 }

func (ms *monitorSet) add(c *client) {
	ms.mu.Lock()
	if ms.m == nil {
		ms.m = map[*client]struct{}{}
	}
	ms.m[c] = struct{}{}
	ms.n.Store(int32(len(ms.m)))
	ms.mu.Unlock()
}

func (ms *monitorSet) remove(c *client) {
	ms.mu.Lock()
	delete(ms.m, c)
	ms.n.Store(int32(len(ms.m)))
	ms.mu.Unlock()
}

// feed sends a command to the monitors, in Redis's format:
// +1339518083.107412 [0 127.0.0.1:60866] "keys" "*"
// As in Redis, that includes the commands of monitors (which may not
// touch the keys, but may PING or ECHO), their own too: a monitor's
// line follows its reply.
func (ms *monitorSet) feed(c *client, args [][]byte, at time.Time) {
	ms.send(monitorLine(make([]byte, 0, 64), c, args, at))
}

// monitorLine appends the MONITOR line of a command to b.
func monitorLine(b []byte, c *client, args [][]byte, at time.Time) []byte {
	line := b
	line = append(line, '+')
	line = strconv.AppendInt(line, at.Unix(), 10)
	line = append(line, '.')
	us := strconv.Itoa(at.Nanosecond() / 1000)
	line = append(line, "000000"[len(us):]...)
	line = append(line, us...)
	line = append(line, " ["...)
	line = strconv.AppendInt(line, int64(c.db), 10)
	line = append(line, ' ')
	if c.unix {
		line = append(line, "unix:"...)
		line = append(line, c.addr[:len(c.addr)-2]...)
	} else {
		line = append(line, c.addr...)
	}
	line = append(line, ']')
	hide := redacted(args)
	for i, a := range args {
		line = append(line, ' ')
		if hide != nil && hide[i] {
			line = append(line, `"(redacted)"`...)
			continue
		}
		line = appendRepr(line, a)
	}
	return append(line, "\r\n"...)
}

// send sends lines to the monitors.
func (ms *monitorSet) send(lines []byte) {
	ms.mu.Lock()
	for m := range ms.m {
		m.push(lines)
	}
	ms.mu.Unlock()
}

// redacted returns which arguments of a command MONITOR shows as
// "(redacted)" (nil: none): AUTH's user name and password, and those of a
// HELLO's AUTH option, as Redis hides them; HELLO's protocol version, its
// option names and SETNAME's name stay visible. Where Redis's HELLO stops
// at an option it does not know and shows the rest as it is, everything
// from there on is hidden here, since it may hold a password.
func redacted(args [][]byte) []bool {
	var hide []bool
	switch {
	case eqFold(args[0], "auth"):
		hide = make([]bool, len(args))
		for i := 1; i < len(args); i++ {
			hide[i] = true
		}
	case eqFold(args[0], "hello") && len(args) > 2:
		hide = make([]bool, len(args))
		for j := 2; j < len(args); {
			more := len(args) - 1 - j
			switch {
			case eqFold(args[j], "auth") && more >= 2:
				hide[j+1], hide[j+2] = true, true
				j += 3
			case eqFold(args[j], "setname") && more >= 1:
				j += 2
			default:
				for ; j < len(args); j++ {
					hide[j] = true
				}
			}
		}
	}
	return hide
}

// appendRepr appends p quoted as Redis's sdscatrepr does.
func appendRepr(b, p []byte) []byte {
	b = append(b, '"')
	for _, ch := range p {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				b = append(b, ch)
			} else {
				const hex = "0123456789abcdef"
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}

func cmdMonitor(c *client, args [][]byte) {
	if c.execing {
		// As in Redis: the client of an EXEC expects one reply per
		// command, not a stream.
		c.replyErr("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	if c.monitor.Load() {
		c.replyOK()
		return
	}
	c.monitor.Store(true)
	c.startPusher()
	c.s.monitors.add(c)
	c.replyOK()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
