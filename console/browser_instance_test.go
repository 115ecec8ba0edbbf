package console_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
)

// markPage sets a mark on the page's window that a reload would wipe.
const markPage = `window.goxpdlNotReloaded = true`

// stillMarked says whether the mark of markPage is there.
const stillMarked = `window.goxpdlNotReloaded === true`

// TestBrowserLiveDiagram watches an instance's diagram change state
// without reloading the page: the instance waits at Review; its work
// item is completed through the engine's API, and the page's live part
// (htmx polling) comes to show Review completed and Approve current.
func TestBrowserLiveDiagram(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	f := newFixture(t, openSQLite(t), console.Options{})
	dep := f.deployFile("approval.xpdl")
	id, err := f.eng.StartProcess(context.Background(), engine.StartOptions{DefinitionID: dep.ID, BusinessKey: "request-17"})
	require.NoError(t, err)
	f.idle()

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/instances/%d", f.srv.URL, id)),
		chromedp.WaitVisible(`#live-instance figure.diagram g[data-activity="Approve"]`),
		waitJS("Review waiting and current", nodeClass("Review", []string{"waiting", "current"}, nil)),
	))
	assert.True(t, eval[bool](t, ctx, nodeClass("Approve", nil, []string{"waiting", "current", "completed", "running"})),
		"Approve has not started: drawn plain")
	screenshot(t, ctx, "instance")
	eval[chromedp.Void](t, ctx, markPage)

	item := f.openItem(id)
	assert.Equal(t, "Review", item.Activity)
	_, err = f.eng.CompleteWorkItem(context.Background(), item.ID, engine.Completion{User: "rita"})
	require.NoError(t, err)
	f.idle()

	require.NoError(t, chromedp.Do(ctx,
		waitJS("Review completed and no longer current", nodeClass("Review", []string{"completed"}, []string{"current"})),
		waitJS("Approve waiting and current", nodeClass("Approve", []string{"waiting", "current"}, nil)),
		chromedp.WaitVisible(`#activities tr[data-activity="Approve"]`),
	), "the live part of the page shows the instance's progress")
	assert.True(t, eval[bool](t, ctx, stillMarked), "the page was not reloaded: only its live part changed")
	assert.Equal(t, "Approve", f.openItem(id).Activity)
	screenshot(t, ctx, "instance-progress")
}

// TestBrowserIncidentRetry resolves an incident by retrying: the Check
// application fails while the instance's variable fail is true; the
// operator sets it to false with the page's variable editor and retries
// the failed activity from the page, and the instance goes on to Review.
func TestBrowserIncidentRetry(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	f := newFixture(t, openSQLite(t), console.Options{})
	id := f.start(map[string]any{"fail": true})
	incidents, err := f.eng.Incidents(context.Background(), engine.IncidentFilter{Instance: id})
	require.NoError(t, err)
	require.Len(t, incidents.Incidents, 1, "Check failed: an open incident")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/incidents"),
		waitText(fmt.Sprintf(`#incidents tr[data-incident="%d"]`, incidents.Incidents[0].ID), errCheckFailed.Error()),
		waitText(`#groups tr[data-cause="application"]`, "1"),
	), "the incidents page lists it")
	screenshot(t, ctx, "incidents")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(fmt.Sprintf(`#incidents a[href="/instances/%d"]`, id)),
		chromedp.WaitVisible(`#repair .repair form[action$="/retry"]`),
		waitJS("Check drawn as an incident", nodeClass("Check", []string{"incident", "current"}, nil)),
		waitText(`#incidents`, errCheckFailed.Error()),
	), "the instance page shows the failed activity, its incident and the repairs")
	screenshot(t, ctx, "instance-incident")

	edit := `details.edit-variables form `
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`details.edit-variables summary`),
		chromedp.WaitVisible(edit+`[name="variables.fail"]`),
		chromedp.SetValue(edit+`[name="variables.fail"]`, "false"),
		chromedp.SendKeys(edit+`input[name=reason]`, "the documents arrived"),
	))
	screenshot(t, ctx, "instance-variables")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(edit+`button`),
		waitText(`#messages`, "Changed fail."),
		waitText(`#variables`, "false"),
	), "the variable editor changes fail")
	vars, err := f.eng.Variables(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, false, vars["fail"])

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(`#repair form[action$="/retry"] input[name=reason]`, "retry with the documents"),
		chromedp.Click(`#repair form[action$="/retry"] button`),
		waitText(`#messages`, "retried"),
		waitJS("Check completed and Review current", nodeClass("Check", []string{"completed"}, []string{"current", "incident"})+" && "+
			nodeClass("Review", []string{"waiting", "current"}, nil)),
	), "retrying from the page")
	f.idle()
	assert.Equal(t, "Review", f.openItem(id).Activity, "the instance went on")
	open, err := f.eng.Incidents(context.Background(), engine.IncidentFilter{Instance: id})
	require.NoError(t, err)
	assert.Empty(t, open.Incidents, "the incident is resolved")
	assert.False(t, eval[bool](t, ctx, `!!document.querySelector('#repair')`), "nothing is left to repair")
	screenshot(t, ctx, "instance-retried")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/audit?instance=%d", f.srv.URL, id)),
		waitText(`#audit`, "retry with the documents"),
		waitText(`#audit`, "the documents arrived"),
	), "the audit lists both commands with their reasons")
	screenshot(t, ctx, "audit")
}

// TestBrowserIncidentJump resolves an incident by jumping past the
// failed activity: the target is picked by clicking Review on the
// diagram (console.js fills the form's list), and the jump (confirmed)
// leaves Check behind with the instance waiting at Review.
func TestBrowserIncidentJump(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	f := newFixture(t, openSQLite(t), console.Options{})
	id := f.start(map[string]any{"fail": true})

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/instances/%d", f.srv.URL, id)),
		chromedp.WaitVisible(`form.move select[data-pick=activity]`),
		waitJS("Check drawn as an incident", nodeClass("Check", []string{"incident"}, nil)),
		chromedp.Click(`#live-instance figure.diagram g[data-activity="Review"] > rect`),
		waitJS("Review picked", `document.querySelector('form.move select[data-pick=activity]').value === "Review"`),
	), "clicking Review on the diagram picks it as the target")
	assert.True(t, eval[bool](t, ctx, nodeClass("Review", []string{"picked"}, nil)), "the picked activity is marked on the diagram")

	// The live part is refreshed every 3 s; the mark on the diagram
	// must survive it.
	eval[chromedp.Void](t, ctx, `document.querySelector('#live-instance').goxpdlOld = true`)
	require.NoError(t, chromedp.Do(ctx,
		waitJS("the live part refreshed, the pick marked on the new drawing",
			`(() => { const e = document.querySelector('#live-instance'); return !!e && !e.goxpdlOld; })() && `+nodeClass("Review", []string{"picked"}, nil)),
	))
	assert.Equal(t, "Review", eval[string](t, ctx, `document.querySelector('form.move select[data-pick=activity]').value`))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(`form.move input[name=reason]`, "documents checked by hand"),
	))
	screenshot(t, ctx, "instance-jump")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`form.move button[formaction$="/jump"]`),
		waitText(`#messages`, "jumped to Review"),
		waitJS("Review waiting and current, Check no longer", nodeClass("Review", []string{"waiting", "current"}, nil)+" && "+
			nodeClass("Check", nil, []string{"current"})),
	), "jumping (the confirmation accepted)")
	f.idle()
	assert.Equal(t, "Running", f.state(id))
	assert.Equal(t, "Review", f.openItem(id).Activity, "the instance waits at Review")
	open, err := f.eng.Incidents(context.Background(), engine.IncidentFilter{Instance: id})
	require.NoError(t, err)
	assert.Empty(t, open.Incidents, "the jump resolved the incident")
	hist, err := f.eng.History(context.Background(), engine.HistoryFilter{Instance: id, Limit: 500})
	require.NoError(t, err)
	var reason bool
	for _, e := range hist.Entries {
		reason = reason || e.Reason == "documents checked by hand"
	}
	assert.True(t, reason, "the history records the jump's reason")
	screenshot(t, ctx, "instance-jumped")
}
