package redis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caskade/caskade"
	goredis "github.com/redis/go-redis/v9"
)

func (ts *testServer) goRedis(opts *goredis.Options) *goredis.Client {
	ts.t.Helper()
	if opts == nil {
		opts = &goredis.Options{}
	}
	opts.Addr = ts.addr
	rdb := goredis.NewClient(opts)
	ts.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// res returns a command's result, failing the test on an error.
func res[T any, C interface{ Result() (T, error) }](t *testing.T, c C) T {
	t.Helper()
	v, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func resInt(t *testing.T, c interface{ Int64() (int64, error) }) int64 {
	t.Helper()
	v, err := c.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func resFloat(t *testing.T, c interface{ Float64() (float64, error) }) float64 {
	t.Helper()
	v, err := c.Float64()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func TestGoRedisConnection(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	rdb := ts.goRedis(&goredis.Options{ClientName: "tester"})
	eq(t, "PING", res(t, rdb.Ping(ctx)), "PONG")
	eq(t, "ECHO", res(t, rdb.Echo(ctx, "hi")), "hi")
	eq(t, "CLIENT GETNAME", res(t, rdb.ClientGetName(ctx)), "tester")
	id := res(t, rdb.ClientID(ctx))
	if id <= 0 {
		t.Fatalf("CLIENT ID %d", id)
	}
	info := res(t, rdb.ClientInfo(ctx))
	eq(t, "CLIENT INFO name", info.Name, "tester")
	eq(t, "CLIENT INFO resp", info.Resp, 3)
	eq(t, "CLIENT INFO lib-name", strings.HasPrefix(info.LibName, "go-redis"), true)
	list := res(t, rdb.ClientList(ctx))
	if !strings.Contains(list, "name=tester") {
		t.Fatalf("CLIENT LIST: %q", list)
	}
	// Database selection through the client options.
	rdb3 := ts.goRedis(&goredis.Options{DB: 3})
	res(t, rdb3.Set(ctx, "k", "in3", 0))
	eq(t, "GET db0", rdb.Get(ctx, "k").Err(), error(goredis.Nil))
	eq(t, "GET db3", res(t, rdb3.Get(ctx, "k")), "in3")
	// CLIENT KILL ID.
	victim := ts.goRedis(&goredis.Options{PoolSize: 1, ClientName: "victim"})
	vid := res(t, victim.ClientID(ctx))
	eq(t, "CLIENT KILL", res(t, rdb.ClientKillByFilter(ctx, "ID", fmt.Sprint(vid))), int64(1))
	// go-redis reconnects transparently.
	eq(t, "PING after kill", res(t, victim.Ping(ctx)), "PONG")
	// The RESP2 handshake works too.
	r2 := ts.goRedis(&goredis.Options{Protocol: 2})
	eq(t, "RESP2 GET", r2.Get(ctx, "nokey").Err(), error(goredis.Nil))
	eq(t, "RESP2 SET", res(t, r2.Set(ctx, "r2", "v", 0)), "OK")
}

func TestGoRedisPassword(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.Password = "pw" })
	ctx := context.Background()
	eq(t, "PING with password", res(t, ts.goRedis(&goredis.Options{Password: "pw"}).Ping(ctx)), "PONG")
	eq(t, "PING with user", res(t, ts.goRedis(&goredis.Options{Username: "default", Password: "pw"}).Ping(ctx)), "PONG")
	err := ts.goRedis(&goredis.Options{Password: "bad", MaxRetries: -1}).Ping(ctx).Err()
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("bad password: %v", err)
	}
	err = ts.goRedis(&goredis.Options{MaxRetries: -1}).Get(ctx, "x").Err()
	if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("no password: %v", err)
	}
}

func TestGoRedisStrings(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	rdb := ts.goRedis(nil)
	eq(t, "SET", res(t, rdb.Set(ctx, "s", "v", 0)), "OK")
	eq(t, "GET", res(t, rdb.Get(ctx, "s")), "v")
	eq(t, "GET missing", rdb.Get(ctx, "missing").Err(), error(goredis.Nil))
	res(t, rdb.Set(ctx, "ttl", "v", time.Hour))
	if d := res(t, rdb.TTL(ctx, "ttl")); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("TTL %v", d)
	}
	res(t, rdb.SetArgs(ctx, "ttl", "w", goredis.SetArgs{KeepTTL: true}))
	if d := res(t, rdb.TTL(ctx, "ttl")); d < 59*time.Minute {
		t.Fatalf("KEEPTTL lost the TTL: %v", d)
	}
	eq(t, "SET GET", res(t, rdb.SetArgs(ctx, "ttl", "x", goredis.SetArgs{Get: true})), "w")
	eq(t, "TTL after SET", res(t, rdb.TTL(ctx, "ttl")), time.Duration(-1))
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	res(t, rdb.SetArgs(ctx, "exat", "v", goredis.SetArgs{ExpireAt: at}))
	eq(t, "EXPIRETIME", res(t, rdb.ExpireTime(ctx, "exat")), time.Duration(at.Unix())*time.Second)
	res(t, rdb.Set(ctx, "px", "v", 1500*time.Millisecond))
	if ms := res(t, rdb.PTTL(ctx, "px")); ms <= time.Second || ms > 1500*time.Millisecond {
		t.Fatalf("PTTL %v", ms)
	}
	eq(t, "SETNX", res(t, rdb.SetNX(ctx, "s", "z", 0)), false)
	eq(t, "SETXX", res(t, rdb.SetXX(ctx, "s", "z", 0)), true)
	eq(t, "SETEX", res(t, rdb.SetEx(ctx, "ex", "v", 10*time.Second)), "OK")
	eq(t, "GETEX PERSIST", res(t, rdb.GetEx(ctx, "ex", 0)), "v")
	eq(t, "GETSET", res(t, rdb.GetSet(ctx, "s", "y")), "z")
	eq(t, "GETDEL", res(t, rdb.GetDel(ctx, "s")), "y")
	eq(t, "MSET", res(t, rdb.MSet(ctx, "a", "1", "b", "2")), "OK")
	vals := res(t, rdb.MGet(ctx, "a", "nope", "b"))
	eq(t, "MGET", fmt.Sprint(vals), "[1 <nil> 2]")
	eq(t, "MSETNX", res(t, rdb.MSetNX(ctx, "a", "x", "c", "y")), false)
	eq(t, "APPEND", res(t, rdb.Append(ctx, "a", "23")), int64(3))
	eq(t, "STRLEN", res(t, rdb.StrLen(ctx, "a")), int64(3))
	eq(t, "GETRANGE", res(t, rdb.GetRange(ctx, "a", 1, -1)), "23")
	eq(t, "SETRANGE", res(t, rdb.SetRange(ctx, "a", 1, "xx")), int64(3))
	eq(t, "INCR", res(t, rdb.Incr(ctx, "n")), int64(1))
	eq(t, "INCRBY", res(t, rdb.IncrBy(ctx, "n", 41)), int64(42))
	eq(t, "DECR", res(t, rdb.Decr(ctx, "n")), int64(41))
	eq(t, "DECRBY", res(t, rdb.DecrBy(ctx, "n", 40)), int64(1))
	eq(t, "INCRBYFLOAT", res(t, rdb.IncrByFloat(ctx, "n", 1.5)), 2.5)
	err := rdb.Incr(ctx, "a").Err()
	if err == nil || err.Error() != "ERR value is not an integer or out of range" {
		t.Fatalf("INCR on a string: %v", err)
	}
	// INCR keeps the TTL, as in Redis.
	res(t, rdb.Set(ctx, "cnt", "1", time.Hour))
	res(t, rdb.Incr(ctx, "cnt"))
	if d := res(t, rdb.TTL(ctx, "cnt")); d < 59*time.Minute {
		t.Fatalf("INCR lost the TTL: %v", d)
	}
}

func TestGoRedisKeys(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	rdb := ts.goRedis(nil)
	for i := range 50 {
		res(t, rdb.Set(ctx, fmt.Sprintf("user:%02d", i), i, 0))
	}
	res(t, rdb.Set(ctx, "other", "x", 0))
	keys := res(t, rdb.Keys(ctx, "user:1?"))
	eq(t, "KEYS", len(keys), 10)
	eq(t, "KEYS h[ae]llo", len(res(t, rdb.Keys(ctx, "o[st]her"))), 1)
	// SCAN visits every key exactly once when nothing changes.
	seen := map[string]int{}
	var cursor uint64
	for {
		ks, next, err := rdb.Scan(ctx, cursor, "user:*", 7).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			seen[k]++
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	eq(t, "SCAN keys", len(seen), 50)
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("SCAN returned %s %d times", k, n)
		}
	}
	hashes, _ := rdb.ScanType(ctx, 0, "", 100, "hash").Val()
	eq(t, "SCAN TYPE hash", len(hashes), 0)
	strs, _ := rdb.ScanType(ctx, 0, "", 100, "string").Val()
	eq(t, "SCAN TYPE string", len(strs), 51)
	eq(t, "DBSIZE", res(t, rdb.DBSize(ctx)), int64(51))
	eq(t, "EXISTS", res(t, rdb.Exists(ctx, "user:01", "nope", "other")), int64(2))
	eq(t, "TOUCH", res(t, rdb.Touch(ctx, "user:01", "nope")), int64(1))
	eq(t, "TYPE", res(t, rdb.Type(ctx, "other")), "string")
	eq(t, "EXPIRE", res(t, rdb.Expire(ctx, "other", time.Minute)), true)
	eq(t, "EXPIRE GT", res(t, rdb.ExpireGT(ctx, "other", time.Second)), false)
	eq(t, "PEXPIRE", res(t, rdb.PExpire(ctx, "other", 2*time.Minute)), true)
	eq(t, "PERSIST", res(t, rdb.Persist(ctx, "other")), true)
	eq(t, "TTL", res(t, rdb.TTL(ctx, "other")), time.Duration(-1))
	eq(t, "EXPIREAT", res(t, rdb.ExpireAt(ctx, "other", time.Now().Add(-time.Second))), true)
	eq(t, "expired", rdb.Get(ctx, "other").Err(), error(goredis.Nil))
	eq(t, "RENAME", res(t, rdb.Rename(ctx, "user:00", "renamed")), "OK")
	eq(t, "RENAMENX", res(t, rdb.RenameNX(ctx, "renamed", "user:01")), false)
	eq(t, "COPY", res(t, rdb.Copy(ctx, "renamed", "copied", 2, false)), int64(1))
	eq(t, "MOVE", res(t, rdb.Move(ctx, "renamed", 4)), true)
	eq(t, "DEL", res(t, rdb.Del(ctx, "user:01", "user:02", "nope")), int64(2))
	eq(t, "UNLINK", res(t, rdb.Unlink(ctx, "user:03")), int64(1))
	if k := res(t, rdb.RandomKey(ctx)); !strings.HasPrefix(k, "user:") {
		t.Fatalf("RANDOMKEY %q", k)
	}
	eq(t, "OBJECT ENCODING", res(t, rdb.ObjectEncoding(ctx, "user:04")), "int")
	eq(t, "OBJECT REFCOUNT", res(t, rdb.ObjectRefCount(ctx, "user:04")), int64(2147483647))
	eq(t, "SWAPDB", res(t, rdb.Do(ctx, "SWAPDB", 0, 4)), any("OK"))
	eq(t, "DBSIZE after SWAPDB", res(t, rdb.DBSize(ctx)), int64(1))
	eq(t, "GET swapped", res(t, rdb.Get(ctx, "renamed")), "0")
	eq(t, "FLUSHDB", res(t, rdb.FlushDB(ctx)), "OK")
	eq(t, "DBSIZE after FLUSHDB", res(t, rdb.DBSize(ctx)), int64(0))
	eq(t, "FLUSHALL", res(t, rdb.FlushAll(ctx)), "OK")
	if n := ts.db.Stats().Keys; n != 0 {
		t.Fatalf("%d keys left after FLUSHALL", n)
	}
}

// TestScanUnderWrites checks SCAN's guarantee: every key present for the
// whole scan is returned, while other keys come and go.
func TestScanUnderWrites(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	ts := startServer(t, nil)
	ctx := context.Background()
	rdb := ts.goRedis(nil)
	stable := map[string]bool{}
	for i := range 500 {
		k := fmt.Sprintf("s%04d", rng.IntN(100000))
		stable[k] = true
		res(t, rdb.Set(ctx, k, i, 0))
	}
	seen := map[string]bool{}
	var cursor uint64
	for i := 0; ; i++ {
		ks, next, err := rdb.Scan(ctx, cursor, "", int64(1+rng.IntN(20))).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			seen[k] = true
		}
		// Churn: keys that are not stable.
		res(t, rdb.Set(ctx, fmt.Sprintf("t%04d", rng.IntN(100000)), i, 0))
		res(t, rdb.Del(ctx, fmt.Sprintf("t%04d", rng.IntN(100000))))
		if next == 0 {
			break
		}
		cursor = next
	}
	for k := range stable {
		if !seen[k] {
			t.Fatalf("SCAN missed %s", k)
		}
	}
}

func TestGoRedisServer(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	rdb := ts.goRedis(nil)
	res(t, rdb.Set(ctx, "k", "v", time.Hour))
	rdb.Get(ctx, "missing")
	rdb.Incr(ctx, "k") // an error reply
	info := res(t, rdb.Info(ctx, "all"))
	for _, want := range []string{"# Server", "redis_version:" + RedisVersion, "# Clients", "connected_clients:",
		"# Memory", "# Persistence", "# Stats", "# Replication", "role:master", "# CPU", "# Commandstats",
		"cmdstat_set:calls=1,usec=", "rejected_calls=0,failed_calls=0", "cmdstat_incr:calls=1,", "failed_calls=1",
		"# Errorstats", "errorstat_ERR:count=", "# Keyspace", "db0:keys=1,expires=1,avg_ttl="} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO ALL lacks %q:\n%s", want, info)
		}
	}
	def := res(t, rdb.Info(ctx))
	if strings.Contains(def, "# Commandstats") || !strings.Contains(def, "# Keyspace") {
		t.Fatalf("INFO default sections wrong:\n%s", def)
	}
	cfg := res(t, rdb.ConfigGet(ctx, "*"))
	for _, p := range []string{"maxclients", "timeout", "requirepass", "databases", "appendonly", "appendfsync",
		"save", "proto-max-bulk-len", "port", "bind", "dir", "slowlog-log-slower-than"} {
		if _, ok := cfg[p]; !ok {
			t.Fatalf("CONFIG GET * lacks %s: %v", p, cfg)
		}
	}
	eq(t, "appendonly", cfg["appendonly"], "yes")
	eq(t, "appendfsync", cfg["appendfsync"], "no") // the DB's SyncNone; Server.Sync is left unset
	eq(t, "CONFIG SET maxclients", res(t, rdb.ConfigSet(ctx, "maxclients", "100")), "OK")
	eq(t, "maxclients", res(t, rdb.ConfigGet(ctx, "maxclients"))["maxclients"], "100")
	err := rdb.ConfigSet(ctx, "dir", "/tmp").Err()
	eq(t, "CONFIG SET dir", fmt.Sprint(err), "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config")
	err = rdb.ConfigSet(ctx, "nope", "1").Err()
	eq(t, "CONFIG SET nope", fmt.Sprint(err), "ERR Unknown option or number of arguments for CONFIG SET - 'nope'")
	err = rdb.ConfigSet(ctx, "maxclients", "x").Err()
	eq(t, "CONFIG SET bad", fmt.Sprint(err), "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer")
	eq(t, "CONFIG RESETSTAT", res(t, rdb.ConfigResetStat(ctx)), "OK")
	if info := res(t, rdb.Info(ctx, "commandstats")); strings.Contains(info, "cmdstat_set") {
		t.Fatalf("RESETSTAT kept stats: %s", info)
	}
	n := resInt(t, rdb.Do(ctx, "COMMAND", "COUNT"))
	if n < 60 {
		t.Fatalf("COMMAND COUNT %d", n)
	}
	cmds := res(t, rdb.Command(ctx))
	get := cmds["get"]
	if get == nil || get.Arity != 2 || get.FirstKeyPos != 1 || !get.ReadOnly {
		t.Fatalf("COMMAND get: %+v", get)
	}
	list := res(t, rdb.CommandList(ctx, &goredis.FilterBy{Pattern: "client*"}))
	if len(list) < 5 {
		t.Fatalf("COMMAND LIST: %v", list)
	}
	tm := res(t, rdb.Time(ctx))
	if time.Since(tm).Abs() > time.Minute {
		t.Fatalf("TIME %v", tm)
	}
	if res(t, rdb.LastSave(ctx)) <= 0 {
		t.Fatal("LASTSAVE")
	}
	// SLOWLOG with a threshold that logs everything.
	res(t, rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0"))
	res(t, rdb.Do(ctx, "DEBUG", "SLEEP", "0.01"))
	logs := res(t, rdb.SlowLogGet(ctx, 10))
	found := false
	for _, l := range logs {
		if len(l.Args) == 3 && strings.EqualFold(l.Args[0], "debug") && l.Duration >= 10*time.Millisecond {
			found = true
		}
	}
	if !found {
		t.Fatalf("SLOWLOG lacks DEBUG SLEEP: %+v", logs)
	}
	if resInt(t, rdb.Do(ctx, "SLOWLOG", "LEN")) == 0 {
		t.Fatal("SLOWLOG LEN 0")
	}
	// Credentials are hidden as Redis hides them, and nothing else.
	res(t, rdb.Do(ctx, "SLOWLOG", "RESET"))
	res(t, rdb.Do(ctx, "HELLO", "2", "AUTH", "default", "pw", "SETNAME", "nm"))
	res(t, rdb.Do(ctx, "CONFIG", "SET", "timeout", "0", "requirepass", ""))
	var got []string
	for _, l := range res(t, rdb.SlowLogGet(ctx, 3)) {
		got = append(got, strings.Join(l.Args, " "))
	}
	eq(t, "SLOWLOG GET redactions", strings.Join(got, "\n"),
		"CONFIG SET timeout 0 requirepass (redacted)\nHELLO 2 AUTH (redacted) (redacted) SETNAME nm\nSLOWLOG RESET")
	res(t, rdb.Do(ctx, "SLOWLOG", "RESET"))
	eq(t, "SLOWLOG LEN after RESET", resInt(t, rdb.Do(ctx, "SLOWLOG", "LEN")) <= 1, true)
	// BGREWRITEAOF runs a merge.
	eq(t, "BGREWRITEAOF", res(t, rdb.BgRewriteAOF(ctx)), "Background append only file rewriting started")
	waitFor(t, "the merge to finish", func() bool { return !ts.srv.merging.Load() })
}

func TestSaveWritesBackup(t *testing.T) {
	var backups string
	ts := startServer(t, func(s *Server) {
		backups = t.TempDir()
		s.BackupDir = backups
	})
	ctx := context.Background()
	rdb := ts.goRedis(nil)
	res(t, rdb.Set(ctx, "k", "v", 0))
	eq(t, "SAVE", res(t, rdb.Save(ctx)), "OK")
	eq(t, "BGSAVE", res(t, rdb.BgSave(ctx)), "Background saving started")
	waitFor(t, "BGSAVE to finish", func() bool { return !ts.srv.bgsave.Load() })
	ents, err := readDirNames(backups)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 {
		t.Fatalf("backups: %v", ents)
	}
	sort.Strings(ents)
	checkBackup(t, backups+"/"+ents[0], "k", "v")
}

// TestBgsaveInMulti: as in Redis, BGSAVE and BGREWRITEAOF in a
// transaction are scheduled, and start once EXEC has committed, so that
// the backup holds the transaction's writes.
func TestBgsaveInMulti(t *testing.T) {
	var backups string
	ts := startServer(t, func(s *Server) {
		backups = t.TempDir()
		s.BackupDir = backups
	})
	c := ts.dial()
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("BGSAVE"), "+QUEUED\r\n")
	c.do(cmd("SET", "k", "v"), "+QUEUED\r\n")
	c.do(cmd("BGSAVE", "SCHEDULE"), "+QUEUED\r\n")
	c.do(cmd("BGREWRITEAOF"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*4\r\n+Background saving scheduled\r\n+OK\r\n+Background saving scheduled\r\n"+
		"+Background append only file rewriting scheduled\r\n")
	waitFor(t, "BGSAVE and the merge to finish", func() bool { return !ts.srv.bgsave.Load() && !ts.srv.merging.Load() })
	ents, err := readDirNames(backups)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Fatalf("backups: %v", ents)
	}
	checkBackup(t, backups+"/"+ents[0], "k", "v")
}

func TestMonitor(t *testing.T) {
	ts := startServer(t, nil)
	m := ts.dial()
	m.do(cmd("MONITOR"), "+OK\r\n")
	// As in Redis 7, a monitor (a replica there) may not touch the keys.
	m.do(cmd("GET", "k"), "-ERR Replica can't interact with the keyspace\r\n")
	m.do(cmd("SET", "k", "v"), "-ERR Replica can't interact with the keyspace\r\n")
	m.do(cmd("DBSIZE"), "-ERR Replica can't interact with the keyspace\r\n")
	c := ts.dial()
	c.do(cmd("SET", "k", "a \"b\"\n"), "+OK\r\n")
	line := m.readLine()
	if !strings.Contains(line, `] "SET" "k" "a \"b\"\n"`) || line[0] != '+' || !strings.Contains(line, "[0 127.0.0.1:") {
		t.Fatalf("MONITOR line %q", line)
	}
	c.do(cmd("AUTH", "secret"), "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n")
	if line := m.readLine(); !strings.Contains(line, `"AUTH" "(redacted)"`) {
		t.Fatalf("MONITOR did not redact AUTH: %q", line)
	}
	// HELLO: as in Redis, only the user name and password are hidden.
	for _, h := range [][]string{
		{"HELLO", "2", "AUTH", "default", "secret", "SETNAME", "nm"},
		{"HELLO", "2", "SETNAME", "nm", "AUTH", "default", "secret"},
	} {
		c.send(cmd(h...))
		if r, err := readRawReply(c.br, nil); err != nil || !strings.HasPrefix(string(r), "*14\r\n") {
			t.Fatalf("%q: %q, %v", h, r, err)
		}
	}
	for _, want := range []string{
		`] "HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "nm"` + "\r\n",
		`] "HELLO" "2" "SETNAME" "nm" "AUTH" "(redacted)" "(redacted)"` + "\r\n",
	} {
		if line := m.readLine(); !strings.HasSuffix(line, want) {
			t.Fatalf("MONITOR line %q, want one ending %s", line, want)
		}
	}
}

// TestMonitorHidesAdmin: as in Redis, MONITOR never shows an
// administrative command, alone or in a transaction: CONFIG SET
// requirepass would show the new password.
func TestMonitorHidesAdmin(t *testing.T) {
	ts := startServer(t, nil)
	m := ts.dial()
	m.do(cmd("MONITOR"), "+OK\r\n")
	c := ts.dial()
	c.do(cmd("CONFIG", "SET", "requirepass", ""), "+OK\r\n")
	c.do(cmd("CLIENT", "KILL", "ID", "999999"), ":0\r\n")
	c.do(cmd("SLOWLOG", "RESET"), "+OK\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("CONFIG", "GET", "nope"), "+QUEUED\r\n")
	c.do(cmd("PING", "in"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*2\r\n*0\r\n$2\r\nin\r\n")
	c.do(cmd("PING", "after"), "$5\r\nafter\r\n")
	for _, want := range []string{`] "MULTI"`, `] "PING" "in"`, `] "EXEC"`, `] "PING" "after"`} {
		if line := m.readLine(); !strings.HasSuffix(line, want+"\r\n") {
			t.Fatalf("MONITOR line %q, want one ending %s", line, want)
		}
	}
}

// TestMonitorAfterRun checks that MONITOR shows a command once it has run,
// as Redis 7 does: SELECT with the database it chose, EXEC after the
// commands it ran, and the RESET that ends a client's own MONITOR.
func TestMonitorAfterRun(t *testing.T) {
	ts := startServer(t, nil)
	m := ts.dial()
	m.do(cmd("MONITOR"), "+OK\r\n")
	c := ts.dial()
	c.do(cmd("SELECT", "3"), "+OK\r\n")
	c.do(cmd("MULTI"), "+OK\r\n")
	c.do(cmd("SET", "a", "1"), "+QUEUED\r\n")
	c.do(cmd("SELECT", "2"), "+QUEUED\r\n")
	c.do(cmd("EXEC"), "*2\r\n+OK\r\n+OK\r\n")
	c.do(cmd("EXEC"), "-ERR EXEC without MULTI\r\n")
	c.do(cmd("MONITOR"), "+OK\r\n")
	c.do(cmd("RESET"), "+RESET\r\n")
	c.do(cmd("PING"), "+PONG\r\n")
	for _, want := range []string{
		`[3] "SELECT" "3"`,
		`[3] "MULTI"`,
		`[3] "SET" "a" "1"`,
		`[2] "SELECT" "2"`,
		`[2] "EXEC"`,
		`[2] "EXEC"`,
		`[0] "RESET"`,
		`[0] "PING"`,
	} {
		// +<time> [<db> <address>] <arguments>
		line := strings.TrimSuffix(m.readLine(), "\r\n")
		_, rest, _ := strings.Cut(line, " [")
		db, rest, _ := strings.Cut(rest, " ")
		_, args, _ := strings.Cut(rest, "] ")
		if got := "[" + db + "] " + args; got != want {
			t.Fatalf("MONITOR line %q, want %s", line, want)
		}
	}
}

// TestConcurrentIncr: concurrent INCRs from many clients lose nothing.
func TestConcurrentIncr(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	const clients, each = 16, 200
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rdb := goredis.NewClient(&goredis.Options{Addr: ts.addr, PoolSize: 1})
			defer rdb.Close()
			for range each {
				if err := rdb.Incr(ctx, "counter").Err(); err != nil {
					errs <- err
					return
				}
				if err := rdb.IncrByFloat(ctx, "fcounter", 1).Err(); err != nil {
					errs <- err
					return
				}
				if err := rdb.Append(ctx, "log", "x").Err(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rdb := ts.goRedis(nil)
	eq(t, "counter", resInt(t, rdb.Get(ctx, "counter")), int64(clients*each))
	eq(t, "fcounter", resFloat(t, rdb.Get(ctx, "fcounter")), float64(clients*each))
	eq(t, "log length", res(t, rdb.StrLen(ctx, "log")), int64(clients*each))
}

// TestScanCursorAcrossRestart continues a SCAN on a new server over the
// same database, after that server handed out its own cursors: a cursor
// of the old server must not be taken for one of the new server's (the
// table's ids start anew), which would resume the scan further on and
// skip keys. SCAN may return keys again, never miss one.
func TestScanCursorAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	db, err := caskade.Open(dir, &caskade.Options{Sync: caskade.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	first := startServerOn(t, db)
	rdb := first.goRedis(nil)
	for i := range 100 {
		res(t, rdb.Set(ctx, fmt.Sprintf("key:%03d", i), i, 0))
	}
	seen := map[string]bool{}
	ks, cursor, err := rdb.Scan(ctx, 0, "", 10).Result()
	if err != nil || cursor == 0 {
		t.Fatalf("SCAN: %v %v", cursor, err)
	}
	for _, k := range ks {
		seen[k] = true
	}

	// A server restarted over the same data, where another client scans.
	second := startServerOn(t, db)
	other := second.goRedis(nil)
	if _, _, err := other.Scan(ctx, 0, "", 50).Result(); err != nil {
		t.Fatal(err)
	}
	rdb2 := second.goRedis(nil)
	for cursor != 0 {
		if ks, cursor, err = rdb2.Scan(ctx, cursor, "", 10).Result(); err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			seen[k] = true
		}
	}
	for i := range 100 {
		if k := fmt.Sprintf("key:%03d", i); !seen[k] {
			t.Fatalf("SCAN continued on the restarted server missed %s", k)
		}
	}
}
