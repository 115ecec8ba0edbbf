package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/console/users"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/internal/demo"
	"github.com/goxpdl/goxpdl/internal/startstop"
	"github.com/goxpdl/goxpdl/metrics"
	"github.com/goxpdl/goxpdl/sink"
	"github.com/goxpdl/goxpdl/sink/kafka"
	"github.com/goxpdl/goxpdl/sink/nats"
	"github.com/goxpdl/goxpdl/xpdl"
)

const serveUsage = `Usage: goxpdl serve [--db DSN] [--addr HOST:PORT] [--deploy FILE]... [--users FILE]
                    [--read-only] [--demo] [--publish URL] [--log-format text|json] [--log-level L]
                    [--script-memory SIZE] [--script-depth N] [--script-result SIZE]
                    [--script-result-total SIZE] [--condition-timeout D] [--script-timeout D]

Serve runs the engine and its administration console in one process: the
console's pages at /, its JSON API at /api/, and (see docs/serve.md)
Prometheus metrics at /metrics. It prints the URL to open, and runs until
Ctrl-C (SIGINT) or SIGTERM, when it stops taking requests, lets those under
way finish, and stops the engine.

Without --users there is no login: anyone who can reach the address can
operate the engine, so serve listens on loopback only and refuses any
other address. With --users FILE (made with "goxpdl users add"), every
request must log in, by the login page or by HTTP basic auth, and each
user may do what their role allows (viewer, operator, admin).

Flags:

	--db DSN            the engine's database (default: a new in-memory
	                    SQLite database, gone when serve stops):
	                    ` + dbUsage + `
	--addr HOST:PORT    where to listen (default 127.0.0.1:8080; port 0
	                    picks a free one). HOST must be a loopback address
	                    (127.0.0.1, ::1, localhost) unless --users is given
	--deploy FILE       deploy an XPDL file at start (repeatable; the files
	                    are deployed together, as goxpdl deploy does). A
	                    file whose package's latest version is this very
	                    file is not deployed again
	--users FILE        the users who may log in, with their roles
	--read-only         the console changes nothing: every action is refused
	--demo              deploy the demo (an SP assessment process, the
	                    paper's use case) and keep starting instances of it,
	                    with simulated people doing its work, so that the
	                    pages show life
	--publish URL       publish every record of every step (what goxpdl run
	                    --trace prints) to a message broker, at least once,
	                    in order per instance (see docs/sinks.md):
	                    kafka://HOST:PORT[,HOST:PORT...][/TOPIC] or
	                    nats://HOST:PORT[/SUBJECT][?stream=NAME] (JetStream;
	                    the stream, GOXPDL by default, is created if
	                    missing). A TOPIC or SUBJECT with {process} gives
	                    one per process definition; the default is
	                    goxpdl.records. A broker that is down holds no work
	                    up: the records wait in the database
	--log-format F      text (default) or json, on standard error
	--log-level L       debug, info (default), warn or error
` + scriptFlagsUsage + `

Applications nothing is bound to succeed doing nothing, as with goxpdl run.

Exit status: 0 stopped by a signal; 1 a --deploy file is invalid (its
problems are printed as validate prints them); 2 usage error, the users
file, a file or the database cannot be used, the address cannot be
listened on, or the server failed.
`

const serveShortUsage = `Usage: goxpdl serve [--db DSN] [--addr HOST:PORT] [--deploy FILE]... [--users FILE] [--read-only] [--demo] [--publish URL] [--log-format text|json] [--log-level L] [--script-memory SIZE] [--script-depth N] [--script-result SIZE] [--script-result-total SIZE] [--condition-timeout D] [--script-timeout D]
Run "goxpdl help serve" for details.
`

// defaultServeAddr is where serve listens by default.
const defaultServeAddr = "127.0.0.1:8080"

// shutdownGrace bounds how long serve waits for requests under way and
// for the engine when it stops.
const shutdownGrace = 30 * time.Second

// serveOptions are serve's flags.
type serveOptions struct {
	db, addr, users       string
	publish               string
	logFormat, logLevel   string
	deploy                listFlags
	readOnly, demoEnabled bool
	limits                scriptFlags
	// demo configures the demo driver (tests make it fast).
	demo demo.Config
}

func runServe(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	o := serveOptions{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printErr(stderr, "%s", serveShortUsage) }
	fs.StringVar(&o.db, "db", "", "database")
	fs.StringVar(&o.addr, "addr", defaultServeAddr, "HOST:PORT")
	fs.Var(&o.deploy, "deploy", "XPDL file")
	fs.StringVar(&o.users, "users", "", "users file")
	fs.BoolVar(&o.readOnly, "read-only", false, "refuse every action")
	fs.BoolVar(&o.demoEnabled, "demo", false, "run the demo")
	fs.StringVar(&o.publish, "publish", "", "kafka://... or nats://...")
	fs.StringVar(&o.logFormat, "log-format", "text", "text|json")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug|info|warn|error")
	o.limits.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeOut(stdout, stderr, serveUsage, exitOK)
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		printErr(stderr, "goxpdl serve: unexpected argument %q (files to deploy go with --deploy)\n%s", fs.Arg(0), serveShortUsage)
		return exitUsage
	}
	if err := o.limits.check(); err != nil {
		printErr(stderr, "goxpdl serve: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, o, stdout, stderr)
}

// serve runs the server until ctx ends, and returns the exit status.
func serve(ctx context.Context, o serveOptions, stdout, stderr io.Writer) int {
	logger, err := newLogger(o.logFormat, o.logLevel, stderr)
	if err != nil {
		printErr(stderr, "goxpdl serve: %v\n", err)
		return exitUsage
	}
	if err := checkServeAddr(o.addr, o.users != ""); err != nil {
		printErr(stderr, "goxpdl serve: %v\n", err)
		return exitUsage
	}
	var auth *users.Auth
	if o.users != "" {
		f, err := users.Load(o.users)
		if err != nil {
			printErr(stderr, "goxpdl serve: %v\n", err)
			return exitUsage
		}
		if len(f.Users()) == 0 {
			printErr(stderr, "goxpdl serve: --users %s holds no users: nobody could log in (add one with goxpdl users add)\n", o.users)
			return exitUsage
		}
		if auth, err = users.NewAuth(f, users.Config{Logger: logger}); err != nil {
			printErr(stderr, "goxpdl serve: %v\n", err)
			return exitUsage
		}
	}
	if len(o.deploy) > 0 {
		// Read and validate the files before anything starts.
		if _, code := loadDeployment("serve", o.deploy, stderr); code != exitOK {
			if code == exitProblems {
				printErr(stderr, "goxpdl serve: nothing deployed\n")
			}
			return code
		}
	}

	publish, closeSink, err := openSink(o.publish)
	if err != nil {
		printErr(stderr, "goxpdl serve: --publish: %v\n", err)
		return exitUsage
	}
	defer closeSink() // after the engine stopped (deferred below)

	db, closeDB, err := openDB(o.db)
	if err != nil {
		printErr(stderr, "goxpdl serve: %v\n", err)
		return exitUsage
	}
	defer closeDB()
	observed := metrics.New(metrics.WithLogger(logger))
	cfg := engine.Config{DB: db, Logger: logger, NoOpUnboundApplications: true, Observer: observed, Publish: publish}
	o.limits.apply(&cfg)
	e, err := engine.New(cfg)
	if err != nil {
		printErr(stderr, "goxpdl serve: %v (is %s an engine database?)\n", err, describeDB(o.db))
		return exitUsage
	}
	var driver *demo.Driver
	if o.demoEnabled {
		// Bound before the engine starts, so that recovered work of an
		// earlier run finds its applications.
		cfg := o.demo
		cfg.Engine, cfg.Logger = e, logger
		if driver, err = demo.New(cfg); err != nil {
			printErr(stderr, "goxpdl serve: %v\n", err)
			return exitUsage
		}
	}
	// The engine outlives ctx: when it ends, serve stops the server first
	// and then the engine, gracefully.
	if err := e.Start(context.WithoutCancel(ctx)); err != nil {
		printErr(stderr, "goxpdl serve: %v\n", err)
		return exitUsage
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if err := e.Stop(stopCtx); err != nil {
			printErr(stderr, "goxpdl serve: stop the engine: %v\n", err)
		}
	}()
	if len(o.deploy) > 0 {
		if code := serveDeploy(ctx, e, o.deploy, logger, stderr); code != exitOK {
			return code
		}
	}
	if driver != nil {
		if err := driver.Start(context.WithoutCancel(ctx)); err != nil {
			printErr(stderr, "goxpdl serve: %v\n", err)
			return exitUsage
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
			defer cancel()
			if err := driver.Stop(stopCtx); err != nil {
				printErr(stderr, "goxpdl serve: %v\n", err)
			}
		}()
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(observed, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	handler, err := serveHandler(e, o, auth, reg, logger)
	if err != nil {
		printErr(stderr, "goxpdl serve: %v\n", err)
		return exitUsage
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.addr)
	if err != nil {
		printErr(stderr, "goxpdl serve: %v\n", err)
		return exitUsage
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	login := "no login: loopback only"
	if auth != nil {
		login = "users from " + o.users
	}
	if o.readOnly {
		login += ", read-only"
	}
	if code := writeOut(stdout, stderr, fmt.Sprintf("goxpdl serve: console at %s (database %s; %s)\n", serveURL(ln.Addr()), describeDB(o.db), login), exitOK); code != exitOK {
		_ = ln.Close() // nothing was served
		return code
	}
	return runServer(ctx, srv, ln, logger, stderr)
}

// runServer serves on ln until ctx ends or the server fails, then shuts
// the server down: no new connections, and those under way may finish
// within shutdownGrace.
func runServer(ctx context.Context, srv *http.Server, ln net.Listener, logger *slog.Logger, stderr io.Writer) int {
	failed := make(chan error, 1)
	var svc startstop.Service
	if err := svc.Start(context.WithoutCancel(ctx), func(context.Context) { failed <- srv.Serve(ln) }); err != nil {
		printErr(stderr, "goxpdl serve: %v\n", err)
		return exitUsage
	}
	code := exitOK
	select {
	case <-ctx.Done():
		logger.Info("serve: stopping", "cause", context.Cause(ctx))
	case err := <-failed:
		printErr(stderr, "goxpdl serve: %v\n", err)
		code = exitUsage
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(stopCtx); err != nil {
		printErr(stderr, "goxpdl serve: shut the server down: %v\n", err)
		code = exitUsage
	}
	if err := svc.Stop(stopCtx); err != nil {
		printErr(stderr, "goxpdl serve: %v\n", err)
		code = exitUsage
	}
	return code
}

// serveHandler is the whole site: the console (behind the login when
// there are users) and the metrics.
func serveHandler(e *engine.Engine, o serveOptions, auth *users.Auth, reg *prometheus.Registry, logger *slog.Logger) (http.Handler, error) {
	opts := console.Options{ReadOnly: o.readOnly, Logger: logger}
	if auth != nil {
		opts.Authorize, opts.Actor, opts.LogoutURL = users.Authorize, users.Actor, "/logout"
	}
	h, err := console.New(e, opts)
	if err != nil {
		return nil, err
	}
	var site, scrape http.Handler = h, metrics.Handler(reg)
	if auth != nil {
		// A scraper logs in with basic auth, as any user may read.
		site, scrape = auth.Handler(h), auth.Handler(scrape)
	}
	mux := http.NewServeMux()
	mux.Handle("/", site)
	mux.Handle("GET /metrics", scrape)
	return mux, nil
}

// serveDeploy deploys the --deploy files as one, unless each file's
// package's latest version is that very file.
func serveDeploy(ctx context.Context, e *engine.Engine, files []string, logger *slog.Logger, stderr io.Writer) int {
	unchanged, err := alreadyDeployed(ctx, e, files)
	if err != nil {
		printErr(stderr, "goxpdl serve: %v\n", err)
		return exitUsage
	}
	if unchanged {
		logger.Info("serve: deployed already", "files", files)
		return exitOK
	}
	deps, err := e.DeployFiles(ctx, files...)
	if err != nil {
		printErr(stderr, "goxpdl serve: deploy: %v\n", err)
		if errors.Is(err, xpdl.ErrInvalid) {
			return exitProblems
		}
		return exitUsage
	}
	for _, d := range deps {
		logger.Info("serve: deployed", "file", d.File, "package", d.PackageID, "version", d.Version, "definition", d.ID)
	}
	return exitOK
}

// alreadyDeployed says whether the latest version of each file's package
// was deployed from that file's very bytes.
func alreadyDeployed(ctx context.Context, e *engine.Engine, files []string) (bool, error) {
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return false, fmt.Errorf("--deploy %s: %w", f, err)
		}
		pkg, err := xpdl.Read(bytes.NewReader(src), &xpdl.ReadOpts{Name: filepath.Base(f)})
		if err != nil {
			return false, fmt.Errorf("--deploy %s: %w", f, err)
		}
		versions, err := e.Versions(ctx, pkg.ID)
		if err != nil && !errors.Is(err, engine.ErrNotFound) {
			return false, fmt.Errorf("--deploy %s: %w", f, err)
		}
		if len(versions) == 0 {
			return false, nil
		}
		_, deployed, err := e.DefinitionSource(ctx, versions[len(versions)-1].ID)
		if err != nil {
			return false, fmt.Errorf("--deploy %s: %w", f, err)
		}
		if !bytes.Equal(deployed, src) {
			return false, nil
		}
	}
	return true, nil
}

// checkServeAddr checks --addr: HOST:PORT, and without users a loopback
// HOST.
func checkServeAddr(addr string, withUsers bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: want HOST:PORT: %w", addr, err)
	}
	if withUsers || isLoopback(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every interface"
	}
	return fmt.Errorf("--addr %s: %s is not a loopback address; without --users anyone who reaches it could operate the engine. "+
		"Give --users FILE (goxpdl users add), or listen on 127.0.0.1", addr, shown)
}

// isLoopback says whether host is a loopback address: 127.0.0.0/8, ::1
// or "localhost". Other names are not resolved: they count as
// non-loopback.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveURL is the URL to open for a listener's address: an unspecified
// address (every interface) is reached through localhost.
func serveURL(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String() + "/"
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(tcp.Port)) + "/"
}

// newLogger is serve's logger on w.
func newLogger(format, level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// openSink returns the sink of a --publish URL and the func that closes
// it; none for "".
func openSink(raw string) (sink.Sink, func(), error) {
	scheme, _, _ := strings.Cut(raw, "://")
	switch {
	case raw == "":
		return nil, func() {}, nil
	case scheme == "kafka":
		cfg, err := kafka.ParseURL(raw)
		if err != nil {
			return nil, nil, err
		}
		s, err := kafka.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	case scheme == "nats":
		cfg, err := nats.ParseURL(raw)
		if err != nil {
			return nil, nil, err
		}
		s, err := nats.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	return nil, nil, fmt.Errorf("%q: want kafka://HOST:PORT[/TOPIC] or nats://HOST:PORT[/SUBJECT]", raw)
}
