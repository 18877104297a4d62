package redis

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"
)

func cmdPing(c *client, args [][]byte) {
	switch len(args) {
	case 1:
		c.out = append(c.out, "+PONG\r\n"...)
	case 2:
		c.replyBulk(args[1])
	default:
		c.errArity()
	}
}

func cmdEcho(c *client, args [][]byte) { c.replyBulk(args[1]) }

func cmdQuit(c *client, args [][]byte) {
	c.replyOK()
	c.closeNow = true
}

// authenticate checks a user name and password; on success the client is
// authenticated and the unauthenticated request limits are lifted.
func (c *client) authenticate(user, pass []byte) bool {
	want := c.s.cfg.access.Password()
	if !bytes.Equal(user, []byte("default")) {
		return false
	}
	if want != "" && !checkPassword([]byte(want), pass) {
		return false
	}
	c.authed = true
	c.rd.SetLimits(c.limits())
	return true
}

const errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."

func cmdAuth(c *client, args [][]byte) {
	if len(args) > 3 {
		c.replyErr(errSyntax)
		return
	}
	user, pass := []byte("default"), args[1]
	if len(args) == 2 {
		if c.s.cfg.access.Password() == "" {
			c.replyErr("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
			return
		}
	} else {
		user, pass = args[1], args[2]
	}
	if !c.authenticate(user, pass) {
		c.s.log.Warn("redis: authentication failed", "addr", c.addr)
		c.replyErr(errWrongPass)
		return
	}
	c.replyOK()
}

func cmdHello(c *client, args [][]byte) {
	ver := int64(0)
	next := 1
	if len(args) >= 2 {
		v, ok := parseInt(args[1])
		if !ok {
			c.replyErr("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.replyErr("NOPROTO unsupported protocol version")
			return
		}
		ver = v
		next = 2
	}
	var user, pass, name []byte
	for j := next; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eqFold(args[j], "auth") && more >= 2:
			user, pass = args[j+1], args[j+2]
			j += 2
		case eqFold(args[j], "setname") && more >= 1:
			name = args[j+1]
			if !validClientAttr(name) {
				c.replyErr("ERR Client names cannot contain spaces, newlines or special characters.")
				return
			}
			j++
		default:
			c.replyErr("ERR Syntax error in HELLO option '" + string(cstr(args[j])) + "'")
			return
		}
	}
	if user != nil {
		if !c.authenticate(user, pass) {
			c.replyErr(errWrongPass)
			return
		}
	}
	if !c.authed {
		c.replyErr("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if name != nil {
		c.imu.Lock()
		c.name = string(name)
		c.imu.Unlock()
	}
	if ver != 0 {
		c.setProto(int(ver))
	}
	c.replyMap(7)
	c.replyBulkString("server")
	c.replyBulkString("redis")
	c.replyBulkString("version")
	c.replyBulkString(RedisVersion)
	c.replyBulkString("proto")
	c.replyInt(int64(c.proto))
	c.replyBulkString("id")
	c.replyInt(c.id)
	c.replyBulkString("mode")
	c.replyBulkString("standalone")
	c.replyBulkString("role")
	c.replyBulkString("master")
	c.replyBulkString("modules")
	c.replyArray(0)
}

func (c *client) setProto(p int) {
	c.proto = p
	c.s.track.mu.Lock()
	c.trk.p3 = p >= 3
	c.s.track.mu.Unlock()
	c.syncInfo()
}

func cmdSelect(c *client, args [][]byte) {
	db, ok := c.intArg(args[1], "")
	if !ok {
		return
	}
	if !c.validDB(db) {
		c.replyErr(errDBRange)
		return
	}
	c.db = db
	c.syncInfo()
	c.replyOK()
}

func cmdReset(c *client, args [][]byte) {
	c.rflags &^= replyOff | replySkipNext // as Redis: a SKIP of RESET itself stays
	c.endTx()
	c.setMulti(nil)
	c.unwatchAll()
	c.db = 0
	c.setProto(2)
	c.disableTracking()
	if c.monitor.Load() {
		c.monitor.Store(false)
		c.s.monitors.remove(c)
	}
	c.imu.Lock()
	c.name = ""
	c.noEvict, c.noTouch = false, false
	c.imu.Unlock()
	c.authed = c.s.cfg.access.Password() == ""
	c.rd.SetLimits(c.limits())
	c.syncInfo()
	c.replyStatus("RESET")
}

// CLIENT.

func validClientAttr(p []byte) bool {
	for _, ch := range p {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdClientID(c *client, args [][]byte) { c.replyInt(c.id) }

func cmdClientGetname(c *client, args [][]byte) {
	c.imu.Lock()
	name := c.name
	c.imu.Unlock()
	if name == "" {
		c.replyNull()
		return
	}
	c.replyBulkString(name)
}

func cmdClientSetname(c *client, args [][]byte) {
	if !validClientAttr(args[2]) {
		c.replyErr("ERR Client names cannot contain spaces, newlines or special characters.")
		return
	}
	c.imu.Lock()
	c.name = string(args[2])
	c.imu.Unlock()
	c.replyOK()
}

func cmdClientSetinfo(c *client, args [][]byte) {
	attr := args[2]
	isName := eqFold(attr, "lib-name")
	if !isName && !eqFold(attr, "lib-ver") {
		c.replyErr("ERR Unrecognized option '" + string(cstr(attr)) + "'")
		return
	}
	if !validClientAttr(args[3]) {
		c.replyErr("ERR " + string(cstr(attr)) + " cannot contain spaces, newlines or special characters.")
		return
	}
	c.imu.Lock()
	if isName {
		c.libName = string(args[3])
	} else {
		c.libVer = string(args[3])
	}
	c.imu.Unlock()
	c.replyOK()
}

// cmdClientReply is CLIENT REPLY ON|OFF|SKIP. OFF and SKIP reply nothing
// (process drops the replies); ON replies +OK, and SKIP under OFF does
// nothing, as in Redis.
func cmdClientReply(c *client, args [][]byte) {
	switch {
	case eqFold(args[2], "on"):
		c.rflags &^= replyOff | replySkip // not replySkipNext, as in Redis
		c.replyOK()
	case eqFold(args[2], "off"):
		c.rflags |= replyOff
	case eqFold(args[2], "skip"):
		if c.rflags&replyOff == 0 {
			c.rflags |= replySkipNext
		}
	default:
		c.replyErr(errSyntax)
	}
}

func cmdClientNoEvict(c *client, args [][]byte) { c.onOff(args[2], &c.noEvict) }
func cmdClientNoTouch(c *client, args [][]byte) { c.onOff(args[2], &c.noTouch) }

func (c *client) onOff(arg []byte, flag *bool) {
	switch {
	case eqFold(arg, "on"):
		c.imu.Lock()
		*flag = true
		c.imu.Unlock()
	case eqFold(arg, "off"):
		c.imu.Lock()
		*flag = false
		c.imu.Unlock()
	default:
		c.replyErr(errSyntax)
		return
	}
	c.replyOK()
}

// clientInfo is the part of a client's state other goroutines may read
// (CLIENT LIST), mirrored under imu.
type clientInfo struct {
	db, proto    int
	multi, watch int
	tracking     bool
	bcast        bool
	redir        int64
}

func (c *client) syncInfo() {
	c.imu.Lock()
	c.inf = clientInfo{db: c.db, proto: c.proto, multi: -1, watch: len(c.watches),
		tracking: c.trk.on, bcast: c.trk.bcast, redir: -1}
	switch {
	case c.multi != nil:
		c.inf.multi = len(c.multi.cmds)
	case c.execN >= 0:
		// As Redis: during EXEC the client is still in MULTI, its
		// watches already dropped.
		c.inf.multi, c.inf.watch = c.execN, 0
	}
	if c.trk.on {
		c.inf.redir = c.trk.redirect
	}
	c.imu.Unlock()
}

// infoLine formats a client as CLIENT LIST does.
func (c *client) infoLine(now time.Time) string {
	c.imu.Lock()
	defer c.imu.Unlock()
	inf := c.inf
	flags := ""
	if c.monitor.Load() {
		flags += "O"
	}
	if inf.multi >= 0 {
		flags += "x"
	}
	if inf.tracking {
		flags += "t"
	}
	if inf.bcast {
		flags += "B"
	}
	if c.unix {
		flags += "U"
	}
	if c.noEvict {
		flags += "e"
	}
	if c.noTouch {
		flags += "T"
	}
	if flags == "" {
		flags = "N"
	}
	cmd := "NULL"
	if p := c.lastCmd.Load(); p != nil {
		cmd = *p
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d sub=0 psub=0 ssub=0 multi=%d watch=%d qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=16384 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=default redir=%d resp=%d lib-name=%s lib-ver=%s",
		c.id, c.addr, c.laddr, 8, c.name, int64(now.Sub(c.created).Seconds()), now.Unix()-c.lastSeen.Load(),
		flags, inf.db, inf.multi, inf.watch, cmd, inf.redir, max(inf.proto, 2), c.libName, c.libVer)
}

func cmdClientInfo(c *client, args [][]byte) {
	c.syncInfo()
	c.replyVerbatim(c.infoLine(time.Now()) + "\n")
}

func cmdClientList(c *client, args [][]byte) {
	c.syncInfo()
	var clients []*client
	switch {
	case len(args) == 2:
		clients = c.s.allClients()
	case len(args) == 4 && eqFold(args[2], "type"):
		switch t := strings.ToLower(string(cstr(args[3]))); t {
		case "normal":
			clients = c.s.allClients()
		case "master", "slave", "replica", "pubsub":
		default:
			c.replyErr("ERR Unknown client type '" + string(cstr(args[3])) + "'")
			return
		}
	case len(args) > 3 && eqFold(args[2], "id"):
		for _, a := range args[3:] {
			id, ok := parseInt(a)
			if !ok {
				c.replyErr("ERR Invalid client ID")
				return
			}
			if x := c.s.clientByID(id); x != nil {
				clients = append(clients, x)
			}
		}
	default:
		c.replyErr(errSyntax)
		return
	}
	now := time.Now()
	var b strings.Builder
	for _, x := range clients {
		b.WriteString(x.infoLine(now))
		b.WriteByte('\n')
	}
	c.replyVerbatim(b.String())
}

func sortClients(cs []*client) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].id < cs[j].id })
}

func cmdClientKill(c *client, args [][]byte) {
	var addr, laddr string
	var id int64
	var maxAge int64
	typ := ""
	skipme := true
	if len(args) == 3 {
		addr = string(args[2])
		skipme = false
	} else {
		for i := 2; i < len(args); i += 2 {
			if i+1 >= len(args) {
				c.replyErr(errSyntax)
				return
			}
			v := args[i+1]
			switch {
			case eqFold(args[i], "id"):
				n, ok := parseInt(v)
				if !ok || n < 1 {
					c.replyErr("ERR client-id should be greater than 0")
					return
				}
				id = n
			case eqFold(args[i], "maxage"):
				n, ok := parseInt(v)
				if !ok {
					c.replyErr("ERR maxage is not an integer or out of range")
					return
				}
				if n <= 0 {
					c.replyErr("ERR maxage should be greater than 0")
					return
				}
				maxAge = n
			case eqFold(args[i], "type"):
				switch t := strings.ToLower(string(cstr(v))); t {
				case "normal", "master", "slave", "replica", "pubsub":
					typ = t
				default:
					c.replyErr("ERR Unknown client type '" + string(cstr(v)) + "'")
					return
				}
			case eqFold(args[i], "addr"):
				addr = string(v)
			case eqFold(args[i], "laddr"):
				laddr = string(v)
			case eqFold(args[i], "user"):
				if string(v) != "default" {
					c.replyErr("ERR No such user '" + string(cstr(v)) + "'")
					return
				}
			case eqFold(args[i], "skipme"):
				switch {
				case eqFold(v, "yes"):
					skipme = true
				case eqFold(v, "no"):
					skipme = false
				default:
					c.replyErr(errSyntax)
					return
				}
			default:
				c.replyErr(errSyntax)
				return
			}
		}
	}
	now := time.Now()
	killed := 0
	for _, x := range c.s.allClients() {
		if addr != "" && x.addr != addr {
			continue
		}
		if laddr != "" && x.laddr != laddr {
			continue
		}
		if typ != "" && typ != "normal" {
			continue
		}
		if id != 0 && x.id != id {
			continue
		}
		if x == c && skipme {
			continue
		}
		if maxAge != 0 && int64(now.Sub(x.created).Seconds()) < maxAge {
			continue
		}
		if x == c {
			c.closeNow = true
		} else {
			x.kill()
		}
		killed++
	}
	if len(args) == 3 {
		if killed == 0 {
			c.replyErr("ERR No such client")
		} else {
			c.replyOK()
		}
		return
	}
	c.replyInt(int64(killed))
}

func cmdClientHelp(c *client, args [][]byte) {
	c.replyHelp("CLIENT", []string{
		"CACHING (YES|NO)",
		"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
		"GETREDIR",
		"    Return the client ID we are redirecting to when tracking is enabled.",
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"KILL <ip:port>",
		"    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]",
		"    Kill connections. Options are:",
		"    * ADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Kill connections by type.",
		"    * USER <username>",
		"      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)",
		"      Skip killing current connection (default: yes).",
		"    * ID <client-id>",
		"      Kill connections by client id.",
		"    * MAXAGE <maxage>",
		"      Kill connections older than the specified age.",
		"LIST [options ...]",
		"    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Return clients of specified type.",
		"UNPAUSE",
		"    Stop the current client pause, resuming traffic.",
		"PAUSE <timeout> [WRITE|ALL]",
		"    Suspend all, or just write, clients for <timeout> milliseconds.",
		"REPLY (ON|OFF|SKIP)",
		"    Control the replies sent to the current connection.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
		"UNBLOCK <clientid> [TIMEOUT|ERROR]",
		"    Unblock the specified blocked client.",
		"SETINFO <option> <value>",
		"    Set client meta attr. Options are:",
		"    * LIB-NAME: the client lib name.",
		"    * LIB-VER: the client lib version.",
		"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
		"         [OPTIN] [OPTOUT] [NOLOOP]",
		"    Control server assisted client side caching.",
		"TRACKINGINFO",
		"    Report tracking status for the current connection.",
		"NO-EVICT (ON|OFF)",
		"    Protect current client connection from eviction.",
		"NO-TOUCH (ON|OFF)",
		"    Will not touch LRU/LFU stats when this mode is on.",
	})
}

func cmdClientTracking(c *client, args [][]byte) {
	var redir int64
	var bcast, optin, optout, noloop bool
	var prefixes [][]byte
	for j := 3; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eqFold(args[j], "redirect") && more > 0:
			j++
			if redir != 0 {
				c.replyErr("ERR A client can only redirect to a single other client")
				return
			}
			n, ok := parseInt(args[j])
			if !ok {
				c.replyErr(errNotInt)
				return
			}
			if c.s.clientByID(n) == nil {
				c.replyErr("ERR The client ID you want redirect to does not exist")
				return
			}
			redir = n
		case eqFold(args[j], "bcast"):
			bcast = true
		case eqFold(args[j], "optin"):
			optin = true
		case eqFold(args[j], "optout"):
			optout = true
		case eqFold(args[j], "noloop"):
			noloop = true
		case eqFold(args[j], "prefix") && more > 0:
			j++
			prefixes = append(prefixes, bytes.Clone(args[j]))
		default:
			c.replyErr(errSyntax)
			return
		}
	}
	switch {
	case eqFold(args[2], "on"):
		if !bcast && len(prefixes) > 0 {
			c.replyErr("ERR PREFIX option requires BCAST mode to be enabled")
			return
		}
		if c.trk.on && c.trk.bcast != bcast {
			c.replyErr("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if bcast && (optin || optout) {
			c.replyErr("ERR OPTIN and OPTOUT are not compatible with BCAST")
			return
		}
		if optin && optout {
			c.replyErr("ERR You can't specify both OPTIN mode and OPTOUT mode")
			return
		}
		if (optin && c.trk.optout) || (optout && c.trk.optin) {
			c.replyErr("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if msg := prefixCollision(c.trk.prefixes, prefixes); msg != "" {
			c.replyErr(msg)
			return
		}
		if bcast && len(prefixes) == 0 {
			prefixes = [][]byte{{}} // every key, as Redis's prefix ""
		}
		t := c.s.track
		t.mu.Lock()
		c.trk.on = true
		c.trk.bcast = bcast
		c.trk.optin = c.trk.optin || optin
		c.trk.optout = c.trk.optout || optout
		c.trk.noloop = c.trk.noloop || noloop
		c.trk.redirect = redir
		for _, p := range prefixes {
			if i, found := slices.BinarySearchFunc(c.trk.prefixes, p, bytes.Compare); !found {
				c.trk.prefixes = slices.Insert(c.trk.prefixes, i, p)
			}
		}
		t.mu.Unlock()
		t.enable(c)
	case eqFold(args[2], "off"):
		c.disableTracking()
	default:
		c.replyErr(errSyntax)
		return
	}
	c.syncInfo()
	c.replyOK()
}

// prefixCollision returns Redis's error for BCAST prefixes that overlap
// (one is a prefix of the other, or they are equal), checked as Redis
// does: each new prefix in turn against the client's prefixes (in order),
// then against the new prefixes after it; "" if none overlap.
func prefixCollision(have, add [][]byte) string {
	overlap := func(a, b []byte) bool {
		n := min(len(a), len(b))
		return bytes.Equal(a[:n], b[:n])
	}
	// Redis formats the prefixes with %s, which ends them at a NUL byte.
	str := func(p []byte) string {
		if i := bytes.IndexByte(p, 0); i >= 0 {
			p = p[:i]
		}
		return string(p)
	}
	for i, p := range add {
		for _, q := range have {
			if overlap(p, q) {
				return fmt.Sprintf("ERR Prefix '%s' overlaps with an existing prefix '%s'. Prefixes for a single client must not overlap.", str(p), str(q))
			}
		}
		for _, q := range add[i+1:] {
			if overlap(p, q) {
				return fmt.Sprintf("ERR Prefix '%s' overlaps with another provided prefix '%s'. Prefixes for a single client must not overlap.", str(p), str(q))
			}
		}
	}
	return ""
}

func (c *client) disableTracking() {
	t := c.s.track
	t.disable(c)
	t.mu.Lock()
	p3 := c.trk.p3
	c.trk = trackState{p3: p3}
	t.mu.Unlock()
}

func cmdClientCaching(c *client, args [][]byte) {
	if !c.trk.on {
		c.replyErr("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch {
	case eqFold(args[2], "yes"):
		if !c.trk.optin {
			c.replyErr("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case eqFold(args[2], "no"):
		if !c.trk.optout {
			c.replyErr("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		c.replyErr(errSyntax)
		return
	}
	c.trk.caching = true
	c.replyOK()
}

func cmdClientGetredir(c *client, args [][]byte) {
	if c.trk.on {
		c.replyInt(c.trk.redirect)
		return
	}
	c.replyInt(-1)
}

func cmdClientTrackinginfo(c *client, args [][]byte) {
	c.replyMap(3)
	c.replyBulkString("flags")
	var flags []string
	if c.trk.on {
		flags = append(flags, "on")
	} else {
		flags = append(flags, "off")
	}
	if c.trk.bcast {
		flags = append(flags, "bcast")
	}
	if c.trk.optin {
		flags = append(flags, "optin")
		if c.trk.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if c.trk.optout {
		flags = append(flags, "optout")
		if c.trk.caching {
			flags = append(flags, "caching-no")
		}
	}
	if c.trk.noloop {
		flags = append(flags, "noloop")
	}
	c.replySet(len(flags))
	for _, f := range flags {
		c.replyBulkString(f)
	}
	c.replyBulkString("redirect")
	if c.trk.on {
		c.replyInt(c.trk.redirect)
	} else {
		c.replyInt(-1)
	}
	c.replyBulkString("prefixes")
	c.replyArray(len(c.trk.prefixes))
	for _, p := range c.trk.prefixes {
		c.replyBulk(p)
	}
}

// Protected mode.

const deniedProtectedMode = "-DENIED Redis is running in protected mode because protected " +
	"mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. " +
	"If you want to connect from external computers to Redis you " +
	"may adopt one of the following solutions: " +
	"1) Just disable protected mode sending the command " +
	"'CONFIG SET protected-mode no' from the loopback interface " +
	"by connecting to Redis from the same host the server is " +
	"running, however MAKE SURE Redis is not publicly accessible " +
	"from internet if you do so. Use CONFIG REWRITE to make this " +
	"change permanent. " +
	"2) Alternatively you can just disable the protected mode by " +
	"editing the Redis configuration file, and setting the protected " +
	"mode option to 'no', and then restarting the server. " +
	"3) If you started the server manually just for testing, restart " +
	"it with the '--protected-mode no' option. " +
	"4) Set up an authentication password for the default user. " +
	"NOTE: You only need to do one of the above things in order for " +
	"the server to start accepting connections from the outside.\r\n"

// protectedRefuses reports whether protected mode refuses a client
// connecting from addr.
func (s *Server) protectedRefuses(addr net.Addr) bool {
	pass, protected := s.cfg.access.Get()
	return protectedModeRefuses(protected, pass != "", addr)
}

// protectedModeRefuses is the protected-mode decision: with protected
// mode on and no password, only loopback and unix-socket clients are
// served.
func protectedModeRefuses(protected, hasPassword bool, addr net.Addr) bool {
	if !protected || hasPassword {
		return false
	}
	return !isLocalAddr(addr)
}

func isLocalAddr(addr net.Addr) bool {
	switch a := addr.(type) {
	case nil:
		return true // net.Pipe and other in-process transports
	case *net.UnixAddr:
		return true
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		host = addr.String()
	}
	if host == "pipe" || strings.HasPrefix(addr.Network(), "unix") || addr.Network() == "pipe" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
