package xpdl

import (
	"fmt"
	"strconv"
)

// SourceBuilt is the Source of a package Build returns; problems name it
// as their file, and have no line or column.
const SourceBuilt = "<built>"

// PackageBuilder builds a Package in Go: the model Read makes of the
// equivalent XPDL 2.2 file. Create one with NewPackage.
//
// The builders are used a statement at a time. A method that adds an
// element (an activity, a transition, a data field) returns the builder
// of that element, for its optional settings; a method that sets
// something returns the builder it was called on:
//
//	p := xpdl.NewProcess("order")
//	p.DataField("approved", xpdl.Basic(xpdl.BasicBoolean))
//	p.UserTask("approve").Performer("clerk")
//	p.ApplicationTask("ship", "ship", "orderId", "tracking")
//	p.Transition("approve", "ship").When("approved")
//	pkg, err := xpdl.NewPackage("orders").Participant("clerk", "Clerk", xpdl.ParticipantRole).
//		Application("ship").Process(p).Build()
//
// Nothing is checked until Build, which reports every problem at once.
// Ids are the caller's; a transition added without one gets FROM_TO
// (made unique) at Build. Expressions are in the package's language.
type PackageBuilder struct {
	pkg      *Package
	procs    []*ProcessBuilder
	problems Problems
	built    bool
	result   *Package
	err      error
}

// NewPackage starts a package with the given id. Its expressions are
// JavaScript (Script Type "text/javascript") unless Script says
// otherwise.
func NewPackage(id string) *PackageBuilder {
	return &PackageBuilder{pkg: &Package{
		ID: id, Version: Version22, Source: SourceBuilt,
		Header: PackageHeader{XPDLVersion: string(Version22)},
		Script: Script{Type: "text/javascript"},
	}}
}

// Name sets the package's name.
func (b *PackageBuilder) Name(name string) *PackageBuilder {
	if !b.built {
		b.pkg.Name = name
	}
	return b
}

// Header sets the package header's vendor and creation date (as text,
// e.g. "2026-11-21"; XPDL wants both, and the builder reads no clock).
func (b *PackageBuilder) Header(vendor, created string) *PackageBuilder {
	if !b.built {
		b.pkg.Header.Vendor, b.pkg.Header.Created = vendor, created
	}
	return b
}

// Description sets the package header's description.
func (b *PackageBuilder) Description(text string) *PackageBuilder {
	if !b.built {
		b.pkg.Header.Description = text
	}
	return b
}

// Script sets the package's expression language (Script Type), the
// language of every expression the builders make.
func (b *PackageBuilder) Script(typ string) *PackageBuilder {
	if !b.built {
		b.pkg.Script = Script{Type: typ}
	}
	return b
}

// Participant declares a participant of the package.
func (b *PackageBuilder) Participant(id, name string, typ ParticipantType) *PackageBuilder {
	if !b.built {
		b.pkg.Participants = append(b.pkg.Participants, &Participant{ID: id, Name: name, Type: typ})
	}
	return b
}

// Application declares an application (host code that activities call)
// with its formal parameters, in order (see Param).
func (b *PackageBuilder) Application(id string, params ...*FormalParameter) *PackageBuilder {
	if !b.built {
		b.pkg.Applications = append(b.pkg.Applications, newApplication(id, params))
	}
	return b
}

// DataField declares a package variable, visible in every process.
func (b *PackageBuilder) DataField(id string, typ DataType) *DataFieldBuilder {
	df := &DataField{ID: id, Type: typ}
	if !b.built {
		b.pkg.DataFields = append(b.pkg.DataFields, df)
	}
	return &DataFieldBuilder{df: df, frozen: func() bool { return b.built }}
}

// ExtendedAttribute adds an extended attribute to the package.
func (b *PackageBuilder) ExtendedAttribute(name, value string) *PackageBuilder {
	if !b.built {
		b.pkg.ExtendedAttributes = append(b.pkg.ExtendedAttributes, ExtendedAttribute{Name: name, Value: value})
	}
	return b
}

// Process adds a process. A process belongs to one package.
func (b *PackageBuilder) Process(p *ProcessBuilder) *PackageBuilder {
	switch {
	case b.built:
	case p == nil:
		b.misuse(nil, "package %q: Process(nil)", b.pkg.ID)
	case p.owner != nil:
		b.misuse([]string{p.proc.ID}, "process %q is already in package %q", p.proc.ID, p.owner.pkg.ID)
	default:
		p.owner = b
		b.procs = append(b.procs, p)
	}
	return b
}

func (b *PackageBuilder) misuse(ids []string, format string, args ...any) {
	b.problems = append(b.problems, Problem{
		File: SourceBuilt, Severity: SeverityError, Code: "builder", Message: fmt.Sprintf(format, args...), IDs: ids,
	})
}

// Build finishes the package and checks it as Deploy checks a file:
// Validate (with no other packages deployed alongside), then the
// deploy-time rewrite (a race in a loop that cannot be rewritten is a
// "race-region" problem). When anything is an error it returns a
// *ValidationError (errors.Is ErrInvalid) holding every problem, warnings
// included, and no package. Build hands the package over: the builders
// must not be changed afterwards (their methods then change nothing), and
// calling Build again returns the same result.
func (b *PackageBuilder) Build() (*Package, error) { return b.BuildWith(nil) }

// BuildWith is Build validating with opts: for example, with the
// packages whose processes this one's subflows call (Deployed).
func (b *PackageBuilder) BuildWith(opts *ValidateOpts) (*Package, error) {
	if b.built {
		return b.result, b.err
	}
	b.built = true
	pkg := b.pkg
	for _, p := range b.procs {
		p.finish()
		pkg.Processes = append(pkg.Processes, p.proc)
	}
	setGrammar(pkg)
	finish(pkg)
	pkg.readProblems = b.problems
	problems := Validate(pkg, opts)
	if !problems.HasErrors() {
		if _, _, err := Rewrite(pkg); err != nil {
			problems = append(problems, RewriteProblems(err)...)
		}
	}
	if err := problems.Err(); err != nil {
		b.err = err
		return nil, err
	}
	b.result = pkg
	return pkg, nil
}

// setGrammar gives every expression with text and no language the
// package's, as the reader does.
func setGrammar(pkg *Package) {
	set := func(x *Expression) {
		if x.Text != "" && x.Grammar == "" {
			x.Grammar = pkg.Script.Type
		}
	}
	for _, proc := range pkg.Processes {
		for _, f := range proc.Flows() {
			for _, a := range f.Activities {
				for _, tc := range a.Tools {
					for i := range tc.ActualParameters {
						set(&tc.ActualParameters[i])
					}
				}
				if a.Script != nil {
					set(a.Script)
				}
				if a.SubFlow != nil {
					for i := range a.SubFlow.ActualParameters {
						set(&a.SubFlow.ActualParameters[i])
					}
				}
				if a.Event != nil && a.Event.Timer != nil {
					set(&a.Event.Timer.TimeDate)
					set(&a.Event.Timer.TimeCycle)
				}
				for _, d := range a.Deadlines {
					set(&d.Condition)
				}
				if l := a.Loop; l != nil {
					set(&l.Condition)
					set(&l.MICondition)
					set(&l.FlowCondition)
				}
			}
			for _, t := range f.Transitions {
				if t.Condition != nil {
					set(&t.Condition.Expression)
				}
			}
		}
	}
}

// Basic returns a basic data type, e.g. Basic(BasicInteger).
func Basic(t BasicType) DataType { return DataType{Kind: TypeBasic, Basic: t} }

// Declared returns a reference to the TypeDeclaration with the given id.
func Declared(id string) DataType { return DataType{Kind: TypeDeclared, Declared: id} }

// Enumeration returns an enumeration type of the given values.
func Enumeration(values ...string) DataType { return DataType{Kind: TypeEnumeration, Enum: values} }

// Param returns a formal parameter for Application, ProcessBuilder.Param
// and ActivityBuilder.Param.
func Param(id string, mode ParamMode, typ DataType) *FormalParameter {
	return &FormalParameter{ID: id, Mode: mode, Type: typ}
}

func newApplication(id string, params []*FormalParameter) *Application {
	return &Application{ID: id, FormalParameters: params}
}

// DataFieldBuilder sets the optional parts of a data field.
type DataFieldBuilder struct {
	df     *DataField
	frozen func() bool
}

// Name sets the field's name.
func (d *DataFieldBuilder) Name(name string) *DataFieldBuilder {
	if !d.frozen() {
		d.df.Name = name
	}
	return d
}

// Initial sets the field's initial value, as XPDL writes it ("0",
// "true", "text").
func (d *DataFieldBuilder) Initial(value string) *DataFieldBuilder {
	if !d.frozen() {
		d.df.InitialValue, d.df.HasInitialValue = value, true
	}
	return d
}

// Description sets the field's description.
func (d *DataFieldBuilder) Description(text string) *DataFieldBuilder {
	if !d.frozen() {
		d.df.Description = text
	}
	return d
}

// ProcessBuilder builds a WorkflowProcess. Create one with NewProcess and
// add it to a package with PackageBuilder.Process. Its activities and
// transitions are those of its top-level flow (the methods of
// FlowBuilder); ActivitySet adds an embedded subprocess.
type ProcessBuilder struct {
	*FlowBuilder
	proc  *Process
	owner *PackageBuilder
	sets  []*FlowBuilder
	// pending are the misuses noticed before the process joined a
	// package.
	pending Problems
}

// NewProcess starts a process with the given id.
func NewProcess(id string) *ProcessBuilder {
	p := &ProcessBuilder{proc: &Process{ID: id}}
	p.FlowBuilder = &FlowBuilder{p: p, flow: &p.proc.Flow}
	return p
}

// frozen reports whether the package the process belongs to was built.
func (p *ProcessBuilder) frozen() bool { return p.owner != nil && p.owner.built }

func (p *ProcessBuilder) misuse(ids []string, format string, args ...any) {
	if p.owner != nil {
		p.owner.misuse(ids, format, args...)
		return
	}
	p.pending = append(p.pending, Problem{
		File: SourceBuilt, Severity: SeverityError, Code: "builder", Message: fmt.Sprintf(format, args...), IDs: ids,
	})
}

// Name sets the process's name.
func (p *ProcessBuilder) Name(name string) *ProcessBuilder {
	if !p.frozen() {
		p.proc.Name = name
	}
	return p
}

// Param declares a formal parameter of the process: what a subflow call
// or StartProcess passes in (IN, INOUT) and gets back (OUT, INOUT).
func (p *ProcessBuilder) Param(id string, mode ParamMode, typ DataType) *ProcessBuilder {
	if !p.frozen() {
		p.proc.FormalParameters = append(p.proc.FormalParameters, Param(id, mode, typ))
	}
	return p
}

// DataField declares a process variable.
func (p *ProcessBuilder) DataField(id string, typ DataType) *DataFieldBuilder {
	df := &DataField{ID: id, Type: typ}
	if !p.frozen() {
		p.proc.DataFields = append(p.proc.DataFields, df)
	}
	return &DataFieldBuilder{df: df, frozen: p.frozen}
}

// Participant declares a participant visible only in this process.
func (p *ProcessBuilder) Participant(id, name string, typ ParticipantType) *ProcessBuilder {
	if !p.frozen() {
		p.proc.Participants = append(p.proc.Participants, &Participant{ID: id, Name: name, Type: typ})
	}
	return p
}

// Application declares an application visible only in this process.
func (p *ProcessBuilder) Application(id string, params ...*FormalParameter) *ProcessBuilder {
	if !p.frozen() {
		p.proc.Applications = append(p.proc.Applications, newApplication(id, params))
	}
	return p
}

// ActivitySet adds an activity set (an embedded subprocess, run by a
// Block activity) and returns the builder of its flow.
func (p *ProcessBuilder) ActivitySet(id string) *FlowBuilder {
	set := &ActivitySet{ID: id}
	fb := &FlowBuilder{p: p, flow: &set.Flow}
	if !p.frozen() {
		p.proc.ActivitySets = append(p.proc.ActivitySets, set)
		p.sets = append(p.sets, fb)
	}
	return fb
}

// finish gives transitions without an id one, and hands over the
// problems noticed before the process joined its package.
func (p *ProcessBuilder) finish() {
	for _, fb := range append([]*FlowBuilder{p.FlowBuilder}, p.sets...) {
		for _, t := range fb.flow.Transitions {
			if t.ID == "" {
				t.ID = uniqueID(t.From+"_"+t.To, p.proc.hasTransitionID)
			}
		}
	}
	p.owner.problems = append(p.owner.problems, p.pending...)
	p.pending = nil
}

// FlowBuilder adds activities and transitions to one flow: a process's
// top level (ProcessBuilder embeds it) or an activity set.
type FlowBuilder struct {
	p    *ProcessBuilder
	flow *Flow
}

func (f *FlowBuilder) add(a *Activity) *ActivityBuilder {
	if !f.p.frozen() {
		f.flow.Activities = append(f.flow.Activities, a)
	}
	return &ActivityBuilder{p: f.p, a: a}
}

// UserTask adds a task a person does (XPDL 2 TaskUser): the engine offers
// it as a work item to its performers and waits for its completion.
func (f *FlowBuilder) UserTask(id string) *ActivityBuilder {
	return f.add(&Activity{ID: id, Kind: ActivityNo, Task: TaskUser})
}

// ManualTask adds a task done outside any system (XPDL 2 TaskManual);
// the engine treats it as a UserTask.
func (f *FlowBuilder) ManualTask(id string) *ActivityBuilder {
	return f.add(&Activity{ID: id, Kind: ActivityNo, Task: TaskManual})
}

// ApplicationTask adds a call of an application (XPDL 2 TaskApplication)
// with its actual parameters: expressions, usually variable names, in
// the order of the application's formal parameters.
func (f *FlowBuilder) ApplicationTask(id, application string, params ...string) *ActivityBuilder {
	return f.add(&Activity{ID: id, Kind: ActivityTool, Task: TaskApplication, Tools: []*ToolCall{{
		Application: application, Type: ToolApplication, ActualParameters: expressions(params),
	}}})
}

// ServiceTask adds a service task (XPDL 2 TaskService): the engine calls
// the application the host registered under the activity's id, or under
// application when it is not empty.
func (f *FlowBuilder) ServiceTask(id, application string) *ActivityBuilder {
	return f.add(&Activity{ID: id, Kind: ActivityTool, Task: TaskService, Tools: []*ToolCall{{
		Application: application, Type: ToolApplication,
	}}})
}

// ScriptTask adds a script the engine runs (XPDL 2 TaskScript).
func (f *FlowBuilder) ScriptTask(id, script string) *ActivityBuilder {
	return f.add(&Activity{ID: id, Kind: ActivityScript, Task: TaskScript, Script: &Expression{Text: script}})
}

// Route adds a gateway of the given type (GatewayXOR, GatewayAND,
// GatewayOR, GatewayComplex); GatewayNone declares none, which XPDL
// reads as XOR.
func (f *FlowBuilder) Route(id string, typ GatewayType) *ActivityBuilder {
	r := &Route{GatewayType: GatewayXOR, typed: true}
	if typ != GatewayNone {
		r.GatewayType, r.declared = typ, true
	}
	return f.add(&Activity{ID: id, Kind: ActivityRoute, Route: r})
}

// SubFlow adds a call of another process (SYNCHR: the caller waits; see
// ActivityBuilder.Async) with actual parameters in the order of the
// called process's formal parameters.
func (f *FlowBuilder) SubFlow(id, process string, params ...string) *ActivityBuilder {
	return f.add(&Activity{ID: id, Kind: ActivitySubFlow, SubFlow: &SubFlow{
		Process: process, Execution: ExecSynchr, ActualParameters: expressions(params),
	}})
}

// Block adds an activity that runs the activity set with the given id.
func (f *FlowBuilder) Block(id, activitySet string) *ActivityBuilder {
	return f.add(&Activity{ID: id, Kind: ActivityBlock, Block: &Block{ActivitySet: activitySet}})
}

// StartEvent adds a start event (trigger None).
func (f *FlowBuilder) StartEvent(id string) *ActivityBuilder {
	return f.event(id, EventStart, TriggerNone)
}

// EndEvent adds an end event (result None; see ActivityBuilder.Result).
func (f *FlowBuilder) EndEvent(id string) *ActivityBuilder {
	return f.event(id, EventEnd, TriggerNone)
}

// IntermediateEvent adds an intermediate event with the given trigger;
// Timer, Cycle, Message, Signal, Error and AttachTo say more.
func (f *FlowBuilder) IntermediateEvent(id string, trigger Trigger) *ActivityBuilder {
	return f.event(id, EventIntermediate, trigger)
}

// TimerEvent adds an intermediate timer event that fires at timeDate: a
// duration from when it starts waiting ("PT10M"), a date, or an
// expression (docs/timers.md).
func (f *FlowBuilder) TimerEvent(id, timeDate string) *ActivityBuilder {
	return f.event(id, EventIntermediate, TriggerTimer).Timer(timeDate)
}

func (f *FlowBuilder) event(id string, typ EventType, trigger Trigger) *ActivityBuilder {
	return f.add(&Activity{ID: id, Kind: ActivityEvent, Event: &Event{Type: typ, Trigger: trigger, Interrupting: true}})
}

// Transition adds a transition from one activity of this flow to
// another, unconditional until When, Otherwise or OnException says
// otherwise.
func (f *FlowBuilder) Transition(from, to string) *TransitionBuilder {
	t := &Transition{From: from, To: to}
	if !f.p.frozen() {
		f.flow.Transitions = append(f.flow.Transitions, t)
	}
	return &TransitionBuilder{p: f.p, t: t}
}

// Sequence adds unconditional transitions from each activity to the
// next: Sequence("a", "b", "c") is a → b → c.
func (f *FlowBuilder) Sequence(ids ...string) *FlowBuilder {
	for i := 1; i < len(ids); i++ {
		f.Transition(ids[i-1], ids[i])
	}
	return f
}

func expressions(texts []string) []Expression {
	if len(texts) == 0 {
		return nil
	}
	out := make([]Expression, len(texts))
	for i, t := range texts {
		out[i] = Expression{Text: t}
	}
	return out
}

// ActivityBuilder sets the optional parts of an activity.
type ActivityBuilder struct {
	p *ProcessBuilder
	a *Activity
}

// do applies set unless the package was built.
func (b *ActivityBuilder) do(set func(a *Activity)) *ActivityBuilder {
	if !b.p.frozen() {
		set(b.a)
	}
	return b
}

// Name sets the activity's name.
func (b *ActivityBuilder) Name(name string) *ActivityBuilder {
	return b.do(func(a *Activity) { a.Name = name })
}

// Description sets the activity's description.
func (b *ActivityBuilder) Description(text string) *ActivityBuilder {
	return b.do(func(a *Activity) { a.Description = text })
}

// Performer adds performers: participant ids (or expressions, as docs/
// xpdl-support.md says).
func (b *ActivityBuilder) Performer(ids ...string) *ActivityBuilder {
	return b.do(func(a *Activity) { a.Performers = append(a.Performers, ids...) })
}

// Param declares a formal parameter of the activity (XPDL 2.2): for a
// user or manual task, the OUT and INOUT ones are what its performer may
// hand back on completion.
func (b *ActivityBuilder) Param(id string, mode ParamMode, typ DataType) *ActivityBuilder {
	return b.do(func(a *Activity) { a.FormalParameters = append(a.FormalParameters, Param(id, mode, typ)) })
}

// Modes sets the activity's StartMode and FinishMode (ModeUnspecified
// leaves one undeclared).
func (b *ActivityBuilder) Modes(start, finish Mode) *ActivityBuilder {
	return b.do(func(a *Activity) { a.StartMode, a.FinishMode = start, finish })
}

// Join declares how the activity joins its incoming transitions.
func (b *ActivityBuilder) Join(typ GatewayType) *ActivityBuilder {
	return b.do(func(a *Activity) { a.Join = Gateway{Type: typ} })
}

// Split declares how the activity splits into its outgoing transitions
// and, for XOR, the order in which their conditions are tried
// (transition ids; by default, the order they were added in).
func (b *ActivityBuilder) Split(typ GatewayType, order ...string) *ActivityBuilder {
	return b.do(func(a *Activity) { a.Split = Gateway{Type: typ, TransitionRefs: order} })
}

// Deadline adds a deadline: duration is a duration ("PT1H"), a date or
// an expression (docs/timers.md); when it passes, the exception is
// raised, and a transition OnException(exception) is taken. SYNCHR ends
// the activity first; ASYNCHR (or ExecUnspecified) lets it go on.
func (b *ActivityBuilder) Deadline(exec Execution, duration, exception string) *ActivityBuilder {
	return b.do(func(a *Activity) {
		a.Deadlines = append(a.Deadlines, &Deadline{Execution: exec, Condition: Expression{Text: duration}, ExceptionName: exception})
	})
}

// LoopWhile makes the activity a standard loop that runs while condition
// holds, tested before each pass (it may not run at all).
func (b *ActivityBuilder) LoopWhile(condition string) *ActivityBuilder {
	return b.Loop(Loop{Type: LoopStandard, Condition: Expression{Text: condition}, TestTime: "Before"})
}

// MultiInstance makes the activity a multi-instance loop: count (an
// expression) instances, "Parallel" or "Sequential".
func (b *ActivityBuilder) MultiInstance(count, ordering string) *ActivityBuilder {
	return b.Loop(Loop{Type: LoopMultiInstance, MICondition: Expression{Text: count}, Ordering: ordering})
}

// Loop sets the activity's loop as given (docs/loops.md).
func (b *ActivityBuilder) Loop(l Loop) *ActivityBuilder {
	return b.do(func(a *Activity) { a.Loop = &l })
}

// Reentrant says whether the activity starts anew for every arriving
// token (docs/reentrancy.md); without it, XPDL's default (true) holds.
func (b *ActivityBuilder) Reentrant(reentrant bool) *ActivityBuilder {
	return b.do(func(a *Activity) {
		a.ExtendedAttributes = append(a.ExtendedAttributes, ExtendedAttribute{Name: AttrReentrant, Value: strconv.FormatBool(reentrant)})
		if a.Reentrant == nil {
			a.Reentrant = &reentrant
		}
	})
}

// ExtendedAttribute adds an extended attribute.
func (b *ActivityBuilder) ExtendedAttribute(name, value string) *ActivityBuilder {
	return b.do(func(a *Activity) {
		a.ExtendedAttributes = append(a.ExtendedAttributes, ExtendedAttribute{Name: name, Value: value})
	})
}

// Async makes a SubFlow call ASYNCHR: the caller goes on at once.
func (b *ActivityBuilder) Async() *ActivityBuilder {
	return b.do(func(a *Activity) {
		if a.SubFlow == nil {
			b.p.misuse([]string{a.ID}, "activity %q: Async on an activity that is not a SubFlow", a.ID)
			return
		}
		a.SubFlow.Execution = ExecAsynchr
	})
}

// onEvent applies set to the activity's event, or reports that it has
// none.
func (b *ActivityBuilder) onEvent(what string, set func(ev *Event)) *ActivityBuilder {
	return b.do(func(a *Activity) {
		if a.Event == nil {
			b.p.misuse([]string{a.ID}, "activity %q: %s on an activity that is not an event", a.ID, what)
			return
		}
		set(a.Event)
	})
}

// Timer makes the event a timer firing at timeDate.
func (b *ActivityBuilder) Timer(timeDate string) *ActivityBuilder {
	return b.onEvent("Timer", func(ev *Event) {
		ev.Trigger = TriggerTimer
		ev.Timer = &TimerTrigger{TimeDate: Expression{Text: timeDate}}
	})
}

// Cycle makes the event a timer firing at each occurrence of timeCycle
// ("R3/PT1H", a cron expression).
func (b *ActivityBuilder) Cycle(timeCycle string) *ActivityBuilder {
	return b.onEvent("Cycle", func(ev *Event) {
		ev.Trigger = TriggerTimer
		ev.Timer = &TimerTrigger{TimeCycle: Expression{Text: timeCycle}}
	})
}

// Message makes the event wait for (or, with Throw, send) the message
// with the given name.
func (b *ActivityBuilder) Message(name string) *ActivityBuilder {
	return b.onEvent("Message", func(ev *Event) { ev.Trigger, ev.Ref = TriggerMessage, name })
}

// Signal makes the event wait for (or, with Throw, broadcast) the signal
// with the given name.
func (b *ActivityBuilder) Signal(name string) *ActivityBuilder {
	return b.onEvent("Signal", func(ev *Event) { ev.Trigger, ev.Ref = TriggerSignal, name })
}

// Throw makes a message or signal event send rather than wait.
func (b *ActivityBuilder) Throw() *ActivityBuilder {
	return b.onEvent("Throw", func(ev *Event) { ev.Throw = true })
}

// Error makes the event throw (end event) or catch (boundary event) the
// error with the given code.
func (b *ActivityBuilder) Error(code string) *ActivityBuilder {
	return b.onEvent("Error", func(ev *Event) { ev.Trigger, ev.ErrorCode = TriggerError, code })
}

// Result sets what an end event produces (TriggerTerminate, ...).
func (b *ActivityBuilder) Result(result Trigger) *ActivityBuilder {
	return b.onEvent("Result", func(ev *Event) { ev.Trigger = result })
}

// AttachTo makes an intermediate event a boundary event of the activity
// with the given id; an interrupting one ends that activity when it fires.
func (b *ActivityBuilder) AttachTo(activity string, interrupting bool) *ActivityBuilder {
	return b.onEvent("AttachTo", func(ev *Event) { ev.Target, ev.Interrupting = activity, interrupting })
}

// TransitionBuilder sets the optional parts of a transition.
type TransitionBuilder struct {
	p *ProcessBuilder
	t *Transition
}

func (b *TransitionBuilder) do(set func(t *Transition)) *TransitionBuilder {
	if !b.p.frozen() {
		set(b.t)
	}
	return b
}

// ID sets the transition's id (by default FROM_TO, made unique).
func (b *TransitionBuilder) ID(id string) *TransitionBuilder {
	return b.do(func(t *Transition) { t.ID = id })
}

// Name sets the transition's name.
func (b *TransitionBuilder) Name(name string) *TransitionBuilder {
	return b.do(func(t *Transition) { t.Name = name })
}

// When makes the transition conditional: it is taken when the expression
// holds.
func (b *TransitionBuilder) When(condition string) *TransitionBuilder {
	return b.do(func(t *Transition) {
		t.Condition = &Condition{Type: ConditionCondition, Expression: Expression{Text: condition}}
	})
}

// Otherwise makes the transition the one taken when no other of its
// activity's transitions is.
func (b *TransitionBuilder) Otherwise() *TransitionBuilder {
	return b.do(func(t *Transition) { t.Condition = &Condition{Type: ConditionOtherwise} })
}

// OnException makes the transition the one taken when the named
// exception (a deadline's, or an application's) is raised.
func (b *TransitionBuilder) OnException(name string) *TransitionBuilder {
	return b.do(func(t *Transition) {
		t.Condition = &Condition{Type: ConditionException, Expression: Expression{Text: name}}
	})
}

// OnAnyException makes the transition the one taken for an exception no
// other transition names (DEFAULTEXCEPTION).
func (b *TransitionBuilder) OnAnyException() *TransitionBuilder {
	return b.do(func(t *Transition) { t.Condition = &Condition{Type: ConditionDefaultException} })
}
