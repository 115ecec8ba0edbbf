package console

import (
	"net/http"
	"slices"

	"github.com/goxpdl/goxpdl/engine"
)

// dashboardRoutes registers the dashboard (the system monitor).
func (h *Handler) dashboardRoutes(mux *http.ServeMux) {
	h.page(mux, "GET /{$}", "dashboard", "dashboard", fixed("page/dashboard"), h.dashboardView)
}

// dashboard is the data of the dashboard.
type dashboard struct {
	// Incidents counts the open incidents by cause.
	Incidents []causeCount `json:"incidents"`
	// Stats are the engine's counters (pools, bus, timers, commits).
	Stats engine.Stats `json:"stats"`
	// Definitions counts the deployed versions.
	Definitions int `json:"definitions"`
}

// causeCount is the number of open incidents of one cause.
type causeCount struct {
	Cause engine.IncidentCause `json:"cause"`
	Count int64                `json:"count"`
}

func (h *Handler) dashboardView(r *http.Request) (view, error) {
	ctx := r.Context()
	counts, err := h.eng.IncidentCounts(ctx)
	if err != nil {
		return view{}, err
	}
	d := dashboard{Stats: h.eng.Stats(), Incidents: []causeCount{}}
	for cause, n := range counts {
		d.Incidents = append(d.Incidents, causeCount{Cause: cause, Count: n})
	}
	slices.SortFunc(d.Incidents, func(a, b causeCount) int {
		if a.Cause < b.Cause {
			return -1
		}
		if a.Cause > b.Cause {
			return 1
		}
		return 0
	})
	deps, err := h.eng.Deployments(ctx)
	if err != nil {
		return view{}, err
	}
	d.Definitions = len(deps)
	return view{Title: "Dashboard", Data: d}, nil
}
