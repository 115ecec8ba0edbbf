package console

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/engine"
)

// Bulk actions: one command given to many instances, as an engine batch
// (Engine.StartBatch), which runs in the background and survives
// restarts. A bulk action takes two requests: the first (without
// confirm=yes) changes nothing and answers with how many instances the
// action will touch and a form to confirm it with a reason; the second
// (confirm=yes and a reason) starts the batch, and the page goes to its
// progress (/batches/{id}). Authorize is asked ActionBatchStart with the
// target "batch/ACTION" (batch/terminate, ...).

// bulkActions are the batch actions the instance list offers.
var bulkActions = []engine.BatchAction{engine.BatchSuspend, engine.BatchResume, engine.BatchTerminate, engine.BatchRetry}

// bulkRoutes registers the bulk actions on the instance list: POST
// /bulk/instances/{action}, with the list's filter in the query and, in
// the body, scope=selection (the default) and the ids of the selected
// instances, or scope=filter for every instance the filter selects.
func (h *Handler) bulkRoutes(mux *http.ServeMux) {
	h.action(mux, "POST /bulk/instances/{action}", action{
		Name: ActionBatchStart,
		Target: func(r *http.Request) (string, error) {
			a, err := bulkAction(r.PathValue("action"))
			return "batch/" + string(a), err
		},
		Do:   h.bulkInstances,
		Done: batchStarted,
	})
}

// bulkAction reads a bulk action's name.
func bulkAction(s string) (engine.BatchAction, error) {
	a := engine.BatchAction(s)
	if !slices.Contains(bulkActions, a) {
		return "", badRequest("no bulk action %q (want one of %v)", s, bulkActions)
	}
	return a, nil
}

// batchStarted is the flash and the next page after a bulk action was
// confirmed: the batch's progress.
func batchStarted(_ *http.Request, result any) (string, string) {
	b, _ := result.(engine.Batch)
	return fmt.Sprintf("Batch %d started: %s of %d instance(s).", b.ID, b.Action, b.Total), fmt.Sprintf("/batches/%d", b.ID)
}

func (h *Handler) bulkInstances(ctx context.Context, r *http.Request, in *input, op engine.Op) (any, error) {
	act, err := bulkAction(r.PathValue("action"))
	if err != nil {
		return nil, err
	}
	ids, err := in.ids("ids")
	if err != nil {
		return nil, err
	}
	q := filterQuery(r.URL.Query())
	query := ""
	if len(q) > 0 {
		query = "?" + q.Encode()
	}
	req := bulkRequest{Action: act, Scope: strings.TrimSpace(in.str("scope")), Nav: "instances",
		Confirm: r.URL.Path + query, Back: "/instances" + query}
	switch req.Scope {
	case "filter":
		if req.Filter, err = instanceFilter(q); err != nil {
			return nil, err
		}
		req.Filter.After, req.Filter.Cursor, req.Filter.Sort, req.Filter.Limit = 0, "", "", 0
		req.Describe = describeQuery(q)
	case "", "selection":
		if len(ids) == 0 {
			return nil, badRequest("no instances selected: give their ids, or scope=filter for every instance the filter selects")
		}
		req.Scope, req.IDs, req.Filter = "selection", ids, engine.InstanceFilter{IDs: ids}
	default:
		return nil, badRequest("scope %q is neither selection nor filter", req.Scope)
	}
	return h.bulk(ctx, in, op, req)
}

// filterQuery is the instance list's query without its page (cursor,
// size) and fragment: the filter alone.
func filterQuery(q url.Values) url.Values {
	out := url.Values{}
	for k, vs := range q {
		if k == "after" || k == "limit" || k == "fragment" {
			continue
		}
		for _, v := range vs {
			if v = strings.TrimSpace(v); v != "" {
				out.Add(k, v)
			}
		}
	}
	return out
}

// bulkRequest is a bulk action about to be confirmed or started.
type bulkRequest struct {
	Action engine.BatchAction
	Filter engine.InstanceFilter
	// Scope is "selection" (IDs) or "filter"; Describe says what the
	// filter selects, for a person.
	Scope    string
	IDs      []int64
	Describe string
	// Nav is the menu entry of the confirmation page; Confirm the
	// console path its form posts to; Back where cancelling goes.
	Nav, Confirm, Back string
}

// bulkPreview is the answer of a bulk action's first step: what it
// would touch. Nothing was changed.
type bulkPreview struct {
	Action engine.BatchAction `json:"action"`
	Scope  string             `json:"scope"`
	IDs    []int64            `json:"ids,omitempty"`
	Filter string             `json:"filter,omitempty"`
	// Count is how many instances the action touches now; AtLeast says
	// there are more than Count (counting stopped there).
	Count   int  `json:"count"`
	AtLeast bool `json:"atLeast,omitempty"`
	// Confirmed is false: post again with confirm=yes and a reason to
	// start the batch.
	Confirmed bool   `json:"confirmed"`
	Confirm   string `json:"-"`
	Back      string `json:"-"`
}

// IDList is the selection as the confirmation form posts it again.
func (p bulkPreview) IDList() string {
	s := make([]string, len(p.IDs))
	for i, id := range p.IDs {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}

// bulk answers a bulk action: the preview without confirm=yes, else the
// started batch.
func (h *Handler) bulk(ctx context.Context, in *input, op engine.Op, req bulkRequest) (any, error) {
	if !confirmed(in) {
		n, more, err := h.countInstances(ctx, req.Filter)
		if err != nil {
			return nil, err
		}
		p := bulkPreview{Action: req.Action, Scope: req.Scope, IDs: req.IDs, Filter: req.Describe, Count: n, AtLeast: more,
			Confirm: req.Confirm, Back: req.Back}
		return &shown{Title: "Confirm " + string(req.Action), Nav: req.Nav, Template: "bulk", Data: p}, nil
	}
	if op.Reason == "" {
		return nil, badRequest("%s needs a reason", ActionBatchStart)
	}
	return h.eng.StartBatch(ctx, engine.BatchRequest{Action: req.Action, Filter: req.Filter, Op: op})
}

// confirmed says whether the request confirms a bulk action.
func confirmed(in *input) bool {
	switch strings.ToLower(strings.TrimSpace(in.str("confirm"))) {
	case "yes", "true", "1":
		return true
	}
	return false
}

// countCap is where counting the instances of a bulk action stops.
const countCap = 10000

// countInstances counts the instances f selects, up to countCap (more
// says there are more): exactly from the engine's kept counts where the
// filter allows, otherwise by reading at most countCap+1 rows.
func (h *Handler) countInstances(ctx context.Context, f engine.InstanceFilter) (n int, more bool, err error) {
	c, err := h.eng.CountInstances(ctx, f, countCap)
	if err != nil {
		return 0, false, err
	}
	return int(c.N), c.More, nil
}

// describeQuery says what a filter's query selects, for a person:
// "state=Running package=review", or "every instance".
func describeQuery(q url.Values) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(q)) {
		for _, v := range q[k] {
			if v = strings.TrimSpace(v); v != "" && k != "fragment" {
				parts = append(parts, k+"="+v)
			}
		}
	}
	if len(parts) == 0 {
		return "every instance"
	}
	return strings.Join(parts, " ")
}

// ids reads the parameter name as instance ids: a JSON array of numbers
// (or of numeric strings), or form fields given once per id or as a
// comma-separated list.
func (in *input) ids(name string) ([]int64, error) {
	var texts []string
	if in.body != nil {
		raw, ok := in.body[name]
		if !ok {
			return nil, nil
		}
		var nums []json.Number
		if err := json.Unmarshal(raw, &nums); err != nil {
			return nil, badRequest("%s is not a list of ids", name)
		}
		for _, n := range nums {
			texts = append(texts, n.String())
		}
	} else {
		for _, v := range in.form[name] {
			texts = append(texts, strings.Split(v, ",")...)
		}
	}
	var out []int64
	seen := map[int64]bool{}
	for _, s := range texts {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return nil, badRequest("%s: %q is not an id", name, s)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
		if len(out) > engine.MaxFilterIDs {
			return nil, badRequest("more than %d instances selected: act on the filter instead", engine.MaxFilterIDs)
		}
	}
	return out, nil
}

// describeFilter says what an instance filter selects, for a person, in
// the words of the list's query ("state=Running package=review"; "every
// instance"): the batch pages show a batch's filter with it.
func describeFilter(f engine.InstanceFilter) string {
	var parts []string
	add := func(name string, v any, set bool) {
		if set {
			parts = append(parts, fmt.Sprintf("%s=%v", name, v))
		}
	}
	for _, s := range f.States {
		add("state", s, true)
	}
	add("package", f.Package, f.Package != "")
	add("version", f.Version, f.Version != 0)
	add("definition", f.DefinitionID, f.DefinitionID != 0)
	add("process", f.Process, f.Process != "")
	add("business_key", f.BusinessKey, f.BusinessKey != "")
	add("started_after", f.StartedAfter.UTC().Format(time.RFC3339), !f.StartedAfter.IsZero())
	add("started_before", f.StartedBefore.UTC().Format(time.RFC3339), !f.StartedBefore.IsZero())
	add("incident", f.IncidentCause, f.IncidentCause != "")
	add("parent", f.Parent, f.Parent != 0)
	if len(f.IDs) > 0 {
		ids := make([]string, len(f.IDs))
		for i, id := range f.IDs {
			ids[i] = strconv.FormatInt(id, 10)
		}
		add("ids", strings.Join(ids, ","), true)
	}
	if len(parts) == 0 {
		return "every instance"
	}
	return strings.Join(parts, " ")
}
