// Package httpapi serves a caskade.DB over HTTP: raw values by key, JSON
// listings and transactions, Prometheus metrics, health probes and
// (optionally) runtime profiles. Server is an http.Handler; Serve and
// Shutdown run it on listeners with net/http (HTTP/1.1 keep-alive, read,
// write and idle timeouts).
//
// # Endpoints
//
//	GET    /v1/kv/{key}   the value (raw bytes, application/octet-stream)
//	HEAD   /v1/kv/{key}   its headers
//	PUT    /v1/kv/{key}   set it from the body; ?ttl=<seconds> or
//	                      ?expires_at=<Unix seconds|RFC 3339>, ?flags=<uint32>;
//	                      201 if created, 204 if replaced
//	DELETE /v1/kv/{key}   delete it: 204, or 404 if absent
//	GET    /v1/kv         list (see below)
//	POST   /v1/txn        transaction (see below)
//	GET    /metrics       Prometheus metrics (Server.Metrics)
//	GET    /healthz       200 while the process serves
//	GET    /readyz        200 while the database is open and accepts writes,
//	                      else 503 (see Health probes)
//	GET    /debug/pprof/  runtime profiles, only with EnablePprof
//
// {key} is the key URL-escaped (any bytes; "/" may appear raw or as %2F).
// Keys are the Redis database 0 and memcached key space; keys starting
// with the byte 0xff (Redis databases 1 and up) are refused with 400
// reserved_key and never listed.
//
// Key responses carry the key's commit version as ETag ("123") and
// Caskade-Version (123), its memcached client flags as Caskade-Flags and its
// expiry as Caskade-Expires-At (RFC 3339). Conditional requests use the
// version: If-Match: "123" (or 123, or a list) writes or deletes only if
// the key is at that version, If-Match: * only if it exists,
// If-None-Match: * only if it is absent; otherwise 412 precondition_failed.
// The check and the write are one atomic commit (caskade.Batch.Check), so a
// concurrent write from any protocol (a Redis SET, a memcached set) fails
// the condition. GET honours If-None-Match (304) and If-Match (412). A
// header whose tags are not versions (If-Match: abc) is refused with 400
// invalid_argument, as is the query string of a PUT or a listing that
// does not parse (a bad %-escape) or names a parameter twice (GET, HEAD
// and DELETE ignore the query), a ttl outside 1 to 3153600000 seconds and an expires_at not
// after the Unix epoch or after the year 9999. A key path with a bad %-escape never reaches the
// handler: net/http answers it with a plain-text 400. A PUT
// response carries the version its own commit gave the key, even if
// another write has changed the key since.
//
// # Listings
//
//	GET /v1/kv?prefix=&start=&end=&limit=&reverse=&keys_only=&cursor=
//
// lists the keys in [max(prefix, start), min(end, prefix's end)) in key
// order (reverse=true: descending), at most limit (default 1000, at most
// 10000) per page, streamed as
//
//	{"items":[{"key":"a","value":"1","version":7,"flags":3,"expires_at":"..."},...],
//	 "count":2,"next":"<cursor>"}
//
// next is present when more keys follow; pass it back as cursor= with the
// same other parameters for the next page. The listing of each page is a
// consistent snapshot; pages are not (keys written between pages show up
// if they fall after the cursor). Keys and values that are not valid UTF-8
// are base64-encoded (standard alphabet) and marked "key_b64": true or
// "value_b64": true. keys_only=true leaves values (and flags) out. A read
// error before any of the reply was sent gets an error status as on the
// other endpoints; one after the reply has started ends the object with
// an "error" member ({"code":...,"message":...}) and no next. HEAD
// /v1/kv runs the same listing and answers GET's status and headers
// without the body.
//
// # Transactions
//
// POST /v1/txn takes etcd's transaction shape:
//
//	{"compare":[{"key":"k","target":"version","result":"==","version":7},
//	            {"key":"j","target":"value","result":"!=","value":"x"},
//	            {"key":"n","target":"exists","result":"==","exists":false}],
//	 "success":[{"put":{"key":"k","value":"v"}},
//	            {"get":{"key":"j"}},
//	            {"delete":{"key":"p/","prefix":true}},
//	            {"range":{"key":"a","range_end":"b","limit":10}}],
//	 "failure":[{"get":{"key":"k"}}]}
//
// and replies {"succeeded":true,"version":8,"responses":[{"put":{}},
// {"get":{...}},{"delete":{"deleted":3}},{"range":{"items":[...],
// "more":false}}]}. Results are ==, !=, <, >, <=, >= (or etcd's EQUAL,
// NOT_EQUAL, LESS, GREATER). For binary data, give a key, value or range
// end in base64 and set "key_b64", "value_b64" or "range_end_b64" to true
// beside it. The compares and the chosen branch run in one
// serializable caskade.Tx (retried on conflicts for up to 10 s, then 409
// conflict): every key and range read, including those compared, is a read
// conflict, so the transaction commits only if none of them changed. At
// most 128 compares and 128 operations per branch (400 too_many_operations).
// A range returns at most limit pairs (default and maximum 10000; "more":
// true if it stopped there), and the keys and values of all gets and
// ranges together may take at most 64 MiB in the reply (as JSON strings):
// a transaction that reads more is not committed and gets 400
// reply_too_large (read less per transaction, with limits or keys_only,
// or page with GET /v1/kv).
//
// # Health probes
//
// /healthz answers 200 {"status":"ok"} while the process serves: a
// database that refuses writes, or is closed, does not change it. /readyz
// answers 200 {"status":"ready"} while the database is open and takes
// writes, and otherwise 503 with the JSON error of every endpoint, whose
// code says why and whose message names no file:
//
//	closed          the database is closed
//	writes_stopped  a failed write or fsync stopped writes until the
//	                server restarts (caskade.ErrWritesStopped; the log has
//	                the cause)
//	no_space        the last write was refused for lack of space and there
//	                has been no room for it since (caskade.DB.WriteStatus)
//
// no_space ends at the first write that goes through, or within a second
// of the file system having room for the refused write again.
//
// # Errors, limits and security
//
// Errors are JSON with a stable code:
// {"error":{"code":"not_found","message":"key not found"}}. The codes,
// by status:
//
//	400  invalid_key, reserved_key, invalid_argument, invalid_json,
//	     key_too_large, bad_body (the body could not be read: shorter
//	     than its Content-Length, or broken chunking),
//	     too_many_operations, invalid_range, reply_too_large
//	401  unauthorized
//	403  protected_mode
//	404  not_found
//	405  method_not_allowed
//	409  conflict (a transaction kept conflicting for 10 s; try again),
//	     profiling_busy (another CPU profile or trace is running)
//	412  precondition_failed
//	413  body_too_large (over MaxBodyBytes), value_too_large,
//	     transaction_too_large (the writes, and a transaction's read
//	     ranges, exceed what one commit takes)
//	500  internal (a read or write failed; the message leaves out the
//	     cause, which names the server's files, and the log has it, as
//	     for writes_stopped and no_space)
//	503  closed, read_only, writes_stopped, max_clients,
//	     commit_unknown_result (the commit may or may not have been
//	     applied: read the keys before trying again); from /readyz
//	     also no_space
//	507  no_space (the disk is full; the write was refused whole and may
//	     be retried once there is room)
//
// Requests net/http refuses before they reach the Server (a bad
// %-escape in the path, headers over the limit) get its plain-text
// replies.
//
// With Password set every request but /healthz and /readyz needs
// "Authorization: Bearer <password>" (401 otherwise); without it only
// loopback clients are served unless DisableProtectedMode is set: a
// request from another address gets 403 protected_mode and its
// connection is closed, counted as rejected (as Redis and memcached
// refuse such a client; /healthz and /readyz are answered all the same).
// With Access the password and protected mode are shared with other
// front ends and read on every request (caskade serve shares them with
// Redis, whose CONFIG SET requirepass and protected-mode then apply here).
// Serve serves at most MaxConns connections at once (caskade serve's
// --maxclients, for HTTP alone as for each other front end); a
// connection beyond them gets 503 max_clients to its first request and
// is closed.
//
// # Differences from etcd
//
// Versions are caskade commit versions (one counter for the database, as
// etcd's revisions) but there is no history: no create_revision, no reads
// at an old revision, no leases or watches over HTTP; a put takes "ttl"
// (seconds), "expires_at" (Unix seconds) and "flags" instead of a lease.
// Range items inside a transaction carry no versions. A value compare on a
// missing key treats its value as different from every value: != holds,
// and ==, <, >, <= and >= fail, where etcd fails every value compare on a
// missing key, != included (compare on "exists" to test presence). A
// version compare sees a missing key at version 0, as etcd does.
package httpapi
