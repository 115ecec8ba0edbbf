package xpdl_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// The XPDL namespaces, by version.
const (
	ns10 = "http://www.wfmc.org/2002/XPDL1.0"
	ns20 = "http://www.wfmc.org/2004/XPDL2.0alpha"
	ns21 = "http://www.wfmc.org/2008/XPDL2.1"
	ns22 = "http://www.wfmc.org/2009/XPDL2.2"
)

// xpdlDoc returns a package document in namespace ns with body inside
// the root element.
func xpdlDoc(ns, body string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="` + ns + `" Id="pkg" Name="Package">
` + body + `
</Package>
`
}

// processDoc returns a package document holding one process "wp" with the
// given activities and transitions (XML of the list items).
func processDoc(ns, activities, transitions string) string {
	return xpdlDoc(ns, `<WorkflowProcesses>
<WorkflowProcess Id="wp" Name="wp">
<Activities>
`+activities+`
</Activities>
<Transitions>
`+transitions+`
</Transitions>
</WorkflowProcess>
</WorkflowProcesses>`)
}

// noActivity is an activity with no implementation.
func noActivity(id string) string {
	return `<Activity Id="` + id + `"><Implementation><No/></Implementation></Activity>`
}

func transition(id, from, to string) string {
	return fmt.Sprintf(`<Transition Id="%s" From="%s" To="%s"/>`, id, from, to)
}

func read(t *testing.T, src string, opts *xpdl.ReadOpts) (*xpdl.Package, error) {
	t.Helper()
	return xpdl.Read(strings.NewReader(src), opts)
}

func mustRead(t *testing.T, src string) *xpdl.Package {
	t.Helper()
	pkg, err := read(t, src, nil)
	require.NoError(t, err)
	return pkg
}

// onlyActivity returns the activity with the given id of process "wp".
func onlyActivity(t *testing.T, pkg *xpdl.Package, id string) *xpdl.Activity {
	t.Helper()
	proc := pkg.Process("wp")
	require.NotNil(t, proc)
	a := proc.Activity(id)
	require.NotNil(t, a, "activity %q", id)
	return a
}

func TestReadVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ns   string
		want xpdl.Version
	}{
		{ns10, xpdl.Version10},
		{ns20, xpdl.Version20},
		{ns21, xpdl.Version21},
		{ns22, xpdl.Version22},
	}
	for _, tt := range tests {
		t.Run(string(tt.want), func(t *testing.T) {
			t.Parallel()
			pkg := mustRead(t, xpdlDoc(tt.ns, ""))
			require.Equal(t, tt.want, pkg.Version)
			require.Equal(t, "pkg", pkg.ID)
			require.Equal(t, "Package", pkg.Name)
			require.Equal(t, xpdl.Pos{Line: 2, Col: 1}, pkg.Pos)
		})
	}

	t.Run("prefixed", func(t *testing.T) {
		t.Parallel()
		pkg := mustRead(t, `<xpdl:Package xmlns:xpdl="`+ns21+`" Id="p"><xpdl:WorkflowProcesses><xpdl:WorkflowProcess Id="wp"/></xpdl:WorkflowProcesses></xpdl:Package>`)
		require.Equal(t, xpdl.Version21, pkg.Version)
		require.Len(t, pkg.Processes, 1)
	})

	t.Run("no namespace falls back to the header and warns", func(t *testing.T) {
		t.Parallel()
		pkg := mustRead(t, `<Package Id="p"><PackageHeader><XPDLVersion>2.1</XPDLVersion></PackageHeader></Package>`)
		require.Equal(t, xpdl.Version21, pkg.Version)
		ps := xpdl.Validate(pkg, nil)
		require.True(t, hasCode(ps, "namespace"), "problems: %v", ps)
	})
}

func hasCode(ps xpdl.Problems, code string) bool {
	for _, p := range ps {
		if p.Code == code {
			return true
		}
	}
	return false
}

func TestReadCommentBeforeXMLDeclaration(t *testing.T) {
	t.Parallel()
	// As in jawe-test-JavaScript.xpdl: a licence comment precedes the
	// declaration, which XML 1.0 forbids and real files do anyway.
	src := "<!--\n  licence text\n-->\n" + xpdlDoc(ns10, "")
	pkg := mustRead(t, src)
	require.Equal(t, xpdl.Version10, pkg.Version)
	require.Equal(t, 5, pkg.Pos.Line)
}

// syntaxError requires err to be a *SyntaxError wrapping sentinel, and
// matching ErrInvalid, and returns it.
func syntaxError(t *testing.T, err error, sentinel error) *xpdl.SyntaxError {
	t.Helper()
	require.ErrorIs(t, err, sentinel)
	require.ErrorIs(t, err, xpdl.ErrInvalid)
	var se *xpdl.SyntaxError
	require.ErrorAs(t, err, &se)
	require.NotEmpty(t, se.Msg)
	p := se.Problem()
	require.Equal(t, xpdl.SeverityError, p.Severity)
	require.Equal(t, se.Pos.Line, p.Line)
	return se
}

func TestReadRejects(t *testing.T) {
	t.Parallel()
	// A small valid document to measure limits against: Package >
	// WorkflowProcesses > WorkflowProcess > Activities > Activity (line 6,
	// four attributes) is five elements deep, and Transitions (line 8) is
	// the sixth and last element.
	doc := processDoc(ns10, `<Activity Id="a" Name="A" c="1" d="2"/>`, "")
	const depth, elements, attrs = 5, 6, 4
	_, err := read(t, doc, &xpdl.ReadOpts{MaxBytes: int64(len(doc)), MaxDepth: depth, MaxElements: elements, MaxAttrs: attrs})
	require.NoError(t, err, "the document is exactly at every limit")

	tests := []struct {
		name     string
		src      string
		opts     *xpdl.ReadOpts
		sentinel error
		code     string
		line     int
	}{
		{
			name: "DOCTYPE", sentinel: xpdl.ErrDOCTYPE, code: "doctype", line: 2,
			src: "<?xml version=\"1.0\"?>\n<!DOCTYPE Package [<!ENTITY x \"y\">]>\n<Package xmlns=\"" + ns10 + "\" Id=\"p\"/>",
		},
		{
			name: "too large", sentinel: xpdl.ErrTooLarge, code: "limit", line: 1,
			src: doc, opts: &xpdl.ReadOpts{MaxBytes: int64(len(doc)) - 1},
		},
		{
			name: "too deep", sentinel: xpdl.ErrTooDeep, code: "limit", line: 6,
			src: doc, opts: &xpdl.ReadOpts{MaxDepth: depth - 1},
		},
		{
			name: "too many attributes", sentinel: xpdl.ErrTooManyAttrs, code: "limit", line: 6,
			src: doc, opts: &xpdl.ReadOpts{MaxAttrs: attrs - 1},
		},
		{
			name: "too many elements", sentinel: xpdl.ErrTooManyElements, code: "limit", line: 8,
			src: doc, opts: &xpdl.ReadOpts{MaxElements: elements - 1},
		},
		{
			name: "root is not Package", sentinel: xpdl.ErrNotXPDL, code: "not-xpdl", line: 2,
			src: "<?xml version=\"1.0\"?>\n<Definitions xmlns=\"http://www.omg.org/spec/BPMN/20100524/MODEL\"/>",
		},
		{
			name: "mismatched tag", sentinel: xpdl.ErrMalformed, code: "syntax", line: 4,
			src: "<Package xmlns=\"" + ns10 + "\">\n<RedefinableHeader>\n<Version>1.0\n</RedefinableHeader>\n</Package>",
		},
		{
			name: "unclosed at end of input", sentinel: xpdl.ErrMalformed, code: "syntax", line: 2,
			src: "<Package xmlns=\"" + ns10 + "\">\n<WorkflowProcesses>",
		},
		{
			name: "two roots", sentinel: xpdl.ErrMalformed, code: "syntax", line: 2,
			src: "<Package xmlns=\"" + ns10 + "\"/>\n<Package xmlns=\"" + ns10 + "\"/>",
		},
		{
			name: "empty input", sentinel: xpdl.ErrMalformed, code: "syntax", line: 1,
			src: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			if opts == nil {
				opts = &xpdl.ReadOpts{}
			}
			opts.Name = "test.xpdl"
			pkg, err := read(t, tt.src, opts)
			require.Nil(t, pkg)
			se := syntaxError(t, err, tt.sentinel)
			require.Equal(t, "test.xpdl", se.File)
			require.Equal(t, tt.line, se.Pos.Line, "error: %v", err)
			require.Equal(t, tt.code, se.Problem().Code)
			require.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("test.xpdl:%d:", tt.line)), "error: %v", err)
		})
	}
}

// TestReadBuffer: a *bytes.Buffer is read as any reader is (its bytes
// are used without a copy): the same model, the same size limit, and the
// buffer's bytes are not changed.
func TestReadBuffer(t *testing.T) {
	t.Parallel()
	doc := processDoc(ns10, noActivity("a")+noActivity("b"), transition("t1", "a", "b"))
	src := []byte(doc)
	pkg, err := xpdl.Read(bytes.NewBuffer(src), nil)
	require.NoError(t, err)
	require.Equal(t, renderModel("", mustRead(t, doc)), renderModel("", pkg))
	require.Equal(t, doc, string(src), "the bytes are left as they were")

	buf := bytes.NewBufferString(doc)
	_, err = xpdl.Read(buf, &xpdl.ReadOpts{MaxBytes: int64(len(doc)) - 1})
	require.Equal(t, "limit", syntaxError(t, err, xpdl.ErrTooLarge).Problem().Code)
	_, err = xpdl.Read(bytes.NewBufferString(doc), &xpdl.ReadOpts{MaxBytes: int64(len(doc))})
	require.NoError(t, err, "at the limit")
}

// errReader fails after delivering its data.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestReadIOError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	_, err := xpdl.Read(errReader{boom}, nil)
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, xpdl.ErrInvalid, "an I/O failure says nothing about the XPDL")
}

func TestReadISO88591(t *testing.T) {
	t.Parallel()
	src := "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<Package xmlns=\"" + ns10 + "\" Id=\"p\" Name=\"Caf\xe9\">" +
		"<PackageHeader><Description>Gr\xfc\xdfe</Description></PackageHeader></Package>"
	pkg := mustRead(t, src)
	require.Equal(t, "Café", pkg.Name)
	require.Equal(t, "Grüße", pkg.Header.Description)
}

func TestReadPositions(t *testing.T) {
	t.Parallel()
	src := processDoc(ns10, "  "+noActivity("a")+"\n\t"+noActivity("b"), transition("t1", "a", "b"))
	pkg := mustRead(t, src)
	proc := pkg.Process("wp")
	require.Equal(t, xpdl.Pos{Line: 4, Col: 1}, proc.Pos)
	require.Equal(t, xpdl.Pos{Line: 6, Col: 3}, proc.Activity("a").Pos)
	require.Equal(t, xpdl.Pos{Line: 7, Col: 2}, proc.Activity("b").Pos)
	require.Equal(t, xpdl.Pos{Line: 10, Col: 1}, proc.Transition("t1").Pos)
}

func TestReadGateways(t *testing.T) {
	t.Parallel()
	type gw struct {
		Type     xpdl.GatewayType
		Implicit bool
	}
	none := gw{}
	tests := []struct {
		name      string
		ns        string
		activity  string // activity "x"; %s is where TransitionRestrictions go
		in, out   int    // transitions into and out of x
		wantJoin  gw
		wantSplit gw
	}{
		{
			name: "task with 2 outgoing splits OR implicitly", ns: ns10, in: 1, out: 2,
			activity: noActivity("x"), wantJoin: none, wantSplit: gw{xpdl.GatewayOR, true},
		},
		{
			name: "task with 2 incoming joins XOR implicitly", ns: ns21, in: 2, out: 1,
			activity: noActivity("x"), wantJoin: gw{xpdl.GatewayXOR, true}, wantSplit: none,
		},
		{
			name: "task with one in and one out has no gateway", ns: ns10, in: 1, out: 1,
			activity: noActivity("x"), wantJoin: none, wantSplit: none,
		},
		{
			name: "route without GatewayType is XOR", ns: ns22, in: 2, out: 2,
			activity: `<Activity Id="x"><Route/></Activity>`,
			wantJoin: gw{xpdl.GatewayXOR, true}, wantSplit: gw{xpdl.GatewayXOR, true},
		},
		{
			name: "route Parallel with 2 incoming joins AND, declared", ns: ns21, in: 2, out: 1,
			activity: `<Activity Id="x"><Route GatewayType="Parallel"/></Activity>`,
			wantJoin: gw{xpdl.GatewayAND, false}, wantSplit: none,
		},
		{
			name: "route Inclusive with 2 outgoing splits OR, declared", ns: ns22, in: 1, out: 2,
			activity: `<Activity Id="x"><Route GatewayType="Inclusive"/></Activity>`,
			wantJoin: none, wantSplit: gw{xpdl.GatewayOR, false},
		},
		{
			name: "explicit Join wins over the task default", ns: ns10, in: 2, out: 1,
			activity: `<Activity Id="x"><Implementation><No/></Implementation>` +
				`<TransitionRestrictions><TransitionRestriction><Join Type="AND"/></TransitionRestriction></TransitionRestrictions></Activity>`,
			wantJoin: gw{xpdl.GatewayAND, false}, wantSplit: none,
		},
		{
			name: "explicit Split wins over the route's GatewayType", ns: ns21, in: 1, out: 2,
			activity: `<Activity Id="x"><Route GatewayType="Parallel"/>` +
				`<TransitionRestrictions><TransitionRestriction><Split Type="Exclusive"/></TransitionRestriction></TransitionRestrictions></Activity>`,
			wantJoin: none, wantSplit: gw{xpdl.GatewayXOR, false},
		},
		{
			name: "explicit Join and Split on one activity", ns: ns10, in: 2, out: 2,
			activity: `<Activity Id="x"><Route/><TransitionRestrictions><TransitionRestriction>` +
				`<Join Type="XOR"/><Split Type="AND"/></TransitionRestriction></TransitionRestrictions></Activity>`,
			wantJoin: gw{xpdl.GatewayXOR, false}, wantSplit: gw{xpdl.GatewayAND, false},
		},
		{
			name: "explicit Join with a single transition is kept", ns: ns10, in: 1, out: 1,
			activity: `<Activity Id="x"><Implementation><No/></Implementation>` +
				`<TransitionRestrictions><TransitionRestriction><Join Type="AND"/></TransitionRestriction></TransitionRestrictions></Activity>`,
			wantJoin: gw{xpdl.GatewayAND, false}, wantSplit: none,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			acts := []string{tt.activity}
			var trans []string
			for i := range tt.in {
				id := fmt.Sprintf("in%d", i)
				acts = append(acts, noActivity(id))
				trans = append(trans, transition("t_"+id, id, "x"))
			}
			for i := range tt.out {
				id := fmt.Sprintf("out%d", i)
				acts = append(acts, noActivity(id))
				trans = append(trans, transition("t_"+id, "x", id))
			}
			pkg := mustRead(t, processDoc(tt.ns, strings.Join(acts, "\n"), strings.Join(trans, "\n")))
			x := onlyActivity(t, pkg, "x")
			require.Equal(t, tt.wantJoin, gw{x.Join.Type, x.Join.Implicit}, "join")
			require.Equal(t, tt.wantSplit, gw{x.Split.Type, x.Split.Implicit}, "split")
		})
	}
}

func TestReadGatewayTypeNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want xpdl.GatewayType
	}{
		{"XOR", xpdl.GatewayXOR},
		{"Exclusive", xpdl.GatewayXOR},
		{"AND", xpdl.GatewayAND},
		{"Parallel", xpdl.GatewayAND},
		{"OR", xpdl.GatewayOR},
		{"Inclusive", xpdl.GatewayOR},
		{"Complex", xpdl.GatewayComplex},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			t.Parallel()
			act := `<Activity Id="x"><Implementation><No/></Implementation><TransitionRestrictions><TransitionRestriction>` +
				`<Join Type="` + tt.raw + `"/><Split Type="` + tt.raw + `"/></TransitionRestriction></TransitionRestrictions></Activity>`
			pkg := mustRead(t, processDoc(ns21, act, ""))
			x := onlyActivity(t, pkg, "x")
			require.Equal(t, tt.want, x.Join.Type)
			require.Equal(t, tt.want, x.Split.Type)

			route := `<Activity Id="x"><Route GatewayType="` + tt.raw + `"/></Activity>`
			pkg = mustRead(t, processDoc(ns22, route, ""))
			x = onlyActivity(t, pkg, "x")
			require.Equal(t, xpdl.ActivityRoute, x.Kind)
			require.Equal(t, tt.want, x.Route.GatewayType)
		})
	}
}

func TestReadSplitTransitionRefs(t *testing.T) {
	t.Parallel()
	act := `<Activity Id="x"><Route/><TransitionRestrictions><TransitionRestriction><Split Type="XOR"><TransitionRefs>` +
		`<TransitionRef Id="t2"/><TransitionRef Id="t1"/></TransitionRefs></Split></TransitionRestriction></TransitionRestrictions></Activity>`
	pkg := mustRead(t, processDoc(ns10, act+noActivity("a")+noActivity("b"), transition("t1", "x", "a")+transition("t2", "x", "b")))
	require.Equal(t, []string{"t2", "t1"}, onlyActivity(t, pkg, "x").Split.TransitionRefs)
}

func TestReadConformance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want xpdl.GraphConformance
	}{
		{"NON_BLOCKED", xpdl.ConformanceNonBlocked},
		{"NON-BLOCKED", xpdl.ConformanceNonBlocked},
		{"LOOP_BLOCKED", xpdl.ConformanceLoopBlocked},
		{"FULL_BLOCKED", xpdl.ConformanceFullBlocked},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			t.Parallel()
			pkg := mustRead(t, xpdlDoc(ns10, `<ConformanceClass GraphConformance="`+tt.raw+`"/>`))
			require.Equal(t, tt.want, pkg.Conformance)
		})
	}
	t.Run("none declared", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, xpdl.ConformanceNone, mustRead(t, xpdlDoc(ns10, "")).Conformance)
	})
}

func TestReadConditions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		ns        string
		script    string // package Script element, if any
		condition string
		wantType  xpdl.ConditionType
		wantText  string
		wantGram  string
		wantRule  bool
	}{
		{
			name: "no Type is CONDITION", ns: ns10,
			condition: `<Condition>status == "Valid Data"</Condition>`,
			wantType:  xpdl.ConditionCondition, wantText: `status == "Valid Data"`, wantRule: true,
		},
		{
			name: "empty Expression is a label, not a rule", ns: ns22,
			condition: `<Condition Type="CONDITION"><Expression/></Condition>`,
			wantType:  xpdl.ConditionCondition, wantText: "", wantRule: false,
		},
		{
			name: "empty Condition element", ns: ns22,
			condition: `<Condition/>`,
			wantType:  xpdl.ConditionCondition, wantText: "", wantRule: false,
		},
		{
			name: "XPDL 2 Expression with ScriptGrammar", ns: ns21,
			condition: `<Condition Type="CONDITION"><Expression ScriptGrammar="Text">c3</Expression></Condition>`,
			wantType:  xpdl.ConditionCondition, wantText: "c3", wantGram: "Text", wantRule: false, // free text is a label, not a rule
		},
		{
			name: "package Script is the default grammar", ns: ns10, script: `<Script Type="text/javascript"/>`,
			condition: `<Condition Type="CONDITION">whereToGo=="B"</Condition>`,
			wantType:  xpdl.ConditionCondition, wantText: `whereToGo=="B"`, wantGram: "text/javascript", wantRule: true,
		},
		{
			name: "text next to an empty Expression (shoobx)", ns: ns21,
			condition: `<Condition Type="CONDITION">ed_changes<Expression ScriptGrammar="python"/></Condition>`,
			wantType:  xpdl.ConditionCondition, wantText: "ed_changes", wantGram: "python", wantRule: true,
		},
		{
			name: "OTHERWISE", ns: ns10,
			condition: `<Condition Type="OTHERWISE"/>`,
			wantType:  xpdl.ConditionOtherwise, wantRule: false,
		},
		{
			name: "EXCEPTION names the exception", ns: ns10,
			condition: `<Condition Type="EXCEPTION">timeout</Condition>`,
			wantType:  xpdl.ConditionException, wantText: "timeout", wantRule: false,
		},
		{
			name: "DEFAULTEXCEPTION", ns: ns21,
			condition: `<Condition Type="DEFAULTEXCEPTION"/>`,
			wantType:  xpdl.ConditionDefaultException, wantRule: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := xpdlDoc(tt.ns, tt.script+`<WorkflowProcesses><WorkflowProcess Id="wp"><Activities>`+noActivity("a")+noActivity("b")+
				`</Activities><Transitions><Transition Id="t" From="a" To="b">`+tt.condition+`</Transition></Transitions></WorkflowProcess></WorkflowProcesses>`)
			pkg := mustRead(t, src)
			tr := pkg.Process("wp").Transition("t")
			require.NotNil(t, tr)
			require.NotNil(t, tr.Condition)
			require.Equal(t, tt.wantType, tr.Condition.Type)
			require.Equal(t, tt.wantText, tr.Condition.Expression.Text)
			require.Equal(t, tt.wantGram, tr.Condition.Expression.Grammar)
			require.Equal(t, tt.wantRule, tr.Condition.IsRule())
		})
	}
	t.Run("no Condition element", func(t *testing.T) {
		t.Parallel()
		pkg := mustRead(t, processDoc(ns10, noActivity("a")+noActivity("b"), transition("t", "a", "b")))
		c := pkg.Process("wp").Transition("t").Condition
		require.Nil(t, c)
		require.False(t, c.IsRule())
	})
}

func TestReadModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		ns         string
		activity   string
		start, fin xpdl.Mode
	}{
		{
			name: "XPDL 1 elements", ns: ns10,
			activity: `<Activity Id="x"><Implementation><No/></Implementation>` +
				`<StartMode><Manual/></StartMode><FinishMode><Automatic/></FinishMode></Activity>`,
			start: xpdl.ModeManual, fin: xpdl.ModeAutomatic,
		},
		{
			name: "XPDL 2 attributes", ns: ns21,
			activity: `<Activity Id="x" StartMode="Manual" FinishMode="Automatic"><Implementation><No/></Implementation></Activity>`,
			start:    xpdl.ModeManual, fin: xpdl.ModeAutomatic,
		},
		{
			name: "undeclared", ns: ns21,
			activity: noActivity("x"),
			start:    xpdl.ModeUnspecified, fin: xpdl.ModeUnspecified,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			x := onlyActivity(t, mustRead(t, processDoc(tt.ns, tt.activity, "")), "x")
			require.Equal(t, tt.start, x.StartMode)
			require.Equal(t, tt.fin, x.FinishMode)
		})
	}
}

func TestReadActivityKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		ns       string
		activity string
		check    func(t *testing.T, a *xpdl.Activity)
	}{
		{
			name: "XPDL 1 Tool with parameters", ns: ns10,
			activity: `<Activity Id="x"><Implementation><Tool Id="app" Type="PROCEDURE"><ActualParameters>` +
				`<ActualParameter>a</ActualParameter><ActualParameter>b</ActualParameter></ActualParameters></Tool>` +
				`<Tool Id="app2"/></Implementation><Performer>clerk</Performer></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Equal(t, xpdl.ActivityTool, a.Kind)
				require.Len(t, a.Tools, 2)
				require.Equal(t, "app", a.Tools[0].Application)
				require.Equal(t, xpdl.ToolProcedure, a.Tools[0].Type)
				require.Len(t, a.Tools[0].ActualParameters, 2)
				require.Equal(t, "b", a.Tools[0].ActualParameters[1].Text)
				require.Equal(t, xpdl.ToolApplication, a.Tools[1].Type, "Tool Type defaults to APPLICATION")
				require.Equal(t, []string{"clerk"}, a.Performers)
			},
		},
		{
			name: "XPDL 2 TaskApplication and Performers", ns: ns21,
			activity: `<Activity Id="x"><Implementation><Task><TaskApplication Id="app"><ActualParameters>` +
				`<ActualParameter>a</ActualParameter></ActualParameters></TaskApplication></Task></Implementation>` +
				`<Performers><Performer>clerk</Performer><Performer>boss</Performer></Performers></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Equal(t, xpdl.ActivityTool, a.Kind)
				require.Equal(t, xpdl.TaskApplication, a.Task)
				require.Len(t, a.Tools, 1)
				require.Equal(t, "app", a.Tools[0].Application)
				require.Equal(t, []string{"clerk", "boss"}, a.Performers)
			},
		},
		{
			name: "SubFlow defaults to SYNCHR", ns: ns10,
			activity: `<Activity Id="x"><Implementation><SubFlow Id="child"><ActualParameters>` +
				`<ActualParameter>v</ActualParameter></ActualParameters></SubFlow></Implementation></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Equal(t, xpdl.ActivitySubFlow, a.Kind)
				require.Equal(t, "child", a.SubFlow.Process)
				require.Equal(t, xpdl.ExecSynchr, a.SubFlow.Execution)
				require.Len(t, a.SubFlow.ActualParameters, 1)
			},
		},
		{
			name: "asynchronous SubFlow with PackageRef", ns: ns21,
			activity: `<Activity Id="x"><Implementation><SubFlow Id="child" Execution="ASYNCHR" PackageRef="other"/></Implementation></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Equal(t, xpdl.ExecAsynchr, a.SubFlow.Execution)
				require.Equal(t, "other", a.SubFlow.PackageRef)
			},
		},
		{
			name: "XPDL 1 BlockActivity BlockId", ns: ns10,
			activity: `<Activity Id="x"><BlockActivity BlockId="set1"/></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Equal(t, xpdl.ActivityBlock, a.Kind)
				require.Equal(t, "set1", a.Block.ActivitySet)
			},
		},
		{
			name: "XPDL 2 BlockActivity", ns: ns21,
			activity: `<Activity Id="x"><BlockActivity ActivitySetId="set1" StartActivityId="s"/></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Equal(t, "set1", a.Block.ActivitySet)
				require.Equal(t, "s", a.Block.StartActivity)
			},
		},
		{
			name: "no Implementation is a no-op", ns: ns21,
			activity: `<Activity Id="x"/>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Equal(t, xpdl.ActivityNo, a.Kind)
			},
		},
		{
			name: "end event Result", ns: ns21,
			activity: `<Activity Id="x"><Event><EndEvent Result="Error"><ResultError ErrorCode="E1"/></EndEvent></Event></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Equal(t, xpdl.ActivityEvent, a.Kind)
				require.Equal(t, xpdl.EventEnd, a.Event.Type)
				require.Equal(t, xpdl.TriggerError, a.Event.Trigger)
				require.Equal(t, "E1", a.Event.ErrorCode)
			},
		},
		{
			name: "boundary timer event", ns: ns21,
			activity: `<Activity Id="x"><Event><IntermediateEvent Trigger="Timer" Target="t1"><TriggerTimer TimeCycle="R/PT1H"/></IntermediateEvent></Event></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Equal(t, xpdl.EventIntermediate, a.Event.Type)
				require.Equal(t, xpdl.TriggerTimer, a.Event.Trigger)
				require.Equal(t, "t1", a.Event.Target)
				require.NotNil(t, a.Event.Timer)
				require.Equal(t, "R/PT1H", a.Event.Timer.TimeCycle.Text)
			},
		},
		{
			name: "catching message event names its message", ns: ns21,
			activity: `<Activity Id="x"><Event><IntermediateEvent Trigger="Message"><TriggerResultMessage CatchThrow="CATCH">` +
				`<Message Id="m1" Name="paid"/></TriggerResultMessage></IntermediateEvent></Event></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Equal(t, xpdl.TriggerMessage, a.Event.Trigger)
				require.Equal(t, "paid", a.Event.Ref)
				require.False(t, a.Event.Throw)
			},
		},
		{
			name: "throwing signal event", ns: ns21,
			activity: `<Activity Id="x"><Event><IntermediateEvent Trigger="Signal"><TriggerResultSignal CatchThrow="THROW" Name="go"/></IntermediateEvent></Event></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Equal(t, xpdl.TriggerSignal, a.Event.Trigger)
				require.Equal(t, "go", a.Event.Ref)
				require.True(t, a.Event.Throw)
			},
		},
		{
			name: "XPDL 1 Deadline", ns: ns10,
			activity: `<Activity Id="x"><Implementation><No/></Implementation><Deadline Execution="SYNCHR">` +
				`<DeadlineCondition>5000</DeadlineCondition><ExceptionName>late</ExceptionName></Deadline></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Len(t, a.Deadlines, 1)
				require.Equal(t, xpdl.ExecSynchr, a.Deadlines[0].Execution)
				require.Equal(t, "5000", a.Deadlines[0].Condition.Text)
				require.Equal(t, "late", a.Deadlines[0].ExceptionName)
			},
		},
		{
			name: "XPDL 2 Deadline without Execution", ns: ns21,
			activity: `<Activity Id="x"><Deadline><DeadlineDuration>3 days</DeadlineDuration><ExceptionName>late</ExceptionName></Deadline></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.Len(t, a.Deadlines, 1)
				require.Equal(t, xpdl.ExecUnspecified, a.Deadlines[0].Execution)
				require.Equal(t, "3 days", a.Deadlines[0].Condition.Text)
			},
		},
		{
			name: "XPDL 2.2 standard loop", ns: ns22,
			activity: `<Activity Id="x"><Loop LoopType="Standard"><LoopStandard TestTime="After" LoopMaximum="5">` +
				`<LoopCondition><Expression>n &lt; 3</Expression></LoopCondition></LoopStandard></Loop></Activity>`,
			check: func(t *testing.T, a *xpdl.Activity) {
				require.NotNil(t, a.Loop)
				require.Equal(t, xpdl.LoopStandard, a.Loop.Type)
				require.Equal(t, "n < 3", a.Loop.Condition.Text)
				require.Equal(t, "After", a.Loop.TestTime)
				require.Equal(t, "5", a.Loop.Maximum)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, onlyActivity(t, mustRead(t, processDoc(tt.ns, tt.activity, "")), "x"))
		})
	}
}

func TestReadExtendedAttributes(t *testing.T) {
	t.Parallel()
	src := processDoc(ns10, `<Activity Id="x"><Implementation><No/></Implementation><ExtendedAttributes>
<ExtendedAttribute Name="XOffset" Value="10"/>
<ExtendedAttribute Name="hook" Value="org.example.Hook">
  <HookEventName>automatic:onEnter</HookEventName>
  <Rollback>true</Rollback>
</ExtendedAttribute>
</ExtendedAttributes></Activity>`, "")
	x := onlyActivity(t, mustRead(t, src), "x")
	require.Len(t, x.ExtendedAttributes, 2)

	plain := x.ExtendedAttributes[0]
	require.Equal(t, "XOffset", plain.Name)
	require.Equal(t, "10", plain.Value)
	require.Empty(t, plain.Content)

	hook := x.ExtendedAttributes[1]
	require.Equal(t, "hook", hook.Name)
	require.Equal(t, "org.example.Hook", hook.Value)
	require.Equal(t, "<HookEventName>automatic:onEnter</HookEventName>\n  <Rollback>true</Rollback>", hook.Content)
	require.Equal(t, xpdl.Pos{Line: 8, Col: 1}, hook.Pos)

	v, ok := x.ExtendedAttributes.Get("hook")
	require.True(t, ok)
	require.Equal(t, "org.example.Hook", v)
	_, ok = x.ExtendedAttributes.Get("absent")
	require.False(t, ok)
}

func TestReadDataTypes(t *testing.T) {
	t.Parallel()
	src := xpdlDoc(ns10, `<DataFields>
<DataField Id="s" IsArray="TRUE"><DataType><BasicType Type="STRING"/></DataType><InitialValue></InitialValue><Length>10</Length></DataField>
<DataField Id="d"><DataType><DeclaredType Id="map"/></DataType></DataField>
<DataField Id="e"><DataType><EnumerationType><EnumerationValue Name="a"/><EnumerationValue Name="b"/></EnumerationType></DataType><InitialValue>a</InitialValue></DataField>
<DataField Id="l"><DataType><ListType><BasicType Type="INTEGER"/></ListType></DataType></DataField>
</DataFields>`)
	pkg := mustRead(t, src)
	require.Len(t, pkg.DataFields, 4)
	s, d, e, l := pkg.DataFields[0], pkg.DataFields[1], pkg.DataFields[2], pkg.DataFields[3]
	require.Equal(t, xpdl.DataType{Kind: xpdl.TypeBasic, Basic: xpdl.BasicString}, s.Type)
	require.True(t, s.IsArray)
	require.True(t, s.HasInitialValue, "an empty InitialValue is still declared")
	require.Empty(t, s.InitialValue)
	require.Equal(t, "10", s.Length)
	require.Equal(t, xpdl.DataType{Kind: xpdl.TypeDeclared, Declared: "map"}, d.Type)
	require.False(t, d.HasInitialValue)
	require.Equal(t, []string{"a", "b"}, e.Type.Enum)
	require.Equal(t, "a", e.InitialValue)
	require.Equal(t, xpdl.TypeList, l.Type.Kind)
	require.Equal(t, xpdl.BasicInteger, l.Type.Elem.Basic)
}

// loadDoc returns a package document referencing the given hrefs as
// ExternalPackages.
func loadDoc(id string, hrefs ...string) string {
	var ext strings.Builder
	for _, h := range hrefs {
		ext.WriteString(`<ExternalPackage href="` + h + `"/>`)
	}
	return `<Package xmlns="` + ns10 + `" Id="` + id + `"><ExternalPackages>` + ext.String() + `</ExternalPackages></Package>`
}

func TestLoadFS(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"a.xpdl":       {Data: []byte(loadDoc("A", "b.xpdl", "missing.xpdl", "../x.xpdl", "sub/c.xpdl", "http://example.com/d.xpdl", "bad.xpdl"))},
		"b.xpdl":       {Data: []byte(loadDoc("B", "a.xpdl"))},
		"sub/c.xpdl":   {Data: []byte(loadDoc("C", "../b.xpdl"))},
		"bad.xpdl":     {Data: []byte("<Package")},
		"unused.xpdl":  {Data: []byte(loadDoc("U"))},
		"../x.xpdl":    {Data: []byte(loadDoc("X"))}, // not a valid fs path: never opened
		"sub/readme.x": {Data: []byte("not xpdl")},
	}
	a, err := xpdl.LoadFS(fsys, "a.xpdl", nil)
	require.NoError(t, err)
	require.Equal(t, "A", a.ID)
	require.Len(t, a.ExternalPackages, 6)
	ext := a.ExternalPackages

	// b.xpdl loads, and its reference back to a.xpdl is the same package:
	// a recursive pair loads once.
	b := ext[0].Package
	require.NoError(t, ext[0].LoadErr)
	require.NotNil(t, b)
	require.Equal(t, "B", b.ID)
	require.Same(t, a, b.ExternalPackages[0].Package)

	// missing.xpdl is reported, not fatal.
	require.Nil(t, ext[1].Package)
	require.ErrorIs(t, ext[1].LoadErr, xpdl.ErrExternalPackage)
	require.ErrorIs(t, ext[1].LoadErr, fs.ErrNotExist)

	// ../x.xpdl leaves the file system and is not followed.
	require.Nil(t, ext[2].Package)
	require.ErrorIs(t, ext[2].LoadErr, xpdl.ErrExternalPackage)

	// sub/c.xpdl resolves ../b.xpdl relative to itself: the same b.
	c := ext[3].Package
	require.NoError(t, ext[3].LoadErr)
	require.NotNil(t, c)
	require.Same(t, b, c.ExternalPackages[0].Package)

	// Only relative file references are loaded.
	require.Nil(t, ext[4].Package)
	require.ErrorIs(t, ext[4].LoadErr, xpdl.ErrExternalPackage)

	// A malformed reference keeps its syntax error.
	require.Nil(t, ext[5].Package)
	require.ErrorIs(t, ext[5].LoadErr, xpdl.ErrExternalPackage)
	require.ErrorIs(t, ext[5].LoadErr, xpdl.ErrMalformed)

	// Validate reports the references that did not load. (Which codes it
	// uses is the validator's business; that it says so is not.)
	require.NotEmpty(t, xpdl.Validate(a, nil), "unloadable ExternalPackages must be reported")
}

func TestLoadFSMissingRoot(t *testing.T) {
	t.Parallel()
	_, err := xpdl.LoadFS(fstest.MapFS{}, "nope.xpdl", nil)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestLoadDoesNotLeaveDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	// x.xpdl exists, but outside the directory of the loaded file.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.xpdl"), []byte(loadDoc("X")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "a.xpdl"), []byte(loadDoc("A", "../x.xpdl", "b.xpdl")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "b.xpdl"), []byte(loadDoc("B")), 0o644))

	a, err := xpdl.Load(filepath.Join(dir, "sub", "a.xpdl"), nil)
	require.NoError(t, err)
	require.Len(t, a.ExternalPackages, 2)
	require.Nil(t, a.ExternalPackages[0].Package)
	require.ErrorIs(t, a.ExternalPackages[0].LoadErr, xpdl.ErrExternalPackage)
	require.NotNil(t, a.ExternalPackages[1].Package)
	require.Equal(t, "B", a.ExternalPackages[1].Package.ID)
}

func TestReadExternalPackageID(t *testing.T) {
	t.Parallel()
	pkg := mustRead(t, xpdlDoc(ns10, `<ExternalPackages>
<ExternalPackage href="M2.xpdl"><ExtendedAttributes><ExtendedAttribute Name="EXTERNAL_PACKAGE_ID" Value="M2"/></ExtendedAttributes></ExternalPackage>
</ExternalPackages>`))
	require.Len(t, pkg.ExternalPackages, 1)
	require.Equal(t, "M2.xpdl", pkg.ExternalPackages[0].Href)
	require.Equal(t, "M2", pkg.ExternalPackages[0].ID)
	require.Nil(t, pkg.ExternalPackages[0].Package, "Read does not load references")
}

func TestReadActivityFormalParameters(t *testing.T) {
	t.Parallel()
	activity := `<Activity Id="approve">
<FormalParameters>
<FormalParameter Id="approved" Mode="OUT"><DataType><BasicType Type="BOOLEAN"/></DataType></FormalParameter>
<FormalParameter Id="amount" Mode="IN"><DataType><BasicType Type="FLOAT"/></DataType></FormalParameter>
</FormalParameters>
<Implementation><Task><TaskUser/></Task></Implementation>
</Activity>`
	x := onlyActivity(t, mustRead(t, processDoc(ns22, activity, "")), "approve")
	require.Len(t, x.FormalParameters, 2)
	require.Equal(t, "approved", x.FormalParameters[0].ID)
	require.Equal(t, xpdl.ModeOut, x.FormalParameters[0].Mode)
	require.Equal(t, xpdl.BasicBoolean, x.FormalParameters[0].Type.Basic)
	require.Equal(t, xpdl.ModeIn, x.FormalParameters[1].Mode)

	dup := strings.Replace(activity, `Id="amount"`, `Id="approved"`, 1)
	problems := xpdl.Validate(mustRead(t, processDoc(ns22, dup, "")), nil)
	require.ErrorContains(t, problems.Err(), `duplicate formal parameter id "approved" in activity "approve"`)
}
