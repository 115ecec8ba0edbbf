package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console"
)

// brokenXPDL is a package whose transition leads to an activity it does
// not have: an upload the console refuses, listing the problem.
const brokenXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="broken" Name="Broken">
  <PackageHeader><XPDLVersion>2.1</XPDLVersion></PackageHeader>
  <WorkflowProcesses>
    <WorkflowProcess Id="broken">
      <Activities><Activity Id="A"><Implementation><No/></Implementation></Activity></Activities>
      <Transitions><Transition Id="t1" From="A" To="Nowhere"/></Transitions>
    </WorkflowProcess>
  </WorkflowProcesses>
</Package>
`

// TestBrowserUploadAndStart deploys a definition through the upload
// form of the definitions page (an invalid file first, refused with its
// problem and nothing deployed), sees the new version's page with its
// diagram, and starts an instance with the start form generated from the
// process's typed variables, landing on the instance's page.
func TestBrowserUploadAndStart(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	f := newFixture(t, openSQLite(t), console.Options{})
	typed, err := filepath.Abs("testdata/types.xpdl")
	require.NoError(t, err)
	broken := filepath.Join(t.TempDir(), "broken.xpdl")
	require.NoError(t, os.WriteFile(broken, []byte(brokenXPDL), 0o600))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/definitions"),
		chromedp.WaitVisible(fmt.Sprintf(`#definitions tr[data-definition="%d"]`, f.def.ID)),
		chromedp.WaitVisible(`form.upload input[type=file]`),
	))
	screenshot(t, ctx, "definitions")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetUploadFiles(`form.upload input[type=file]`, []string{broken}),
		chromedp.Click(`form.upload button`),
		waitText(`#messages .error`, "Nowhere"),
	), "an invalid file is refused with its problems")
	assert.True(t, eval[bool](t, ctx, `!!document.querySelector('#messages .error ul.problems li')`), "the problems are listed")
	assert.Equal(t, "/definitions", location(t, ctx).Path, "the page stays")
	screenshot(t, ctx, "definitions-invalid")
	deployed, err := f.eng.Deployments(context.Background())
	require.NoError(t, err)
	require.Len(t, deployed, 1, "nothing was deployed")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetUploadFiles(`form.upload input[type=file]`, []string{typed}),
		chromedp.Click(`form.upload button`),
		waitText(`#messages`, "Deployed types v1."),
		waitText(`h1`, "types"),
		chromedp.WaitVisible(`figure.diagram svg g[data-activity="Wait"]`),
	), "the upload leads to the new version's page with its diagram")
	def := idFromPath(t, ctx, "/definitions/")
	deployed, err = f.eng.Deployments(context.Background())
	require.NoError(t, err)
	require.Len(t, deployed, 2)
	assert.Equal(t, "types", deployed[1].PackageID)
	assert.Equal(t, deployed[1].ID, def)
	assert.Equal(t, "types.xpdl", deployed[1].File, "the file's name is kept")
	screenshot(t, ctx, "definition")

	form := `#process-typed form[action$="/start"] `
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`#process-typed details.start summary`),
		chromedp.WaitVisible(form+`[name="variables.count"]`),
		chromedp.SendKeys(form+`[name=business_key]`, "order-4711"),
		chromedp.SendKeys(form+`[name="variables.customer"]`, "ACME"),
		chromedp.SendKeys(form+`[name="variables.count"]`, "7"),
		chromedp.SetValue(form+`[name="variables.urgent"]`, "true"),
		chromedp.SetValue(form+`[name="variables.due"]`, "2026-12-24"),
		chromedp.SendKeys(form+`[name="variables.price"]`, "19.5"),
	), "filling the start form")
	assert.Equal(t, "number", eval[string](t, ctx, `document.querySelector('`+form+`[name="variables.count"]').type`), "an INTEGER is a number field")
	assert.Equal(t, "date", eval[string](t, ctx, `document.querySelector('`+form+`[name="variables.due"]').type`), "a DATE is a date field")
	screenshot(t, ctx, "definition-start")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(form+`button`),
		waitText(`#messages`, "started"),
		chromedp.WaitVisible(`#live-instance figure.diagram svg`),
		waitText(`#variables`, `"ACME"`),
	), "starting leads to the instance's page")
	id := idFromPath(t, ctx, "/instances/")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('h1').textContent`), fmt.Sprintf("Instance %d", id))
	screenshot(t, ctx, "instance-started")

	inst, err := f.eng.Instance(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, def, inst.DefinitionID)
	assert.Equal(t, "order-4711", inst.BusinessKey)
	vars, err := f.eng.Variables(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "ACME", vars["customer"])
	assert.EqualValues(t, 7, vars["count"], "typed as the INTEGER it is declared")
	assert.Equal(t, true, vars["urgent"])
	assert.InDelta(t, 19.5, vars["price"], 1e-9)
}
