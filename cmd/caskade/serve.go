package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/resp"
	"github.com/caskade/caskade/server/access"
	"github.com/caskade/caskade/server/httpapi"
	"github.com/caskade/caskade/server/memcache"
	"github.com/caskade/caskade/server/metrics"
	"github.com/caskade/caskade/server/redis"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// version is caskade's version; release builds set it with
// -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// hooks let tests observe a running server.
type hooks struct {
	// ready is called with the addresses being served once every listener
	// is open.
	ready func(addrs []net.Addr)
	// logOut receives the log (default os.Stderr).
	logOut io.Writer
	// progress shows the maintenance commands' progress bars even when
	// stderr is not a terminal.
	progress bool
	// now, if set, is the maintenance commands' clock for expiry.
	now func() time.Time
	// afterCheck, if set, is called by check --repair between the check
	// and the repair.
	afterCheck func()
	// options, if set, may change serve's database options before it
	// opens the database (a small MaxFileSize, frequent merges).
	options func(*caskade.Options)
}

// serveConfig holds the serve flags.
type serveConfig struct {
	config          string
	dir             string
	sync            string
	redisAddr       string
	redisSocket     string
	redisSocketPerm socketPerm
	requirepass     string
	protectedMode   yesNo
	maxclients      int
	timeout         int
	databases       int
	tlsCert         string
	tlsKey          string
	tlsAddr         string
	memcacheAddr    string
	memcacheUDPAddr string
	httpAddr        string
	pprof           bool
	eventLoops      int
	shutdownTimeout time.Duration
}

func newRootCmd(h *hooks) *cobra.Command {
	if h == nil {
		h = &hooks{}
	}
	root := &cobra.Command{
		Use:           "caskade",
		Short:         "caskade is a durable, ordered key-value database",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCmd(h), newVersionCmd())
	addMaintenanceCmds(root, h)
	return root
}

func versionString() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return v
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "caskade %s (Redis protocol %s, %s %s/%s)\n",
				versionString(), redis.RedisVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}

func newServeCmd(h *hooks) *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the database over the Redis, memcached and HTTP protocols",
		Long: `Serve opens the database in --dir and serves it over the Redis protocol
(RESP2 and RESP3) on TCP, a unix socket and TLS, the memcached protocol
(TCP, and UDP if asked) and HTTP, each on its own address (an empty address
turns that listener off). SIGINT and SIGTERM stop it
gracefully: what was acknowledged is synced at once, listeners close,
commands in flight finish, the data is synced again and the database
closed. A client that does not take its replies holds this up for
--shutdown-timeout at most (10s, well inside the 30 s that Kubernetes and
the 90 s that systemd give before they kill a process), then its
connection is closed; the writes acknowledged before the signal are
durable before any such wait, whatever --sync and --shutdown-timeout say.

Every flag can also be given as an environment variable CASKADE_<FLAG>
(CASKADE_REDIS_ADDR for --redis-addr) or as a "name value" line in the
--config file; flags win over the environment, the environment over the file.

In the config file, as in redis.conf, a value may be wrapped in double
quotes (with the escapes \n, \r, \t, \b, \a, \xHH, \" and \\) or in single
quotes (literal but for \'), to keep blanks or give an empty value
(redis-addr ""); lines starting with # are comments. See "go doc
github.com/caskade/caskade/cmd/caskade" for the details.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := applyEnvAndFile(c.Flags()); err != nil {
				return err
			}
			return runServe(c.Context(), &cfg, h)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.config, "config", "", "read settings from this file (\"name value\" lines)")
	f.StringVar(&cfg.dir, "dir", "./caskade-data", "data directory")
	f.StringVar(&cfg.sync, "sync", "everysec", "durability: always (fsync before replying), everysec or none")
	f.StringVar(&cfg.redisAddr, "redis-addr", "127.0.0.1:6379", "Redis protocol TCP address (empty disables)")
	f.StringVar(&cfg.redisSocket, "redis-socket", "", "Redis protocol unix socket path (empty disables)")
	f.Var(&cfg.redisSocketPerm, "redis-socket-perm", "permissions of the --redis-socket file, in octal as for chmod, e.g. 700 or 770 (0: as the umask leaves them, usually 755)")
	f.StringVar(&cfg.requirepass, "requirepass", "", "password clients must give with AUTH or HELLO (empty: none, loopback clients only)")
	cfg.protectedMode = true
	f.Var(&cfg.protectedMode, "protected-mode", "yes: without --requirepass, serve only loopback clients (as Redis's protected-mode); no: serve any client that reaches a listener")
	f.IntVar(&cfg.maxclients, "maxclients", redis.DefaultMaxClients, "maximum number of connected clients of each front end: Redis (all its listeners together), memcached (TCP) and HTTP")
	f.IntVar(&cfg.timeout, "timeout", 0, "close connections idle for this many seconds (0: never; HTTP keep-alive connections then close after 2 minutes idle)")
	f.IntVar(&cfg.databases, "databases", redis.DefaultDatabases, "number of databases (SELECT 0..N-1), at most 256")
	f.StringVar(&cfg.tlsCert, "tls-cert", "", "TLS certificate file (PEM) for --tls-addr")
	f.StringVar(&cfg.tlsKey, "tls-key", "", "TLS private key file (PEM) for --tls-addr")
	f.StringVar(&cfg.tlsAddr, "tls-addr", "", "Redis protocol over TLS address (empty disables)")
	f.StringVar(&cfg.memcacheAddr, "memcache-addr", "127.0.0.1:11211", "memcached protocol TCP address (empty disables)")
	f.StringVar(&cfg.memcacheUDPAddr, "memcache-udp-addr", "", "memcached protocol UDP address (off by default: UDP invites reflection attacks)")
	f.StringVar(&cfg.httpAddr, "http-addr", "127.0.0.1:8379", "HTTP API and /metrics address (empty disables)")
	f.BoolVar(&cfg.pprof, "pprof", false, "serve /debug/pprof on the HTTP address")
	f.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long SIGINT or SIGTERM waits for commands in flight and for clients to take their replies before it closes their connections and the database")
	f.IntVar(&cfg.eventLoops, "event-loops", 0, fmt.Sprintf("event loops serving Redis and memcached connections (0: one per processor; -1: a goroutine per connection; at most %d)", maxEventLoops))
	return cmd
}

// envName returns the environment variable of a flag.
func envName(flag string) string {
	return "CASKADE_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnvAndFile sets every flag not given on the command line from the
// environment, or else from the config file.
func applyEnvAndFile(fs *pflag.FlagSet) error {
	var fileVals map[string]setting
	cf := fs.Lookup("config")
	if !cf.Changed {
		if v, ok := os.LookupEnv(envName("config")); ok {
			if err := cf.Value.Set(v); err != nil {
				return err
			}
		}
	}
	if path := cf.Value.String(); path != "" {
		var err error
		if fileVals, err = readConfigFile(path, fs); err != nil {
			return err
		}
	}
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "config" || f.Name == "help" {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if e := setFlag(f, v); e != nil {
				err = fmt.Errorf("environment %s=%q: %v", envName(f.Name), v, e)
			}
			return
		}
		if v, ok := fileVals[f.Name]; ok {
			if e := setFlag(f, v.val); e != nil {
				err = fmt.Errorf("config file %s:%d: %s %q: %v", cf.Value.String(), v.line, f.Name, v.val, e)
			}
		}
	})
	return err
}

// setFlag sets f from the environment or the config file, where a boolean
// may also be yes or no, as in redis.conf.
func setFlag(f *pflag.Flag, v string) error {
	if f.Value.Type() == "bool" {
		switch strings.ToLower(v) {
		case "yes":
			v = "true"
		case "no":
			v = "false"
		}
	}
	return f.Value.Set(v)
}

// setting is a value from the config file and its line number.
type setting struct {
	val  string
	line int
}

// readConfigFile reads "name value" lines.
func readConfigFile(path string, fs *pflag.FlagSet) (map[string]setting, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	vals := map[string]setting{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, val, _ := strings.Cut(line, " ")
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			name, val = line[:i], line[i+1:]
		}
		name = strings.TrimPrefix(strings.ToLower(name), "--")
		val = strings.TrimSpace(val)
		val, err := unquoteConfigValue(val)
		if err != nil {
			return nil, fmt.Errorf("config file %s:%d: %v", path, n, err)
		}
		if name == "config" || name == "help" || fs.Lookup(name) == nil {
			return nil, fmt.Errorf("config file %s:%d: unknown setting %q", path, n, name)
		}
		vals[name] = setting{val, n}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return vals, nil
}

// maxEventLoops bounds --event-loops: each loop holds an epoll instance
// and a goroutine, and more loops than processors only add switching.
const maxEventLoops = 1024

// validate reports the first flag value serve refuses, naming the flag.
// The numeric bounds are those CONFIG SET applies at run time (Redis's).
func (cfg *serveConfig) validate() error {
	switch {
	case cfg.databases < 1 || cfg.databases > redis.MaxDatabases:
		return fmt.Errorf("--databases %d: want 1 to %d", cfg.databases, redis.MaxDatabases)
	case cfg.maxclients < 1 || cfg.maxclients > math.MaxInt32:
		return fmt.Errorf("--maxclients %d: want 1 to %d", cfg.maxclients, math.MaxInt32)
	case cfg.timeout < 0 || cfg.timeout > math.MaxInt32:
		return fmt.Errorf("--timeout %d: want 0 (never) to %d seconds", cfg.timeout, math.MaxInt32)
	case cfg.shutdownTimeout < 0:
		return fmt.Errorf("--shutdown-timeout %v: want 0 (close connections at once) or more", cfg.shutdownTimeout)
	case cfg.eventLoops < -1 || cfg.eventLoops > maxEventLoops:
		return fmt.Errorf("--event-loops %d: want -1 (a goroutine per connection), 0 (one per processor) or 1 to %d", cfg.eventLoops, maxEventLoops)
	case cfg.redisSocketPerm != 0 && cfg.redisSocket == "":
		return errors.New("--redis-socket-perm needs --redis-socket (the socket whose permissions it sets)")
	case cfg.redisAddr == "" && cfg.redisSocket == "" && cfg.tlsAddr == "" && cfg.memcacheAddr == "" && cfg.memcacheUDPAddr == "" && cfg.httpAddr == "":
		return errors.New("nothing to serve: every listener address is empty")
	}
	return cfg.validateTLS()
}

// validateTLS refuses a TLS setting that would be ignored: the TLS
// listener needs all three of --tls-addr, --tls-cert and --tls-key, and a
// certificate or key without an address would leave TLS off silently.
func (cfg *serveConfig) validateTLS() error {
	var given, missing []string
	for _, f := range []struct{ name, val string }{
		{"--tls-addr", cfg.tlsAddr}, {"--tls-cert", cfg.tlsCert}, {"--tls-key", cfg.tlsKey},
	} {
		if f.val == "" {
			missing = append(missing, f.name)
		} else {
			given = append(given, f.name)
		}
	}
	if len(given) == 0 || len(missing) == 0 {
		return nil
	}
	verb := "needs"
	if len(given) > 1 {
		verb = "need"
	}
	return fmt.Errorf("%s %s %s (TLS is served only with all three of --tls-addr, --tls-cert and --tls-key)",
		strings.Join(given, " and "), verb, strings.Join(missing, " and "))
}

// unquoteConfigValue returns a config file value without its quotes, as
// redis.conf reads them (resp.SplitArgs, Redis's sdssplitargs): a value
// wrapped in double quotes takes the escapes \n, \r, \t, \b, \a and \xHH,
// and a backslash before any other character stands for that character
// (\" and \\ among them); a value wrapped in single quotes is taken
// literally but for \', a quote. Nothing may follow the closing quote but
// blanks, and a quote must be closed. A value that does not begin with a
// quote is taken as it is.
func unquoteConfigValue(val string) (string, error) {
	if val == "" || (val[0] != '"' && val[0] != '\'') {
		return val, nil
	}
	args, ok := resp.SplitArgs([]byte(val))
	switch {
	case !ok:
		return "", fmt.Errorf("bad quoting in %s: a quote left open, or text right after the closing one", val)
	case len(args) != 1:
		return "", fmt.Errorf("text after the closing quote of %s (wrap the whole value in quotes)", val)
	}
	return string(args[0]), nil
}

func runServe(ctx context.Context, cfg *serveConfig, h *hooks) error {
	logOut := h.logOut
	if logOut == nil {
		logOut = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	policy, err := caskade.ParseSyncPolicy(cfg.sync)
	if err != nil {
		return fmt.Errorf("--sync %q: want always, everysec or none", cfg.sync)
	}
	if err := cfg.validate(); err != nil {
		return err
	}

	opts := &caskade.Options{Sync: policy, Logger: log}
	if h.options != nil {
		h.options(opts)
	}
	db, err := caskade.Open(cfg.dir, opts)
	if err != nil {
		return openErr(err, cfg.dir) // as the maintenance commands say it
	}
	if _, err := os.Stat(filepath.Join(cfg.dir, caskade.ManifestName)); err == nil {
		// It opens as a database, but the first write (or merge) leaves
		// files its manifest does not list, and restore refuses it then.
		log.Warn("caskade: the data directory is a backup (it holds "+caskade.ManifestName+
			"): once anything is written, caskade restore will refuse it; to serve a copy, restore it into a directory of its own",
			"dir", cfg.dir)
	}
	closeDB := func() error {
		err := db.Sync()
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		return err
	}

	stopped, shutdown := context.WithCancel(ctx)
	defer shutdown()
	// All front ends share the database and one metrics registry (served at
	// /metrics on the HTTP address).
	m := metrics.New(db)
	// One set of access settings for the three front ends, so that Redis's
	// CONFIG SET requirepass and protected-mode apply to all of them.
	acc := access.New(cfg.requirepass, bool(cfg.protectedMode))
	srv := &redis.Server{
		Metrics:      m,
		DB:           db,
		Access:       acc,
		MaxClients:   cfg.maxclients,
		IdleTimeout:  time.Duration(cfg.timeout) * time.Second,
		Databases:    cfg.databases,
		Version:      versionString(),
		ConfigFile:   cfg.config,
		BackupDir:    filepath.Join(cfg.dir, "backups"),
		Logger:       log,
		ShutdownFunc: shutdown,
		EventLoops:   cfg.eventLoops,
	}

	var listeners []net.Listener
	var tlsListener net.Listener
	fail := func(err error) error {
		for _, l := range listeners {
			l.Close()
		}
		closeDB()
		return err
	}
	if cfg.redisAddr != "" {
		l, err := net.Listen("tcp", cfg.redisAddr)
		if err != nil {
			return fail(fmt.Errorf("--redis-addr: %w", err))
		}
		listeners = append(listeners, l)
	}
	if cfg.redisSocket != "" {
		l, err := listenUnix(cfg.redisSocket)
		if err != nil {
			return fail(fmt.Errorf("--redis-socket: %w", err))
		}
		listeners = append(listeners, l)
		if cfg.redisSocketPerm != 0 {
			// As Redis's unixsocketperm: set once the socket exists.
			// Connecting needs write permission, which the usual umask
			// (022) gives no one but the owner meanwhile.
			if err := os.Chmod(cfg.redisSocket, fs.FileMode(cfg.redisSocketPerm)); err != nil {
				return fail(fmt.Errorf("--redis-socket-perm: %w", err))
			}
		}
	}
	if cfg.tlsAddr != "" {
		cert, warning, err := loadCert(cfg.tlsCert, cfg.tlsKey, time.Now())
		if err != nil {
			return fail(err)
		}
		if warning != "" {
			// Served anyway: refusing to start would also cut off the
			// clients that do not verify, and a restart to renew it.
			log.Warn("caskade: " + warning)
		}
		l, err := net.Listen("tcp", cfg.tlsAddr)
		if err != nil {
			return fail(fmt.Errorf("--tls-addr: %w", err))
		}
		tlsListener = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		listeners = append(listeners, tlsListener)
	}
	mc := &memcache.Server{DB: db, MaxConns: cfg.maxclients, IdleTimeout: srv.IdleTimeout, Access: acc,
		Logger: log, Metrics: m, EventLoops: cfg.eventLoops}
	web := &httpapi.Server{DB: db, MaxConns: cfg.maxclients, Access: acc,
		EnablePprof: cfg.pprof, Logger: log, Metrics: m}
	if !cfg.protectedMode && cfg.requirepass == "" {
		log.Warn("caskade: protected mode is off and no password is set: any client that reaches a listener can read and change everything")
	}
	if srv.IdleTimeout > 0 {
		// 0 means never for Redis and memcached clients; an HTTP
		// keep-alive connection keeps its own bound then.
		web.IdleTimeout = srv.IdleTimeout
		// net/http bounds the wait for a connection's first request by
		// ReadHeaderTimeout, not IdleTimeout: without this, a connection
		// that never sends anything stays open for the default 10 s.
		web.ReadHeaderTimeout = min(srv.IdleTimeout, httpapi.DefaultReadHeaderTimeout)
	}
	var mcListener, httpListener net.Listener
	var udp net.PacketConn
	if cfg.memcacheAddr != "" {
		if mcListener, err = net.Listen("tcp", cfg.memcacheAddr); err != nil {
			return fail(fmt.Errorf("--memcache-addr: %w", err))
		}
		listeners = append(listeners, mcListener)
	}
	if cfg.memcacheUDPAddr != "" {
		if cfg.requirepass != "" {
			return fail(errors.New("--memcache-udp-addr: UDP cannot authenticate; it is refused when --requirepass is set"))
		}
		if udp, err = net.ListenPacket("udp", cfg.memcacheUDPAddr); err != nil {
			return fail(fmt.Errorf("--memcache-udp-addr: %w", err))
		}
	}
	if cfg.httpAddr != "" {
		if httpListener, err = net.Listen("tcp", cfg.httpAddr); err != nil {
			if udp != nil {
				udp.Close()
			}
			return fail(fmt.Errorf("--http-addr: %w", err))
		}
		listeners = append(listeners, httpListener)
	}

	errc := make(chan error, len(listeners)+1)
	var addrs []net.Addr
	for _, l := range listeners {
		addrs = append(addrs, l.Addr())
		switch l {
		case mcListener:
			log.Info("caskade: serving the memcached protocol", "addr", l.Addr().String())
			go func() { errc <- ignoreClosed(mc.Serve(l)) }()
		case httpListener:
			log.Info("caskade: serving HTTP", "addr", l.Addr().String())
			go func() { errc <- ignoreClosed(web.Serve(l)) }()
		default:
			network := l.Addr().Network()
			if l == tlsListener {
				network = "tls"
			}
			log.Info("caskade: serving the Redis protocol", "addr", l.Addr().String(), "network", network)
			go func() { errc <- srv.Serve(l) }()
		}
	}
	if udp != nil {
		log.Info("caskade: serving the memcached protocol over UDP", "addr", udp.LocalAddr().String())
		go func() { errc <- ignoreClosed(mc.ServeUDP(udp)) }()
	}
	log.Info("caskade: started", "version", versionString(), "dir", cfg.dir, "sync", policy.String(),
		"keys", db.Stats().Keys)
	if h.ready != nil {
		h.ready(addrs)
	}

	var serveErr error
	select {
	case <-stopped.Done():
	case serveErr = <-errc:
		if errors.Is(serveErr, redis.ErrServerClosed) {
			serveErr = nil
		}
	}
	log.Info("caskade: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	// The front ends stop together: one after the other, a client of one
	// that does not read its replies would keep the others accepting
	// clients and running commands until the deadline, and then leave
	// them no time to finish theirs.
	var stopping sync.WaitGroup
	// Make what was acknowledged durable now, not once the clients that
	// do not take their replies have been waited for: a supervisor's
	// SIGKILL may come first (Kubernetes gives 30 s), and under --sync
	// none nothing else would sync it. Writes acknowledged during the
	// shutdown are synced when the database closes.
	stopping.Go(func() {
		if err := db.Sync(); err != nil {
			log.Error("caskade: sync at shutdown failed", "err", err)
		}
	})
	for _, sd := range []func(context.Context) error{srv.Shutdown, mc.Shutdown, web.Shutdown} {
		stopping.Go(func() {
			if err := sd(sctx); err != nil {
				log.Warn("caskade: connections still open at the shutdown deadline were closed", "err", err)
			}
		})
	}
	stopping.Wait()
	if cfg.redisSocket != "" {
		os.Remove(cfg.redisSocket)
	}
	if err := closeDB(); err != nil {
		return fmt.Errorf("close the database: %w", err)
	}
	log.Info("caskade: stopped")
	if serveErr != nil {
		return fmt.Errorf("serve: %w", serveErr)
	}
	return nil
}

// yesNo is a boolean flag written as in redis.conf: yes or no (true,
// false, 1 and 0 are taken too).
type yesNo bool

func (b *yesNo) String() string {
	if *b {
		return "yes"
	}
	return "no"
}

func (b *yesNo) Set(s string) error {
	switch strings.ToLower(s) {
	case "yes", "true", "1":
		*b = true
	case "no", "false", "0":
		*b = false
	default:
		return fmt.Errorf("want yes or no")
	}
	return nil
}

func (b *yesNo) Type() string { return "yes|no" }

// socketPerm is the --redis-socket-perm flag: permission bits in octal,
// as chmod takes them (700, 0770 or 0o660); 0 leaves them to the umask.
type socketPerm uint32

func (p *socketPerm) String() string {
	if *p == 0 {
		return "0"
	}
	return fmt.Sprintf("%#o", uint32(*p))
}

func (p *socketPerm) Set(s string) error {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0O"), 8, 32)
	if err != nil || v > 0o777 {
		return fmt.Errorf("want permission bits in octal, 0 to 777, such as 700 or 770")
	}
	*p = socketPerm(v)
	return nil
}

func (p *socketPerm) Type() string { return "octal" }

// maxSocketPath is the longest path a unix socket can be bound to.
var maxSocketPath = len(syscall.RawSockaddrUnix{}.Path) - 1

// listenUnix listens on the unix socket path. A socket file already there
// is removed only if nothing accepts connections on it (a stale socket left
// by a server that was killed); a live one belongs to another server.
func listenUnix(path string) (net.Listener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("%s: path too long for a unix socket (%d bytes, at most %d)", path, len(path), maxSocketPath)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		switch {
		case err == nil:
			c.Close()
			return nil, fmt.Errorf("%s is in use: another server is listening on it", path)
		case errors.Is(err, syscall.ECONNREFUSED):
			os.Remove(path) // a stale socket of an earlier run
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%s exists and cannot be checked for a running server: %w", path, err)
		}
	}
	return net.Listen("unix", path)
}

// loadCert loads the TLS certificate and key. A certificate that is not
// valid at now gives a warning: every client that verifies it will fail.
func loadCert(certFile, keyFile string, now time.Time) (cert tls.Certificate, warning string, err error) {
	cert, err = tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return cert, "", fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return cert, "", fmt.Errorf("--tls-cert %s: %w", certFile, err)
		}
	}
	switch {
	case now.After(leaf.NotAfter):
		warning = fmt.Sprintf("--tls-cert %s: the certificate expired at %s; clients that verify it will refuse it", certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		warning = fmt.Sprintf("--tls-cert %s: the certificate is not valid before %s; clients that verify it will refuse it", certFile, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return cert, warning, nil
}

// ignoreClosed turns the error a server returns after Shutdown into nil.
func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) ||
		errors.Is(err, memcache.ErrServerClosed) {
		return nil
	}
	return err
}
