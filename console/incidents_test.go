package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
)

// incidentOf returns the open incident of an instance.
func (f *fixture) incidentOf(instance int64) engine.Incident {
	f.t.Helper()
	page, err := f.eng.Incidents(context.Background(), engine.IncidentFilter{Instance: instance})
	require.NoError(f.t, err)
	require.Len(f.t, page.Incidents, 1)
	return page.Incidents[0]
}

// openIncidents counts the open incidents.
func (f *fixture) openIncidents() int64 {
	f.t.Helper()
	counts, err := f.eng.IncidentCounts(context.Background())
	require.NoError(f.t, err)
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

// fixCheck lets an instance's Check application succeed when retried.
func (f *fixture) fixCheck(instance int64) {
	f.t.Helper()
	require.NoError(f.t, f.eng.SetVariables(context.Background(), instance,
		engine.Values{Variables: map[string]any{"fail": false}}, engine.Op{Actor: "test"}))
}

// batches lists every batch.
func (f *fixture) batches() []engine.Batch {
	f.t.Helper()
	page, err := f.eng.Batches(context.Background(), engine.BatchFilter{})
	require.NoError(f.t, err)
	return page.Batches
}

// awaitBatch waits, on the engine's batch records, until batch id is
// over and let go, and returns it.
func (f *fixture) awaitBatch(id int64) engine.Batch {
	f.t.Helper()
	wake := make(chan struct{}, 1)
	defer f.eng.Subscribe(func(r engine.Record) {
		if r.Batch == id {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	})()
	ctx := f.t.Context()
	for {
		b, err := f.eng.Batch(ctx, id)
		require.NoError(f.t, err)
		if b.State.IsFinal() && b.Owner == "" {
			f.idle()
			return b
		}
		select {
		case <-wake:
		case <-ctx.Done():
			f.t.Fatalf("batch %d never ended: %+v", id, b)
		}
	}
}

// batchOf reads the id of the batch a confirmed bulk action's redirect
// goes to.
func batchOf(t *testing.T, res response) int64 {
	t.Helper()
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	var id int64
	_, err := fmt.Sscanf(res.header.Get("Location"), "/batches/%d", &id)
	require.NoError(t, err, res.header.Get("Location"))
	return id
}

func TestIncidentPage(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		a := f.start(map[string]any{"fail": true})
		b := f.start(map[string]any{"fail": true})
		f.start(nil)

		page := f.get("/incidents")
		require.Equal(t, http.StatusOK, page.status, page.body)
		assert.Contains(t, page.body, `data-cause="application"`)
		assert.Contains(t, page.body, fmt.Sprintf(`data-incident="%d"`, f.incidentOf(a).ID))
		assert.Contains(t, page.body, "Retry all")
		assert.Contains(t, page.body, fmt.Sprintf(`href="/instances/%d"`, b), "each incident links to its instance")

		d := decode[struct {
			Groups []struct {
				Cause engine.IncidentCause `json:"cause"`
				Count int64                `json:"count"`
			} `json:"groups"`
			Incidents []engine.Incident `json:"incidents"`
		}](t, f.get("/api/incidents?cause=application"))
		require.Len(t, d.Groups, 1)
		assert.Equal(t, engine.CauseApplication, d.Groups[0].Cause)
		assert.Equal(t, int64(2), d.Groups[0].Count)
		assert.Len(t, d.Incidents, 2)
		none := decode[struct {
			Incidents []engine.Incident `json:"incidents"`
		}](t, f.get("/api/incidents?cause=subflow"))
		assert.Empty(t, none.Incidents)
		assert.Equal(t, http.StatusBadRequest, f.get("/api/incidents?cause=boom").status)
		assert.Equal(t, http.StatusBadRequest, f.get("/incidents?limit=x").status)
	})
}

func TestRetryIncident(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		id := f.start(map[string]any{"fail": true})
		inc := f.incidentOf(id)
		path := fmt.Sprintf("/incidents/%d/retry", inc.ID)

		// Refused: no reason; unknown incident; nothing changes.
		res := f.postJSON("/api"+path, map[string]any{})
		require.Equal(t, http.StatusBadRequest, res.status, res.body)
		assert.Equal(t, http.StatusNotFound, f.postJSON("/api/incidents/424242/retry", map[string]any{"reason": "r"}).status)
		assert.Equal(t, http.StatusBadRequest, f.postJSON("/api/incidents/x/retry", map[string]any{"reason": "r"}).status)
		assert.Equal(t, int64(1), f.openIncidents())

		f.fixCheck(id)
		res = f.postForm(path, url.Values{"reason": {"documents arrived"}}, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Equal(t, "/incidents", res.header.Get("Location"))
		f.idle()
		got, err := f.eng.Incident(context.Background(), inc.ID)
		require.NoError(t, err)
		assert.Equal(t, engine.IncidentResolved, got.State)
		assert.Equal(t, "retried", got.Resolution)
		assert.Equal(t, "Review", f.openItem(id).Activity, "the instance moved on")

		// A resolved incident cannot be retried again.
		res = f.postJSON("/api"+path, map[string]any{"reason": "again"})
		require.Equal(t, http.StatusConflict, res.status, res.body)
		assert.Equal(t, "refused", decode[apiErr](t, res).Error.Code)
	})
}

func TestRetryIncidentGroup(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		a := f.start(map[string]any{"fail": true})
		b := f.start(map[string]any{"fail": true})
		path := "/incidents/causes/application/retry"

		// The first step counts and asks; nothing changes.
		res := f.postForm(path, nil, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Contains(t, res.body, `data-count="2"`)
		assert.Contains(t, res.body, `name="confirm" value="yes"`)
		p := decode[struct {
			Action    string `json:"action"`
			Count     int    `json:"count"`
			Confirmed bool   `json:"confirmed"`
		}](t, f.postJSON("/api"+path, map[string]any{}))
		assert.Equal(t, "retry", p.Action)
		assert.Equal(t, 2, p.Count)
		assert.False(t, p.Confirmed)
		res = f.postJSON("/api"+path, map[string]any{"confirm": "yes"})
		require.Equal(t, http.StatusBadRequest, res.status, "a confirmation needs a reason: %s", res.body)
		res = f.postJSON("/api/incidents/causes/boom/retry", map[string]any{"confirm": "yes", "reason": "r"})
		require.Equal(t, http.StatusBadRequest, res.status, res.body)
		assert.Empty(t, f.batches())
		assert.Equal(t, int64(2), f.openIncidents())

		f.fixCheck(a)
		f.fixCheck(b)
		batch := f.awaitBatch(batchOf(t, f.postForm(path, url.Values{"confirm": {"yes"}, "reason": {"the service is back"}}, nil)))
		assert.Equal(t, engine.BatchCompleted, batch.State)
		assert.Equal(t, engine.BatchRetry, batch.Action)
		assert.Equal(t, int64(2), batch.Done)
		assert.Equal(t, "the service is back", batch.Reason)
		assert.Equal(t, int64(0), f.openIncidents())
		for _, id := range []int64{a, b} {
			assert.Equal(t, "Review", f.openItem(id).Activity)
		}
	})
}

func TestBulkActions(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{Actor: func(r *http.Request) string { return r.Header.Get("X-User") }})
		a, b, c := f.start(nil), f.start(nil), f.start(nil)
		ids := func(xs ...int64) []string {
			out := make([]string, len(xs))
			for i, x := range xs {
				out[i] = fmt.Sprint(x)
			}
			return out
		}

		// The list offers the bulk actions on a selection or the filter.
		list := f.get("/instances?state=Running")
		require.Equal(t, http.StatusOK, list.status, list.body)
		assert.Contains(t, list.body, fmt.Sprintf(`name="ids" value="%d"`, a))
		assert.Contains(t, list.body, `formaction="/bulk/instances/terminate?state=Running"`)

		// On a selection: the count first, then the batch.
		res := f.postForm("/bulk/instances/suspend?state=Running", url.Values{"ids": ids(a, b)}, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Contains(t, res.body, `data-count="2"`)
		assert.Contains(t, res.body, fmt.Sprintf(`name="ids" value="%d,%d"`, a, b))
		assert.Contains(t, res.body, `action="/bulk/instances/suspend?state=Running"`)
		assert.Empty(t, f.batches(), "nothing started before the confirmation")
		id := batchOf(t, f.postForm("/bulk/instances/suspend?state=Running",
			url.Values{"ids": {fmt.Sprintf("%d,%d", a, b)}, "confirm": {"yes"}, "reason": {"month end"}}, map[string]string{"X-User": "alice"}))
		batch := f.awaitBatch(id)
		assert.Equal(t, engine.BatchCompleted, batch.State)
		assert.Equal(t, int64(2), batch.Done)
		assert.Equal(t, "alice", batch.Actor)
		assert.Equal(t, "Suspended", f.state(a))
		assert.Equal(t, "Suspended", f.state(b))
		assert.Equal(t, "Running", f.state(c))

		// Its progress page and resource.
		page := f.get(fmt.Sprintf("/batches/%d", id))
		require.Equal(t, http.StatusOK, page.status, page.body)
		assert.Contains(t, page.body, "2 of 2 processed")
		got := decode[struct {
			Batch engine.Batch `json:"batch"`
		}](t, f.get(fmt.Sprintf("/api/batches/%d", id)))
		assert.Equal(t, id, got.Batch.ID)

		// On the whole filter, through the API.
		pre := decode[struct {
			Count  int    `json:"count"`
			Scope  string `json:"scope"`
			Filter string `json:"filter"`
		}](t, f.postJSON("/api/bulk/instances/terminate?state=Suspended", map[string]any{"scope": "filter"}))
		assert.Equal(t, 2, pre.Count)
		assert.Equal(t, "filter", pre.Scope)
		assert.Equal(t, "state=Suspended", pre.Filter)
		res = f.postJSON("/api/bulk/instances/terminate?state=Suspended&limit=1&after=1", map[string]any{"scope": "filter", "confirm": "yes", "reason": "closing"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		started := decode[engine.Batch](t, res)
		assert.Equal(t, int64(2), started.Total, "a batch takes the whole filter, not the page")
		f.awaitBatch(started.ID)
		assert.Equal(t, "Terminated", f.state(a))
		assert.Equal(t, "Terminated", f.state(b))
		assert.Equal(t, "Running", f.state(c))

		// Retry on a selection skips an instance with nothing to retry.
		res = f.postJSON("/api/bulk/instances/retry", map[string]any{"ids": []int64{c}, "confirm": "yes", "reason": "r"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		batch = f.awaitBatch(decode[engine.Batch](t, res).ID)
		assert.Equal(t, int64(1), batch.Skipped)

		list = f.get("/batches")
		require.Equal(t, http.StatusOK, list.status, list.body)
		assert.Contains(t, list.body, fmt.Sprintf(`data-batch="%d"`, id))
		batches := decode[struct {
			Batches []engine.Batch `json:"batches"`
		}](t, f.get("/api/batches?action=terminate&state=completed"))
		require.Len(t, batches.Batches, 1)
		assert.Equal(t, started.ID, batches.Batches[0].ID)
	})
}

func TestBulkActionsRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		a := f.start(nil)
		many := make([]int64, engine.MaxFilterIDs+1)
		for i := range many {
			many[i] = int64(i + 1)
		}
		for _, c := range []struct {
			name string
			path string
			body any
		}{
			{"unknown action", "/api/bulk/instances/explode", map[string]any{"ids": []int64{a}, "confirm": "yes", "reason": "r"}},
			{"migrate is not offered", "/api/bulk/instances/migrate", map[string]any{"ids": []int64{a}, "confirm": "yes", "reason": "r"}},
			{"nothing selected", "/api/bulk/instances/terminate", map[string]any{"confirm": "yes", "reason": "r"}},
			{"unknown scope", "/api/bulk/instances/terminate", map[string]any{"scope": "everything", "confirm": "yes", "reason": "r"}},
			{"ids not ids", "/api/bulk/instances/terminate", map[string]any{"ids": []string{"x"}, "confirm": "yes", "reason": "r"}},
			{"negative id", "/api/bulk/instances/terminate", map[string]any{"ids": []int64{-1}, "confirm": "yes", "reason": "r"}},
			{"too many ids", "/api/bulk/instances/terminate", map[string]any{"ids": many, "confirm": "yes", "reason": "r"}},
			{"no reason", "/api/bulk/instances/terminate", map[string]any{"ids": []int64{a}, "confirm": "yes"}},
			{"bad filter", "/api/bulk/instances/terminate?state=dead", map[string]any{"scope": "filter", "confirm": "yes", "reason": "r"}},
			{"bad filter value", "/api/bulk/instances/terminate?version=x", map[string]any{"scope": "filter", "confirm": "yes", "reason": "r"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				res := f.postJSON(c.path, c.body)
				require.Equal(t, http.StatusBadRequest, res.status, res.body)
				assert.Equal(t, "bad_request", decode[apiErr](t, res).Error.Code)
			})
		}
		res := f.do(http.MethodPost, "/api/bulk/instances/terminate", strings.NewReader("ids=1,x&confirm=yes&reason=r"),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		assert.Equal(t, http.StatusBadRequest, res.status, res.body)
		assert.Empty(t, f.batches(), "nothing started")
		assert.Equal(t, string(wftype.ProcessRunning), f.state(a))
	})
}
