package xpdl

import (
	"strconv"
	"strings"
)

// Version is the XPDL version of a package, decided by the namespace of its
// root element.
type Version string

// The XPDL versions the reader understands.
const (
	Version10 Version = "1.0" // http://www.wfmc.org/2002/XPDL1.0
	Version20 Version = "2.0" // http://www.wfmc.org/2004/XPDL2.0alpha
	Version21 Version = "2.1" // http://www.wfmc.org/2008/XPDL2.1
	Version22 Version = "2.2" // http://www.wfmc.org/2009/XPDL2.2
)

// Pos is a position in a source file: 1-based line and column of the start
// of the element it belongs to. The zero Pos means "unknown".
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// Package is one XPDL package read into the version-independent model.
//
// A Package and everything it points to must be treated as read-only once
// Read or Load has returned it: the engine shares one Package between all
// instances of its processes.
type Package struct {
	ID      string
	Name    string
	Version Version
	// Source is the name the package was read from (a file path, or the
	// name given in ReadOpts); problems and positions refer to it.
	Source string
	Pos    Pos

	Header      PackageHeader
	Redefinable RedefinableHeader
	// Conformance is the declared GraphConformance; ConformanceNone when
	// the package declares none.
	Conformance GraphConformance
	// Script is the package's declared expression language
	// (<Script Type="text/javascript"/>); empty when undeclared.
	Script Script

	ExternalPackages   []*ExternalPackage
	TypeDeclarations   []*TypeDeclaration
	Participants       []*Participant
	Applications       []*Application
	DataFields         []*DataField
	Processes          []*Process
	Pools              []*Pool
	MessageFlows       []*MessageFlow
	ExtendedAttributes ExtendedAttributes

	// readProblems are what the reader noticed; Validate reports them.
	readProblems Problems
}

// PackageHeader is the descriptive header of a package.
type PackageHeader struct {
	XPDLVersion   string
	Vendor        string
	Created       string
	Modified      string
	Description   string
	CostUnit      string
	Priority      string // PriorityUnit
	Documentation string
}

// RedefinableHeader holds the header elements a process may redefine.
type RedefinableHeader struct {
	PublicationStatus string
	Author            string
	Version           string
	Codepage          string
	Countrykey        string
	Responsibles      []string
}

// GraphConformance is the declared conformance class of a package's graphs.
type GraphConformance string

// The graph conformance classes. "NON-BLOCKED", a spelling found in real
// exports, is read as ConformanceNonBlocked.
const (
	ConformanceNone        GraphConformance = ""
	ConformanceNonBlocked  GraphConformance = "NON_BLOCKED"
	ConformanceLoopBlocked GraphConformance = "LOOP_BLOCKED"
	ConformanceFullBlocked GraphConformance = "FULL_BLOCKED"
)

// Script is a declared expression language.
type Script struct {
	Type    string // MIME-like type as written, e.g. "text/javascript"
	Version string
	Grammar string
}

// ExternalPackage is a reference to another package whose participants,
// applications and processes this package may use.
type ExternalPackage struct {
	// Href is the reference as written, resolved relative to the
	// referencing file.
	Href string
	// ID is the referenced package's id when the reference names it (the
	// XPDL 2 Id attribute or JaWE's EXTERNAL_PACKAGE_ID attribute).
	ID  string
	Pos Pos
	// Package is the loaded package; nil when it was not loaded (Read does
	// not load references, Load does) or could not be loaded.
	Package *Package
	// LoadErr is why Load could not load the reference; nil otherwise.
	LoadErr error
}

// TypeDeclaration declares a named data type.
type TypeDeclaration struct {
	ID   string
	Name string
	Type DataType
	Pos  Pos
}

// TypeKind says which alternative of an XPDL DataType is used.
type TypeKind string

// The data type kinds.
const (
	TypeBasic       TypeKind = "Basic"
	TypeDeclared    TypeKind = "Declared"
	TypeSchema      TypeKind = "Schema"
	TypeExternal    TypeKind = "ExternalReference"
	TypeEnumeration TypeKind = "Enumeration"
	TypeArray       TypeKind = "Array"
	TypeList        TypeKind = "List"
	TypeRecord      TypeKind = "Record"
	TypeUnion       TypeKind = "Union"
	TypeUnknown     TypeKind = ""
)

// BasicType is an XPDL basic data type.
type BasicType string

// The XPDL basic types.
const (
	BasicString    BasicType = "STRING"
	BasicFloat     BasicType = "FLOAT"
	BasicInteger   BasicType = "INTEGER"
	BasicReference BasicType = "REFERENCE"
	BasicDateTime  BasicType = "DATETIME"
	BasicDate      BasicType = "DATE"
	BasicTime      BasicType = "TIME"
	BasicBoolean   BasicType = "BOOLEAN"
	BasicPerformer BasicType = "PERFORMER"
)

// DataType is the type of a data field or formal parameter.
type DataType struct {
	Kind TypeKind
	// Basic is set when Kind is TypeBasic.
	Basic BasicType
	// Declared is the TypeDeclaration id when Kind is TypeDeclared.
	Declared string
	// External is the location of an ExternalReference.
	External string
	// Enum lists the values of an EnumerationType.
	Enum []string
	// Elem is the element type of an ArrayType or ListType.
	Elem *DataType
	// Members are the member types of a RecordType or UnionType.
	Members []DataType
}

// Participant is a performer of work: a person, role, unit, resource or
// system.
type Participant struct {
	ID          string
	Name        string
	Type        ParticipantType
	Description string
	Pos         Pos

	ExtendedAttributes ExtendedAttributes
}

// ParticipantType is the kind of a participant.
type ParticipantType string

// The participant types.
const (
	ParticipantHuman       ParticipantType = "HUMAN"
	ParticipantRole        ParticipantType = "ROLE"
	ParticipantOrgUnit     ParticipantType = "ORGANIZATIONAL_UNIT"
	ParticipantResource    ParticipantType = "RESOURCE"
	ParticipantResourceSet ParticipantType = "RESOURCE_SET"
	ParticipantSystem      ParticipantType = "SYSTEM"
)

// Application is a piece of host code an activity may call (I2).
type Application struct {
	ID               string
	Name             string
	Description      string
	FormalParameters []*FormalParameter
	// Type is the XPDL 2 application type element name (e.g. "WebService",
	// "Ejb", "Pojo", "Xslt", "Script", "BusinessRule"); empty otherwise.
	Type string
	Pos  Pos

	ExtendedAttributes ExtendedAttributes
}

// ParamMode is the direction of a formal parameter.
type ParamMode string

// The formal parameter modes; an omitted Mode is IN.
const (
	ModeIn    ParamMode = "IN"
	ModeOut   ParamMode = "OUT"
	ModeInOut ParamMode = "INOUT"
)

// FormalParameter is a declared parameter of an application or process.
type FormalParameter struct {
	ID          string
	Name        string
	Mode        ParamMode
	Type        DataType
	IsArray     bool
	Description string
	Pos         Pos
}

// DataField is a process or package variable.
type DataField struct {
	ID      string
	Name    string
	Type    DataType
	IsArray bool
	// InitialValue is the initial value as written; HasInitialValue tells an
	// empty initial value from none.
	InitialValue    string
	HasInitialValue bool
	Length          string
	ReadOnly        bool
	Correlation     bool
	Description     string
	Pos             Pos

	ExtendedAttributes ExtendedAttributes
}

// Process is one WorkflowProcess.
type Process struct {
	ID          string
	Name        string
	AccessLevel string // PUBLIC or PRIVATE
	Pos         Pos

	Header           ProcessHeader
	Redefinable      RedefinableHeader
	FormalParameters []*FormalParameter
	DataFields       []*DataField
	Participants     []*Participant
	Applications     []*Application
	ActivitySets     []*ActivitySet
	// Flow holds the process's top-level activities and transitions.
	Flow

	ExtendedAttributes ExtendedAttributes
}

// ProcessHeader holds a process's descriptive header and time limits.
type ProcessHeader struct {
	DurationUnit string // Y, M, D, h, m, s
	Created      string
	Description  string
	Priority     string
	Limit        string
	ValidFrom    string
	ValidTo      string
	Waiting      string
	Working      string
	Duration     string
}

// ActivitySet is a named sub-graph of a process executed by a
// BlockActivity (an embedded subprocess).
type ActivitySet struct {
	ID   string
	Name string
	Pos  Pos
	Flow
}

// Flow is one scope of activities and the transitions between them: a
// process's top level, or an activity set. Transitions never cross scopes.
type Flow struct {
	Activities  []*Activity
	Transitions []*Transition

	// activityIndex maps an id to the index in Activities of the first
	// activity with it, and first does the same by activity index.
	activityIndex  map[string]int
	first          []int
	transitionByID map[string]*Transition
	// out and in hold, by activity index, the transitions leaving and
	// entering the activity, in document order; strayOut and strayIn hold
	// those of ids that name no activity of the flow (nil when none do).
	out, in           [][]*Transition
	strayOut, strayIn map[string][]*Transition
	// ends holds, by transition index, the indexes of the activities a
	// transition leaves and enters, -1 for an id that names none.
	ends []transitionEnds
}

type transitionEnds struct{ from, to int }

// Activity returns the activity with the given id in this scope, or nil.
func (f *Flow) Activity(id string) *Activity {
	if i, ok := f.activityIndex[id]; ok {
		return f.Activities[i]
	}
	return nil
}

// Transition returns the transition with the given id in this scope, or nil.
func (f *Flow) Transition(id string) *Transition { return f.transitionByID[id] }

// Outgoing returns the transitions leaving the activity, in document order.
func (f *Flow) Outgoing(activityID string) []*Transition {
	if i, ok := f.activityIndex[activityID]; ok {
		return f.out[i]
	}
	return f.strayOut[activityID]
}

// Incoming returns the transitions entering the activity, in document order.
func (f *Flow) Incoming(activityID string) []*Transition {
	if i, ok := f.activityIndex[activityID]; ok {
		return f.in[i]
	}
	return f.strayIn[activityID]
}

// index builds the lookup tables; the first of several duplicates wins.
// The transition lists of all activities share one array (see carve).
func (f *Flow) index() {
	f.activityIndex = make(map[string]int, len(f.Activities))
	f.transitionByID = make(map[string]*Transition, len(f.Transitions))
	f.first = make([]int, len(f.Activities))
	for i, a := range f.Activities {
		first, dup := f.activityIndex[a.ID]
		if !dup {
			first = i
			f.activityIndex[a.ID] = i
		}
		f.first[i] = first
	}
	f.ends = make([]transitionEnds, len(f.Transitions))
	outs, ins := make([]int, len(f.Activities)), make([]int, len(f.Activities))
	for k, t := range f.Transitions {
		if _, dup := f.transitionByID[t.ID]; !dup {
			f.transitionByID[t.ID] = t
		}
		e := transitionEnds{from: -1, to: -1}
		if i, ok := f.activityIndex[t.From]; ok {
			e.from = i
			outs[i]++
		} else {
			f.strayOut = appendStray(f.strayOut, t.From, t)
		}
		if i, ok := f.activityIndex[t.To]; ok {
			e.to = i
			ins[i]++
		} else {
			f.strayIn = appendStray(f.strayIn, t.To, t)
		}
		f.ends[k] = e
	}
	f.out, f.in = carve[*Transition](outs), carve[*Transition](ins)
	for k, t := range f.Transitions {
		e := f.ends[k]
		if e.from >= 0 {
			f.out[e.from] = append(f.out[e.from], t)
		}
		if e.to >= 0 {
			f.in[e.to] = append(f.in[e.to], t)
		}
	}
}

// carve returns empty lists with room for counts[i] items each, cut from
// one array, each with no room to append into the next; lists with a
// count of 0 are nil.
func carve[T any](counts []int) [][]T {
	total := 0
	for _, c := range counts {
		total += c
	}
	all := make([]T, total)
	lists := make([][]T, len(counts))
	for i, c := range counts {
		if c > 0 {
			lists[i], all = all[:0:c], all[c:]
		}
	}
	return lists
}

func appendStray(m map[string][]*Transition, id string, t *Transition) map[string][]*Transition {
	if m == nil {
		m = make(map[string][]*Transition)
	}
	m[id] = append(m[id], t)
	return m
}

// ActivityKind says what an activity does when it runs.
type ActivityKind string

// The activity kinds.
const (
	// ActivityRoute is a gateway: it does no work, only routes.
	ActivityRoute ActivityKind = "Route"
	// ActivityNo has no implementation: a manual step for its performer, or
	// an automatic no-op (XPDL 1 Implementation/No, XPDL 2 No, TaskUser,
	// TaskManual, TaskNone, and activities with no implementation element).
	ActivityNo ActivityKind = "No"
	// ActivityTool calls applications (XPDL 1 Tool, XPDL 2 TaskApplication,
	// TaskService, TaskSend, TaskReceive, TaskReference).
	ActivityTool ActivityKind = "Tool"
	// ActivityScript runs an inline script (XPDL 2 TaskScript).
	ActivityScript ActivityKind = "Script"
	// ActivitySubFlow starts another process.
	ActivitySubFlow ActivityKind = "SubFlow"
	// ActivityBlock runs an ActivitySet (embedded subprocess).
	ActivityBlock ActivityKind = "Block"
	// ActivityEvent is an XPDL 2 start, intermediate or end event.
	ActivityEvent ActivityKind = "Event"
)

// TaskKind is the XPDL 2 Task element used, if any.
type TaskKind string

// The XPDL 2 task kinds; TaskUnspecified for XPDL 1 and non-task activities.
const (
	TaskUnspecified TaskKind = ""
	TaskUser        TaskKind = "User"
	TaskManual      TaskKind = "Manual"
	TaskApplication TaskKind = "Application"
	TaskService     TaskKind = "Service"
	TaskScript      TaskKind = "Script"
	TaskSend        TaskKind = "Send"
	TaskReceive     TaskKind = "Receive"
	TaskReference   TaskKind = "Reference"
	TaskNone        TaskKind = "None"
)

// Activity is one node of a process graph.
type Activity struct {
	ID          string
	Name        string
	Description string
	Kind        ActivityKind
	Task        TaskKind
	Pos         Pos

	// Route is set for ActivityRoute.
	Route *Route
	// Tools are the application calls of an ActivityTool, in order.
	Tools []*ToolCall
	// Script is the inline script of an ActivityScript.
	Script *Expression
	// SubFlow is set for ActivitySubFlow.
	SubFlow *SubFlow
	// Block is set for ActivityBlock.
	Block *Block
	// Event is set for ActivityEvent.
	Event *Event

	// Performers are the performer references as written: participant ids
	// or, in Shark style, expressions.
	Performers []string
	// FormalParameters are the activity's own parameters (XPDL 2.2
	// Activity/FormalParameters): for a manual activity, the OUT and
	// INOUT ones are what its performer may hand back on completion.
	FormalParameters []*FormalParameter
	// StartMode and FinishMode are Automatic, Manual, or empty when not
	// declared.
	StartMode     Mode
	FinishMode    Mode
	Priority      string
	Limit         string
	Documentation string

	Deadlines []*Deadline
	Loop      *Loop

	// Join and Split are the activity's gateway behaviour. Implicit
	// gateways (several transitions, no Join/Split element) are filled in
	// with the documented defaults and marked Implicit.
	Join  Gateway
	Split Gateway

	// Graphics are the diagram positions: XPDL 2 NodeGraphicsInfo, and the
	// JaWE and Bonita layout extended attributes of XPDL 1.
	Graphics []NodeGraphics

	// Reentrant is the activity's Reentrant extended attribute (true or
	// false, in any case); nil when the activity does not say. A
	// reentrant activity starts anew for every arriving token; a
	// non-reentrant one starts at most once per process instance, and
	// its later arrivals are absorbed (docs/reentrancy.md). IsReentrant
	// applies the default.
	Reentrant *bool

	ExtendedAttributes ExtendedAttributes
}

// The extended attributes goxpdl itself acts on.
const (
	// AttrReentrant is the extended attribute read into
	// Activity.Reentrant.
	AttrReentrant = "Reentrant"
	// AttrGenerated, with the value "true", marks the activities,
	// transitions and processes that Rewrite generated.
	AttrGenerated = "goxpdl.Generated"
)

// IsReentrant reports whether the activity starts anew for every
// arriving token: what Reentrant says, and true when it says nothing
// (the XPDL default). The routing activities that Rewrite generates say
// false.
func (a *Activity) IsReentrant() bool { return a.Reentrant == nil || *a.Reentrant }

// IsGenerated reports whether Rewrite generated the activity.
func (a *Activity) IsGenerated() bool { return a.ExtendedAttributes.isTrue(AttrGenerated) }

// Mode is an activity's start or finish mode.
type Mode string

// The activity modes.
const (
	ModeUnspecified Mode = ""
	ModeAutomatic   Mode = "Automatic"
	ModeManual      Mode = "Manual"
)

// GatewayType is the kind of a join or split, with XPDL 2 names mapped to
// the XPDL 1 ones (Exclusive is XOR, Parallel is AND, Inclusive is OR).
type GatewayType string

// The gateway types.
const (
	GatewayNone    GatewayType = ""
	GatewayXOR     GatewayType = "XOR"
	GatewayAND     GatewayType = "AND"
	GatewayOR      GatewayType = "OR"
	GatewayComplex GatewayType = "Complex"
)

// Gateway is the join or split behaviour of an activity.
type Gateway struct {
	Type GatewayType
	// Implicit is true when no Join/Split element declared the type and
	// the reader filled in the default for several transitions (see
	// docs/xpdl-support.md).
	Implicit bool
	// TransitionRefs is a split's declared order of outgoing transitions
	// (XOR splits evaluate in this order); empty for joins.
	TransitionRefs []string
	Pos            Pos
}

// Route is the XPDL 2 gateway description of a Route activity.
type Route struct {
	// GatewayType is the declared type; a Route without one is XOR.
	GatewayType GatewayType
	// ExclusiveType is "Data" or "Event" (an event-based gateway, deferred
	// choice); empty when not declared.
	ExclusiveType string
	Instantiate   bool
	// IncomingCondition is a Complex gateway's join rule: a JavaScript
	// expression over the process variables and arrivals (the incoming
	// branches that have delivered in the current round) and branches
	// (all incoming branches). Empty when not declared.
	IncomingCondition string

	declared bool // GatewayType was written
	typed    bool // the version gives Routes a gateway type (XPDL 2)
}

// ToolType is the type attribute of an XPDL 1 Tool.
type ToolType string

// The tool types.
const (
	ToolApplication ToolType = "APPLICATION"
	ToolProcedure   ToolType = "PROCEDURE"
)

// ToolCall is one application call of an activity.
type ToolCall struct {
	// Application is the id of the Application called; empty for an XPDL 2
	// service task that names none.
	Application      string
	Type             ToolType
	ActualParameters []Expression
	Description      string
	Pos              Pos

	ExtendedAttributes ExtendedAttributes
}

// Execution says whether a caller waits (SYNCHR) or not (ASYNCHR).
type Execution string

// The execution modes.
const (
	ExecUnspecified Execution = ""
	ExecSynchr      Execution = "SYNCHR"
	ExecAsynchr     Execution = "ASYNCHR"
)

// SubFlow is a call of another process.
type SubFlow struct {
	// Process is the called process's id.
	Process string
	// PackageRef is the XPDL 2 PackageRef naming the package that holds the
	// process (an ExternalPackage id); empty when not given.
	PackageRef string
	// Execution defaults to SYNCHR when not declared.
	Execution        Execution
	ActualParameters []Expression
	// InstanceDataField names a data field that receives the child
	// process instance id (XPDL 2).
	InstanceDataField string
	Pos               Pos
}

// Block is a BlockActivity: it runs an ActivitySet of the same process.
type Block struct {
	ActivitySet string
	// StartActivity is the declared first activity; empty means every
	// activity of the set without incoming transitions starts.
	StartActivity string
	Pos           Pos
}

// EventType is the position of an XPDL 2 event in the flow.
type EventType string

// The event types.
const (
	EventStart        EventType = "Start"
	EventIntermediate EventType = "Intermediate"
	EventEnd          EventType = "End"
)

// Trigger is what an XPDL 2 event waits for or produces (Trigger of start
// and intermediate events, Result of end events).
type Trigger string

// The triggers and results; Conditional is XPDL 2.1's "Rule".
const (
	TriggerNone             Trigger = "None"
	TriggerMessage          Trigger = "Message"
	TriggerTimer            Trigger = "Timer"
	TriggerError            Trigger = "Error"
	TriggerConditional      Trigger = "Conditional"
	TriggerLink             Trigger = "Link"
	TriggerSignal           Trigger = "Signal"
	TriggerCancel           Trigger = "Cancel"
	TriggerCompensation     Trigger = "Compensation"
	TriggerTerminate        Trigger = "Terminate"
	TriggerEscalation       Trigger = "Escalation"
	TriggerMultiple         Trigger = "Multiple"
	TriggerParallelMultiple Trigger = "ParallelMultiple"
)

// Event is an XPDL 2 start, intermediate or end event.
type Event struct {
	Type    EventType
	Trigger Trigger
	// Target is the activity a boundary (attached intermediate) event
	// belongs to; empty for events in the normal flow.
	Target string
	// Interrupting says whether a boundary event, when it fires, ends
	// the activity it is attached to (XPDL 2.2 attribute Interrupting;
	// true when absent).
	Interrupting bool
	// Timer is set for TriggerTimer.
	Timer *TimerTrigger
	// ErrorCode is the error an Error event throws or catches.
	ErrorCode string
	// Name of the message, signal or link, where the event names one.
	Ref string
	// Throw says that the event throws its message or signal
	// (TriggerResultMessage or TriggerResultSignal with
	// CatchThrow="THROW") rather than waiting for it; catching is the
	// default. End events produce their Result whatever it says.
	Throw bool
	Pos   Pos
}

// TimerTrigger is the time of a timer event: a point in time (TimeDate) or
// a repeating cycle (TimeCycle). Either may be empty, as real files write.
type TimerTrigger struct {
	TimeDate  Expression
	TimeCycle Expression
}

// Deadline is a time limit on an activity, raising ExceptionName when it
// passes.
type Deadline struct {
	// Execution is SYNCHR (interrupt the activity) or ASYNCHR (start the
	// exception path and go on); empty when not declared (ASYNCHR).
	Execution Execution
	// Condition is the deadline expression: DeadlineCondition (XPDL 1) or
	// DeadlineDuration (XPDL 2).
	Condition     Expression
	ExceptionName string
	Pos           Pos
}

// Empty reports whether the deadline sets no time: its expression is
// empty (an empty DeadlineDuration is schema-valid), or "None" or "null",
// as some exporters write for no deadline. The validator warns about such
// a deadline, and the engine arms nothing for it.
func (d *Deadline) Empty() bool {
	text := strings.TrimSpace(d.Condition.Text)
	return text == "" || strings.EqualFold(text, "None") || strings.EqualFold(text, "null")
}

// LoopType is the kind of an XPDL 2 activity loop.
type LoopType string

// The loop types.
const (
	LoopNone          LoopType = "None"
	LoopStandard      LoopType = "Standard"
	LoopMultiInstance LoopType = "MultiInstance"
)

// Loop is an XPDL 2 activity loop (standard or multi-instance). Values
// are kept as written; the engine applies XPDL's defaults (TestTime
// After, MI_Ordering Parallel, MI_FlowCondition All) and runs loops as
// docs/loops.md describes.
type Loop struct {
	Type LoopType
	// Standard loop.
	Condition Expression
	TestTime  string // Before or After
	Maximum   string
	// Multi-instance loop.
	Ordering      string // Sequential or Parallel
	MICondition   Expression
	Behavior      string // None, One, All, Complex
	FlowCondition Expression
	Pos           Pos
}

// ConditionType is the type of a transition condition.
type ConditionType string

// The condition types; a Condition with no Type is CONDITION.
const (
	ConditionCondition        ConditionType = "CONDITION"
	ConditionOtherwise        ConditionType = "OTHERWISE"
	ConditionException        ConditionType = "EXCEPTION"
	ConditionDefaultException ConditionType = "DEFAULTEXCEPTION"
)

// Transition is a directed edge between two activities of one scope.
type Transition struct {
	ID          string
	Name        string
	From        string
	To          string
	Description string
	// Condition is nil for an unconditional transition.
	Condition *Condition
	Pos       Pos

	// Graphics are the diagram routes of the transition: XPDL 2
	// ConnectorGraphicsInfo, and JaWE's break points of XPDL 1.
	Graphics []ConnectorGraphics

	ExtendedAttributes ExtendedAttributes
}

// ConnectorGraphics is one tool's drawing of a transition: the points it
// passes through, in order. XPDL 2 tools write the whole route (often
// starting and ending on the activities' borders); JaWE's
// JaWE_GRAPH_BREAK_POINTS give only the bends.
type ConnectorGraphics struct {
	ToolID string
	Points []Point
}

// Point is a position on a diagram.
type Point struct{ X, Y float64 }

// Condition is a transition's guard.
type Condition struct {
	Type ConditionType
	// Expression is the rule for CONDITION, and the exception name for
	// EXCEPTION. An empty expression is a label, not a rule: the transition
	// behaves as unconditional.
	Expression Expression
	Pos        Pos
}

// IsRule reports whether the condition is an expression to evaluate: a
// CONDITION with a non-empty expression that is not free text.
func (c *Condition) IsRule() bool {
	return c != nil && c.Type == ConditionCondition && strings.TrimSpace(c.Expression.Text) != "" &&
		c.Expression.Language() != LanguageText
}

// Expression is a piece of text in some expression language: a condition,
// a deadline, an actual parameter or a script.
type Expression struct {
	Text string
	// Grammar is the declared language: the element's ScriptGrammar or
	// ScriptType, else the package's Script Type; empty when undeclared.
	Grammar string
	Pos     Pos
}

// Language is a normalised expression language.
type Language string

// The expression languages the validator distinguishes.
const (
	// LanguageJavaScript covers text/javascript, JavaScript, ECMAScript and
	// undeclared expressions (real XPDL without a declaration is
	// JavaScript or Java-flavoured expressions the engine accepts).
	LanguageJavaScript Language = "javascript"
	// LanguageText is TIBCO's free-text grammar: a label, never evaluated.
	LanguageText Language = "text"
	// LanguageOther is any other declared language (python, java, xpath...).
	LanguageOther Language = "other"
)

// Language returns the normalised language of the expression.
func (e Expression) Language() Language {
	g := strings.ToLower(strings.TrimSpace(e.Grammar))
	switch g {
	case "", "text/javascript", "javascript", "application/javascript",
		"text/ecmascript", "ecmascript", "js", "text/x-javascript":
		return LanguageJavaScript
	case "text", "text/plain", "freetext", "free text":
		return LanguageText
	}
	return LanguageOther
}

// NodeGraphics is one diagram position of an activity.
type NodeGraphics struct {
	ToolID    string
	LaneID    string
	PageID    string
	X, Y      float64
	Width     float64
	Height    float64
	FillColor string
	Shape     string
}

// Pool is an XPDL 2 pool: a participant's swimlane container, usually
// bound to a process.
type Pool struct {
	ID      string
	Name    string
	Process string
	Lanes   []*Lane
	Pos     Pos
	// Orientation is HORIZONTAL or VERTICAL (lanes as rows or columns);
	// empty when not given.
	Orientation string
	// Graphics are the pool's XPDL 2 NodeGraphicsInfo items.
	Graphics []NodeGraphics
}

// Lane is a partition of a pool; its performers apply to the activities
// drawn in it.
type Lane struct {
	ID         string
	Name       string
	ParentLane string
	Performers []string
	Pos        Pos
	// Graphics are the lane's XPDL 2 NodeGraphicsInfo items.
	Graphics []NodeGraphics
}

// MessageFlow is an XPDL 2 message flow between pools or activities.
type MessageFlow struct {
	ID     string
	Name   string
	Source string
	Target string
	Pos    Pos
}

// ExtendedAttribute is a vendor or engine extension. Value is the Value
// attribute, or the element's text when it has no Value attribute; Content
// keeps any child elements as raw XML.
type ExtendedAttribute struct {
	Name    string
	Value   string
	Content string
	Pos     Pos
}

// ExtendedAttributes is a list of extended attributes in document order.
type ExtendedAttributes []ExtendedAttribute

// Get returns the value of the first attribute with the given name.
func (ea ExtendedAttributes) Get(name string) (string, bool) {
	for _, a := range ea {
		if a.Name == name {
			return a.Value, true
		}
	}
	return "", false
}

// isTrue reports whether the first attribute with the given name says
// true, in any case.
func (ea ExtendedAttributes) isTrue(name string) bool {
	v, ok := ea.Get(name)
	return ok && isTrue(v)
}

// Lookup helpers on Package and Process.

// Process returns the process with the given id in this package, or nil.
func (p *Package) Process(id string) *Process {
	for _, proc := range p.Processes {
		if proc.ID == id {
			return proc
		}
	}
	return nil
}

// Label names the process for messages: its Id, then its Name in quotes
// when it has one that differs from the Id, e.g. `p1 "Order handling"`.
func (p *Process) Label() string {
	if p.Name == "" || p.Name == p.ID {
		return p.ID
	}
	return p.ID + " " + strconv.Quote(p.Name)
}

// IsGenerated reports whether Rewrite generated the process (to run a
// race in a loop afresh on every pass).
func (p *Process) IsGenerated() bool { return p.ExtendedAttributes.isTrue(AttrGenerated) }

// ActivitySet returns the activity set with the given id, or nil.
func (p *Process) ActivitySet(id string) *ActivitySet {
	for _, s := range p.ActivitySets {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Flows returns the process's top-level flow followed by the flows of its
// activity sets.
func (p *Process) Flows() []*Flow {
	flows := make([]*Flow, 0, 1+len(p.ActivitySets))
	flows = append(flows, &p.Flow)
	for _, s := range p.ActivitySets {
		flows = append(flows, &s.Flow)
	}
	return flows
}
