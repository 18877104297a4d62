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
// On Linux, TCP and unix socket clients are served by event loops
// (Server.EventLoops, one per processor by default; see package netloop)
// rather than a goroutine each: a loop runs the commands that have arrived
// on all its ready clients, commits their blind writes (SET, MSET,
// INCR...) together, then writes every reply. A client moves to a
// goroutine of its own for a command bigger than its read buffer, for
// SAVE, DEBUG and SHUTDOWN, and under SyncAlways for any write but a blind
// one (whose commit a goroutine makes for the whole turn), so that no
// loop waits for the disk.
//
// # Commands
//
//   - Connection: PING, ECHO, QUIT, HELLO (protocol, AUTH, SETNAME), AUTH
//     (password, or the user "default" and the password), SELECT, RESET,
//     CLIENT (ID, INFO, LIST, KILL, SETNAME, GETNAME, SETINFO, NO-EVICT,
//     NO-TOUCH, REPLY, PAUSE, UNPAUSE, UNBLOCK, TRACKING, TRACKINGINFO,
//     CACHING, GETREDIR, HELP). CLIENT PAUSE holds, without refusing
//     them, every command (ALL) or those that may write (WRITE: write
//     commands, EXEC with a write queued, CSK.COMMIT) until its timeout or
//     CLIENT UNPAUSE; a client whose command is held runs nothing more
//     meanwhile, and Shutdown or Close ends it without running the
//     command. Active and lazy expiry go on during a pause (Redis stops
//     them). CLIENT UNBLOCK replies 0: no command blocks.
//     CLIENT REPLY OFF and SKIP drop replies as Redis does, including its
//     quirk inside MULTI: after a queued CLIENT REPLY OFF, EXEC's array
//     header still counts the replies it then drops. Pushes
//     (invalidations) are not replies and are still sent, as in Redis 7.2.
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
//   - Ordered data and interactive transactions (beyond Redis, see below):
//     CSK.RANGE, CSK.RANGESEL, CSK.GETKEY, CSK.CLEARRANGE, CSK.ATOMIC,
//     CSK.VERSION, CSK.BEGIN, CSK.COMMIT, CSK.ROLLBACK, CSK.SNAPSHOT.
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
// byte 0xff are reserved for other databases", which COPY, MOVE and
// SWAPDB also reply rather than bring such a key of another database
// into database 0), and KEYS, SCAN, DBSIZE,
// RANDOMKEY and FLUSHDB in database 0 leave the range from 0xff on alone.
// FLUSHALL empties the whole key space. SWAPDB rewrites both databases'
// keys under each other's prefix in one atomic commit (databases of up to
// 256 MiB); keys created in either database while it runs are left where
// they were written.
//
// The memcached front end stores client flags beside a key's value. A
// command that changes a value in place, its expiry or its key (APPEND,
// SETRANGE, INCR and its kin, INCRBYFLOAT, EXPIRE and its kin, PERSIST,
// GETEX, RENAME, RENAMENX, COPY, MOVE, SWAPDB) keeps them, as memcached's
// append, incr and touch do; one that sets a new value (SET, even with
// KEEPTTL, GETSET, MSET, ...) clears them, as an HTTP PUT does.
//
// # Atomicity and transactions
//
// Every command runs against the database with its writes buffered, and
// commits them as one atomic batch conditional on every key it read being
// unchanged (caskade.Batch.Check); on a conflict the command runs again,
// and after two conflicts it takes the database's turn lock (caskade.Turn,
// shared with the memcached and HTTP front ends) so that commands
// fighting over the same keys take turns: no command fails for
// contention. So APPEND, SET NX/GET/KEEPTTL, MSETNX, RENAME and the rest
// are atomic read-modify-writes even under concurrent clients and other
// protocols. INCR, DECR, INCRBY and DECRBY outside MULTI are made by the
// commit itself (caskade.Batch.AddInt) and never conflict; pipelined, they
// share one commit with the blind writes around them. EXEC runs the
// queued commands against one snapshot, each seeing the transaction's own
// earlier writes, and commits all their writes as one batch, conditional
// on the WATCHed keys (at the version seen by WATCH), on every key the
// transaction read, and on every range it read (KEYS, SCAN, DBSIZE,
// RANDOMKEY; caskade.Batch.CheckRange): a WATCHed key that changed makes
// EXEC return the null array; a change to a key or range only read makes
// the transaction run again, so its replies and writes are those of one
// instant, as in Redis; a key that expires between the snapshot and the
// commit counts as such a change. Queued admin commands, whose effects lie
// outside the transaction (CLIENT KILL, CLIENT PAUSE, CONFIG SET, DEBUG,
// BGSAVE), run once: a run again sends their first replies.
//
// # Ordered data: the CSK commands
//
// caskade's keys are ordered, and a module-style command family exposes
// what FoundationDB offers on top of that. Keys are the client's keys in
// the selected database; every range and selector stays inside that
// database (clamped at its bounds), so keys of other databases never
// appear.
//
//   - CSK.RANGE [FROM begin] [TO end] [LIMIT n] [REV] [KEYSONLY]: the pairs
//     with keys in [begin, end) (no FROM: the start of the database; no
//     TO: its end), ascending, or descending with REV (the n nearest the
//     end), at most n (LIMIT 0: no limit). The reply is a flat array key1,
//     value1, key2, value2, ... in RESP2 and RESP3 alike (not a map, so
//     the order is kept), or with KEYSONLY an array of keys. Errors:
//     "ERR syntax error" for an unknown option, "ERR value is not an
//     integer or out of range" for a LIMIT that is not an integer, "ERR
//     value is out of range, must be positive" for a negative one (as
//     Redis replies to a negative ZPOPMIN count; FoundationDB's
//     range_limits_invalid), "ERR inverted range" if begin > end
//     (FoundationDB's inverted_range).
//   - CSK.GETKEY key orequal offset: resolves a FoundationDB key selector
//     (orequal 0 or 1, then offset keys forward, or back if negative):
//     firstGreaterOrEqual(k) is "k 0 1", firstGreaterThan(k) "k 1 1",
//     lastLessThan(k) "k 0 0", lastLessOrEqual(k) "k 1 0". The reply is
//     the key; a selector that lands before the database's first key gives
//     the empty string, one past its last key the null bulk string.
//   - CSK.RANGESEL bkey borequal boffset ekey eorequal eoffset [LIMIT n]
//     [REV] [KEYSONLY]: the pairs from the key the first selector resolves
//     to (inclusive) to the second's (exclusive), replied as CSK.RANGE.
//     An end that resolves before the begin gives an empty array.
//   - CSK.CLEARRANGE [FROM begin] [TO end]: deletes every key in [begin,
//     end) of the database in one atomic commit; +OK.
//   - CSK.ATOMIC op key param: a FoundationDB atomic operation, op one of
//     ADD, AND, OR, XOR, MAX, MIN (little-endian integers of param's
//     length), BYTEMAX, BYTEMIN, APPENDIFFITS, COMPAREANDCLEAR (see the
//     caskade.Tx methods of the same names), case-insensitive. It runs as
//     a one-operation transaction, which never conflicts; +OK, or "ERR
//     unknown atomic operation 'X'".
//   - CSK.VERSION key: the commit version that last wrote the key (0 if it
//     has none), which changes on every write of the key: a compare token.
//
// In database 0, FROM, TO and selector keys from 0xff on stand for the
// end of the database (they are not refused, unlike keys written there).
// The CSK commands are not allowed inside MULTI ("ERR Command not allowed
// inside a transaction"); use CSK.BEGIN for transactions over ranges.
//
// # Interactive transactions
//
// CSK.BEGIN starts a serializable, optimistic transaction (a caskade.Tx)
// on the connection, in the database selected then. Until CSK.COMMIT or
// CSK.ROLLBACK, the commands GET, MGET, EXISTS, SET key value (the plain
// form only: "ERR only plain SET is supported in a caskade transaction"),
// MSET, DEL, INCR, INCRBY, DECR, DECRBY, CSK.RANGE, CSK.RANGESEL,
// CSK.GETKEY, CSK.CLEARRANGE and CSK.ATOMIC run against the transaction:
// reads see its snapshot with its own writes and record read conflicts,
// writes are buffered. CSK.SNAPSHOT command args... runs one of GET, MGET,
// EXISTS, CSK.RANGE, CSK.RANGESEL or CSK.GETKEY as a snapshot read, which
// records no read conflict. Connection housekeeping stays allowed: PING,
// ECHO, TIME, QUIT, RESET, HELLO, AUTH, CLIENT and COMMAND. Everything
// else, SELECT included, is refused with "ERR command not allowed in a
// caskade transaction"; MULTI with "ERR MULTI inside CSK.BEGIN is not
// allowed", a second CSK.BEGIN with "ERR CSK.BEGIN calls can not be
// nested", and CSK.BEGIN inside MULTI with "ERR CSK.BEGIN inside MULTI is
// not allowed".
//
// A write the engine refuses (a key over its size limit, say) gets the
// error at its command, as outside a transaction, and fails the
// transaction: its later reads and CSK.COMMIT reply with the same error.
//
// CSK.COMMIT replies +OK or, if something the transaction read was
// changed by another commit since it began, the retryable error
// "CONFLICT transaction not committed due to conflict with another
// transaction (1020)"; a transaction that outlived the engine's
// transaction lifetime (caskade.Options.TxnLifetime, 5 s by default) gets
// "TOOOLD transaction is too old to perform reads or be committed (1007)",
// also retryable; other failures are "ERR ..." errors. Either way the
// connection leaves the transaction, and nothing was applied unless the
// reply is +OK. CSK.ROLLBACK discards it; CSK.COMMIT and CSK.ROLLBACK
// without a transaction are errors ("ERR CSK.COMMIT without CSK.BEGIN"),
// as is CSK.SNAPSHOT. RESET and closing the connection roll back.
//
// Reads past the lifetime fail with TOOOLD as soon as the engine notices
// (it reads the clock every 64 transaction calls, and CSK.COMMIT always
// checks); from the first TOOOLD on, every command of the transaction
// replies TOOOLD until CSK.COMMIT or CSK.ROLLBACK. Read conflicts of range
// reads and selectors are limited to the selected database, so writes to
// other databases never fail a transaction. SET, MSET and INCR and its
// variants in a transaction store values without an expiry (caskade.Tx
// has no TTLs): INCR there of a key with a TTL makes it persistent; atomic
// operations keep a key's expiry. An open transaction holds a snapshot of the database (and
// so keeps merge from deleting old files) until it ends; the idle timeout
// bounds how long an abandoned connection can hold one.
//
// # Client-side caching
//
// CLIENT TRACKING works in the default, OPTIN, OPTOUT and BCAST (with
// PREFIX) modes, as rueidis and go-redis use it. Invalidations are driven
// by caskade.DB.SubscribeOrigins, so a key changed through any protocol, or
// directly through the embedded DB, is invalidated. They are sent as RESP3
// push messages to the client or to its REDIRECT target if that speaks
// RESP3. A commit of more than 1000 keys (FLUSHALL, for example) sends
// every tracking client a null invalidation (flush everything), as Redis
// does for FLUSHALL. NOLOOP suppresses invalidations of a client's own
// writes, by a command, EXEC, CSK.ATOMIC or CSK.COMMIT, but not of its
// range deletions (FLUSHDB, FLUSHALL, CSK.CLEARRANGE); since the writes of
// several clients can share one group commit, a key is suppressed only if
// no other client (or protocol) wrote it in the same group. A key that
// expires is invalidated when active expiry drops it or, as in Redis, when
// a read or a scan finds it expired (the reading client's own invalidation
// then follows the read's reply, as in Redis 7).
//
// # Safety
//
// Protected mode (the default): without a password, clients from
// non-loopback addresses get Redis's DENIED error and are disconnected.
// CONFIG SET requirepass and protected-mode change them at run time, for
// every front end that shares Server.Access (caskade serve's three). A
// CONFIG SET of several parameters checks them all before it changes any,
// and publishes the password and protected mode in one step, so no front
// end sees a part of it, nor a part of one refused for a bad value.
// Before authentication, requests are limited as in Redis (10 arguments,
// 16 KiB per argument, 1 MiB per command); afterwards by
// proto-max-bulk-len (512 MiB). Other limits: MaxClients, IdleTimeout, the
// engine's key and value sizes, tracking-table-max-keys (1000000, as in
// Redis: the CLIENT TRACKING table then forgets keys, invalidating them). As in Redis, a client that reads its
// replies slowly is never cut off for it, and reads no more commands
// until it has taken them (so the replies held for it stay bounded); a
// client served off the event loops that takes no part of a reply for a
// minute is dropped. A connection whose first word is POST or
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
//     under Server.BackupDir, named backup-<UTC time>; each first removes
//     such directories that lack a manifest (left by a SAVE or BGSAVE that
//     a crash cut short). BGREWRITEAOF runs caskade.DB.Merge. INFO
//     persistence reports accordingly: its rdb_* fields describe backups
//     (rdb_changes_since_last_save counts the commits since the last),
//     its aof_* fields the merges, BGREWRITEAOF's and the engine's own
//     (aof_last_rewrite_time_sec is the last merge's duration,
//     aof_current_size the data files' size); aof_last_write_status is err
//     from a write refused for lack of space until there is room again, and
//     for good once writes are stopped.
//   - A write the storage refuses gets Redis's reply for a failed AOF
//     write, with the system's reason and no file name: "MISCONF Errors
//     writing to the data files: No space left on device (the write was
//     refused; writes resume once there is room)" when the disk is full
//     (only that write fails), and "MISCONF Errors writing to the data
//     files: <reason> (writes are stopped until the server restarts; ...)"
//     once a failed write or fsync has stopped writes (caskade's
//     ErrWritesStopped); an EXEC whose commit fails so gets the same
//     error, as Redis refuses EXEC. Other I/O errors reply "ERR I/O error
//     in the data files". The server's log has each cause, with its file.
//     While aof_last_write_status is err, PING gets the same MISCONF
//     error, as Redis answers it while it cannot persist (in RESP2 and
//     RESP3; queued in MULTI it aborts the EXEC), and so does a write
//     command sent inside MULTI, which then aborts the EXEC as in Redis
//     (a write outside MULTI is tried, and gets the error only if it
//     still fails); HELLO, AUTH, INFO and reads are answered. A refusal for lack of space lasts until a write
//     goes through or, checked each second, the file system has room for
//     the refused write again, as Redis retries a failed AOF write each
//     second.
//   - INCRBYFLOAT computes, as Redis on x86-64 does, in 80-bit long
//     double (emulated with math/big), so its results are Redis's to the
//     byte (except next to the least subnormal value, about 3.6e-4951).
//   - GETRANGE with an end before the start of the string replies an empty
//     string, as Redis 8 does; Redis 7 replied the first byte.
//   - SCAN with TYPE and an unknown type name is an error, as Redis 8
//     plans; Redis 7.4 answers an empty scan.
//   - OBJECT IDLETIME is always 0 (no access times are kept), OBJECT FREQ
//     answers as Redis does without an LFU policy, and OBJECT ENCODING is
//     derived from the value (int, embstr up to 44 bytes, raw).
//   - Invalidations for a RESP2 REDIRECT target are not sent (that needs
//     Pub/Sub on the target connection).
//   - There is one user, "default" (no ACL).
//   - A command has at most 1,048,576 arguments (resp.DefaultMaxArgs);
//     a larger multibulk count is a protocol error that closes the
//     connection, where Redis takes any count its query buffer holds. An
//     MSET or DEL of more keys than that must be split.
//   - COMMAND INFO gives Redis's flags, ACL categories and tips but no key
//     specs; COMMAND DOCS gives the group but no summary, arguments or
//     history; COMMAND GETKEYSANDFLAGS is not served.
package redis
