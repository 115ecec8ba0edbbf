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
	"github.com/goxpdl/goxpdl/workitem"
)

// TestBrowserCompleteWorkItem completes a work item on someone's behalf
// through the work item manager: the open item is on the list, its page
// offers the form of the activity's OUT values, and completing it (the
// confirmation accepted) hands the values to the instance, which moves
// on and ends.
func TestBrowserCompleteWorkItem(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	f := newFixture(t, openSQLite(t), console.Options{})
	f.deploy("desk.xpdl")
	id, item := f.startDesk()

	row := fmt.Sprintf(`#workitems tr[data-workitem="%d"]`, item.ID)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/workitems"),
		chromedp.WaitVisible(row),
		waitText(row, "Decide"),
	), "the open item is on the work item list")
	screenshot(t, ctx, "workitems")

	form := `form.complete `
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(row+` a[href$="/workitems/`+fmt.Sprint(item.ID)+`"]`),
		chromedp.WaitVisible(form+`[name="values.score"]`),
		chromedp.SendKeys(form+`[name=user]`, "carla"),
		chromedp.Clear(form+`[name="values.score"]`), // it shows the current value, 0
		chromedp.SendKeys(form+`[name="values.score"]`, "42"),
		chromedp.SetValue(form+`[name="values.decision"]`, "approve"),
		chromedp.SendKeys(form+`[name=reason]`, "carla is on leave; decided by phone"),
	), "the item's page offers the activity's form")
	assert.Equal(t, fmt.Sprintf("/workitems/%d", item.ID), location(t, ctx).Path)
	screenshot(t, ctx, "workitem")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(form+`button`),
		waitText(`#messages`, fmt.Sprintf("Work item %d completed.", item.ID)),
		waitText(`main dl.facts`, "carla"),
	), "completing on carla's behalf (the confirmation accepted)")
	f.idle()
	done := f.item(item.ID)
	assert.Equal(t, workitem.Completed, done.State)
	assert.Equal(t, "carla", done.CompletedBy)
	assert.EqualValues(t, 42, f.vars(id)["score"], "the OUT value reached the instance")
	assert.Equal(t, "Completed", f.state(id), "the instance moved on and ended")
	screenshot(t, ctx, "workitem-completed")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/workitems"),
		chromedp.WaitVisible(`#workitems`),
	))
	assert.False(t, eval[bool](t, ctx, `!!document.querySelector('`+row+`')`), "the list of open items no longer shows it")
}

// TestBrowserBulkTerminate runs bulk actions from the instance list: two
// instances selected by their boxes are suspended, then every instance
// the filter "state Running" selects is terminated; each time the
// confirmation page counts the instances and asks for a reason, and the
// batch's page shows its progress until it has completed.
func TestBrowserBulkTerminate(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	f := newFixture(t, openSQLite(t), console.Options{})
	ids := make([]int64, 4)
	for i := range ids {
		var err error
		ids[i], err = f.eng.StartProcess(context.Background(), engine.StartOptions{Package: "review", BusinessKey: fmt.Sprintf("request-%d", i+1)})
		require.NoError(t, err)
	}
	f.idle()

	box := func(id int64) string { return fmt.Sprintf(`#instances tr[data-instance="%d"] input[name=ids]`, id) }
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/instances"),
		chromedp.WaitVisible(box(ids[3])),
		chromedp.Click(box(ids[0])),
		chromedp.Click(box(ids[1])),
	), "selecting two instances on the list")
	screenshot(t, ctx, "instances-bulk")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`#bulk button[data-bulk=suspend]`),
		chromedp.WaitVisible(`#bulk-count`),
	), "the bulk action first asks for a confirmation")
	assert.Equal(t, "2", eval[string](t, ctx, `document.querySelector('#bulk-count').dataset.count`), "it counts the selection")
	for _, id := range ids {
		assert.Equal(t, "Running", f.state(id), "nothing changed yet")
	}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(`form.danger input[name=reason]`, "the customer asked to wait"),
		chromedp.Click(`form.danger button`),
		waitText(`#messages`, "started: suspend of 2 instance(s)"),
		waitText(`#live-batch`, "completed"),
		waitText(`#batch-counts`, "2 of 2 processed: 2 done"),
	), "confirming starts the batch; its page follows it to the end")
	assert.Equal(t, "Suspended", f.state(ids[0]))
	assert.Equal(t, "Suspended", f.state(ids[1]))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/instances?state=Running"),
		chromedp.WaitVisible(box(ids[3])),
		chromedp.Click(`#bulk input[name=scope][value=filter]`),
		chromedp.Click(`#bulk button[data-bulk=terminate]`),
		chromedp.WaitVisible(`#bulk-count`),
	), "every instance of the filter")
	assert.Equal(t, "2", eval[string](t, ctx, `document.querySelector('#bulk-count').dataset.count`), "the two still running")
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#bulk-count').textContent`), "Running")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(`form.danger input[name=reason]`, "requests withdrawn"),
	))
	screenshot(t, ctx, "bulk-confirm")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(`form.danger button`),
		waitText(`#messages`, "started: terminate of 2 instance(s)"),
		waitText(`#live-batch`, "completed"),
		waitText(`#batch-counts`, "2 of 2 processed: 2 done"),
	))
	screenshot(t, ctx, "batch")
	assert.Equal(t, "Suspended", f.state(ids[0]), "the filter left the suspended ones alone")
	assert.Equal(t, "Suspended", f.state(ids[1]))
	assert.Equal(t, "Terminated", f.state(ids[2]))
	assert.Equal(t, "Terminated", f.state(ids[3]))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/engine"),
		chromedp.WaitVisible(`#live-engine`),
		chromedp.WaitVisible(`#settings`),
	))
	screenshot(t, ctx, "engine")
}

// TestBrowserBatchEnds watches a batch's page while the batch ends: its
// Pause and Cancel buttons, drawn while it ran, go when the live part
// learns that it has ended (here cancelled from the engine's API; no
// runner takes it up in this test, so it runs until then).
func TestBrowserBatchEnds(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	f := newFixture(t, openSQLite(t), console.Options{}, noRunner)
	id := f.start(nil)
	b, err := f.eng.StartBatch(context.Background(), engine.BatchRequest{Action: engine.BatchTerminate,
		Filter: engine.InstanceFilter{IDs: []int64{id}}, Op: engine.Op{Actor: "alice", Reason: "withdrawn"}})
	require.NoError(t, err)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(fmt.Sprintf("%s/batches/%d", f.srv.URL, b.ID)),
		chromedp.WaitVisible(`#batch-actions form[action$="/cancel"] button`),
		waitText(`#batch-counts`, "0 of 1 processed"),
	), "a running batch's page offers pause and cancel")
	eval[chromedp.Void](t, ctx, markPage)

	_, err = f.eng.CancelBatch(context.Background(), b.ID, engine.Op{Actor: "bob", Reason: "not now"})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx,
		waitText(`#live-batch`, "cancelled"),
		waitJS("the batch's buttons gone", `!document.querySelector('#batch-actions form')`),
	), "the live part shows the end, and the buttons go")
	assert.True(t, eval[bool](t, ctx, stillMarked), "without a reload")
	assert.Equal(t, "Running", f.state(id), "the cancelled batch did nothing")
}
