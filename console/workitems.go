package console

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// workItemRoutes registers the work item manager (工作项管理器): the list
// of work items, one item, and the administrator's commands on it.
func (h *Handler) workItemRoutes(mux *http.ServeMux) {
	h.page(mux, "GET /workitems", "workitems", "workitems", fixed("page/workitems"), h.workItemsView)
	h.page(mux, "GET /workitems/{id}", "workitem", "workitems", func(r *http.Request) string {
		return "workitem/" + r.PathValue("id")
	}, h.workItemView)
	done := func(verb string) func(r *http.Request, _ any) (string, string) {
		return func(r *http.Request, _ any) (string, string) {
			id := r.PathValue("id")
			return fmt.Sprintf("Work item %s %s.", id, verb), "/workitems/" + id
		}
	}
	target := idTarget("workitem", "id")
	h.action(mux, "POST /workitems/{id}/claim", action{Name: ActionWorkItemClaim, Target: target, Reason: true,
		Done: done("claimed"),
		Do: h.onItem(func(ctx context.Context, wi engine.WorkItem, in *input, op engine.Op) error {
			user := strings.TrimSpace(in.str("user"))
			if user == "" {
				return badRequest("claim needs the user who is to hold the item")
			}
			return claimItem(ctx, h.eng, wi.ID, user, op)
		})})
	h.action(mux, "POST /workitems/{id}/release", action{Name: ActionWorkItemRelease, Target: target, Reason: true,
		Done: done("released"),
		Do: h.onItem(func(ctx context.Context, wi engine.WorkItem, _ *input, op engine.Op) error {
			// For its owner; an item nobody holds is refused by its state.
			return releaseItem(ctx, h.eng, wi.ID, cmp.Or(wi.Owner, op.Actor), op)
		})})
	h.action(mux, "POST /workitems/{id}/delegate", action{Name: ActionWorkItemDelegate, Target: target, Reason: true,
		Done: done("delegated"),
		Do: h.onItem(func(ctx context.Context, wi engine.WorkItem, in *input, op engine.Op) error {
			to := strings.TrimSpace(in.str("to"))
			if to == "" {
				return badRequest("delegate needs the user to hand the item to (to)")
			}
			return delegateItem(ctx, h.eng, wi.ID, cmp.Or(wi.Owner, op.Actor), to, op)
		})})
	h.action(mux, "POST /workitems/{id}/reassign", action{Name: ActionWorkItemReassign, Target: target, Reason: true,
		Done: done("reassigned"),
		Do: h.onItem(func(ctx context.Context, wi engine.WorkItem, in *input, op engine.Op) error {
			to := principalsOf(in)
			if len(to) == 0 {
				return badRequest("reassign needs users, roles or units to offer the item to")
			}
			return reassignItem(ctx, h.eng, wi.ID, to, op)
		})})
	h.action(mux, "POST /workitems/{id}/complete", action{Name: ActionWorkItemComplete, Target: target, Reason: true,
		Done: done("completed"),
		Do: func(ctx context.Context, r *http.Request, in *input, op engine.Op) (any, error) {
			wi, err := h.workItem(ctx, r)
			if err != nil {
				return nil, err
			}
			c := engine.Completion{User: cmp.Or(strings.TrimSpace(in.str("user")), wi.Owner)}
			if c.User == "" {
				return nil, badRequest("work item %d is held by nobody: name the user on whose behalf it is completed (user)", wi.ID)
			}
			c.Outputs, c.TextOutputs = outputsOf(in.object("values"))
			return completeItem(ctx, h.eng, wi.ID, c, op)
		}})
}

// onItem adapts a command on the work item of the path to an action's
// Do; the result is the item as it is afterwards.
func (h *Handler) onItem(fn func(ctx context.Context, wi engine.WorkItem, in *input, op engine.Op) error) func(context.Context, *http.Request, *input, engine.Op) (any, error) {
	return func(ctx context.Context, r *http.Request, in *input, op engine.Op) (any, error) {
		wi, err := h.workItem(ctx, r)
		if err != nil {
			return nil, err
		}
		if err := fn(ctx, wi, in, op); err != nil {
			return nil, err
		}
		return h.eng.WorkItem(ctx, wi.ID)
	}
}

// workItem reads the work item of the path.
func (h *Handler) workItem(ctx context.Context, r *http.Request) (engine.WorkItem, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return engine.WorkItem{}, err
	}
	return h.eng.WorkItem(ctx, id)
}

// principalsOf reads whom to offer an item to: the parameters users,
// roles and units, each a list (a form's fields may also hold several
// names separated by commas).
func principalsOf(in *input) []engine.Principal {
	var out []engine.Principal
	for _, p := range principalParams("users", "roles", "units") {
		for _, v := range in.strs(p.ID) {
			for _, name := range strings.Split(v, ",") {
				if name = strings.TrimSpace(name); name != "" {
					out = append(out, engine.Principal{Kind: p.Kind, ID: name})
				}
			}
		}
	}
	return out
}

// principalParams pairs the parameters naming users, roles and units
// with their kinds (in ID).
func principalParams(user, role, unit string) []engine.Principal {
	return []engine.Principal{{Kind: engine.PrincipalUser, ID: user}, {Kind: engine.PrincipalRole, ID: role}, {Kind: engine.PrincipalUnit, ID: unit}}
}

// errorsIsState says whether err refuses something for the state it
// found.
func errorsIsState(err error) bool { return errors.Is(err, wftype.ErrIllegalState) }

// outputsOf splits a completion's values: text (a form's fields, a JSON
// string) is parsed by the engine by the declared types; other JSON
// values are taken as typed. An empty text field is left out (not given).
func outputsOf(values map[string]any) (map[string]any, map[string]string) {
	var typed map[string]any
	var text map[string]string
	for k, v := range values {
		if s, ok := v.(string); ok {
			if strings.TrimSpace(s) == "" {
				continue
			}
			if text == nil {
				text = map[string]string{}
			}
			text[k] = s
			continue
		}
		if typed == nil {
			typed = map[string]any{}
		}
		typed[k] = v
	}
	return typed, text
}

// workItemList is the data of the work item list.
type workItemList struct {
	// WorkItems is the page; Next its cursor ("" on the last page).
	WorkItems []engine.WorkItem `json:"workitems"`
	Next      string            `json:"next,omitempty"`
	// Now is the engine clock's time the page was read at: an item due
	// before it is overdue.
	Now time.Time `json:"now"`
	// NextPage is the console path of the next page; States the states
	// the filter offers.
	NextPage string           `json:"-"`
	States   []workitem.State `json:"-"`
}

// Overdue says whether wi was due before the page was read.
func (l workItemList) Overdue(wi engine.WorkItem) bool {
	return wi.DueAt != nil && wi.DueAt.Before(l.Now) && !wi.State.IsFinal()
}

func (h *Handler) workItemsView(r *http.Request) (view, error) {
	now := h.eng.Now()
	f, err := workItemFilter(r.URL.Query(), now)
	if err != nil {
		return view{}, err
	}
	page, err := h.eng.WorkItems(r.Context(), f)
	if err != nil {
		return view{}, err
	}
	out := workItemList{WorkItems: page.WorkItems, Now: now, States: workitem.States}
	if page.Next != 0 {
		out.Next = strconv.FormatInt(page.Next, 10)
		out.NextPage = nextPage("/workitems", r.URL.Query(), out.Next)
	}
	if out.WorkItems == nil {
		out.WorkItems = []engine.WorkItem{}
	}
	return view{Title: "Work items", Data: out}, nil
}

// workItemFilter reads a WorkItemFilter from query parameters: state
// (repeatable; "open", the default, for every open state, "all" for
// every state), owner (who holds the item), performer (the participant),
// user, role or unit (the items in that principal's worklist: offered to
// it and held by nobody, or held by the user), activity (the XPDL
// activity id), instance, overdue (1, true, yes or on: due before now on
// the engine's clock), after (the cursor) and limit (default 50).
func workItemFilter(q url.Values, now time.Time) (engine.WorkItemFilter, error) {
	var f engine.WorkItemFilter
	var err error
	var states []workitem.State
	all := false
	for _, s := range q["state"] {
		switch s = strings.TrimSpace(s); s {
		case "", "open":
			states = append(states, workitem.OpenStates...)
		case "all":
			all = true
		default:
			states = append(states, workitem.State(s))
		}
	}
	if all {
		states = nil
	} else if len(states) == 0 {
		states = workitem.OpenStates
	}
	f.States = states
	f.Owner = strings.TrimSpace(q.Get("owner"))
	f.Performer = strings.TrimSpace(q.Get("performer"))
	f.Activity = strings.TrimSpace(q.Get("activity"))
	for _, p := range principalParams("user", "role", "unit") {
		id := strings.TrimSpace(q.Get(p.ID))
		if id == "" {
			continue
		}
		if f.VisibleTo != nil {
			return f, badRequest("give one of user, role and unit")
		}
		f.VisibleTo = &engine.Principal{Kind: p.Kind, ID: id}
	}
	switch strings.ToLower(strings.TrimSpace(q.Get("overdue"))) {
	case "", "0", "false", "no", "off":
	case "1", "true", "yes", "on":
		f.DueBefore = &now
	default:
		return f, badRequest("overdue %q is not yes or no", q.Get("overdue"))
	}
	if f.Instance, err = queryInt64(q, "instance"); err != nil {
		return f, err
	}
	if f.After, err = queryInt64(q, "after"); err != nil {
		return f, err
	}
	if f.Limit, err = queryInt(q, "limit"); err != nil {
		return f, err
	}
	if f.Limit == 0 {
		f.Limit = 50
	}
	return f, nil
}

// workItemDetail is one work item with what an administrator may do
// with it.
type workItemDetail struct {
	WorkItem engine.WorkItem        `json:"workItem"`
	Instance engine.ProcessInstance `json:"instance"`
	// Form lists what completing the item takes (open items only);
	// FormError says why there is none for an open item.
	Form      []engine.FormField `json:"form,omitempty"`
	FormError string             `json:"formError,omitempty"`
	// Eligible are the users who may take the item now, as far as the
	// directory can name them.
	Eligible []string `json:"eligibleUsers,omitempty"`
	// History is the item's part of its instance's history.
	History []engine.HistoryEntry `json:"history"`
	Overdue bool                  `json:"overdue"`
	// Open says whether the item is not final.
	Open bool `json:"-"`
}

// FieldValue is a form field's current value as the form shows it.
func (workItemDetail) FieldValue(f engine.FormField) string {
	switch v := f.Value.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	b, err := json.Marshal(f.Value)
	if err != nil {
		return fmt.Sprint(f.Value)
	}
	return string(b)
}

func (h *Handler) workItemView(r *http.Request) (view, error) {
	ctx := r.Context()
	wi, err := h.workItem(ctx, r)
	if err != nil {
		return view{}, err
	}
	d := workItemDetail{WorkItem: wi, Open: !wi.State.IsFinal(), History: []engine.HistoryEntry{}}
	d.Overdue = d.Open && wi.DueAt != nil && wi.DueAt.Before(h.eng.Now())
	if d.Instance, err = h.eng.Instance(ctx, wi.Instance); err != nil {
		return view{}, err
	}
	if d.Open {
		form, err := h.eng.WorkItemForm(ctx, wi.ID)
		switch {
		case err == nil:
			d.Form = form.Fields
		case errorsIsState(err):
			d.FormError = err.Error()
		default:
			return view{}, err
		}
		if d.Eligible, err = h.eng.EligibleUsers(ctx, wi.ID); err != nil && !errorsIsState(err) {
			return view{}, err
		}
	}
	hist, err := h.eng.History(ctx, engine.HistoryFilter{Instance: wi.Instance, Limit: detailLimit})
	if err != nil {
		return view{}, err
	}
	for _, e := range hist.Entries {
		if e.WorkItem == wi.ID {
			d.History = append(d.History, e)
		}
	}
	return view{Title: fmt.Sprintf("Work item %d", wi.ID), Data: d}, nil
}
