package users

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goxpdl/goxpdl/timer"
)

// Defaults of Config.
const (
	DefaultIdleTimeout   = time.Hour
	DefaultSessionMax    = 12 * time.Hour
	DefaultMaxFailures   = 5
	DefaultLockoutWindow = 15 * time.Minute
	// DefaultMaxSessions bounds the sessions kept in memory; past it
	// the one unused for longest is dropped.
	DefaultMaxSessions = 10000
)

// CookieName is the name of the session cookie.
const CookieName = "goxpdl_session"

// maxTrackedUnknown bounds the failure counts kept for names the file
// does not hold (the names of the file are always counted).
const maxTrackedUnknown = 10000

// Config configures an Auth.
type Config struct {
	// Prefix is the path the protected handler is mounted at ("" for
	// the root, or "/workflow"): the login page is Prefix+"/login", the
	// logout Prefix+"/logout", and the cookie's path is Prefix+"/".
	Prefix string
	// Clock is where session expiry and login throttling take the time
	// from; default the system clock.
	Clock timer.Clock
	// IdleTimeout ends a session not used for this long; default
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// SessionMax ends a session this long after the login, used or not;
	// default DefaultSessionMax.
	SessionMax time.Duration
	// MaxSessions bounds the sessions kept; default DefaultMaxSessions.
	MaxSessions int
	// MaxFailures is how many failed logins of one user name within
	// LockoutWindow lock that name until the window has passed (429 Too
	// Many Requests; the password is not even checked); default
	// DefaultMaxFailures, negative for no limit.
	MaxFailures int
	// LockoutWindow is the window of MaxFailures, counted from the first
	// failure; default DefaultLockoutWindow.
	LockoutWindow time.Duration
	// SecureCookie marks the session cookie Secure on every response,
	// for a server behind a proxy that terminates TLS; it is Secure
	// anyway when the request came over TLS.
	SecureCookie bool
	// Logger receives failed logins and lockouts; default
	// slog.Default().
	Logger *slog.Logger
}

// Auth authenticates the requests to a handler against a users File:
// by a session cookie from the login page, or by HTTP basic auth on each
// request. Create it with NewAuth and wrap the handler with Handler. It
// keeps its sessions in memory (a restart logs everyone out) and runs no
// goroutine: expired sessions are dropped as they are met.
type Auth struct {
	file    *File
	cfg     Config
	log     *slog.Logger
	login   string // Prefix+"/login"
	logout  string // Prefix+"/logout"
	home    string // Prefix+"/"
	csrf    *http.CrossOriginProtection
	mu      sync.Mutex
	session map[[sha256.Size]byte]*session
	fails   map[string]*failures
}

// session is a logged-in user's session; its key in Auth.session is the
// SHA-256 of the cookie's token, so the map holds no usable token.
type session struct {
	user             string
	created, lastUse time.Time
}

// failures counts the failed logins of one name since first.
type failures struct {
	n     int
	first time.Time
}

// NewAuth returns the authentication of the users of f. It makes the
// dummy hash that unknown names are checked against now, so that the
// first of them costs no more than any other.
func NewAuth(f *File, cfg Config) (*Auth, error) {
	if f == nil {
		return nil, errors.New("users: nil File")
	}
	prefix := strings.TrimRight(cfg.Prefix, "/")
	if prefix != "" && !strings.HasPrefix(prefix, "/") {
		return nil, fmt.Errorf("users: Prefix %q does not start with /", cfg.Prefix)
	}
	cfg.Prefix = prefix
	if cfg.Clock == nil {
		cfg.Clock = timer.Real()
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.SessionMax <= 0 {
		cfg.SessionMax = DefaultSessionMax
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxFailures == 0 {
		cfg.MaxFailures = DefaultMaxFailures
	}
	if cfg.LockoutWindow <= 0 {
		cfg.LockoutWindow = DefaultLockoutWindow
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	f.dummyHash()
	return &Auth{
		file: f, cfg: cfg, log: log,
		login: prefix + "/login", logout: prefix + "/logout", home: prefix + "/",
		csrf:    http.NewCrossOriginProtection(),
		session: map[[sha256.Size]byte]*session{},
		fails:   map[string]*failures{},
	}, nil
}

// ctxKey is the context key of the authenticated User.
type ctxKey struct{}

// NewContext returns ctx carrying u as the authenticated user; Handler
// does this, and a host with its own authentication may too.
func NewContext(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, ctxKey{}, u)
}

// FromContext returns the authenticated user of ctx.
func FromContext(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(ctxKey{}).(User)
	return u, ok
}

// Handler wraps next: it serves the login and logout pages itself, and
// passes on only authenticated requests, with the user in their context
// (FromContext, Actor, Authorize). An unauthenticated request is
// redirected to the login page when it is a browser's page load, and
// answered 401 with a basic-auth challenge otherwise (the API under
// Prefix+"/api/", scripts, htmx's background requests, which also get an
// HX-Redirect to the login page).
func (a *Auth) Handler(next http.Handler) http.Handler {
	loginPage := a.csrf.Handler(http.HandlerFunc(a.serveLogin))
	logoutPage := a.csrf.Handler(http.HandlerFunc(a.serveLogout))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case a.login:
			loginPage.ServeHTTP(w, r)
			return
		case a.logout:
			logoutPage.ServeHTTP(w, r)
			return
		}
		if u, ok := a.sessionUser(r); ok {
			next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), u)))
			return
		}
		if name, password, ok := r.BasicAuth(); ok {
			u, err := a.authenticate(r, name, password)
			if err != nil {
				a.refuse(w, r, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), u)))
			return
		}
		a.challenge(w, r)
	})
}

// sessionUser returns the user of the request's session cookie, and
// renews the session's idle time.
func (a *Auth) sessionUser(r *http.Request) (User, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return User{}, false
	}
	key := sha256.Sum256([]byte(c.Value))
	now := a.cfg.Clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.session[key]
	if !ok {
		return User{}, false
	}
	if a.expired(s, now) {
		delete(a.session, key)
		return User{}, false
	}
	// The file is read at each request, so a user removed from it
	// (with a restart) has no session left.
	u, ok := a.file.User(s.user)
	if !ok {
		delete(a.session, key)
		return User{}, false
	}
	s.lastUse = now
	return u, true
}

// expired says whether s has ended at now.
func (a *Auth) expired(s *session, now time.Time) bool {
	return !now.Before(s.lastUse.Add(a.cfg.IdleTimeout)) || !now.Before(s.created.Add(a.cfg.SessionMax))
}

// lockedError is a login refused because the name failed too often.
type lockedError struct{ retryAfter time.Duration }

func (e *lockedError) Error() string {
	return "too many failed logins; try again later"
}

// authenticate checks name and password, counting failures per name.
func (a *Auth) authenticate(r *http.Request, name, password string) (User, error) {
	now := a.cfg.Clock.Now()
	if wait, locked := a.lockedOut(name, now); locked {
		a.log.Warn("login refused: too many failures", "user", name, "remote", r.RemoteAddr)
		return User{}, &lockedError{retryAfter: wait}
	}
	u, err := a.file.Check(name, password)
	if err != nil {
		a.failed(name, now)
		a.log.Warn("login failed", "user", name, "remote", r.RemoteAddr)
		return User{}, err
	}
	a.mu.Lock()
	delete(a.fails, name)
	a.mu.Unlock()
	return u, nil
}

// lockedOut says whether name is locked at now, and for how long.
func (a *Auth) lockedOut(name string, now time.Time) (time.Duration, bool) {
	if a.cfg.MaxFailures < 0 {
		return 0, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	f, ok := a.fails[name]
	if !ok {
		return 0, false
	}
	end := f.first.Add(a.cfg.LockoutWindow)
	if !now.Before(end) {
		delete(a.fails, name)
		return 0, false
	}
	return end.Sub(now), f.n >= a.cfg.MaxFailures
}

// failed counts a failed login of name at now.
func (a *Auth) failed(name string, now time.Time) {
	if a.cfg.MaxFailures < 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if f, ok := a.fails[name]; ok && now.Before(f.first.Add(a.cfg.LockoutWindow)) {
		f.n++
		return
	}
	if _, known := a.file.User(name); !known && len(a.fails) >= maxTrackedUnknown+len(a.file.users) {
		for n, f := range a.fails {
			if !now.Before(f.first.Add(a.cfg.LockoutWindow)) {
				delete(a.fails, n)
			}
		}
		if len(a.fails) >= maxTrackedUnknown+len(a.file.users) {
			return // full of names that exist nowhere; the file's are always counted
		}
	}
	a.fails[name] = &failures{n: 1, first: now}
}

// refuse answers a failed basic-auth request.
func (a *Auth) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if le, ok := errors.AsType[*lockedError](err); ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(le.retryAfter.Seconds())+1))
		http.Error(w, le.Error(), http.StatusTooManyRequests)
		return
	}
	a.challengeBasic(w, r)
}

// challenge answers an unauthenticated request: a browser loading a page
// goes to the login page; anything else gets 401.
func (a *Auth) challenge(w http.ResponseWriter, r *http.Request) {
	api := r.URL.Path == a.cfg.Prefix+"/api" || strings.HasPrefix(r.URL.Path, a.cfg.Prefix+"/api/")
	htmx := r.Header.Get("HX-Request") != ""
	page := (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		strings.Contains(r.Header.Get("Accept"), "text/html")
	if page && !api && !htmx {
		http.Redirect(w, r, a.loginURL(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	if htmx {
		w.Header().Set("HX-Redirect", a.loginURL(""))
	}
	a.challengeBasic(w, r)
}

// challengeBasic answers 401 with a basic-auth challenge.
func (a *Auth) challengeBasic(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("WWW-Authenticate", `Basic realm="goxpdl", charset="UTF-8"`)
	http.Error(w, "authentication required", http.StatusUnauthorized)
}

// loginURL is the login page's URL, returning to next afterwards.
func (a *Auth) loginURL(next string) string {
	if next == "" || next == a.home {
		return a.login
	}
	return a.login + "?next=" + url.QueryEscape(next)
}

// safeNext returns next when it is a path of this server under the
// prefix (never another site: no scheme, no host, no "//"), and the
// prefix's home otherwise.
func (a *Auth) safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return a.home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return a.home
	}
	if p := u.Path; p != a.home && !strings.HasPrefix(p, a.home) {
		return a.home
	}
	if u.Path == a.login || u.Path == a.logout {
		return a.home
	}
	return next
}

// newSession starts a session for user and sets its cookie.
func (a *Auth) newSession(w http.ResponseWriter, r *http.Request, user string) {
	var raw [32]byte
	randomBytes(raw[:])
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	now := a.cfg.Clock.Now()
	a.mu.Lock()
	if len(a.session) >= a.cfg.MaxSessions {
		a.evict(now)
	}
	a.session[sha256.Sum256([]byte(token))] = &session{user: user, created: now, lastUse: now}
	a.mu.Unlock()
	http.SetCookie(w, a.cookie(r, token, int(a.cfg.SessionMax.Seconds())))
}

// evict drops the expired sessions, and when none has expired the one
// unused for longest. a.mu is held.
func (a *Auth) evict(now time.Time) {
	var oldest [sha256.Size]byte
	var oldestUse time.Time
	for k, s := range a.session {
		if a.expired(s, now) {
			delete(a.session, k)
			continue
		}
		if oldestUse.IsZero() || s.lastUse.Before(oldestUse) {
			oldest, oldestUse = k, s.lastUse
		}
	}
	if len(a.session) >= a.cfg.MaxSessions {
		delete(a.session, oldest)
	}
}

// cookie is the session cookie with value; maxAge < 0 deletes it.
func (a *Auth) cookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     CookieName,
		Value:    value,
		Path:     a.home,
		MaxAge:   maxAge,
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
		Secure:   a.cfg.SecureCookie || r.TLS != nil,
	}
}

// endSession ends the request's session, if any.
func (a *Auth) endSession(r *http.Request) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return
	}
	key := sha256.Sum256([]byte(c.Value))
	a.mu.Lock()
	delete(a.session, key)
	a.mu.Unlock()
}

// Sessions returns how many sessions are kept (expired ones included
// until they are met).
func (a *Auth) Sessions() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.session)
}

// randomBytes fills b from crypto/rand, which never fails (it crashes
// the program instead, Go 1.24 on).
func randomBytes(b []byte) {
	_, _ = rand.Read(b)
}
