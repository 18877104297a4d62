package redis

import (
	"sort"
	"strings"
	"sync/atomic"

	"github.com/caskade/caskade/server/metrics"
)

// Command flags, as COMMAND INFO reports them.
const (
	fWrite = 1 << iota
	fReadonly
	fDenyOOM
	fAdmin
	fNoScript
	fLoading
	fStale
	fFast
	fNoAuth
	fNoMulti
	fSkipSlowlog
	fAllowBusy
	fSentinel
	fProtected
	fTouchesArbitraryKeys
	fNoAsyncLoading
)

// flagNames are the flags COMMAND INFO shows, in Redis's order. Redis
// hides sentinel, protected and touches_arbitrary_keys, so they are not
// listed.
var flagNames = []struct {
	bit  int
	name string
}{
	{fWrite, "write"}, {fReadonly, "readonly"}, {fDenyOOM, "denyoom"}, {fAdmin, "admin"},
	{fNoScript, "noscript"}, {fLoading, "loading"}, {fStale, "stale"},
	{fSkipSlowlog, "skip_slowlog"}, {fFast, "fast"}, {fNoAuth, "no_auth"},
	{fNoAsyncLoading, "no_async_loading"}, {fNoMulti, "no_multi"}, {fAllowBusy, "allow_busy"},
}

// aclCategoryOrder is Redis's table of ACL categories, in the order
// COMMAND INFO lists a command's categories.
var aclCategoryOrder = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash",
	"string", "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting"}

// aclCategories returns the command's ACL categories in Redis's order:
// its own (acl) and those its flags imply, as Redis's
// setImplicitACLCategories adds them.
func (cmd *command) aclCategories() []string {
	has := map[string]bool{}
	for _, a := range strings.Fields(cmd.acl) {
		has[a] = true
	}
	if cmd.has(fWrite) {
		has["write"] = true
	}
	if cmd.has(fReadonly) {
		has["read"] = true
	}
	if cmd.has(fAdmin) {
		has["admin"], has["dangerous"] = true, true
	}
	if cmd.has(fFast) {
		has["fast"] = true
	} else {
		has["slow"] = true
	}
	var cats []string
	for _, a := range aclCategoryOrder {
		if has[a] {
			cats = append(cats, a)
		}
	}
	return cats
}

// commandTips are the tips COMMAND INFO shows for a command, as in Redis.
var commandTips = map[string][]string{
	"client|info":      {"nondeterministic_output"},
	"client|list":      {"nondeterministic_output"},
	"client|setinfo":   {"request_policy:all_nodes", "response_policy:all_succeeded"},
	"client|setname":   {"request_policy:all_nodes", "response_policy:all_succeeded"},
	"command":          {"nondeterministic_output_order"},
	"command|docs":     {"nondeterministic_output_order"},
	"command|info":     {"nondeterministic_output_order"},
	"command|list":     {"nondeterministic_output_order"},
	"config|resetstat": {"request_policy:all_nodes", "response_policy:all_succeeded"},
	"config|rewrite":   {"request_policy:all_nodes", "response_policy:all_succeeded"},
	"config|set":       {"request_policy:all_nodes", "response_policy:all_succeeded"},
	"dbsize":           {"request_policy:all_shards", "response_policy:agg_sum"},
	"del":              {"request_policy:multi_shard", "response_policy:agg_sum"},
	"exists":           {"request_policy:multi_shard", "response_policy:agg_sum"},
	"flushall":         {"request_policy:all_shards", "response_policy:all_succeeded"},
	"flushdb":          {"request_policy:all_shards", "response_policy:all_succeeded"},
	"info":             {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
	"keys":             {"request_policy:all_shards", "nondeterministic_output_order"},
	"lastsave":         {"nondeterministic_output"},
	"mget":             {"request_policy:multi_shard"},
	"mset":             {"request_policy:multi_shard", "response_policy:all_succeeded"},
	"object|encoding":  {"nondeterministic_output"},
	"object|freq":      {"nondeterministic_output"},
	"object|idletime":  {"nondeterministic_output"},
	"object|refcount":  {"nondeterministic_output"},
	"ping":             {"request_policy:all_shards", "response_policy:all_succeeded"},
	"pttl":             {"nondeterministic_output"},
	"randomkey":        {"request_policy:all_shards", "response_policy:special", "nondeterministic_output"},
	"scan":             {"nondeterministic_output", "request_policy:special", "response_policy:special"},
	"slowlog|get":      {"request_policy:all_nodes", "nondeterministic_output"},
	"slowlog|len":      {"request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"},
	"slowlog|reset":    {"request_policy:all_nodes", "response_policy:all_succeeded"},
	"time":             {"nondeterministic_output"},
	"touch":            {"request_policy:multi_shard", "response_policy:agg_sum"},
	"ttl":              {"nondeterministic_output"},
	"unlink":           {"request_policy:multi_shard", "response_policy:agg_sum"},
}

// docGroup returns the group COMMAND DOCS gives the command: Redis's
// group where it differs from what the command's first ACL category
// suggests.
func (cmd *command) docGroup() string {
	switch top, _, _ := strings.Cut(cmd.name, "|"); top {
	case "command", "dbsize", "flushall", "flushdb", "swapdb":
		return "server"
	case "client":
		return "connection"
	case "object":
		return "generic"
	}
	first, _, _ := strings.Cut(cmd.acl, " ")
	switch first {
	case "keyspace":
		return "generic"
	case "transaction":
		return "transactions"
	case "string", "connection":
		return first
	}
	return "server"
}

type cmdFunc func(c *client, args [][]byte)

// command is one entry of the command table: a command or a subcommand
// of a container command (CLIENT, CONFIG, OBJECT, SLOWLOG, COMMAND).
type command struct {
	name     string // lower case; "client|kill" for subcommands
	arity    int    // as in Redis: n exact, -n at least n
	flags    int
	firstKey int
	lastKey  int
	step     int
	acl      string // its own ACL categories (not those its flags imply), space-separated, without "@"
	fn       cmdFunc
	sub      map[string]*command
	parent   *command
	blind    bool // a blind write, whose commit may be deferred (pipeline.go)

	metric   *metrics.CommandHandle // nil without Server.Metrics
	calls    atomic.Int64
	usec     atomic.Int64
	rejected atomic.Int64
	failed   atomic.Int64
}

func (cmd *command) has(f int) bool { return cmd.flags&f != 0 }

// keyIndexes appends the indexes of the key arguments of args.
func (cmd *command) keyIndexes(args [][]byte, out []int) []int {
	if cmd.firstKey <= 0 {
		return out
	}
	last := cmd.lastKey
	if last < 0 {
		last = len(args) + last
	}
	step := max(cmd.step, 1)
	for i := cmd.firstKey; i <= last && i < len(args); i += step {
		out = append(out, i)
	}
	return out
}

type commandTable struct {
	m    map[string]*command
	list []*command // sorted by name, top level only
}

func (t *commandTable) add(cmd *command) *command {
	t.m[cmd.name] = cmd
	t.list = append(t.list, cmd)
	return cmd
}

func (t *commandTable) addSub(parent *command, cmd *command) {
	cmd.name = parent.name + "|" + cmd.name
	cmd.parent = parent
	if parent.sub == nil {
		parent.sub = map[string]*command{}
	}
	parent.sub[strings.TrimPrefix(cmd.name, parent.name+"|")] = cmd
}

// lookup finds the command for args (a subcommand for containers). It
// returns nil, false for an unknown command and nil, true for an unknown
// subcommand of a known container. lower is scratch space.
func (t *commandTable) lookup(args [][]byte, lower []byte) (*command, bool, []byte) {
	lower = appendLower(lower[:0], args[0])
	cmd := t.m[string(lower)]
	if cmd == nil {
		return nil, false, lower
	}
	if cmd.sub == nil || len(args) < 2 {
		return cmd, false, lower
	}
	lower = appendLower(lower[:0], args[1])
	sub := cmd.sub[string(lower)]
	if sub == nil {
		return nil, true, lower
	}
	return sub, false, lower
}

func appendLower(dst, s []byte) []byte {
	for _, c := range s {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// spec is a compact description of a command for the table below.
type spec struct {
	name   string
	arity  int
	flags  int
	first  int
	last   int
	step   int
	acl    string
	fn     cmdFunc
	subcmd []spec
}

const (
	rf  = fReadonly | fFast
	wf  = fWrite | fFast
	wdf = fWrite | fDenyOOM
	cx  = fNoScript | fLoading | fStale
)

// testSpecs are commands that tests add before a server starts.
var testSpecs []spec

func newCommandTable() *commandTable {
	t := &commandTable{m: map[string]*command{}}
	for _, s := range append(append(commandSpecs(), orderedSpecs()...), testSpecs...) {
		cmd := t.add(&command{name: s.name, arity: s.arity, flags: s.flags, firstKey: s.first,
			lastKey: s.last, step: s.step, acl: s.acl, fn: s.fn})
		for _, ss := range s.subcmd {
			t.addSub(cmd, &command{name: ss.name, arity: ss.arity, flags: ss.flags, firstKey: ss.first,
				lastKey: ss.last, step: ss.step, acl: ss.acl, fn: ss.fn})
		}
	}
	sort.Slice(t.list, func(i, j int) bool { return t.list[i].name < t.list[j].name })
	t.markBlind()
	return t
}

func commandSpecs() []spec {
	k1 := func(name string, arity, flags int, acl string, fn cmdFunc) spec {
		return spec{name: name, arity: arity, flags: flags, first: 1, last: 1, step: 1, acl: acl, fn: fn}
	}
	kall := func(name string, arity, flags int, acl string, fn cmdFunc) spec {
		return spec{name: name, arity: arity, flags: flags, first: 1, last: -1, step: 1, acl: acl, fn: fn}
	}
	nk := func(name string, arity, flags int, acl string, fn cmdFunc) spec {
		return spec{name: name, arity: arity, flags: flags, acl: acl, fn: fn}
	}
	return []spec{
		// Connection.
		nk("ping", -1, fFast|fSentinel, "connection", cmdPing),
		nk("echo", 2, fLoading|fStale|fFast, "connection", cmdEcho),
		nk("quit", -1, fAllowBusy|cx|fFast|fNoAuth, "connection", cmdQuit),
		nk("hello", -1, cx|fFast|fNoAuth|fSentinel|fAllowBusy, "connection", cmdHello),
		nk("auth", -2, cx|fFast|fNoAuth|fSentinel|fAllowBusy, "connection", cmdAuth),
		nk("select", 2, fLoading|fStale|fFast, "connection", cmdSelect),
		nk("reset", 1, cx|fFast|fNoAuth|fAllowBusy, "connection", cmdReset),
		{name: "client", arity: -2, flags: fSentinel, subcmd: []spec{
			nk("caching", 3, cx|fSentinel, "connection", cmdClientCaching),
			nk("getname", 2, cx|fSentinel, "connection", cmdClientGetname),
			nk("getredir", 2, cx|fSentinel, "connection", cmdClientGetredir),
			nk("help", 2, fLoading|fStale|fSentinel, "connection", cmdClientHelp),
			nk("id", 2, cx|fSentinel, "connection", cmdClientID),
			nk("info", 2, cx|fSentinel, "connection", cmdClientInfo),
			nk("kill", -3, fAdmin|cx|fSentinel, "connection", cmdClientKill),
			nk("list", -2, fAdmin|cx|fSentinel, "connection", cmdClientList),
			nk("no-evict", 3, fAdmin|cx|fSentinel, "connection", cmdClientNoEvict),
			nk("no-touch", 3, cx, "connection", cmdClientNoTouch),
			nk("pause", -3, fAdmin|cx|fSentinel, "connection", cmdClientPause),
			nk("reply", 3, cx|fSentinel, "connection", cmdClientReply),
			nk("setinfo", 4, cx|fSentinel, "connection", cmdClientSetinfo),
			nk("setname", 3, cx|fSentinel, "connection", cmdClientSetname),
			nk("tracking", -3, cx|fSentinel, "connection", cmdClientTracking),
			nk("trackinginfo", 2, cx|fSentinel, "connection", cmdClientTrackinginfo),
			nk("unblock", -3, fAdmin|cx|fSentinel, "connection", cmdClientUnblock),
			nk("unpause", 2, fAdmin|cx|fSentinel, "connection", cmdClientUnpause),
		}},

		// Strings.
		k1("get", 2, rf, "string", cmdGet),
		k1("set", -3, wdf, "string", cmdSet),
		k1("setnx", 3, wdf|fFast, "string", cmdSetnx),
		k1("setex", 4, wdf, "string", cmdSetex),
		k1("psetex", 4, wdf, "string", cmdPsetex),
		kall("mget", -2, rf, "string", cmdMget),
		{name: "mset", arity: -3, flags: wdf, first: 1, last: -1, step: 2, acl: "string", fn: cmdMset},
		{name: "msetnx", arity: -3, flags: wdf, first: 1, last: -1, step: 2, acl: "string", fn: cmdMsetnx},
		k1("getset", 3, wdf|fFast, "string", cmdGetset),
		k1("getdel", 2, wf, "string", cmdGetdel),
		k1("getex", -2, wf, "string", cmdGetex),
		k1("append", 3, wdf|fFast, "string", cmdAppend),
		k1("strlen", 2, rf, "string", cmdStrlen),
		k1("getrange", 4, fReadonly, "string", cmdGetrange),
		k1("substr", 4, fReadonly, "string", cmdGetrange),
		k1("setrange", 4, wdf, "string", cmdSetrange),
		k1("incr", 2, wdf|fFast, "string", cmdIncr),
		k1("decr", 2, wdf|fFast, "string", cmdDecr),
		k1("incrby", 3, wdf|fFast, "string", cmdIncrby),
		k1("decrby", 3, wdf|fFast, "string", cmdDecrby),
		k1("incrbyfloat", 3, wdf|fFast, "string", cmdIncrbyfloat),

		// Keys.
		kall("del", -2, fWrite, "keyspace", cmdDel),
		kall("unlink", -2, wf, "keyspace", cmdDel),
		kall("exists", -2, rf, "keyspace", cmdExists),
		k1("expire", -3, wf, "keyspace", cmdExpire),
		k1("pexpire", -3, wf, "keyspace", cmdPexpire),
		k1("expireat", -3, wf, "keyspace", cmdExpireat),
		k1("pexpireat", -3, wf, "keyspace", cmdPexpireat),
		k1("ttl", 2, rf, "keyspace", cmdTTL),
		k1("pttl", 2, rf, "keyspace", cmdPTTL),
		k1("expiretime", 2, rf, "keyspace", cmdExpiretime),
		k1("pexpiretime", 2, rf, "keyspace", cmdPexpiretime),
		k1("persist", 2, wf, "keyspace", cmdPersist),
		k1("type", 2, rf, "keyspace", cmdType),
		{name: "rename", arity: 3, flags: fWrite, first: 1, last: 2, step: 1, acl: "keyspace", fn: cmdRename},
		{name: "renamenx", arity: 3, flags: wf, first: 1, last: 2, step: 1, acl: "keyspace", fn: cmdRenamenx},
		{name: "copy", arity: -3, flags: wdf, first: 1, last: 2, step: 1, acl: "keyspace", fn: cmdCopy},
		nk("keys", 2, fReadonly, "keyspace dangerous", cmdKeys),
		nk("scan", -2, fReadonly|fTouchesArbitraryKeys, "keyspace", cmdScan),
		nk("randomkey", 1, fReadonly|fTouchesArbitraryKeys, "keyspace", cmdRandomkey),
		nk("dbsize", 1, rf, "keyspace", cmdDbsize),
		nk("flushdb", -1, fWrite, "keyspace dangerous", cmdFlushdb),
		nk("flushall", -1, fWrite, "keyspace dangerous", cmdFlushall),
		kall("touch", -2, rf, "keyspace", cmdTouch),
		k1("move", 3, wf, "keyspace", cmdMove),
		nk("swapdb", 3, wf, "keyspace dangerous", cmdSwapdb),
		{name: "object", arity: -2, subcmd: []spec{
			{name: "encoding", arity: 3, flags: fReadonly, first: 2, last: 2, step: 1, acl: "keyspace", fn: cmdObjectEncoding},
			{name: "freq", arity: 3, flags: fReadonly, first: 2, last: 2, step: 1, acl: "keyspace", fn: cmdObjectFreq},
			nk("help", 2, fLoading|fStale, "keyspace", cmdObjectHelp),
			{name: "idletime", arity: 3, flags: fReadonly, first: 2, last: 2, step: 1, acl: "keyspace", fn: cmdObjectIdletime},
			{name: "refcount", arity: 3, flags: fReadonly, first: 2, last: 2, step: 1, acl: "keyspace", fn: cmdObjectRefcount},
		}},

		// Transactions.
		nk("multi", 1, cx|fFast|fAllowBusy, "transaction", cmdMulti),
		nk("exec", 1, cx|fSkipSlowlog, "transaction", cmdExec),
		nk("discard", 1, cx|fFast|fAllowBusy, "transaction", cmdDiscard),
		kall("watch", -2, cx|fFast|fAllowBusy, "transaction", cmdWatch),
		nk("unwatch", 1, cx|fFast|fAllowBusy, "transaction", cmdUnwatch),

		// Server.
		nk("info", -1, fLoading|fStale|fSentinel, "dangerous", cmdInfo),
		{name: "config", arity: -2, subcmd: []spec{
			nk("get", -3, fAdmin|cx, "", cmdConfigGet),
			nk("help", 2, fLoading|fStale, "", cmdConfigHelp),
			nk("resetstat", 2, fAdmin|cx, "", cmdConfigResetstat),
			nk("rewrite", 2, fAdmin|cx, "", cmdConfigRewrite),
			nk("set", -4, fAdmin|cx, "", cmdConfigSet),
		}},
		{name: "command", arity: -1, flags: fLoading | fStale | fSentinel, acl: "connection", fn: cmdCommand, subcmd: []spec{
			nk("count", 2, fLoading|fStale|fSentinel, "connection", cmdCommandCount),
			nk("docs", -2, fLoading|fStale|fSentinel, "connection", cmdCommandDocs),
			nk("getkeys", -3, fLoading|fStale|fSentinel, "connection", cmdCommandGetkeys),
			nk("help", 2, fLoading|fStale|fSentinel, "connection", cmdCommandHelp),
			nk("info", -2, fLoading|fStale|fSentinel, "connection", cmdCommandInfo),
			nk("list", -2, fLoading|fStale|fSentinel, "connection", cmdCommandList),
		}},
		nk("time", 1, fLoading|fStale|fFast, "", cmdTime),
		nk("lastsave", 1, fLoading|fStale|fFast, "admin dangerous", cmdLastsave),
		nk("save", 1, fNoAsyncLoading|fAdmin|fNoScript|fNoMulti, "", cmdSave),
		nk("bgsave", -1, fNoAsyncLoading|fAdmin|fNoScript, "", cmdBgsave),
		nk("bgrewriteaof", 1, fNoAsyncLoading|fAdmin|fNoScript, "", cmdBgrewriteaof),
		{name: "slowlog", arity: -2, subcmd: []spec{
			nk("get", -2, fAdmin|fLoading|fStale, "", cmdSlowlogGet),
			nk("help", 2, fLoading|fStale, "", cmdSlowlogHelp),
			nk("len", 2, fAdmin|fLoading|fStale, "", cmdSlowlogLen),
			nk("reset", 2, fAdmin|fLoading|fStale, "", cmdSlowlogReset),
		}},
		nk("monitor", 1, fAdmin|cx, "", cmdMonitor),
		nk("shutdown", -1, fAdmin|cx|fNoMulti|fSentinel|fAllowBusy, "", cmdShutdown),
		nk("debug", -2, fAdmin|cx|fProtected, "", cmdDebug),
	}
}
