package xpdl

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/beevik/etree"
)

// The XPDL namespaces, by version.
var namespaces = map[string]Version{
	"http://www.wfmc.org/2002/XPDL1.0":      Version10,
	"http://www.wfmc.org/2004/XPDL2.0alpha": Version20,
	"http://www.wfmc.org/2008/XPDL2.1":      Version21,
	"http://www.wfmc.org/2009/XPDL2.2":      Version22,
}

// Read reads one XPDL package from r. It does not load the package's
// ExternalPackages (Load does). The error is a *SyntaxError when the input
// is not well-formed XML, breaks a hostile-input limit, or is not an XPDL
// package; otherwise it is an I/O error of r. Problems the reader notices
// in a readable package (unknown enumeration values, say) are not errors
// here: Validate reports them with the semantic problems. A
// *bytes.Buffer is read without copying its bytes (nor keeping them):
// bytes.NewBuffer(src) reads src at the cost of the model alone.
func Read(r io.Reader, opts *ReadOpts) (*Package, error) {
	o := opts.withDefaults()
	src, err := readAll(r, o.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", o.Name, err)
	}
	return readBytes(src, o)
}

func readBytes(src []byte, o ReadOpts) (*Package, error) {
	doc, err := parseDocument(src, o)
	if err != nil {
		return nil, err
	}
	rd := &reader{doc: doc, file: o.Name}
	pkg, err := rd.readPackage(node{doc.root, doc, 0})
	if err != nil {
		return nil, err
	}
	pkg.Source = o.Name
	finish(pkg)
	pkg.readProblems = rd.problems
	return pkg, nil
}

// reader turns a parsed document into the model, collecting the problems
// it notices on the way.
type reader struct {
	doc      *document
	file     string
	version  Version
	script   string // the package's Script Type, the default grammar
	problems Problems
}

func (r *reader) pos(e node) Pos { return e.pos() }

func (r *reader) problem(e node, sev Severity, code string, ids []string, format string, args ...any) {
	r.problemAt(r.pos(e), sev, code, ids, format, args...)
}

func (r *reader) problemAt(p Pos, sev Severity, code string, ids []string, format string, args ...any) {
	r.problems = append(r.problems, Problem{
		File: r.file, Line: p.Line, Col: p.Col, Severity: sev, Code: code,
		Message: fmt.Sprintf(format, args...), IDs: ids,
	})
}

// isXPDL reports whether an element belongs to XPDL rather than to a
// vendor extension: a WfMC namespace, or no namespace at all.
func isXPDL(e *etree.Element) bool {
	return e.Space == "" || strings.HasPrefix(e.Space, "http://www.wfmc.org/")
}

// child returns the first XPDL child element with the given local name,
// or the zero node.
func child(e node, name string) node {
	if e.Element == nil {
		return node{}
	}
	return e.doc.find(e.Element, 0, e.n+1, name)
}

// next returns the next XPDL sibling element with e's name, or the zero
// node.
func (e node) next() node {
	return e.doc.find(e.Parent(), e.Index()+1, e.doc.elems[e.n].next, e.Tag)
}

// find returns the first XPDL element with the given local name among
// parent.Child[i:], where the first element is number n, or the zero node.
// The name "" matches every element, XPDL or not.
func (d *document) find(parent *etree.Element, i, n int, name string) node {
	for _, t := range parent.Child[i:] {
		c, ok := t.(*etree.Element)
		if !ok {
			continue
		}
		if name == "" || (c.Tag == name && isXPDL(c)) {
			return node{c, d, n}
		}
		// Element siblings are numbered in order, each after the
		// subtree of the one before.
		n = d.elems[n].next
	}
	return node{}
}

// firstItem returns child(child(e, list), item), the first item of a
// wrapper list such as Activities/Activity; next walks the others:
//
//	for a := firstItem(e, "Activities", "Activity"); a.Element != nil; a = a.next() {
//
// (Loops of this kind take the place of iterators or slices of children:
// the reader walks hundreds of thousands of elements, and either of those
// allocates for each list.)
func firstItem(e node, list, item string) node {
	return child(child(e, list), item)
}

// firstElement returns e's first child element, XPDL or not, and
// nextElement the element after it, or the zero node.
func firstElement(e node) node {
	if e.Element == nil {
		return node{}
	}
	return e.doc.find(e.Element, 0, e.n+1, "")
}

func (e node) nextElement() node {
	return e.doc.find(e.Parent(), e.Index()+1, e.doc.elems[e.n].next, "")
}

// attr returns the value of an unqualified attribute, or "".
func attr(e node, name string) string {
	if e.Element == nil {
		return ""
	}
	for _, a := range e.Attr {
		if a.Space == "" && a.Key == name {
			return a.Value
		}
	}
	return ""
}

// hasAttr reports whether the unqualified attribute is present.
func hasAttr(e node, name string) bool {
	if e.Element == nil {
		return false
	}
	for _, a := range e.Attr {
		if a.Space == "" && a.Key == name {
			return true
		}
	}
	return false
}

// text returns an element's own character data, trimmed.
func text(e node) string {
	if e.Element == nil {
		return ""
	}
	var (
		one   string // the only piece, the usual case: no copy needed
		b     strings.Builder
		count int
	)
	for _, t := range e.Child {
		if cd, ok := t.(*etree.CharData); ok {
			if count++; count == 1 {
				one = cd.Data
				continue
			}
			if count == 2 {
				b.WriteString(one)
			}
			b.WriteString(cd.Data)
		}
	}
	if count > 1 {
		return strings.TrimSpace(b.String())
	}
	return strings.TrimSpace(one)
}

// childText returns the text of the first XPDL child with the given name.
func childText(e node, name string) string { return text(child(e, name)) }

func (r *reader) readPackage(root node) (*Package, error) {
	if root.Tag != "Package" {
		p := r.pos(root)
		return nil, &SyntaxError{File: r.file, Pos: p, Err: ErrNotXPDL,
			Msg: fmt.Sprintf("root element is <%s>, not an XPDL <Package>", root.Tag)}
	}
	pkg := &Package{ID: attr(root, "Id"), Name: attr(root, "Name"), Pos: r.pos(root)}
	hdr := child(root, "PackageHeader")
	pkg.Header = PackageHeader{
		XPDLVersion:   childText(hdr, "XPDLVersion"),
		Vendor:        childText(hdr, "Vendor"),
		Created:       childText(hdr, "Created"),
		Modified:      childText(hdr, "ModificationDate"),
		Description:   childText(hdr, "Description"),
		Documentation: childText(hdr, "Documentation"),
		CostUnit:      childText(hdr, "CostUnit"),
		Priority:      childText(hdr, "PriorityUnit"),
	}
	if v, ok := namespaces[root.Space]; ok {
		pkg.Version = v
	} else {
		pkg.Version = versionFromHeader(pkg.Header.XPDLVersion)
		r.problem(root, SeverityWarning, "namespace", []string{pkg.ID},
			"package %q uses namespace %q, not an XPDL one; read as XPDL %s", pkg.ID, root.Space, pkg.Version)
	}
	r.version = pkg.Version

	pkg.Redefinable = r.readRedefinable(child(root, "RedefinableHeader"))
	if cc := child(root, "ConformanceClass"); cc.Element != nil {
		pkg.Conformance = r.readConformance(cc)
	}
	if s := child(root, "Script"); s.Element != nil {
		pkg.Script = Script{Type: attr(s, "Type"), Version: attr(s, "Version"), Grammar: attr(s, "Grammar")}
	}
	r.script = pkg.Script.Type

	for e := firstItem(root, "ExternalPackages", "ExternalPackage"); e.Element != nil; e = e.next() {
		ext := &ExternalPackage{Href: attr(e, "href"), ID: attr(e, "Id"), Pos: r.pos(e)}
		if ext.ID == "" {
			ext.ID, _ = r.readExtendedAttributes(e).Get("EXTERNAL_PACKAGE_ID")
		}
		pkg.ExternalPackages = append(pkg.ExternalPackages, ext)
	}
	for e := firstItem(root, "TypeDeclarations", "TypeDeclaration"); e.Element != nil; e = e.next() {
		pkg.TypeDeclarations = append(pkg.TypeDeclarations, &TypeDeclaration{
			ID: attr(e, "Id"), Name: attr(e, "Name"), Type: r.readTypeIn(e), Pos: r.pos(e),
		})
	}
	pkg.Participants = r.readParticipants(child(root, "Participants"))
	pkg.Applications = r.readApplications(child(root, "Applications"))
	pkg.DataFields = r.readDataFields(child(root, "DataFields"))
	for e := firstItem(root, "Pools", "Pool"); e.Element != nil; e = e.next() {
		pkg.Pools = append(pkg.Pools, r.readPool(e))
	}
	for e := firstItem(root, "MessageFlows", "MessageFlow"); e.Element != nil; e = e.next() {
		pkg.MessageFlows = append(pkg.MessageFlows, &MessageFlow{
			ID: attr(e, "Id"), Name: attr(e, "Name"), Source: attr(e, "Source"), Target: attr(e, "Target"), Pos: r.pos(e),
		})
	}
	for e := firstItem(root, "WorkflowProcesses", "WorkflowProcess"); e.Element != nil; e = e.next() {
		pkg.Processes = append(pkg.Processes, r.readProcess(e))
	}
	pkg.ExtendedAttributes = r.readExtendedAttributes(root)
	return pkg, nil
}

func versionFromHeader(v string) Version {
	switch {
	case strings.HasPrefix(v, "2.2"):
		return Version22
	case strings.HasPrefix(v, "2.1"):
		return Version21
	case strings.HasPrefix(v, "2.0"), strings.HasPrefix(v, "2"):
		return Version20
	}
	return Version10
}

func (r *reader) readConformance(e node) GraphConformance {
	raw := attr(e, "GraphConformance")
	switch strings.ToUpper(strings.ReplaceAll(raw, "-", "_")) {
	case "":
		return ConformanceNone
	case "NON_BLOCKED":
		return ConformanceNonBlocked
	case "LOOP_BLOCKED":
		return ConformanceLoopBlocked
	case "FULL_BLOCKED":
		return ConformanceFullBlocked
	}
	r.problem(e, SeverityWarning, "unknown-value", nil, "unknown GraphConformance %q; treated as NON_BLOCKED", raw)
	return ConformanceNonBlocked
}

func (r *reader) readRedefinable(e node) RedefinableHeader {
	if e.Element == nil {
		return RedefinableHeader{}
	}
	h := RedefinableHeader{
		PublicationStatus: attr(e, "PublicationStatus"),
		Author:            childText(e, "Author"),
		Version:           childText(e, "Version"),
		Codepage:          childText(e, "Codepage"),
		Countrykey:        childText(e, "Countrykey"),
	}
	for resp := firstItem(e, "Responsibles", "Responsible"); resp.Element != nil; resp = resp.next() {
		h.Responsibles = append(h.Responsibles, text(resp))
	}
	return h
}

// readExtendedAttributes reads e's ExtendedAttributes list.
func (r *reader) readExtendedAttributes(e node) ExtendedAttributes {
	return r.readExtendedAttributeList(child(e, "ExtendedAttributes"))
}

// readExtendedAttributeList reads an ExtendedAttributes element.
func (r *reader) readExtendedAttributeList(list node) ExtendedAttributes {
	first := child(list, "ExtendedAttribute")
	if first.Element == nil {
		return nil
	}
	n := 0
	for ea := first; ea.Element != nil; ea = ea.next() {
		n++
	}
	out := make(ExtendedAttributes, 0, n)
	for ea := first; ea.Element != nil; ea = ea.next() {
		x := ExtendedAttribute{Name: attr(ea, "Name"), Value: attr(ea, "Value"), Pos: r.pos(ea)}
		if len(r.doc.raw) > 0 {
			x.Content = r.doc.raw[ea.n]
		}
		if !hasAttr(ea, "Value") {
			// Some exporters write the value as text content.
			x.Value = text(ea)
		}
		out = append(out, x)
	}
	return out
}

// The element names of the DataType alternatives.
var typeElements = []string{
	"BasicType", "DeclaredType", "SchemaType", "ExternalReference", "RecordType",
	"UnionType", "EnumerationType", "ArrayType", "ListType",
}

// readTypeIn reads the data type alternative that is a direct child of e
// (a DataType, TypeDeclaration, Member, ArrayType or ListType element).
func (r *reader) readTypeIn(e node) DataType {
	if e.Element == nil {
		return DataType{Kind: TypeUnknown}
	}
	for c := firstElement(e); c.Element != nil; c = c.nextElement() {
		if !isXPDL(c.Element) {
			continue
		}
		for _, name := range typeElements {
			if c.Tag == name {
				return r.readTypeElement(c)
			}
		}
	}
	return DataType{Kind: TypeUnknown}
}

func (r *reader) readTypeElement(c node) DataType {
	switch c.Tag {
	case "BasicType":
		raw := attr(c, "Type")
		bt := BasicType(strings.ToUpper(raw))
		switch bt {
		case BasicString, BasicFloat, BasicInteger, BasicReference, BasicDateTime,
			BasicDate, BasicTime, BasicBoolean, BasicPerformer:
		default:
			r.problem(c, SeverityError, "unknown-value", nil, "unknown BasicType %q", raw)
		}
		return DataType{Kind: TypeBasic, Basic: bt}
	case "DeclaredType":
		return DataType{Kind: TypeDeclared, Declared: attr(c, "Id")}
	case "SchemaType":
		return DataType{Kind: TypeSchema}
	case "ExternalReference":
		return DataType{Kind: TypeExternal, External: attr(c, "location")}
	case "EnumerationType":
		dt := DataType{Kind: TypeEnumeration}
		for v := child(c, "EnumerationValue"); v.Element != nil; v = v.next() {
			dt.Enum = append(dt.Enum, attr(v, "Name"))
		}
		return dt
	case "ArrayType", "ListType":
		elem := r.readTypeIn(c)
		kind := TypeArray
		if c.Tag == "ListType" {
			kind = TypeList
		}
		return DataType{Kind: kind, Elem: &elem}
	case "RecordType", "UnionType":
		kind := TypeRecord
		if c.Tag == "UnionType" {
			kind = TypeUnion
		}
		dt := DataType{Kind: kind}
		for m := child(c, "Member"); m.Element != nil; m = m.next() {
			dt.Members = append(dt.Members, r.readTypeIn(m))
		}
		return dt
	}
	return DataType{Kind: TypeUnknown}
}

func (r *reader) readParticipants(list node) []*Participant {
	var out []*Participant
	for e := child(list, "Participant"); e.Element != nil; e = e.next() {
		p := &Participant{
			ID: attr(e, "Id"), Name: attr(e, "Name"), Description: childText(e, "Description"),
			Pos: r.pos(e), ExtendedAttributes: r.readExtendedAttributes(e),
		}
		pt := child(e, "ParticipantType")
		raw := attr(pt, "Type")
		p.Type = ParticipantType(strings.ToUpper(raw))
		switch p.Type {
		case ParticipantHuman, ParticipantRole, ParticipantOrgUnit, ParticipantResource,
			ParticipantResourceSet, ParticipantSystem:
		default:
			at := pt
			if at.Element == nil {
				at = e
			}
			r.problem(at, SeverityWarning, "unknown-value", []string{p.ID},
				"participant %q has unknown ParticipantType %q; treated as ROLE", p.ID, raw)
			p.Type = ParticipantRole
		}
		out = append(out, p)
	}
	return out
}

// The XPDL 2 application type elements under Application/Type.
var applicationTypes = []string{"Ejb", "Pojo", "Xslt", "Script", "WebService", "BusinessRule", "Form"}

func (r *reader) readApplications(list node) []*Application {
	var out []*Application
	for e := child(list, "Application"); e.Element != nil; e = e.next() {
		a := &Application{
			ID: attr(e, "Id"), Name: attr(e, "Name"), Description: childText(e, "Description"),
			FormalParameters: r.readFormalParameters(child(e, "FormalParameters")),
			Pos:              r.pos(e), ExtendedAttributes: r.readExtendedAttributes(e),
		}
		if t := child(e, "Type"); t.Element != nil {
			for _, name := range applicationTypes {
				if child(t, name).Element != nil {
					a.Type = name
				}
			}
		}
		out = append(out, a)
	}
	return out
}

func (r *reader) readFormalParameters(list node) []*FormalParameter {
	var out []*FormalParameter
	for e := child(list, "FormalParameter"); e.Element != nil; e = e.next() {
		fp := &FormalParameter{
			ID: attr(e, "Id"), Name: attr(e, "Name"), Description: childText(e, "Description"),
			IsArray: isTrue(attr(e, "IsArray")), Type: r.readTypeIn(child(e, "DataType")), Pos: r.pos(e),
		}
		if fp.Type.Kind == TypeUnknown {
			// XPDL 2 allows the type element directly? Real files always
			// wrap it in DataType; fall back for tolerance.
			fp.Type = r.readTypeIn(e)
		}
		raw := attr(e, "Mode")
		switch ParamMode(strings.ToUpper(raw)) {
		case "":
			fp.Mode = ModeIn
		case ModeIn, ModeOut, ModeInOut:
			fp.Mode = ParamMode(strings.ToUpper(raw))
		default:
			r.problem(e, SeverityError, "unknown-value", []string{fp.ID}, "formal parameter %q has unknown Mode %q", fp.ID, raw)
			fp.Mode = ModeIn
		}
		out = append(out, fp)
	}
	return out
}

func (r *reader) readDataFields(list node) []*DataField {
	var out []*DataField
	for e := child(list, "DataField"); e.Element != nil; e = e.next() {
		df := &DataField{
			ID: attr(e, "Id"), Name: attr(e, "Name"), Description: childText(e, "Description"),
			IsArray: isTrue(attr(e, "IsArray")), ReadOnly: isTrue(attr(e, "ReadOnly")),
			Correlation: isTrue(attr(e, "Correlation")), Length: childText(e, "Length"),
			Type: r.readTypeIn(child(e, "DataType")), Pos: r.pos(e),
			ExtendedAttributes: r.readExtendedAttributes(e),
		}
		if iv := child(e, "InitialValue"); iv.Element != nil {
			df.InitialValue, df.HasInitialValue = text(iv), true
		}
		out = append(out, df)
	}
	return out
}

func isTrue(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

func (r *reader) readPool(e node) *Pool {
	p := &Pool{ID: attr(e, "Id"), Name: attr(e, "Name"), Process: attr(e, "Process"), Orientation: attr(e, "Orientation"), Pos: r.pos(e)}
	for l := firstItem(e, "Lanes", "Lane"); l.Element != nil; l = l.next() {
		lane := &Lane{ID: attr(l, "Id"), Name: attr(l, "Name"), ParentLane: attr(l, "ParentLane"), Pos: r.pos(l)}
		lane.Graphics = readNodeGraphics(child(l, "NodeGraphicsInfos"))
		for perf := firstItem(l, "Performers", "Performer"); perf.Element != nil; perf = perf.next() {
			lane.Performers = append(lane.Performers, text(perf))
		}
		p.Lanes = append(p.Lanes, lane)
	}
	p.Graphics = readNodeGraphics(child(e, "NodeGraphicsInfos"))
	return p
}

func (r *reader) readProcess(e node) *Process {
	p := &Process{
		ID: attr(e, "Id"), Name: attr(e, "Name"), AccessLevel: attr(e, "AccessLevel"), Pos: r.pos(e),
		Redefinable:        r.readRedefinable(child(e, "RedefinableHeader")),
		FormalParameters:   r.readFormalParameters(child(e, "FormalParameters")),
		DataFields:         r.readDataFields(child(e, "DataFields")),
		Participants:       r.readParticipants(child(e, "Participants")),
		Applications:       r.readApplications(child(e, "Applications")),
		ExtendedAttributes: r.readExtendedAttributes(e),
	}
	if h := child(e, "ProcessHeader"); h.Element != nil {
		est := child(h, "TimeEstimation")
		p.Header = ProcessHeader{
			DurationUnit: attr(h, "DurationUnit"),
			Created:      childText(h, "Created"),
			Description:  childText(h, "Description"),
			Priority:     childText(h, "Priority"),
			Limit:        childText(h, "Limit"),
			ValidFrom:    childText(h, "ValidFrom"),
			ValidTo:      childText(h, "ValidTo"),
			Waiting:      childText(est, "WaitingTime"),
			Working:      childText(est, "WorkingTime"),
			Duration:     childText(est, "Duration"),
		}
	}
	for s := firstItem(e, "ActivitySets", "ActivitySet"); s.Element != nil; s = s.next() {
		set := &ActivitySet{ID: attr(s, "Id"), Name: attr(s, "Name"), Pos: r.pos(s)}
		r.readFlow(s, &set.Flow)
		p.ActivitySets = append(p.ActivitySets, set)
	}
	r.readFlow(e, &p.Flow)
	return p
}

func (r *reader) readFlow(e node, f *Flow) {
	for a := firstItem(e, "Activities", "Activity"); a.Element != nil; a = a.next() {
		f.Activities = append(f.Activities, r.readActivity(a))
	}
	for t := firstItem(e, "Transitions", "Transition"); t.Element != nil; t = t.next() {
		f.Transitions = append(f.Transitions, r.readTransition(t))
	}
}

// expression reads an expression-bearing element: its own text, or the
// text of an XPDL 2 <Expression>, XPDL 1 <Xpression> or XPDL 2.2
// <FormalExpression> (ActualParameter) child, with the
// grammar declared on the element, else the package's.
func (r *reader) expression(e node) Expression {
	if e.Element == nil {
		return Expression{}
	}
	x := Expression{Text: text(e), Pos: r.pos(e), Grammar: r.script}
	if g := grammarOf(e); g != "" {
		x.Grammar = g
	}
	for _, name := range []string{"Expression", "Xpression", "FormalExpression"} {
		if c := child(e, name); c.Element != nil {
			if t := text(c); t != "" {
				if x.Text != "" {
					x.Text += " "
				}
				x.Text += t
			}
			if g := grammarOf(c); g != "" {
				x.Grammar = g
			}
			x.Pos = r.pos(c)
		}
	}
	return x
}

func grammarOf(e node) string {
	if g := attr(e, "ScriptGrammar"); g != "" {
		return g
	}
	return attr(e, "ScriptType")
}

func (r *reader) readTransition(e node) *Transition {
	t := &Transition{
		ID: attr(e, "Id"), Name: attr(e, "Name"), From: attr(e, "From"), To: attr(e, "To"),
		Description: childText(e, "Description"), Pos: r.pos(e),
		ExtendedAttributes: r.readExtendedAttributes(e),
	}
	t.Graphics = readConnectorGraphics(child(e, "ConnectorGraphicsInfos"), t.ExtendedAttributes)
	if c := child(e, "Condition"); c.Element != nil {
		cond := &Condition{Expression: r.expression(c), Pos: r.pos(c)}
		raw := attr(c, "Type")
		switch ConditionType(strings.ToUpper(raw)) {
		case "":
			cond.Type = ConditionCondition
		case ConditionCondition, ConditionOtherwise, ConditionException, ConditionDefaultException:
			cond.Type = ConditionType(strings.ToUpper(raw))
		default:
			r.problem(c, SeverityError, "unknown-value", []string{t.ID}, "transition %q has unknown condition Type %q", t.ID, raw)
			cond.Type = ConditionCondition
		}
		t.Condition = cond
	}
	return t
}

// activityParts are the children of an Activity that the reader looks
// at, each the first XPDL child of its name. An activity has many
// children and the reader asks for most of them; one pass that sorts them
// out (partsOf) is cheaper than a child lookup for each.
type activityParts struct {
	description, priority, limit, documentation, extendedAttributes node
	route, blockActivity, event, implementation                     node
	performer, performers, startMode, finishMode                    node
	deadline, loop, transitionRestrictions, nodeGraphicsInfos       node
	formalParameters                                                node
}

func partsOf(e node) activityParts {
	var p activityParts
	for c := firstElement(e); c.Element != nil; c = c.nextElement() {
		if !isXPDL(c.Element) {
			continue
		}
		var part *node
		switch c.Tag {
		case "Description":
			part = &p.description
		case "Priority":
			part = &p.priority
		case "Limit":
			part = &p.limit
		case "Documentation":
			part = &p.documentation
		case "ExtendedAttributes":
			part = &p.extendedAttributes
		case "Route":
			part = &p.route
		case "BlockActivity":
			part = &p.blockActivity
		case "Event":
			part = &p.event
		case "Implementation":
			part = &p.implementation
		case "Performer":
			part = &p.performer
		case "Performers":
			part = &p.performers
		case "FormalParameters":
			part = &p.formalParameters
		case "StartMode":
			part = &p.startMode
		case "FinishMode":
			part = &p.finishMode
		case "Deadline":
			part = &p.deadline
		case "Loop":
			part = &p.loop
		case "TransitionRestrictions":
			part = &p.transitionRestrictions
		case "NodeGraphicsInfos":
			part = &p.nodeGraphicsInfos
		default:
			continue
		}
		if part.Element == nil {
			*part = c
		}
	}
	return p
}

func (r *reader) readActivity(e node) *Activity {
	p := partsOf(e)
	a := &Activity{
		ID: attr(e, "Id"), Name: attr(e, "Name"), Description: text(p.description),
		Pos: r.pos(e), Priority: text(p.priority), Limit: text(p.limit),
		Documentation:      attr(p.documentation, "href"),
		ExtendedAttributes: r.readExtendedAttributeList(p.extendedAttributes),
	}
	if a.Documentation == "" {
		a.Documentation = text(p.documentation)
	}
	r.readActivityKind(p, a)
	// XPDL 1 <Performer> elements, then XPDL 2 <Performers>.
	a.Performers = appendPerformers(a.Performers, p.performer)
	a.Performers = appendPerformers(a.Performers, child(p.performers, "Performer"))
	a.FormalParameters = r.readFormalParameters(p.formalParameters)
	a.StartMode = r.readMode(e, p.startMode, "StartMode", a.ID)
	a.FinishMode = r.readMode(e, p.finishMode, "FinishMode", a.ID)
	for d := p.deadline; d.Element != nil; d = d.next() {
		a.Deadlines = append(a.Deadlines, r.readDeadline(d, a.ID))
	}
	if p.loop.Element != nil {
		a.Loop = r.readLoop(p.loop, a.ID)
	}
	for tr := child(p.transitionRestrictions, "TransitionRestriction"); tr.Element != nil; tr = tr.next() {
		if j := child(tr, "Join"); j.Element != nil {
			a.Join = Gateway{Type: r.gatewayType(j, attr(j, "Type"), a.ID), Pos: r.pos(j)}
		}
		if s := child(tr, "Split"); s.Element != nil {
			a.Split = Gateway{Type: r.gatewayType(s, attr(s, "Type"), a.ID), Pos: r.pos(s)}
			for ref := firstItem(s, "TransitionRefs", "TransitionRef"); ref.Element != nil; ref = ref.next() {
				a.Split.TransitionRefs = append(a.Split.TransitionRefs, attr(ref, "Id"))
			}
		}
	}
	a.Graphics = r.readGraphics(p.nodeGraphicsInfos, a)
	r.readReentrant(a)
	return a
}

// readReentrant sets a.Reentrant from the activity's Reentrant extended
// attributes: the first one decides; a value other than true or false,
// or a later one that contradicts it, is an error.
func (r *reader) readReentrant(a *Activity) {
	for _, ea := range a.ExtendedAttributes {
		if ea.Name != AttrReentrant {
			continue
		}
		var v bool
		switch strings.ToLower(strings.TrimSpace(ea.Value)) {
		case "true":
			v = true
		case "false":
		default:
			r.problemAt(ea.Pos, SeverityError, "unknown-value", []string{a.ID},
				"activity %q: extended attribute Reentrant is %q; it must be true or false", a.ID, ea.Value)
			continue
		}
		switch {
		case a.Reentrant == nil:
			a.Reentrant = &v
		case *a.Reentrant != v:
			r.problemAt(ea.Pos, SeverityError, "unknown-value", []string{a.ID},
				"activity %q: extended attribute Reentrant is %q here and %t before", a.ID, ea.Value, *a.Reentrant)
		}
	}
}

// gatewayType maps a Join/Split Type or Route GatewayType to GatewayType.
func (r *reader) gatewayType(e node, raw, activityID string) GatewayType {
	switch strings.ToUpper(strings.TrimSpace(raw)) {
	case "XOR", "EXCLUSIVE":
		return GatewayXOR
	case "AND", "PARALLEL":
		return GatewayAND
	case "OR", "INCLUSIVE":
		return GatewayOR
	case "COMPLEX":
		return GatewayComplex
	case "":
		// A Join or Split without Type: no schema gives one; XOR, the
		// reading every XPDL 1 engine takes, is ours.
		return GatewayXOR
	}
	r.problem(e, SeverityError, "unknown-value", []string{activityID}, "activity %q has unknown gateway type %q", activityID, raw)
	return GatewayXOR
}

func (r *reader) readActivityKind(p activityParts, a *Activity) {
	if rt := p.route; rt.Element != nil {
		a.Kind = ActivityRoute
		// XPDL 1.0 Routes have no GatewayType; their implicit gateways
		// take the defaults of any other activity (finish.go).
		a.Route = &Route{GatewayType: GatewayXOR, Instantiate: isTrue(attr(rt, "Instantiate")), typed: r.version != Version10}
		if raw := attr(rt, "GatewayType"); raw != "" {
			a.Route.GatewayType = r.gatewayType(rt, raw, a.ID)
			a.Route.declared = true
		}
		a.Route.IncomingCondition = strings.TrimSpace(attr(rt, "IncomingCondition"))
		a.Route.ExclusiveType = attr(rt, "ExclusiveType")
		if a.Route.ExclusiveType == "" {
			a.Route.ExclusiveType = attr(rt, "XORType")
		}
		return
	}
	if b := p.blockActivity; b.Element != nil {
		a.Kind = ActivityBlock
		set := attr(b, "ActivitySetId")
		if set == "" {
			set = attr(b, "BlockId") // XPDL 1.0
		}
		a.Block = &Block{ActivitySet: set, StartActivity: attr(b, "StartActivityId"), Pos: r.pos(b)}
		return
	}
	if ev := p.event; ev.Element != nil {
		a.Kind = ActivityEvent
		a.Event = r.readEvent(ev, a.ID)
		return
	}
	impl := p.implementation
	if impl.Element == nil {
		// Global 360 and others omit Implementation for a plain task.
		a.Kind = ActivityNo
		return
	}
	if sf := child(impl, "SubFlow"); sf.Element != nil {
		a.Kind = ActivitySubFlow
		a.SubFlow = &SubFlow{
			Process: attr(sf, "Id"), PackageRef: attr(sf, "PackageRef"),
			Execution: r.execution(sf, a.ID, ExecSynchr), InstanceDataField: attr(sf, "InstanceDataField"),
			ActualParameters: r.actualParameters(sf), Pos: r.pos(sf),
		}
		return
	}
	if child(impl, "Tool").Element != nil {
		a.Kind = ActivityTool
		for t := child(impl, "Tool"); t.Element != nil; t = t.next() {
			tc := &ToolCall{
				Application: attr(t, "Id"), Type: ToolType(strings.ToUpper(attr(t, "Type"))),
				ActualParameters: r.actualParameters(t), Description: childText(t, "Description"),
				Pos: r.pos(t), ExtendedAttributes: r.readExtendedAttributes(t),
			}
			if tc.Type == "" {
				tc.Type = ToolApplication
			}
			a.Tools = append(a.Tools, tc)
		}
		return
	}
	if task := child(impl, "Task"); task.Element != nil {
		r.readTask(task, a)
		return
	}
	if ref := child(impl, "Reference"); ref.Element != nil {
		a.Kind = ActivityNo
		r.problem(ref, SeverityWarning, "unsupported", []string{a.ID},
			"activity %q: Implementation Reference (to activity %q) is not executed; the activity is a no-op", a.ID, attr(ref, "ActivityId"))
		return
	}
	a.Kind = ActivityNo // <No/> or an empty Implementation
}

// readTask reads an XPDL 2 Task element.
func (r *reader) readTask(task node, a *Activity) {
	a.Kind = ActivityNo
	a.Task = TaskNone
	for c := firstElement(task); c.Element != nil; c = c.nextElement() {
		if !isXPDL(c.Element) || !strings.HasPrefix(c.Tag, "Task") {
			continue
		}
		switch kind := TaskKind(strings.TrimPrefix(c.Tag, "Task")); kind {
		case TaskUser, TaskManual:
			a.Task = kind
			a.Performers = appendPerformers(a.Performers, firstItem(c, "Performers", "Performer"))
		case TaskApplication:
			a.Task, a.Kind = kind, ActivityTool
			a.Tools = append(a.Tools, &ToolCall{
				Application: attr(c, "Id"), Type: ToolApplication, ActualParameters: r.actualParameters(c),
				Description: childText(c, "Description"), Pos: r.pos(c),
			})
		case TaskService, TaskSend, TaskReceive, TaskReference:
			// Bound to host code by activity id or message name; the
			// engine calls the application the host registers for it.
			a.Task, a.Kind = kind, ActivityTool
			app := attr(c, "ApplicationRef") // not in the schema; some tools write it
			a.Tools = append(a.Tools, &ToolCall{Application: app, Type: ToolApplication, Pos: r.pos(c)})
		case TaskNone:
			a.Task = kind
		case TaskScript:
			a.Task, a.Kind = kind, ActivityScript
			x := r.expression(child(c, "Script"))
			a.Script = &x
		default:
			r.problem(c, SeverityWarning, "unknown-value", []string{a.ID}, "activity %q has unknown task <%s>; treated as a no-op", a.ID, c.Tag)
		}
		return
	}
}

// actualParameters reads ActualParameters/ActualParameter under e.
func (r *reader) actualParameters(e node) []Expression {
	var out []Expression
	for ap := firstItem(e, "ActualParameters", "ActualParameter"); ap.Element != nil; ap = ap.next() {
		out = append(out, r.expression(ap))
	}
	return out
}

func (r *reader) execution(e node, activityID string, dflt Execution) Execution {
	raw := attr(e, "Execution")
	switch Execution(strings.ToUpper(raw)) {
	case "":
		return dflt
	case ExecSynchr:
		return ExecSynchr
	case ExecAsynchr:
		return ExecAsynchr
	}
	r.problem(e, SeverityError, "unknown-value", []string{activityID}, "activity %q has unknown Execution %q", activityID, raw)
	return dflt
}

// placeholderPerformers are performer texts that exporters write to mean
// "no performer given here" (TIBCO Business Studio).
var placeholderPerformers = map[string]bool{"-defined-in-Activity-Performer-": true}

// appendPerformers appends the text of the performer element first and of
// its later siblings of the same name.
func appendPerformers(dst []string, first node) []string {
	for p := first; p.Element != nil; p = p.next() {
		if t := text(p); t != "" && !placeholderPerformers[t] {
			dst = append(dst, t)
		}
	}
	return dst
}

// readMode reads activity e's StartMode or FinishMode (name): m, its XPDL
// 1 child element of that name holding <Automatic/> or <Manual/>, or else
// its XPDL 2 attribute.
func (r *reader) readMode(e, m node, name, activityID string) Mode {
	if m.Element != nil {
		switch {
		case child(m, "Automatic").Element != nil:
			return ModeAutomatic
		case child(m, "Manual").Element != nil:
			return ModeManual
		}
	}
	raw := attr(e, name)
	switch strings.ToLower(raw) {
	case "":
		return ModeUnspecified
	case "automatic":
		return ModeAutomatic
	case "manual":
		return ModeManual
	}
	r.problem(e, SeverityError, "unknown-value", []string{activityID}, "activity %q has unknown %s %q", activityID, name, raw)
	return ModeUnspecified
}

func (r *reader) readDeadline(e node, activityID string) *Deadline {
	d := &Deadline{Execution: r.execution(e, activityID, ExecUnspecified), Pos: r.pos(e)}
	cond := child(e, "DeadlineCondition")
	if cond.Element == nil {
		cond = child(e, "DeadlineDuration")
	}
	if cond.Element != nil {
		d.Condition = r.expression(cond)
	}
	d.ExceptionName = childText(e, "ExceptionName")
	return d
}

func (r *reader) readLoop(e node, activityID string) *Loop {
	l := &Loop{Pos: r.pos(e)}
	raw := attr(e, "LoopType")
	switch LoopType(raw) {
	case LoopNone, LoopStandard, LoopMultiInstance:
		l.Type = LoopType(raw)
	case "":
		l.Type = LoopNone
		if child(e, "LoopStandard").Element != nil {
			l.Type = LoopStandard
		} else if child(e, "LoopMultiInstance").Element != nil {
			l.Type = LoopMultiInstance
		}
	default:
		r.problem(e, SeverityError, "unknown-value", []string{activityID}, "activity %q has unknown LoopType %q", activityID, raw)
		l.Type = LoopNone
	}
	if s := child(e, "LoopStandard"); s.Element != nil {
		l.TestTime = attr(s, "TestTime")
		l.Maximum = attr(s, "LoopMaximum")
		l.Condition = r.attrOrChildExpression(s, "LoopCondition")
	}
	if m := child(e, "LoopMultiInstance"); m.Element != nil {
		l.Ordering = attr(m, "MI_Ordering")
		l.Behavior = attr(m, "MI_FlowCondition")
		l.MICondition = r.attrOrChildExpression(m, "MI_Condition")
		l.FlowCondition = r.attrOrChildExpression(m, "ComplexMI_FlowCondition")
	}
	return l
}

// attrOrChildExpression reads an expression written as an attribute
// (XPDL 2.1) or as a child element (XPDL 2.2).
func (r *reader) attrOrChildExpression(e node, name string) Expression {
	if c := child(e, name); c.Element != nil {
		return r.expression(c)
	}
	return Expression{Text: strings.TrimSpace(attr(e, name)), Grammar: r.script, Pos: r.pos(e)}
}

// The event trigger names, with the XPDL 2.0 spellings mapped.
var triggers = map[string]Trigger{
	"none": TriggerNone, "message": TriggerMessage, "timer": TriggerTimer, "error": TriggerError,
	"conditional": TriggerConditional, "rule": TriggerConditional, "link": TriggerLink,
	"signal": TriggerSignal, "cancel": TriggerCancel, "compensation": TriggerCompensation,
	"terminate": TriggerTerminate, "escalation": TriggerEscalation, "multiple": TriggerMultiple,
	"parallelmultiple": TriggerParallelMultiple,
}

func (r *reader) readEvent(e node, activityID string) *Event {
	ev := &Event{Pos: r.pos(e), Trigger: TriggerNone}
	var el node
	for _, name := range []string{"StartEvent", "IntermediateEvent", "EndEvent"} {
		if c := child(e, name); c.Element != nil {
			el = c
			ev.Type = EventType(strings.TrimSuffix(name, "Event"))
			break
		}
	}
	if el.Element == nil {
		r.problem(e, SeverityError, "unknown-value", []string{activityID}, "activity %q has an Event with no StartEvent, IntermediateEvent or EndEvent", activityID)
		ev.Type = EventIntermediate
		return ev
	}
	ev.Pos = r.pos(el)
	raw := attr(el, "Trigger")
	if ev.Type == EventEnd || raw == "" {
		if res := attr(el, "Result"); res != "" {
			raw = res
		}
	}
	if raw != "" {
		t, ok := triggers[strings.ToLower(raw)]
		if !ok {
			r.problem(el, SeverityError, "unknown-value", []string{activityID}, "activity %q has unknown event trigger %q", activityID, raw)
			t = TriggerNone
		}
		ev.Trigger = t
	}
	ev.Target = attr(el, "Target")
	ev.Interrupting = !strings.EqualFold(strings.TrimSpace(attr(el, "Interrupting")), "false")
	if t := child(el, "TriggerTimer"); t.Element != nil {
		ev.Timer = &TimerTrigger{
			TimeDate:  r.attrOrChildExpression(t, "TimeDate"),
			TimeCycle: r.attrOrChildExpression(t, "TimeCycle"),
		}
	}
	if re := child(el, "ResultError"); re.Element != nil {
		ev.ErrorCode = attr(re, "ErrorCode")
	}
	for _, name := range []string{"TriggerResultMessage", "TriggerResultSignal", "TriggerResultLink", "TriggerResultCompensation"} {
		if c := child(el, name); c.Element != nil {
			ev.Ref = firstNonEmpty(attr(c, "Name"), attr(child(c, "Message"), "Name"), attr(c, "LinkId"), attr(c, "ActivityId"))
			ev.Throw = strings.EqualFold(strings.TrimSpace(attr(c, "CatchThrow")), "THROW")
		}
	}
	return ev
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// readGraphics reads the XPDL 2 NodeGraphicsInfo items of list (an
// activity's NodeGraphicsInfos) and the XPDL 1 layout extended attributes
// of JaWE and Bonita.
func (r *reader) readGraphics(list node, a *Activity) []NodeGraphics {
	out := readNodeGraphics(list)
	ea := a.ExtendedAttributes
	if off, ok := ea.Get("JaWE_GRAPH_OFFSET"); ok {
		ng := NodeGraphics{ToolID: "JaWE"}
		ng.LaneID, _ = ea.Get("JaWE_GRAPH_PARTICIPANT_ID")
		if x, y, found := strings.Cut(off, ","); found {
			ng.X, ng.Y = num(x), num(y)
		}
		out = append(out, ng)
	}
	if x, ok := ea.Get("XOffset"); ok {
		ng := NodeGraphics{ToolID: "Bonita", X: num(x)}
		y, _ := ea.Get("YOffset")
		w, _ := ea.Get("CellWidth")
		h, _ := ea.Get("CellHeight")
		ng.Y, ng.Width, ng.Height = num(y), num(w), num(h)
		out = append(out, ng)
	}
	return out
}

// readNodeGraphics reads the XPDL 2 NodeGraphicsInfo items of list (the
// NodeGraphicsInfos of an activity, lane or pool).
func readNodeGraphics(list node) []NodeGraphics {
	var out []NodeGraphics
	for g := child(list, "NodeGraphicsInfo"); g.Element != nil; g = g.next() {
		ng := NodeGraphics{
			ToolID: attr(g, "ToolId"), LaneID: attr(g, "LaneId"), PageID: attr(g, "PageId"),
			Width: num(attr(g, "Width")), Height: num(attr(g, "Height")),
			FillColor: attr(g, "FillColor"), Shape: attr(g, "Shape"),
		}
		if c := child(g, "Coordinates"); c.Element != nil {
			ng.X, ng.Y = num(attr(c, "XCoordinate")), num(attr(c, "YCoordinate"))
		}
		out = append(out, ng)
	}
	return out
}

// readConnectorGraphics reads the XPDL 2 ConnectorGraphicsInfo items of
// list (a transition's ConnectorGraphicsInfos) and JaWE's
// JaWE_GRAPH_BREAK_POINTS extended attribute of XPDL 1 ("x1,y1-x2,y2",
// or one point "x,y").
func readConnectorGraphics(list node, ea ExtendedAttributes) []ConnectorGraphics {
	var out []ConnectorGraphics
	for g := child(list, "ConnectorGraphicsInfo"); g.Element != nil; g = g.next() {
		cg := ConnectorGraphics{ToolID: attr(g, "ToolId")}
		for c := child(g, "Coordinates"); c.Element != nil; c = c.next() {
			cg.Points = append(cg.Points, Point{X: num(attr(c, "XCoordinate")), Y: num(attr(c, "YCoordinate"))})
		}
		out = append(out, cg)
	}
	if bp, ok := ea.Get("JaWE_GRAPH_BREAK_POINTS"); ok {
		cg := ConnectorGraphics{ToolID: "JaWE"}
		for p := range strings.SplitSeq(bp, "-") {
			if x, y, found := strings.Cut(p, ","); found {
				cg.Points = append(cg.Points, Point{X: num(x), Y: num(y)})
			}
		}
		out = append(out, cg)
	}
	return out
}

func num(s string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0
	}
	return f
}
