package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
)

// fixture is a console on a started engine with the review process
// (testdata/review.xpdl) deployed.
type fixture struct {
	t   *testing.T
	eng *engine.Engine
	h   *console.Handler
	srv *httptest.Server
	def engine.Deployment
}

// eachDB runs fn on SQLite and, when GOXPDL_MYSQL_DSN is set, MariaDB.
func eachDB(t *testing.T, fn func(t *testing.T, db *gorm.DB)) {
	dbtest.Each(t, fn)
}

// errCheckFailed is the review process's Check application's failure.
var errCheckFailed = errors.New("the request's documents are missing")

// newFixture starts an engine on db and a console with opts in front of
// it, served by an httptest server; configure adjusts the engine's
// Config.
func newFixture(t *testing.T, db *gorm.DB, opts console.Options, configure ...func(*engine.Config)) *fixture {
	t.Helper()
	ctx := context.Background()
	cfg := engine.Config{DB: db, Logger: slog.New(slog.DiscardHandler)}
	for _, c := range configure {
		c(&cfg)
	}
	eng, err := engine.New(cfg)
	require.NoError(t, err)
	eng.RegisterApplication("check", func(_ context.Context, c *engine.Call) (map[string]any, error) {
		if fail, _ := c.Params["fail"].(bool); fail {
			return nil, errCheckFailed
		}
		return nil, nil
	})
	eng.RegisterApplication("archive", func(context.Context, *engine.Call) (map[string]any, error) { return nil, nil })
	require.NoError(t, eng.Start(ctx))
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, eng.Stop(stop))
	})
	src, err := os.ReadFile("testdata/review.xpdl")
	require.NoError(t, err)
	def, err := eng.Deploy(ctx, src)
	require.NoError(t, err)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	h, err := console.New(eng, opts)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mount := "/"
	if opts.Prefix != "" {
		mount = opts.Prefix + "/"
	}
	mux.Handle(mount, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{t: t, eng: eng, h: h, srv: srv, def: def}
}

// start starts the review process with vars and waits until the engine
// is idle.
func (f *fixture) start(vars map[string]any) int64 {
	f.t.Helper()
	ctx := context.Background()
	id, err := f.eng.StartProcess(ctx, engine.StartOptions{Package: "review", Variables: vars})
	require.NoError(f.t, err)
	f.idle()
	return id
}

// idle waits until the engine has nothing left to do.
func (f *fixture) idle() {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(f.t, f.eng.WaitIdle(ctx))
}

// state returns an instance's state.
func (f *fixture) state(id int64) string {
	f.t.Helper()
	inst, err := f.eng.Instance(context.Background(), id)
	require.NoError(f.t, err)
	return string(inst.State)
}

// response is a finished request.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends a request to the console; header adds headers.
func (f *fixture) do(method, path string, body io.Reader, header map[string]string) response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	require.NoError(f.t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	require.NoError(f.t, err)
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	require.NoError(f.t, err)
	return response{status: res.StatusCode, header: res.Header, body: string(b)}
}

// get fetches a page or API resource.
func (f *fixture) get(path string) response {
	return f.do(http.MethodGet, path, nil, nil)
}

// postForm posts a form, as a page's form does.
func (f *fixture) postForm(path string, form url.Values, header map[string]string) response {
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range header {
		h[k] = v
	}
	return f.do(http.MethodPost, path, strings.NewReader(form.Encode()), h)
}

// postJSON posts a JSON body to the API.
func (f *fixture) postJSON(path string, body any) response {
	b, err := json.Marshal(body)
	require.NoError(f.t, err)
	return f.do(http.MethodPost, path, strings.NewReader(string(b)), map[string]string{"Content-Type": "application/json"})
}

// decode decodes a JSON response.
func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(r.body), &v), r.body)
	return v
}

// apiErr is the API's error body.
type apiErr struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// openSQLite opens a fresh SQLite database for a test that needs only one.
func openSQLite(t *testing.T) *gorm.DB { return dbtest.OpenSQLite(t) }

// testLog writes logs to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
