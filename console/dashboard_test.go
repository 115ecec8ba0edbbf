package console_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
)

func TestDashboard(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		f.start(nil)
		f.start(nil)
		f.start(map[string]any{"fail": true})

		d := decode[struct {
			Overview engine.Overview `json:"overview"`
			Stats    engine.Stats    `json:"stats"`
		}](t, f.get("/api/"))
		assert.Equal(t, int64(3), d.Overview.Total)
		assert.Equal(t, int64(3), d.Overview.States[wftype.ProcessRunning])
		assert.Equal(t, int64(1), d.Overview.Incidents[engine.CauseApplication])
		require.NotEmpty(t, d.Overview.Nodes)
		assert.True(t, d.Overview.Nodes[0].Alive)
		assert.NotEmpty(t, d.Overview.Database.Dialect)
		assert.Positive(t, d.Stats.Scheduler.EventsProcessed)

		page := f.get("/")
		require.Equal(t, http.StatusOK, page.status, page.body)
		for _, card := range []string{"card-states", "card-minutes", "card-incidents", "card-events", "card-pools", "card-nodes", "card-definitions"} {
			assert.Contains(t, page.body, fmt.Sprintf(`id="%s"`, card))
		}
		assert.Contains(t, page.body, `href="/incidents?cause=application"`)
		live := f.get("/?fragment=live-dashboard")
		require.Equal(t, http.StatusOK, live.status)
		assert.NotContains(t, live.body, "<html")
	})
}

func TestInstanceListSortAndPages(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db *gorm.DB) {
		f := newFixture(t, db, console.Options{})
		a, b, c := f.start(nil), f.start(nil), f.start(nil)
		type listPage struct {
			Instances []engine.ProcessInstance `json:"instances"`
			Next      string                   `json:"next"`
		}
		ids := func(p listPage) []int64 {
			var out []int64
			for _, i := range p.Instances {
				out = append(out, i.ID)
			}
			return out
		}
		for sort, want := range map[string][]int64{"-id": {c, b, a}, "id": {a, b, c}, "-started": {c, b, a}, "started": {a, b, c}} {
			first := decode[listPage](t, f.get("/api/instances?limit=2&sort="+sort))
			require.NotEmpty(t, first.Next, sort)
			second := decode[listPage](t, f.get("/api/instances?limit=2&sort="+sort+"&after="+first.Next))
			assert.Equal(t, want, append(ids(first), ids(second)...), sort)
			assert.Empty(t, second.Next, "%s: the last page", sort)
		}
		html := f.get("/instances?limit=2&sort=-id")
		assert.Contains(t, html.body, `rel="next"`)
		assert.Contains(t, html.body, "sort=-id", "the next page keeps the order")
		for _, q := range []string{"sort=sideways", "sort=started&after=12", "after=x.y.z"} {
			assert.Equal(t, http.StatusBadRequest, f.get("/api/instances?"+q).status, q)
		}
	})
}
