package console_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/console/users"
)

// usersSite serves f's engine as "goxpdl serve --users FILE" does
// (serveHandler in cmd/goxpdl/serve.go): a console that asks
// users.Authorize and records users.Actor, behind the login middleware
// of package users, mounted at the root. The users file holds the
// operator olga and the viewer victor; each one's password is their name
// followed by "-pw". It returns the site's URL.
func usersSite(t *testing.T, f *fixture) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.txt")
	for name, role := range map[string]users.Role{"olga": users.RoleOperator, "victor": users.RoleViewer} {
		hash, err := users.Hash([]byte(name+"-pw"), bcrypt.MinCost)
		require.NoError(t, err)
		_, err = users.Put(path, name, role, hash)
		require.NoError(t, err)
	}
	file, err := users.Load(path)
	require.NoError(t, err)
	logger := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	auth, err := users.NewAuth(file, users.Config{Logger: logger})
	require.NoError(t, err)
	h, err := console.New(f.eng, console.Options{Authorize: users.Authorize, Actor: users.Actor, LogoutURL: "/logout", Logger: logger})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/", auth.Handler(h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestBrowserLogin logs in to the console behind the users middleware:
// a page asked for before logging in shows the login page, a wrong
// password is refused there, the right one leads to the page asked for;
// an operator sees the action buttons, logs out and is asked to log in
// again; a viewer sees the pages without any button, and the server
// refuses the viewer's POST all the same.
func TestBrowserLogin(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	f := newFixture(t, openSQLite(t), console.Options{})
	id := f.start(nil) // waits at Review
	site := usersSite(t, f)
	instance := fmt.Sprintf("%s/instances/%d", site, id)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(site+"/"),
		chromedp.WaitVisible(`#password`),
	), "the dashboard asked for before logging in shows the login page")
	assert.Equal(t, "/login", location(t, ctx).Path)
	screenshot(t, ctx, "login")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(`#user`, "olga"),
		chromedp.SendKeys(`#password`, "not her password"),
		chromedp.Click(`button[type=submit]`),
		waitText(`[role=alert]`, "Wrong user name or password."),
	), "a wrong password is refused")
	assert.Equal(t, "/login", location(t, ctx).Path)
	user, err := chromedp.Run(ctx, chromedp.Value(`#user`))
	require.NoError(t, err)
	assert.Equal(t, "olga", user, "the refused form keeps the name")
	screenshot(t, ctx, "login-refused")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(`#password`, "olga-pw"),
		chromedp.Click(`button[type=submit]`),
		chromedp.WaitVisible(`#live-dashboard`),
		waitText(`header .who`, "olga"),
	), "the right password leads to the dashboard")
	assert.Equal(t, "/", location(t, ctx).Path)
	screenshot(t, ctx, "dashboard-operator")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(instance),
		chromedp.WaitVisible(`#live-instance`),
		chromedp.WaitVisible(`form[action$="/suspend"] button`),
		chromedp.WaitVisible(`form[action$="/terminate"] button`),
		chromedp.WaitVisible(`form.move button[formaction$="/jump"]`),
	), "an operator sees the instance's action buttons")
	assert.False(t, eval[bool](t, ctx, `!!document.querySelector('a[href$="/migration"]')`),
		"an operator may not migrate (an admin's action): no Migrate link")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`#logout`),
		waitText(`main`, "Signed in as olga"),
		chromedp.Click(`button[type=submit]`),
		chromedp.WaitVisible(`#password`),
	), "logging out")
	assert.Equal(t, "/login", location(t, ctx).Path)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(instance),
		chromedp.WaitVisible(`#password`),
	), "after the logout a page asks to log in again")
	assert.Equal(t, fmt.Sprintf("/instances/%d", id), location(t, ctx).Query().Get("next"))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(`#user`, "victor"),
		chromedp.SendKeys(`#password`, "victor-pw"),
		chromedp.Click(`button[type=submit]`),
		chromedp.WaitVisible(`#live-instance`),
		waitText(`header .who`, "victor"),
	), "a viewer logs in and lands on the page asked for")
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('main form[method=post], main button[hx-post]').length`),
		"a viewer sees no action on the instance")
	assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('select[data-pick]').length`), "nor the jump form")
	screenshot(t, ctx, "instance-viewer")

	// The buttons are only hidden: the server refuses the viewer's POST,
	// sent from the page with the session cookie.
	status := eval[int](t, ctx, fmt.Sprintf(`fetch("/instances/%d/suspend", {method: "POST", body: new URLSearchParams({reason: "trying"})}).then(r => r.status)`, id))
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, "Running", f.state(id), "nothing changed")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(site+"/definitions"),
		chromedp.WaitVisible(`#definitions`),
	))
	assert.False(t, eval[bool](t, ctx, `!!document.querySelector('form.upload')`), "a viewer may not deploy: no upload form")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/definitions/%d", site, f.def.ID)),
		chromedp.WaitVisible(`figure.diagram svg`),
	))
	assert.False(t, eval[bool](t, ctx, `!!document.querySelector('details.start')`), "a viewer may not start an instance: no start form")
}
