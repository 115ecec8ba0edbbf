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
)

// startLocked starts the review process holding a local lock on key.
func (f *fixture) startLocked(key string) int64 {
	f.t.Helper()
	id, err := f.eng.StartProcess(context.Background(), engine.StartOptions{Package: "review", BusinessKey: key,
		Lock: &engine.LockOptions{Scope: engine.LockLocal}})
	require.NoError(f.t, err)
	f.idle()
	return id
}

// heldLocks lists the held locks.
func (f *fixture) heldLocks() []engine.Lock {
	f.t.Helper()
	page, err := f.eng.Locks(context.Background(), engine.LockFilter{State: engine.LockHeld})
	require.NoError(f.t, err)
	return page.Locks
}

// noRunner makes an engine that runs no batches: they stay Running.
func noRunner(c *engine.Config) { c.BatchPollInterval = -1 }

func TestEnginePage(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{}, func(c *engine.Config) { c.NodeID, c.CriticalWorkers = "node-7", 3 })
		id := f.startLocked("order-1")

		page := f.get("/engine")
		require.Equal(t, http.StatusOK, page.status, page.body)
		for _, s := range []string{"node-7", `id="pools"`, `id="settings"`, "Recover now", `data-lock="`, "order-1", `id="live-engine"`} {
			assert.Contains(t, page.body, s)
		}
		live := f.get("/engine?fragment=live-engine")
		require.Equal(t, http.StatusOK, live.status)
		assert.NotContains(t, live.body, "<html")
		assert.Contains(t, live.body, `id="pools"`)

		d := decode[struct {
			Settings engine.Settings `json:"settings"`
			Stats    engine.Stats    `json:"stats"`
			Locks    []engine.Lock   `json:"locks"`
			Batches  []engine.Batch  `json:"batches"`
		}](t, f.get("/api/engine"))
		assert.Equal(t, "node-7", d.Settings.NodeID)
		assert.Equal(t, 3, d.Settings.CriticalWorkers)
		assert.Equal(t, 3, d.Stats.Scheduler.CriticalWorkers)
		require.Len(t, d.Locks, 1)
		assert.Equal(t, id, d.Locks[0].Instance)
		assert.Equal(t, "order-1", d.Locks[0].Key.BusinessKey)
		assert.Empty(t, d.Batches)
		assert.Equal(t, http.StatusBadRequest, f.get("/engine?locks_after=x").status)
	})
}

func TestRecoverNow(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		res := f.postForm("/engine/recover", nil, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Equal(t, "/engine", res.header.Get("Location"))
		var flash string
		for _, c := range (&http.Response{Header: res.header}).Cookies() {
			if c.Name == "goxpdl_flash" {
				flash, _ = url.QueryUnescape(c.Value)
			}
		}
		assert.Contains(t, flash, "Recovered:", "the report is shown")
		page := f.do(http.MethodGet, "/engine", nil, map[string]string{"Cookie": "goxpdl_flash=" + url.QueryEscape(flash)})
		assert.Contains(t, page.body, "instance(s) rescued")

		res = f.postJSON("/api/engine/recover", map[string]any{"reason": "after the outage"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		rep := decode[engine.RecoveryReport](t, res)
		assert.Zero(t, rep.PendingEvents)
		assert.Zero(t, rep.Rescued)
	})
}

func TestReleaseLock(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{Actor: func(r *http.Request) string { return r.Header.Get("X-User") }})
		id := f.startLocked("order-1")
		locks := f.heldLocks()
		require.Len(t, locks, 1)
		path := fmt.Sprintf("/engine/locks/%d/release", locks[0].ID)

		for _, c := range []struct {
			name   string
			path   string
			body   map[string]any
			status int
		}{
			{"no reason", "/api" + path, map[string]any{}, http.StatusBadRequest},
			{"unknown lock", "/api/engine/locks/424242/release", map[string]any{"reason": "r"}, http.StatusNotFound},
			{"not an id", "/api/engine/locks/x/release", map[string]any{"reason": "r"}, http.StatusBadRequest},
		} {
			res := f.postJSON(c.path, c.body)
			require.Equal(t, c.status, res.status, "%s: %s", c.name, res.body)
		}
		require.Len(t, f.heldLocks(), 1, "nothing changed")

		res := f.postForm(path, url.Values{"reason": {"the instance is stuck"}}, map[string]string{"X-User": "alice"})
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Equal(t, "/engine", res.header.Get("Location"))
		assert.Empty(t, f.heldLocks())
		assert.Equal(t, "Running", f.state(id), "the holder runs on without its lock")
		hist, err := f.eng.History(context.Background(), engine.HistoryFilter{Instance: id})
		require.NoError(t, err)
		released := false
		for _, e := range hist.Entries {
			if e.Actor == "alice" && e.Reason == "the instance is stuck" && strings.Contains(e.Diagnosis, "released") {
				released = true
			}
		}
		assert.True(t, released, "the release is in the holder's history: %+v", hist.Entries)

		res = f.postJSON("/api"+path, map[string]any{"reason": "again"})
		assert.Equal(t, http.StatusNotFound, res.status, res.body)
	})
}

func TestBatchCommands(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{}, noRunner)
		a := f.start(nil)
		b, err := f.eng.StartBatch(context.Background(), engine.BatchRequest{Action: engine.BatchSuspend,
			Filter: engine.InstanceFilter{IDs: []int64{a}}, Op: engine.Op{Actor: "alice", Reason: "test"}})
		require.NoError(t, err)
		path := fmt.Sprintf("/batches/%d/", b.ID)
		state := func() engine.BatchState {
			t.Helper()
			got, err := f.eng.Batch(context.Background(), b.ID)
			require.NoError(t, err)
			return got.State
		}

		page := f.get(fmt.Sprintf("/batches/%d", b.ID))
		require.Equal(t, http.StatusOK, page.status, page.body)
		for _, s := range []string{">Pause<", ">Cancel<", `id="live-batch"`, "0 of 1 processed", fmt.Sprintf("<code>ids=%d</code>", a)} {
			assert.Contains(t, page.body, s)
		}
		assert.Contains(t, f.get("/engine").body, fmt.Sprintf(`data-batch="%d"`, b.ID), "a running batch is on the engine page")
		live := f.get(fmt.Sprintf("/batches/%d?fragment=live-batch", b.ID))
		require.Equal(t, http.StatusOK, live.status)
		assert.Contains(t, live.body, `hx-trigger="every 2s"`)

		res := f.postForm(path+"pause", url.Values{"reason": {"busy hour"}}, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Equal(t, engine.BatchPaused, state())
		res = f.postJSON("/api"+path+"pause", map[string]any{})
		require.Equal(t, http.StatusConflict, res.status, "a paused batch does not pause: %s", res.body)
		res = f.postJSON("/api"+path+"resume", map[string]any{})
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, engine.BatchRunning, decode[engine.Batch](t, res).State)

		res = f.postJSON("/api"+path+"cancel", map[string]any{})
		require.Equal(t, http.StatusBadRequest, res.status, "cancel needs a reason: %s", res.body)
		assert.Equal(t, engine.BatchRunning, state())
		res = f.postForm(path+"cancel", url.Values{"reason": {"wrong selection"}}, nil)
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Equal(t, engine.BatchCancelled, state())
		res = f.postJSON("/api"+path+"cancel", map[string]any{"reason": "again"})
		require.Equal(t, http.StatusConflict, res.status, res.body)
		assert.Equal(t, http.StatusNotFound, f.postJSON("/api/batches/424242/cancel", map[string]any{"reason": "r"}).status)
		assert.Equal(t, http.StatusNotFound, f.get("/batches/424242").status)
		assert.Equal(t, http.StatusBadRequest, f.get("/api/batches?state=sleeping").status)
		assert.Equal(t, "Running", f.state(a), "a cancelled batch did nothing")
		page = f.get(fmt.Sprintf("/batches/%d", b.ID))
		assert.NotContains(t, page.body, ">Cancel<", "a finished batch offers no commands")
		assert.NotContains(t, page.body, "hx-trigger", "nor polls")
	})
}

// TestCopsRefusals refuses every action of the work item, incident,
// bulk and engine pages to a viewer (Authorize), in a read-only console
// and from another origin, and changes nothing.
func TestCopsRefusals(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		viewer := errors.New("viewers may only look")
		auth := func(r *http.Request, action, target string) error {
			if r.Header.Get("X-Role") == "viewer" && action != console.ActionRead {
				return fmt.Errorf("%w (%s on %s)", viewer, action, target)
			}
			return nil
		}
		f := newFixture(t, db, console.Options{Authorize: auth}, noRunner)
		ro := newFixture(t, db, console.Options{ReadOnly: true}, noRunner)
		f.deploy("desk.xpdl")
		_, item := f.startDesk()
		failed := f.start(map[string]any{"fail": true})
		inc := f.incidentOf(failed)
		locked := f.startLocked("order-9")
		lock := f.heldLocks()[0]
		batch, err := f.eng.StartBatch(context.Background(), engine.BatchRequest{Action: engine.BatchSuspend,
			Filter: engine.InstanceFilter{IDs: []int64{locked}}})
		require.NoError(t, err)

		body := map[string]any{"reason": "r", "user": "bob", "to": "carol", "users": []string{"dave"},
			"ids": []int64{failed}, "confirm": "yes", "values": map[string]any{"score": 1}}
		paths := []string{
			fmt.Sprintf("/workitems/%d/claim", item.ID), fmt.Sprintf("/workitems/%d/release", item.ID),
			fmt.Sprintf("/workitems/%d/delegate", item.ID), fmt.Sprintf("/workitems/%d/reassign", item.ID),
			fmt.Sprintf("/workitems/%d/complete", item.ID),
			fmt.Sprintf("/incidents/%d/retry", inc.ID), "/incidents/causes/application/retry",
			"/bulk/instances/suspend", "/bulk/instances/resume", "/bulk/instances/terminate", "/bulk/instances/retry",
			"/engine/recover", fmt.Sprintf("/engine/locks/%d/release", lock.ID),
			fmt.Sprintf("/batches/%d/pause", batch.ID), fmt.Sprintf("/batches/%d/resume", batch.ID), fmt.Sprintf("/batches/%d/cancel", batch.ID),
		}
		for _, p := range paths {
			t.Run(p, func(t *testing.T) {
				js := map[string]string{"Content-Type": "application/json"}
				b := `{"reason":"r","user":"bob","to":"carol","users":["dave"],"ids":[` + fmt.Sprint(failed) + `],"confirm":"yes","values":{"score":1}}`
				res := f.do(http.MethodPost, "/api"+p, strings.NewReader(b), map[string]string{"Content-Type": "application/json", "X-Role": "viewer"})
				require.Equal(t, http.StatusForbidden, res.status, res.body)
				assert.Equal(t, "forbidden", decode[apiErr](t, res).Error.Code)
				assert.Contains(t, res.body, viewer.Error())

				res = ro.postJSON("/api"+p, body)
				require.Equal(t, http.StatusForbidden, res.status, res.body)
				assert.Equal(t, "read_only", decode[apiErr](t, res).Error.Code)

				for _, h := range []map[string]string{{"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"}} {
					for k, v := range js {
						h[k] = v
					}
					res = f.do(http.MethodPost, "/api"+p, strings.NewReader(b), h)
					assert.Equal(t, http.StatusForbidden, res.status, "%v: %s", h, res.body)
				}
				// A page's form from a viewer: an error page.
				res = f.postForm(p, url.Values{"reason": {"r"}}, map[string]string{"X-Role": "viewer"})
				require.Equal(t, http.StatusForbidden, res.status, res.body)
				assert.Contains(t, res.body, `role="alert"`)
			})
		}

		// Nothing changed.
		wi := f.item(item.ID)
		assert.Equal(t, item.Revision, wi.Revision)
		got, err := f.eng.Incident(context.Background(), inc.ID)
		require.NoError(t, err)
		assert.Equal(t, engine.IncidentOpen, got.State)
		assert.Len(t, f.heldLocks(), 1)
		assert.Len(t, f.batches(), 1)
		b2, err := f.eng.Batch(context.Background(), batch.ID)
		require.NoError(t, err)
		assert.Equal(t, engine.BatchRunning, b2.State)

		// Viewers and read-only consoles see the pages without buttons.
		for _, p := range []string{fmt.Sprintf("/workitems/%d", item.ID), "/incidents", "/instances", "/engine", fmt.Sprintf("/batches/%d", batch.ID)} {
			res := f.do(http.MethodGet, p, nil, map[string]string{"X-Role": "viewer"})
			require.Equal(t, http.StatusOK, res.status, "%s: %s", p, res.body)
			assert.NotContains(t, res.body, `method="post"`, p)
			res = ro.get(p) // the same database
			require.Equal(t, http.StatusOK, res.status, "%s: %s", p, res.body)
			assert.NotContains(t, res.body, `method="post"`, p)
		}
	})
}
