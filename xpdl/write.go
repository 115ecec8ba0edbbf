package xpdl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/beevik/etree"
)

// Namespace22 is the XPDL 2.2 namespace, the one Write writes.
const Namespace22 = "http://www.wfmc.org/2009/XPDL2.2"

// ErrUnwritable is wrapped by the error of Write and Marshal when the
// package holds something XPDL cannot carry or the reader would read
// back differently: text that is not valid UTF-8 or has characters XML
// does not allow, extended attribute content that is not well-formed XML,
// a nil element in a list, an unknown activity kind or application type,
// or a task that holds more than its XPDL 2.2 element can say.
var ErrUnwritable = errors.New("package cannot be written as XPDL")

// Marshal returns pkg as an XPDL 2.2 document (namespace Namespace22),
// indented, in UTF-8. Reading it back with Read gives the same model
// except for positions, Version, Source and Header.XPDLVersion, and the
// few normalisations docs/xpdl-support.md ("Writing XPDL 2.2") lists: it
// is how a package read from any XPDL version, or built with NewPackage,
// becomes a 2.2 file. The error wraps ErrUnwritable.
func Marshal(pkg *Package) ([]byte, error) {
	if pkg == nil {
		return nil, fmt.Errorf("write XPDL: nil package: %w", ErrUnwritable)
	}
	w := &writer{pkg: pkg}
	doc := etree.NewDocument()
	doc.CreateProcInst("xml", `version="1.0" encoding="UTF-8"`)
	doc.SetRoot(w.packageElement())
	if w.err != nil {
		return nil, w.err
	}
	doc.Indent(2)
	doc.WriteSettings = etree.WriteSettings{CanonicalAttrVal: true, CanonicalText: true}
	var b bytes.Buffer
	if _, err := doc.WriteTo(&b); err != nil {
		return nil, err
	}
	if len(w.raw) == 0 {
		return b.Bytes(), nil
	}
	// Extended attribute content goes in as it was read: a placeholder
	// (a processing instruction, which no escaped text can spell) is
	// replaced in one pass, so inserted content is never searched.
	out := rawMarker.ReplaceAllFunc(b.Bytes(), func(m []byte) []byte {
		i, _ := strconv.Atoi(string(rawMarker.FindSubmatch(m)[1]))
		return []byte(w.raw[i])
	})
	return out, nil
}

// Write writes pkg to out as Marshal returns it.
func Write(out io.Writer, pkg *Package) error {
	b, err := Marshal(pkg)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

const rawTarget = "goxpdl-raw"

var rawMarker = regexp.MustCompile(`<\?` + rawTarget + ` (\d+)\?>`)

// writer holds one Marshal call's state: the first error, and the raw
// extended attribute contents by placeholder number.
type writer struct {
	pkg *Package
	err error
	raw []string
}

func (w *writer) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("write XPDL: %s: %w", fmt.Sprintf(format, args...), ErrUnwritable)
	}
}

// check records an error when s cannot be XML text.
func (w *writer) check(s string) {
	if w.err != nil {
		return
	}
	if !utf8.ValidString(s) {
		w.fail("text %q is not valid UTF-8", s)
		return
	}
	for _, r := range s {
		if !isXMLChar(r) {
			w.fail("text %q holds the character %U, which XML does not allow", s, r)
			return
		}
	}
}

// isXMLChar reports whether r is a character of XML 1.0 (production Char).
func isXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// attr sets an attribute, when value is not empty.
func (w *writer) attr(e *etree.Element, key, value string) {
	if value == "" {
		return
	}
	w.check(value)
	e.CreateAttr(key, value)
}

// elem adds a child element.
func elem(parent *etree.Element, tag string) *etree.Element { return parent.CreateElement(tag) }

// text adds a child element holding value, when value is not empty.
func (w *writer) text(parent *etree.Element, tag, value string) *etree.Element {
	if value == "" {
		return nil
	}
	return w.textAlways(parent, tag, value)
}

// textAlways adds a child element holding value, empty or not.
func (w *writer) textAlways(parent *etree.Element, tag, value string) *etree.Element {
	w.check(value)
	e := parent.CreateElement(tag)
	if value != "" {
		e.SetText(value)
	}
	return e
}

// expression adds an ExpressionType element holding x, always; its
// language is written when it is not the package's.
func (w *writer) expression(parent *etree.Element, tag string, x Expression) *etree.Element {
	e := w.textAlways(parent, tag, x.Text)
	if x.Text != "" && x.Grammar != w.pkg.Script.Type {
		w.attr(e, "ScriptType", x.Grammar)
	}
	return e
}

func (w *writer) packageElement() *etree.Element {
	p := w.pkg
	root := etree.NewElement("Package")
	root.CreateAttr("xmlns", Namespace22)
	w.attr(root, "Id", p.ID)
	w.attr(root, "Name", p.Name)

	h := elem(root, "PackageHeader")
	w.textAlways(h, "XPDLVersion", string(Version22))
	w.textAlways(h, "Vendor", p.Header.Vendor)
	w.textAlways(h, "Created", p.Header.Created)
	w.text(h, "ModificationDate", p.Header.Modified)
	w.text(h, "Description", p.Header.Description)
	w.text(h, "Documentation", p.Header.Documentation)
	w.text(h, "PriorityUnit", p.Header.Priority)
	w.text(h, "CostUnit", p.Header.CostUnit)

	w.redefinable(root, p.Redefinable)
	if p.Conformance != ConformanceNone {
		cc := elem(root, "ConformanceClass")
		w.attr(cc, "GraphConformance", string(p.Conformance))
	}
	if p.Script != (Script{}) {
		s := elem(root, "Script")
		w.check(p.Script.Type)
		s.CreateAttr("Type", p.Script.Type)
		w.attr(s, "Version", p.Script.Version)
		w.attr(s, "Grammar", p.Script.Grammar)
	}
	if len(p.ExternalPackages) > 0 {
		list := elem(root, "ExternalPackages")
		for _, ext := range p.ExternalPackages {
			if ext == nil {
				w.fail("package %q: nil external package", p.ID)
				continue
			}
			e := elem(list, "ExternalPackage")
			w.attr(e, "href", ext.Href)
			w.attr(e, "Id", ext.ID)
		}
	}
	if len(p.TypeDeclarations) > 0 {
		list := elem(root, "TypeDeclarations")
		for _, td := range p.TypeDeclarations {
			if td == nil {
				w.fail("package %q: nil type declaration", p.ID)
				continue
			}
			e := elem(list, "TypeDeclaration")
			w.attr(e, "Id", td.ID)
			w.attr(e, "Name", td.Name)
			w.dataType(e, td.Type)
		}
	}
	w.participants(root, p.Participants)
	w.applications(root, p.Applications)
	w.dataFields(root, p.DataFields)
	w.pages(root)
	if len(p.Pools) > 0 {
		list := elem(root, "Pools")
		for _, pool := range p.Pools {
			w.pool(list, pool)
		}
	}
	if len(p.MessageFlows) > 0 {
		list := elem(root, "MessageFlows")
		for _, mf := range p.MessageFlows {
			if mf == nil {
				w.fail("package %q: nil message flow", p.ID)
				continue
			}
			e := elem(list, "MessageFlow")
			w.attr(e, "Id", mf.ID)
			w.attr(e, "Name", mf.Name)
			w.attr(e, "Source", mf.Source)
			w.attr(e, "Target", mf.Target)
		}
	}
	if len(p.Processes) > 0 {
		list := elem(root, "WorkflowProcesses")
		for _, proc := range p.Processes {
			if proc == nil {
				w.fail("package %q: nil process", p.ID)
				continue
			}
			w.process(list, proc)
		}
	}
	w.extendedAttributes(root, p.ExtendedAttributes)
	return root
}

// pages writes a Page for each page id the diagram information names:
// the schema wants them declared; the model keeps only the references.
func (w *writer) pages(root *etree.Element) {
	var ids []string
	seen := map[string]bool{}
	add := func(gs []NodeGraphics) {
		for _, g := range gs {
			if g.PageID != "" && !seen[g.PageID] {
				seen[g.PageID] = true
				ids = append(ids, g.PageID)
			}
		}
	}
	for _, pool := range w.pkg.Pools {
		if pool == nil {
			continue
		}
		add(pool.Graphics)
		for _, lane := range pool.Lanes {
			if lane != nil {
				add(lane.Graphics)
			}
		}
	}
	for _, proc := range w.pkg.Processes {
		if proc == nil {
			continue
		}
		flows := []*Flow{&proc.Flow}
		for _, set := range proc.ActivitySets {
			if set != nil { // a nil one is refused where it is written
				flows = append(flows, &set.Flow)
			}
		}
		for _, f := range flows {
			for _, a := range f.Activities {
				if a != nil {
					add(a.Graphics)
				}
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	list := elem(root, "Pages")
	for _, id := range ids {
		w.check(id)
		elem(list, "Page").CreateAttr("Id", id)
	}
}

func (w *writer) redefinable(parent *etree.Element, h RedefinableHeader) {
	if h.PublicationStatus == "" && h.Author == "" && h.Version == "" && h.Codepage == "" &&
		h.Countrykey == "" && len(h.Responsibles) == 0 {
		return
	}
	e := elem(parent, "RedefinableHeader")
	w.attr(e, "PublicationStatus", h.PublicationStatus)
	w.text(e, "Author", h.Author)
	w.text(e, "Version", h.Version)
	w.text(e, "Codepage", h.Codepage)
	w.text(e, "Countrykey", h.Countrykey)
	if len(h.Responsibles) > 0 {
		list := elem(e, "Responsibles")
		for _, r := range h.Responsibles {
			w.textAlways(list, "Responsible", r)
		}
	}
}

// The XPDL 2.2 names of the data type alternatives.
var typeElementNames = map[TypeKind]string{
	TypeBasic: "BasicType", TypeDeclared: "DeclaredType", TypeSchema: "SchemaType",
	TypeExternal: "ExternalReference", TypeEnumeration: "EnumerationType", TypeArray: "ArrayType",
	TypeList: "ListType", TypeRecord: "RecordType", TypeUnion: "UnionType",
}

// dataType writes the element of t's alternative under parent; nothing
// for TypeUnknown.
func (w *writer) dataType(parent *etree.Element, t DataType) {
	if t.Kind == TypeUnknown {
		return
	}
	name, ok := typeElementNames[t.Kind]
	if !ok {
		w.fail("unknown data type kind %q", t.Kind)
		return
	}
	e := elem(parent, name)
	switch t.Kind {
	case TypeBasic:
		w.check(string(t.Basic))
		e.CreateAttr("Type", string(t.Basic))
	case TypeDeclared:
		w.check(t.Declared)
		e.CreateAttr("Id", t.Declared)
	case TypeExternal:
		w.check(t.External)
		e.CreateAttr("location", t.External)
	case TypeEnumeration:
		for _, v := range t.Enum {
			ev := elem(e, "EnumerationValue")
			w.check(v)
			ev.CreateAttr("Name", v)
		}
	case TypeArray, TypeList:
		if t.Elem != nil {
			w.dataType(e, *t.Elem)
		}
	case TypeRecord, TypeUnion:
		for _, m := range t.Members {
			w.dataType(elem(e, "Member"), m)
		}
	}
}

// typedElement writes a DataType element holding t, unless t is unknown.
func (w *writer) typedElement(parent *etree.Element, t DataType) {
	if t.Kind == TypeUnknown {
		return
	}
	w.dataType(elem(parent, "DataType"), t)
}

func (w *writer) participants(parent *etree.Element, ps []*Participant) {
	if len(ps) == 0 {
		return
	}
	list := elem(parent, "Participants")
	for _, p := range ps {
		if p == nil {
			w.fail("nil participant")
			continue
		}
		e := elem(list, "Participant")
		w.attr(e, "Id", p.ID)
		w.attr(e, "Name", p.Name)
		pt := elem(e, "ParticipantType")
		w.check(string(p.Type))
		pt.CreateAttr("Type", string(p.Type))
		w.text(e, "Description", p.Description)
		w.extendedAttributes(e, p.ExtendedAttributes)
	}
}

// applicationTypeChildren are the children the XPDL 2.2 schema requires
// of each application type element; the model keeps only the element's
// name, so they are written empty.
var applicationTypeChildren = map[string][]string{
	"Ejb": {"JndiName", "HomeClass", "Method"}, "Pojo": {"Class", "Method"}, "Xslt": nil,
	"Script": nil, "WebService": nil, "BusinessRule": {"RuleName", "Location"}, "Form": nil,
}

func (w *writer) applications(parent *etree.Element, as []*Application) {
	if len(as) == 0 {
		return
	}
	list := elem(parent, "Applications")
	for _, a := range as {
		if a == nil {
			w.fail("nil application")
			continue
		}
		e := elem(list, "Application")
		w.attr(e, "Id", a.ID)
		w.attr(e, "Name", a.Name)
		w.text(e, "Description", a.Description)
		if a.Type != "" {
			children, ok := applicationTypeChildren[a.Type]
			if !ok {
				w.fail("application %q has unknown type %q", a.ID, a.Type)
				continue
			}
			te := elem(elem(e, "Type"), a.Type)
			for _, c := range children {
				elem(te, c)
			}
			if a.Type == "WebService" {
				te.CreateAttr("InputMsgName", "")
				elem(te, "WebServiceOperation").CreateAttr("OperationName", "")
			}
		}
		w.formalParameters(e, a.FormalParameters)
		w.extendedAttributes(e, a.ExtendedAttributes)
	}
}

func (w *writer) formalParameters(parent *etree.Element, fps []*FormalParameter) {
	if len(fps) == 0 {
		return
	}
	list := elem(parent, "FormalParameters")
	for _, fp := range fps {
		if fp == nil {
			w.fail("nil formal parameter")
			continue
		}
		e := elem(list, "FormalParameter")
		w.attr(e, "Id", fp.ID)
		mode := fp.Mode
		if mode == "" {
			mode = ModeIn
		}
		w.attr(e, "Mode", string(mode))
		w.attr(e, "Name", fp.Name)
		if fp.IsArray {
			e.CreateAttr("IsArray", "true")
		}
		w.typedElement(e, fp.Type)
		w.text(e, "Description", fp.Description)
	}
}

func (w *writer) dataFields(parent *etree.Element, dfs []*DataField) {
	if len(dfs) == 0 {
		return
	}
	list := elem(parent, "DataFields")
	for _, df := range dfs {
		if df == nil {
			w.fail("nil data field")
			continue
		}
		e := elem(list, "DataField")
		w.attr(e, "Id", df.ID)
		w.attr(e, "Name", df.Name)
		for _, flag := range []struct {
			name string
			on   bool
		}{{"ReadOnly", df.ReadOnly}, {"IsArray", df.IsArray}, {"Correlation", df.Correlation}} {
			if flag.on {
				e.CreateAttr(flag.name, "true")
			}
		}
		w.typedElement(e, df.Type)
		if df.HasInitialValue || df.InitialValue != "" {
			w.textAlways(e, "InitialValue", df.InitialValue)
		}
		w.text(e, "Length", df.Length)
		w.text(e, "Description", df.Description)
		w.extendedAttributes(e, df.ExtendedAttributes)
	}
}

func (w *writer) pool(list *etree.Element, pool *Pool) {
	if pool == nil {
		w.fail("nil pool")
		return
	}
	e := elem(list, "Pool")
	w.attr(e, "Id", pool.ID)
	w.attr(e, "Name", pool.Name)
	w.attr(e, "Process", pool.Process)
	w.attr(e, "Orientation", pool.Orientation)
	// Required by the schema; the model does not keep it.
	e.CreateAttr("BoundaryVisible", "true")
	if len(pool.Lanes) > 0 {
		lanes := elem(e, "Lanes")
		for _, lane := range pool.Lanes {
			if lane == nil {
				w.fail("pool %q: nil lane", pool.ID)
				continue
			}
			le := elem(lanes, "Lane")
			w.attr(le, "Id", lane.ID)
			w.attr(le, "Name", lane.Name)
			w.attr(le, "ParentLane", lane.ParentLane)
			w.nodeGraphics(le, lane.Graphics)
			w.performers(le, lane.Performers)
		}
	}
	w.nodeGraphics(e, pool.Graphics)
}

func (w *writer) performers(parent *etree.Element, ps []string) {
	if len(ps) == 0 {
		return
	}
	list := elem(parent, "Performers")
	for _, p := range ps {
		w.textAlways(list, "Performer", p)
	}
}

// number formats a coordinate or size as xsd:double.
func number(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "INF"
	case math.IsInf(f, -1):
		return "-INF"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func (w *writer) nodeGraphics(parent *etree.Element, gs []NodeGraphics) {
	if len(gs) == 0 {
		return
	}
	list := elem(parent, "NodeGraphicsInfos")
	for _, g := range gs {
		e := elem(list, "NodeGraphicsInfo")
		w.attr(e, "ToolId", g.ToolID)
		w.attr(e, "PageId", g.PageID)
		w.attr(e, "LaneId", g.LaneID)
		if g.Height != 0 {
			e.CreateAttr("Height", number(g.Height))
		}
		if g.Width != 0 {
			e.CreateAttr("Width", number(g.Width))
		}
		w.attr(e, "FillColor", g.FillColor)
		w.attr(e, "Shape", g.Shape)
		if g.X != 0 || g.Y != 0 {
			c := elem(e, "Coordinates")
			c.CreateAttr("XCoordinate", number(g.X))
			c.CreateAttr("YCoordinate", number(g.Y))
		}
	}
}

func (w *writer) process(list *etree.Element, p *Process) {
	e := elem(list, "WorkflowProcess")
	w.attr(e, "Id", p.ID)
	w.attr(e, "Name", p.Name)
	w.attr(e, "AccessLevel", p.AccessLevel)
	h := elem(e, "ProcessHeader")
	w.attr(h, "DurationUnit", p.Header.DurationUnit)
	w.text(h, "Created", p.Header.Created)
	w.text(h, "Description", p.Header.Description)
	w.text(h, "Priority", p.Header.Priority)
	w.text(h, "Limit", p.Header.Limit)
	w.text(h, "ValidFrom", p.Header.ValidFrom)
	w.text(h, "ValidTo", p.Header.ValidTo)
	if p.Header.Waiting != "" || p.Header.Working != "" || p.Header.Duration != "" {
		est := elem(h, "TimeEstimation")
		w.text(est, "WaitingTime", p.Header.Waiting)
		w.text(est, "WorkingTime", p.Header.Working)
		w.text(est, "Duration", p.Header.Duration)
	}
	w.redefinable(e, p.Redefinable)
	w.formalParameters(e, p.FormalParameters)
	w.participants(e, p.Participants)
	w.applications(e, p.Applications)
	w.dataFields(e, p.DataFields)
	if len(p.ActivitySets) > 0 {
		sets := elem(e, "ActivitySets")
		for _, s := range p.ActivitySets {
			if s == nil {
				w.fail("process %q: nil activity set", p.ID)
				continue
			}
			se := elem(sets, "ActivitySet")
			w.attr(se, "Id", s.ID)
			w.attr(se, "Name", s.Name)
			w.flow(se, &s.Flow)
		}
	}
	w.flow(e, &p.Flow)
	w.extendedAttributes(e, p.ExtendedAttributes)
}

// flow writes the Activities and Transitions of f. (In a process the
// schema puts other elements between them; none of those is written.)
func (w *writer) flow(parent *etree.Element, f *Flow) {
	if len(f.Activities) > 0 {
		list := elem(parent, "Activities")
		for _, a := range f.Activities {
			if a == nil {
				w.fail("nil activity")
				continue
			}
			w.activity(list, a)
		}
	}
	if len(f.Transitions) > 0 {
		list := elem(parent, "Transitions")
		for _, t := range f.Transitions {
			if t == nil {
				w.fail("nil transition")
				continue
			}
			w.transition(list, t)
		}
	}
}

func (w *writer) activity(list *etree.Element, a *Activity) {
	e := elem(list, "Activity")
	w.attr(e, "Id", a.ID)
	w.attr(e, "Name", a.Name)
	w.attr(e, "StartMode", string(a.StartMode))
	w.attr(e, "FinishMode", string(a.FinishMode))
	w.text(e, "Description", a.Description)
	w.text(e, "Limit", a.Limit)
	w.activityKind(e, a)
	w.performers(e, a.Performers)
	w.text(e, "Priority", a.Priority)
	for _, d := range a.Deadlines {
		if d == nil {
			w.fail("activity %q: nil deadline", a.ID)
			continue
		}
		de := elem(e, "Deadline")
		w.attr(de, "Execution", string(d.Execution))
		if d.Condition.Text != "" {
			w.expression(de, "DeadlineDuration", d.Condition)
		}
		w.text(de, "ExceptionName", d.ExceptionName)
	}
	w.text(e, "Documentation", a.Documentation)
	w.transitionRestrictions(e, a)
	w.extendedAttributes(e, a.ExtendedAttributes)
	w.formalParameters(e, a.FormalParameters)
	if a.Loop != nil && !a.Loop.isNone() {
		w.loop(e, a.Loop)
	}
	w.nodeGraphics(e, withoutDerivedNodeGraphics(a.Graphics, a.ExtendedAttributes))
}

// The XPDL 2.2 names of the gateway types.
var gatewayNames = map[GatewayType]string{
	GatewayXOR: "Exclusive", GatewayAND: "Parallel", GatewayOR: "Inclusive", GatewayComplex: "Complex",
}

func (w *writer) gatewayName(t GatewayType, activityID string) string {
	name, ok := gatewayNames[t]
	if !ok {
		w.fail("activity %q has unknown gateway type %q", activityID, t)
	}
	return name
}

func (w *writer) activityKind(e *etree.Element, a *Activity) {
	switch a.Kind {
	case ActivityRoute:
		re := elem(e, "Route")
		if r := a.Route; r != nil {
			if r.declared {
				re.CreateAttr("GatewayType", w.gatewayName(r.GatewayType, a.ID))
			}
			w.attr(re, "ExclusiveType", r.ExclusiveType)
			if r.Instantiate {
				re.CreateAttr("Instantiate", "true")
			}
			w.attr(re, "IncomingCondition", r.IncomingCondition)
		}
	case ActivityBlock:
		be := elem(e, "BlockActivity")
		if b := a.Block; b != nil {
			w.check(b.ActivitySet)
			be.CreateAttr("ActivitySetId", b.ActivitySet)
			w.attr(be, "StartActivityId", b.StartActivity)
		}
	case ActivityEvent:
		if a.Event == nil {
			w.fail("activity %q is an event without an Event", a.ID)
			return
		}
		w.event(elem(e, "Event"), a)
	case ActivitySubFlow:
		se := elem(elem(e, "Implementation"), "SubFlow")
		if sf := a.SubFlow; sf != nil {
			w.check(sf.Process)
			se.CreateAttr("Id", sf.Process)
			exec := sf.Execution
			if exec == "" {
				exec = ExecSynchr
			}
			se.CreateAttr("Execution", string(exec))
			w.attr(se, "PackageRef", sf.PackageRef)
			w.attr(se, "InstanceDataField", sf.InstanceDataField)
			w.actualParameters(se, sf.ActualParameters)
		}
	case ActivityTool:
		w.tools(elem(e, "Implementation"), a)
	case ActivityScript:
		script := Expression{}
		if a.Script != nil {
			script = *a.Script
		}
		w.expression(w.task(e, "TaskScript"), "Script", script)
	case ActivityNo:
		switch a.Task {
		case TaskUnspecified:
			elem(elem(e, "Implementation"), "No")
		case TaskNone:
			elem(elem(e, "Implementation"), "Task")
		case TaskUser:
			w.task(e, "TaskUser").CreateAttr("Implementation", "Unspecified")
		case TaskManual:
			w.task(e, "TaskManual")
		default:
			w.fail("activity %q: task %q does nothing (kind No)", a.ID, a.Task)
		}
	default:
		w.fail("activity %q has unknown kind %q", a.ID, a.Kind)
	}
}

// task adds Implementation/Task/<name> under the activity element e.
func (w *writer) task(e *etree.Element, name string) *etree.Element {
	return elem(elem(elem(e, "Implementation"), "Task"), name)
}

func (w *writer) actualParameters(parent *etree.Element, params []Expression) {
	if len(params) == 0 {
		return
	}
	list := elem(parent, "ActualParameters")
	for _, p := range params {
		// XPDL 2.2 puts the expression in a FormalExpression child.
		ap := elem(list, "ActualParameter")
		if p.Text != "" {
			w.expression(ap, "FormalExpression", p)
		}
	}
}

// fitsTaskApplication reports whether the application calls of an
// activity are what one XPDL 2 TaskApplication says: one call, of type
// APPLICATION, without extended attributes.
func fitsTaskApplication(tools []*ToolCall) bool {
	return len(tools) == 1 && tools[0] != nil && (tools[0].Type == ToolApplication || tools[0].Type == "") &&
		len(tools[0].ExtendedAttributes) == 0
}

// tools writes the application calls of an ActivityTool under impl.
func (w *writer) tools(impl *etree.Element, a *Activity) {
	switch a.Task {
	case TaskApplication, TaskUnspecified:
		if !fitsTaskApplication(a.Tools) {
			if a.Task == TaskApplication {
				w.fail("activity %q: a TaskApplication makes one call of type APPLICATION without extended attributes", a.ID)
				return
			}
			// XPDL 1 tools that one TaskApplication cannot hold keep
			// their 1.0 form, which XPDL 2.0 and 2.1 still allow.
			for _, tc := range a.Tools {
				if tc == nil {
					w.fail("activity %q: nil tool", a.ID)
					continue
				}
				te := elem(impl, "Tool")
				w.check(tc.Application)
				te.CreateAttr("Id", tc.Application)
				w.attr(te, "Type", string(tc.Type))
				w.actualParameters(te, tc.ActualParameters)
				w.text(te, "Description", tc.Description)
				w.extendedAttributes(te, tc.ExtendedAttributes)
			}
			return
		}
		tc := a.Tools[0]
		te := elem(elem(impl, "Task"), "TaskApplication")
		w.check(tc.Application)
		te.CreateAttr("Id", tc.Application)
		w.actualParameters(te, tc.ActualParameters)
		w.text(te, "Description", tc.Description)
	case TaskService, TaskSend, TaskReceive, TaskReference:
		app := ""
		switch {
		case len(a.Tools) > 1:
			w.fail("activity %q: a Task%s makes at most one call", a.ID, a.Task)
			return
		case len(a.Tools) == 1:
			tc := a.Tools[0]
			if tc == nil || len(tc.ActualParameters) > 0 || tc.Description != "" || len(tc.ExtendedAttributes) > 0 ||
				(tc.Type != ToolApplication && tc.Type != "") {
				w.fail("activity %q: a Task%s names its application only", a.ID, a.Task)
				return
			}
			app = tc.Application
		}
		te := elem(elem(impl, "Task"), "Task"+string(a.Task))
		switch a.Task {
		case TaskReceive:
			te.CreateAttr("Instantiate", "false") // required; not in the model
		case TaskReference:
			te.CreateAttr("TaskRef", a.ID) // required; not in the model
		}
		if a.Task != TaskReference {
			te.CreateAttr("Implementation", "Unspecified")
		}
		// ApplicationRef is not in the schema; some tools write it, and
		// the reader takes the application from it.
		w.attr(te, "ApplicationRef", app)
	default:
		w.fail("activity %q: task %q makes no application call", a.ID, a.Task)
	}
}

// The trigger element of a message, signal, link or compensation event,
// which carries Event.Ref and Event.Throw.
var refElements = map[Trigger]string{
	TriggerMessage: "TriggerResultMessage", TriggerSignal: "TriggerResultSignal",
	TriggerLink: "TriggerResultLink", TriggerCompensation: "TriggerResultCompensation",
}

func (w *writer) event(e *etree.Element, a *Activity) {
	ev := a.Event
	var te *etree.Element
	trigger := ev.Trigger
	if trigger == "" {
		trigger = TriggerNone
	}
	switch ev.Type {
	case EventStart:
		te = elem(e, "StartEvent")
		te.CreateAttr("Trigger", string(trigger))
	case EventIntermediate:
		te = elem(e, "IntermediateEvent")
		te.CreateAttr("Trigger", string(trigger))
		w.attr(te, "Target", ev.Target)
	case EventEnd:
		te = elem(e, "EndEvent")
		te.CreateAttr("Result", string(trigger))
	default:
		w.fail("activity %q has unknown event type %q", a.ID, ev.Type)
		return
	}
	if !ev.Interrupting && ev.Type != EventEnd {
		te.CreateAttr("Interrupting", "false")
	}
	if t := ev.Timer; t != nil {
		tt := elem(te, "TriggerTimer")
		switch {
		case t.TimeDate.Text == "" && t.TimeCycle.Text != "":
			w.expression(tt, "TimeCycle", t.TimeCycle)
		case t.TimeCycle.Text == "":
			w.expression(tt, "TimeDate", t.TimeDate)
		default:
			// Both: the schema allows one; the reader takes both.
			w.expression(tt, "TimeDate", t.TimeDate)
			w.expression(tt, "TimeCycle", t.TimeCycle)
		}
	}
	if ev.ErrorCode != "" || (trigger == TriggerError && ev.Timer == nil) {
		re := elem(te, "ResultError")
		w.attr(re, "ErrorCode", ev.ErrorCode)
	}
	if ev.Ref != "" || ev.Throw {
		name, ok := refElements[trigger]
		if !ok {
			name = "TriggerResultMessage"
		}
		re := elem(te, name)
		if ev.Throw {
			re.CreateAttr("CatchThrow", "THROW")
		}
		switch name {
		case "TriggerResultMessage":
			if ev.Ref != "" {
				m := elem(re, "Message")
				m.CreateAttr("Id", a.ID) // required; not in the model
				w.attr(m, "Name", ev.Ref)
			}
		case "TriggerResultCompensation":
			w.attr(re, "ActivityId", ev.Ref)
		default:
			w.attr(re, "Name", ev.Ref)
		}
	}
}

// isNone reports whether l is a loop of type None (or none) that says
// nothing else: XPDL 2.2 has no LoopType None, and Write leaves it out.
func (l *Loop) isNone() bool {
	return (l.Type == LoopNone || l.Type == "") && l.TestTime == "" && l.Maximum == "" &&
		l.Condition.Text == "" && l.Ordering == "" && l.MICondition.Text == "" &&
		l.Behavior == "" && l.FlowCondition.Text == ""
}

func (w *writer) loop(e *etree.Element, l *Loop) {
	le := elem(e, "Loop")
	w.attr(le, "LoopType", string(l.Type))
	standard := l.TestTime != "" || l.Maximum != "" || l.Condition.Text != ""
	multi := l.Ordering != "" || l.Behavior != "" || l.MICondition.Text != "" || l.FlowCondition.Text != ""
	if l.Type == LoopMultiInstance {
		multi = true
	} else if !multi {
		standard = true // the schema wants one of the two
	}
	if standard {
		s := elem(le, "LoopStandard")
		w.attr(s, "TestTime", l.TestTime)
		w.attr(s, "LoopMaximum", l.Maximum)
		if l.Condition.Text != "" {
			w.expression(s, "LoopCondition", l.Condition)
		}
	}
	if multi {
		m := elem(le, "LoopMultiInstance")
		w.attr(m, "MI_Ordering", l.Ordering)
		w.attr(m, "MI_FlowCondition", l.Behavior)
		if l.MICondition.Text != "" {
			w.expression(m, "MI_Condition", l.MICondition)
		}
		if l.FlowCondition.Text != "" {
			w.expression(m, "ComplexMI_FlowCondition", l.FlowCondition)
		}
	}
}

// transitionRestrictions writes the declared Join and Split of a, and an
// implicit one that an XPDL 2.2 reading would fill in differently (that
// of an XPDL 1.0 Route, which XPDL 2 Routes type by their gateway).
func (w *writer) transitionRestrictions(e *etree.Element, a *Activity) {
	join := a.Join.Type != GatewayNone && (!a.Join.Implicit || !implicitAlike(a, a.Join.Type, GatewayXOR))
	split := a.Split.Type != GatewayNone &&
		(!a.Split.Implicit || !implicitAlike(a, a.Split.Type, GatewayOR) || len(a.Split.TransitionRefs) > 0)
	if !join && !split {
		return
	}
	tr := elem(elem(e, "TransitionRestrictions"), "TransitionRestriction")
	if join {
		elem(tr, "Join").CreateAttr("Type", w.gatewayName(a.Join.Type, a.ID))
	}
	if split {
		se := elem(tr, "Split")
		se.CreateAttr("Type", w.gatewayName(a.Split.Type, a.ID))
		if len(a.Split.TransitionRefs) > 0 {
			refs := elem(se, "TransitionRefs")
			for _, id := range a.Split.TransitionRefs {
				ref := elem(refs, "TransitionRef")
				w.check(id)
				ref.CreateAttr("Id", id)
			}
		}
	}
}

// implicitAlike reports whether an XPDL 2.2 reading of a without a Join
// or Split element fills in an implicit gateway of type typ: a Route's
// gateway type (XOR when undeclared; a declared one is not implicit),
// dflt for other activities.
func implicitAlike(a *Activity, typ, dflt GatewayType) bool {
	if a.Kind == ActivityRoute {
		return (a.Route == nil || !a.Route.declared) && typ == GatewayXOR
	}
	return typ == dflt
}

func (w *writer) transition(list *etree.Element, t *Transition) {
	e := elem(list, "Transition")
	w.attr(e, "Id", t.ID)
	w.check(t.From)
	e.CreateAttr("From", t.From)
	w.check(t.To)
	e.CreateAttr("To", t.To)
	w.attr(e, "Name", t.Name)
	if c := t.Condition; c != nil {
		ce := elem(e, "Condition")
		typ := c.Type
		if typ == "" {
			typ = ConditionCondition
		}
		w.attr(ce, "Type", string(typ))
		if c.Expression.Text != "" {
			w.expression(ce, "Expression", c.Expression)
		}
	}
	w.text(e, "Description", t.Description)
	w.extendedAttributes(e, t.ExtendedAttributes)
	gs := withoutDerivedConnectorGraphics(t.Graphics, t.ExtendedAttributes)
	if len(gs) > 0 {
		list := elem(e, "ConnectorGraphicsInfos")
		for _, g := range gs {
			ge := elem(list, "ConnectorGraphicsInfo")
			w.attr(ge, "ToolId", g.ToolID)
			for _, p := range g.Points {
				c := elem(ge, "Coordinates")
				c.CreateAttr("XCoordinate", number(p.X))
				c.CreateAttr("YCoordinate", number(p.Y))
			}
		}
	}
}

func (w *writer) extendedAttributes(parent *etree.Element, eas ExtendedAttributes) {
	if len(eas) == 0 {
		return
	}
	list := elem(parent, "ExtendedAttributes")
	for _, ea := range eas {
		if ea.Content == "" {
			e := elem(list, "ExtendedAttribute")
			w.check(ea.Name)
			e.CreateAttr("Name", ea.Name)
			w.attr(e, "Value", ea.Value)
			continue
		}
		pc, ok := parseContent(ea.Content)
		if !ok {
			w.fail("extended attribute %q: content is not well-formed XML", ea.Name)
			continue
		}
		w.check(ea.Content)
		var e *etree.Element
		if ns := sourceNamespace(w.pkg.Version); pc.unqualified && ns != "" {
			// Unprefixed content was in the namespace of the version it
			// was read from, not XPDL 2.2's (which the schema does not
			// allow there): it stays in it.
			e = elem(list, "xpdl:ExtendedAttribute")
			e.CreateAttr("xmlns:xpdl", Namespace22)
			e.CreateAttr("xmlns", ns)
		} else {
			e = elem(list, "ExtendedAttribute")
		}
		w.check(ea.Name)
		e.CreateAttr("Name", ea.Name)
		for _, prefix := range pc.undeclared {
			// The document the content came from declared the prefix on
			// an ancestor; the model does not keep its URI.
			e.CreateAttr("xmlns:"+prefix, undeclaredNamespace+prefix)
		}
		if ea.Value != pc.own {
			w.check(ea.Value)
			e.CreateAttr("Value", ea.Value)
		}
		e.CreateProcInst(rawTarget, strconv.Itoa(len(w.raw)))
		w.raw = append(w.raw, ea.Content)
	}
}

// sourceNamespace is the namespace of an XPDL version other than 2.2,
// or "".
func sourceNamespace(v Version) string {
	if v == Version22 {
		return ""
	}
	for ns, nv := range namespaces {
		if nv == v {
			return ns
		}
	}
	return ""
}

// undeclaredNamespace is the URI, followed by the prefix, that Write
// binds a prefix to when extended attribute content uses it without
// declaring it.
const undeclaredNamespace = "urn:x-goxpdl:undeclared:"

// parsedContent is what Write needs to know of extended attribute
// content.
type parsedContent struct {
	// own is the element's own text as the reader takes it (its
	// character data, trimmed).
	own string
	// undeclared are the namespace prefixes the content uses without
	// declaring them, in order.
	undeclared []string
	// unqualified is whether some element of the content has no prefix
	// and no default namespace declared within the content: it takes
	// the namespace in scope where it is written.
	unqualified bool
}

// parseContent parses content, the inner XML of an element; false when
// it is not well-formed.
func parseContent(content string) (parsedContent, bool) {
	var pc parsedContent
	doc := etree.NewDocument()
	if err := doc.ReadFromString("<x>" + content + "</x>"); err != nil {
		return pc, false
	}
	root := doc.Root()
	if root == nil {
		return pc, false
	}
	var b strings.Builder
	for _, t := range root.Child {
		if cd, ok := t.(*etree.CharData); ok {
			b.WriteString(cd.Data)
		}
	}
	declared := map[string]bool{"xml": true, "xmlns": true}
	var used []string
	var walk func(e *etree.Element, defaulted bool)
	walk = func(e *etree.Element, defaulted bool) {
		for _, a := range e.Attr {
			switch {
			case a.Space == "xmlns":
				declared[a.Key] = true
			case a.Space == "" && a.Key == "xmlns":
				defaulted = true
			}
		}
		if e.Space != "" {
			used = append(used, e.Space)
		} else if !defaulted {
			pc.unqualified = true
		}
		for _, a := range e.Attr {
			if a.Space != "" && a.Space != "xmlns" {
				used = append(used, a.Space)
			}
		}
		for _, c := range e.ChildElements() {
			walk(c, defaulted)
		}
	}
	for _, c := range root.ChildElements() {
		walk(c, false)
	}
	for _, p := range used {
		if !declared[p] {
			declared[p] = true
			pc.undeclared = append(pc.undeclared, p)
		}
	}
	pc.own = strings.TrimSpace(b.String())
	return pc, true
}

// withoutDerivedNodeGraphics drops the entries that the reader derives
// from the JaWE and Bonita layout extended attributes (readGraphics),
// which are written as extended attributes and derived again.
func withoutDerivedNodeGraphics(gs []NodeGraphics, eas ExtendedAttributes) []NodeGraphics {
	derived := (&reader{}).readGraphics(node{}, &Activity{ExtendedAttributes: eas})
	return trimSuffix(gs, derived)
}

// withoutDerivedConnectorGraphics is withoutDerivedNodeGraphics for the
// break points of JaWE.
func withoutDerivedConnectorGraphics(gs []ConnectorGraphics, eas ExtendedAttributes) []ConnectorGraphics {
	derived := readConnectorGraphics(node{}, eas)
	if len(derived) == 0 || len(gs) < len(derived) {
		return gs
	}
	tail := gs[len(gs)-len(derived):]
	for i := range derived {
		if !sameConnector(tail[i], derived[i]) {
			return gs
		}
	}
	return gs[:len(gs)-len(derived)]
}

func sameConnector(a, b ConnectorGraphics) bool {
	if a.ToolID != b.ToolID || len(a.Points) != len(b.Points) {
		return false
	}
	for i := range a.Points {
		if a.Points[i] != b.Points[i] {
			return false
		}
	}
	return true
}

// trimSuffix returns s without suffix when it ends with it.
func trimSuffix(s, suffix []NodeGraphics) []NodeGraphics {
	if len(suffix) == 0 || len(s) < len(suffix) {
		return s
	}
	for i := range suffix {
		if s[len(s)-len(suffix)+i] != suffix[i] {
			return s
		}
	}
	return s[:len(s)-len(suffix)]
}
