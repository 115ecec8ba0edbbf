package adversary

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// observed is what the engine holds of one instance.
type observed struct {
	pi          engine.ProcessInstance
	vars        map[string]any
	open        []engine.WorkItem
	abnormal    []engine.ActivityInstance
	initiated   []engine.ActivityInstance
	timers      []engine.Timer
	bookings    int
	completions int
	closed      map[int64]engine.WorkItem // with full: every item of the instance
}

// settleAndCheck waits for the engine to settle and compares the
// instances in touched (nil: all; full: all, and every closed work item)
// with the model. After an operation with an unknown outcome it picks
// the alternative the engine holds.
func (r *runner) settleAndCheck(touched []int, full bool) (string, error) {
	defer r.checking()()
	if problem, err := r.settle(); problem != "" || err != nil {
		return problem, err
	}
	if full {
		touched = nil
	}
	if touched == nil {
		touched = make([]int, len(r.w.insts))
		for i := range touched {
			touched[i] = i
		}
	}
	if r.alts != nil {
		return r.pick(touched, full)
	}
	if full {
		if p, err := r.checkDeployments(r.w); p != "" || err != nil {
			return p, err
		}
	}
	for _, i := range touched {
		o, err := r.observe(r.w.insts[i].id, full)
		if err != nil {
			return "", err
		}
		r.rep.Checks++
		if diffs := compare(r.w.insts[i], o, full, r.skew); len(diffs) > 0 {
			return fmt.Sprintf("instance p%d (id %d) differs from the model:\n    %s", i+1, r.w.insts[i].id, strings.Join(diffs, "\n    ")), nil
		}
	}
	return "", nil
}

// pick chooses the alternative world the engine holds after an
// operation with an unknown outcome.
func (r *runner) pick(touched []int, _ bool) (string, error) {
	alts := r.alts
	r.alts = nil
	var why []string
	for n, w := range alts {
		if p, err := r.checkDeployments(w); err != nil {
			return "", err
		} else if p != "" {
			why = append(why, fmt.Sprintf("alternative %d: %s", n, p))
			continue
		}
		ok := true
		for _, i := range touched {
			if i >= len(w.insts) {
				continue
			}
			// Every work item too: the alternatives of a race differ only
			// in who completed the item.
			o, err := r.observe(w.insts[i].id, true)
			if err != nil {
				return "", err
			}
			if diffs := compare(w.insts[i].clone(), o, true, r.skew); len(diffs) > 0 {
				why = append(why, fmt.Sprintf("alternative %d: p%d %s", n, i+1, strings.Join(diffs, "; ")))
				ok = false
				break
			}
		}
		if ok {
			r.w = w
			for _, i := range touched { // bind what the chosen world has seen
				if i < len(w.insts) {
					o, err := r.observe(w.insts[i].id, false)
					if err != nil {
						return "", err
					}
					compare(w.insts[i], o, false, r.skew)
				}
			}
			return "", nil
		}
	}
	return "after an operation with an unknown outcome the engine holds none of its possible outcomes:\n    " + strings.Join(why, "\n    "), nil
}

// checkDeployments compares the deployed versions with w's.
func (r *runner) checkDeployments(w *world) (string, error) {
	var vs []engine.Version
	err := r.read(func() (err error) { vs, err = r.e.Versions(r.ctx, PackageID); return err })
	if err != nil {
		return "", err
	}
	if len(vs) != len(w.deploys) {
		return fmt.Sprintf("%d versions deployed, the model has %d", len(vs), len(w.deploys)), nil
	}
	byVersion := map[int]int64{}
	for _, v := range vs {
		byVersion[v.Version] = v.ID
	}
	for n, d := range w.deploys {
		if d.version != n+1 || d.id != 0 && byVersion[d.version] != d.id {
			return fmt.Sprintf("versions %v are not the model's 1..%d", vs, len(w.deploys)), nil
		}
	}
	for n, d := range w.deploys {
		if d.id == 0 { // a deployment whose outcome was unknown: now it is
			w.deploys[n].id = byVersion[d.version]
		}
	}
	return "", nil
}

// observe reads what the engine holds of instance id.
func (r *runner) observe(id int64, full bool) (observed, error) {
	var o observed
	err := r.read(func() error {
		o = observed{}
		var err error
		if o.pi, err = r.e.Instance(r.ctx, id); err != nil {
			return fmt.Errorf("read instance %d: %w", id, err)
		}
		if o.vars, err = r.e.Variables(r.ctx, id); err != nil {
			return err
		}
		f := engine.WorkItemFilter{Instance: id, Limit: 1000}
		if !full {
			f.States = workitem.OpenStates
		}
		items, err := r.e.WorkItems(r.ctx, f)
		if err != nil {
			return err
		}
		o.closed = map[int64]engine.WorkItem{}
		for _, wi := range items.WorkItems {
			if slices.Contains(workitem.OpenStates, wi.State) {
				o.open = append(o.open, wi)
			} else {
				o.closed[wi.ID] = wi
			}
		}
		acts, err := r.e.Activities(r.ctx, engine.ActivityFilter{Instance: id, Limit: 1000,
			States: []wftype.ActivityState{wftype.ActivityAbnormal, wftype.ActivityInitiated, wftype.ActivityActive}})
		if err != nil {
			return err
		}
		for _, a := range acts.Activities {
			if a.State == wftype.ActivityAbnormal {
				o.abnormal = append(o.abnormal, a)
			} else {
				o.initiated = append(o.initiated, a)
			}
		}
		timers, err := r.e.Timers(r.ctx, engine.TimerFilter{Instance: id, Limit: 1000})
		if err != nil {
			return err
		}
		o.timers = timers.Timers
		if err := r.cfg.DB.WithContext(r.ctx).Raw("SELECT COUNT(*) FROM adversary_bookings WHERE instance_id = ?", id).Scan(&o.bookings).Error; err != nil {
			return err
		}
		f2 := engine.HistoryFilter{Instance: id, Limit: 1000}
		for {
			page, err := r.e.History(r.ctx, f2)
			if err != nil {
				return err
			}
			for _, h := range page.Entries {
				if h.Subject == engine.SubjectWorkItem && h.To == string(workitem.Completed) {
					o.completions++
				}
			}
			if page.Next == 0 {
				break
			}
			f2.After = page.Next
		}
		return nil
	})
	return o, err
}

// dueWithin says whether a deadline is due when the model says, or, when
// the run moved the clock on by skew to let failed events retry (faults),
// up to skew later; then the model takes the engine's due time.
func dueWithin(due time.Time, in *inst, skew time.Duration) bool {
	if due.Equal(in.due) {
		return true
	}
	if due.After(in.due) && !due.After(in.due.Add(skew)) {
		in.due = due
		return true
	}
	return false
}

// compare lists how o differs from in; it binds the ids in has not seen
// yet (a new work item's, an Abnormal activity's). skew is how far the run
// moved the clock on for retries (see dueWithin).
func compare(in *inst, o observed, full bool, skew time.Duration) []string {
	var d []string
	diff := func(format string, args ...any) { d = append(d, fmt.Sprintf(format, args...)) }
	if o.pi.State != in.state {
		diff("state %s, want %s (diagnosis %q)", o.pi.State, in.state, o.pi.Diagnosis)
	}
	if o.pi.DefinitionID != in.defID || o.pi.Version != in.version {
		diff("version %d (definition %d), want %d (definition %d)", o.pi.Version, o.pi.DefinitionID, in.version, in.defID)
	}
	if o.pi.BusinessKey != in.bkey {
		diff("business key %q, want %q", o.pi.BusinessKey, in.bkey)
	}
	if o.pi.StartKey != in.key {
		diff("start key %q, want %q", o.pi.StartKey, in.key)
	}
	if !reflect.DeepEqual(o.vars, in.vars) {
		diff("variables %#v, want %#v", o.vars, in.vars)
	}
	switch {
	case in.item == nil && len(o.open) > 0:
		diff("open work items %s, want none", items(o.open))
	case in.item != nil && len(o.open) != 1:
		diff("open work items %s, want one of %s", items(o.open), in.item.activity)
	case in.item != nil:
		wi, it := o.open[0], in.item
		if it.id == 0 {
			it.id, it.act = wi.ID, wi.ActivityInstance
		}
		want := engine.Principal{Kind: "role", ID: "clerk"}
		if it.offeredTo != "" {
			want = engine.Principal{Kind: "user", ID: it.offeredTo}
		}
		if wi.ID != it.id || wi.Activity != it.activity || wi.State != it.state || wi.Owner != it.owner ||
			wi.SuspendedFrom != it.from || len(wi.Assignees) != 1 || wi.Assignees[0] != want {
			diff("work item %s, want %d %s %s owner=%q from=%q offered to %v", items(o.open), it.id, it.activity, it.state, it.owner, it.from, want)
		}
	}
	switch {
	case in.abnormal && len(o.abnormal) != 1:
		diff("%d Abnormal activities, want Book", len(o.abnormal))
	case in.abnormal:
		if in.abnormalID == 0 {
			in.abnormalID = o.abnormal[0].ID
		}
		if o.abnormal[0].ID != in.abnormalID || o.abnormal[0].Activity != ActBook {
			diff("Abnormal activity %d %s, want %d Book", o.abnormal[0].ID, o.abnormal[0].Activity, in.abnormalID)
		}
	case len(o.abnormal) > 0:
		diff("Abnormal activity %s (%s), want none", o.abnormal[0].Activity, o.abnormal[0].Diagnosis)
	}
	switch {
	case in.pending && (len(o.initiated) != 1 || o.initiated[0].Activity != in.at || o.initiated[0].State != wftype.ActivityInitiated):
		diff("activities waiting to start %s, want %s", acts(o.initiated), in.at)
	case !in.pending && len(o.initiated) > 0:
		diff("activities waiting to start or running %s, want none", acts(o.initiated))
	}
	deadline := in.item != nil && in.at == ActReview && isOpen(in.state)
	switch {
	case !deadline && len(o.timers) > 0:
		diff("timers %v, want none", o.timers)
	case deadline && len(o.timers) != 1:
		diff("%d timers, want Review's deadline", len(o.timers))
	case deadline && in.state == wftype.ProcessRunning && (o.timers[0].State != engine.TimerPending || !dueWithin(o.timers[0].DueAt, in, skew)):
		diff("deadline %s due %s, want pending due %s", o.timers[0].State, o.timers[0].DueAt, in.due)
	case deadline && in.state == wftype.ProcessSuspended && o.timers[0].State != engine.TimerPaused:
		diff("deadline %s, want paused", o.timers[0].State)
	}
	if o.bookings != in.bookings {
		diff("%d bookings committed, want %d", o.bookings, in.bookings)
	}
	if o.completions != in.completions {
		diff("%d work item completions in the history, want %d", o.completions, in.completions)
	}
	if full {
		for _, ci := range in.closed {
			wi, ok := o.closed[ci.id]
			if !ok || wi.State != ci.state || (ci.state == workitem.Completed && wi.CompletedBy != ci.by) {
				diff("closed work item %d is %s by %q, want %s by %q", ci.id, wi.State, wi.CompletedBy, ci.state, ci.by)
			}
		}
		if len(o.closed) != len(in.closed) {
			diff("%d closed work items, want %d", len(o.closed), len(in.closed))
		}
	}
	return d
}

func items(wis []engine.WorkItem) string {
	parts := make([]string, len(wis))
	for i, wi := range wis {
		parts[i] = fmt.Sprintf("%d %s %s owner=%q from=%q offered to %v", wi.ID, wi.Activity, wi.State, wi.Owner, wi.SuspendedFrom, wi.Assignees)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func acts(as []engine.ActivityInstance) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = fmt.Sprintf("%d %s %s", a.ID, a.Activity, a.State)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// checkTotals compares what the whole database holds with the model: no
// booking of an instance the model does not know, none twice.
func (r *runner) checkTotals() string {
	var rows []struct {
		InstanceID int64
		N          int
	}
	err := r.read(func() error {
		return r.cfg.DB.WithContext(r.ctx).Raw("SELECT instance_id, COUNT(*) AS n FROM adversary_bookings GROUP BY instance_id").Scan(&rows).Error
	})
	if err != nil {
		return err.Error()
	}
	want := map[int64]int{}
	for _, in := range r.w.insts {
		if in.bookings > 0 {
			want[in.id] = in.bookings
		}
	}
	got := map[int64]int{}
	for _, row := range rows {
		got[row.InstanceID] = row.N
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("bookings by instance %v, want %v", got, want)
	}
	var dup int64
	err = r.read(func() error {
		return r.cfg.DB.WithContext(r.ctx).Raw("SELECT COUNT(*) FROM (SELECT call_key FROM adversary_bookings GROUP BY call_key HAVING COUNT(*) > 1) d").Scan(&dup).Error
	})
	if err != nil {
		return err.Error()
	}
	if dup > 0 {
		return fmt.Sprintf("%d application calls committed twice (the same idempotency key)", dup)
	}
	return ""
}
