package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// ErrCannotMigrate: a process instance cannot move to the version asked
// for, and nothing was changed. The *MigrationError lists why.
var ErrCannotMigrate = errors.New("instance cannot be migrated")

// MigrationError says why an instance cannot be migrated: every problem
// found, not only the first. It matches ErrCannotMigrate.
type MigrationError struct {
	// Instance is the process instance.
	Instance int64
	// Problems are the reasons, each in words for an operator.
	Problems []string
}

func (e *MigrationError) Error() string {
	return fmt.Sprintf("process instance %d cannot be migrated: %s", e.Instance, strings.Join(e.Problems, "; "))
}

// Is matches ErrCannotMigrate.
func (e *MigrationError) Is(target error) bool { return target == ErrCannotMigrate }

// Migration says where to move a process instance: to another deployed
// version of its package, the same process in it.
type Migration struct {
	// To is the deployment to move to (Deployment.ID).
	To int64
	// Activities maps activity ids of the instance's version to activity
	// ids of the new one; an activity not named keeps its id.
	Activities map[string]string
	// Variables are set in the same step, after the move (a variable the
	// new version adds, or one whose meaning changed).
	Variables Values
}

// MigrationPlan is what a migration does to one instance.
type MigrationPlan struct {
	// Instance is the process instance.
	Instance int64 `json:"instance"`
	// Process is its process id, in both versions.
	Process string `json:"process"`
	// From and To are the deployments it moves between; FromVersion and
	// ToVersion their package versions.
	From        int64 `json:"from"`
	FromVersion int   `json:"fromVersion"`
	To          int64 `json:"to"`
	ToVersion   int   `json:"toVersion"`
	// Activities are its open activity instances and where each goes.
	Activities []ActivityMapping `json:"activities"`
	// NewVariables are the variables the new version declares that the
	// instance does not have; they start with their initial values.
	NewVariables []string `json:"newVariables,omitempty"`
}

// ActivityMapping is one open activity instance of a migration plan.
type ActivityMapping struct {
	// ActivityInstance is the activity instance; it keeps its id, state,
	// work items and timers.
	ActivityInstance int64 `json:"activityInstance"`
	// From and To are its activity ids in the old and the new version.
	From string `json:"from"`
	To   string `json:"to"`
}

// Version is a deployed version of a package with how many instances
// run from it.
type Version struct {
	Deployment
	// Instances counts the instances of each state that run, or ran,
	// from this version.
	Instances map[wftype.ProcessState]int64 `json:"instances"`
}

// Open is how many of its instances have not ended.
func (v Version) Open() int64 {
	var n int64
	for s, c := range v.Instances {
		if !s.IsFinal() {
			n += c
		}
	}
	return n
}

// Versions lists the deployed versions of a package, oldest first, with
// their instance counts; every package's when packageID is "".
func (e *Engine) Versions(ctx context.Context, packageID string) ([]Version, error) {
	deps, err := e.Deployments(ctx)
	if err != nil {
		return nil, err
	}
	counts, err := e.store.CountProcessInstancesByDefinition(ctx)
	if err != nil {
		return nil, err
	}
	var out []Version
	for _, d := range deps {
		if packageID != "" && d.PackageID != packageID {
			continue
		}
		v := Version{Deployment: d, Instances: map[wftype.ProcessState]int64{}}
		for s, n := range counts[d.ID] {
			v.Instances[wftype.ProcessState(s)] = n
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Version) int {
		if c := strings.Compare(a.PackageID, b.PackageID); c != 0 {
			return c
		}
		return a.Version - b.Version
	})
	return out, nil
}

// PlanMigration says what Migrate would do to a process instance, or why
// it cannot, changing nothing: the same checks Migrate makes.
func (e *Engine) PlanMigration(ctx context.Context, instance int64, m Migration) (MigrationPlan, error) {
	r := e.newRun(ctx, e.store, "")
	if err := r.load(instance); err != nil {
		return MigrationPlan{}, err
	}
	p, err := r.planMigration(m)
	return p.MigrationPlan, err
}

// Migrate moves a running process instance to another version of its
// definition (Migration.To): its open activity instances, with their
// work items, timers and messages, become instances of the mapped
// activities of the new version; arrivals waiting at joins wait at the
// mapped joins; variables keep their values and the new version's new
// variables start with their initial values. The instance is Running,
// Suspended or Locking and stays so; it is the same instance (id,
// history, business data), recorded as process.migrated with the actor
// and reason. A subflow instance it started keeps running from the
// version it started with.
//
// Everything is checked before anything changes, and all of it holds or
// nothing is done: it refuses with a *MigrationError (ErrCannotMigrate)
// listing every problem: a version of another package, a new version
// without the process, an open activity mapped to an activity that is not
// in the new version, is of another kind or in another scope (the top
// level, or the same activity set), or is a loop where the old was not;
// an activity with pending deadlines whose count changes, or with a
// timer event renamed; arrivals at a join whose transition the new
// version lacks; a variable the new version drops or whose value does
// not fit its new type. A finished instance is refused with a
// *wftype.StateError, an unknown deployment with ErrNotFound.
func (e *Engine) Migrate(ctx context.Context, instance int64, m Migration, op Op) error {
	return e.MigrateTx(ctx, nil, instance, m, op)
}

// MigrateTx is Migrate inside the host's transaction tx (nil: its own).
func (e *Engine) MigrateTx(ctx context.Context, tx *gorm.DB, instance int64, m Migration, op Op) error {
	return e.command(ctx, tx, instance, op, audited{action: AuditMigrate}, func(r *run) error {
		p, err := r.planMigration(m)
		if err != nil {
			return err
		}
		return r.migrate(p, m)
	})
}

// migrationPlan is a checked plan with what applying it needs.
type migrationPlan struct {
	MigrationPlan
	dep    *deployment
	proc   *xpdl.Process
	defs   map[*act]*xpdl.Activity
	flows  map[*act]*xpdl.Flow
	rename map[string]string // old activity id -> new, for every id that changes
	vars   map[string]any    // every variable, coerced to its new type
}

// planMigration checks a migration of the loaded instance and plans it.
func (r *run) planMigration(m Migration) (migrationPlan, error) {
	switch s := r.state(); s {
	case wftype.ProcessRunning, wftype.ProcessSuspended, wftype.ProcessLocking:
	default:
		return migrationPlan{}, &wftype.StateError{Subject: "process", State: r.pi.State, Command: "migrate", Finished: s.IsFinal()}
	}
	dep, err := r.snap.definition(m.To)
	if errors.Is(err, store.ErrNotFound) {
		return migrationPlan{}, notFound("definition", m.To)
	} else if err != nil {
		return migrationPlan{}, err
	}
	p := migrationPlan{
		MigrationPlan: MigrationPlan{
			Instance: r.pi.ID, Process: r.pi.ProcessDefID,
			From: r.dep.def.ID, FromVersion: r.dep.def.Version, To: dep.def.ID, ToVersion: dep.def.Version,
		},
		dep: dep, defs: map[*act]*xpdl.Activity{}, flows: map[*act]*xpdl.Flow{}, rename: map[string]string{},
	}
	var problems []string
	refuse := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch {
	case dep.def.PackageID != r.dep.def.PackageID:
		refuse("definition %d is package %s, not %s: an instance migrates between versions of its own package", m.To, dep.def.PackageID, r.dep.def.PackageID)
	case dep.def.ID == r.dep.def.ID:
		refuse("the instance already runs from definition %d", m.To)
	}
	if p.proc = dep.pkg.Process(r.pi.ProcessDefID); p.proc == nil {
		refuse("version %d of %s has no process %s", dep.def.Version, dep.def.PackageID, r.pi.ProcessDefID)
		return migrationPlan{}, &MigrationError{Instance: r.pi.ID, Problems: problems}
	}
	for _, old := range slices.Sorted(maps.Keys(m.Activities)) {
		if activityOf(r.proc, old) == nil {
			refuse("the mapping names activity %s, which process %s of version %d does not have", old, r.proc.ID, r.dep.def.Version)
		}
		if to := m.Activities[old]; activityOf(p.proc, to) == nil {
			refuse("the mapping sends %s to activity %s, which process %s of version %d does not have", old, to, p.proc.ID, dep.def.Version)
		} else if to != old {
			p.rename[old] = to
		}
	}
	mapped := func(id string) string {
		if to, ok := m.Activities[id]; ok {
			return to
		}
		return id
	}
	timers, err := r.snap.instanceTimers()
	if err != nil {
		return migrationPlan{}, err
	}
	for _, a := range r.acts {
		if a.row.State == string(wftype.ActivityCompleted) {
			continue
		}
		to := mapped(a.def.ID)
		p.Activities = append(p.Activities, ActivityMapping{ActivityInstance: a.row.ID, From: a.def.ID, To: to})
		f := &p.proc.Flow
		where := "the top level"
		if a.row.ActivitySetID != "" {
			where = "activity set " + a.row.ActivitySetID
			set := p.proc.ActivitySet(a.row.ActivitySetID)
			if set == nil {
				refuse("activity instance %d (%s) runs in activity set %s, which version %d does not have", a.row.ID, a.def.ID, a.row.ActivitySetID, dep.def.Version)
				continue
			}
			f = &set.Flow
		}
		def := f.Activity(to)
		if def == nil {
			refuse("open activity instance %d (%s) would go to %s, which is not in %s of version %d: map it to an activity there", a.row.ID, a.def.ID, to, where, dep.def.Version)
			continue
		}
		if def.Kind != a.def.Kind {
			refuse("open activity instance %d (%s, %s) would become %s, a %s activity", a.row.ID, a.def.ID, a.def.Kind, to, def.Kind)
		}
		if (def.Loop == nil) != (a.def.Loop == nil) {
			refuse("open activity instance %d (%s) would go to %s, which loops where the old one did not, or the other way round", a.row.ID, a.def.ID, to)
		}
		if a.def.Kind == xpdl.ActivityBlock && def.Block != nil && a.def.Block != nil && def.Block.ActivitySet != a.def.Block.ActivitySet {
			refuse("open block activity instance %d (%s) runs activity set %s; %s of version %d runs %s", a.row.ID, a.def.ID, a.def.Block.ActivitySet, to, dep.def.Version, def.Block.ActivitySet)
		}
		for _, t := range timers {
			if t.ActivityInstanceID != a.row.ID || t.State == store.TimerFired {
				continue
			}
			switch t.Kind {
			case timerDeadline:
				if len(def.Deadlines) != len(a.def.Deadlines) {
					refuse("activity instance %d (%s) has pending deadlines; %s of version %d has %d deadlines, not %d", a.row.ID, a.def.ID, to, dep.def.Version, len(def.Deadlines), len(a.def.Deadlines))
				}
			case timerEvent, timerBoundary:
				if to != a.def.ID {
					refuse("activity instance %d (%s) waits for a timer: it cannot be renamed to %s", a.row.ID, a.def.ID, to)
				}
			}
		}
		p.defs[a], p.flows[a] = def, f
	}
	r.tokens.Arrivals(func(block, join, transition string) {
		f := &p.proc.Flow
		if block != "" && block != "0" {
			if blockAct := r.blockAct(block); blockAct != nil && blockAct.def.Block != nil {
				if set := p.proc.ActivitySet(blockAct.def.Block.ActivitySet); set != nil {
					f = &set.Flow
				}
			}
		}
		to := mapped(join)
		if f.Activity(to) == nil {
			refuse("arrivals wait at join %s, which is not in version %d: map it", join, dep.def.Version)
			return
		}
		for _, t := range f.Incoming(to) {
			if t.ID == transition {
				return
			}
		}
		refuse("an arrival over transition %s waits at join %s; in version %d no transition %s leads to %s", transition, join, dep.def.Version, transition, to)
	})
	if err := p.checkVariables(r, refuse); err != nil {
		return migrationPlan{}, err
	}
	if len(problems) > 0 {
		return migrationPlan{}, &MigrationError{Instance: r.pi.ID, Problems: problems}
	}
	return p, nil
}

// checkVariables checks that every variable of the instance fits its
// declaration in the new version, and lists the new ones.
func (p *migrationPlan) checkVariables(r *run, refuse func(string, ...any)) error {
	vars, err := r.variables()
	if err != nil {
		return err
	}
	decls := declarations(p.dep.pkg, p.proc)
	p.vars = make(map[string]any, len(decls))
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		d, ok := decls[name]
		if !ok {
			refuse("variable %s is not declared in version %d: its value would be lost", name, p.dep.def.Version)
			continue
		}
		c, err := d.typ.coerce(name, vars[name])
		if err != nil {
			refuse("variable %s: its value %v does not fit its type in version %d (%s)", name, vars[name], p.dep.def.Version, d.typ.name())
			continue
		}
		p.vars[name] = c
	}
	initial, err := initialValues(decls, nil)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(decls)) {
		if _, ok := vars[name]; !ok {
			p.NewVariables = append(p.NewVariables, name)
			p.vars[name] = initial[name]
		}
	}
	return nil
}

// blockAct is the loaded block activity instance whose id the scope key
// block names.
func (r *run) blockAct(block string) *act {
	for _, a := range r.acts {
		if fmt.Sprint(a.row.ID) == block {
			return a
		}
	}
	return nil
}

// activityOf finds an activity anywhere in a process: its top level or
// one of its activity sets.
func activityOf(proc *xpdl.Process, id string) *xpdl.Activity {
	for _, f := range proc.Flows() {
		if a := f.Activity(id); a != nil {
			return a
		}
	}
	return nil
}

// migrate applies a checked plan to the loaded instance.
func (r *run) migrate(p migrationPlan, m Migration) error {
	r.tokens.Rename(func(id string) string {
		if to, ok := p.rename[id]; ok {
			return to
		}
		return id
	})
	tokens := r.tokens.Encode()
	activities := make(map[int64]string, len(p.Activities))
	for _, am := range p.Activities {
		activities[am.ActivityInstance] = am.To
	}
	// Written at flush, before the instance's update (flushMigration).
	r.migration = &store.MigrateProcessInstanceParams{
		ID: r.pi.ID, DefinitionID: p.dep.def.ID, ProcessDefID: p.proc.ID,
		Tokens: tokens, Activities: activities, Renamed: p.rename, UpdatedAt: r.now,
	}
	r.pi.DefinitionID, r.pi.Tokens, r.pi.UpdatedAt = p.dep.def.ID, tokens, r.now
	r.dep, r.proc = p.dep, p.proc
	for a, def := range p.defs {
		a.def, a.row.ActivityDefID = def, def.ID
		a.scope.Flow = p.flows[a]
	}
	r.decls = declarations(r.dep.pkg, r.proc)
	for name, v := range p.vars {
		r.vars[name] = v
		if r.dirtyVars == nil {
			r.dirtyVars = make(map[string]bool)
		}
		r.dirtyVars[name] = true
	}
	if err := r.setOperatorValues(m.Variables); err != nil {
		return err
	}
	diagnosis := fmt.Sprintf("migrated from version %d (definition %d) to version %d (definition %d)",
		p.FromVersion, p.From, p.ToVersion, p.To)
	r.history = append(r.history, store.HistoryEntry{
		ProcessInstanceID: r.pi.ID, Subject: store.SubjectProcess, FromState: r.pi.State, ToState: r.pi.State,
		Actor: r.actor, At: r.now, Data: mustJSON(migrationDetail{
			Diagnosis: diagnosis, Reason: r.op.Reason, Data: r.op.Data,
			From: p.From, To: p.To, Activities: p.rename,
		}),
	})
	r.record(Record{Type: RecordProcessMigrated, State: r.pi.State, Detail: diagnosis, User: r.actor})
	return nil
}

// flushMigration writes the migration the run decided (migrate): the
// instance moves to its new definition at the version the run read it
// at, its activity instances, work items, subscriptions and inbox
// messages follow, and the instance's update (flush) is fenced by the
// version this gives it.
func (r *run) flushMigration() error {
	if r.migration == nil {
		return nil
	}
	m := *r.migration
	m.ExpectedVersion = r.pi.Version
	v, err := r.tx.MigrateProcessInstance(r.ctx, m)
	if err != nil {
		return err
	}
	r.pi.Version, r.migration = v, nil
	return nil
}

// migrationDetail is the detail of a migration's history entry.
type migrationDetail struct {
	Diagnosis  string            `json:"diagnosis"`
	Reason     string            `json:"reason,omitempty"`
	Data       map[string]any    `json:"data,omitempty"`
	From       int64             `json:"fromDefinition"`
	To         int64             `json:"toDefinition"`
	Activities map[string]string `json:"renamed,omitempty"`
}
