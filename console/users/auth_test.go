package users_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console/users"
	"github.com/goxpdl/goxpdl/timer"
)

// authBundle is an Auth in front of a handler that answers "hello USER
// (ROLE)", on a fake clock.
type authBundle struct {
	t     *testing.T
	clock *timer.Fake
	auth  *users.Auth
	h     http.Handler
	log   *bytes.Buffer
}

func setup(t *testing.T, cfg users.Config) *authBundle {
	t.Helper()
	text := "alice:admin:" + hash(t, "alice-pw") + "\nbob:operator:" + hash(t, "bob-pw") + "\ncarol:viewer:" + hash(t, "carol-pw") + "\n"
	f, err := users.Parse(strings.NewReader(text), "users")
	require.NoError(t, err)
	clock := timer.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	var log bytes.Buffer
	cfg.Clock = clock
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	a, err := users.NewAuth(f, cfg)
	require.NoError(t, err)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := users.FromContext(r.Context())
		_, _ = io.WriteString(w, "hello "+users.Actor(r)+" ("+string(u.Role)+")")
	})
	return &authBundle{t: t, clock: clock, auth: a, h: a.Handler(next), log: &log}
}

// do serves one request.
func (b *authBundle) do(r *http.Request) *httptest.ResponseRecorder {
	b.t.Helper()
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, r)
	return rec
}

// get is a browser's page load of path, with the cookie if not nil.
func (b *authBundle) get(path string, c *http.Cookie) *httptest.ResponseRecorder {
	b.t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Header.Set("Accept", "text/html,application/xhtml+xml")
	if c != nil {
		r.AddCookie(c)
	}
	return b.do(r)
}

// postForm posts form values to path as a same-origin browser does.
func (b *authBundle) postForm(path string, form url.Values, c *http.Cookie) *httptest.ResponseRecorder {
	b.t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	if c != nil {
		r.AddCookie(c)
	}
	return b.do(r)
}

// login logs user in through the form and returns the session cookie.
func (b *authBundle) login(user, password string) *http.Cookie {
	b.t.Helper()
	rec := b.postForm("/login", url.Values{"user": {user}, "password": {password}, "next": {"/instances?state=Running"}}, nil)
	require.Equal(b.t, http.StatusSeeOther, rec.Code, rec.Body.String())
	require.Equal(b.t, "/instances?state=Running", rec.Header().Get("Location"))
	c := sessionCookie(b.t, rec)
	require.NotNil(b.t, c, "a session cookie is set")
	return c
}

// sessionCookie is the session cookie rec sets, or nil.
func sessionCookie(t *testing.T, rec *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == users.CookieName {
			return c
		}
	}
	return nil
}

func TestBasicAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{})
	for _, tc := range []struct {
		user, password string
		code           int
		body           string
	}{
		{"alice", "alice-pw", http.StatusOK, "hello alice (admin)"},
		{"carol", "carol-pw", http.StatusOK, "hello carol (viewer)"},
		{"alice", "bob-pw", http.StatusUnauthorized, "authentication required"},
		{"mallory", "alice-pw", http.StatusUnauthorized, "authentication required"},
		{"", "", http.StatusUnauthorized, "authentication required"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/instances", nil)
		r.SetBasicAuth(tc.user, tc.password)
		rec := b.do(r)
		require.Equal(t, tc.code, rec.Code, "%s/%s", tc.user, tc.password)
		require.Contains(t, rec.Body.String(), tc.body)
		if tc.code == http.StatusUnauthorized {
			require.Equal(t, `Basic realm="goxpdl", charset="UTF-8"`, rec.Header().Get("WWW-Authenticate"))
		}
	}
	require.Contains(t, b.log.String(), "login failed")
	require.Contains(t, b.log.String(), "user=mallory")
	require.NotContains(t, b.log.String(), "alice-pw", "passwords are never logged")
}

func TestUnauthenticatedRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{})

	// A browser's page load goes to the login page, which returns to it.
	rec := b.get("/instances/42?tab=history", nil)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/login?next="+url.QueryEscape("/instances/42?tab=history"), rec.Header().Get("Location"))
	rec = b.get("/", nil)
	require.Equal(t, "/login", rec.Header().Get("Location"))

	// The API and scripts get a challenge.
	rec = b.get("/api/instances", nil)
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.NotEmpty(t, rec.Header().Get("WWW-Authenticate"))
	rec = b.do(httptest.NewRequest(http.MethodGet, "/instances", nil))
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	rec = b.postForm("/instances/1/suspend", url.Values{"reason": {"x"}}, nil)
	require.Equal(t, http.StatusUnauthorized, rec.Code)

	// htmx's background requests are sent to the login page too.
	r := httptest.NewRequest(http.MethodGet, "/dashboard/counts", nil)
	r.Header.Set("HX-Request", "true")
	r.Header.Set("Accept", "text/html")
	rec = b.do(r)
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.Equal(t, "/login", rec.Header().Get("HX-Redirect"))
}

func TestFormLogin(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{})
	rec := b.get("/login?next=/instances", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	require.Contains(t, body, `<form method="post" action="/login">`)
	require.Contains(t, body, `name="next" value="/instances"`)
	require.Contains(t, rec.Header().Get("Content-Security-Policy"), "default-src 'none'")

	c := b.login("bob", "bob-pw")
	require.True(t, c.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, c.SameSite)
	require.False(t, c.Secure, "plain HTTP")
	require.Equal(t, "/", c.Path)
	require.GreaterOrEqual(t, len(c.Value), 43, "256 random bits")

	rec = b.get("/instances", c)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "hello bob (operator)", rec.Body.String())
	// The API takes the session too.
	rec = b.get("/api/instances", c)
	require.Equal(t, "hello bob (operator)", rec.Body.String())
	// A logged-in user opening the login page goes on.
	rec = b.get("/login?next=/workitems", c)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/workitems", rec.Header().Get("Location"))

	// Two logins are two sessions.
	c2 := b.login("bob", "bob-pw")
	require.NotEqual(t, c.Value, c2.Value)
	require.Equal(t, 2, b.auth.Sessions())
}

func TestFormLoginRefusesBadPasswords(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{})
	for _, tc := range [][2]string{{"bob", "alice-pw"}, {"nobody", "bob-pw"}, {"bob", ""}} {
		rec := b.postForm("/login", url.Values{"user": {tc[0]}, "password": {tc[1]}, "next": {"/x"}}, nil)
		require.Equal(t, http.StatusUnauthorized, rec.Code)
		require.Nil(t, sessionCookie(t, rec))
		require.Contains(t, rec.Body.String(), "Wrong user name or password.")
		require.Contains(t, rec.Body.String(), `value="`+tc[0]+`"`, "the name is kept in the form")
		if tc[1] != "" {
			require.NotContains(t, rec.Body.String(), tc[1], "the password is not")
		}
	}
	require.Zero(t, b.auth.Sessions())

	// A name with markup is escaped.
	rec := b.postForm("/login", url.Values{"user": {`<script>x</script>`}, "password": {"p"}}, nil)
	require.NotContains(t, rec.Body.String(), "<script>")
}

func TestLoginRefusesCrossOriginPosts(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{})
	r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("user=bob&password=bob-pw"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	rec := b.do(r)
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Nil(t, sessionCookie(t, rec))
}

func TestLoginOverTLSSetsSecureCookies(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{Prefix: "/workflow/"})
	r := httptest.NewRequest(http.MethodPost, "/workflow/login", strings.NewReader("user=carol&password=carol-pw"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.TLS = &tls.ConnectionState{}
	rec := b.do(r)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/workflow/", rec.Header().Get("Location"))
	c := sessionCookie(t, rec)
	require.True(t, c.Secure)
	require.Equal(t, "/workflow/", c.Path)

	// SecureCookie forces it behind a proxy that terminates TLS.
	b = setup(t, users.Config{SecureCookie: true})
	rec = b.postForm("/login", url.Values{"user": {"carol"}, "password": {"carol-pw"}}, nil)
	require.True(t, sessionCookie(t, rec).Secure)
}

// The page a login returns to is one of this console's, never another
// site's.
func TestLoginReturnsOnlyToLocalPages(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{Prefix: "/workflow"})
	for next, want := range map[string]string{
		"/workflow/instances?state=Running": "/workflow/instances?state=Running",
		"/workflow/":                        "/workflow/",
		"":                                  "/workflow/",
		"//evil.example/":                   "/workflow/",
		"https://evil.example/workflow/":    "/workflow/",
		"/\\evil.example":                   "/workflow/",
		"/other/app":                        "/workflow/",
		"/workflow/login":                   "/workflow/",
		"workflow/instances":                "/workflow/",
		"/workflow/x\r\nSet-Cookie: a=b":    "/workflow/",
	} {
		rec := b.postForm("/workflow/login", url.Values{"user": {"carol"}, "password": {"carol-pw"}, "next": {next}}, nil)
		require.Equal(t, http.StatusSeeOther, rec.Code, next)
		require.Equal(t, want, rec.Header().Get("Location"), next)
	}
}

func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{IdleTimeout: 30 * time.Minute, SessionMax: 2 * time.Hour})

	// Idle for the whole timeout: gone.
	c := b.login("alice", "alice-pw")
	b.clock.Advance(29 * time.Minute)
	require.Equal(t, http.StatusOK, b.get("/", c).Code)
	b.clock.Advance(30 * time.Minute)
	rec := b.get("/", c)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/login", rec.Header().Get("Location"))
	require.Zero(t, b.auth.Sessions(), "the expired session is dropped")

	// In use, it lasts until SessionMax after the login.
	c = b.login("alice", "alice-pw")
	for range 7 {
		b.clock.Advance(15 * time.Minute)
		require.Equal(t, http.StatusOK, b.get("/", c).Code)
	}
	b.clock.Advance(15 * time.Minute) // two hours after the login
	require.Equal(t, http.StatusSeeOther, b.get("/", c).Code)
}

func TestLogout(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{})
	c := b.login("bob", "bob-pw")
	other := b.login("bob", "bob-pw")

	rec := b.get("/logout", c)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), "Signed in as <strong>bob</strong>")
	require.Contains(t, rec.Body.String(), `<form method="post" action="/logout">`)

	rec = b.postForm("/logout", nil, c)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/login", rec.Header().Get("Location"))
	cleared := sessionCookie(t, rec)
	require.NotNil(t, cleared)
	require.Empty(t, cleared.Value)
	require.Negative(t, cleared.MaxAge)

	require.Equal(t, http.StatusSeeOther, b.get("/", c).Code, "the session has ended on the server")
	require.Equal(t, http.StatusOK, b.get("/", other).Code, "the user's other session goes on")
	require.Equal(t, http.StatusSeeOther, b.get("/logout", c).Code, "logged out: to the login page")

	// A cross-site logout is refused.
	r := httptest.NewRequest(http.MethodPost, "/logout", nil)
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	r.AddCookie(other)
	require.Equal(t, http.StatusForbidden, b.do(r).Code)
	require.Equal(t, http.StatusOK, b.get("/", other).Code)
}

func TestTamperedCookies(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{})
	c := b.login("carol", "carol-pw")
	flip := []byte(c.Value)
	if flip[10] == 'A' {
		flip[10] = 'B'
	} else {
		flip[10] = 'A'
	}
	for _, v := range []string{string(flip), c.Value[:len(c.Value)-1], c.Value + "A", "", "carol", "admin", strings.Repeat("A", 43)} {
		rec := b.get("/api/x", &http.Cookie{Name: users.CookieName, Value: v})
		require.Equal(t, http.StatusUnauthorized, rec.Code, "%q", v)
	}
	require.Equal(t, http.StatusOK, b.get("/api/x", c).Code)
}

func TestFailedLoginsLockTheName(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{MaxFailures: 3, LockoutWindow: 10 * time.Minute})
	basic := func(user, password string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/api/x", nil)
		r.SetBasicAuth(user, password)
		return b.do(r)
	}
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, basic("bob", "guess").Code)
	}
	// Now even the right password is refused, by both doors.
	rec := basic("bob", "bob-pw")
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Equal(t, "601", rec.Header().Get("Retry-After"))
	rec = b.postForm("/login", url.Values{"user": {"bob"}, "password": {"bob-pw"}}, nil)
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Contains(t, rec.Body.String(), "Too many failed logins")
	require.Contains(t, b.log.String(), "too many failures")
	// Other names are not affected.
	require.Equal(t, http.StatusOK, basic("alice", "alice-pw").Code)

	// Unknown names are counted the same, so a lockout tells nothing.
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, basic("nobody", "guess").Code)
	}
	require.Equal(t, http.StatusTooManyRequests, basic("nobody", "guess").Code)

	// Once the window has passed, the name may try again.
	b.clock.Advance(10 * time.Minute)
	require.Equal(t, http.StatusOK, basic("bob", "bob-pw").Code)

	// A success clears the count.
	require.Equal(t, http.StatusUnauthorized, basic("bob", "guess").Code)
	require.Equal(t, http.StatusUnauthorized, basic("bob", "guess").Code)
	require.Equal(t, http.StatusOK, basic("bob", "bob-pw").Code)
	require.Equal(t, http.StatusUnauthorized, basic("bob", "guess").Code)
	require.Equal(t, http.StatusUnauthorized, basic("bob", "guess").Code)
	require.Equal(t, http.StatusOK, basic("bob", "bob-pw").Code)
}

func TestSessionsAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{MaxSessions: 2})
	first := b.login("alice", "alice-pw")
	b.clock.Advance(time.Minute)
	second := b.login("bob", "bob-pw")
	b.clock.Advance(time.Minute)
	require.Equal(t, http.StatusOK, b.get("/", first).Code) // first is now the most recently used
	third := b.login("carol", "carol-pw")
	require.Equal(t, 2, b.auth.Sessions())
	require.Equal(t, http.StatusOK, b.get("/", first).Code)
	require.Equal(t, http.StatusOK, b.get("/", third).Code)
	require.Equal(t, http.StatusSeeOther, b.get("/", second).Code, "the session unused for longest was dropped")
}

func TestNewAuthRefusesBadConfig(t *testing.T) {
	t.Parallel()
	_, err := users.NewAuth(nil, users.Config{})
	require.Error(t, err)
	f, err := users.Parse(strings.NewReader(""), "users")
	require.NoError(t, err)
	_, err = users.NewAuth(f, users.Config{Prefix: "workflow"})
	require.ErrorContains(t, err, "does not start with /")
}

func TestLoginPageMethods(t *testing.T) {
	t.Parallel()
	b := setup(t, users.Config{})
	for _, path := range []string{"/login", "/logout"} {
		rec := b.do(httptest.NewRequest(http.MethodPut, path, nil))
		require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
		require.Equal(t, "GET, HEAD, POST", rec.Header().Get("Allow"))
	}
	// An oversized form is refused.
	rec := b.postForm("/login", url.Values{"user": {strings.Repeat("x", 5000)}, "password": {"p"}}, nil)
	require.Equal(t, http.StatusBadRequest, rec.Code)
}
