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

func TestInstancePages(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		waiting := f.start(nil)
		failed := f.start(map[string]any{"fail": true})

		list := f.get("/instances")
		require.Equal(t, http.StatusOK, list.status, list.body)
		assert.Contains(t, list.body, fmt.Sprintf(`data-instance="%d"`, waiting))
		assert.Contains(t, list.body, fmt.Sprintf(`data-instance="%d"`, failed))

		api := decode[struct {
			Instances []engine.ProcessInstance `json:"instances"`
		}](t, f.get("/api/instances?incident=application"))
		require.Len(t, api.Instances, 1, "the filter keeps the instance with an incident")
		assert.Equal(t, failed, api.Instances[0].ID)

		detail := f.get(fmt.Sprintf("/instances/%d", waiting))
		require.Equal(t, http.StatusOK, detail.status, detail.body)
		assert.Contains(t, detail.body, "<svg", "the diagram is drawn")
		assert.Contains(t, detail.body, `data-activity="Review"`)
		assert.Contains(t, detail.body, "Suspend")

		live := f.get(fmt.Sprintf("/instances/%d?fragment=live-instance", waiting))
		require.Equal(t, http.StatusOK, live.status)
		assert.NotContains(t, live.body, "<html", "a fragment is not a whole page")
		assert.Contains(t, live.body, `id="live-instance"`)

		d := decode[struct {
			Instance   engine.ProcessInstance    `json:"instance"`
			Activities []engine.ActivityInstance `json:"activities"`
			Incidents  []engine.Incident         `json:"incidents"`
		}](t, f.get(fmt.Sprintf("/api/instances/%d", failed)))
		assert.Equal(t, failed, d.Instance.ID)
		require.Len(t, d.Incidents, 1)
		assert.Contains(t, d.Incidents[0].Error, errCheckFailed.Error())
	})
}

func TestInstanceCommands(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{Actor: func(r *http.Request) string { return r.Header.Get("X-User") }})
		id := f.start(nil)
		path := fmt.Sprintf("/api/instances/%d", id)

		// The API: JSON in, JSON out.
		res := f.postJSON(path+"/suspend", map[string]any{"reason": "customer asked to wait", "data": map[string]any{"ticket": "T-1"}})
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, "Suspended", string(decode[engine.ProcessInstance](t, res).State))

		// A page's form: a redirect to the instance, with the actor recorded.
		form := url.Values{"reason": {"customer is back"}}
		res = f.postForm(fmt.Sprintf("/instances/%d/resume", id), form, map[string]string{"X-User": "alice"})
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		assert.Equal(t, fmt.Sprintf("/instances/%d", id), res.header.Get("Location"))
		assert.Equal(t, "Running", f.state(id))

		// htmx follows HX-Location instead of a redirect.
		res = f.postForm(fmt.Sprintf("/instances/%d/suspend", id), url.Values{"reason": {"again"}}, map[string]string{"HX-Request": "true"})
		require.Equal(t, http.StatusNoContent, res.status, res.body)
		assert.Equal(t, fmt.Sprintf("/instances/%d", id), res.header.Get("HX-Location"))

		hist, err := f.eng.History(context.Background(), engine.HistoryFilter{Instance: id})
		require.NoError(t, err)
		var resumed *engine.HistoryEntry
		for i, e := range hist.Entries {
			if e.Subject == engine.SubjectProcess && e.To == "Running" && e.Reason != "" {
				resumed = &hist.Entries[i]
			}
		}
		require.NotNil(t, resumed, "the resume is in the history")
		assert.Equal(t, "alice", resumed.Actor)
		assert.Equal(t, "customer is back", resumed.Reason)
		assert.Equal(t, "console", resumed.Data["via"])

		// The page after the redirect shows the flash message once.
		page := f.do(http.MethodGet, fmt.Sprintf("/instances/%d", id), nil, map[string]string{"Cookie": flashCookie(res, f, id)})
		assert.Contains(t, page.body, `class="flash"`)
	})
}

// flashCookie resumes an instance through a form and returns the cookie
// the redirect set.
func flashCookie(_ response, f *fixture, id int64) string {
	res := f.postForm(fmt.Sprintf("/instances/%d/resume", id), url.Values{"reason": {"flash"}}, nil)
	require.Equal(f.t, http.StatusSeeOther, res.status, res.body)
	for _, c := range (&http.Response{Header: res.header}).Cookies() {
		if c.Name == "goxpdl_flash" {
			return c.Name + "=" + c.Value
		}
	}
	f.t.Fatal("no flash cookie")
	return ""
}

func TestInstanceCommandsRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		id := f.start(nil)
		cases := []struct {
			name   string
			path   string
			body   any
			status int
			code   string
		}{
			{"no reason", fmt.Sprintf("/api/instances/%d/terminate", id), map[string]any{}, http.StatusBadRequest, "bad_request"},
			{"blank reason", fmt.Sprintf("/api/instances/%d/terminate", id), map[string]any{"reason": "  "}, http.StatusBadRequest, "bad_request"},
			{"unknown instance", "/api/instances/999999/terminate", map[string]any{"reason": "x"}, http.StatusNotFound, "not_found"},
			{"not an id", "/api/instances/abc/terminate", map[string]any{"reason": "x"}, http.StatusBadRequest, "bad_request"},
			{"wrong state", fmt.Sprintf("/api/instances/%d/resume", id), map[string]any{"reason": "x"}, http.StatusConflict, "refused"},
			{"not JSON", fmt.Sprintf("/api/instances/%d/terminate", id), "[1,2", http.StatusBadRequest, "bad_request"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var res response
				if s, ok := c.body.(string); ok {
					res = f.do(http.MethodPost, c.path, strings.NewReader(s), map[string]string{"Content-Type": "application/json"})
				} else {
					res = f.postJSON(c.path, c.body)
				}
				require.Equal(t, c.status, res.status, res.body)
				assert.Equal(t, c.code, decode[apiErr](t, res).Error.Code)
				assert.Equal(t, "Running", f.state(id), "nothing changed")
			})
		}
		// A page gets an error page, not JSON.
		res := f.postForm(fmt.Sprintf("/instances/%d/resume", id), url.Values{"reason": {"x"}}, nil)
		require.Equal(t, http.StatusConflict, res.status)
		assert.Contains(t, res.body, `role="alert"`)
		assert.Contains(t, res.body, "<html")

		// GET never changes anything; an unknown page is a 404.
		assert.Equal(t, http.StatusMethodNotAllowed, f.get(fmt.Sprintf("/api/instances/%d/terminate", id)).status)
		assert.Equal(t, http.StatusNotFound, f.get("/no/such/page").status)
		assert.Equal(t, http.StatusBadRequest, f.get("/instances?version=x").status)
		assert.Equal(t, http.StatusBadRequest, f.get("/instances?started_after=yesterday").status)
		assert.Equal(t, http.StatusBadRequest, f.get("/instances?fragment=content").status, "only live fragments")
	})
}

func TestReadOnlyAuthorizeAndCSRF(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		viewer := errors.New("viewers may only look")
		f := newFixture(t, db, console.Options{Authorize: func(r *http.Request, action, _ string) error {
			if r.Header.Get("X-Role") == "viewer" && action != console.ActionRead {
				return viewer
			}
			if r.Header.Get("X-Role") == "nobody" {
				return errors.New("who are you")
			}
			return nil
		}})
		id := f.start(nil)
		terminate := fmt.Sprintf("/api/instances/%d/terminate", id)
		body := `{"reason":"test"}`
		js := map[string]string{"Content-Type": "application/json"}

		// A viewer may read, not act.
		res := f.do(http.MethodGet, fmt.Sprintf("/instances/%d", id), nil, map[string]string{"X-Role": "viewer"})
		require.Equal(t, http.StatusOK, res.status)
		assert.NotContains(t, res.body, ">Terminate<", "no buttons a viewer cannot use")
		res = f.do(http.MethodPost, terminate, strings.NewReader(body), map[string]string{"X-Role": "viewer", "Content-Type": "application/json"})
		require.Equal(t, http.StatusForbidden, res.status)
		assert.Equal(t, "forbidden", decode[apiErr](t, res).Error.Code)
		assert.Contains(t, res.body, viewer.Error())
		assert.Equal(t, http.StatusForbidden, f.do(http.MethodGet, "/api/instances", nil, map[string]string{"X-Role": "nobody"}).status)

		// A cross-origin browser POST is refused before anything runs.
		for _, h := range []map[string]string{
			{"Sec-Fetch-Site": "cross-site"},
			{"Origin": "https://evil.example"},
		} {
			for k, v := range js {
				h[k] = v
			}
			res = f.do(http.MethodPost, terminate, strings.NewReader(body), h)
			assert.Equal(t, http.StatusForbidden, res.status, "%v: %s", h, res.body)
		}
		assert.Equal(t, "Running", f.state(id))

		// A same-origin browser POST goes through.
		res = f.do(http.MethodPost, terminate, strings.NewReader(body), map[string]string{"Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, "Terminated", f.state(id))

		ro := newFixture(t, db, console.Options{ReadOnly: true})
		id2 := ro.start(nil)
		res = ro.do(http.MethodPost, fmt.Sprintf("/api/instances/%d/suspend", id2), strings.NewReader(body), js)
		require.Equal(t, http.StatusForbidden, res.status)
		assert.Equal(t, "read_only", decode[apiErr](t, res).Error.Code)
		assert.Equal(t, "Running", ro.state(id2))
		page := ro.get(fmt.Sprintf("/instances/%d", id2))
		assert.NotContains(t, page.body, "<form method=\"post\"", "a read-only console offers no actions")
		assert.Contains(t, page.body, "read-only")
	})
}

func TestPrefix(t *testing.T) {
	t.Parallel()
	f := newFixture(t, openSQLite(t), console.Options{Prefix: "/workflow"})
	id := f.start(nil)
	res := f.get("/workflow/")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Contains(t, res.body, `href="/workflow/instances"`)
	assert.Contains(t, res.body, `src="/workflow/static/htmx-`)
	res = f.postForm(fmt.Sprintf("/workflow/instances/%d/suspend", id), url.Values{"reason": {"r"}}, nil)
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	assert.Equal(t, fmt.Sprintf("/workflow/instances/%d", id), res.header.Get("Location"))
	js := f.get("/workflow/static/htmx-2.0.11.min.js")
	require.Equal(t, http.StatusOK, js.status)
	assert.Contains(t, js.header.Get("Cache-Control"), "immutable")
	assert.Equal(t, http.StatusNotFound, f.get("/instances").status, "nothing outside the prefix")

	_, err := console.New(f.eng, console.Options{Prefix: "workflow"})
	require.Error(t, err)
	_, err = console.New(nil, console.Options{})
	require.Error(t, err)
}
