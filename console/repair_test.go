package console_test

import (
	"context"
	"errors"
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

// activity returns the newest instance of XPDL activity act in instance
// id.
func (f *fixture) activity(id int64, act string) engine.ActivityInstance {
	f.t.Helper()
	page, err := f.eng.Activities(context.Background(), engine.ActivityFilter{Instance: id, Limit: 100})
	require.NoError(f.t, err)
	var found *engine.ActivityInstance
	for i, a := range page.Activities {
		if a.Activity == act && (found == nil || a.ID > found.ID) {
			found = &page.Activities[i]
		}
	}
	require.NotNil(f.t, found, "instance %d has no activity %s", id, act)
	return *found
}

// activityCount counts the activity instances of instance id.
func (f *fixture) activityCount(id int64) int {
	f.t.Helper()
	page, err := f.eng.Activities(context.Background(), engine.ActivityFilter{Instance: id, Limit: 100})
	require.NoError(f.t, err)
	return len(page.Activities)
}

// variables returns an instance's variables.
func (f *fixture) variables(id int64) map[string]any {
	f.t.Helper()
	vars, err := f.eng.Variables(context.Background(), id)
	require.NoError(f.t, err)
	return vars
}

// history returns an instance's history.
func (f *fixture) history(id int64) []engine.HistoryEntry {
	f.t.Helper()
	hist, err := f.eng.History(context.Background(), engine.HistoryFilter{Instance: id, Limit: 1000})
	require.NoError(f.t, err)
	return hist.Entries
}

func TestRetryAndSkip(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{Actor: func(r *http.Request) string { return r.Header.Get("X-User") }})
		failed := f.start(map[string]any{"fail": true})
		check := f.activity(failed, "Check")
		require.Equal(t, wftype.ActivityAbnormal, check.State)

		// The page offers the repairs.
		page := f.get(fmt.Sprintf("/instances/%d", failed))
		require.Equal(t, http.StatusOK, page.status)
		assert.Contains(t, page.body, fmt.Sprintf(`data-abnormal="%d"`, check.ID))
		assert.Contains(t, page.body, fmt.Sprintf(`action="/instances/%d/activities/%d/retry"`, failed, check.ID))
		assert.Contains(t, page.body, fmt.Sprintf(`action="/instances/%d/activities/%d/skip"`, failed, check.ID))
		assert.Contains(t, page.body, `hx-confirm="Skip activity instance`)

		// Retry after repairing the variable the application fails on.
		res := f.postJSON(fmt.Sprintf("/api/instances/%d/variables", failed), map[string]any{"reason": "documents arrived", "variables": map[string]any{"fail": false}})
		require.Equal(t, http.StatusOK, res.status, res.body)
		res = f.postForm(fmt.Sprintf("/instances/%d/activities/%d/retry", failed, check.ID), url.Values{"reason": {"try again"}}, map[string]string{"X-User": "bob"})
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Equal(t, fmt.Sprintf("/instances/%d", failed), res.header.Get("Location"))
		f.idle()
		assert.Equal(t, wftype.ActivityCompleted, f.activity(failed, "Check").State, "the retry ran it again")
		assert.Equal(t, wftype.ActivityInActive, f.activity(failed, "Review").State)
		retried := false
		for _, e := range f.history(failed) {
			if e.ActivityInstance == check.ID && e.Reason == "try again" {
				retried = true
				assert.Equal(t, "bob", e.Actor)
				assert.Equal(t, "console", e.Data["via"])
			}
		}
		assert.True(t, retried, "the retry is in the history with its actor and reason")

		// Skip, handing on a value typed in the form.
		failed = f.start(map[string]any{"fail": true})
		check = f.activity(failed, "Check")
		res = f.postForm(fmt.Sprintf("/instances/%d/activities/%d/skip", failed, check.ID),
			url.Values{"reason": {"checked by hand"}, "variables.amount": {"7"}, "variables.fail": {""}}, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		f.idle()
		assert.Equal(t, wftype.ActivityCompleted, f.activity(failed, "Check").State)
		assert.Equal(t, wftype.ActivityInActive, f.activity(failed, "Review").State, "it routed on")
		assert.Equal(t, int64(7), f.variables(failed)["amount"])
		assert.Equal(t, true, f.variables(failed)["fail"], "an empty field changes nothing")

		// The API answers with the instance.
		failed = f.start(map[string]any{"fail": true})
		check = f.activity(failed, "Check")
		res = f.postJSON(fmt.Sprintf("/api/instances/%d/activities/%d/skip", failed, check.ID), map[string]any{"reason": "r", "variables": map[string]any{"amount": 8}})
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, failed, decode[engine.ProcessInstance](t, res).ID)
		assert.Equal(t, int64(8), f.variables(failed)["amount"])
	})
}

func TestRetryAndSkipRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		failed := f.start(map[string]any{"fail": true})
		waiting := f.start(nil)
		check := f.activity(failed, "Check")
		review := f.activity(waiting, "Review")
		acts, vars := f.activityCount(failed), f.variables(failed)
		retry := func(inst, act any) string { return fmt.Sprintf("/api/instances/%v/activities/%v/retry", inst, act) }
		skip := func(inst, act any) string { return fmt.Sprintf("/api/instances/%v/activities/%v/skip", inst, act) }
		cases := []struct {
			name   string
			path   string
			body   map[string]any
			status int
			code   string
		}{
			{"no reason", retry(failed, check.ID), map[string]any{}, http.StatusBadRequest, "bad_request"},
			{"not Abnormal", retry(waiting, review.ID), map[string]any{"reason": "r"}, http.StatusConflict, "refused"},
			{"unknown activity", retry(failed, 999999), map[string]any{"reason": "r"}, http.StatusNotFound, "not_found"},
			{"unknown instance", retry(999999, check.ID), map[string]any{"reason": "r"}, http.StatusNotFound, "not_found"},
			{"another instance's activity", retry(waiting, check.ID), map[string]any{"reason": "r"}, http.StatusConflict, "refused"},
			{"not an activity id", retry(failed, "x"), map[string]any{"reason": "r"}, http.StatusBadRequest, "bad_request"},
			{"skip: wrong type", skip(failed, check.ID), map[string]any{"reason": "r", "variables": map[string]any{"amount": "seven"}}, http.StatusUnprocessableEntity, "invalid"},
			{"skip: unknown variable", skip(failed, check.ID), map[string]any{"reason": "r", "variables": map[string]any{"nope": "1"}}, http.StatusUnprocessableEntity, "invalid"},
			{"skip: not Abnormal", skip(waiting, review.ID), map[string]any{"reason": "r"}, http.StatusConflict, "refused"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res := f.postJSON(c.path, c.body)
				require.Equal(t, c.status, res.status, res.body)
				assert.Equal(t, c.code, decode[apiErr](t, res).Error.Code)
				assert.Equal(t, wftype.ActivityAbnormal, f.activity(failed, "Check").State, "nothing changed")
				assert.Equal(t, acts, f.activityCount(failed))
				assert.Equal(t, vars, f.variables(failed))
				assert.Equal(t, wftype.ActivityInActive, f.activity(waiting, "Review").State)
			})
		}
		res := f.postJSON(skip(failed, check.ID), map[string]any{"reason": "r", "variables": map[string]any{"amount": "seven"}})
		assert.Equal(t, "variables.amount", decode[problemsErr](t, res).Error.Field)
	})
}

func TestJumpAndRollback(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		id := f.start(nil)

		// The page lists the targets, for the diagram's click to pick.
		page := f.get(fmt.Sprintf("/instances/%d", id))
		require.Equal(t, http.StatusOK, page.status)
		assert.Contains(t, page.body, `<select name="to" required data-pick="activity">`)
		assert.Contains(t, page.body, `<option value="Archive">Archive</option>`)
		assert.Contains(t, page.body, fmt.Sprintf(`formaction="/instances/%d/rollback"`, id))
		assert.Contains(t, page.body, `hx-confirm="Jump: cancel every open activity`)
		assert.Contains(t, page.body, `src="/static/console.js"`)
		assert.Contains(t, page.body, fmt.Sprintf(`href="/instances/%d/migration">Migrate…</a>`, id))

		// Rollback to Check, which completed: it runs again.
		checks := f.activityCount(id)
		res := f.postForm(fmt.Sprintf("/instances/%d/rollback", id), url.Values{"to": {"Check"}, "reason": {"check again"}}, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Contains(t, res.header.Get("Set-Cookie"), "rolled+back+to+Check")
		f.idle()
		assert.Greater(t, f.activityCount(id), checks)
		assert.Equal(t, wftype.ActivityInActive, f.activity(id, "Review").State, "Check ran again and Review waits again")

		// Jump to Archive: Review is cancelled, Archive runs, the
		// instance completes.
		res = f.postJSON(fmt.Sprintf("/api/instances/%d/jump", id), map[string]any{"to": "Archive", "reason": "reviewed on paper"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		f.idle()
		assert.Equal(t, "Completed", f.state(id))
	})
}

func TestJumpAndRollbackRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		id := f.start(nil)
		done := f.start(nil)
		require.NoError(t, f.eng.Terminate(context.Background(), done, engine.Op{Reason: "test"}))
		acts := f.activityCount(id)
		cases := []struct {
			name   string
			path   string
			body   map[string]any
			status int
			code   string
		}{
			{"no reason", fmt.Sprintf("/api/instances/%d/jump", id), map[string]any{"to": "Archive"}, http.StatusBadRequest, "bad_request"},
			{"no target", fmt.Sprintf("/api/instances/%d/jump", id), map[string]any{"reason": "r"}, http.StatusUnprocessableEntity, "invalid"},
			{"unknown activity", fmt.Sprintf("/api/instances/%d/jump", id), map[string]any{"to": "Nope", "reason": "r"}, http.StatusConflict, "refused"},
			{"rollback to what never ran", fmt.Sprintf("/api/instances/%d/rollback", id), map[string]any{"to": "Archive", "reason": "r"}, http.StatusConflict, "refused"},
			{"finished instance", fmt.Sprintf("/api/instances/%d/jump", done), map[string]any{"to": "Check", "reason": "r"}, http.StatusConflict, "refused"},
			{"unknown instance", "/api/instances/999999/jump", map[string]any{"to": "Check", "reason": "r"}, http.StatusNotFound, "not_found"},
			{"not an id", "/api/instances/x/rollback", map[string]any{"to": "Check", "reason": "r"}, http.StatusBadRequest, "bad_request"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res := f.postJSON(c.path, c.body)
				require.Equal(t, c.status, res.status, res.body)
				assert.Equal(t, c.code, decode[apiErr](t, res).Error.Code)
				assert.Equal(t, acts, f.activityCount(id), "nothing changed")
				assert.Equal(t, wftype.ActivityInActive, f.activity(id, "Review").State)
				assert.Equal(t, "Terminated", f.state(done))
			})
		}
	})
}

// reviewV3 is the review process with its Review activity renamed.
func reviewV3(t *testing.T) string {
	t.Helper()
	return strings.NewReplacer(`Activity Id="Review"`, `Activity Id="Assess"`, `To="Review"`, `To="Assess"`, `From="Review"`, `From="Assess"`).Replace(reviewSource(t))
}

func TestMigration(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		ctx := context.Background()
		id := f.start(nil)
		v2, err := f.eng.Deploy(ctx, []byte(reviewSource(t)))
		require.NoError(t, err)
		v3, err := f.eng.Deploy(ctx, []byte(reviewV3(t)))
		require.NoError(t, err)

		// The page plans the newest version first: Review is not in it.
		page := f.get(fmt.Sprintf("/instances/%d/migration", id))
		require.Equal(t, http.StatusOK, page.status, page.body)
		assert.Contains(t, page.body, `id="problems"`)
		assert.Contains(t, page.body, "Review")
		assert.Contains(t, page.body, `name="map.Review"`, "the mapping form")
		assert.Contains(t, page.body, `<option value="Assess">`, "the new version's activities")
		assert.NotContains(t, page.body, fmt.Sprintf(`action="/instances/%d/migrate"`, id), "no migration to make")

		// With the mapping, the plan and the form to migrate.
		page = f.get(fmt.Sprintf("/instances/%d/migration?to=%d&map.Review=Assess", id, v3.ID))
		require.Equal(t, http.StatusOK, page.status, page.body)
		assert.NotContains(t, page.body, `id="problems"`)
		assert.Contains(t, page.body, `id="plan"`)
		assert.Contains(t, page.body, fmt.Sprintf(`action="/instances/%d/migrate"`, id))
		assert.Contains(t, page.body, `<input type="hidden" name="map.Review" value="Assess">`)
		assert.Contains(t, page.body, `hx-confirm="Migrate instance`)

		plan := decode[struct {
			Plan     engine.MigrationPlan `json:"plan"`
			Problems []string             `json:"problems"`
			Versions []versionJSON        `json:"versions"`
		}](t, f.get(fmt.Sprintf("/api/instances/%d/migration?to=%d", id, v2.ID)))
		assert.Empty(t, plan.Problems)
		assert.Equal(t, 2, plan.Plan.ToVersion)
		require.Len(t, plan.Plan.Activities, 1)
		assert.Equal(t, "Review", plan.Plan.Activities[0].To)
		assert.Len(t, plan.Versions, 3)

		// Refusals change nothing.
		for _, c := range []struct {
			body   map[string]any
			status int
		}{
			{map[string]any{"to": v3.ID, "reason": "r"}, http.StatusConflict},
			{map[string]any{"to": "x", "reason": "r"}, http.StatusUnprocessableEntity},
			{map[string]any{"to": 999999, "reason": "r"}, http.StatusNotFound},
			{map[string]any{"to": v3.ID, "map": map[string]any{"Review": "Assess"}}, http.StatusBadRequest},
		} {
			res := f.postJSON(fmt.Sprintf("/api/instances/%d/migrate", id), c.body)
			require.Equal(t, c.status, res.status, res.body)
			inst, err := f.eng.Instance(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, 1, inst.Version, "nothing changed")
		}
		assert.Equal(t, http.StatusNotFound, f.get(fmt.Sprintf("/instances/%d/migration?to=999999", id)).status)
		assert.Equal(t, http.StatusNotFound, f.get("/instances/999999/migration").status)

		// The migration, through the page's form.
		res := f.postForm(fmt.Sprintf("/instances/%d/migrate", id), url.Values{"to": {fmt.Sprint(v3.ID)}, "map.Review": {"Assess"}, "reason": {"new review step"}}, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		inst, err := f.eng.Instance(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, 3, inst.Version)
		assert.Equal(t, wftype.ActivityInActive, f.activity(id, "Assess").State, "the open activity moved")

		// A finished instance: the page says why, a migration is refused.
		require.NoError(t, f.eng.Terminate(ctx, id, engine.Op{Reason: "test"}))
		page = f.get(fmt.Sprintf("/instances/%d/migration?to=%d", id, v2.ID))
		require.Equal(t, http.StatusOK, page.status)
		assert.Contains(t, page.body, `id="problems"`)
		res = f.postJSON(fmt.Sprintf("/api/instances/%d/migrate", id), map[string]any{"to": v2.ID, "reason": "r"})
		require.Equal(t, http.StatusConflict, res.status, res.body)
	})
}

func TestVariables(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{Actor: func(r *http.Request) string { return r.Header.Get("X-User") }})
		id := f.start(nil)

		page := f.get(fmt.Sprintf("/instances/%d", id))
		assert.Contains(t, page.body, fmt.Sprintf(`action="/instances/%d/variables"`, id))
		assert.Contains(t, page.body, `name="variables.amount" type="number" step="1" value="100"`, "the form shows the current value")

		res := f.do(http.MethodPost, fmt.Sprintf("/api/instances/%d/variables", id),
			strings.NewReader(`{"reason":"customer raised it","variables":{"amount":"42"}}`),
			map[string]string{"Content-Type": "application/json", "X-User": "carol"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		got := decode[struct {
			Changed   []string       `json:"changed"`
			Variables map[string]any `json:"variables"`
		}](t, res)
		assert.Equal(t, []string{"amount"}, got.Changed)
		assert.InDelta(t, 42, got.Variables["amount"], 0)
		assert.Equal(t, int64(42), f.variables(id)["amount"])
		var change *engine.HistoryEntry
		hist := f.history(id)
		for i, e := range hist {
			if e.Variable == "amount" {
				change = &hist[i]
			}
		}
		require.NotNil(t, change, "the change is in the history")
		assert.Equal(t, "carol", change.Actor)
		assert.Equal(t, "customer raised it", change.Reason)
		assert.InDelta(t, 100, change.Old, 0)
		assert.InDelta(t, 42, change.New, 0)
		page = f.get(fmt.Sprintf("/instances/%d", id))
		assert.Contains(t, page.body, "<code>100</code> → <code>42</code>", "the page's history shows it")

		// The page's form sends every variable; only what changed is set.
		entries := len(f.history(id))
		res = f.postForm(fmt.Sprintf("/instances/%d/variables", id), url.Values{"reason": {"r"}, "variables.amount": {"43"}, "variables.fail": {"false"}}, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Len(t, f.history(id), entries+1, "one change, one entry")
		res = f.postForm(fmt.Sprintf("/instances/%d/variables", id), url.Values{"reason": {"r"}, "variables.amount": {"43"}, "variables.fail": {"false"}}, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Contains(t, res.header.Get("Set-Cookie"), "No+variable+changed")
		assert.Len(t, f.history(id), entries+1)

		// Typed values of every kind, sent back unchanged, change nothing.
		typed := f.deployFile("types.xpdl")
		tid, err := f.eng.StartProcess(context.Background(), engine.StartOptions{DefinitionID: typed.ID, Variables: map[string]any{
			"tags": []any{"a", 1.5}, "at": "2026-12-01T10:30:00+02:00", "price": 0.1, "region": "south",
		}})
		require.NoError(t, err)
		f.idle()
		page = f.get(fmt.Sprintf("/instances/%d", tid))
		assert.Contains(t, page.body, `<input name="variables.at" value="2026-12-01T10:30:00&#43;02:00">`, "a zoned time in a text input")
		assert.Contains(t, page.body, `>[&#34;a&#34;,1.5]</textarea>`)
		entries = len(f.history(tid))
		res = f.postForm(fmt.Sprintf("/instances/%d/variables", tid), url.Values{"reason": {"r"},
			"variables.tags": {`["a",1.5]`}, "variables.at": {"2026-12-01T10:30:00+02:00"}, "variables.price": {"0.1"},
			"variables.region": {"south"}, "variables.count": {"3"}, "variables.urgent": {""}}, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Len(t, f.history(tid), entries, "nothing changed, nothing recorded")
	})
}

func TestVariablesRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		id := f.start(nil)
		done := f.start(nil)
		require.NoError(t, f.eng.Terminate(context.Background(), done, engine.Op{Reason: "test"}))
		vars := f.variables(id)
		path := fmt.Sprintf("/api/instances/%d/variables", id)
		cases := []struct {
			name   string
			path   string
			body   map[string]any
			status int
			field  string
		}{
			{"no reason", path, map[string]any{"variables": map[string]any{"amount": "1"}}, http.StatusBadRequest, ""},
			{"nothing given", path, map[string]any{"reason": "r"}, http.StatusUnprocessableEntity, "variables"},
			{"wrong type", path, map[string]any{"reason": "r", "variables": map[string]any{"amount": "lots"}}, http.StatusUnprocessableEntity, "variables.amount"},
			{"one good, one bad", path, map[string]any{"reason": "r", "variables": map[string]any{"amount": "5", "fail": "perhaps"}}, http.StatusUnprocessableEntity, "variables.fail"},
			{"unknown variable", path, map[string]any{"reason": "r", "variables": map[string]any{"nope": "1"}}, http.StatusUnprocessableEntity, "variables.nope"},
			{"finished instance", fmt.Sprintf("/api/instances/%d/variables", done), map[string]any{"reason": "r", "variables": map[string]any{"amount": "5"}}, http.StatusConflict, ""},
			{"unknown instance", "/api/instances/999999/variables", map[string]any{"reason": "r", "variables": map[string]any{"amount": "5"}}, http.StatusNotFound, ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res := f.postJSON(c.path, c.body)
				require.Equal(t, c.status, res.status, res.body)
				assert.Equal(t, c.field, decode[problemsErr](t, res).Error.Field)
				assert.Equal(t, vars, f.variables(id), "nothing changed")
			})
		}
	})
}

func TestRepairRefusedToViewersAndReadOnly(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		var asked []string
		f := newFixture(t, db, console.Options{Authorize: func(r *http.Request, action, target string) error {
			if r.Header.Get("X-Role") == "viewer" && action != console.ActionRead {
				return errors.New("viewers may only look")
			}
			if action != console.ActionRead {
				asked = append(asked, action+" "+target)
			}
			return nil
		}})
		failed := f.start(map[string]any{"fail": true})
		check := f.activity(failed, "Check")
		v2, err := f.eng.Deploy(context.Background(), []byte(reviewSource(t)))
		require.NoError(t, err)
		acts, vars := f.activityCount(failed), f.variables(failed)
		posts := []struct {
			path string
			body map[string]any
		}{
			{fmt.Sprintf("/instances/%d/activities/%d/retry", failed, check.ID), map[string]any{"reason": "r"}},
			{fmt.Sprintf("/instances/%d/activities/%d/skip", failed, check.ID), map[string]any{"reason": "r"}},
			{fmt.Sprintf("/instances/%d/jump", failed), map[string]any{"reason": "r", "to": "Review"}},
			{fmt.Sprintf("/instances/%d/rollback", failed), map[string]any{"reason": "r", "to": "Check"}},
			{fmt.Sprintf("/instances/%d/migrate", failed), map[string]any{"reason": "r", "to": v2.ID}},
			{fmt.Sprintf("/instances/%d/variables", failed), map[string]any{"reason": "r", "variables": map[string]any{"amount": "1"}}},
		}
		unchanged := func() {
			t.Helper()
			assert.Equal(t, acts, f.activityCount(failed), "nothing changed")
			assert.Equal(t, wftype.ActivityAbnormal, f.activity(failed, "Check").State)
			assert.Equal(t, vars, f.variables(failed))
			inst, err := f.eng.Instance(context.Background(), failed)
			require.NoError(t, err)
			assert.Equal(t, 1, inst.Version)
		}

		viewer := map[string]string{"X-Role": "viewer", "Content-Type": "application/json"}
		page := f.do(http.MethodGet, fmt.Sprintf("/instances/%d", failed), nil, viewer)
		require.Equal(t, http.StatusOK, page.status)
		for _, button := range []string{">Retry<", ">Skip<", ">Jump<", ">Roll back<", "Migrate…", "Edit variables"} {
			assert.NotContains(t, page.body, button, "no buttons a viewer cannot use")
		}
		for _, p := range posts {
			res := f.do(http.MethodPost, "/api"+p.path, strings.NewReader(mustJSON(t, p.body)), viewer)
			require.Equal(t, http.StatusForbidden, res.status, "%s: %s", p.path, res.body)
			assert.Equal(t, "forbidden", decode[apiErr](t, res).Error.Code)
			for _, h := range []map[string]string{{"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"}} {
				h["Content-Type"] = "application/json"
				res = f.do(http.MethodPost, p.path, strings.NewReader(mustJSON(t, p.body)), h)
				assert.Equal(t, http.StatusForbidden, res.status, "%s %v: %s", p.path, h, res.body)
			}
		}
		unchanged()
		assert.Empty(t, asked, "refused before Authorize was asked")

		// What Authorize is asked about: the instance.
		res := f.postJSON("/api"+posts[0].path, posts[0].body)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, []string{fmt.Sprintf("activity.retry instance/%d", failed)}, asked)

		ro := newFixture(t, db, console.Options{ReadOnly: true})
		page = ro.get(fmt.Sprintf("/instances/%d", failed))
		require.Equal(t, http.StatusOK, page.status)
		assert.NotContains(t, page.body, `method="post"`, "a read-only console offers no actions")
		for _, p := range posts[1:] {
			res := ro.postJSON("/api"+p.path, p.body)
			require.Equal(t, http.StatusForbidden, res.status, "%s: %s", p.path, res.body)
			assert.Equal(t, "read_only", decode[apiErr](t, res).Error.Code)
		}
	})
}

func TestConsoleJS(t *testing.T) {
	t.Parallel()
	f := newFixture(t, openSQLite(t), console.Options{})
	res := f.get("/static/console.js")
	require.Equal(t, http.StatusOK, res.status)
	assert.Contains(t, res.body, `select[data-pick="activity"]`)
	assert.Contains(t, res.body, "data-activity")
}
