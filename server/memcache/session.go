package memcache

import (
	"bytes"
	"time"
)

// commandID identifies a command for metrics.
type commandID int

const (
	cmdGet commandID = iota
	cmdGets
	cmdGat
	cmdGats
	cmdSet
	cmdAdd
	cmdReplace
	cmdAppend
	cmdPrepend
	cmdCas
	cmdTouch
	cmdDelete
	cmdIncr
	cmdDecr
	cmdFlushAll
	cmdStats
	cmdVersion
	cmdVerbosity
	cmdQuit
	cmdMg
	cmdMs
	cmdMd
	cmdMa
	cmdMn
	cmdMe
	cmdAuth
	cmdUnknown
	numCommands
)

// commandNames are the metric labels of the commands (a fixed set).
var commandNames = [numCommands]string{
	cmdGet: "get", cmdGets: "gets", cmdGat: "gat", cmdGats: "gats",
	cmdSet: "set", cmdAdd: "add", cmdReplace: "replace", cmdAppend: "append",
	cmdPrepend: "prepend", cmdCas: "cas", cmdTouch: "touch", cmdDelete: "delete",
	cmdIncr: "incr", cmdDecr: "decr", cmdFlushAll: "flush_all", cmdStats: "stats",
	cmdVersion: "version", cmdVerbosity: "verbosity", cmdQuit: "quit",
	cmdMg: "mg", cmdMs: "ms", cmdMd: "md", cmdMa: "ma", cmdMn: "mn", cmdMe: "me",
	cmdAuth: "auth", cmdUnknown: "unknown",
}

// session is the protocol state of one TCP connection or one UDP worker:
// input, pending replies and per-command flags. It is used by one
// goroutine at a time.
type session struct {
	s        *Server
	r        *reader
	out      []byte
	udp      bool
	authed   bool
	noreply  bool // the current command asked for no reply
	failed   bool // the current command replied with an error
	deferred bool // the current command joined the run of deferred sets (pend)
	// marks are the ends of the replies in out, kept for UDP, where each
	// reply (each command's, and each item of a multi-get) is sent as its
	// own message, as memcached does.
	marks []int
	// midFlushes counts flushes made in the middle of a command (a large
	// multi-get is streamed), after which its replies cannot be retracted.
	midFlushes int
	toks       [][]byte
	keybuf     []byte
	count      counters
	flush      func() error // nil for UDP
	now        time.Time    // when the current command started
	ended      time.Time    // when the last command ended, if the next one runs right after it
	pend       pendingSets  // TCP only
	onLoop     bool         // an event loop serves the connection: sets wait for the end of its turn
	// backlogged, if set, reports whether replies wait unsent on an
	// event loop; resume then holds the rest of a multi-get that stopped
	// there (see pause).
	backlogged func() bool
	resume     *resumeGet
}

func (ss *session) init(s *Server, r *reader, udp bool) {
	ss.s, ss.r, ss.udp = s, r, udp
	ss.toks = make([][]byte, 0, 24)
	ss.authed = true
}

// mark ends a reply (UDP message) at the current end of out.
func (ss *session) mark() {
	if !ss.udp {
		return
	}
	if n := len(ss.marks); n > 0 && ss.marks[n-1] == len(ss.out) {
		return
	}
	ss.marks = append(ss.marks, len(ss.out))
}

// maxUDPReply bounds the replies to one datagram request: they are built in
// memory and sent as up to 65535 datagrams per message.
const maxUDPReply = 16 << 20

// errReplyTooLarge aborts a command whose UDP reply would exceed
// maxUDPReply.
const errReplyTooLarge = "SERVER_ERROR reply too large for UDP"

// room is called after each item of a multi-item reply. Over TCP it sends
// the replies so far when they have grown large, so that big multi-gets are
// streamed rather than held in memory; over UDP it reports false when the
// reply has outgrown maxUDPReply and the command must stop.
func (ss *session) room() bool {
	if ss.flush == nil {
		return !ss.udp || len(ss.out) <= maxUDPReply
	}
	if len(ss.out) >= maxRetainedOutput {
		ss.flush() // a write error surfaces on the next read
		ss.midFlushes++
	}
	return true
}

// pause is called between the items of a multi-item reply. It reports
// whether the command must stop there, leaving the rest in ss.resume:
// on an event loop, when the replies already written have not all been
// sent (room flushed them and the client is not reading), since the
// loop cannot wait and would otherwise hold the whole reply in memory,
// as large as a get line's keys times the item size.
func (ss *session) pause() bool {
	return ss.backlogged != nil && ss.backlogged()
}

// finishResume runs the rest of a multi-get that an event loop stopped
// (see pause), on the connection's goroutine.
func (ss *session) finishResume() {
	g := ss.resume
	ss.resume = nil
	ss.retrieveKeys(g, len(ss.out))
}

// truncate drops the replies after position n of out.
func (ss *session) truncate(n int) {
	ss.out = ss.out[:n]
	for len(ss.marks) > 0 && ss.marks[len(ss.marks)-1] > n {
		ss.marks = ss.marks[:len(ss.marks)-1]
	}
}

// reply appends a line (without its CRLF) unless the command asked for
// no reply.
func (ss *session) reply(line string) {
	if ss.noreply {
		return
	}
	ss.out = append(ss.out, line...)
	ss.out = append(ss.out, "\r\n"...)
}

// replyError appends an error line (ERROR, CLIENT_ERROR, SERVER_ERROR)
// unless the command asked for no reply, and marks the command failed.
func (ss *session) replyError(line string) {
	ss.failed = true
	ss.reply(line)
}

// replyErrorAlways appends an error line even under noreply (meta commands
// always return errors).
func (ss *session) replyErrorAlways(line string) {
	ss.failed = true
	ss.out = append(ss.out, line...)
	ss.out = append(ss.out, "\r\n"...)
}

const (
	errBadFormat   = "CLIENT_ERROR bad command line format"
	errBadChunk    = "CLIENT_ERROR bad data chunk"
	errTooLarge    = "SERVER_ERROR object too large for cache"
	errExptime     = "CLIENT_ERROR invalid exptime argument"
	errNonNumeric  = "CLIENT_ERROR cannot increment or decrement non-numeric value"
	errDelta       = "CLIENT_ERROR invalid numeric delta argument"
	errLineLong    = "CLIENT_ERROR line too long"
	errUnauth      = "CLIENT_ERROR unauthenticated"
	errContention  = "SERVER_ERROR too many conflicting writes; try again"
	errUnknownCmd  = "ERROR"
	errBadFlag     = "CLIENT_ERROR invalid flag"
	errDupFlag     = "CLIENT_ERROR duplicate flag"
	errBadToken    = "CLIENT_ERROR bad token in command line format"
	errOpaqueLong  = "CLIENT_ERROR opaque token too long"
	errTooManyOpts = "CLIENT_ERROR options flags are too long"
	errDecodeKey   = "CLIENT_ERROR error decoding key"
)

// isGetLine reports whether an overlong line may be a large multi-get,
// which memcached (and caskade) let grow past MaxLineLength.
func isGetLine(b []byte) bool {
	i := 0
	for i < len(b) && i <= 100 && b[i] == ' ' {
		i++
	}
	if i > 100 {
		return false
	}
	b = b[i:]
	return bytes.HasPrefix(b, []byte("get ")) || bytes.HasPrefix(b, []byte("gets "))
}

// step reads and executes one command. It returns an error when the
// connection (or datagram) must not be read further.
func (ss *session) step() error {
	line, err := ss.r.readLine(MaxLineLength, isGetLine, MaxGetLineLength)
	if err != nil {
		if err == errLineTooLong {
			ss.noreply = false
			ss.replyError(errLineLong)
		}
		return err
	}
	return ss.execute(line)
}

// tokenize splits a command line (without its terminator) at spaces.
func (ss *session) tokenize(line []byte) {
	toks := ss.toks[:0]
	for len(line) > 0 {
		i := 0
		for i < len(line) && line[i] == ' ' {
			i++
		}
		line = line[i:]
		if len(line) == 0 {
			break
		}
		j := bytes.IndexByte(line, ' ')
		if j < 0 {
			j = len(line)
		}
		toks = append(toks, line[:j])
		line = line[j:]
	}
	ss.toks = toks
}

// lastIsNoreply reports whether the last token is "noreply".
func (ss *session) lastIsNoreply() bool {
	return len(ss.toks) > 1 && string(ss.toks[len(ss.toks)-1]) == "noreply"
}

// execute runs one command line (with its terminator).
func (ss *session) execute(line []byte) error {
	ss.noreply, ss.failed = false, false
	if ss.pend.n > 0 && !joinsRun(line) {
		ss.commitPending()
	}
	// In a pipeline, a command starts when the one before it ended, and
	// a deferred set ends nothing before its commit: one clock read per
	// command, none per deferred set.
	ss.now = ss.ended
	if ss.now.IsZero() {
		ss.now = time.Now()
	}
	ss.ended = ss.now
	cmd, err := ss.dispatch(line)
	if ss.deferred {
		ss.deferred = false // observed when its commit ends (commitPending)
	} else {
		ss.ended = ss.now.Add(time.Since(ss.now)) // one clock read (see redis's client.call)
		ss.s.observe(cmd, ss.now, ss.ended, ss.failed)
	}
	return err
}

func (ss *session) dispatch(line []byte) (commandID, error) {
	// Commands end with "\r\n" or a bare "\n"; like memcached, anything
	// shorter than four bytes in all cannot be a command.
	if len(line) < 4 {
		ss.replyError(errBadFormat)
		return cmdUnknown, nil
	}
	body := line[:len(line)-1]
	if body[len(body)-1] == '\r' {
		body = body[:len(body)-1]
	}
	name := body
	if i := bytes.IndexByte(body, ' '); i >= 0 {
		name = body[:i]
	}
	ss.tokenize(body)
	if !ss.authed {
		return cmdAuth, ss.authenticate(name)
	}
	if len(name) == 2 && name[0] == 'm' {
		ss.count.add(statCmdMeta, 1)
	}
	switch string(name) {
	case "get":
		ss.retrieve(cmdGet)
		return cmdGet, nil
	case "gets":
		ss.retrieve(cmdGets)
		return cmdGets, nil
	case "gat":
		ss.retrieve(cmdGat)
		return cmdGat, nil
	case "gats":
		ss.retrieve(cmdGats)
		return cmdGats, nil
	case "set":
		return cmdSet, ss.storage(cmdSet)
	case "add":
		return cmdAdd, ss.storage(cmdAdd)
	case "replace":
		return cmdReplace, ss.storage(cmdReplace)
	case "append":
		return cmdAppend, ss.storage(cmdAppend)
	case "prepend":
		return cmdPrepend, ss.storage(cmdPrepend)
	case "cas":
		return cmdCas, ss.storage(cmdCas)
	case "touch":
		ss.touch()
		return cmdTouch, nil
	case "delete":
		ss.delete()
		return cmdDelete, nil
	case "incr":
		ss.arith(true)
		return cmdIncr, nil
	case "decr":
		ss.arith(false)
		return cmdDecr, nil
	case "mg":
		ss.metaGet()
		return cmdMg, nil
	case "ms":
		return cmdMs, ss.metaSet()
	case "md":
		ss.metaDelete()
		return cmdMd, nil
	case "ma":
		ss.metaArith()
		return cmdMa, nil
	case "mn":
		ss.out = append(ss.out, "MN\r\n"...)
		return cmdMn, nil
	case "me":
		ss.metaDebug()
		return cmdMe, nil
	case "stats":
		ss.stats()
		return cmdStats, nil
	case "version":
		ss.reply("VERSION " + MemcachedVersion)
		return cmdVersion, nil
	case "quit":
		return cmdQuit, errQuit
	case "flush_all":
		ss.noreply = ss.lastIsNoreply()
		ss.flushAll()
		return cmdFlushAll, nil
	case "verbosity":
		ss.noreply = ss.lastIsNoreply()
		ss.verbosityCmd()
		return cmdVerbosity, nil
	case "shutdown":
		ss.noreply = ss.lastIsNoreply()
		ss.replyError("SERVER_ERROR: shutdown not enabled")
		return cmdUnknown, nil
	}
	ss.noreply = ss.lastIsNoreply()
	// A request line of another protocol (an HTTP request sent to the
	// memcached port) closes the connection, as memcached does.
	if n := len(ss.toks); n > 1 && bytes.HasPrefix(ss.toks[n-1], []byte("HTTP/")) {
		return cmdUnknown, errQuit
	}
	ss.replyError(errUnknownCmd)
	return cmdUnknown, nil
}
