package statemachine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Definition declares a state machine in Go. New compiles it into an XPDL
// process (docs/statemachine.md shows the shape).
type Definition struct {
	// ID names the machine: it is the id of the XPDL package and process
	// it compiles into, and of the instances' process. A letter, then
	// letters, digits, '_' and '-'.
	ID string
	// Name is a display name of the package and process; default ID.
	Name string
	// Initial is the state Start enters.
	Initial string
	// States are the machine's states, in the order the XPDL lists them.
	// At least one is Final.
	States []State
	// Vars are the machine's variables: data fields of the process that
	// Enter and Resume read and set (StateContext.Var, Set), kept with
	// the instance and shown by the console.
	Vars []Var
	// Roles are the roles work may be offered to (State.Performers,
	// StateContext.Assign): each becomes a ROLE participant of the
	// package, which the engine's resource.Directory resolves to people.
	// A performer name that is not a role is a user id.
	Roles []string
}

// State is one state of a machine.
type State struct {
	// Name identifies the state: a letter, then letters, digits, '_' and
	// '-'. It is the id of the state's XPDL activity, the State of its
	// bookmarks, and what Resume returns to move here.
	Name string
	// Performers are who the state's work item is offered to: role
	// names (Definition.Roles) or user ids. Enter may assign others
	// (StateContext.Assign). With nobody, the work item is offered to no
	// one: the state waits for the host (Machine.Resume as HostUser, or
	// any user the host names).
	Performers []string
	// Enter runs when the machine enters the state, in the transaction
	// that moves it there (Start's first step, or the Resume that chose
	// the state). Optional.
	Enter EnterFunc
	// Resume runs when the state's bookmark is resumed, in the
	// transaction that completes it, and returns the name of the next
	// state. Required for a state that is not Final.
	Resume ResumeFunc
	// Final ends the machine: the instance completes when it enters a
	// final state. A final state has no bookmark and no Resume.
	Final bool
}

// Var declares a machine variable.
type Var struct {
	// Name is the variable's id: a letter, then letters, digits, '_'
	// and '-'.
	Name string
	// Type is its XPDL type (xpdl.Basic(xpdl.BasicInteger), ...); the
	// engine checks every value against it (docs/engine.md lists the Go
	// type of each).
	Type xpdl.DataType
	// Initial is the value it starts with, as XPDL writes it ("0",
	// "true", "text"); empty: the type's zero value.
	Initial string
}

// EnterFunc runs when the machine enters a state. It may read and set
// variables, assign the state's work (StateContext.Assign) and write the
// host's own rows through StateContext.Tx. An error refuses the move: a
// Resume that chose the state changes nothing and returns it; the
// first state's Enter failing leaves the instance stuck (ErrStuck) with
// an incident an operator retries. engine.Retryable(err) rolls the step
// back to be tried again.
//
// Like every call the engine makes to the host's code, Enter may run more
// than once for one move (a retried transaction): what it does outside
// StateContext.Tx must be safe to repeat.
type EnterFunc func(ctx context.Context, sc *StateContext) error

// ResumeFunc runs when a state's bookmark is resumed with input, and
// returns the name of the state to enter next: another state, an earlier
// one (a rollback), the same one (the state is entered again, with a new
// bookmark) or a final one. An error, or a name that is no state
// (*UnknownStateError), refuses the Resume: nothing changes and the
// bookmark stays valid. It may run more than once for one Resume, as
// EnterFunc may.
type ResumeFunc func(ctx context.Context, sc *StateContext, bookmark Bookmark, input map[string]any) (next string, err error)

// ErrInvalid: a Definition cannot be compiled; the *DefinitionError says
// why.
var ErrInvalid = errors.New("invalid state machine definition")

// DefinitionError lists every problem of a Definition. It matches
// ErrInvalid.
type DefinitionError struct {
	// Machine is the Definition's ID.
	Machine string
	// Problems says what is wrong, one problem each.
	Problems []string
}

func (e *DefinitionError) Error() string {
	return fmt.Sprintf("state machine %q: %s", e.Machine, strings.Join(e.Problems, "; "))
}

// Is matches ErrInvalid.
func (e *DefinitionError) Is(target error) bool { return target == ErrInvalid }

// name is what a machine, state, variable or role may be called: an XPDL
// id that is also a plain JavaScript identifier (conditions read it) and
// never starts with '_', which the compiled process keeps for its own.
var name = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// The ids the compiled process keeps for itself. They start with '_',
// which no name the Definition gives may.
const (
	// blockID is the process's one top-level activity, which runs the
	// machine's activity set.
	blockID = "_machine"
	// setID is the activity set of the states.
	setID = "machine"
	// startID is the route whose onEnter hook enters the initial state.
	startID = "_start"
	// nextID is the route that leads from every state to the next.
	nextID = "_next"

	// varState holds the name of the state the machine is in (or
	// entering); the routes read it.
	varState = "_state"
	// varInput holds the input of the Start or Resume moving the
	// machine, until its hook has read it.
	varInput = "_input"
	// varPerformers holds who the work item of the state being entered
	// is offered to; the state activities' performer reads it.
	varPerformers = "_performers"
	// varStates lists the states of the deployed version, so that a
	// hook refuses a next state the version's routes cannot reach.
	varStates = "_states"
)

// hookEvent is the content of a hook extended attribute
// (engine.AttrHook) for an engine hook event.
func hookEvent(event string) string {
	return "<HookEventName>" + event + "</HookEventName>"
}

// check returns the problems of d.
func (d *Definition) check() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !name.MatchString(d.ID) {
		add("ID %q is not a name (a letter, then letters, digits, '_' and '-')", d.ID)
	}
	seen := map[string]string{}
	declare := func(kind, n string) {
		if !name.MatchString(n) {
			add("%s %q is not a name (a letter, then letters, digits, '_' and '-')", kind, n)
			return
		}
		if other, dup := seen[n]; dup {
			add("%s %q has the name of %s %q", kind, n, other, n)
			return
		}
		seen[n] = kind
	}
	finals := 0
	for i := range d.States {
		s := &d.States[i]
		declare("state", s.Name)
		switch {
		case s.Final && s.Resume != nil:
			add("state %q is final and has a Resume: a final state is never resumed", s.Name)
		case !s.Final && s.Resume == nil:
			add("state %q has no Resume: only a final state needs none", s.Name)
		}
		if s.Final {
			finals++
			if len(s.Performers) > 0 {
				add("state %q is final and has Performers: a final state has no work", s.Name)
			}
		}
		for _, p := range s.Performers {
			if strings.TrimSpace(p) == "" {
				add("state %q has an empty performer", s.Name)
			}
		}
	}
	if len(d.States) == 0 {
		add("no states")
	} else if finals == 0 {
		add("no final state: a machine must be able to end")
	}
	if !slices.ContainsFunc(d.States, func(s State) bool { return s.Name == d.Initial }) {
		add("Initial %q is not a state", d.Initial)
	}
	for _, v := range d.Vars {
		declare("variable", v.Name)
		if v.Type.Kind == xpdl.TypeUnknown {
			add("variable %q has no type", v.Name)
		}
	}
	for _, r := range d.Roles {
		declare("role", r)
	}
	return problems
}

// compile builds the XPDL package of a checked Definition: one process
// whose only top-level activity runs the activity set "machine":
//
//	_start ──► _next ──► each state when _state names it
//	              ▲         │
//	              └─────────┘ (every state that is not final)
//
// _start is a route whose onEnter hook enters the initial state; every
// state that is not final is a user task whose work item is the
// bookmark, offered to _performers, with an onFinish hook that resumes
// it and enters the next state; a final state is a route with no way
// out, where the set, and so the process, ends. class is the tool agent
// class the hooks call.
func (d *Definition) compile(class string) (*xpdl.Package, error) {
	display := d.Name
	if display == "" {
		display = d.ID
	}
	pb := xpdl.NewPackage(d.ID).Name(display)
	for _, r := range d.Roles {
		pb.Participant(r, r, xpdl.ParticipantRole)
	}
	p := xpdl.NewProcess(d.ID).Name(display)
	str := xpdl.Basic(xpdl.BasicString)
	p.DataField(varState, str).Description("the state the machine is in")
	p.DataField(varInput, xpdl.DataType{Kind: xpdl.TypeSchema}).Description("the input of the Start or Resume moving the machine")
	p.DataField(varPerformers, xpdl.DataType{Kind: xpdl.TypeArray, Elem: &str}).Description("who the state being entered is offered to")
	names := make([]string, len(d.States))
	for i, s := range d.States {
		names[i] = s.Name
	}
	p.DataField(varStates, str).Initial(strings.Join(names, " ")).Description("the states of this version")
	for _, v := range d.Vars {
		df := p.DataField(v.Name, v.Type)
		if v.Initial != "" {
			df.Initial(v.Initial)
		}
	}
	p.Block(blockID, setID).Name(display)
	set := p.ActivitySet(setID)
	set.Route(startID, xpdl.GatewayXOR).Name("start")
	// Every state leads back here: reentrant, so that each arrival
	// routes anew (docs/reentrancy.md).
	set.Route(nextID, xpdl.GatewayXOR).Name("next").Reentrant(true)
	set.Transition(startID, nextID)
	for _, s := range d.States {
		if s.Final {
			set.Route(s.Name, xpdl.GatewayXOR).Name(s.Name)
		} else {
			set.UserTask(s.Name).Name(s.Name).Performer(varPerformers)
			set.Transition(s.Name, nextID)
		}
		set.Transition(nextID, s.Name).When(varState + " == " + strconv.Quote(s.Name))
	}
	pkg, err := pb.Process(p).Build()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	// The hooks' extended attributes hold an element (the event's name),
	// which the builders do not write: they are added to the built model,
	// which xpdl.Marshal writes as it is.
	proc := pkg.Process(d.ID)
	for _, set := range proc.ActivitySets {
		for _, a := range set.Activities {
			switch {
			case a.ID == startID:
				a.ExtendedAttributes = append(a.ExtendedAttributes, xpdl.ExtendedAttribute{
					Name: engine.AttrHook, Value: class, Content: hookEvent(engine.HookOnEnter)})
			case engine.IsManual(a):
				a.ExtendedAttributes = append(a.ExtendedAttributes, xpdl.ExtendedAttribute{
					Name: engine.AttrHook, Value: class, Content: hookEvent(engine.HookOnFinish)})
			}
		}
	}
	return pkg, nil
}
