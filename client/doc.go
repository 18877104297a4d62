// Package client is a Go client for caskade's Redis-protocol server (and
// for redis-server): commands, pipelines, transactions, caskade's ordered
// range reads and interactive transactions, with automatic pipelining of
// concurrent callers and automatic reconnection.
//
//	c, err := client.Dial(ctx, "127.0.0.1:6379", nil) // or "unix:///run/caskade.sock"
//	...
//	defer c.Close()
//	_, err = c.Set(ctx, "k", []byte("v"), client.SetArgs{TTL: time.Minute})
//	v, err := c.Get(ctx, "k") // client.Nil if missing
//
// # Connections
//
// A Client shares Options.PoolSize connections among all its callers.
// Each shared connection has a writer goroutine, which writes every command
// queued since its last write in one write, and a reader goroutine, which
// reads the replies and hands each to its caller in order. So concurrent
// callers are pipelined automatically and a Client is safe for concurrent
// use. Until a connection sees concurrent use, and for calls whose context
// cannot be cancelled (context.Background), the caller writes its command
// and reads its reply itself, as rueidis does, saving two goroutine
// switches per call; a connection idle in that mode is checked for a close
// by the server (a non-blocking peek) before a command is written. Shared connections never change state: commands that would (SELECT,
// WATCH, MULTI, SUBSCRIBE, CLIENT TRACKING, CSK.BEGIN, ...) fail with
// ErrStateful there; they belong on a dedicated connection (Conn), or are
// expressed by the helpers that use one (Watch, Transact), or by Options
// (DB, ClientName). Blocking commands (BLPOP, XREAD, WAIT, ...) run on a
// dedicated connection automatically.
//
// Each connection is opened with HELLO 3 (and AUTH and SETNAME in it), or
// with AUTH and CLIENT SETNAME in RESP2 if the server refuses HELLO 3, then
// SELECT. A connection that breaks is re-dialed, with exponential backoff
// and jitter between attempts, before the next command that needs it.
//
// # Errors and retries
//
// A missing value is Nil. A server error reply is a *Error with the Redis
// prefix (errors.Is(err, ErrConflict), ErrWrongType, ...). A failure of the
// connection is a *ConnError whose MaybeExecuted says whether the command
// may have run (errors.Is(err, ErrMaybeExecuted)). A command that surely
// never reached the server is sent again on a new connection; one that may
// have run is sent again only if it is read-only or the context was marked
// with Idempotent, and then once. A caller whose context ends while it
// waits gets a *ConnError wrapping the context's error; its reply is still
// read and dropped, so the connection stays in step.
//
// # Timeouts
//
// Every call takes a context; its deadline and cancellation are honoured.
// Options.ReadTimeout and WriteTimeout set connection deadlines as well:
// on a shared connection ReadTimeout detects a server that stopped
// answering, on a dedicated one it bounds each reply when the context has
// no deadline. A pipeline's replies each get ReadTimeout, so the timeout is
// spread over its commands rather than shared by all of them. Without a
// context deadline a call is bounded only by the sum of those steps: a
// read-only command to a server that hangs times out after ReadTimeout,
// is sent again (MaxRetries), and each re-dial may wait DialTimeout, so
// with the defaults such a call can take over 20 seconds. Give the
// context a deadline where a call must end sooner.
//
// # Bytes
//
// Methods do not keep the slices passed to them. Slices they return
// ([]byte values, keys, Values) are the caller's and never reused by the
// client. In the steady state a Get allocates only the returned value and a
// Set allocates nothing.
//
// # Pipelines and transactions
//
// Pipeline and Pipelined queue commands and send them at once; TxPipeline
// and TxPipelined wrap them in MULTI/EXEC. Watch runs a function with
// WATCHed keys on a dedicated connection and retries it when EXEC reports
// a change. Conn offers the low-level interface: Append, Flush, Receive.
// Transact runs caskade's interactive serializable transactions
// (CSK.BEGIN ... CSK.COMMIT) with the retry loop and shape of the embedded
// caskade.DB.Transact.
//
// # Ordered commands
//
// Range, RangeSelect, GetKey, ClearRange, Atomic and Version use caskade's
// CSK.* commands: range reads over the ordered key space, FoundationDB-style
// key selectors, clear-range and atomic operations.
package client
