package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine/flow"
	"github.com/goxpdl/goxpdl/engine/machine"
	"github.com/goxpdl/goxpdl/eventbus"
	"github.com/goxpdl/goxpdl/script"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// run is one transaction's work on one process instance: it loads the
// instance, applies commands and events to it through the state machines
// and the navigator, and writes the result (flush). Everything it changes
// commits together, under the instance's optimistic version, so two runs
// on one instance never both commit.
type run struct {
	e   *Engine
	ctx context.Context
	// tx is the run's transaction, written by the flush* functions (and
	// handed to a host's code, hostTx); the run's decisions read through
	// snap, over the same transaction (snapshot.go).
	tx    store.Tx
	snap  snapshot
	now   time.Time
	actor string
	// op is the command this run carries out, for its history entries
	// (Op.Reason, Op.Data); zero for the engine's own work.
	op Op
	// redelivered says that the event this run handles was delivered
	// before: an earlier attempt may have called applications.
	redelivered bool
	// attempt numbers the application call this run's event makes, by
	// the deliveries of the event that failed in a call before (1 for
	// the first call); 0 for a command of the host's. Retry policies
	// count an application's calls by it.
	attempt int
	// rerun says that this transaction's work ran before, in an attempt
	// that rolled back (transact): it may have called applications too.
	rerun bool
	// startKey is the idempotency key of the instance a start command
	// creates (StartOptions.IdempotencyKey).
	startKey string
	// businessKey and lock are the business key and lock of the
	// instance a start command creates (StartOptions.BusinessKey, Lock).
	businessKey string
	lock        *startLock

	pi store.ProcessInstance
	// storedState is the state of pi as stored at pi.Version, for the
	// store's counts per state (UpdateProcessInstanceParams.FromState).
	storedState string
	dep         *deployment
	proc        *xpdl.Process
	tokens      *flow.Tokens
	acts        []*act // unfinished activity instances, and those this run touched

	vars      map[string]any // nil until needed
	decls     map[string]decl
	dirtyVars map[string]bool

	history   []store.HistoryEntry
	events    []store.Event
	finishing []func(Observer) // the instance's end, observed after the rest at flush
	records   []Record
	inline    []*act // activities of activity sets to start in this transaction
	children  []*run // subflow instances this run created
	published []store.Event
	flushed   bool                             // flush wrote the instance
	fresh     bool                             // the run created its instance: flush inserts it, as the run leaves it
	timers    []store.Timer                    // timers to arm at flush
	items     map[int64]*stagedItem            // work items to write at flush (itemstage.go)
	itemOrder []int64                          // the IDs of items, in the order the run first touched them
	subs      []store.Subscription             // signal subscriptions to write at flush
	unsubs    []int64                          // activity instances whose stored subscription flush deletes
	inboxEnds []store.UpdateInboxMessageParams // pending inbox messages the run applied or expired, written at flush
	inboxNew  []store.InboxMessage             // messages and signals the run keeps in the inbox, inserted at flush
	locks     lockChanges                      // business-key locks taken, granted and dropped, written at flush (lock.go)
	// processed is the event this run handles (0 for a command): flush
	// marks it processed first, the fence of this node's claim on it.
	processed int64
	// spentTimers are the timers that fired in this run, and timerSwitch
	// pauses or resumes the instance's stored timers: both at flush.
	spentTimers []int64
	timerSwitch string
	incidents   []pendingIncident              // incidents to open at flush
	resolved    []store.ResolveIncidentsParams // incidents to resolve at flush
	audits      []store.AuditEntry             // the audit entry of the command the run carries out, written at flush
	// migration moves the instance to another definition at flush
	// (migrate.go), before its update.
	migration *store.MigrateProcessInstanceParams
	// skipping is the activity an operator's skip is routing on
	// (SkipActivity); a failure to route it refuses the skip.
	skipping *act
	// producer is the loop instance whose body is running: setVariable
	// keeps what it sets as its outputs (countersign.go); nil otherwise.
	producer *act
	nextDue  time.Time // the earliest timer this run (or its children) armed; zero for none
	due      time.Time // when the timer this run handles was due; its records say so

	// doomed maps activities (act.key) whose failure rolled an earlier
	// attempt of this transaction back to their diagnosis: this attempt
	// fails them without running them (see fail). Shared by the attempts
	// of one transact.
	doomed map[string]failure
	// created counts the activities this run created, by scope and
	// definition, to give each a key that a rerun gives it again.
	created map[string]int
	// keyBase begins the keys of the top-level activities this run
	// creates: empty, or for a subflow created and scheduled in its
	// parent's transaction, the key of the parent's activity, so that
	// the keys of one transaction's instances differ (doomed).
	keyBase string
	// inlineStarts lets the top-level activities this run makes ready
	// start in its transaction when that is the engine's own quick work
	// (scheduleStart): set for the engine's own steps on the normal pool
	// (an event's run, and the subflows it schedules), not for a
	// command, whose actor the next steps are not, nor for process
	// control, which stays short.
	inlineStarts bool
	// chainPending counts the events of the instance that a chain
	// (chain.go) holds for after this step: like events waiting in the
	// mailbox, they come before what this step makes ready.
	chainPending int
	// inlineTop counts the top-level activities scheduleStart let this
	// run start in its transaction.
	inlineTop int
	// startEmitted says this run sent an activity.start for its instance:
	// the activities it makes ready after that get one too, so that they
	// start in the order they became ready.
	startEmitted bool
	// actIDs maps the activities an earlier attempt of this transaction
	// created (by instance and act.key) to the IDs it gave them, so that
	// a rerun gives each the same ID (its applications' idempotency keys
	// name it); those attempts rolled back, so the IDs are free. Shared
	// by the attempts of one transact, like doomed; nil for none.
	actIDs map[string]int64
	// idErr is the first failure of the id allocator in this run (newID);
	// flush fails with it, so that no row without its ID is written.
	idErr error
	// observed are the observations for Config.Observer, handed over
	// once the run's transaction committed (nil without an observer).
	observed []func(Observer)
	// calledApps says the run called an application or a hook
	// (run.call).
	calledApps bool
	// preloaded, when set, is the instance a chained step (chain.go)
	// starts from: as the step before it left it, in this transaction,
	// which the engine's cache of committed instances does not hold yet.
	preloaded *committed
	// calls collects the application calls of every attempt of the
	// transaction (transactAs), observed whether or not it commits; nil
	// outside transactAs, where calls are observed as they return.
	calls *[]ApplicationCalled
}

// act is an activity instance with its definition. A run changes
// activity instances in memory and writes each once, at flush: the new
// ones in one multi-row INSERT, the changed ones with one UPDATE each. A
// new instance gets its ID from the engine's allocator (package idgen)
// when it is created, so what refers to it (history, records, events,
// work items, subflows, an application call's idempotency key) is built
// complete at once.
type act struct {
	row    store.ActivityInstance
	def    *xpdl.Activity
	scope  flow.Scope
	stored bool // the row exists in the database, at row.Version
	dirty  bool // the row changed since it was stored
	// finishedNow: the activity completed in this run (its timers go).
	finishedNow bool
	// passOn: a loop instance that completes routing like the activity
	// itself (completeInstance).
	passOn bool
	// outputs are what a loop instance handed back in this run (its
	// outputs, kept when it completes: countersign.go); note is detail
	// for the history entry of the activity's next change (an
	// instance's outputs, a countersign's decision).
	outputs map[string]any
	note    map[string]any
	// dueAt, for a manual activity about to be offered, is when its work
	// should be done: its first deadline or its limit (the work item's
	// DueAt); nil when it has neither.
	dueAt *time.Time
	// raised: the activity completes by an exception (complete); its
	// observed outcome is ActivityException.
	raised bool
	// key names the activity instance across attempts of one
	// transaction: "#ID" for one created before the run; for one the run
	// creates, its scope's key, its definition id and how many of them
	// the run created before it, which a rerun from the same state gives
	// it again (and with it the same ID, actIDs).
	key string
}

// openStates are wftype.OpenProcessStates, as the store takes them.
var openStates = stateNames(wftype.OpenProcessStates)

// stateNames returns states as the store takes them.
func stateNames[S ~string](states []S) []string {
	out := make([]string, len(states))
	for i, s := range states {
		out[i] = string(s)
	}
	return out
}

// unfinishedStates are the activity states an instance may still move
// from: everything but Completed.
var unfinishedStates = []string{
	string(wftype.ActivityInitiated), string(wftype.ActivityActive), string(wftype.ActivityWaiting),
	string(wftype.ActivityInActive), string(wftype.ActivityAbnormal),
}

// Event kinds the engine writes to the outbox.
const (
	evSchedule      = "process.schedule"
	evActivityStart = "activity.start"
	evSubprocess    = string(wftype.EventSubprocessCompleted)
	evTerminate     = string(wftype.EventTerminateRequested)
)

// payload is the body of the engine's events.
type payload struct {
	Activity int64 `json:"activity,omitempty"`
	Child    int64 `json:"child,omitempty"`
	// Timer is the timer that fired (evTimer).
	Timer int64 `json:"timer,omitempty"`
	// Fired is the start event whose timer created the instance
	// (evSchedule).
	Fired string `json:"fired,omitempty"`
	// Due is when the timer of Fired was due.
	Due time.Time `json:"due,omitzero"`
	// Record is the step a notification (evNotify) tells the host about.
	Record *Record `json:"record,omitempty"`
	// Signal is the signal an evSignal event delivers to Activity.
	Signal *signalPayload `json:"signal,omitempty"`
	// End is how Child ended (evSubprocess), so that its parent need not
	// read it back; nil in the events of earlier versions, whose parent
	// reads the child.
	End *childEnd `json:"end,omitempty"`
}

// childEnd is how a subflow instance ended: its final state (or
// Locking), its diagnosis, and the process it ran, for its OUT
// parameters.
type childEnd struct {
	State      string `json:"state"`
	Diagnosis  string `json:"diagnosis,omitempty"`
	Definition int64  `json:"definition"`
	Process    string `json:"process"`
}

func (e *Engine) newRun(ctx context.Context, tx store.Tx, actor string) *run {
	r := &run{e: e, ctx: ctx, tx: tx, now: e.now(), actor: actor, tokens: &flow.Tokens{}}
	r.snap = snapshot{run: r, tx: tx}
	return r
}

// spawn returns a run of another process instance in r's transaction (a
// subflow instance r creates, a queued instance r dequeues), written
// with r: it has its own snapshot, and shares r's time and its history
// of attempts.
func (r *run) spawn() *run {
	c := r.e.newRun(r.ctx, r.tx, r.actor)
	c.now = r.now
	c.doomed, c.rerun, c.actIDs = r.doomed, r.rerun, r.actIDs // one transaction, one history of attempts
	c.calls = r.calls
	return c
}

// load reads process instance id and its unfinished activities from the
// database.
func (r *run) load(id int64) error { return r.loadFrom(id, false) }

// loadCached is load from the engine's cache of committed instances when
// it holds id. Only runs that always flush may use it, so that the
// version fence catches a stale copy: event handling, not commands, which
// may refuse (an illegal state) without writing anything.
func (r *run) loadCached(id int64) error { return r.loadFrom(id, true) }

func (r *run) loadFrom(id int64, useCache bool) error {
	loaded, err := r.snap.load(id, useCache)
	if err != nil {
		return err
	}
	pi := loaded.pi
	r.pi, r.storedState = pi, pi.State
	if r.dep, err = r.snap.definition(pi.DefinitionID); err != nil {
		return err
	}
	if r.proc = r.dep.pkg.Process(pi.ProcessDefID); r.proc == nil {
		return fmt.Errorf("process instance %d: process %s is not in definition %d", id, pi.ProcessDefID, pi.DefinitionID)
	}
	if r.tokens, err = flow.Decode(pi.Tokens); err != nil {
		return fmt.Errorf("process instance %d: %w", id, err)
	}
	for _, row := range loaded.acts {
		a, err := r.bind(row)
		if err != nil {
			return err
		}
		a.stored = true
		r.acts = append(r.acts, a)
		r.e.ids.Observe(row.ID) // see Engine.process
	}
	return nil
}

// bind attaches the definition and scope to an activity instance row.
func (r *run) bind(row store.ActivityInstance) (*act, error) {
	sc := flow.Scope{Flow: &r.proc.Flow}
	if row.ActivitySetID != "" {
		set := r.proc.ActivitySet(row.ActivitySetID)
		if set == nil || row.BlockInstanceID == nil {
			return nil, fmt.Errorf("activity instance %d: activity set %q not in process %s", row.ID, row.ActivitySetID, r.proc.ID)
		}
		sc = flow.Scope{Flow: &set.Flow, Block: *row.BlockInstanceID}
	}
	def := sc.Flow.Activity(row.ActivityDefID)
	if def == nil {
		return nil, fmt.Errorf("activity instance %d: activity %s not in process %s", row.ID, row.ActivityDefID, r.proc.ID)
	}
	return &act{row: row, def: def, scope: sc, key: "#" + strconv.FormatInt(row.ID, 10)}, nil
}

func (r *run) state() wftype.ProcessState { return wftype.ProcessState(r.pi.State) }

func (r *run) activity(id int64) *act {
	for _, a := range r.acts {
		if a.row.ID == id {
			return a
		}
	}
	return nil
}

// hostTx is the run's transaction for a host's code (an application, a
// hook). The writes the store holds back go before the host's first
// statement, in a round trip of their own; when one fails, the host's
// statement fails with its error, and so does the run's transaction
// whatever the host does with it (gormstore.HostDB). A host's code that
// sends no statement (a no-op application) leaves them held, for the
// group commit to send with its other members' (groupcommit.go).
func (r *run) hostTx() (*gorm.DB, error) {
	return hostDB(r.ctx, r.tx)
}

// setProcess moves the process instance through its state machine.
func (r *run) setProcess(cmd machine.ProcessCommand, diagnosis string) error {
	from := r.state()
	to, err := machine.NextProcessState(from, cmd)
	if err != nil {
		return err
	}
	r.pi.State, r.pi.Diagnosis = string(to), errorText(diagnosis)
	if to.IsFinal() {
		end := r.now
		r.pi.EndedAt = &end
	}
	r.history = append(r.history, store.HistoryEntry{
		ProcessInstanceID: r.pi.ID, Subject: store.SubjectProcess, FromState: string(from), ToState: string(to),
		Actor: r.actor, At: r.now, Data: r.detail(diagnosis),
	})
	if typ := processRecord[to]; typ != "" {
		r.record(Record{Type: typ, State: string(to), Error: diagnosis})
	}
	if outcome := instanceOutcome[to]; outcome != "" && r.e.observer != nil {
		o := InstanceFinished{Package: r.packageID(), Process: r.pi.ProcessDefID, Version: r.version(), Instance: r.pi.ID,
			Outcome: outcome, Duration: r.e.clock.Now().Sub(r.pi.CreatedAt)}
		// Observed last of the run's observations (flush), after the
		// incident that a Locked instance opens in the same run.
		r.finishing = append(r.finishing, func(obs Observer) { obs.InstanceFinished(o) })
	}
	switch to {
	case wftype.ProcessLocking:
		r.incidents = append(r.incidents, pendingIncident{failure: failure{cause: CauseLocking, diagnosis: diagnosis}})
	case wftype.ProcessTerminated:
		r.resolveAll("terminated")
	}
	if to == wftype.ProcessCompleted || to == wftype.ProcessTerminated {
		return r.releaseLocks() // lock.go
	}
	return nil
}

var instanceOutcome = map[wftype.ProcessState]InstanceOutcome{
	wftype.ProcessCompleted:  InstanceCompleted,
	wftype.ProcessTerminated: InstanceTerminated,
	wftype.ProcessLocking:    InstanceLocked,
}

var processRecord = map[wftype.ProcessState]string{
	wftype.ProcessRunning:    "",
	wftype.ProcessSuspended:  RecordProcessSuspended,
	wftype.ProcessCompleted:  RecordProcessCompleted,
	wftype.ProcessTerminated: RecordProcessTerminated,
	wftype.ProcessLocking:    RecordProcessLocked,
}

// setActivity moves an activity instance through its state machine; the
// change is written at flush.
func (r *run) setActivity(a *act, cmd machine.ActivityCommand, diagnosis string) error {
	from := wftype.ActivityState(a.row.State)
	to, err := machine.NextActivityState(r.state(), from, cmd)
	if err != nil {
		return err
	}
	diagnosis = errorText(diagnosis) // an application's error may be any bytes, of any length
	a.row.State, a.row.Diagnosis, a.row.UpdatedAt = string(to), diagnosis, r.now
	if cmd == machine.ActivityStart || cmd == machine.ActivityOffer {
		a.row.Attempt++
	}
	if to == wftype.ActivityCompleted {
		end := r.now
		a.row.EndedAt = &end
		a.finishedNow = true
	}
	a.dirty = true
	r.history = append(r.history, store.HistoryEntry{
		ProcessInstanceID: r.pi.ID, ActivityInstanceID: &a.row.ID, Subject: store.SubjectActivity,
		FromState: string(from), ToState: string(to), Actor: r.actor, At: r.now, Data: r.activityDetail(a, diagnosis),
	})
	rec := Record{Activity: a.def.ID, State: string(to)}
	switch to {
	case wftype.ActivityActive, wftype.ActivityInActive:
		rec.Type = RecordActivityStarted
	case wftype.ActivityWaiting:
		rec.Type = RecordActivityWaiting
	case wftype.ActivityCompleted:
		rec.Type = RecordActivityCompleted
	case wftype.ActivityAbnormal:
		rec.Type, rec.Error = RecordActivityAbnormal, diagnosis
	default:
		return nil
	}
	r.recordActivity(a, rec)
	if to == wftype.ActivityCompleted || to == wftype.ActivityAbnormal {
		r.activityFinished(a, activityOutcome(a, cmd, to, diagnosis))
	}
	return nil
}

// activityOutcome classifies how activity a finished: cmd moved it to
// state to, giving diagnosis as the reason.
func activityOutcome(a *act, cmd machine.ActivityCommand, to wftype.ActivityState, diagnosis string) ActivityOutcome {
	switch {
	case to == wftype.ActivityAbnormal:
		return ActivityAbnormal
	case cmd == machine.ActivitySkip && strings.HasPrefix(diagnosis, "skipped by "):
		return ActivitySkipped
	case a.raised || strings.HasPrefix(diagnosis, "exception "):
		return ActivityException
	case diagnosis == "":
		return ActivityCompleted
	}
	return ActivityCancelled // withdrawn, interrupted, cancelled by a move (forceComplete)
}

// activityFinished queues the observation of activity a's end.
func (r *run) activityFinished(a *act, outcome ActivityOutcome) {
	if r.e.observer == nil {
		return
	}
	o := ActivityFinished{Package: r.packageID(), Process: r.pi.ProcessDefID, Version: r.version(), Activity: a.def.ID,
		Type: ActivityTypeOf(a.def), Instance: r.pi.ID, Outcome: outcome, Duration: r.e.clock.Now().Sub(a.row.CreatedAt)}
	o.ActivityInstance = a.row.ID
	r.note(func(obs Observer) { obs.ActivityFinished(o) })
}

// note queues an observation for when the run's transaction commits.
func (r *run) note(fn func(Observer)) {
	if r.e.observer != nil {
		r.observed = append(r.observed, fn)
	}
}

// called observes an application call: with the transaction's other
// calls when it is over (transactAs), else at once.
func (r *run) called(c ApplicationCalled) {
	switch {
	case r.e.observer == nil:
	case r.calls == nil:
		r.e.observe(func(obs Observer) { obs.ApplicationCalled(c) })
	default:
		*r.calls = append(*r.calls, c)
	}
}

// packageID and version name the run's definition for observations.
func (r *run) packageID() string {
	if r.dep == nil {
		return ""
	}
	return r.dep.def.PackageID
}

func (r *run) version() int {
	if r.dep == nil {
		return 0
	}
	return r.dep.def.Version
}

// newID returns a new ID for a row of this run. When the allocator
// fails it returns 0 and keeps the error for flush (idErr), which fails
// the run: no row is written without its ID.
func (r *run) newID() int64 {
	id, err := r.e.ids.Next(r.ctx)
	if err != nil && r.idErr == nil {
		r.idErr = err
	}
	return id
}

// idNow is newID for a row written at once rather than at flush: it
// returns the allocator's error (the run's first) instead of 0.
func (r *run) idNow() (int64, error) {
	id := r.newID()
	return id, r.idErr
}

// createActivity creates an Initiated instance of def in scope sc and
// schedules its start: by an event (its own transaction) at the top level,
// in this transaction inside an activity set. The row is written at flush.
func (r *run) createActivity(sc flow.Scope, def *xpdl.Activity, schedule bool) (*act, error) {
	row := store.ActivityInstance{
		ProcessInstanceID: r.pi.ID, ActivityDefID: def.ID, State: string(wftype.ActivityInitiated),
		CreatedAt: r.now, UpdatedAt: r.now,
	}
	if sc.Block != 0 {
		block := sc.Block
		row.BlockInstanceID = &block
		row.ActivitySetID = r.setOf(sc)
	}
	prefix := r.keyBase
	if sc.Block != 0 {
		if block := r.activity(sc.Block); block != nil {
			prefix = block.key
		}
	}
	prefix += "/" + def.ID
	if r.created == nil {
		r.created = make(map[string]int)
	}
	r.created[prefix]++
	key := prefix + "." + strconv.Itoa(r.created[prefix])
	idKey := strconv.FormatInt(r.pi.ID, 10) + key
	id, ok := r.actIDs[idKey]
	if !ok {
		var err error
		if id, err = r.e.ids.Next(r.ctx); err != nil {
			return nil, err
		}
		if r.actIDs != nil {
			r.actIDs[idKey] = id
		}
	}
	row.ID = id
	a := &act{row: row, def: def, scope: sc, key: key}
	r.acts = append(r.acts, a)
	r.history = append(r.history, store.HistoryEntry{
		ProcessInstanceID: r.pi.ID, ActivityInstanceID: &a.row.ID, Subject: store.SubjectActivity,
		ToState: row.State, Actor: r.actor, At: r.now,
	})
	if schedule {
		r.scheduleStart(a)
	}
	return a, nil
}

func (r *run) setOf(sc flow.Scope) string {
	for _, set := range r.proc.ActivitySets {
		if &set.Flow == sc.Flow {
			return set.ID
		}
	}
	return ""
}

// scheduleStart starts a in this transaction (drain) when it is inside
// an activity set, or when the run is the engine's own step
// (inlineStarts), a's start is the engine's own quick work (a route, an
// event, offering work, creating a child instance: startsOnControlPath)
// and nothing comes before it: no activity this run made ready waits for
// an event, and no event of the instance waits in its mailbox or in the
// chain this run is a step of (those are
// handled first, as they would have been before a's own event); else by
// an activity.start event of its own, on the normal pool. (When the run
// called the host's code, drain moves its time past the call first: a
// starts after it, and the deadlines it arms count from then.)
//
// At most maxInlineStarts top-level activities start so in one run: a
// loop of routes goes on by events after that, a transaction at a time,
// rather than in one transaction without end.
func (r *run) scheduleStart(a *act) {
	if a.scope.Block != 0 {
		r.inline = append(r.inline, a)
		return
	}
	if r.inlineStarts && !r.startEmitted && r.inlineTop < maxInlineStarts && startsOnControlPath(a.def) &&
		r.chainPending == 0 && r.e.sched.Queued(r.pi.ID) == 0 {
		r.inlineTop++
		r.inline = append(r.inline, a)
		return
	}
	r.emitStart(a)
}

// maxInlineStarts bounds the top-level activities one run starts in its
// own transaction (scheduleStart), as Config.ChainSteps's default bounds
// the steps of a chain.
const maxInlineStarts = DefaultChainSteps

// emitStart queues the event that starts a in a transaction of its own.
func (r *run) emitStart(a *act) {
	r.startEmitted = true
	r.emit(r.pi.ID, evActivityStart, payload{Activity: a.row.ID}, false)
}

// emit queues an event for the outbox, with its ID: the engine's, the
// same scheme for events published on the bus and for those a host's
// transaction leaves to the poller.
func (r *run) emit(instance int64, kind string, p payload, critical bool) {
	id := r.newID()
	r.events = append(r.events, store.Event{
		ID: id, EventID: eventbus.EventID(id), ProcessInstanceID: instance, Kind: kind, Payload: mustJSON(p), Critical: critical,
		CreatedAt: r.now, AvailableAt: r.now,
	})
}

func (r *run) record(rec Record) {
	rec.Time, rec.Process, rec.Instance = r.now, r.pi.ProcessDefID, r.pi.ID
	if !r.due.IsZero() && timerRecords[rec.Type] {
		due := r.due
		rec.Due = &due
	}
	if r.pi.ParentInstanceID != nil && rec.Type == RecordProcessStarted {
		rec.Parent = *r.pi.ParentInstanceID
	}
	if rec.Type == RecordProcessStarted || rec.Type == RecordProcessQueued {
		rec.BusinessKey = r.pi.BusinessKey
	}
	r.records = append(r.records, rec)
}

// recordActivity is record for a record about activity instance a.
func (r *run) recordActivity(a *act, rec Record) {
	rec.ActivityInstance = a.row.ID
	r.record(rec)
}

// maxInline bounds the activities one transaction starts inside activity
// sets; a set that loops without end continues through events instead.
const maxInline = 10000

// drain starts the activity-set activities queued by this run, all in
// this transaction.
func (r *run) drain() error {
	for n := 0; len(r.inline) > 0; n++ {
		a := r.inline[0]
		r.inline = r.inline[1:]
		if n >= maxInline {
			r.emitStart(a)
			continue
		}
		if a.scope.Block == 0 && r.calledApps {
			// A top-level activity made ready after the host's code ran
			// starts when it starts, as it would by an event of its own,
			// not at the run's time from before the call.
			if now := r.e.now(); now.After(r.now) {
				r.now = now
			}
		}
		if err := r.startActivity(a); err != nil {
			return err
		}
	}
	return nil
}

// flush writes the process instance (its version fences concurrent runs;
// one the run created is inserted, in the state the run leaves it in), the
// variables, the history and the events. hosted
// runs (inside a host's transaction) leave their events unclaimed for the
// poller, since the engine cannot see that transaction commit.
func (r *run) flush(hosted bool) error {
	if r.idErr != nil {
		return r.idErr
	}
	r.snap.forget() // the database holds what the run decides now
	if err := r.flushProcessed(); err != nil {
		return err
	}
	own := len(r.records) // the children's records are their own to notify
	for _, c := range r.children {
		if err := c.flush(hosted); err != nil {
			return err
		}
		r.published = append(r.published, c.published...)
		r.records = append(r.records, c.records...)
		r.observed = append(r.observed, c.observed...)
		if !c.nextDue.IsZero() && (r.nextDue.IsZero() || c.nextDue.Before(r.nextDue)) {
			r.nextDue = c.nextDue
		}
	}
	// The process first: its version is the fence, so a run computed
	// from a stale copy fails here before writing anything else.
	tokens := r.tokens.Encode()
	if r.fresh {
		row := r.pi
		row.Tokens, row.UpdatedAt = tokens, r.now
		stored, err := r.tx.InsertProcessInstance(r.ctx, row)
		if err != nil {
			return err
		}
		r.fresh = false
		r.pi.Version, r.pi.Tokens, r.pi.UpdatedAt, r.storedState = stored.Version, tokens, r.now, r.pi.State
	} else {
		if err := r.flushMigration(); err != nil {
			return err
		}
		v, err := r.tx.UpdateProcessInstance(r.ctx, store.UpdateProcessInstanceParams{
			ID: r.pi.ID, ExpectedVersion: r.pi.Version, FromState: r.storedState, State: r.pi.State, Diagnosis: r.pi.Diagnosis,
			Tokens: tokens, UpdatedAt: r.now, EndedAt: r.pi.EndedAt,
		})
		if err != nil {
			return err
		}
		r.pi.Version, r.pi.Tokens, r.pi.UpdatedAt, r.storedState = v, tokens, r.now, r.pi.State
	}
	if err := r.flushAudit(); err != nil {
		return err
	}
	if err := r.flushActivities(); err != nil {
		return err
	}
	if err := r.flushItems(); err != nil {
		return err
	}
	if err := r.flushInbox(); err != nil {
		return err
	}
	if err := r.flushLocks(); err != nil {
		return err
	}
	r.emitNotifications(r.records[:own])
	if err := r.flushPublications(r.records[:own]); err != nil {
		return err
	}
	if err := r.flushVars(); err != nil {
		return err
	}
	if err := r.flushTimers(); err != nil {
		return err
	}
	if err := r.flushSubscriptions(); err != nil {
		return err
	}
	if err := r.flushIncidents(); err != nil {
		return err
	}
	r.observed = append(r.observed, r.finishing...)
	r.finishing = nil
	for i := range r.history {
		r.history[i].ID = r.newID() // in the order the run made them
	}
	if r.idErr != nil {
		return r.idErr
	}
	if err := r.tx.InsertHistory(r.ctx, r.history); err != nil {
		return err
	}
	r.flushed = true
	return r.flushEvents(hosted)
}

// flushDetached is flush for a run with no process instance of its own
// (a signal, a message kept for an instance not yet known, an event for
// no instance or for one purged): the event's mark, the inbox rows it
// keeps and the events it sends are all it writes.
func (r *run) flushDetached(hosted bool) error {
	if r.idErr != nil {
		return r.idErr
	}
	r.snap.forget()
	if err := r.flushProcessed(); err != nil {
		return err
	}
	if err := r.flushAudit(); err != nil {
		return err
	}
	if err := r.flushInbox(); err != nil {
		return err
	}
	return r.flushEvents(hosted)
}

// flushUnchanged is flush for a run that changes nothing (its command
// refused, or found its work done before): the mark of the event it
// handled, and the audit entry of a command that found its work done.
func (r *run) flushUnchanged() error {
	if err := r.flushProcessed(); err != nil {
		return err
	}
	return r.flushAudit()
}

// flushAudit writes the audit entry of the command the run carried out
// (auditing.okIn).
func (r *run) flushAudit() error {
	for _, entry := range r.audits {
		if err := r.tx.InsertAudit(r.ctx, entry); err != nil {
			return err
		}
	}
	r.audits = nil
	return nil
}

// flushProcessed marks the event the run handles processed, as this
// node's: it fails (store.ErrLeaseLost) when the node no longer holds
// the event's claim (another node took it over), and then nothing of
// the transaction commits. It comes first so that such a run fails
// before it writes anything else.
func (r *run) flushProcessed() error {
	if r.processed == 0 {
		return nil
	}
	id := r.processed
	r.processed = 0
	return r.tx.MarkEventsProcessed(r.ctx, store.MarkEventsProcessedParams{IDs: []int64{id}, ProcessedAt: r.now, Owner: r.e.owner})
}

// flushEvents writes the events the run sends: to the outbox for the
// poller in a host's transaction (the engine cannot see it commit),
// else published, claimed by this node for dispatch after the commit.
func (r *run) flushEvents(hosted bool) error {
	if len(r.events) == 0 {
		return nil
	}
	if hosted {
		_, err := r.tx.AppendEvents(r.ctx, r.events) // engine-made ids and EventIDs
		return err
	}
	published, err := r.e.bus.Publish(r.ctx, r.tx, r.events)
	r.published = append(r.published, published...)
	return err
}

// flushActivities inserts the new activity instances in one statement
// and updates the changed ones in another.
func (r *run) flushActivities() error {
	var fresh []*act
	for _, a := range r.acts {
		if !a.stored {
			fresh = append(fresh, a)
		}
	}
	if len(fresh) > 0 {
		rows := make([]store.ActivityInstance, len(fresh))
		for i, a := range fresh {
			rows[i] = a.row
		}
		if _, err := r.tx.InsertActivityInstances(r.ctx, rows); err != nil {
			return err
		}
		for _, a := range fresh {
			a.row.Version = 1
			a.stored, a.dirty = true, false
		}
	}
	var changed []*act
	var updates []store.UpdateActivityInstanceParams
	for _, a := range r.acts {
		if a.dirty {
			changed = append(changed, a)
			updates = append(updates, store.UpdateActivityInstanceParams{
				ID: a.row.ID, ExpectedVersion: a.row.Version, State: a.row.State, Attempt: a.row.Attempt,
				Diagnosis: a.row.Diagnosis, UpdatedAt: a.row.UpdatedAt, EndedAt: a.row.EndedAt, LoopState: a.row.LoopState,
			})
		}
	}
	if err := r.tx.UpdateActivityInstances(r.ctx, updates); err != nil {
		return err
	}
	for _, a := range changed {
		a.row.Version, a.dirty = a.row.Version+1, false
	}
	return nil
}

// committed is the committed state of a process instance the engine
// keeps in memory between runs (instanceCache): the instance row and its
// unfinished activities.
type committed struct {
	pi   store.ProcessInstance
	acts []store.ActivityInstance
}

// committed returns the state this run wrote.
func (r *run) committed() committed {
	s := committed{pi: r.pi}
	for _, a := range r.acts {
		if a.row.State != string(wftype.ActivityCompleted) {
			s.acts = append(s.acts, a.row)
		}
	}
	return s
}

func (r *run) flushVars() error {
	if len(r.dirtyVars) == 0 {
		return nil
	}
	vars := make([]store.Variable, 0, len(r.dirtyVars))
	for name := range r.dirtyVars {
		v, err := encodeVariable(r.pi.ID, name, r.decls[name].typ, r.vars[name])
		if err != nil {
			return err
		}
		vars = append(vars, v)
	}
	return r.tx.PutVariables(r.ctx, vars)
}

// variables loads the instance's variables once.
func (r *run) variables() (map[string]any, error) {
	if r.vars != nil {
		return r.vars, nil
	}
	stored, err := r.snap.variables(r.pi.ID)
	if err != nil {
		return nil, &storeErr{err}
	}
	r.decls = declarations(r.dep.pkg, r.proc)
	r.vars = make(map[string]any, len(stored))
	for name, sv := range stored {
		v, err := decodeVariable(sv)
		if err != nil {
			return nil, err
		}
		r.vars[name] = v
	}
	return r.vars, nil
}

// setVariable checks and changes one variable.
func (r *run) setVariable(name string, v any) error {
	if _, err := r.variables(); err != nil {
		return err
	}
	d, ok := r.decls[name]
	if !ok {
		return &VariableError{Name: name, Value: v, kind: ErrUnknownVariable}
	}
	c, err := d.typ.coerce(name, v)
	if err != nil {
		return err
	}
	r.vars[name] = c
	if r.producer != nil {
		r.producer.keep(name, c)
	}
	if r.dirtyVars == nil {
		r.dirtyVars = make(map[string]bool)
	}
	r.dirtyVars[name] = true
	return nil
}

// condition evaluates a transition condition over the variables.
func (r *run) condition(t *xpdl.Transition) (bool, error) {
	vars, err := r.variables()
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.e.cfg.ConditionTimeout)
	defer cancel()
	ok, err := r.e.eval.Condition(ctx, t.Condition.Expression.Text, vars)
	return ok, r.e.conditionLimit(err)
}

// conditionLimit and scriptLimit name the time limit in the error of an
// evaluation that ran out of time (the script package knows the deadline,
// not the setting).
func (e *Engine) conditionLimit(err error) error {
	return nameTimeLimit(err, "ConditionTimeout", e.cfg.ConditionTimeout)
}

func (e *Engine) scriptLimit(err error) error {
	return nameTimeLimit(err, "ScriptTimeout", e.cfg.ScriptTimeout)
}

func nameTimeLimit(err error, setting string, d time.Duration) error {
	if errors.Is(err, script.ErrTimeout) {
		return fmt.Errorf("%w (%s %v)", err, setting, d)
	}
	return err
}

// expression evaluates an actual parameter: a variable's name gives its
// value, anything else is a JavaScript expression over the variables.
func (r *run) expression(expr xpdl.Expression) (any, error) {
	vars, err := r.variables()
	if err != nil {
		return nil, err
	}
	text := strings.TrimSpace(expr.Text)
	if v, ok := vars[text]; ok {
		return v, nil
	}
	if text == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.e.cfg.ConditionTimeout)
	defer cancel()
	v, err := r.e.eval.Eval(ctx, text, vars)
	return v, r.e.conditionLimit(err)
}
