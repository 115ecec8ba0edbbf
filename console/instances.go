package console

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// instanceRoutes registers the instance list, the instance detail and the
// commands on one instance.
func (h *Handler) instanceRoutes(mux *http.ServeMux) {
	h.page(mux, "GET /instances", "instances", "instances", fixed("page/instances"), h.instancesView)
	h.page(mux, "GET /instances/{id}", "instance", "instances", func(r *http.Request) string {
		return "instance/" + r.PathValue("id")
	}, h.instanceView)
	for _, c := range []struct {
		verb, action string
		do           func(e *engine.Engine, ctx context.Context, id int64, op engine.Op) error
		done         string
	}{
		{"suspend", ActionSuspend, (*engine.Engine).Suspend, "suspended"},
		{"resume", ActionResume, (*engine.Engine).Resume, "resumed"},
		{"terminate", ActionTerminate, (*engine.Engine).Terminate, "terminated"},
	} {
		h.action(mux, "POST /instances/{id}/"+c.verb, action{
			Name:   c.action,
			Target: idTarget("instance", "id"),
			Reason: true,
			Do: func(ctx context.Context, r *http.Request, _ *input, op engine.Op) (any, error) {
				id, err := pathID(r, "id")
				if err != nil {
					return nil, err
				}
				if err := c.do(h.eng, ctx, id, op); err != nil {
					return nil, err
				}
				return h.eng.Instance(ctx, id)
			},
			Done: func(r *http.Request, _ any) (string, string) {
				id := r.PathValue("id")
				return fmt.Sprintf("Instance %s %s.", id, c.done), "/instances/" + id
			},
		})
	}
}

// instanceList is the data of the instance list.
type instanceList struct {
	// Instances is the page; Next its cursor ("" on the last page).
	Instances []engine.ProcessInstance `json:"instances"`
	Next      string                   `json:"next,omitempty"`
	// NextPage is the console path of the next page (the same filter
	// after the cursor); "" on the last page.
	NextPage string `json:"-"`
	// States lists the states to offer in the filter form.
	States []wftype.ProcessState `json:"-"`
	// Causes lists the incident causes to offer.
	Causes []engine.IncidentCause `json:"-"`
	// BulkQuery is the filter as a query ("?state=Running", or ""), for
	// the bulk actions' forms (bulk.go); BulkActions the actions offered.
	BulkQuery   string               `json:"-"`
	BulkActions []engine.BatchAction `json:"-"`
}

// processStates are the process states a filter offers.
var processStates = []wftype.ProcessState{
	wftype.ProcessRunning, wftype.ProcessSuspended, wftype.ProcessLocking, wftype.ProcessQueued,
	wftype.ProcessCompleted, wftype.ProcessTerminated,
}

func (h *Handler) instancesView(r *http.Request) (view, error) {
	f, err := instanceFilter(r.URL.Query())
	if err != nil {
		return view{}, err
	}
	page, err := h.eng.Instances(r.Context(), f)
	if err != nil {
		return view{}, err
	}
	out := instanceList{Instances: page.Instances, States: processStates, Causes: engine.IncidentCauses, BulkActions: bulkActions}
	if q := filterQuery(r.URL.Query()); len(q) > 0 {
		out.BulkQuery = "?" + q.Encode()
	}
	if page.Next != 0 {
		out.Next = strconv.FormatInt(page.Next, 10)
		out.NextPage = nextPage("/instances", r.URL.Query(), out.Next)
	}
	if out.Instances == nil {
		out.Instances = []engine.ProcessInstance{}
	}
	return view{Title: "Instances", Data: out}, nil
}

// instanceFilter reads an InstanceFilter from query parameters: state
// (repeatable), package, version, definition, process, business_key,
// started_after, started_before (RFC 3339 or 2006-01-02), incident,
// parent, after (the cursor) and limit.
func instanceFilter(q url.Values) (engine.InstanceFilter, error) {
	var f engine.InstanceFilter
	var err error
	for _, s := range q["state"] {
		if s = strings.TrimSpace(s); s != "" {
			f.States = append(f.States, wftype.ProcessState(s))
		}
	}
	f.Package = strings.TrimSpace(q.Get("package"))
	f.Process = strings.TrimSpace(q.Get("process"))
	f.BusinessKey = strings.TrimSpace(q.Get("business_key"))
	f.IncidentCause = engine.IncidentCause(strings.TrimSpace(q.Get("incident")))
	if f.Version, err = queryInt(q, "version"); err != nil {
		return f, err
	}
	ints := []struct {
		name string
		dst  *int64
	}{{"definition", &f.DefinitionID}, {"parent", &f.Parent}, {"after", &f.After}}
	for _, p := range ints {
		if *p.dst, err = queryInt64(q, p.name); err != nil {
			return f, err
		}
	}
	if f.Limit, err = queryInt(q, "limit"); err != nil {
		return f, err
	}
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.StartedAfter, err = queryTime(q, "started_after"); err != nil {
		return f, err
	}
	if f.StartedBefore, err = queryTime(q, "started_before"); err != nil {
		return f, err
	}
	return f, nil
}

// nextPage is the console path of the page after cursor with the same
// query (the filter stays in the URL, so a filter can be saved as a
// link).
func nextPage(path string, q url.Values, cursor string) string {
	keep := url.Values{}
	for k, vs := range q {
		if k == "after" || k == "fragment" {
			continue
		}
		for _, v := range vs {
			if v != "" {
				keep.Add(k, v)
			}
		}
	}
	keep.Set("after", cursor)
	return path + "?" + keep.Encode()
}

func queryInt(q url.Values, name string) (int, error) {
	n, err := queryInt64(q, name)
	if err == nil && n > math.MaxInt32 {
		return 0, badRequest("%s %d is too large", name, n)
	}
	return int(n), err
}

// queryInt64 reads a query parameter as a number that is not negative
// (an id or a cursor); 0 when absent.
func queryInt64(q url.Values, name string) (int64, error) {
	s := strings.TrimSpace(q.Get(name))
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("%s %q is not a number", name, s)
	}
	return n, nil
}

func queryTime(q url.Values, name string) (time.Time, error) {
	s := strings.TrimSpace(q.Get(name))
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, badRequest("%s %q is not a time (RFC 3339 or YYYY-MM-DD)", name, s)
}

// instanceDetail is everything about one instance.
type instanceDetail struct {
	Instance   engine.ProcessInstance    `json:"instance"`
	Activities []engine.ActivityInstance `json:"activities"`
	Variables  map[string]any            `json:"variables"`
	History    []engine.HistoryEntry     `json:"history"`
	WorkItems  []engine.WorkItem         `json:"workItems"`
	Timers     []engine.Timer            `json:"timers"`
	Incidents  []engine.Incident         `json:"incidents"`
	Children   []engine.ProcessInstance  `json:"children"`
	// Diagram is the process drawn with each activity's state; empty
	// when it cannot be drawn (the reason is in DiagramError).
	Diagram      svgHTML `json:"-"`
	DiagramError string  `json:"-"`
	// Open says whether the instance has not ended.
	Open bool `json:"-"`
	// Repair is what the repair forms of an open instance need.
	Repair repairForms `json:"-"`
}

// detailLimit bounds each list of the instance detail.
const detailLimit = 500

func (h *Handler) instanceView(r *http.Request) (view, error) {
	ctx := r.Context()
	id, err := pathID(r, "id")
	if err != nil {
		return view{}, err
	}
	inst, err := h.eng.Instance(ctx, id)
	if err != nil {
		return view{}, err
	}
	d := instanceDetail{Instance: inst, Open: inst.State != wftype.ProcessCompleted && inst.State != wftype.ProcessTerminated}
	acts, err := h.eng.Activities(ctx, engine.ActivityFilter{Instance: id, Limit: detailLimit})
	if err != nil {
		return view{}, err
	}
	d.Activities = acts.Activities
	if d.Variables, err = h.eng.Variables(ctx, id); err != nil {
		return view{}, err
	}
	hist, err := h.eng.History(ctx, engine.HistoryFilter{Instance: id, Limit: detailLimit})
	if err != nil {
		return view{}, err
	}
	d.History = hist.Entries
	items, err := h.eng.WorkItems(ctx, engine.WorkItemFilter{Instance: id, Limit: detailLimit})
	if err != nil {
		return view{}, err
	}
	d.WorkItems = items.WorkItems
	timers, err := h.eng.Timers(ctx, engine.TimerFilter{Instance: id, Limit: detailLimit})
	if err != nil {
		return view{}, err
	}
	d.Timers = timers.Timers
	incs, err := h.eng.Incidents(ctx, engine.IncidentFilter{Instance: id, Limit: detailLimit,
		States: []engine.IncidentState{engine.IncidentOpen, engine.IncidentResolved}})
	if err != nil {
		return view{}, err
	}
	d.Incidents = incs.Incidents
	kids, err := h.eng.Instances(ctx, engine.InstanceFilter{Parent: id, Limit: detailLimit})
	if err != nil {
		return view{}, err
	}
	d.Children = kids.Instances
	d.Diagram, err = h.instanceDiagram(ctx, inst, d.Activities)
	if err != nil {
		d.DiagramError = err.Error()
	}
	if d.Open {
		d.Repair = h.repairFormsOf(ctx, inst, d.Activities, d.Variables)
	}
	return view{Title: fmt.Sprintf("Instance %d", id), Data: d}, nil
}

// openItem says whether a work item is still open.
func openItem(s workitem.State) bool {
	for _, o := range workitem.OpenStates {
		if s == o {
			return true
		}
	}
	return false
}
