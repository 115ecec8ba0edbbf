package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
)

func TestAuditPage(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{Actor: func(r *http.Request) string { return r.Header.Get("X-User") }})
		id := f.start(nil)
		as := func(user string) map[string]string { return map[string]string{"X-User": user} }

		res := f.postForm(fmt.Sprintf("/instances/%d/suspend", id), url.Values{"reason": {"audit me"}}, as("alice"))
		require.Equal(t, http.StatusSeeOther, res.status, res.body)
		res = f.postForm(fmt.Sprintf("/instances/%d/suspend", id), url.Values{"reason": {"twice"}}, as("bob"))
		require.Equal(t, http.StatusConflict, res.status, "suspending a suspended instance is refused")

		page := decode[struct {
			Entries []engine.AuditEntry `json:"entries"`
		}](t, f.get(fmt.Sprintf("/api/audit?instance=%d", id)))
		require.Len(t, page.Entries, 2, "the refusal is audited too")
		refused, done := page.Entries[0], page.Entries[1] // newest first
		assert.Equal(t, "bob", refused.Actor)
		assert.Equal(t, engine.AuditRefused, refused.Result)
		assert.NotEmpty(t, refused.Error)
		assert.Equal(t, "alice", done.Actor)
		assert.Equal(t, engine.AuditSuspend, done.Action)
		assert.Equal(t, engine.AuditOK, done.Result)
		assert.Equal(t, "audit me", done.Reason)
		assert.Equal(t, "console", done.Data["via"])

		only := decode[struct {
			Entries []engine.AuditEntry `json:"entries"`
		}](t, f.get("/api/audit?actor=alice&result=ok"))
		require.Len(t, only.Entries, 1)

		html := f.get("/audit?action=instance.suspend")
		require.Equal(t, http.StatusOK, html.status, html.body)
		assert.Contains(t, html.body, fmt.Sprintf(`data-audit="%d"`, done.ID))
		assert.Contains(t, html.body, "audit me")

		for _, q := range []string{"action=instance.explode", "result=maybe", "instance=x", "since=yesterday", "after=not-a-cursor"} {
			res := f.get("/api/audit?" + q)
			assert.Equal(t, http.StatusBadRequest, res.status, "%s: %s", q, res.body)
		}
	})
}
