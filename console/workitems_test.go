package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/workitem"
)

// epoch is the fake clock's start in the tests that need one.
var epoch = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

// fakeClock runs the engine on clock.
func fakeClock(clock *timer.Fake) func(*engine.Config) {
	return func(c *engine.Config) { c.Clock = clock }
}

// deploy deploys a package of testdata.
func (f *fixture) deploy(file string) {
	f.t.Helper()
	src, err := os.ReadFile("testdata/" + file)
	require.NoError(f.t, err)
	_, err = f.eng.Deploy(context.Background(), src)
	require.NoError(f.t, err)
}

// startDesk starts the desk process (testdata/desk.xpdl, deployed with
// f.deploy) and returns the instance and its Decide work item.
func (f *fixture) startDesk() (int64, engine.WorkItem) {
	f.t.Helper()
	id, err := f.eng.StartProcess(context.Background(), engine.StartOptions{Package: "desk"})
	require.NoError(f.t, err)
	f.idle()
	return id, f.openItem(id)
}

// openItem returns the one open work item of an instance.
func (f *fixture) openItem(instance int64) engine.WorkItem {
	f.t.Helper()
	page, err := f.eng.WorkItems(context.Background(), engine.WorkItemFilter{Instance: instance, States: workitem.OpenStates})
	require.NoError(f.t, err)
	require.Len(f.t, page.WorkItems, 1)
	return page.WorkItems[0]
}

// item reads a work item.
func (f *fixture) item(id int64) engine.WorkItem {
	f.t.Helper()
	wi, err := f.eng.WorkItem(context.Background(), id)
	require.NoError(f.t, err)
	return wi
}

// vars reads an instance's variables.
func (f *fixture) vars(id int64) map[string]any {
	f.t.Helper()
	v, err := f.eng.Variables(context.Background(), id)
	require.NoError(f.t, err)
	return v
}

// itemIDs are the ids of a work item list's page, as the API answers it.
func itemIDs(t *testing.T, r response) []int64 {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, r.body)
	page := decode[struct {
		WorkItems []engine.WorkItem `json:"workitems"`
	}](t, r)
	ids := []int64{}
	for _, wi := range page.WorkItems {
		ids = append(ids, wi.ID)
	}
	return ids
}

func TestWorkItemList(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		clock := timer.NewFake(epoch)
		f := newFixture(t, db, console.Options{}, fakeClock(clock))
		f.deploy("desk.xpdl")
		review := f.openItem(f.start(nil))
		_, decide := f.startDesk()
		require.NotNil(t, decide.DueAt)

		page := f.get("/workitems")
		require.Equal(t, http.StatusOK, page.status, page.body)
		assert.Contains(t, page.body, fmt.Sprintf(`data-workitem="%d"`, review.ID))
		assert.Contains(t, page.body, fmt.Sprintf(`data-workitem="%d"`, decide.ID))
		assert.NotContains(t, page.body, "<strong>overdue</strong>")

		both := []int64{review.ID, decide.ID}
		assert.Equal(t, both, itemIDs(t, f.get("/api/workitems")))
		assert.Equal(t, []int64{review.ID}, itemIDs(t, f.get("/api/workitems?activity=Review")))
		assert.Equal(t, []int64{decide.ID}, itemIDs(t, f.get("/api/workitems?role=clerk")))
		assert.Equal(t, []int64{review.ID}, itemIDs(t, f.get("/api/workitems?performer=reviewer")))
		assert.Equal(t, []int64{}, itemIDs(t, f.get("/api/workitems?overdue=yes")))
		assert.Equal(t, []int64{decide.ID}, itemIDs(t, f.get(fmt.Sprintf("/api/workitems?instance=%d", decide.Instance))))

		// Two hours and a minute later the Decide item is overdue.
		clock.Advance(2*time.Hour + time.Minute)
		assert.Equal(t, []int64{decide.ID}, itemIDs(t, f.get("/api/workitems?overdue=yes")))
		page = f.get("/workitems?overdue=yes")
		assert.Contains(t, page.body, `class="overdue"`)

		// Held items: by owner, and in the user's list; not in the role's.
		require.NoError(t, f.eng.ClaimWorkItem(context.Background(), decide.ID, "bob"))
		assert.Equal(t, []int64{decide.ID}, itemIDs(t, f.get("/api/workitems?owner=bob")))
		assert.Equal(t, []int64{decide.ID}, itemIDs(t, f.get("/api/workitems?user=bob")))
		assert.Equal(t, []int64{}, itemIDs(t, f.get("/api/workitems?role=clerk")))

		// Pages: the cursor in the API, a link on the page.
		first := decode[struct {
			WorkItems []engine.WorkItem `json:"workitems"`
			Next      string            `json:"next"`
		}](t, f.get("/api/workitems?limit=1"))
		require.Len(t, first.WorkItems, 1)
		require.NotEmpty(t, first.Next)
		assert.Equal(t, []int64{decide.ID}, itemIDs(t, f.get("/api/workitems?limit=1&after="+first.Next)))
		assert.Contains(t, f.get("/workitems?limit=1").body, `rel="next"`)

		// Completed items show with state=all or state=Completed only.
		_, err := f.eng.CompleteWorkItem(context.Background(), review.ID, engine.Completion{User: "ann"})
		require.NoError(t, err)
		f.idle()
		assert.Equal(t, []int64{decide.ID}, itemIDs(t, f.get("/api/workitems")))
		assert.Equal(t, both, itemIDs(t, f.get("/api/workitems?state=all")))
		assert.Equal(t, []int64{review.ID}, itemIDs(t, f.get("/api/workitems?state=Completed")))

		assert.Equal(t, []int64{}, itemIDs(t, f.get("/api/workitems?instance=3000000000")), "ids are 64-bit")
		for _, bad := range []string{"overdue=maybe", "state=done", "user=a&role=b", "instance=x", "limit=-1", "after=-2", "limit=3000000000"} {
			res := f.get("/api/workitems?" + bad)
			assert.Equal(t, http.StatusBadRequest, res.status, "%s: %s", bad, res.body)
			assert.Equal(t, "bad_request", decode[apiErr](t, res).Error.Code)
		}
	})
}

func TestWorkItemDetail(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		f.deploy("desk.xpdl")
		_, decide := f.startDesk()

		page := f.get(fmt.Sprintf("/workitems/%d", decide.ID))
		require.Equal(t, http.StatusOK, page.status, page.body)
		for _, s := range []string{`data-field="score"`, `data-field="decision"`, `<option>approve</option>`, "Complete on behalf", "Claim for", "Reassign"} {
			assert.Contains(t, page.body, s)
		}
		assert.NotContains(t, page.body, `data-field="amount"`, "an IN parameter is not the performer's to set")
		assert.NotContains(t, page.body, ">Release<", "nobody holds it")

		d := decode[struct {
			WorkItem engine.WorkItem    `json:"workItem"`
			Form     []engine.FormField `json:"form"`
			History  []engine.HistoryEntry
		}](t, f.get(fmt.Sprintf("/api/workitems/%d", decide.ID)))
		assert.Equal(t, decide.ID, d.WorkItem.ID)
		require.Len(t, d.Form, 2)
		assert.Equal(t, "score", d.Form[0].ID)
		assert.Equal(t, "INTEGER", d.Form[0].Type)
		assert.Equal(t, []string{"approve", "reject"}, d.Form[1].Values)

		// A completed item has no form and no actions.
		_, err := f.eng.CompleteWorkItem(context.Background(), decide.ID, engine.Completion{User: "ann", Outputs: map[string]any{"score": 3}})
		require.NoError(t, err)
		page = f.get(fmt.Sprintf("/workitems/%d", decide.ID))
		require.Equal(t, http.StatusOK, page.status, page.body)
		assert.NotContains(t, page.body, "Complete on behalf")
		assert.Contains(t, page.body, "Completed")

		assert.Equal(t, http.StatusNotFound, f.get("/workitems/424242").status)
		assert.Equal(t, http.StatusNotFound, f.get("/api/workitems/424242").status)
		assert.Equal(t, http.StatusBadRequest, f.get("/api/workitems/abc").status)
	})
}

func TestWorkItemCommands(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{Actor: func(r *http.Request) string { return r.Header.Get("X-User") }})
		f.deploy("desk.xpdl")
		instance, decide := f.startDesk()
		path := fmt.Sprintf("/workitems/%d/", decide.ID)
		admin := map[string]string{"X-User": "admin"}
		post := func(verb string, form url.Values) response {
			t.Helper()
			res := f.postForm(path+verb, form, admin)
			require.Equal(t, http.StatusSeeOther, res.status, "%s: %s", verb, res.body)
			assert.Equal(t, fmt.Sprintf("/workitems/%d", decide.ID), res.header.Get("Location"))
			return res
		}

		post("claim", url.Values{"user": {"bob"}, "reason": {"bob is back"}})
		wi := f.item(decide.ID)
		assert.Equal(t, workitem.Allocated, wi.State)
		assert.Equal(t, "bob", wi.Owner)

		post("delegate", url.Values{"to": {"carol"}, "reason": {"bob is away"}})
		assert.Equal(t, "carol", f.item(decide.ID).Owner)

		post("release", url.Values{"reason": {"carol cannot"}})
		wi = f.item(decide.ID)
		assert.Equal(t, workitem.Offered, wi.State)
		assert.Empty(t, wi.Owner)

		// The API takes lists; the answer is the item.
		res := f.do(http.MethodPost, "/api"+path+"reassign", strings.NewReader(`{"users":["dave"],"roles":["seniors"],"reason":"escalated"}`),
			map[string]string{"Content-Type": "application/json", "X-User": "admin"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		wi = decode[engine.WorkItem](t, res)
		assert.Equal(t, []engine.Principal{{Kind: engine.PrincipalUser, ID: "dave"}, {Kind: engine.PrincipalRole, ID: "seniors"}}, wi.Assignees)
		assert.Equal(t, []int64{decide.ID}, itemIDs(t, f.get("/api/workitems?role=seniors")))

		// Complete on behalf: a wrong value is a 422 naming the field, and
		// nothing changes.
		res = f.postForm(path+"complete", url.Values{"user": {"dave"}, "values.score": {"high"}, "values.decision": {"approve"}, "reason": {"r"}}, admin)
		require.Equal(t, http.StatusUnprocessableEntity, res.status, res.body)
		assert.Contains(t, res.body, `&#34;score&#34;`)
		res = f.postJSON("/api"+path+"complete", map[string]any{"user": "dave", "values": map[string]any{"decision": "perhaps"}, "reason": "r"})
		require.Equal(t, http.StatusUnprocessableEntity, res.status, res.body)
		e := decode[apiErr](t, res)
		assert.Equal(t, "invalid", e.Error.Code)
		assert.Contains(t, e.Error.Message, `"decision"`)
		res = f.postJSON("/api"+path+"complete", map[string]any{"user": "dave", "values": map[string]any{"amount": 5}, "reason": "r"})
		require.Equal(t, http.StatusConflict, res.status, "an IN parameter: %s", res.body)
		assert.Equal(t, workitem.Offered, f.item(decide.ID).State)
		assert.Equal(t, int64(0), f.vars(instance)["score"])

		// Typed JSON values and text both work.
		res = f.do(http.MethodPost, "/api"+path+"complete", strings.NewReader(`{"user":"dave","values":{"score":7,"decision":"approve"},"reason":"done for dave"}`),
			map[string]string{"Content-Type": "application/json", "X-User": "admin"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		wi = decode[engine.WorkItem](t, res)
		assert.Equal(t, workitem.Completed, wi.State)
		assert.Equal(t, "dave", wi.CompletedBy)
		assert.Equal(t, map[string]any{"score": float64(7), "decision": "approve"}, wi.Result)
		f.idle()
		assert.Equal(t, "Completed", f.state(instance))
		assert.Equal(t, int64(7), f.vars(instance)["score"])

		// The history has each change.
		hist, err := f.eng.History(context.Background(), engine.HistoryFilter{Instance: instance})
		require.NoError(t, err)
		var moves []string
		for _, h := range hist.Entries {
			if h.WorkItem == decide.ID {
				moves = append(moves, h.From+">"+h.To+":"+h.Actor)
			}
		}
		// (The engine's work-item commands record the user the console
		// acts for, the reassignment its actor: console/workitemops.go.)
		assert.Equal(t, []string{">Offered:engine", "Offered>Allocated:bob", "Allocated>Allocated:bob", "Allocated>Offered:carol",
			"Offered>Offered:admin", "Offered>Completed:dave"}, moves)

		// A form's complete, on behalf of the holder, with text values.
		_, second := f.startDesk()
		require.NoError(t, f.eng.ClaimWorkItem(context.Background(), second.ID, "erin"))
		res = f.postForm(fmt.Sprintf("/workitems/%d/complete", second.ID),
			url.Values{"values.score": {"4"}, "values.decision": {"reject"}, "reason": {"erin asked"}}, admin)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		wi = f.item(second.ID)
		assert.Equal(t, "erin", wi.CompletedBy)
		assert.Equal(t, map[string]any{"score": float64(4), "decision": "reject"}, wi.Result)
	})
}

func TestWorkItemCommandsRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		f.deploy("desk.xpdl")
		_, decide := f.startDesk()
		_, done := f.startDesk()
		_, err := f.eng.CompleteWorkItem(context.Background(), done.ID, engine.Completion{User: "ann"})
		require.NoError(t, err)
		p := func(id int64, verb string) string { return fmt.Sprintf("/api/workitems/%d/%s", id, verb) }
		for _, c := range []struct {
			name   string
			path   string
			body   any
			status int
			code   string
		}{
			{"no reason", p(decide.ID, "claim"), map[string]any{"user": "bob"}, http.StatusBadRequest, "bad_request"},
			{"claim for nobody", p(decide.ID, "claim"), map[string]any{"reason": "r"}, http.StatusBadRequest, "bad_request"},
			{"delegate to nobody", p(decide.ID, "delegate"), map[string]any{"reason": "r"}, http.StatusBadRequest, "bad_request"},
			{"reassign to nobody", p(decide.ID, "reassign"), map[string]any{"reason": "r"}, http.StatusBadRequest, "bad_request"},
			{"release what nobody holds", p(decide.ID, "release"), map[string]any{"reason": "r"}, http.StatusConflict, "refused"},
			{"delegate what nobody holds", p(decide.ID, "delegate"), map[string]any{"to": "x", "reason": "r"}, http.StatusConflict, "refused"},
			{"complete for nobody", p(decide.ID, "complete"), map[string]any{"reason": "r"}, http.StatusBadRequest, "bad_request"},
			{"unknown field", p(decide.ID, "complete"), map[string]any{"user": "x", "values": map[string]any{"color": "red"}, "reason": "r"}, http.StatusUnprocessableEntity, "invalid"},
			{"completed item", p(done.ID, "claim"), map[string]any{"user": "bob", "reason": "r"}, http.StatusConflict, "refused"},
			{"complete twice", p(done.ID, "complete"), map[string]any{"user": "ann", "reason": "r"}, http.StatusConflict, "refused"},
			{"unknown item", p(424242, "claim"), map[string]any{"user": "bob", "reason": "r"}, http.StatusNotFound, "not_found"},
			{"not an id", "/api/workitems/x/claim", map[string]any{"user": "bob", "reason": "r"}, http.StatusBadRequest, "bad_request"},
			{"malformed body", p(decide.ID, "claim"), "{", http.StatusBadRequest, "bad_request"},
		} {
			t.Run(c.name, func(t *testing.T) {
				var res response
				if s, ok := c.body.(string); ok {
					res = f.do(http.MethodPost, c.path, strings.NewReader(s), map[string]string{"Content-Type": "application/json"})
				} else {
					res = f.postJSON(c.path, c.body)
				}
				require.Equal(t, c.status, res.status, res.body)
				assert.Equal(t, c.code, decode[apiErr](t, res).Error.Code)
				wi := f.item(decide.ID)
				assert.Equal(t, decide.Revision, wi.Revision, "nothing changed")
				assert.Equal(t, workitem.Offered, wi.State)
			})
		}
		// A page's form gets an error page.
		res := f.postForm(fmt.Sprintf("/workitems/%d/release", decide.ID), url.Values{"reason": {"r"}}, nil)
		require.Equal(t, http.StatusConflict, res.status)
		assert.Contains(t, res.body, `role="alert"`)
	})
}
