package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// verification is what the verifier found in the engine's tables once the
// load is over.
type verification struct {
	// RootsExpected is how many root instances were asked for, Roots how
	// many exist, Instances how many instances (with subflows) exist and
	// Completed how many of them are Completed.
	RootsExpected int `json:"roots_expected"`
	Roots         int `json:"roots"`
	Instances     int `json:"instances"`
	Completed     int `json:"completed"`
	// ActivityInstances counts the activity instances.
	ActivityInstances int `json:"activity_instances"`

	// Lost is LostInstances + LostActivities + LostUpdates: roots never
	// created or instances not Completed; activities (or subflow
	// instances) a Completed instance should have run and did not; and
	// Completed instances whose counter missed a committed application
	// call.
	Lost           int `json:"lost"`
	LostInstances  int `json:"lost_instances"`
	LostActivities int `json:"lost_activities"`
	LostUpdates    int `json:"lost_updates"`

	// DuplicatedTransitions is the sum of the duplicates below:
	// activities instantiated more than once in an instance (of which
	// DuplicatedJoins are AND-joins), identical state transitions written
	// twice to the history, subflow activities with more than one child,
	// manual activities with more than one work item, and counters
	// incremented more often than the process has tool activities.
	DuplicatedTransitions int `json:"duplicated_transitions"`
	DuplicatedActivities  int `json:"duplicated_activities"`
	DuplicatedJoins       int `json:"duplicated_joins"`
	DuplicatedHistory     int `json:"duplicated_history"`
	DuplicatedSubflows    int `json:"duplicated_subflows"`
	DuplicatedWorkItems   int `json:"duplicated_work_items"`
	DuplicatedUpdates     int `json:"duplicated_updates"`

	// AppCalls counts the journaled application calls; DuplicateAppCalls
	// the repeats of an idempotency key (allowed: calls are
	// at-least-once); ReexecutedActivities the activity instances called
	// under more than one key (a new attempt); OrphanCalls the calls for
	// an activity instance that does not exist (its transaction was lost).
	AppCalls             int64 `json:"app_calls"`
	DuplicateAppCalls    int64 `json:"duplicate_app_calls"`
	ReexecutedActivities int   `json:"reexecuted_activities"`
	OrphanCalls          int64 `json:"orphan_calls"`

	Checks []check `json:"checks"`
}

// check is one of the verifier's checks.
type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// passed reports whether every check passed.
func (v *verification) passed() bool {
	for _, c := range v.Checks {
		if !c.OK {
			return false
		}
	}
	return v.Lost == 0 && v.DuplicatedTransitions == 0
}

// The rows the verifier reads.
type (
	piRow struct {
		ID               int64
		ProcessDefID     string
		ParentInstanceID *int64
		ParentActivityID *int64
		State            string
	}
	aiRow struct {
		ID                int64
		ProcessInstanceID int64
		ActivityDefID     string
		State             string
	}
	wiRow struct {
		ID                 int64
		ProcessInstanceID  int64
		ActivityInstanceID int64
		State              string
	}
	histDup struct {
		Subject            string
		ProcessInstanceID  int64
		ActivityInstanceID *int64
		WorkItemID         *int64
		FromState          string
		ToState            string
		N                  int
	}
	// historyRow is a row of goxpdl_history: one transition, or a run
	// of them with the states between in via (store/gormstore/history.go).
	historyRow struct {
		Subject            string
		ProcessInstanceID  int64
		ActivityInstanceID *int64
		WorkItemID         *int64
		FromState          string
		Via                string
		ToState            string
	}
	countRow struct {
		ID int64
		N  int
	}
	varRow struct {
		ProcessInstanceID int64
		Value             []byte
	}
)

// tables is everything the verifier reads, read up front.
type tables struct {
	pis         []piRow
	ais         []aiRow
	wis         []wiRow
	histDups    []histDup
	completions map[int64]int // activity instance -> transitions to Completed
	counters    map[int64][]byte
	timers      map[int64]int // process instance -> pending or paused timers
	unprocessed int64
	calls       []callCount
}

func readTables(ctx context.Context, db, jdb *gorm.DB) (*tables, error) {
	t := &tables{}
	q := db.WithContext(ctx)
	read := func(what string, dest any, sql string, args ...any) error {
		if err := q.Raw(sql, args...).Scan(dest).Error; err != nil {
			return fmt.Errorf("verify: read %s: %w", what, err)
		}
		return nil
	}
	var timers []countRow
	var history []historyRow
	var counters []varRow
	steps := []error{
		read("process instances", &t.pis, "SELECT id, process_def_id, parent_instance_id, parent_activity_id, state FROM goxpdl_process_instances"),
		read("activity instances", &t.ais, "SELECT id, process_instance_id, activity_def_id, state FROM goxpdl_activity_instances"),
		read("work items", &t.wis, "SELECT id, process_instance_id, activity_instance_id, state FROM goxpdl_work_items"),
		read("history", &history, `SELECT subject, process_instance_id, activity_instance_id, work_item_id, from_state, via, to_state
			FROM goxpdl_history ORDER BY id`),
		read("counters", &counters, "SELECT process_instance_id, value FROM goxpdl_variables WHERE name = ?", counterVar),
		read("timers", &timers, "SELECT process_instance_id AS id, COUNT(*) AS n FROM goxpdl_timers WHERE state IN ? GROUP BY process_instance_id",
			[]string{string(store.TimerPending), string(store.TimerPaused)}),
		read("events", &t.unprocessed, "SELECT COUNT(*) FROM goxpdl_events WHERE processed_at IS NULL"),
	}
	for _, err := range steps {
		if err != nil {
			return nil, err
		}
	}
	t.histDups, t.completions = transitions(history)
	t.timers = make(map[int64]int, len(timers))
	for _, c := range timers {
		t.timers[c.ID] = c.N
	}
	t.counters = make(map[int64][]byte, len(counters))
	for _, c := range counters {
		t.counters[c.ProcessInstanceID] = c.Value
	}
	var err error
	if t.calls, err = readCalls(ctx, jdb); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return t, nil
}

// verify checks the engine's tables (db) and the call journal (jdb) after
// a run of l that asked for roots root instances.
func verify(ctx context.Context, db, jdb *gorm.DB, l *load, roots int) (verification, error) {
	t, err := readTables(ctx, db, jdb)
	if err != nil {
		return verification{}, err
	}
	v := verification{RootsExpected: roots, Instances: len(t.pis), ActivityInstances: len(t.ais)}
	ck := newChecker()

	pis := make(map[int64]piRow, len(t.pis))
	children := make(map[int64]int) // subflow activity instance -> child instances
	for _, pi := range t.pis {
		pis[pi.ID] = pi
		if pi.ParentInstanceID == nil {
			v.Roots++
		}
		if pi.ParentActivityID != nil {
			children[*pi.ParentActivityID]++
		}
	}
	acts := make(map[int64]map[string][]aiRow) // instance -> activity id -> instances
	aiByID := make(map[int64]aiRow, len(t.ais))
	for _, ai := range t.ais {
		if acts[ai.ProcessInstanceID] == nil {
			acts[ai.ProcessInstanceID] = make(map[string][]aiRow)
		}
		acts[ai.ProcessInstanceID][ai.ActivityDefID] = append(acts[ai.ProcessInstanceID][ai.ActivityDefID], ai)
		aiByID[ai.ID] = ai
	}
	items := make(map[int64][]wiRow) // activity instance -> work items
	for _, wi := range t.wis {
		items[wi.ActivityInstanceID] = append(items[wi.ActivityInstanceID], wi)
	}

	// Instances: every root asked for exists and every instance completed.
	ck.ok("instances")
	if v.Roots < roots {
		v.LostInstances += roots - v.Roots
		ck.fail("instances", "%d of %d root instances were never created", roots-v.Roots, roots)
	} else if v.Roots > roots {
		ck.fail("instances", "%d root instances exist, %d were asked for", v.Roots, roots)
	}
	states := make(map[string]int)
	for _, pi := range t.pis {
		states[pi.State]++
		if pi.State == string(wftype.ProcessCompleted) {
			v.Completed++
			continue
		}
		v.LostInstances++
		ck.fail("instances", "instance %d (%s) is %s", pi.ID, pi.ProcessDefID, pi.State)
	}
	ck.detail("instances", "%d roots of %d; %d instances: %s", v.Roots, roots, len(t.pis), countsText(states))

	// Activities: each instance of a Completed process ran what its plan
	// says, once.
	ck.ok("activities once per instance")
	ck.ok("AND-joins once per instance")
	ck.ok("subflows")
	ck.ok("work items")
	ck.ok("counter")
	var planned, joins, subflows, manual, counters int
	for _, pi := range t.pis {
		plan := l.procs[pi.ProcessDefID]
		if plan == nil {
			ck.fail("activities once per instance", "instance %d is of process %s, which the load does not define", pi.ID, pi.ProcessDefID)
			continue
		}
		if pi.State != string(wftype.ProcessCompleted) {
			continue // counted lost as a whole
		}
		byDef := acts[pi.ID]
		set := plan.activitySet()
		planned += len(plan.activities)
		joins += len(plan.joins)
		counters++
		for def, optional := range set {
			n := len(byDef[def])
			switch {
			case n == 0 && !optional:
				v.LostActivities++
				ck.fail("activities once per instance", "instance %d (%s) completed without running %s", pi.ID, pi.ProcessDefID, def)
			case n > 1:
				v.DuplicatedActivities += n - 1
				ck.fail("activities once per instance", "instance %d (%s) ran %s %d times", pi.ID, pi.ProcessDefID, def, n)
				if slices.Contains(plan.joins, def) {
					v.DuplicatedJoins += n - 1
					ck.fail("AND-joins once per instance", "instance %d (%s): AND-join %s instantiated %d times", pi.ID, pi.ProcessDefID, def, n)
				}
			}
		}
		for def, ais := range byDef {
			if _, ok := set[def]; !ok {
				ck.fail("activities once per instance", "instance %d (%s) ran %s (%d times), which it should not reach", pi.ID, pi.ProcessDefID, def, len(ais))
			}
		}
		for _, def := range plan.subflows {
			for _, ai := range byDef[def] {
				subflows++
				switch n := children[ai.ID]; {
				case n == 0:
					v.LostActivities++
					ck.fail("subflows", "instance %d: subflow activity %s (%d) completed without a child instance", pi.ID, def, ai.ID)
				case n > 1:
					v.DuplicatedSubflows += n - 1
					ck.fail("subflows", "instance %d: subflow activity %s (%d) started %d child instances", pi.ID, def, ai.ID, n)
				}
			}
		}
		for _, def := range plan.manual {
			for _, ai := range byDef[def] {
				manual++
				switch wis := items[ai.ID]; {
				case len(wis) == 0:
					ck.fail("work items", "instance %d: manual activity %s (%d) has no work item", pi.ID, def, ai.ID)
				case len(wis) > 1:
					v.DuplicatedWorkItems += len(wis) - 1
					ck.fail("work items", "instance %d: manual activity %s (%d) has %d work items", pi.ID, def, ai.ID, len(wis))
				case wis[0].State != string(workitem.Completed):
					ck.fail("work items", "instance %d: the work item %d of %s is %s", pi.ID, wis[0].ID, def, wis[0].State)
				}
			}
		}
		want := int64(len(plan.tools))
		switch got, err := counterValue(t.counters[pi.ID]); {
		case err != nil:
			ck.fail("counter", "instance %d: %v", pi.ID, err)
		case got < want:
			v.LostUpdates++
			ck.fail("counter", "instance %d (%s): %s is %d after %d tool activities: an update was lost", pi.ID, pi.ProcessDefID, counterVar, got, want)
		case got > want:
			v.DuplicatedUpdates++
			ck.fail("counter", "instance %d (%s): %s is %d after %d tool activities: an update was applied twice", pi.ID, pi.ProcessDefID, counterVar, got, want)
		}
	}

	ck.detail("activities once per instance", "%d Completed instances, %d planned activity runs", v.Completed, planned)
	ck.detail("AND-joins once per instance", "%d AND-joins planned", joins)
	ck.detail("subflows", "%d subflow activities, one child instance each", subflows)
	ck.detail("work items", "%d manual activities, one Completed work item each", manual)
	ck.detail("counter", "%d Completed instances' %s equals their number of tool activities", counters, counterVar)

	// Activity instances: Completed, with exactly one transition to
	// Completed in the history.
	ck.ok("activities completed")
	ck.ok("completed once in the history")
	actStates := make(map[string]int)
	for _, ai := range t.ais {
		actStates[ai.State]++
		if ai.State != string(wftype.ActivityCompleted) {
			if pi := pis[ai.ProcessInstanceID]; pi.State == string(wftype.ProcessCompleted) {
				ck.fail("activities completed", "activity %s (%d) of Completed instance %d is %s", ai.ActivityDefID, ai.ID, ai.ProcessInstanceID, ai.State)
			}
			continue
		}
		if n := t.completions[ai.ID]; n != 1 {
			ck.fail("completed once in the history", "activity %s (%d) of instance %d has %d transitions to Completed", ai.ActivityDefID, ai.ID, ai.ProcessInstanceID, n)
		}
	}
	ck.detail("activities completed", "%d activity instances: %s", len(t.ais), countsText(actStates))
	ck.detail("completed once in the history", "%d transitions to Completed for %d Completed activity instances",
		sumValues(t.completions), actStates[string(wftype.ActivityCompleted)])

	// History: no transition written twice.
	ck.ok("no duplicated transitions")
	for _, h := range t.histDups {
		v.DuplicatedHistory += h.N - 1
		what := h.Subject
		switch {
		case h.WorkItemID != nil:
			what += fmt.Sprintf(" work item %d", *h.WorkItemID)
		case h.ActivityInstanceID != nil:
			what += fmt.Sprintf(" activity %d", *h.ActivityInstanceID)
		}
		ck.fail("no duplicated transitions", "instance %d: %s went %q -> %q %d times", h.ProcessInstanceID, what, h.FromState, h.ToState, h.N)
	}

	ck.detail("no duplicated transitions", "no state transition of an instance, activity or work item is in the history twice")

	// Open work items, pending timers, unprocessed events.
	ck.ok("no open work items")
	ck.detail("no open work items", "%d work items", len(t.wis))
	for _, wi := range t.wis {
		if slices.Contains(workitem.OpenStates, workitem.State(wi.State)) {
			ck.fail("no open work items", "work item %d of instance %d is %s", wi.ID, wi.ProcessInstanceID, wi.State)
		}
	}
	ck.ok("no timers of finished instances")
	ck.detail("no timers of finished instances", "%d pending or paused timers in all", sumValues(t.timers))
	for id, n := range t.timers {
		if pi, ok := pis[id]; !ok || wftype.ProcessState(pi.State).IsFinal() {
			ck.fail("no timers of finished instances", "instance %d (%s) has %d pending or paused timers", id, pi.State, n)
		}
	}
	ck.ok("no unprocessed events")
	ck.detail("no unprocessed events", "every event of the outbox is processed")
	if t.unprocessed > 0 {
		ck.fail("no unprocessed events", "%d events are not processed", t.unprocessed)
	}

	verifyCalls(&v, ck, t, l, pis, aiByID)

	v.Lost = v.LostInstances + v.LostActivities + v.LostUpdates
	v.DuplicatedTransitions = v.DuplicatedActivities + v.DuplicatedHistory + v.DuplicatedSubflows + v.DuplicatedWorkItems + v.DuplicatedUpdates
	v.Checks = ck.list()
	return v, nil
}

// verifyCalls checks the journal against the tool activities: each
// Completed one was called at least once, and an idempotency key names
// one activity.
func verifyCalls(v *verification, ck *checker, t *tables, l *load, pis map[int64]piRow, aiByID map[int64]aiRow) {
	ck.ok("application called")
	ck.ok("idempotency keys name one activity")
	calls := make(map[int64]int64)              // activity instance -> calls
	keys := make(map[int64]map[string]bool)     // activity instance -> keys
	keyActs := make(map[string]map[string]bool) // key -> activity ids
	for _, c := range t.calls {
		v.AppCalls += c.Calls
		calls[c.ActivityInstanceID] += c.Calls
		if keys[c.ActivityInstanceID] == nil {
			keys[c.ActivityInstanceID] = make(map[string]bool)
		}
		keys[c.ActivityInstanceID][c.IdempotencyKey] = true
		if keyActs[c.IdempotencyKey] == nil {
			keyActs[c.IdempotencyKey] = make(map[string]bool)
		}
		keyActs[c.IdempotencyKey][c.ActivityDefID] = true
		ai, ok := aiByID[c.ActivityInstanceID]
		switch {
		case !ok:
			v.OrphanCalls += c.Calls
		case ai.ActivityDefID != c.ActivityDefID:
			ck.fail("idempotency keys name one activity", "key %s was called for %s, but activity instance %d is %s now",
				c.IdempotencyKey, c.ActivityDefID, ai.ID, ai.ActivityDefID)
		}
	}
	dups := make(map[string]int64)
	for _, c := range t.calls {
		dups[c.IdempotencyKey] += c.Calls
	}
	for key, n := range dups {
		v.DuplicateAppCalls += n - 1
		if len(keyActs[key]) > 1 {
			ck.fail("idempotency keys name one activity", "key %s was called for %d activities: %s", key, len(keyActs[key]), strings.Join(sortedKeys(keyActs[key]), ", "))
		}
	}
	for _, ks := range keys {
		if len(ks) > 1 {
			v.ReexecutedActivities++
		}
	}
	for _, ai := range aiByID {
		pi := pis[ai.ProcessInstanceID]
		plan := l.procs[pi.ProcessDefID]
		if plan == nil || ai.State != string(wftype.ActivityCompleted) || !slices.Contains(plan.tools, ai.ActivityDefID) {
			continue
		}
		if calls[ai.ID] == 0 {
			ck.fail("application called", "tool activity %s (%d) of instance %d completed without a journaled call", ai.ActivityDefID, ai.ID, ai.ProcessInstanceID)
		}
	}
	ck.detail("application called", "%d calls, %d repeats of a key, %d activity instances called under several keys, %d calls for activity instances that do not exist",
		v.AppCalls, v.DuplicateAppCalls, v.ReexecutedActivities, v.OrphanCalls)
	ck.detail("idempotency keys name one activity", "%d keys", len(dups))
}

func sumValues(m map[int64]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// counterValue reads the counter variable as stored (JSON).
func counterValue(raw []byte) (int64, error) {
	if raw == nil {
		return 0, fmt.Errorf("no variable %s", counterVar)
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("variable %s holds %q: %w", counterVar, raw, err)
	}
	return n, nil
}

// maxExamples is how many failures a check lists; it counts the rest.
const maxExamples = 5

// checker collects the checks in the order they are first named.
type checker struct {
	order  []string
	checks map[string]*checkState
}

type checkState struct {
	failures int
	examples []string
	detail   string
}

func newChecker() *checker { return &checker{checks: make(map[string]*checkState)} }

func (c *checker) get(name string) *checkState {
	s := c.checks[name]
	if s == nil {
		s = &checkState{}
		c.checks[name] = s
		c.order = append(c.order, name)
	}
	return s
}

// ok names a check, which passes unless it fails.
func (c *checker) ok(name string) { c.get(name) }

// fail records a failure of a check.
func (c *checker) fail(name, format string, args ...any) {
	s := c.get(name)
	s.failures++
	if len(s.examples) < maxExamples {
		s.examples = append(s.examples, fmt.Sprintf(format, args...))
	}
}

// detail sets what a passing check says.
func (c *checker) detail(name, format string, args ...any) {
	c.get(name).detail = fmt.Sprintf(format, args...)
}

func (c *checker) list() []check {
	out := make([]check, 0, len(c.order))
	for _, name := range c.order {
		s := c.checks[name]
		ch := check{Name: name, OK: s.failures == 0, Detail: s.detail}
		if s.failures > 0 {
			text := fmt.Sprintf("%d failures: %s", s.failures, strings.Join(s.examples, "; "))
			if s.failures > len(s.examples) {
				text += "; ..."
			}
			if s.detail != "" {
				text += " (" + s.detail + ")"
			}
			ch.Detail = text
		}
		out = append(out, ch)
	}
	return out
}

// countsText prints counts by name, in name order: "Completed 3, Running 1".
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// transitions counts the transitions the history rows hold: those
// written more than once, and each activity instance's transitions to
// Completed.
func transitions(rows []historyRow) (dups []histDup, completions map[int64]int) {
	type key struct {
		subject        string
		instance       int64
		activity, item int64 // 0: none
		from, to       string
	}
	orZero := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	seen := map[key]int{}
	var order []key
	completions = map[int64]int{}
	for _, r := range rows {
		states := []string{r.ToState}
		if r.Via != "" {
			states = append(strings.Split(r.Via, ","), r.ToState)
		}
		from := r.FromState
		for _, to := range states {
			k := key{r.Subject, r.ProcessInstanceID, orZero(r.ActivityInstanceID), orZero(r.WorkItemID), from, to}
			if seen[k] == 0 {
				order = append(order, k)
			}
			seen[k]++
			if r.Subject == store.SubjectActivity && to == string(wftype.ActivityCompleted) && r.ActivityInstanceID != nil {
				completions[*r.ActivityInstanceID]++
			}
			from = to
		}
	}
	for _, k := range order {
		if n := seen[k]; n > 1 {
			d := histDup{Subject: k.subject, ProcessInstanceID: k.instance, FromState: k.from, ToState: k.to, N: n}
			if k.activity != 0 {
				d.ActivityInstanceID = &k.activity
			}
			if k.item != 0 {
				d.WorkItemID = &k.item
			}
			dups = append(dups, d)
		}
	}
	return dups, completions
}
