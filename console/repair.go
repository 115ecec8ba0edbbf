package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// repairRoutes registers the repairs of one instance, offered on its
// detail page: retry and skip of an Abnormal activity, jump and
// rollback, migration to another version (planned first), and editing
// variables. Each needs a reason, recorded with the actor in the
// instance's history.
func (h *Handler) repairRoutes(mux *http.ServeMux) {
	h.action(mux, "POST /instances/{id}/activities/{activity}/retry", action{
		Name: ActionRetry, Target: idTarget("instance", "id"), Reason: true,
		Do: func(ctx context.Context, r *http.Request, _ *input, op engine.Op) (any, error) {
			id, act, err := instanceActivity(r)
			if err != nil {
				return nil, err
			}
			if err := h.eng.RetryActivity(ctx, id, act, op); err != nil {
				return nil, err
			}
			return h.eng.Instance(ctx, id)
		},
		Done: doneOn("Activity %s retried.", "activity"),
	})
	h.action(mux, "POST /instances/{id}/activities/{activity}/skip", action{
		Name: ActionSkip, Target: idTarget("instance", "id"), Reason: true,
		Do: func(ctx context.Context, r *http.Request, in *input, op engine.Op) (any, error) {
			id, act, err := instanceActivity(r)
			if err != nil {
				return nil, err
			}
			values, err := h.instanceValues(ctx, id, in.object("variables"))
			if err != nil {
				return nil, err
			}
			if err := h.eng.SkipActivity(ctx, id, act, values, op); err != nil {
				return nil, err
			}
			return h.eng.Instance(ctx, id)
		},
		Done: doneOn("Activity %s skipped.", "activity"),
	})
	for _, m := range []struct {
		verb, action, done string
		move               func(e *engine.Engine, ctx context.Context, id int64, to string, op engine.Op) error
	}{
		{"jump", ActionJump, "jumped to", (*engine.Engine).Jump},
		{"rollback", ActionRollback, "rolled back to", (*engine.Engine).Rollback},
	} {
		h.action(mux, "POST /instances/{id}/"+m.verb, action{
			Name: m.action, Target: idTarget("instance", "id"), Reason: true,
			Do: func(ctx context.Context, r *http.Request, in *input, op engine.Op) (any, error) {
				id, err := pathID(r, "id")
				if err != nil {
					return nil, err
				}
				to := strings.TrimSpace(in.str("to"))
				if to == "" {
					return nil, &fieldError{Field: "to", Msg: "pick the activity to " + m.verb + " to"}
				}
				if err := m.move(h.eng, ctx, id, to, op); err != nil {
					return nil, err
				}
				return h.eng.Instance(ctx, id)
			},
			Done: func(r *http.Request, _ any) (string, string) {
				id := r.PathValue("id")
				return fmt.Sprintf("Instance %s %s %s.", id, m.done, strings.TrimSpace(r.FormValue("to"))), "/instances/" + id
			},
		})
	}
	h.page(mux, "GET /instances/{id}/migration", "migration", "instances", instanceTarget, h.migrationView)
	h.action(mux, "POST /instances/{id}/migrate", action{
		Name: ActionMigrate, Target: idTarget("instance", "id"), Reason: true,
		Do: func(ctx context.Context, r *http.Request, in *input, op engine.Op) (any, error) {
			id, err := pathID(r, "id")
			if err != nil {
				return nil, err
			}
			m, err := migrationOf(in.str("to"), in.object("map"))
			if err != nil {
				return nil, err
			}
			if err := h.eng.Migrate(ctx, id, m, op); err != nil {
				return nil, err
			}
			return h.eng.Instance(ctx, id)
		},
		Done: func(r *http.Request, result any) (string, string) {
			inst, _ := result.(engine.ProcessInstance)
			return fmt.Sprintf("Instance %d migrated to %s v%d.", inst.ID, inst.Package, inst.Version), fmt.Sprintf("/instances/%d", inst.ID)
		},
	})
	h.action(mux, "POST /instances/{id}/variables", action{
		Name: ActionVariables, Target: idTarget("instance", "id"), Reason: true,
		Do: h.setVariables,
		Done: func(r *http.Request, result any) (string, string) {
			changed, _ := result.(variablesResult)
			msg := "No variable changed."
			if len(changed.Changed) > 0 {
				msg = "Changed " + strings.Join(changed.Changed, ", ") + "."
			}
			return msg, "/instances/" + r.PathValue("id")
		},
	})
}

// instanceTarget names the instance a read is about, for Authorize.
func instanceTarget(r *http.Request) string { return "instance/" + r.PathValue("id") }

// doneOn is a Done that shows the instance with a message about the
// path parameter param.
func doneOn(format, param string) func(r *http.Request, _ any) (string, string) {
	return func(r *http.Request, _ any) (string, string) {
		return fmt.Sprintf(format, r.PathValue(param)), "/instances/" + r.PathValue("id")
	}
}

// instanceActivity reads the path's instance and activity instance ids.
func instanceActivity(r *http.Request) (int64, int64, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return 0, 0, err
	}
	act, err := pathID(r, "activity")
	if err != nil {
		return 0, 0, err
	}
	return id, act, nil
}

// instanceFields returns the variables of an instance's process, by
// their declarations in the version it runs; nil when the process is
// not in the file as written (a process the engine generated).
func (h *Handler) instanceFields(ctx context.Context, inst engine.ProcessInstance) ([]field, *xpdl.Process, error) {
	pkg, _, err := h.pkgs.get(ctx, inst.DefinitionID)
	if err != nil {
		return nil, nil, err
	}
	proc := pkg.Process(inst.Process)
	if proc == nil {
		return nil, nil, nil
	}
	return processFields(pkg, proc, false), proc, nil
}

// instanceValues reads variables an operator gave for instance id,
// parsed by their declared types. For a process the engine generated
// (not in the file), text goes to the engine to parse.
func (h *Handler) instanceValues(ctx context.Context, id int64, given map[string]any) (engine.Values, error) {
	inst, err := h.eng.Instance(ctx, id)
	if err != nil {
		return engine.Values{}, err
	}
	fields, proc, err := h.instanceFields(ctx, inst)
	if err != nil {
		return engine.Values{}, err
	}
	if proc == nil {
		v := engine.Values{Variables: map[string]any{}, TextVariables: map[string]string{}}
		for name, x := range given {
			if s, ok := x.(string); ok {
				if strings.TrimSpace(s) != "" {
					v.TextVariables[name] = s
				}
				continue
			}
			v.Variables[name] = numbersAsGo(x)
		}
		return v, nil
	}
	vars, err := parseValues(fields, given)
	if err != nil {
		return engine.Values{}, err
	}
	return engine.Values{Variables: vars}, nil
}

// variablesResult is the API's answer to a change of variables.
type variablesResult struct {
	Instance engine.ProcessInstance `json:"instance"`
	// Changed names the variables whose value changed, in order.
	Changed []string `json:"changed"`
	// Variables are all the instance's variables after it.
	Variables map[string]any `json:"variables"`
}

// setVariables sets the variables given ("variables.NAME" or a
// "variables" object), each parsed by its declared type; a value equal
// to the current one is left out, so that a form sent with every
// variable records only what the operator changed.
func (h *Handler) setVariables(ctx context.Context, r *http.Request, in *input, op engine.Op) (any, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, err
	}
	given := in.object("variables")
	if len(given) == 0 {
		return nil, &fieldError{Field: "variables", Msg: "no variable given"}
	}
	values, err := h.instanceValues(ctx, id, given)
	if err != nil {
		return nil, err
	}
	before, err := h.eng.Variables(ctx, id)
	if err != nil {
		return nil, err
	}
	for name, v := range values.Variables {
		if sameJSON(before[name], v) {
			delete(values.Variables, name)
		}
	}
	if len(values.Variables) > 0 || len(values.TextVariables) > 0 {
		if err := h.eng.SetVariables(ctx, id, values, op); err != nil {
			return nil, err
		}
	}
	out := variablesResult{Changed: []string{}}
	if out.Instance, err = h.eng.Instance(ctx, id); err != nil {
		return nil, err
	}
	if out.Variables, err = h.eng.Variables(ctx, id); err != nil {
		return nil, err
	}
	for name := range given {
		if _, ok := out.Variables[name]; ok && !sameJSON(before[name], out.Variables[name]) {
			out.Changed = append(out.Changed, name)
		}
	}
	slices.Sort(out.Changed)
	return out, nil
}

// sameJSON says whether a and b encode to the same JSON (a stored value
// read back and the same value parsed from a form differ in Go types).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// migrationOf reads a migration: to (a definition id) and the activity
// mapping (old activity id -> new; empty entries are left out).
func migrationOf(to string, mapping map[string]any) (engine.Migration, error) {
	var m engine.Migration
	to = strings.TrimSpace(to)
	id, err := strconv.ParseInt(to, 10, 64)
	if err != nil || id <= 0 {
		return m, &fieldError{Field: "to", Msg: fmt.Sprintf("%q is not a definition id", to)}
	}
	m.To = id
	for from, v := range mapping {
		s, ok := v.(string)
		if !ok {
			return m, &fieldError{Field: "map." + from, Msg: "not an activity id"}
		}
		if s = strings.TrimSpace(s); s != "" && s != from {
			if m.Activities == nil {
				m.Activities = map[string]string{}
			}
			m.Activities[from] = s
		}
	}
	return m, nil
}

// activityOption is an activity an operator may pick.
type activityOption struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Label is how a list shows the activity.
func (a activityOption) Label() string {
	if a.Name == "" || a.Name == a.ID {
		return a.ID
	}
	return a.Name + " (" + a.ID + ")"
}

// topActivities lists the activities of a process's top level.
func topActivities(proc *xpdl.Process) []activityOption {
	if proc == nil {
		return nil
	}
	out := make([]activityOption, 0, len(proc.Activities))
	for _, a := range proc.Activities {
		out = append(out, activityOption{ID: a.ID, Name: a.Name})
	}
	return out
}

// repairForms is what the instance page's repair forms need.
type repairForms struct {
	// Fields are the instance's variables with their current values.
	Fields []field
	// Targets are the activities a jump or a rollback may go to.
	Targets []activityOption
	// Abnormal are the activity instances a retry or a skip applies to.
	Abnormal []engine.ActivityInstance
}

// repairFormsOf gathers the repair forms' data for an instance; an
// error leaves them empty (the page still shows the instance).
func (h *Handler) repairFormsOf(ctx context.Context, inst engine.ProcessInstance, acts []engine.ActivityInstance, vars map[string]any) repairForms {
	var rf repairForms
	for _, a := range acts {
		if a.State == wftype.ActivityAbnormal {
			rf.Abnormal = append(rf.Abnormal, a)
		}
	}
	fields, proc, err := h.instanceFields(ctx, inst)
	if err != nil {
		h.log.Warn("console: reading an instance's definition", "instance", inst.ID, "definition", inst.DefinitionID, "err", err)
		return rf
	}
	rf.Fields = withValues(fields, vars)
	rf.Targets = topActivities(proc)
	return rf
}

// migrationView is the data of an instance's migration page: the other
// versions of its package and, for the one chosen, what a migration
// would do (engine.PlanMigration) or why it cannot.
type migrationView struct {
	Instance engine.ProcessInstance `json:"instance"`
	// Versions are the package's versions, newest first.
	Versions []versionRow `json:"versions"`
	// To is the definition planned for; Map the activity mapping asked.
	To  int64             `json:"to,omitempty"`
	Map map[string]string `json:"map,omitempty"`
	// Plan is what Migrate would do; Problems why it cannot, each in
	// words for an operator.
	Plan     *engine.MigrationPlan `json:"plan,omitempty"`
	Problems []string              `json:"problems,omitempty"`
	// Mapping lists the instance's open activities, each with the
	// activity it goes to, for the mapping form.
	Mapping []mappingRow `json:"-"`
	// Targets are the activities of the chosen version's process.
	Targets []activityOption `json:"-"`
}

// mappingRow is one open activity of the mapping form.
type mappingRow struct {
	From, To string
}

func (h *Handler) migrationView(r *http.Request) (view, error) {
	ctx := r.Context()
	id, err := pathID(r, "id")
	if err != nil {
		return view{}, err
	}
	inst, err := h.eng.Instance(ctx, id)
	if err != nil {
		return view{}, err
	}
	mv := migrationView{Instance: inst}
	if mv.Versions, _, err = h.versionsOf(ctx, inst.Package, inst.DefinitionID); err != nil {
		return view{}, err
	}
	q := r.URL.Query()
	mapping := map[string]any{}
	for k, vs := range q {
		if from, ok := strings.CutPrefix(k, "map."); ok && from != "" && len(vs) > 0 {
			mapping[from] = vs[0]
		}
	}
	to := strings.TrimSpace(q.Get("to"))
	if to == "" {
		// The newest other version, to plan at once.
		for _, v := range mv.Versions {
			if v.ID != inst.DefinitionID {
				to = strconv.FormatInt(v.ID, 10)
				break
			}
		}
	}
	title := fmt.Sprintf("Migrate instance %d", id)
	if to == "" {
		mv.Problems = []string{fmt.Sprintf("package %s has no other version to migrate to", inst.Package)}
		return view{Title: title, Data: mv}, nil
	}
	m, err := migrationOf(to, mapping)
	if err != nil {
		return view{}, err
	}
	mv.To, mv.Map = m.To, m.Activities
	plan, err := h.eng.PlanMigration(ctx, id, m)
	var cannot *engine.MigrationError
	var state *wftype.StateError
	switch {
	case err == nil:
		mv.Plan = &plan
	case errors.As(err, &cannot):
		mv.Problems = cannot.Problems
	case errors.As(err, &state):
		mv.Problems = []string{state.Error()}
	default:
		return view{}, err
	}
	if mv.Mapping, mv.Targets, err = h.mappingForm(ctx, inst, m); err != nil {
		return view{}, err
	}
	return view{Title: title, Data: mv}, nil
}

// mappingForm lists the instance's open activities with where each goes
// (the mapping asked, else the same id), and the activities of the
// target version's process.
func (h *Handler) mappingForm(ctx context.Context, inst engine.ProcessInstance, m engine.Migration) ([]mappingRow, []activityOption, error) {
	acts, err := h.eng.Activities(ctx, engine.ActivityFilter{Instance: inst.ID, Limit: detailLimit})
	if err != nil {
		return nil, nil, err
	}
	var rows []mappingRow
	seen := map[string]bool{}
	for _, a := range acts.Activities {
		if a.State == wftype.ActivityCompleted || seen[a.Activity] {
			continue
		}
		seen[a.Activity] = true
		to := a.Activity
		if t, ok := m.Activities[a.Activity]; ok {
			to = t
		}
		rows = append(rows, mappingRow{From: a.Activity, To: to})
	}
	pkg, _, err := h.pkgs.get(ctx, m.To)
	if errors.Is(err, engine.ErrNotFound) {
		return rows, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	return rows, allActivities(pkg.Process(inst.Process)), nil
}

// allActivities lists the activities of a process, its activity sets'
// included.
func allActivities(proc *xpdl.Process) []activityOption {
	if proc == nil {
		return nil
	}
	var out []activityOption
	for _, f := range proc.Flows() {
		for _, a := range f.Activities {
			out = append(out, activityOption{ID: a.ID, Name: a.Name})
		}
	}
	return out
}
