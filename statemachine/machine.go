package statemachine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/internal/jsonnum"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl"
)

// HostUser is who resumes a bookmark when ResumeOpts.User is empty: the
// host's own code. A state whose work is offered to people (Performers,
// Assign) is resumed by one of them, as the engine's work-item rules say.
const HostUser = "host"

// AgentPrefix starts the tool agent class under which a machine's hooks
// are registered: AgentPrefix + Definition.ID.
const AgentPrefix = "goxpdl.statemachine:"

// More errors of a machine.
var (
	// ErrNotDeployed: Start before Deploy.
	ErrNotDeployed = errors.New("state machine not deployed")
	// ErrNotMachine: the process instance is not one of this machine's.
	ErrNotMachine = errors.New("not an instance of this state machine")
	// ErrUnknownState: Resume named a state the machine (or the version
	// the instance runs) does not have; *UnknownStateError says which.
	ErrUnknownState = errors.New("unknown state")
	// ErrStuck: the instance cannot move on by itself; *StuckError
	// says why (the initial state's Enter failed, an operator's command
	// left it so). An operator retries or skips it in the console.
	ErrStuck = errors.New("state machine stuck")
)

// UnknownStateError is a Resume's refusal of a next state that is not a
// state. It matches ErrUnknownState. Nothing changed: the bookmark is
// still valid.
type UnknownStateError struct {
	// Machine is the machine's ID, From the state resumed and State the
	// name its Resume returned.
	Machine, From, State string
}

func (e *UnknownStateError) Error() string {
	return fmt.Sprintf("state machine %s: state %s resumed to %q, which is not one of its states", e.Machine, e.From, e.State)
}

// Is matches ErrUnknownState.
func (e *UnknownStateError) Is(target error) bool { return target == ErrUnknownState }

// StuckError says why an instance cannot move on. It matches ErrStuck.
type StuckError struct {
	// Machine is the machine's ID and Instance the process instance.
	Machine  string
	Instance int64
	// Activity is the XPDL activity that failed ("" when the instance
	// itself is in an error state).
	Activity string
	// Diagnosis is the engine's: what failed.
	Diagnosis string
}

func (e *StuckError) Error() string {
	where := "instance"
	if e.Activity != "" {
		where = "activity " + e.Activity
	}
	return fmt.Sprintf("state machine %s, instance %d: stuck: %s failed: %s", e.Machine, e.Instance, where, e.Diagnosis)
}

// Is matches ErrStuck.
func (e *StuckError) Is(target error) bool { return target == ErrStuck }

// Step is where a machine instance stands after Start, Resume or Current.
type Step struct {
	// Instance is the process instance.
	Instance int64 `json:"instance"`
	// State is the state it is in: the bookmark's, or a final state
	// when Done, or the last state entered when Aborted; "" while the
	// initial state is not entered yet.
	State string `json:"state,omitempty"`
	// Bookmark is where it waits; zero when it waits nowhere (Done,
	// Aborted, not entered yet).
	Bookmark Bookmark `json:"bookmark,omitzero"`
	// Done: the machine entered a final state and the instance completed.
	Done bool `json:"done,omitempty"`
	// Aborted: the instance ended without reaching a final state
	// (Abort, an operator's terminate).
	Aborted bool `json:"aborted,omitempty"`
}

// StartOpts are a start's options.
type StartOpts struct {
	// Input is handed to the initial state's Enter (StateContext.Input).
	// It must encode as JSON.
	Input map[string]any
	// BusinessKey and IdempotencyKey are the engine's
	// (engine.StartOptions): the host's key of what the instance works
	// on, and a key that makes a repeated start return the first's
	// instance.
	BusinessKey    string
	IdempotencyKey string
	// Actor is who starts it, for the history; default "host".
	Actor string
}

// ResumeOpts are a resume's options.
type ResumeOpts struct {
	// Input is handed to the state's Resume and the next state's Enter.
	// It must encode as JSON. It is kept as the result of the bookmark's
	// work item, so the history shows what moved the machine.
	Input map[string]any
	// User resumes: the engine's work-item rules decide whether they may
	// (engine.ErrNotAllowed otherwise). Default HostUser.
	User string
	// Op is written to the history with the move (its Actor defaults to
	// User).
	Op engine.Op
}

// Machine is a Definition compiled into an XPDL process and bound to an
// engine. Create it with New (before the engine starts, so that
// instances left by an earlier run find their code), Deploy it, then
// Start and Resume instances. It is safe for concurrent use.
type Machine struct {
	e      *engine.Engine
	def    Definition
	states map[string]*State
	vars   map[string]bool
	pkg    *xpdl.Package
	src    []byte

	mu         sync.Mutex
	deployment engine.Deployment
	waiting    map[int64][]chan struct{}
	stop       func()
}

// New compiles def into an XPDL package and registers its Go functions
// with e, as the engine's hooks (the tool agent class AgentPrefix+def.ID;
// engine.AttrHook). A Definition that cannot be compiled is refused with
// a *DefinitionError (ErrInvalid) and e is left alone. Call New before
// e.Start, and again with the same Definition after every restart. A
// second machine of the same ID on one engine takes the hooks over: the
// engine calls its functions for the instances of both.
func New(e *engine.Engine, def Definition) (*Machine, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: statemachine.New: nil engine", engine.ErrBadArgument)
	}
	def.States = slices.Clone(def.States)
	def.Vars = slices.Clone(def.Vars)
	def.Roles = slices.Clone(def.Roles)
	if problems := def.check(); len(problems) > 0 {
		return nil, &DefinitionError{Machine: def.ID, Problems: problems}
	}
	m := &Machine{e: e, def: def, states: map[string]*State{}, vars: map[string]bool{}, waiting: map[int64][]chan struct{}{}}
	for i := range m.def.States {
		s := &m.def.States[i]
		s.Performers = slices.Clone(s.Performers)
		m.states[s.Name] = s
	}
	for _, v := range def.Vars {
		m.vars[v.Name] = true
	}
	pkg, err := m.def.compile(AgentPrefix + def.ID)
	if err != nil {
		return nil, err
	}
	if m.src, err = xpdl.Marshal(pkg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	m.pkg = pkg
	e.RegisterToolAgent(AgentPrefix+def.ID, m.hook)
	m.stop = e.Subscribe(m.observe)
	return m, nil
}

// ID returns the machine's ID.
func (m *Machine) ID() string { return m.def.ID }

// Package returns the XPDL package the machine compiles into, as
// deployed: what the console draws and exports.
func (m *Machine) Package() *xpdl.Package { return m.pkg }

// XPDL returns the package's XPDL 2.2 text (xpdl.Marshal).
func (m *Machine) XPDL() []byte { return bytes.Clone(m.src) }

// Close stops the machine's subscription to the engine's records, which
// Start and Wait wait on: afterwards they return where an instance stands
// at once, or an error (engine.ErrNotRunning) where they would wait. Its
// hooks stay registered: the engine's instances of the machine keep
// moving, and Resume, Current, Abort and History work. Idempotent.
func (m *Machine) Close() {
	m.mu.Lock()
	stop := m.stop
	m.stop = nil
	m.mu.Unlock()
	if stop != nil {
		stop() // outside m.mu: the engine calls observe, which takes it, under its own lock
	}
}

// Deploy makes the machine's package the version Start starts: the
// latest deployed version of the package when it is the same XPDL (a
// restart deploys nothing new), a new version otherwise. Instances of
// earlier versions keep running on them, with this machine's code: a
// Resume to a state their version does not have is refused
// (*UnknownStateError).
func (m *Machine) Deploy(ctx context.Context) (engine.Deployment, error) {
	deps, err := m.e.Deployments(ctx)
	if err != nil {
		return engine.Deployment{}, err
	}
	var latest engine.Deployment
	for _, d := range deps {
		if d.PackageID == m.def.ID && d.Version > latest.Version {
			latest = d
		}
	}
	if latest.ID != 0 {
		_, src, err := m.e.DefinitionSource(ctx, latest.ID)
		if err != nil {
			return engine.Deployment{}, err
		}
		if !bytes.Equal(src, m.src) {
			latest = engine.Deployment{}
		}
	}
	if latest.ID == 0 {
		if latest, err = m.e.DeployPackage(ctx, m.pkg, m.src); err != nil {
			return engine.Deployment{}, err
		}
	}
	m.mu.Lock()
	m.deployment = latest
	m.mu.Unlock()
	return latest, nil
}

// Start starts an instance with input and waits until it entered its
// initial state (Wait): the Step holds the instance and its first
// bookmark (none when the initial state is final: Done). When the wait
// fails (ctx ended, ErrStuck) the Step still holds the instance, which
// exists.
func (m *Machine) Start(ctx context.Context, input map[string]any) (Step, error) {
	return m.StartWith(ctx, StartOpts{Input: input})
}

// StartWith is Start with every option.
func (m *Machine) StartWith(ctx context.Context, opts StartOpts) (Step, error) {
	id, err := m.start(ctx, nil, opts)
	if err != nil {
		return Step{}, err
	}
	return m.Wait(ctx, id)
}

// StartTx starts an instance inside the host's transaction tx and
// returns its id: it exists if and only if tx commits. The engine enters
// its initial state after the commit (see engine.Engine.Transaction):
// Wait for its first bookmark then.
func (m *Machine) StartTx(ctx context.Context, tx *gorm.DB, opts StartOpts) (int64, error) {
	if tx == nil {
		return 0, fmt.Errorf("%w: StartTx with a nil transaction", engine.ErrBadArgument)
	}
	return m.start(ctx, tx, opts)
}

func (m *Machine) start(ctx context.Context, tx *gorm.DB, opts StartOpts) (int64, error) {
	m.mu.Lock()
	dep := m.deployment
	m.mu.Unlock()
	if dep.ID == 0 {
		return 0, fmt.Errorf("%w: call Deploy before starting machine %s", ErrNotDeployed, m.def.ID)
	}
	input, err := normalInput(opts.Input)
	if err != nil {
		return 0, err
	}
	return m.e.StartProcessTx(ctx, tx, engine.StartOptions{
		DefinitionID: dep.ID, Variables: map[string]any{varInput: input},
		BusinessKey: opts.BusinessKey, IdempotencyKey: opts.IdempotencyKey, Actor: opts.Actor,
	})
}

// Resume moves the machine on from bookmark b with input, as HostUser,
// in one transaction of the engine: the state's Resume chooses the next
// state, whose Enter runs and whose work item (the next bookmark) is
// offered, or the instance completes in a final state. It returns the
// Step after the move. A refusal changes nothing: a stale bookmark
// (*BookmarkError, ErrStaleBookmark; ErrBookmarkResumed for one resumed
// before, which is how the loser of two Resumes at once learns it lost),
// a bookmark of another machine (ErrBadBookmark), an unknown next state
// (*UnknownStateError), the error of a Resume or Enter, or the engine's
// (a suspended instance, a user who may not do the work).
func (m *Machine) Resume(ctx context.Context, b Bookmark, input map[string]any) (Step, error) {
	return m.ResumeWith(ctx, b, ResumeOpts{Input: input})
}

// ResumeWith is Resume with every option.
func (m *Machine) ResumeWith(ctx context.Context, b Bookmark, opts ResumeOpts) (Step, error) {
	return m.resume(ctx, nil, b, opts)
}

// ResumeTx is ResumeWith inside the host's transaction tx: the move and
// the host's writes commit together, and the Step is what tx sees. The
// engine goes on from the new state after the commit.
func (m *Machine) ResumeTx(ctx context.Context, tx *gorm.DB, b Bookmark, opts ResumeOpts) (Step, error) {
	if tx == nil {
		return Step{}, fmt.Errorf("%w: ResumeTx with a nil transaction", engine.ErrBadArgument)
	}
	return m.resume(ctx, tx, b, opts)
}

func (m *Machine) resume(ctx context.Context, tx *gorm.DB, b Bookmark, opts ResumeOpts) (Step, error) {
	if b.Machine != m.def.ID || !name.MatchString(b.State) || b.Instance <= 0 || b.WorkItem <= 0 {
		return Step{}, fmt.Errorf("%w: %q is not a bookmark of machine %s", ErrBadBookmark, b.String(), m.def.ID)
	}
	input, err := normalInput(opts.Input)
	if err != nil {
		return Step{}, err
	}
	st, err := m.storeOf(tx)
	if err != nil {
		return Step{}, err
	}
	if err := m.checkBookmark(ctx, st, b); err != nil {
		return Step{}, err
	}
	user := opts.User
	if user == "" {
		user = HostUser
	}
	_, err = m.e.CompleteWorkItemTx(ctx, tx, b.WorkItem, engine.Completion{
		User: user, Outputs: map[string]any{varInput: input}, Op: opts.Op,
	})
	if err != nil {
		// A bookmark resumed meanwhile (the other of two Resumes at once)
		// is told as such rather than as the engine's refusal.
		if stale := m.checkBookmark(ctx, st, b); stale != nil {
			return Step{}, stale
		}
		return Step{}, fmt.Errorf("resume %s: %w", b, err)
	}
	// The next bookmark is the first work item the move made: the
	// instance's first after b's.
	items, err := st.ListWorkItems(ctx, store.ListWorkItemsParams{ProcessInstanceID: b.Instance, AfterID: b.WorkItem, Limit: 1})
	if err != nil {
		return Step{}, err
	}
	if len(items) == 1 {
		return Step{Instance: b.Instance, State: items[0].ActivityDefID, Bookmark: m.bookmark(items[0])}, nil
	}
	step, _, err := m.current(ctx, st, b.Instance)
	return step, err
}

// checkBookmark refuses a bookmark whose work item is not open, or not
// the one it names.
func (m *Machine) checkBookmark(ctx context.Context, st store.Store, b Bookmark) error {
	wi, err := st.GetWorkItem(ctx, b.WorkItem)
	if errors.Is(err, store.ErrNotFound) {
		return &BookmarkError{Bookmark: b, Reason: "its work item is gone (the instance was deleted)"}
	}
	if err != nil {
		return err
	}
	if wi.ProcessInstanceID != b.Instance || wi.ActivityDefID != b.State || wi.ProcessDefID != m.def.ID {
		return fmt.Errorf("%w: bookmark %s: work item %d is of instance %d, state %s of process %s",
			ErrBadBookmark, b, wi.ID, wi.ProcessInstanceID, wi.ActivityDefID, wi.ProcessDefID)
	}
	switch workitem.State(wi.State) {
	case workitem.Completed:
		by := ""
		if wi.CompletedBy != "" {
			by = " by " + wi.CompletedBy
		}
		return &BookmarkError{Bookmark: b, Reason: "resumed already" + by, resumed: true}
	case workitem.Withdrawn:
		return &BookmarkError{Bookmark: b, Reason: "its work was withdrawn (the instance was aborted or moved)"}
	}
	return nil
}

// Abort ends a machine instance without a final state (the engine's
// Terminate): its bookmark goes stale, and Step.Aborted says so. reason
// goes into the history.
func (m *Machine) Abort(ctx context.Context, instance int64, reason string) error {
	return m.abort(ctx, nil, instance, reason)
}

// AbortTx is Abort inside the host's transaction tx.
func (m *Machine) AbortTx(ctx context.Context, tx *gorm.DB, instance int64, reason string) error {
	if tx == nil {
		return fmt.Errorf("%w: AbortTx with a nil transaction", engine.ErrBadArgument)
	}
	return m.abort(ctx, tx, instance, reason)
}

func (m *Machine) abort(ctx context.Context, tx *gorm.DB, instance int64, reason string) error {
	st, err := m.storeOf(tx)
	if err != nil {
		return err
	}
	if _, err := m.instance(ctx, st, instance); err != nil {
		return err
	}
	return m.e.TerminateTx(ctx, tx, instance, engine.Op{Reason: reason})
}

// Current returns where instance stands now, without waiting: its state
// and bookmark, or Done or Aborted. A Step with neither a bookmark nor
// Done or Aborted is an instance whose initial state is not entered yet
// (Wait for it). An instance that cannot move on is a *StuckError
// (ErrStuck); one of another process, ErrNotMachine.
func (m *Machine) Current(ctx context.Context, instance int64) (Step, error) {
	step, _, err := m.current(ctx, m.e.Store(), instance)
	return step, err
}

// Wait returns where instance stands once it waits somewhere, ended, or
// is stuck: Current, after the engine entered the initial state of an
// instance just started. It waits on the engine's records (Subscribe),
// so it hears of the instance's moves on this engine only; ctx bounds
// the wait.
func (m *Machine) Wait(ctx context.Context, instance int64) (Step, error) {
	wake := make(chan struct{}, 1)
	m.mu.Lock()
	closed := m.stop == nil
	m.waiting[instance] = append(m.waiting[instance], wake)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		ws := slices.DeleteFunc(m.waiting[instance], func(c chan struct{}) bool { return c == wake })
		if len(ws) == 0 {
			delete(m.waiting, instance)
		} else {
			m.waiting[instance] = ws
		}
	}()
	for {
		step, ready, err := m.current(ctx, m.e.Store(), instance)
		if err != nil || ready {
			return step, err
		}
		if closed {
			return step, fmt.Errorf("%w: state machine %s is closed: it hears of no moves to wait for (instance %d)",
				engine.ErrNotRunning, m.def.ID, instance)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return step, fmt.Errorf("wait for state machine %s, instance %d: %w", m.def.ID, instance, ctx.Err())
		}
	}
}

// observe wakes the waits on a record's instance.
func (m *Machine) observe(rec engine.Record) {
	if rec.Process != m.def.ID {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.waiting[rec.Instance] {
		select {
		case c <- struct{}{}:
		default: // woken already
		}
	}
}

// current reads where instance stands, and whether that is a place to
// stop waiting.
func (m *Machine) current(ctx context.Context, st store.Store, id int64) (Step, bool, error) {
	pi, err := m.instance(ctx, st, id)
	if err != nil {
		return Step{}, false, err
	}
	step := Step{Instance: id}
	items, err := st.ListWorkItems(ctx, store.ListWorkItemsParams{ProcessInstanceID: id, States: openStates, Limit: 1})
	if err != nil {
		return step, false, err
	}
	if len(items) == 1 {
		step.State, step.Bookmark = items[0].ActivityDefID, m.bookmark(items[0])
		return step, true, nil
	}
	switch wftype.ProcessState(pi.State) {
	case wftype.ProcessCompleted, wftype.ProcessTerminated:
		step.Done = pi.State == string(wftype.ProcessCompleted)
		step.Aborted = !step.Done
		step.State, err = m.stateVar(ctx, st, id)
		return step, true, err
	case wftype.ProcessLocking:
		return step, true, &StuckError{Machine: m.def.ID, Instance: id, Diagnosis: pi.Diagnosis}
	}
	failed, err := st.ListActivityInstances(ctx, store.ListActivityInstancesParams{
		ProcessInstanceID: id, States: []string{string(wftype.ActivityAbnormal)}, Limit: 1,
	})
	if err != nil {
		return step, false, err
	}
	if len(failed) == 1 {
		return step, true, &StuckError{Machine: m.def.ID, Instance: id, Activity: failed[0].ActivityDefID, Diagnosis: failed[0].Diagnosis}
	}
	return step, false, nil
}

// openStates are the work item states of a bookmark still valid.
var openStates = func() []string {
	out := make([]string, len(workitem.OpenStates))
	for i, s := range workitem.OpenStates {
		out[i] = string(s)
	}
	return out
}()

// instance reads a process instance of this machine.
func (m *Machine) instance(ctx context.Context, st store.Store, id int64) (store.ProcessInstance, error) {
	pi, err := st.GetProcessInstance(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return pi, &engine.NotFoundError{What: "process instance", ID: strconv.FormatInt(id, 10)}
	}
	if err != nil {
		return pi, err
	}
	if pi.ProcessDefID != m.def.ID {
		return pi, fmt.Errorf("%w: instance %d runs process %s, not machine %s", ErrNotMachine, id, pi.ProcessDefID, m.def.ID)
	}
	return pi, nil
}

// stateVar reads the state the instance last entered.
func (m *Machine) stateVar(ctx context.Context, st store.Store, id int64) (string, error) {
	vars, err := st.GetVariables(ctx, id)
	if err != nil {
		return "", err
	}
	var s string
	if v, ok := vars[varState]; ok && len(v.Value) > 0 {
		if err := json.Unmarshal(v.Value, &s); err != nil {
			return "", fmt.Errorf("instance %d: variable %s: %w", id, varState, err)
		}
	}
	return s, nil
}

func (m *Machine) bookmark(wi store.WorkItem) Bookmark {
	return Bookmark{Machine: m.def.ID, State: wi.ActivityDefID, Instance: wi.ProcessInstanceID, WorkItem: wi.ID}
}

// storeOf is the store to read through: the engine's, or one over the
// host's transaction tx, which sees what tx wrote.
func (m *Machine) storeOf(tx *gorm.DB) (store.Store, error) {
	if tx == nil {
		return m.e.Store(), nil
	}
	return gormstore.New(tx)
}

// normalInput checks that input encodes as JSON and returns it as JSON
// decodes it (normalJSON), so that a Resume sees the same values however
// the input reached it; nil for none.
func normalInput(input map[string]any) (map[string]any, error) {
	if len(input) == 0 {
		return nil, nil
	}
	out, err := normalJSON(input)
	if err != nil {
		return nil, fmt.Errorf("%w: input: %w", engine.ErrBadArgument, err)
	}
	obj, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: input is not a JSON object", engine.ErrBadArgument)
	}
	return obj, nil
}

// normalJSON encodes v as JSON and decodes it again: objects become
// map[string]any, arrays []any, numbers int64 when integral and float64
// otherwise, as the engine gives JSON variables.
func normalJSON(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return jsonnum.Plain(out), nil
}
