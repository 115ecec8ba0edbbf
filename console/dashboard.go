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

// dashboard is the data of the dashboard: the whole database at a glance
// (Overview, every engine node's work) and this process's counters.
type dashboard struct {
	Overview engine.Overview `json:"overview"`
	// Stats are this node's counters: pools, bus, timers, group commits.
	Stats engine.Stats `json:"stats"`
	// States lists the states in the order the page shows them, with
	// their counts.
	States []stateCount `json:"-"`
	// Incidents are the open incidents by cause, in cause order.
	Incidents []causeCount `json:"-"`
	// Busiest are the definitions with the most instances, at most
	// dashboardDefinitions of them.
	Busiest []engine.DefinitionCount `json:"-"`
	// MaxMinute is the largest per-minute figure of the last hour, to
	// scale the bars.
	MaxMinute int64 `json:"-"`
}

// causeCount is the number of open incidents of one cause.
type causeCount struct {
	Cause engine.IncidentCause
	Count int64
}

// dashboardDefinitions bounds the definitions the dashboard lists.
const dashboardDefinitions = 15

func (h *Handler) dashboardView(r *http.Request) (view, error) {
	o, err := h.eng.Overview(r.Context())
	if err != nil {
		return view{}, err
	}
	d := dashboard{Overview: o, Stats: h.eng.Stats()}
	for _, s := range processStates {
		d.States = append(d.States, stateCount{State: s, Count: o.States[s]})
	}
	for _, c := range engine.IncidentCauses {
		if n := o.Incidents[c]; n > 0 {
			d.Incidents = append(d.Incidents, causeCount{Cause: c, Count: n})
		}
	}
	d.Busiest = slices.Clone(o.Definitions)
	slices.SortStableFunc(d.Busiest, func(a, b engine.DefinitionCount) int {
		switch {
		case a.Total > b.Total:
			return -1
		case a.Total < b.Total:
			return 1
		}
		return 0
	})
	if len(d.Busiest) > dashboardDefinitions {
		d.Busiest = d.Busiest[:dashboardDefinitions]
	}
	for _, m := range o.Minutes {
		d.MaxMinute = max(d.MaxMinute, m.Started, m.Completed+m.Terminated+m.Locked)
	}
	return view{Title: "Dashboard", Data: d}, nil
}
