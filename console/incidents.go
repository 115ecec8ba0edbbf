package console

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
)

// incidentRoutes registers the incident list (grouped by cause), the
// retry of one incident's activity and the retry of a whole group (a
// batch, confirmed with its count first, as the instance list's bulk
// actions are).
func (h *Handler) incidentRoutes(mux *http.ServeMux) {
	h.page(mux, "GET /incidents", "incidents", "incidents", fixed("page/incidents"), h.incidentsView)
	h.action(mux, "POST /incidents/{id}/retry", action{
		Name: ActionRetry, Target: idTarget("incident", "id"), Reason: true,
		Do: func(ctx context.Context, r *http.Request, _ *input, op engine.Op) (any, error) {
			id, err := pathID(r, "id")
			if err != nil {
				return nil, err
			}
			inc, err := h.eng.Incident(ctx, id)
			if err != nil {
				return nil, err
			}
			switch {
			case inc.State != engine.IncidentOpen:
				return nil, &wftype.StateError{Subject: "incident", State: string(inc.State), Command: "retry"}
			case inc.ActivityInstance == 0:
				return nil, &wftype.StateError{Subject: "incident", State: string(inc.Cause),
					Command: "retry (no activity to retry: repair the instance by a jump)"}
			}
			if err := h.eng.RetryActivity(ctx, inc.Instance, inc.ActivityInstance, op); err != nil {
				return nil, err
			}
			return h.eng.Incident(ctx, id)
		},
		Done: func(r *http.Request, _ any) (string, string) {
			return fmt.Sprintf("Incident %s: its activity is retried.", r.PathValue("id")), "/incidents"
		},
	})
	h.action(mux, "POST /incidents/causes/{cause}/retry", action{
		Name: ActionBatchStart, Target: func(*http.Request) (string, error) { return "batch/" + string(engine.BatchRetry), nil },
		Do: func(ctx context.Context, r *http.Request, in *input, op engine.Op) (any, error) {
			cause := engine.IncidentCause(r.PathValue("cause"))
			if !slices.Contains(engine.IncidentCauses, cause) {
				return nil, badRequest("no incident cause %q (want one of %v)", cause, engine.IncidentCauses)
			}
			back := "/incidents?" + url.Values{"cause": {string(cause)}}.Encode()
			return h.bulk(ctx, in, op, bulkRequest{
				Action: engine.BatchRetry, Filter: engine.InstanceFilter{IncidentCause: cause}, Scope: "filter",
				Describe: "instances with an open " + string(cause) + " incident", Nav: "incidents",
				Confirm: r.URL.Path, Back: back,
			})
		},
		Done: batchStarted,
	})
}

// incidentList is the data of the incident page.
type incidentList struct {
	// Groups counts the open incidents by cause.
	Groups []causeCount `json:"groups"`
	// Cause is the group shown ("" for all); Incidents the page of its
	// open incidents, Next its cursor.
	Cause     engine.IncidentCause `json:"cause,omitempty"`
	Incidents []engine.Incident    `json:"incidents"`
	Next      string               `json:"next,omitempty"`
	NextPage  string               `json:"-"`
}

func (h *Handler) incidentsView(r *http.Request) (view, error) {
	ctx := r.Context()
	q := r.URL.Query()
	f := engine.IncidentFilter{}
	var err error
	if f.After, err = queryInt64(q, "after"); err != nil {
		return view{}, err
	}
	if f.Limit, err = queryInt(q, "limit"); err != nil {
		return view{}, err
	}
	f.Limit = cmp.Or(f.Limit, 50)
	cause := engine.IncidentCause(strings.TrimSpace(q.Get("cause")))
	if cause != "" {
		f.Causes = []engine.IncidentCause{cause}
	}
	page, err := h.eng.Incidents(ctx, f)
	if err != nil {
		return view{}, err
	}
	counts, err := h.eng.IncidentCounts(ctx)
	if err != nil {
		return view{}, err
	}
	out := incidentList{Groups: sortedCounts(counts), Cause: cause, Incidents: page.Incidents}
	if out.Incidents == nil {
		out.Incidents = []engine.Incident{}
	}
	if page.Next != 0 {
		out.Next = strconv.FormatInt(page.Next, 10)
		out.NextPage = nextPage("/incidents", q, out.Next)
	}
	return view{Title: "Incidents", Data: out}, nil
}

// sortedCounts lists counts by cause, in the order of
// engine.IncidentCauses (unknown causes last, by name).
func sortedCounts(counts map[engine.IncidentCause]int64) []causeCount {
	out := []causeCount{}
	for c, n := range counts {
		if n > 0 {
			out = append(out, causeCount{Cause: c, Count: n})
		}
	}
	rank := func(c engine.IncidentCause) int {
		if i := slices.Index(engine.IncidentCauses, c); i >= 0 {
			return i
		}
		return len(engine.IncidentCauses)
	}
	slices.SortFunc(out, func(a, b causeCount) int {
		return cmp.Or(cmp.Compare(rank(a.Cause), rank(b.Cause)), cmp.Compare(a.Cause, b.Cause))
	})
	return out
}
