package xpdl

import (
	"errors"
	"fmt"
	"strconv"
)

// Definition limits bound what one package may declare, beyond the XML
// limits of ReadOpts: a definition can come from someone the host does
// not fully trust (an upload in the console), and whatever it costs the
// engine to validate, store, rewrite and run it, it costs the host. The
// defaults are generous: each is at least ten times what the largest file
// of the shared corpus of real XPDL (about 150 files from JaWE, Bonita,
// Shark, TIBCO and others) declares, so that only a definition made to
// exceed them, or made by a generator gone wrong, meets them; IDBytes is
// what the engine's tables hold instead. See docs/security.md for the
// table of every limit.
const (
	DefaultMaxProcesses              = 1_000
	DefaultMaxActivities             = 10_000
	DefaultMaxTransitions            = 20_000
	DefaultMaxActivitySets           = 1_000
	DefaultMaxNesting                = 16
	DefaultMaxDataFields             = 5_000
	DefaultMaxFormalParameters       = 500
	DefaultMaxParticipants           = 5_000
	DefaultMaxApplications           = 5_000
	DefaultMaxSubFlows               = 5_000
	DefaultMaxDeadlines              = 100
	DefaultMaxExpressionBytes        = 64 << 10
	DefaultMaxExtendedAttributeBytes = 256 << 10
	DefaultMaxIDBytes                = 255
)

// Limits are the definition limits a package is checked against
// (CheckLimits, Validate, and the engine at every deployment). A zero
// field takes its default (the Default... constants); to lift a limit,
// set it to math.MaxInt.
type Limits struct {
	// Processes limits the WorkflowProcesses of one package.
	Processes int `json:"processes"`
	// Activities limits the activities of one process, those of its
	// activity sets included.
	Activities int `json:"activities"`
	// Transitions limits the transitions of one process, those of its
	// activity sets included.
	Transitions int `json:"transitions"`
	// ActivitySets limits the activity sets of one process.
	ActivitySets int `json:"activitySets"`
	// Nesting limits how deep block activities nest: a block activity
	// in the process's own flow is level 1, one in the activity set it
	// runs level 2, and so on.
	Nesting int `json:"nesting"`
	// DataFields limits the data fields of one package, its processes'
	// included.
	DataFields int `json:"dataFields"`
	// FormalParameters limits the formal parameters of one process,
	// application or activity.
	FormalParameters int `json:"formalParameters"`
	// Participants limits the participants of one package, its
	// processes' included.
	Participants int `json:"participants"`
	// Applications limits the applications of one package, its
	// processes' included.
	Applications int `json:"applications"`
	// SubFlows limits the SubFlow activities of one package.
	SubFlows int `json:"subFlows"`
	// Deadlines limits the deadlines of one activity.
	Deadlines int `json:"deadlines"`
	// ExpressionBytes limits the length in bytes of one script,
	// condition, expression (an actual parameter, a deadline, a loop's
	// conditions, a timer's time, a complex gateway's rule, a performer)
	// or data field initial value.
	ExpressionBytes int `json:"expressionBytes"`
	// ExtendedAttributeBytes limits the length in bytes of one extended
	// attribute: its name, value and content together.
	ExtendedAttributeBytes int `json:"extendedAttributeBytes"`
	// IDBytes limits the length in bytes of one Id (of the package, a
	// process, activity set, activity, transition, data field, formal
	// parameter, participant or application). The default, 255, is what
	// the engine's tables hold; a longer id would fail at run time on
	// MySQL/MariaDB, so raising it is only for a package that is checked,
	// not deployed.
	IDBytes int `json:"idBytes"`
}

// DefaultLimits returns the default definition limits, every field set.
func DefaultLimits() Limits { return Limits{}.WithDefaults() }

// WithDefaults returns the limits with every zero (or negative) field set
// to its default.
func (l Limits) WithDefaults() Limits {
	c := l
	for id := range limitCount {
		if p := c.field(id); *p <= 0 {
			*p = limitDefaults[id]
		}
	}
	return c
}

// limitID names one field of Limits.
type limitID int

const (
	limProcesses limitID = iota
	limActivities
	limTransitions
	limActivitySets
	limNesting
	limDataFields
	limFormalParameters
	limParticipants
	limApplications
	limSubFlows
	limDeadlines
	limExpressionBytes
	limExtendedAttributeBytes
	limIDBytes
	limitCount
)

// limitNames are the Limits field names, by limitID: what a LimitError
// names.
var limitNames = [limitCount]string{
	"Processes", "Activities", "Transitions", "ActivitySets", "Nesting", "DataFields",
	"FormalParameters", "Participants", "Applications", "SubFlows", "Deadlines",
	"ExpressionBytes", "ExtendedAttributeBytes", "IDBytes",
}

var limitDefaults = [limitCount]int{
	DefaultMaxProcesses, DefaultMaxActivities, DefaultMaxTransitions, DefaultMaxActivitySets,
	DefaultMaxNesting, DefaultMaxDataFields, DefaultMaxFormalParameters, DefaultMaxParticipants,
	DefaultMaxApplications, DefaultMaxSubFlows, DefaultMaxDeadlines, DefaultMaxExpressionBytes,
	DefaultMaxExtendedAttributeBytes, DefaultMaxIDBytes,
}

// field returns the field of l that id names.
func (l *Limits) field(id limitID) *int {
	switch id {
	case limProcesses:
		return &l.Processes
	case limActivities:
		return &l.Activities
	case limTransitions:
		return &l.Transitions
	case limActivitySets:
		return &l.ActivitySets
	case limNesting:
		return &l.Nesting
	case limDataFields:
		return &l.DataFields
	case limFormalParameters:
		return &l.FormalParameters
	case limParticipants:
		return &l.Participants
	case limApplications:
		return &l.Applications
	case limSubFlows:
		return &l.SubFlows
	case limDeadlines:
		return &l.Deadlines
	case limExpressionBytes:
		return &l.ExpressionBytes
	case limExtendedAttributeBytes:
		return &l.ExtendedAttributeBytes
	case limIDBytes:
		return &l.IDBytes
	}
	panic("xpdl: unknown limit " + strconv.Itoa(int(id)))
}

// ErrLimit is wrapped by every *LimitError: a package exceeds one of its
// definition limits.
var ErrLimit = errors.New("definition limit exceeded")

// LimitError is a package that exceeds one of its definition limits
// (Limits). It matches ErrLimit and ErrInvalid; Problem gives it in the
// form of a validation problem, with the code "limit".
type LimitError struct {
	// Limit is the name of the Limits field, e.g. "Activities".
	Limit string
	// Max is the limit's value and Count what the package has (a count,
	// a depth or a length in bytes, as the limit is).
	Max, Count int
	// File and Pos are where: the element that holds what was counted
	// (the package, a process, an activity, an expression).
	File string
	Pos  Pos
	// IDs are the ids of the elements involved, most specific first.
	IDs []string
	// Msg says it in words, naming the limit.
	Msg string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
}

// Unwrap returns ErrLimit.
func (e *LimitError) Unwrap() error { return ErrLimit }

// Is makes errors.Is(err, ErrInvalid) true for every *LimitError.
func (e *LimitError) Is(target error) bool { return target == ErrInvalid }

// Problem returns the error as a validation problem (code "limit").
func (e *LimitError) Problem() Problem {
	return Problem{File: e.File, Line: e.Pos.Line, Col: e.Pos.Col, Severity: SeverityError,
		Code: "limit", Message: e.Msg, IDs: e.IDs}
}

// CheckLimits checks pkg against the definition limits l (nil: the
// defaults) and returns a *LimitError for the first limit it exceeds, or
// nil. Packages pkg references as ExternalPackages are not checked: each
// is checked when it is deployed. It looks at the package as read, before
// validation, and costs one walk over it.
func CheckLimits(pkg *Package, l *Limits) error {
	if e := overLimit(pkg, l); e != nil {
		return e
	}
	return nil
}

// overLimit is CheckLimits with a typed result.
func overLimit(pkg *Package, l *Limits) *LimitError {
	var lim Limits
	if l != nil {
		lim = *l
	}
	lim = lim.WithDefaults()
	var found *LimitError
	measureLimits(pkg, func(m measured) bool {
		limit := *lim.field(m.limit)
		if m.n <= limit {
			return true
		}
		found = m.err(pkg.Source, limit)
		return false
	})
	return found
}

// measured is one thing measured against a limit: n of what noun says,
// held by the element of kind and id at pos.
type measured struct {
	limit    limitID
	n        int
	pos      Pos
	kind, id string
	// noun is what was counted ("activities"), or for a length in bytes
	// what is long ("the script"); ids are the element ids involved.
	noun  string
	bytes bool
	ids   []string
}

func (m measured) err(file string, limit int) *LimitError {
	name := limitNames[m.limit]
	holder := m.kind
	if m.id != "" || m.kind != "package" {
		holder += " " + strconv.Quote(shortID(m.id))
	}
	var msg string
	if m.bytes {
		msg = fmt.Sprintf("%s: %s is %d bytes long, more than the limit of %d (Limits.%s)", holder, m.noun, m.n, limit, name)
	} else {
		msg = fmt.Sprintf("%s has %d %s, more than the limit of %d (Limits.%s)", holder, m.n, m.noun, limit, name)
	}
	ids := make([]string, len(m.ids))
	for i, id := range m.ids {
		ids[i] = shortID(id)
	}
	return &LimitError{Limit: name, Max: limit, Count: m.n, File: file, Pos: m.pos, IDs: ids, Msg: msg}
}

// shortID keeps a message readable when an id is what is too long.
func shortID(id string) string {
	const keep = 64
	if len(id) <= keep {
		return id
	}
	cut := keep
	for cut > 0 && id[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return id[:cut] + "…"
}

// measureLimits hands every count of pkg that a limit bounds to visit, in
// the order of the model (package, then each process, its activities in
// flow order), until visit returns false.
func measureLimits(pkg *Package, visit func(measured) bool) {
	w := limitWalker{visit: visit}
	w.walkPackage(pkg)
}

type limitWalker struct {
	visit   func(measured) bool
	stopped bool
}

func (w *limitWalker) see(m measured) {
	if !w.stopped && !w.visit(m) {
		w.stopped = true
	}
}

func (w *limitWalker) id(kind, id string, pos Pos) {
	w.see(measured{limit: limIDBytes, n: len(id), pos: pos, kind: kind, id: id, noun: "the id", bytes: true, ids: []string{id}})
}

func (w *limitWalker) text(kind, id, noun, text string, pos Pos, ids []string) {
	if len(text) == 0 {
		return
	}
	w.see(measured{limit: limExpressionBytes, n: len(text), pos: pos, kind: kind, id: id, noun: noun, bytes: true, ids: ids})
}

func (w *limitWalker) expr(kind, id, noun string, e Expression, dflt Pos, ids []string) {
	pos := e.Pos
	if pos == (Pos{}) {
		pos = dflt
	}
	w.text(kind, id, noun, e.Text, pos, ids)
}

func (w *limitWalker) extended(kind, id string, eas ExtendedAttributes) {
	for _, ea := range eas {
		n := len(ea.Name) + len(ea.Value) + len(ea.Content)
		w.see(measured{limit: limExtendedAttributeBytes, n: n, pos: ea.Pos, kind: kind, id: id,
			noun: "extended attribute " + strconv.Quote(shortID(ea.Name)), bytes: true, ids: []string{id}})
	}
}

func (w *limitWalker) formals(kind, id string, pos Pos, fps []*FormalParameter) {
	w.see(measured{limit: limFormalParameters, n: len(fps), pos: pos, kind: kind, id: id, noun: "formal parameters", ids: []string{id}})
	for _, fp := range fps {
		w.id("formal parameter", fp.ID, fp.Pos)
	}
}

func (w *limitWalker) dataFields(dfs []*DataField) {
	for _, df := range dfs {
		w.id("data field", df.ID, df.Pos)
		w.text("data field", df.ID, "the initial value", df.InitialValue, df.Pos, []string{df.ID})
		w.extended("data field", df.ID, df.ExtendedAttributes)
	}
}

func (w *limitWalker) participants(ps []*Participant) {
	for _, p := range ps {
		w.id("participant", p.ID, p.Pos)
		w.extended("participant", p.ID, p.ExtendedAttributes)
	}
}

func (w *limitWalker) applications(as []*Application) {
	for _, a := range as {
		w.id("application", a.ID, a.Pos)
		w.formals("application", a.ID, a.Pos, a.FormalParameters)
		w.extended("application", a.ID, a.ExtendedAttributes)
	}
}

func (w *limitWalker) walkPackage(pkg *Package) {
	pkgOf := func(limit limitID, n int, noun string) {
		w.see(measured{limit: limit, n: n, pos: pkg.Pos, kind: "package", id: pkg.ID, noun: noun, ids: []string{pkg.ID}})
	}
	// The package's totals first: they are cheap, and the largest costs.
	fields, parts, apps, subflows := len(pkg.DataFields), len(pkg.Participants), len(pkg.Applications), 0
	for _, proc := range pkg.Processes {
		fields += len(proc.DataFields)
		parts += len(proc.Participants)
		apps += len(proc.Applications)
		for _, f := range proc.Flows() {
			for _, a := range f.Activities {
				if a.SubFlow != nil {
					subflows++
				}
			}
		}
	}
	pkgOf(limProcesses, len(pkg.Processes), "processes")
	pkgOf(limDataFields, fields, "data fields (its processes' included)")
	pkgOf(limParticipants, parts, "participants (its processes' included)")
	pkgOf(limApplications, apps, "applications (its processes' included)")
	pkgOf(limSubFlows, subflows, "SubFlow activities")
	w.id("package", pkg.ID, pkg.Pos)
	w.extended("package", pkg.ID, pkg.ExtendedAttributes)
	w.dataFields(pkg.DataFields)
	w.participants(pkg.Participants)
	w.applications(pkg.Applications)
	for _, proc := range pkg.Processes {
		if w.stopped {
			return
		}
		w.walkProcess(proc)
	}
}

func (w *limitWalker) walkProcess(proc *Process) {
	procOf := func(limit limitID, n int, noun string) {
		w.see(measured{limit: limit, n: n, pos: proc.Pos, kind: "process", id: proc.ID, noun: noun, ids: []string{proc.ID}})
	}
	acts, trans := 0, 0
	for _, f := range proc.Flows() {
		acts += len(f.Activities)
		trans += len(f.Transitions)
	}
	procOf(limActivities, acts, "activities (its activity sets' included)")
	procOf(limTransitions, trans, "transitions (its activity sets' included)")
	procOf(limActivitySets, len(proc.ActivitySets), "activity sets")
	if w.stopped {
		return
	}
	w.nesting(proc)
	w.id("process", proc.ID, proc.Pos)
	w.formals("process", proc.ID, proc.Pos, proc.FormalParameters)
	w.extended("process", proc.ID, proc.ExtendedAttributes)
	w.dataFields(proc.DataFields)
	w.participants(proc.Participants)
	w.applications(proc.Applications)
	for _, set := range proc.ActivitySets {
		w.id("activity set", set.ID, set.Pos)
	}
	for _, f := range proc.Flows() {
		for _, a := range f.Activities {
			if w.stopped {
				return
			}
			w.activity(a)
		}
		for _, t := range f.Transitions {
			w.id("transition", t.ID, t.Pos)
			if t.Condition != nil {
				w.expr("transition", t.ID, "the condition", t.Condition.Expression, t.Condition.Pos, []string{t.ID})
			}
			w.extended("transition", t.ID, t.ExtendedAttributes)
		}
	}
}

func (w *limitWalker) activity(a *Activity) {
	const kind = "activity"
	ids := []string{a.ID}
	w.id(kind, a.ID, a.Pos)
	w.see(measured{limit: limDeadlines, n: len(a.Deadlines), pos: a.Pos, kind: kind, id: a.ID, noun: "deadlines", ids: ids})
	if len(a.FormalParameters) > 0 {
		w.formals(kind, a.ID, a.Pos, a.FormalParameters)
	}
	if a.Script != nil {
		w.expr(kind, a.ID, "the script", *a.Script, a.Pos, ids)
	}
	for _, tc := range a.Tools {
		for _, p := range tc.ActualParameters {
			w.expr(kind, a.ID, "an actual parameter", p, tc.Pos, ids)
		}
		w.extended(kind, a.ID, tc.ExtendedAttributes)
	}
	if sf := a.SubFlow; sf != nil {
		for _, p := range sf.ActualParameters {
			w.expr(kind, a.ID, "an actual parameter", p, sf.Pos, ids)
		}
	}
	for _, d := range a.Deadlines {
		w.expr(kind, a.ID, "a deadline", d.Condition, d.Pos, ids)
	}
	if l := a.Loop; l != nil {
		w.expr(kind, a.ID, "the loop condition", l.Condition, l.Pos, ids)
		w.expr(kind, a.ID, "the MI_Condition", l.MICondition, l.Pos, ids)
		w.expr(kind, a.ID, "the ComplexMI_FlowCondition", l.FlowCondition, l.Pos, ids)
	}
	if ev := a.Event; ev != nil && ev.Timer != nil {
		w.expr(kind, a.ID, "the TimeDate", ev.Timer.TimeDate, ev.Pos, ids)
		w.expr(kind, a.ID, "the TimeCycle", ev.Timer.TimeCycle, ev.Pos, ids)
	}
	if a.Route != nil {
		w.text(kind, a.ID, "the IncomingCondition", a.Route.IncomingCondition, a.Pos, ids)
	}
	for _, p := range a.Performers {
		w.text(kind, a.ID, "a performer", p, a.Pos, ids)
	}
	w.extended(kind, a.ID, a.ExtendedAttributes)
}

// nesting measures how deep the block activities of the process's own
// flow nest. An activity set that runs itself, directly or through
// others, is the validator's to refuse (block-recursion); here the
// recursion counts once.
func (w *limitWalker) nesting(proc *Process) {
	sets := make(map[string]*ActivitySet, len(proc.ActivitySets))
	for _, s := range proc.ActivitySets {
		if _, dup := sets[s.ID]; !dup {
			sets[s.ID] = s
		}
	}
	depth := map[*ActivitySet]int{}
	var setDepth func(s *ActivitySet) int
	setDepth = func(s *ActivitySet) int {
		if d, ok := depth[s]; ok {
			return d // known, or on the way (0: a cycle ends here)
		}
		depth[s] = 0
		d := 0
		for _, a := range s.Activities {
			if a.Block == nil {
				continue
			}
			if inner := sets[a.Block.ActivitySet]; inner != nil {
				d = max(d, 1+setDepth(inner))
			} else {
				d = max(d, 1)
			}
		}
		depth[s] = d
		return d
	}
	for _, a := range proc.Activities {
		if a.Block == nil {
			continue
		}
		d := 1
		if s := sets[a.Block.ActivitySet]; s != nil {
			d += setDepth(s)
		}
		w.see(measured{limit: limNesting, n: d, pos: a.Pos, kind: "activity", id: a.ID,
			noun: "levels of block activities", ids: []string{a.ID}})
	}
}
