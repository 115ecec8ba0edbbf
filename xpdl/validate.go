package xpdl

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ValidateOpts are the options for Validate.
type ValidateOpts struct {
	// Deployed are other packages deployed alongside this one: SubFlow
	// references may name their processes, as they may in the engine once
	// all are deployed.
	Deployed []*Package
	// Limits are the definition limits the package is checked against
	// first (nil: the defaults, DefaultLimits). A package that exceeds
	// one is reported with that problem alone (code "limit"), besides what
	// the reader noticed: the other rules are not checked, as their cost
	// is what the limits bound.
	Limits *Limits
}

// Validate checks the meaning of a package that Read or Load returned and
// reports every problem at once, errors and warnings, sorted by position,
// once the package is within its definition limits (ValidateOpts.Limits).
// The rules and their codes are listed in docs/xpdl-support.md. A package
// whose problems include no error can be deployed.
func Validate(pkg *Package, opts *ValidateOpts) Problems {
	v := &validator{pkg: pkg}
	if opts != nil {
		v.opts = *opts
	}
	v.problems = append(v.problems, pkg.readProblems...)
	if e := overLimit(pkg, v.opts.Limits); e != nil {
		v.problems = append(v.problems, e.Problem())
		v.sort()
		return v.problems
	}
	v.collectDeclarations()
	v.checkPackage()
	for _, proc := range pkg.Processes {
		v.checkProcess(proc)
	}
	v.sort()
	return v.problems
}

// sort orders the problems by position.
func (v *validator) sort() {
	slices.SortStableFunc(v.problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

// validator holds what one Validate call knows: the declarations visible
// to the package (its own, its external packages' and, for subflows, the
// deployed packages') and the problems found so far.
type validator struct {
	pkg      *Package
	opts     ValidateOpts
	problems Problems

	participants map[string]bool
	applications map[string]*Application
	types        map[string]bool
	processes    map[string]*Process
	// packagesByID maps package ids (this one, external, deployed) to
	// the packages with that id, in that order, for XPDL 2 SubFlow
	// PackageRef.
	packagesByID map[string][]*Package
}

func (v *validator) report(pos Pos, sev Severity, code string, ids []string, format string, args ...any) {
	v.problems = append(v.problems, Problem{
		File: v.pkg.Source, Line: pos.Line, Col: pos.Col, Severity: sev, Code: code,
		Message: fmt.Sprintf(format, args...), IDs: ids,
	})
}

func (v *validator) errorf(pos Pos, code string, ids []string, format string, args ...any) {
	v.report(pos, SeverityError, code, ids, format, args...)
}

func (v *validator) warnf(pos Pos, code string, ids []string, format string, args ...any) {
	v.report(pos, SeverityWarning, code, ids, format, args...)
}

// withExternals returns pkg and every package reachable from it through
// loaded ExternalPackages, each once.
func withExternals(pkg *Package) []*Package {
	seen := map[*Package]bool{}
	var out []*Package
	var walk func(p *Package)
	walk = func(p *Package) {
		if p == nil || seen[p] {
			return
		}
		seen[p] = true
		out = append(out, p)
		for _, ext := range p.ExternalPackages {
			walk(ext.Package)
		}
	}
	walk(pkg)
	return out
}

func (v *validator) collectDeclarations() {
	v.participants = map[string]bool{}
	v.applications = map[string]*Application{}
	v.types = map[string]bool{}
	v.processes = map[string]*Process{}
	v.packagesByID = map[string][]*Package{}
	visible := withExternals(v.pkg)
	for _, p := range visible {
		for _, part := range p.Participants {
			v.participants[part.ID] = true
		}
		for _, app := range p.Applications {
			if _, ok := v.applications[app.ID]; !ok {
				v.applications[app.ID] = app
			}
		}
		for _, td := range p.TypeDeclarations {
			v.types[td.ID] = true
		}
	}
	// Processes: this package's first, then external, then deployed ones.
	all := visible
	for _, d := range v.opts.Deployed {
		all = append(all, withExternals(d)...)
	}
	for _, p := range all {
		if !slices.Contains(v.packagesByID[p.ID], p) {
			v.packagesByID[p.ID] = append(v.packagesByID[p.ID], p)
		}
		for _, proc := range p.Processes {
			if _, ok := v.processes[proc.ID]; !ok {
				v.processes[proc.ID] = proc
			}
		}
	}
}

// checkPackage checks package-level declarations.
func (v *validator) checkPackage() {
	pkg := v.pkg
	if pkg.ID == "" {
		v.errorf(pkg.Pos, "missing-id", nil, "package has no Id")
	}
	for _, ext := range pkg.ExternalPackages {
		switch {
		case ext.LoadErr != nil:
			v.errorf(ext.Pos, "external-package", []string{ext.ID}, "external package %q could not be loaded: %v", ext.Href, ext.LoadErr)
		case ext.Package == nil:
			v.warnf(ext.Pos, "external-package", []string{ext.ID}, "external package %q was not loaded (Read does not load references; Load does); what it declares cannot be resolved", ext.Href)
		}
	}
	ids := newIDSet(v, "package")
	for _, td := range pkg.TypeDeclarations {
		ids.add("type declaration", td.ID, td.Pos)
		v.checkType(td.Type, td.Pos, td.ID)
	}
	ids = newIDSet(v, "package")
	for _, p := range pkg.Participants {
		ids.add("participant", p.ID, p.Pos)
	}
	ids = newIDSet(v, "package")
	for _, a := range pkg.Applications {
		ids.add("application", a.ID, a.Pos)
		v.checkFormalParameters(a.FormalParameters)
	}
	ids = newIDSet(v, "package")
	for _, df := range pkg.DataFields {
		ids.add("data field", df.ID, df.Pos)
		v.checkDataField(df)
	}
	ids = newIDSet(v, "package")
	for _, p := range pkg.Processes {
		ids.add("process", p.ID, p.Pos)
	}
}

// idSet reports duplicate and missing ids within one namespace.
type idSet struct {
	v     *validator
	scope string
	first map[string]Pos
}

func newIDSet(v *validator, scope string) *idSet {
	return &idSet{v: v, scope: scope, first: map[string]Pos{}}
}

func (s *idSet) add(kind, id string, pos Pos) {
	if id == "" {
		s.v.errorf(pos, "missing-id", nil, "%s has no Id", kind)
		return
	}
	if first, dup := s.first[id]; dup {
		s.v.errorf(pos, "duplicate-id", []string{id}, "duplicate %s id %q in %s (first declared at %d:%d)", kind, id, s.scope, first.Line, first.Col)
		return
	}
	s.first[id] = pos
}

func (v *validator) checkType(t DataType, pos Pos, owner string) {
	switch t.Kind {
	case TypeDeclared:
		if !v.types[t.Declared] {
			v.errorf(pos, "unknown-type", []string{owner, t.Declared}, "%q uses undeclared type %q", owner, t.Declared)
		}
	case TypeArray, TypeList:
		if t.Elem != nil {
			v.checkType(*t.Elem, pos, owner)
		}
	case TypeRecord, TypeUnion:
		for _, m := range t.Members {
			v.checkType(m, pos, owner)
		}
	}
}

func (v *validator) checkFormalParameters(fps []*FormalParameter) {
	for _, fp := range fps {
		v.checkType(fp.Type, fp.Pos, fp.ID)
	}
}

func (v *validator) checkDataField(df *DataField) {
	v.checkType(df.Type, df.Pos, df.ID)
	if !df.HasInitialValue || df.IsArray || df.Type.Kind != TypeBasic {
		return
	}
	val := strings.TrimSpace(df.InitialValue)
	if val == "" {
		return
	}
	var ok bool
	switch df.Type.Basic {
	case BasicInteger:
		_, err := strconv.ParseInt(val, 10, 64)
		ok = err == nil
	case BasicFloat:
		_, err := strconv.ParseFloat(val, 64)
		ok = err == nil
	case BasicBoolean:
		_, err := strconv.ParseBool(strings.ToLower(val))
		ok = err == nil
	default:
		ok = true
	}
	if !ok {
		v.errorf(df.Pos, "initial-value", []string{df.ID}, "data field %q: initial value %q is not a valid %s", df.ID, val, df.Type.Basic)
	}
}

// processScope is what one process's activities may refer to.
type processScope struct {
	proc *Process
	// participants and applications are the process's own declarations;
	// the package-wide ones stay in the validator (see isParticipant).
	participants map[string]bool
	applications map[string]*Application
	// variables are the data fields and formal parameters, package and
	// process level, with their types.
	variables map[string]DataType
}

func (v *validator) checkProcess(proc *Process) {
	sc := &processScope{
		proc:         proc,
		participants: map[string]bool{},
		applications: map[string]*Application{},
		variables:    map[string]DataType{},
	}
	for _, df := range v.pkg.DataFields {
		sc.variables[df.ID] = df.Type
	}

	params := newIDSet(v, "process "+strconv.Quote(proc.ID))
	formal := map[string]*FormalParameter{}
	for _, fp := range proc.FormalParameters {
		params.add("formal parameter", fp.ID, fp.Pos)
		formal[fp.ID] = fp
		sc.variables[fp.ID] = fp.Type
	}
	v.checkFormalParameters(proc.FormalParameters)
	fields := newIDSet(v, "process "+strconv.Quote(proc.ID))
	for _, df := range proc.DataFields {
		fields.add("data field", df.ID, df.Pos)
		if fp, ok := formal[df.ID]; ok {
			// zope.wfmc style: a data field repeating a formal parameter
			// is the variable that holds it.
			if df.Type.Kind == TypeBasic && fp.Type.Kind == TypeBasic && df.Type.Basic != fp.Type.Basic {
				v.errorf(df.Pos, "duplicate-id", []string{df.ID}, "data field %q repeats formal parameter %q with another type (%s, not %s)", df.ID, fp.ID, typeName(df.Type), typeName(fp.Type))
			} else {
				v.warnf(df.Pos, "shadowed-variable", []string{df.ID}, "data field %q repeats formal parameter %q; both name one variable", df.ID, fp.ID)
			}
		}
		sc.variables[df.ID] = df.Type
		v.checkDataField(df)
	}
	parts := newIDSet(v, "process "+strconv.Quote(proc.ID))
	for _, p := range proc.Participants {
		parts.add("participant", p.ID, p.Pos)
		sc.participants[p.ID] = true
	}
	apps := newIDSet(v, "process "+strconv.Quote(proc.ID))
	for _, a := range proc.Applications {
		apps.add("application", a.ID, a.Pos)
		sc.applications[a.ID] = a
		v.checkFormalParameters(a.FormalParameters)
	}

	// Activity, transition and activity-set ids are unique per process,
	// across its activity sets.
	scopeName := "process " + strconv.Quote(proc.ID)
	acts, trans, sets := newIDSet(v, scopeName), newIDSet(v, scopeName), newIDSet(v, scopeName)
	for _, s := range proc.ActivitySets {
		sets.add("activity set", s.ID, s.Pos)
	}
	nActs, nTrans := 0, 0
	for _, f := range proc.Flows() {
		nActs, nTrans = nActs+len(f.Activities), nTrans+len(f.Transitions)
	}
	acts.first, trans.first = make(map[string]Pos, nActs), make(map[string]Pos, nTrans)
	for _, f := range proc.Flows() {
		for _, a := range f.Activities {
			acts.add("activity", a.ID, a.Pos)
		}
		for _, t := range f.Transitions {
			trans.add("transition", t.ID, t.Pos)
		}
	}

	if len(proc.Activities) == 0 {
		v.warnf(proc.Pos, "empty-process", []string{proc.ID}, "process %q has no activities and cannot run", proc.ID)
	}
	for _, f := range proc.Flows() {
		for _, a := range f.Activities {
			v.checkActivity(sc, f, a)
		}
		v.checkTransitions(proc, f)
	}
	v.checkBlockRecursion(proc)
	v.checkGraphs(proc)
}

// checkBlockRecursion refuses an activity set that runs itself, directly
// or through other activity sets, by a BlockActivity: each run of it would
// start another, nesting without end.
func (v *validator) checkBlockRecursion(proc *Process) {
	if len(proc.ActivitySets) == 0 {
		return
	}
	sets := make(map[string]*ActivitySet, len(proc.ActivitySets))
	for _, s := range proc.ActivitySets {
		if _, dup := sets[s.ID]; !dup {
			sets[s.ID] = s
		}
	}
	const (
		unseen = iota
		open   // on the path being walked
		done
	)
	state := make(map[*ActivitySet]int, len(sets))
	var walk func(s *ActivitySet)
	walk = func(s *ActivitySet) {
		state[s] = open
		for _, a := range s.Activities {
			if a.Block == nil {
				continue
			}
			inner := sets[a.Block.ActivitySet]
			switch {
			case inner == nil:
			case state[inner] == open:
				v.errorf(a.Block.Pos, "block-recursion", []string{a.ID, inner.ID},
					"activity %q: BlockActivity runs activity set %q, which it is itself inside of: it would nest without end", a.ID, inner.ID)
			case state[inner] == unseen:
				walk(inner)
			}
		}
		state[s] = done
	}
	for _, s := range proc.ActivitySets {
		if state[s] == unseen {
			walk(s)
		}
	}
}

func (v *validator) checkActivity(sc *processScope, f *Flow, a *Activity) {
	// Problems' id lists are built when reported: most activities have
	// none, and a list made up front is an allocation for each.
	for _, p := range a.Performers {
		if !v.isParticipant(sc, p) && !isVariable(sc, p) && isIdentifier(p) {
			v.errorf(a.Pos, "unknown-performer", []string{a.ID, p}, "activity %q: performer %q is not a declared participant", a.ID, p)
		}
	}
	if len(a.FormalParameters) > 0 {
		v.checkFormalParameters(a.FormalParameters)
		ids := newIDSet(v, "activity "+strconv.Quote(a.ID))
		for _, fp := range a.FormalParameters {
			ids.add("formal parameter", fp.ID, fp.Pos)
		}
	}
	switch a.Kind {
	case ActivityTool:
		for _, tc := range a.Tools {
			if tc.Application == "" {
				continue // a service task bound by the host
			}
			app, ok := v.application(sc, tc.Application)
			if !ok {
				v.errorf(tc.Pos, "unknown-application", []string{a.ID, tc.Application}, "activity %q calls undeclared application %q", a.ID, tc.Application)
				continue
			}
			v.checkActualParameters(sc, a, tc.Pos, "application "+strconv.Quote(app.ID), app.FormalParameters, tc.ActualParameters)
		}
	case ActivityScript:
		if a.Script == nil || strings.TrimSpace(a.Script.Text) == "" {
			v.errorf(a.Pos, "script", []string{a.ID}, "activity %q: script task has no script", a.ID)
		} else if a.Script.Language() != LanguageJavaScript {
			v.errorf(a.Script.Pos, "script-language", []string{a.ID}, "activity %q: script language %q is not supported (JavaScript is)", a.ID, a.Script.Grammar)
		}
	case ActivitySubFlow:
		v.checkSubFlow(sc, a)
	case ActivityBlock:
		v.checkBlock(sc.proc, a)
	case ActivityEvent:
		v.checkEvent(f, a)
	}
	v.checkComplex(f, a)
	v.checkDeadlines(f, a)
	v.checkLoop(a)
}

// isParticipant reports whether id names a participant of the process or
// of the package and its external packages.
func (v *validator) isParticipant(sc *processScope, id string) bool {
	return sc.participants[id] || v.participants[id]
}

// application finds an application declared by the process, else by the
// package and its external packages.
func (v *validator) application(sc *processScope, id string) (*Application, bool) {
	if a, ok := sc.applications[id]; ok {
		return a, true
	}
	a, ok := v.applications[id]
	return a, ok
}

// isVariable reports whether a performer names a data field or formal
// parameter (a performer chosen at run time).
func isVariable(sc *processScope, name string) bool {
	_, ok := sc.variables[name]
	return ok
}

// isIdentifier tells a performer reference (an id) from a performer
// expression, which is evaluated at run time and not checked here.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ':':
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r > 127:
		default:
			return false
		}
	}
	return true
}

// checkActualParameters compares an application's or process's formal
// parameters with the actual parameters of a call.
func (v *validator) checkActualParameters(sc *processScope, a *Activity, pos Pos, callee string, formal []*FormalParameter, actual []Expression) {
	if len(formal) != len(actual) {
		v.errorf(pos, "parameter-count", []string{a.ID}, "activity %q passes %d actual parameters to %s, which declares %d formal parameters", a.ID, len(actual), callee, len(formal))
		return
	}
	for i, fp := range formal {
		arg := strings.TrimSpace(actual[i].Text)
		argType, isVar := sc.variables[arg]
		if (fp.Mode == ModeOut || fp.Mode == ModeInOut) && !isVar {
			v.errorf(actual[i].Pos, "parameter-mode", []string{a.ID, fp.ID}, "activity %q: actual parameter %d (%q) for %s parameter %q of %s must be a data field or formal parameter", a.ID, i+1, arg, fp.Mode, fp.ID, callee)
			continue
		}
		if isVar && !compatible(argType, fp.Type) {
			v.warnf(actual[i].Pos, "parameter-type", []string{a.ID, fp.ID}, "activity %q: actual parameter %q is %s, formal parameter %q of %s is %s", a.ID, arg, typeName(argType), fp.ID, callee, typeName(fp.Type))
		}
	}
}

// compatible reports whether values of two types can be passed between
// each other. Only basic types are compared; INTEGER and FLOAT mix.
func compatible(a, b DataType) bool {
	if a.Kind != TypeBasic || b.Kind != TypeBasic || a.Basic == b.Basic {
		return true
	}
	numeric := func(t BasicType) bool { return t == BasicInteger || t == BasicFloat }
	if numeric(a.Basic) && numeric(b.Basic) {
		return true
	}
	dates := func(t BasicType) bool { return t == BasicDate || t == BasicDateTime || t == BasicTime }
	return dates(a.Basic) && dates(b.Basic)
}

func typeName(t DataType) string {
	if t.Kind == TypeBasic {
		return string(t.Basic)
	}
	return string(t.Kind)
}

func (v *validator) checkSubFlow(sc *processScope, a *Activity) {
	sf := a.SubFlow
	ids := []string{a.ID, sf.Process}
	if sf.Process == "" {
		v.errorf(sf.Pos, "unknown-subflow", ids, "activity %q: SubFlow names no process", a.ID)
		return
	}
	var target *Process
	if sf.PackageRef != "" {
		// Several packages may share the id (files of one package
		// deployed together): the process may be in any of them.
		pkgs := v.packagesByID[sf.PackageRef]
		if p := v.externalByID(sf.PackageRef); p != nil {
			pkgs = append(pkgs, p)
		}
		if len(pkgs) == 0 {
			v.errorf(sf.Pos, "unknown-subflow", ids, "activity %q: SubFlow PackageRef %q names no loaded or deployed package", a.ID, sf.PackageRef)
			return
		}
		for _, p := range pkgs {
			if target = p.Process(sf.Process); target != nil {
				break
			}
		}
	} else {
		target = v.processes[sf.Process]
	}
	if target == nil {
		v.errorf(sf.Pos, "unknown-subflow", ids, "activity %q: SubFlow process %q is not defined in this package, its external packages or the packages deployed with it", a.ID, sf.Process)
		return
	}
	v.checkActualParameters(sc, a, sf.Pos, "process "+strconv.Quote(target.ID), target.FormalParameters, sf.ActualParameters)
	if sf.InstanceDataField != "" && !isVariable(sc, sf.InstanceDataField) {
		v.errorf(sf.Pos, "unknown-variable", ids, "activity %q: InstanceDataField %q is not a data field", a.ID, sf.InstanceDataField)
	}
}

// externalByID finds an ExternalPackage of this package by its declared
// id when the referenced package was loaded under another id.
func (v *validator) externalByID(id string) *Package {
	for _, ext := range v.pkg.ExternalPackages {
		if ext.ID == id {
			return ext.Package
		}
	}
	return nil
}

func (v *validator) checkBlock(proc *Process, a *Activity) {
	b := a.Block
	set := proc.ActivitySet(b.ActivitySet)
	if set == nil {
		v.errorf(b.Pos, "unknown-activity-set", []string{a.ID, b.ActivitySet}, "activity %q: BlockActivity names unknown activity set %q", a.ID, b.ActivitySet)
		return
	}
	if b.StartActivity != "" && set.Activity(b.StartActivity) == nil {
		v.errorf(b.Pos, "unknown-activity", []string{a.ID, b.StartActivity}, "activity %q: start activity %q is not in activity set %q", a.ID, b.StartActivity, set.ID)
	}
}

func (v *validator) checkEvent(f *Flow, a *Activity) {
	ev := a.Event
	ids := []string{a.ID}
	switch {
	case ev.Type == EventStart && len(f.Incoming(a.ID)) > 0:
		v.errorf(ev.Pos, "event-flow", ids, "start event %q has incoming transitions", a.ID)
	case ev.Type == EventEnd && len(f.Outgoing(a.ID)) > 0:
		v.errorf(ev.Pos, "event-flow", ids, "end event %q has outgoing transitions", a.ID)
	}
	if ev.Target != "" && f.Activity(ev.Target) == nil {
		v.errorf(ev.Pos, "unknown-activity", []string{a.ID, ev.Target}, "boundary event %q is attached to unknown activity %q", a.ID, ev.Target)
	}
	if ev.Trigger == TriggerTimer && (ev.Timer == nil || ev.Timer.TimeDate.Text == "" && ev.Timer.TimeCycle.Text == "") {
		v.warnf(ev.Pos, "timer", ids, "timer event %q has no TimeDate or TimeCycle and will never fire", a.ID)
	}
	if ev.Trigger == TriggerSignal && ev.Type != EventStart && ev.Target == "" && strings.TrimSpace(ev.Ref) == "" {
		if ev.Type == EventEnd || ev.Throw {
			v.warnf(ev.Pos, "signal", ids, "signal event %q names no signal (TriggerResultSignal Name) and reaches no one", a.ID)
		} else {
			v.warnf(ev.Pos, "signal", ids, "signal event %q names no signal (TriggerResultSignal Name) and will never catch one", a.ID)
		}
	}
}

func (v *validator) checkDeadlines(f *Flow, a *Activity) {
	for _, d := range a.Deadlines {
		ids := []string{a.ID}
		if d.Empty() {
			// Nothing to arm: the rest of the checks would only add noise.
			if text := strings.TrimSpace(d.Condition.Text); text != "" {
				v.warnf(d.Pos, "empty-deadline", ids, "activity %q: deadline %q sets no time; it is ignored", a.ID, text)
			} else {
				v.warnf(d.Pos, "empty-deadline", ids, "activity %q: deadline has no DeadlineCondition or DeadlineDuration, or an empty one; it is ignored", a.ID)
			}
			continue
		}
		switch {
		case d.Condition.Language() == LanguageOther:
			v.errorf(d.Condition.Pos, "deadline", ids, "activity %q: deadline is written in unsupported language %q", a.ID, d.Condition.Grammar)
		case d.Condition.Language() == LanguageText:
			if _, ok := ParseDuration(d.Condition.Text); !ok {
				v.errorf(d.Condition.Pos, "deadline", ids, "activity %q: free-text deadline %q is not a duration", a.ID, d.Condition.Text)
			}
		}
		if d.ExceptionName == "" {
			v.warnf(d.Pos, "deadline", ids, "activity %q: deadline has no ExceptionName; only a DEFAULTEXCEPTION transition can handle it", a.ID)
		}
		if !handlesException(f, a.ID, d.ExceptionName) {
			v.warnf(d.Pos, "unhandled-deadline", ids, "activity %q: no EXCEPTION transition for %q and no DEFAULTEXCEPTION transition; the deadline has nowhere to go", a.ID, d.ExceptionName)
		}
	}
}

// handlesException reports whether an activity has an outgoing transition
// for the named exception, or a default one.
func handlesException(f *Flow, activityID, name string) bool {
	for _, t := range f.Outgoing(activityID) {
		if t.Condition == nil {
			continue
		}
		switch t.Condition.Type {
		case ConditionDefaultException:
			return true
		case ConditionException:
			if name != "" && strings.TrimSpace(t.Condition.Expression.Text) == name {
				return true
			}
		}
	}
	return false
}

// checkLoop checks an XPDL 2 Loop as the engine runs it (docs/loops.md):
// its enumerations, its numbers and the languages of its conditions.
// Enumerated values are matched in any case; the engine applies XPDL's
// defaults (TestTime After, MI_Ordering Parallel, MI_FlowCondition All).
func (v *validator) checkLoop(a *Activity) {
	l := a.Loop
	if l == nil || l.Type == LoopNone || l.Type == "" {
		return
	}
	ids := []string{a.ID}
	if a.Kind == ActivityRoute || a.Kind == ActivityEvent {
		v.warnf(l.Pos, "loop", ids, "activity %q: a loop on a gateway or an event is ignored", a.ID)
		return
	}
	switch l.Type {
	case LoopStandard:
		v.checkLoopValue(l, a.ID, "TestTime", l.TestTime, "Before", "After")
		maximum := strings.TrimSpace(l.Maximum)
		n, err := strconv.Atoi(maximum)
		if maximum != "" && (err != nil || n < 0) {
			v.errorf(l.Pos, "loop", ids, "activity %q: LoopMaximum %q is not a number of iterations", a.ID, l.Maximum)
		}
		switch {
		case strings.TrimSpace(l.Condition.Text) == "":
			if n <= 0 {
				v.warnf(l.Pos, "loop", ids, "activity %q: standard loop has neither a LoopCondition nor a positive LoopMaximum; it runs once", a.ID)
			}
		case l.Condition.Language() == LanguageOther:
			v.errorf(l.Pos, "script-language", ids, "activity %q: loop condition language %q is not supported", a.ID, l.Condition.Grammar)
		}
	case LoopMultiInstance:
		if strings.TrimSpace(l.MICondition.Text) == "" {
			v.errorf(l.Pos, "loop", ids, "activity %q: multi-instance loop has no MI_Condition (the number of instances)", a.ID)
		}
		v.checkLoopValue(l, a.ID, "MI_Ordering", l.Ordering, "Sequential", "Parallel")
		v.checkLoopValue(l, a.ID, "MI_FlowCondition", l.Behavior, "None", "One", "All", "Complex")
		if !strings.EqualFold(strings.TrimSpace(l.Behavior), "Complex") {
			return
		}
		switch {
		case strings.TrimSpace(l.FlowCondition.Text) == "":
			v.errorf(l.Pos, "loop", ids, "activity %q: MI_FlowCondition Complex has no ComplexMI_FlowCondition", a.ID)
		case l.FlowCondition.Language() != LanguageJavaScript:
			v.errorf(l.Pos, "script-language", ids, "activity %q: ComplexMI_FlowCondition language %q is not supported (JavaScript is)", a.ID, l.FlowCondition.Grammar)
		}
	}
}

// checkLoopValue checks an enumerated loop attribute: absent, or one of
// values in any case.
func (v *validator) checkLoopValue(l *Loop, activityID, attr, value string, values ...string) {
	value = strings.TrimSpace(value)
	if value == "" || slices.ContainsFunc(values, func(s string) bool { return strings.EqualFold(s, value) }) {
		return
	}
	v.errorf(l.Pos, "loop", []string{activityID}, "activity %q: %s %q is not one of %s", activityID, attr, value, strings.Join(values, ", "))
}

// checkTransitions checks the transitions of one flow: their ends, their
// conditions, and the splits that list them.
func (v *validator) checkTransitions(proc *Process, f *Flow) {
	otherwise, defaultException := map[string]int{}, map[string]int{}
	for k, t := range f.Transitions {
		e := f.ends[k] // the index already looked up, -1 for no activity
		for _, end := range [...]struct {
			id    string
			index int
		}{{t.From, e.from}, {t.To, e.to}} {
			if end.index >= 0 {
				continue
			}
			if where := findActivityScope(proc, end.id); where != "" {
				v.errorf(t.Pos, "cross-scope", []string{t.ID, end.id}, "transition %q connects activity %q of %s across scopes", t.ID, end.id, where)
			} else {
				v.errorf(t.Pos, "unknown-activity", []string{t.ID, end.id}, "transition %q refers to unknown activity %q", t.ID, end.id)
			}
		}
		c := t.Condition
		if c == nil {
			continue
		}
		switch c.Type {
		case ConditionCondition:
			if strings.TrimSpace(c.Expression.Text) == "" {
				break // a label, not a rule
			}
			switch c.Expression.Language() {
			case LanguageOther:
				v.errorf(c.Pos, "script-language", []string{t.ID}, "transition %q: condition language %q is not supported (JavaScript is)", t.ID, c.Expression.Grammar)
			case LanguageText:
				v.warnf(c.Pos, "free-text-condition", []string{t.ID}, "transition %q: condition %q is free text, not evaluated; the transition is taken as unconditional", t.ID, c.Expression.Text)
			}
		case ConditionOtherwise:
			otherwise[t.From]++
			if otherwise[t.From] == 2 {
				v.errorf(t.Pos, "otherwise", []string{t.From, t.ID}, "activity %q has more than one OTHERWISE transition", t.From)
			}
		case ConditionDefaultException:
			defaultException[t.From]++
			if defaultException[t.From] == 2 {
				v.errorf(t.Pos, "otherwise", []string{t.From, t.ID}, "activity %q has more than one DEFAULTEXCEPTION transition", t.From)
			}
		}
	}
	for _, a := range f.Activities {
		for _, ref := range a.Split.TransitionRefs {
			t := f.Transition(ref)
			switch {
			case t == nil:
				v.errorf(a.Split.Pos, "split-ref", []string{a.ID, ref}, "activity %q: split lists unknown transition %q", a.ID, ref)
			case t.From != a.ID:
				v.errorf(a.Split.Pos, "split-ref", []string{a.ID, ref}, "activity %q: split lists transition %q, which leaves %q", a.ID, ref, t.From)
			}
		}
	}
}

// findActivityScope names the scope of a process that holds the activity,
// or returns "" when none does.
func findActivityScope(proc *Process, id string) string {
	if proc.Activity(id) != nil {
		return "the process"
	}
	for _, s := range proc.ActivitySets {
		if s.Activity(id) != nil {
			return "activity set " + strconv.Quote(s.ID)
		}
	}
	return ""
}

// checkComplex accepts a Complex gateway as a join with an
// IncomingCondition (the discriminator and partial-join patterns) and
// refuses it anywhere else.
func (v *validator) checkComplex(f *Flow, a *Activity) {
	if a.Split.Type == GatewayComplex && len(f.Outgoing(a.ID)) > 1 {
		v.errorf(orPos(a.Split.Pos, a.Pos), "unsupported", []string{a.ID}, "activity %q: Complex splits are not supported; use an Inclusive (OR) split with conditions", a.ID)
	}
	if a.Join.Type != GatewayComplex || len(f.Incoming(a.ID)) < 2 {
		return
	}
	if a.Route == nil || a.Route.IncomingCondition == "" {
		v.errorf(orPos(a.Join.Pos, a.Pos), "unsupported", []string{a.ID},
			"activity %q: a Complex join needs an IncomingCondition saying when it fires (e.g. \"arrivals >= 1\")", a.ID)
	}
}

func orPos(p, fallback Pos) Pos {
	if p == (Pos{}) {
		return fallback
	}
	return p
}
