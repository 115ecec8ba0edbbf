package console_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console"
)

// TestBrowserInstanceCommands opens the dashboard and the instance list,
// follows an instance, suspends it and terminates it (accepting the
// confirmation) through the page's forms, and watches its state change.
func TestBrowserInstanceCommands(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	f := newFixture(t, openSQLite(t), console.Options{})
	id := f.start(nil)
	f.start(map[string]any{"fail": true})

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/"),
		chromedp.WaitVisible(`#live-dashboard`),
	))
	screenshot(t, ctx, "dashboard")

	link := fmt.Sprintf(`#instances a[href="/instances/%d"]`, id)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/instances"),
		chromedp.WaitVisible(link),
	))
	screenshot(t, ctx, "instances")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(link),
		chromedp.WaitVisible(`figure.diagram svg`),
		chromedp.WaitVisible(`figure.diagram g[data-activity="Review"]`),
	))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(`form[action$="/suspend"] input[name=reason]`, "waiting for the customer"),
		chromedp.Click(`form[action$="/suspend"] button`),
		waitText(`#live-instance`, "Suspended"),
	))
	state, err := chromedp.Run(ctx, chromedp.Text(`#messages`))
	require.NoError(t, err)
	assert.Contains(t, state, "suspended", "the flash message says what happened")
	assert.Equal(t, "Suspended", f.state(id))
	screenshot(t, ctx, "instance-suspended")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(`form[action$="/terminate"] input[name=reason]`, "customer cancelled"),
		chromedp.Click(`form[action$="/terminate"] button`),
		waitText(`#live-instance`, "Terminated"),
	))
	assert.Equal(t, "Terminated", f.state(id))
}
