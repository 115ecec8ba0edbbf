package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	natsio "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/crypto/bcrypt"

	"github.com/goxpdl/goxpdl/console/users"
	"github.com/goxpdl/goxpdl/internal/demo"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/timer"
)

// serveDBs are the databases serve is tested on, as --db values: a
// SQLite file always, a fresh MySQL/MariaDB database when
// GOXPDL_MYSQL_DSN is set, and a fresh PostgreSQL schema when
// GOXPDL_POSTGRES_DSN is.
func serveDBs(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"SQLite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "e.db") },
		"MySQL":    mysqlServeDSN,
		"Postgres": func(t *testing.T) string { return dbtest.PostgresURL(t) },
	}
}

// mysqlServeDSN creates a database of its own on GOXPDL_MYSQL_DSN's
// server, drops it when the test ends, and returns its --db value; it
// skips when GOXPDL_MYSQL_DSN is not set.
func mysqlServeDSN(t *testing.T) string {
	t.Helper()
	cfg, err := gormstore.ParseMySQLDSN(dbtest.MySQLDSN(t))
	require.NoError(t, err)
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	name := fmt.Sprintf("goxpdl_serve_%d", time.Now().UnixNano()) //nolint:forbidigo // a unique name, not a time that matters
	_, err = admin.ExecContext(t.Context(), "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.ExecContext(context.Background(), "DROP DATABASE `"+name+"`")
		require.NoError(t, err)
	})
	cfg.DBName = name
	return "mysql://" + cfg.FormatDSN()
}

// served is a serve running in this process, on a free port.
type served struct {
	t      *testing.T
	url    string
	cancel context.CancelFunc
	code   chan int
	stdout *firstWrite
	stderr *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for the server's and the test's
// goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// firstWrite collects what serve writes to standard output and closes
// started once the first write is in.
type firstWrite struct {
	syncBuffer
	once    sync.Once
	started chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	w.once.Do(func() { close(w.started) })
	return n, err
}

// written is what w has collected so far.
func written(w *firstWrite) string { return w.String() }

// urlLine is serve's first line on standard output.
var urlLine = regexp.MustCompile(`^goxpdl serve: console at (http://\S+/) \(database (\S+); (.*)\)\n$`)

// startServe runs serve with o until the test ends (or stop), and waits
// until it listens.
func startServe(t *testing.T, o serveOptions) *served {
	t.Helper()
	if o.addr == "" {
		o.addr = "127.0.0.1:0"
	}
	o.logFormat = "text"
	if o.logLevel == "" {
		o.logLevel = "warn"
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{t: t, cancel: cancel, code: make(chan int, 1),
		stdout: &firstWrite{started: make(chan struct{})},
		stderr: &syncBuffer{}}
	go func() { s.code <- serve(ctx, o, s.stdout, s.stderr) }()
	t.Cleanup(func() { s.stop() })
	select {
	case <-s.stdout.started:
	case c := <-s.code:
		s.code <- c
		t.Fatalf("serve ended with %d before it listened: %s", c, s.stderr.String())
	}
	line := written(s.stdout)
	m := urlLine.FindStringSubmatch(line)
	require.NotNil(t, m, "serve's first line: %q", line)
	s.url = m[1]
	t.Logf("serve listens at %s", s.url)
	return s
}

// stop stops serve as a signal does and returns its exit status.
func (s *served) stop() int {
	s.cancel()
	c := <-s.code
	s.code <- c
	return c
}

// get fetches path with the client c (nil: a plain one).
func (s *served) get(c *http.Client, path string, header ...string) (*http.Response, string) {
	s.t.Helper()
	return s.do(c, http.MethodGet, path, nil, header...)
}

// do sends one request; header holds name, value pairs.
func (s *served) do(c *http.Client, method, path string, body io.Reader, header ...string) (*http.Response, string) {
	s.t.Helper()
	if c == nil {
		c = noRedirects(nil)
	}
	req, err := http.NewRequestWithContext(s.t.Context(), method, s.url+strings.TrimPrefix(path, "/"), body)
	require.NoError(s.t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.Do(req)
	require.NoError(s.t, err)
	defer func() { _ = res.Body.Close() }()
	data, err := io.ReadAll(res.Body)
	require.NoError(s.t, err)
	return res, string(data)
}

// noRedirects is a client that shows redirects instead of following them.
func noRedirects(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Serve runs the engine and the console on a free port: it deploys the
// --deploy files, serves the pages and the API, and stops cleanly when
// its context ends (as on SIGINT). A second serve on the same database
// finds the deployment there and does not deploy it again.
func TestServe(t *testing.T) {
	t.Parallel()
	for name, db := range serveDBs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn := db(t)
			file := filepath.Join("..", "..", "internal", "demo", "sp-assessment.xpdl")
			s := startServe(t, serveOptions{db: dsn, deploy: listFlags{file}, logLevel: "info"})
			require.Contains(t, written(s.stdout), "; no login: loopback only)")
			require.Contains(t, s.stderr.String(), `msg="serve: deployed" file=sp-assessment.xpdl package=sp_assessment version=1`)

			res, body := s.get(nil, "/")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			require.Contains(t, res.Header.Get("Content-Type"), "text/html")
			require.Contains(t, body, "· goxpdl</title>")

			res, body = s.get(nil, "/api/instances")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			var page struct {
				Instances []json.RawMessage `json:"instances"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &page), body)
			require.Empty(t, page.Instances)

			// Prometheus scrapes the engine's metrics at /metrics.
			res, body = s.get(nil, "/metrics")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			require.Contains(t, body, "goxpdl_pool_workers{")
			require.Contains(t, body, "go_goroutines")

			// Without users, anyone on loopback may act: the console
			// answers (404: no such instance) rather than refusing.
			res, body = s.do(nil, http.MethodPost, "/api/instances/99/suspend", strings.NewReader(`{"reason":"test"}`), "Content-Type", "application/json")
			require.Equal(t, http.StatusNotFound, res.StatusCode, body)

			require.Equal(t, exitOK, s.stop(), s.stderr.String())
			require.NotContains(t, s.stderr.String(), "level=ERROR")

			// Again on the same database: the file is deployed already.
			s = startServe(t, serveOptions{db: dsn, deploy: listFlags{file}, logLevel: "info"})
			res, body = s.get(nil, "/api/")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			require.Equal(t, exitOK, s.stop(), s.stderr.String())
			require.Contains(t, s.stderr.String(), `msg="serve: deployed already"`)
			require.NotContains(t, s.stderr.String(), `msg="serve: deployed" `)
		})
	}
}

// writeUsersFile writes a users file with one user of each role, whose
// password is the user's name.
func writeUsersFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.txt")
	for _, u := range []struct {
		name string
		role users.Role
	}{{"vera", users.RoleViewer}, {"otto", users.RoleOperator}, {"ada", users.RoleAdmin}} {
		h, err := users.Hash([]byte(u.name), bcrypt.MinCost)
		require.NoError(t, err)
		_, err = users.Put(path, u.name, u.role, h)
		require.NoError(t, err)
	}
	return path
}

// With --users every request logs in, each user may do what their role
// allows, and serve may listen on every interface.
func TestServeWithUsers(t *testing.T) {
	t.Parallel()
	s := startServe(t, serveOptions{users: writeUsersFile(t), addr: "0.0.0.0:0"})
	require.Regexp(t, `^http://localhost:\d+/$`, s.url, "every interface: opened through localhost")
	require.Contains(t, written(s.stdout), "; users from ")

	// Not logged in: the API challenges, a browser goes to the login page.
	res, _ := s.get(nil, "/api/instances")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.Contains(t, res.Header.Get("WWW-Authenticate"), "Basic")
	res, _ = s.get(nil, "/instances", "Accept", "text/html")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/login?next=%2Finstances", res.Header.Get("Location"))

	// Basic auth, by role.
	basic := func(user, password string) []string {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
		require.NoError(t, err)
		req.SetBasicAuth(user, password)
		return []string{"Authorization", req.Header.Get("Authorization"), "Content-Type", "application/json"}
	}
	res, _ = s.get(nil, "/api/instances", basic("vera", "wrong")...)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	res, _ = s.get(nil, "/metrics")
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "metrics need a login when there are users")
	res, metricsBody := s.get(nil, "/metrics", basic("vera", "vera")...)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, metricsBody, "goxpdl_")
	res, body := s.get(nil, "/api/instances", basic("vera", "vera")...)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	suspend := func(user string) (*http.Response, string) {
		return s.do(nil, http.MethodPost, "/api/instances/99/suspend", strings.NewReader(`{"reason":"test"}`), basic(user, user)...)
	}
	res, body = suspend("vera")
	require.Equal(t, http.StatusForbidden, res.StatusCode, body)
	require.Contains(t, body, "vera (viewer) may not instance.suspend")
	res, body = suspend("otto")
	require.Equal(t, http.StatusNotFound, res.StatusCode, "the operator may: the instance is not there\n%s", body)

	// The login page and a session.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := noRedirects(jar)
	res, body = s.get(c, "/login")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, `<form method="post" action="/login">`)
	form := url.Values{"user": {"ada"}, "password": {"ada"}, "next": {"/instances"}}
	res, _ = s.do(c, http.MethodPost, "/login", strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/instances", res.Header.Get("Location"))
	res, body = s.get(c, "/instances", "Accept", "text/html")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	res, _ = s.do(c, http.MethodPost, "/logout", nil)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	res, _ = s.get(c, "/instances", "Accept", "text/html")
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "logged out")

	require.Equal(t, exitOK, s.stop(), s.stderr.String())
}

// --read-only refuses every action, whoever asks.
func TestServeReadOnly(t *testing.T) {
	t.Parallel()
	s := startServe(t, serveOptions{readOnly: true})
	require.Contains(t, written(s.stdout), "no login: loopback only, read-only)")
	res, body := s.do(nil, http.MethodPost, "/api/instances/1/suspend", strings.NewReader(`{"reason":"test"}`), "Content-Type", "application/json")
	require.Equal(t, http.StatusForbidden, res.StatusCode, body)
	res, _ = s.get(nil, "/api/instances")
	require.Equal(t, http.StatusOK, res.StatusCode)
}

// --demo deploys the demo and starts instances of it.
func TestServeDemo(t *testing.T) {
	t.Parallel()
	s := startServe(t, serveOptions{demoEnabled: true, demo: demo.Config{StartEvery: time.Hour}})
	res, body := s.get(nil, "/api/instances?state=Running")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	// The first instance starts as the demo starts, on the demo's own
	// goroutine: look until it is there (a hang guard bounds the wait,
	// not a timing assertion).
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for !strings.Contains(body, `"package": "sp_assessment"`) {
		require.NoError(t, ctx.Err(), "no demo instance: %s", body)
		_, body = s.get(nil, "/api/instances")
	}
	require.Equal(t, exitOK, s.stop(), s.stderr.String())
}

// Problems found before listening are usage errors (2), an invalid
// --deploy file is 1, and nothing is served.
func TestServeRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.xpdl")
	require.NoError(t, os.WriteFile(bad, []byte(`<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="p"><WorkflowProcesses><WorkflowProcess Id="w"><Activities><Activity Id="a"><Route/></Activity></Activities><Transitions><Transition Id="t" From="a" To="nowhere"/></Transitions></WorkflowProcess></WorkflowProcesses></Package>`), 0o600))
	empty := filepath.Join(dir, "empty.txt")
	require.NoError(t, os.WriteFile(empty, []byte("# nobody\n"), 0o600))
	for _, tc := range []struct {
		o    serveOptions
		code int
		msg  string
	}{
		{serveOptions{addr: "0.0.0.0:8080"}, exitUsage, "0.0.0.0 is not a loopback address; without --users anyone who reaches it could operate the engine"},
		{serveOptions{addr: ":8080"}, exitUsage, "every interface is not a loopback address"},
		{serveOptions{addr: "example.com:8080"}, exitUsage, "example.com is not a loopback address"},
		{serveOptions{addr: "8080"}, exitUsage, `--addr "8080": want HOST:PORT`},
		{serveOptions{users: filepath.Join(dir, "none.txt")}, exitUsage, "no such file"},
		{serveOptions{users: empty}, exitUsage, "holds no users"},
		{serveOptions{deploy: listFlags{bad}}, exitProblems, "goxpdl serve: nothing deployed"},
		{serveOptions{deploy: listFlags{filepath.Join(dir, "none.xpdl")}}, exitUsage, "none.xpdl"},
		{serveOptions{db: "oracle://x"}, exitUsage, "--db"},
		{serveOptions{logFormat: "xml"}, exitUsage, `--log-format "xml": want text or json`},
		{serveOptions{logLevel: "loud"}, exitUsage, `--log-level "loud"`},
		{serveOptions{publish: "amqp://127.0.0.1:5672"}, exitUsage, "--publish: \"amqp://127.0.0.1:5672\": want kafka://"},
		{serveOptions{publish: "kafka:///t"}, exitUsage, "--publish: kafka sink: bad configuration"},
		{serveOptions{publish: "nats://h:1/s?stream=X&acks=1"}, exitUsage, "--publish: nats sink: bad configuration"},
	} {
		o := tc.o
		if o.addr == "" {
			o.addr = "127.0.0.1:0"
		}
		if o.logFormat == "" {
			o.logFormat = "text"
		}
		if o.logLevel == "" {
			o.logLevel = "warn"
		}
		var stdout, stderr bytes.Buffer
		code := serve(t.Context(), o, &stdout, &stderr)
		require.Equal(t, tc.code, code, "%+v: %s", tc.o, stderr.String())
		require.Contains(t, stderr.String(), tc.msg, "%+v", tc.o)
		require.Empty(t, stdout.String(), "%+v: nothing served", tc.o)
	}
}

// SIGINT and SIGTERM stop serve cleanly: exit 0. The signal goes to this
// test process, which serve's handlers catch.
func TestServeStopsOnSignal(t *testing.T) { //nolint:paralleltest // it signals the whole test process; no other command may be listening
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} { //nolint:paralleltest // one signal at a time: each serve must receive its own
		t.Run(sig.String(), func(t *testing.T) {
			stdout := &firstWrite{started: make(chan struct{})}
			var stderr syncBuffer
			code := make(chan int, 1)
			go func() {
				code <- run([]string{"serve", "--addr", "127.0.0.1:0", "--log-level", "info"}, strings.NewReader(""), stdout, &stderr)
			}()
			select {
			case <-stdout.started:
			case c := <-code:
				t.Fatalf("serve ended with %d before the signal: %s", c, stderr.String())
			}
			require.NoError(t, syscall.Kill(os.Getpid(), sig))
			require.Equal(t, exitOK, <-code, stderr.String())
			require.Contains(t, stderr.String(), `msg="serve: stopping" cause="`+sig.String()+` signal received"`)
		})
	}
}

// --publish kafka://... publishes the records of every step to Kafka,
// here franz-go's in-process cluster, one topic per process definition.
func TestServePublishesToKafka(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	require.NoError(t, err)
	t.Cleanup(c.Close)
	s := startServe(t, serveOptions{demoEnabled: true, demo: demo.Config{StartEvery: time.Hour},
		publish: "kafka://" + strings.Join(c.ListenAddrs(), ",") + "/wf.{process}"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("wf.assessment"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var first *kgo.Record
	for first == nil {
		fs := cl.PollFetches(t.Context())
		require.NoError(t, t.Context().Err())
		fs.EachRecord(func(r *kgo.Record) {
			if first == nil {
				first = r
			}
		})
	}
	var rec struct{ Type, Process string }
	require.NoError(t, json.Unmarshal(first.Value, &rec))
	require.Equal(t, "process.started", rec.Type, "the demo's first instance starts")
	require.Equal(t, "assessment", rec.Process)
	require.Equal(t, exitOK, s.stop(), s.stderr.String())
}

// --publish nats://... publishes to JetStream, into the stream it names
// (created if missing). It needs a NATS server, as sink/nats's tests do.
func TestServePublishesToNATS(t *testing.T) {
	t.Parallel()
	u := os.Getenv("GOXPDL_NATS_URL")
	if u == "" {
		u = "nats://127.0.0.1:4222"
	}
	nc, err := natsio.Connect(u, natsio.Timeout(5*time.Second))
	if err != nil {
		if os.Getenv("GOXPDL_REQUIRE_NATS") != "" {
			t.Fatalf("GOXPDL_REQUIRE_NATS is set but no NATS server answers at %s: %v", u, err)
		}
		t.Skipf("no NATS server at %s: %v", u, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	id := strings.ToLower(rand.Text()[:12])
	stream := "GOXPDL_SERVE_" + strings.ToUpper(id)
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })

	s := startServe(t, serveOptions{demoEnabled: true, demo: demo.Config{StartEvery: time.Hour},
		publish: u + "/serve_" + id + ".{process}?stream=" + stream})
	var msg *jetstream.RawStreamMsg
	for msg == nil {
		require.NoError(t, t.Context().Err())
		st, err := js.Stream(t.Context(), stream)
		if err == nil {
			msg, err = st.GetMsg(t.Context(), 1)
		}
		// The stream is created at the first publish.
		if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrMsgNotFound) {
			tm := timer.Real().NewTimer(time.Millisecond)
			<-tm.C()
			continue
		}
		require.NoError(t, err)
	}
	require.Equal(t, "serve_"+id+".assessment", msg.Subject)
	require.Equal(t, "process.started", msg.Header.Get("goxpdl-type"))
	require.Equal(t, exitOK, s.stop(), s.stderr.String())
}
