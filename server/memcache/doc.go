// Package memcache serves a caskade.DB over the memcached protocol: the
// text protocol and the meta protocol as memcached's doc/protocol.txt
// defines them, over TCP (Server.Serve) and UDP (Server.ServeUDP).
//
// # Supported
//
// Storage: set, add, replace, append, prepend, cas. Retrieval: get, gets,
// gat, gats. touch, delete, incr, decr (unsigned 64-bit decimal; incr wraps
// at 2^64, decr stops at 0; a value that is not a decimal number gets
// "CLIENT_ERROR cannot increment or decrement non-numeric value"; a missing
// key is NOT_FOUND), flush_all [delay] [noreply], stats (general counters),
// stats settings, stats reset, version, verbosity, quit, and noreply on
// every command that takes it. Meta: mg, ms, md, ma, mn, me with the flags
// b (base64 key), c, C, E, f, F, h, I, k, l, M, N, O, q, s, t, T, v (and u,
// R, x, J, D, P, L); q hides the common replies (EN for mg, HD for ms, md
// and ma) and mn ends a quiet pipeline.
//
// Where memcached releases differ, caskade follows the current one
// (1.6.4x: doc/protocol.txt and its parser): for example a storage command
// with a bad flags or exptime token skips its data block, and lines shorter
// than four bytes with their line end ("ab\n") get "CLIENT_ERROR bad
// command line format". Numbers are
// read as memcached 1.6.4x reads them: digits only (and a leading '-'
// where the number is signed; a '-' alone is 0, as in 1.6.45), in a
// token of at most 11 bytes (22 for a
// 64-bit number), except a storage command's flags and exptime, which
// memcached reads with strtoul/strtol and so also take a leading '+' and
// any number of leading zeros; a <bytes> or ms <datalen> over 2147483645 is a bad command
// line, its data not skipped; a meta flag token starting with neither a
// letter nor a digit makes the whole line bad (an ms line too: its data
// is not skipped). The tests
// compare caskade with a real memcached where one is installed
// (TestDifferentialAgainstMemcached), after probing it for each behaviour
// that changed between releases and leaving out those in which it answers
// unlike the newest.
//
// Keys are 1 to 250 bytes without control characters, spaces or DEL; keys
// starting with the byte 0xff are refused with CLIENT_ERROR (that prefix
// holds Redis databases 1 and up). The memcached key space is Redis
// database 0: a value set here is the same bytes through Redis GET and
// HTTP. Client flags (32 bits) are stored beside the value, not in it.
// Expiry follows memcached: 0 never, up to 30 days relative seconds, larger
// a Unix time, negative expires at once.
//
// MaxItemSize bounds the value alone (memcached's -I also counts the key
// and the item header, so memcached stores slightly less than -I).
//
// Errors are memcached's: ERROR (unknown command), "CLIENT_ERROR <reason>"
// and "SERVER_ERROR <reason>". A write the storage refuses gets
// "SERVER_ERROR no space left on device" when the disk is full (that write
// alone fails; the next may go through once there is room), "SERVER_ERROR
// writes stopped after an I/O error" once a failed write or fsync has
// stopped writes (caskade.ErrWritesStopped), and other I/O errors
// "SERVER_ERROR I/O error"; none names a file of the server, and the
// server's log has the cause. As in memcached, a storage command whose
// line is bad but whose <bytes> could be read skips its data block; a data
// block not followed by "\r\n" gets "CLIENT_ERROR bad data chunk" and the
// stream continues after <bytes>+2 bytes; input with no newline in its
// first 2048 bytes (1 MiB for get, gets, gat and gats) gets "CLIENT_ERROR
// line too long" and the connection is closed; as in memcached, a longer
// line that arrives with its newline in one read (up to 16 KiB) is served. An HTTP request line closes the connection.
//
// # Consistency
//
// Every read-modify-write (add, replace, append, prepend, cas, incr, decr,
// delete, and the meta equivalents) is one atomic conditional commit: it
// reads the key's version and writes with caskade.Batch.Check on it,
// retrying or failing (EXISTS, NOT_STORED) when another writer, from any
// protocol, got there first. The cas unique is the key's commit version
// (caskade.KeyInfo.Version), so a memcached cas conflicts with a Redis SET
// or an HTTP PUT of the same key.
//
// Plain sets that a TCP client pipelines (text set without cas, and quiet
// meta sets in set mode without C, I, E or c, received while more commands
// were already waiting behind them) are committed together, each on its
// own, as one group commit, and answered then, each reply where the set
// was: under --sync always a pipeline of sets costs one fsync, not one per
// set. Any other command, and every flush of the replies, commits them
// first, so a connection always reads its own writes. Each such set's
// latency in the command metrics runs to the end of its commit, and a
// failed commit counts as its error.
//
// # Connections
//
// On Linux, TCP connections are served by event loops (Server.EventLoops,
// one per processor by default; see package netloop) rather than a
// goroutine each: a loop runs the commands that have arrived whole on all
// its ready connections, commits their plain sets together, then writes
// every reply. A connection moves to a goroutine of its own for a data
// block over the item size limit, and under SyncAlways for any command
// but a read, so that no loop waits for the disk.
//
// # UDP
//
// Each datagram starts with memcached's 8-byte frame header (request id,
// sequence number, total datagrams, reserved; big-endian). A request must
// fit one datagram (total 1). As in memcached, each reply (each command's,
// and each item of a multi-get, with END after the last) is its own message
// under the request's id, split into datagrams of at most 1400 bytes (1392
// bytes of reply each) numbered 0..n-1. Malformed datagrams are dropped and
// counted (stats udp_dropped). UDP is off unless the caller runs ServeUDP.
//
// # okdb's prefix cursor
//
// For users moving from okdb, "get ?type=cursor&prefix=P&limit=N" (also
// with gets) returns, as ordinary VALUE items followed by END, the keys that
// start with P, in key order, at most N of them (default 100, at most
// 10000). P is URL-escaped (it is a query string); an optional start=S
// begins at the first key >= S instead of P, so a client can page by
// passing the last key it got plus a zero byte (%00). Keys that cannot
// appear on a VALUE line (binary keys with spaces or control characters,
// keys longer than 250 bytes) are skipped, up to 100000 of them per
// request: a page that meets more ends early, and one that meets them
// before any key it can list gets a CLIENT_ERROR.
//
// # Differences from memcached
//
//   - Nothing is evicted: caskade is a database, not a cache. Items leave
//     by expiry, delete or flush_all only; "evictions" stays 0.
//   - cas uniques are commit versions, shared by all protocols, except
//     where memcached keeps or names one: touch, gat, gats and mg with T
//     keep the item's cas unique (and its fetched and win marks), md x
//     keeps it for the empty item, and meta E names the cas unique of what
//     ms, ma, md (I or x) or mg N write (as in memcached, E0 names 0, which
//     md and mg C0 then match and a cas command never does, except for
//     ms, which takes E0 for no E). Those live in the item state table
//     below: if one is lost (a restart, flush_all, or a full table), the
//     item's cas unique is its version again, and a cas with the old
//     unique fails with EXISTS rather than overwrite. As in memcached, a
//     cas unique named by E may equal one the key gets later.
//   - The fetched, last-access, win-token and stale marks (mg h, l, W, Z, X;
//     me fetch, la) are kept in memory for up to 65536 keys, are lost on
//     restart, and are reset by any write to the key but a touch.
//   - Client flags above 2^32-1 are refused with CLIENT_ERROR; memcached
//     keeps their low 32 bits. So are exptimes outside 32 bits, which
//     memcached (1.6.18 and 1.6.45) truncates to their low 32 bits.
//   - Keys with control characters are refused (CLIENT_ERROR), as
//     protocol.txt says; memcached stores them. memaslap and memcslap
//     start every key with such bytes, so they cannot load caskade: use
//     the generator of bench/memcache.sh.
//   - A decr that makes a number shorter stores the shorter number;
//     memcached may pad it with spaces to its old length (protocol.txt
//     says not to rely on either), which would make it unreadable to a
//     Redis INCR.
//   - The k flag gives a key in base64 (with b) if the request named it in
//     base64; memcached does if the item was stored that way. They differ
//     only for an item named in text by one client and in base64 by
//     another.
//   - An item that mg or ma makes with N, or whose TTL T sets, already
//     expired (N-1, T-1) answers t0; memcached answers the difference of
//     its clock readings wrapped to 32 bits (a number near 2^32). Such an
//     item has no version of its own, so caskade shows the newest
//     version of the database as its cas unique (unless E names one),
//     which two of them may share: 0 in a database never written to,
//     which mg's C0 then matches.
//   - An ma that makes a number longer replaces memcached's item, and
//     memcached then sets T's TTL and E's cas unique on the old one, so
//     they are lost; it also replaces rather than changes in place an item
//     that an mg reply still holds. caskade always applies them.
//   - An item that mg or ma makes with N for a base64 key (b) answers k in
//     base64 with b in caskade; memcached answers the raw key bytes, which
//     may hold spaces or control characters.
//   - "me <key> b" decodes a base64 key, as memcached 1.6.18 does;
//     1.6.4x ignores a b that is the last token. me's size is the key's
//     and the value's bytes (memcached's counts its item header) and its
//     cls is always 1.
//   - A get with a key over 250 bytes fails alone. memcached also drops
//     the replies it had not yet sent for the commands before it in the
//     same pipeline (conn_release_items), leaving the client out of step,
//     and since 1.6.40 sends an empty line after the CLIENT_ERROR.
//   - flush_all deletes the keys (memcached hides them); a delayed
//     flush_all is pending in memory only and is cancelled by Shutdown.
//   - The binary protocol, SASL, slab and LRU commands (slabs, lru,
//     lru_crawler, cache_memlimit, watch, stats detail, cachedump and
//     conns) are not supported (ERROR); "stats items", "stats slabs" and
//     "stats sizes" report no slabs. "curr_items" counts every key of the
//     database (all Redis databases, and expired keys not yet dropped).
//   - delete accepts the legacy hold time 0 ("delete <key> 0 [noreply]")
//     and refuses any other extra argument, as memcached 1.4 to 1.6.x did
//     and libmemcached's memcapable expects (the newest memcached ignores
//     extra arguments).
//   - Authentication (Server.Password) uses memcached's ASCII
//     authentication ("set" with "<user> <password>" as data); the user
//     name is ignored. Without a password, clients from non-loopback
//     addresses are refused (protected mode) unless DisableProtectedMode is
//     set. With Server.Access the password and protected mode are shared
//     with other front ends (caskade serve shares them with Redis, whose
//     CONFIG SET requirepass and protected-mode then apply here: to new
//     connections, and to each UDP datagram, dropped while a password is
//     set).
package memcache
