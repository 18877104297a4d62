// Package redis serves a caskade.DB over the Redis protocol, so that
// redis-cli, redis-benchmark, go-redis, rueidis, hiredis-based clients and
// redis_exporter work with it unmodified.
//
// It is shaped like net/http: configure a Server, call Serve with a
// listener (TCP, a unix socket, or a tls.NewListener for TLS), and stop it
// with Shutdown (graceful) or Close.
//
//	srv := &redis.Server{DB: db, Password: "secret"}
//	go srv.Serve(listener)
//	...
//	srv.Shutdown(ctx) // then db.Sync() and db.Close()
//
// # Protocol
//
// RESP2 by default and RESP3 after HELLO 3; inline commands (as telnet
// and redis-cli send them); pipelining, with replies in order and written
// together once no complete command is waiting. Replies follow Redis byte
// for byte where Redis defines them: nulls ($-1, *-1, or _ in RESP3),
// integer replies, and the texts of errors such as
// "ERR wrong number of arguments for 'get' command",
// "ERR unknown command 'NOPE', with args beginning with: 'a' ",
// "ERR syntax error" and "ERR value is not an integer or out of range".
// HELLO reports server "redis", version RedisVersion (the Redis release
// whose behaviour caskade follows); INFO adds caskade_version.
//
// # Commands
//
//   - Connection: PING, ECHO, QUIT, HELLO (protocol, AUTH, SETNAME), AUTH
//     (password, or the user "default" and the password), SELECT, RESET,
//     CLIENT (ID, INFO, LIST, KILL, SETNAME, GETNAME, SETINFO, NO-EVICT,
//     NO-TOUCH, TRACKING, TRACKINGINFO, CACHING, GETREDIR, HELP).
//   - Strings: GET, SET (EX, PX, EXAT, PXAT, NX, XX, KEEPTTL, GET), SETNX,
//     SETEX, PSETEX, MGET, MSET, MSETNX, GETSET, GETDEL, GETEX, APPEND,
//     STRLEN, GETRANGE (and SUBSTR), SETRANGE, INCR, DECR, INCRBY, DECRBY,
//     INCRBYFLOAT.
//   - Keys: DEL, UNLINK, EXISTS, TOUCH, EXPIRE, PEXPIRE, EXPIREAT,
//     PEXPIREAT (NX, XX, GT, LT), TTL, PTTL, EXPIRETIME, PEXPIRETIME,
//     PERSIST, TYPE, RENAME, RENAMENX, COPY (DB, REPLACE), MOVE, SWAPDB,
//     KEYS, SCAN (MATCH, COUNT, TYPE), RANDOMKEY, DBSIZE, FLUSHDB, FLUSHALL,
//     OBJECT (ENCODING, FREQ, IDLETIME, REFCOUNT, HELP).
//   - Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//   - Server: INFO (all of Redis's sections that apply, with cmdstat_*,
//     errorstat_* and db<n>:keys=...), CONFIG GET/SET/RESETSTAT/HELP,
//     COMMAND (COUNT, INFO, DOCS, LIST, GETKEYS, HELP), TIME, LASTSAVE,
//     SAVE and BGSAVE (a backup, see below), BGREWRITEAOF (a merge of the
//     data files), SLOWLOG, MONITOR, SHUTDOWN, DEBUG SLEEP.
//
// caskade stores strings only: TYPE answers "string" or "none", and the
// commands of other Redis types (lists, hashes, sets, sorted sets,
// streams) are unknown commands, as is Pub/Sub for now.
//
// # Databases
//
// SELECT chooses among Server.Databases databases (default 16, at most
// 256), all stored in the one ordered key space. Database 0 uses keys as
// they are, so that the memcached and HTTP front ends see the same keys;
// database n > 0 stores key k as the bytes 0xff, n, k. Keys of database 0
// may therefore not begin with the byte 0xff ("ERR keys beginning with
// byte 0xff are reserved for other databases"), and KEYS, SCAN, DBSIZE,
// RANDOMKEY and FLUSHDB in database 0 leave the range from 0xff on alone.
// FLUSHALL empties the whole key space. SWAPDB rewrites both databases'
// keys under each other's prefix in one atomic commit (databases of up to
// 256 MiB); keys created in either database while it runs are left where
// they were written.
//
// # Atomicity and transactions
//
// Every command runs against the database with its writes buffered, and
// commits them as one atomic batch conditional on every key it read being
// unchanged (caskade.Batch.Check); on a conflict the command runs again.
// So INCR, APPEND, SET NX/GET/KEEPTTL, MSETNX, RENAME and the rest are
// atomic read-modify-writes even under concurrent clients and other
// protocols. EXEC runs the queued commands against one snapshot, each
// seeing the transaction's own earlier writes, and commits all their
// writes as one batch, conditional on the WATCHed keys (at the version seen
// by WATCH) and on every key the transaction read: a WATCHed key that
// changed makes EXEC return the null array; a change to a key only read
// makes the transaction run again. Range reads (KEYS, SCAN, DBSIZE)
// inside a transaction are not part of that check.
//
// # Client-side caching
//
// CLIENT TRACKING works in the default, OPTIN, OPTOUT and BCAST (with
// PREFIX) modes, as rueidis and go-redis use it. Invalidations are driven
// by caskade.DB.Subscribe, so a key changed through any protocol, or
// directly through the embedded DB, is invalidated. They are sent as RESP3
// push messages to the client or to its REDIRECT target if that speaks
// RESP3. A commit of more than 1000 keys (FLUSHALL, for example) sends
// every tracking client a null invalidation (flush everything), as Redis
// does for FLUSHALL. NOLOOP suppresses invalidations of a client's own
// writes.
//
// # Safety
//
// Protected mode (the default): without a password, clients from
// non-loopback addresses get Redis's DENIED error and are disconnected.
// Before authentication, requests are limited as in Redis (10 arguments,
// 16 KiB per argument, 1 MiB per command); afterwards by
// proto-max-bulk-len (512 MiB). Other limits: MaxClients, IdleTimeout, the
// engine's key and value sizes. A connection whose first word is POST or
// Host: (cross-protocol scripting) is closed and logged. Passwords are
// compared in constant time. A malformed request gets Redis's protocol
// error and the connection is closed; nothing a client sends can choose a
// file path on the server (CONFIG SET refuses dir and the other paths).
//
// # Differences from Redis
//
//   - Data is durable (fsync policy of the DB) and ordered; KEYS with a
//     literal prefix reads only that range.
//   - SCAN cursors are numbers that stand for the key the scan resumes at:
//     a scan never misses a key present throughout it, and a cursor
//     outlives the server's cursor table (it then resumes at the key's
//     first four bytes, which may return some keys again).
//   - DBSIZE and INFO keyspace count keys that expired but were not yet
//     dropped by active expiry (as Redis does); INFO's avg_ttl of database
//     0 is not computed (0).
//   - SAVE and BGSAVE write a consistent backup (caskade.DB.Backup, which
//     caskade.Open accepts as a database directory) into a new directory
//     under Server.BackupDir; BGREWRITEAOF runs caskade.DB.Merge.
//   - INCRBYFLOAT computes in float64, not long double; results are
//     rounded to 16 significant digits, so 0.1+0.2 gives 0.3 as in Redis.
//   - OBJECT IDLETIME is always 0 (no access times are kept), OBJECT FREQ
//     answers as Redis does without an LFU policy, and OBJECT ENCODING is
//     derived from the value (int, embstr up to 44 bytes, raw).
//   - Invalidations for a RESP2 REDIRECT target are not sent (that needs
//     Pub/Sub on the target connection).
//   - There is one user, "default" (no ACL).
package redis
