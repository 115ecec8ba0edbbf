package xpdl_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// pkg10 wraps sections in an XPDL 1.0 package with one participant
// "clerk", one application "calc" (IN a INTEGER, OUT b INTEGER) and
// package data fields n (INTEGER) and s (STRING).
func pkg10(head, processes string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="pkg" Name="test">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-21</Created></PackageHeader>
  ` + head + `
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <Applications><Application Id="calc"><FormalParameters>
    <FormalParameter Id="a" Mode="IN"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
    <FormalParameter Id="b" Mode="OUT"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
  </FormalParameters></Application></Applications>
  <DataFields>
    <DataField Id="n"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>1</InitialValue></DataField>
    <DataField Id="s"><DataType><BasicType Type="STRING"/></DataType></DataField>
  </DataFields>
  <WorkflowProcesses>` + processes + `</WorkflowProcesses>
</Package>`
}

// proc10 is a process with the given activities and transitions.
func proc10(id, activities, transitions string) string {
	return `<WorkflowProcess Id="` + id + `"><Activities>` + activities + `</Activities><Transitions>` + transitions + `</Transitions></WorkflowProcess>`
}

func act(id, inner string) string { return `<Activity Id="` + id + `">` + inner + `</Activity>` }

func noImpl(id string) string { return act(id, `<Implementation><No/></Implementation>`) }

func tr(id, from, to string) string {
	return `<Transition Id="` + id + `" From="` + from + `" To="` + to + `"/>`
}

func trCond(id, from, to, cond string) string {
	return `<Transition Id="` + id + `" From="` + from + `" To="` + to + `">` + cond + `</Transition>`
}

// seq is a valid sequence a1 -> a2 -> a3 process.
var seq = proc10("p", noImpl("a1")+noImpl("a2")+noImpl("a3"), tr("t1", "a1", "a2")+tr("t2", "a2", "a3"))

func validate(t *testing.T, src string, opts *xpdl.ValidateOpts) xpdl.Problems {
	t.Helper()
	pkg, err := xpdl.Read(strings.NewReader(src), &xpdl.ReadOpts{Name: "test.xpdl"})
	require.NoError(t, err)
	return xpdl.Validate(pkg, opts)
}

// find returns the problems with the given code.
func find(ps xpdl.Problems, code string) xpdl.Problems {
	var out xpdl.Problems
	for _, p := range ps {
		if p.Code == code {
			out = append(out, p)
		}
	}
	return out
}

type ruleCase struct {
	name string
	src  string
	// code and severity of the problem the case must produce; empty code
	// means the case must produce no problem at all.
	code     string
	severity xpdl.Severity
	ids      []string // must all be among the problem's IDs
}

// runRules runs rule cases: each bad case reports its code with its
// severity, ids and a position; each good case reports nothing.
func runRules(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ps := validate(t, tc.src, nil)
			if tc.code == "" {
				require.Empty(t, ps, "want no problems")
				return
			}
			got := find(ps, tc.code)
			require.NotEmpty(t, got, "want a %q problem, got %v", tc.code, ps)
			p := got[0]
			require.Equal(t, tc.severity, p.Severity, p.String())
			require.Positive(t, p.Line, p.String())
			require.Equal(t, "test.xpdl", p.File)
			for _, id := range tc.ids {
				require.Contains(t, p.IDs, id, p.String())
			}
			require.Equal(t, tc.severity == xpdl.SeverityError, ps.HasErrors())
		})
	}
}

func TestValidSequenceHasNoProblems(t *testing.T) {
	t.Parallel()
	require.Empty(t, validate(t, pkg10("", seq), nil))
}

func TestRuleDuplicateAndMissingIDs(t *testing.T) {
	t.Parallel()
	runRules(t, []ruleCase{
		{"duplicate activity", pkg10("", proc10("p", noImpl("a1")+noImpl("a1"), "")), "duplicate-id", xpdl.SeverityError, []string{"a1"}},
		{"duplicate activity across activity set", pkg10("", `<WorkflowProcess Id="p">
			<ActivitySets><ActivitySet Id="s"><Activities>`+noImpl("a1")+`</Activities></ActivitySet></ActivitySets>
			<Activities>`+act("a1", `<BlockActivity BlockId="s"/>`)+`</Activities></WorkflowProcess>`), "duplicate-id", xpdl.SeverityError, []string{"a1"}},
		{"duplicate transition", pkg10("", proc10("p", noImpl("a1")+noImpl("a2"), tr("t", "a1", "a2")+tr("t", "a1", "a2"))), "duplicate-id", xpdl.SeverityError, []string{"t"}},
		{"duplicate process", pkg10("", seq+seq), "duplicate-id", xpdl.SeverityError, []string{"p"}},
		{"duplicate data field", pkg10("", `<WorkflowProcess Id="p"><DataFields>
			<DataField Id="x"><DataType><BasicType Type="STRING"/></DataType></DataField>
			<DataField Id="x"><DataType><BasicType Type="STRING"/></DataType></DataField>
			</DataFields><Activities>`+noImpl("a")+`</Activities></WorkflowProcess>`), "duplicate-id", xpdl.SeverityError, []string{"x"}},
		{"data field repeating formal parameter with another type", pkg10("", `<WorkflowProcess Id="p">
			<FormalParameters><FormalParameter Id="x" Mode="OUT"><DataType><BasicType Type="BOOLEAN"/></DataType></FormalParameter></FormalParameters>
			<DataFields><DataField Id="x"><DataType><BasicType Type="STRING"/></DataType></DataField></DataFields>
			<Activities>`+noImpl("a")+`</Activities></WorkflowProcess>`), "duplicate-id", xpdl.SeverityError, []string{"x"}},
		{"data field repeating formal parameter", pkg10("", `<WorkflowProcess Id="p">
			<FormalParameters><FormalParameter Id="x" Mode="OUT"><DataType><BasicType Type="BOOLEAN"/></DataType></FormalParameter></FormalParameters>
			<DataFields><DataField Id="x"><DataType><BasicType Type="BOOLEAN"/></DataType></DataField></DataFields>
			<Activities>`+noImpl("a")+`</Activities></WorkflowProcess>`), "shadowed-variable", xpdl.SeverityWarning, []string{"x"}},
		{"activity without id", pkg10("", proc10("p", `<Activity><Implementation><No/></Implementation></Activity>`, "")), "missing-id", xpdl.SeverityError, nil},
	})
}

func TestRuleTransitionEnds(t *testing.T) {
	t.Parallel()
	runRules(t, []ruleCase{
		{"to unknown activity", pkg10("", proc10("p", noImpl("a1")+noImpl("a2"), tr("t1", "a1", "a2")+tr("t2", "a2", "nowhere"))), "unknown-activity", xpdl.SeverityError, []string{"t2", "nowhere"}},
		{"from unknown activity", pkg10("", proc10("p", noImpl("a1"), tr("t1", "ghost", "a1"))), "unknown-activity", xpdl.SeverityError, []string{"t1", "ghost"}},
		{"across scopes", pkg10("", `<WorkflowProcess Id="p">
			<ActivitySets><ActivitySet Id="s"><Activities>`+noImpl("inner")+`</Activities></ActivitySet></ActivitySets>
			<Activities>`+act("b", `<BlockActivity BlockId="s"/>`)+noImpl("a")+`</Activities>
			<Transitions>`+tr("t1", "b", "a")+tr("t2", "a", "inner")+`</Transitions></WorkflowProcess>`), "cross-scope", xpdl.SeverityError, []string{"t2", "inner"}},
	})
}

func TestRuleSplitTransitionRefs(t *testing.T) {
	t.Parallel()
	split := func(refs ...string) string {
		var b strings.Builder
		for _, r := range refs {
			b.WriteString(`<TransitionRef Id="` + r + `"/>`)
		}
		return act("a1", `<Implementation><No/></Implementation><TransitionRestrictions><TransitionRestriction><Split Type="XOR"><TransitionRefs>`+b.String()+`</TransitionRefs></Split></TransitionRestriction></TransitionRestrictions>`)
	}
	body := func(refs ...string) string {
		return pkg10("", proc10("p", split(refs...)+noImpl("a2")+noImpl("a3"),
			trCond("t1", "a1", "a2", `<Condition Type="CONDITION">n == 1</Condition>`)+
				trCond("t2", "a1", "a3", `<Condition Type="OTHERWISE"/>`)+tr("t3", "a2", "a3")))
	}
	runRules(t, []ruleCase{
		{"valid refs", body("t1", "t2"), "", "", nil},
		{"unknown ref", body("t1", "t9"), "split-ref", xpdl.SeverityError, []string{"a1", "t9"}},
		{"ref not leaving the activity", body("t1", "t3"), "split-ref", xpdl.SeverityError, []string{"a1", "t3"}},
	})
}

func TestRuleGraphShape(t *testing.T) {
	t.Parallel()
	runRules(t, []ruleCase{
		{"no start activity", pkg10("", proc10("p", noImpl("a1")+noImpl("a2"), tr("t1", "a1", "a2")+tr("t2", "a2", "a1"))), "no-start", xpdl.SeverityError, []string{"p"}},
		{"unreachable activity", pkg10("", proc10("p", noImpl("a1")+noImpl("a2")+noImpl("loose")+noImpl("a3"),
			tr("t1", "a1", "a2")+tr("t2", "loose", "a3")+tr("t3", "a3", "loose")+tr("t4", "a3", "a2"))), "unreachable", xpdl.SeverityWarning, []string{"loose"}},
		{"no path to an end", pkg10("", proc10("p", noImpl("a1")+noImpl("a2")+noImpl("x")+noImpl("y"),
			tr("t1", "a1", "a2")+tr("t2", "a1", "x")+tr("t3", "x", "y")+tr("t4", "y", "x"))), "no-path-to-end", xpdl.SeverityWarning, []string{"x"}},
		{"empty process", pkg10("", `<WorkflowProcess Id="p"/>`), "empty-process", xpdl.SeverityWarning, []string{"p"}},
		{"unused activity set", pkg10("", `<WorkflowProcess Id="p">
			<ActivitySets><ActivitySet Id="s"><Activities>`+noImpl("inner")+`</Activities></ActivitySet></ActivitySets>
			<Activities>`+noImpl("a")+`</Activities></WorkflowProcess>`), "unused-activity-set", xpdl.SeverityWarning, []string{"s"}},
	})
}

func TestRuleNoEndActivity(t *testing.T) {
	t.Parallel()
	// A start activity feeding a loop that never exits.
	src := pkg10("", proc10("p", noImpl("start")+noImpl("a")+noImpl("b"),
		tr("t1", "start", "a")+tr("t2", "a", "b")+tr("t3", "b", "a")))
	ps := validate(t, src, nil)
	require.Len(t, find(ps, "no-end"), 1, ps)
	require.True(t, ps.HasErrors())
}

func TestRuleReferences(t *testing.T) {
	t.Parallel()
	withPerformer := func(p string) string {
		return pkg10("", proc10("p", act("a", `<Implementation><No/></Implementation><Performer>`+p+`</Performer>`), ""))
	}
	tool := func(app, params string) string {
		return pkg10("", proc10("p", act("a", `<Implementation><Tool Id="`+app+`" Type="APPLICATION"><ActualParameters>`+params+`</ActualParameters></Tool></Implementation>`), ""))
	}
	runRules(t, []ruleCase{
		{"known performer", withPerformer("clerk"), "", "", nil},
		{"performer from a data field", withPerformer("s"), "", "", nil},
		{"performer expression is not checked", withPerformer(`s + "_manager"`), "", "", nil},
		{"unknown performer", withPerformer("nobody"), "unknown-performer", xpdl.SeverityError, []string{"a", "nobody"}},
		{"known application", tool("calc", `<ActualParameter>n</ActualParameter><ActualParameter>n</ActualParameter>`), "", "", nil},
		{"unknown application", tool("nope", ""), "unknown-application", xpdl.SeverityError, []string{"a", "nope"}},
		{"unknown activity set", pkg10("", proc10("p", act("b", `<BlockActivity BlockId="missing"/>`), "")), "unknown-activity-set", xpdl.SeverityError, []string{"b", "missing"}},
		{"unknown declared type", pkg10(`<TypeDeclarations><TypeDeclaration Id="T"><DeclaredType Id="Missing"/></TypeDeclaration></TypeDeclarations>`, seq), "unknown-type", xpdl.SeverityError, []string{"Missing"}},
		{"unknown subflow", pkg10("", proc10("p", act("a", `<Implementation><SubFlow Id="child"/></Implementation>`), "")), "unknown-subflow", xpdl.SeverityError, []string{"a", "child"}},
		{"unknown subflow package", pkg10("", proc10("p", act("a", `<Implementation><SubFlow Id="p" PackageRef="other"/></Implementation>`), "")), "unknown-subflow", xpdl.SeverityError, []string{"a"}},
	})
}

func TestRuleSubflowFromDeployedPackage(t *testing.T) {
	t.Parallel()
	child := `<?xml version="1.0"?><Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="other">` +
		`<WorkflowProcesses>` + proc10("child", noImpl("c"), "") + `</WorkflowProcesses></Package>`
	other, err := xpdl.Read(strings.NewReader(child), nil)
	require.NoError(t, err)
	parent := pkg10("", proc10("p", act("a", `<Implementation><SubFlow Id="child"/></Implementation>`), ""))

	require.NotEmpty(t, find(validate(t, parent, nil), "unknown-subflow"))
	require.Empty(t, validate(t, parent, &xpdl.ValidateOpts{Deployed: []*xpdl.Package{other}}))
}

// Files of one package deployed together share its id: a PackageRef
// naming it finds the process in whichever of them defines it, not only
// in the first.
func TestRuleSubflowPackageRefAcrossPackagesSharingAnID(t *testing.T) {
	t.Parallel()
	doc := func(procs string) *xpdl.Package {
		p, err := xpdl.Read(strings.NewReader(`<?xml version="1.0"?><Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="shared">`+
			`<WorkflowProcesses>`+procs+`</WorkflowProcesses></Package>`), nil)
		require.NoError(t, err)
		return p
	}
	first, second := doc(proc10("other", noImpl("o"), "")), doc(proc10("child", noImpl("c"), ""))
	parent := pkg10("", proc10("p", act("a", `<Implementation><SubFlow Id="child" PackageRef="shared"/></Implementation>`), ""))
	require.Empty(t, validate(t, parent, &xpdl.ValidateOpts{Deployed: []*xpdl.Package{first, second}}))
	require.NotEmpty(t, find(validate(t, parent, &xpdl.ValidateOpts{Deployed: []*xpdl.Package{first}}), "unknown-subflow"))
}

func TestRuleExternalPackages(t *testing.T) {
	t.Parallel()
	lib := `<?xml version="1.0"?><Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="lib">
	  <Participants><Participant Id="boss"><ParticipantType Type="HUMAN"/></Participant></Participants></Package>`
	main := func(href string) string {
		return pkg10(`<ExternalPackages><ExternalPackage href="`+href+`"/></ExternalPackages>`,
			proc10("p", act("a", `<Implementation><No/></Implementation><Performer>boss</Performer>`), ""))
	}
	fsys := fstest.MapFS{
		"main.xpdl":    {Data: []byte(main("lib.xpdl"))},
		"broken.xpdl":  {Data: []byte(main("missing.xpdl"))},
		"lib.xpdl":     {Data: []byte(lib)},
		"escape.xpdl":  {Data: []byte(main("../lib.xpdl"))},
		"sub/lib.xpdl": {Data: []byte(lib)},
	}
	pkg, err := xpdl.LoadFS(fsys, "main.xpdl", nil)
	require.NoError(t, err)
	require.Empty(t, xpdl.Validate(pkg, nil), "a performer from the external package resolves")

	for _, name := range []string{"broken.xpdl", "escape.xpdl"} {
		pkg, err := xpdl.LoadFS(fsys, name, nil)
		require.NoError(t, err)
		ps := xpdl.Validate(pkg, nil)
		require.Len(t, find(ps, "external-package"), 1, ps)
		require.Len(t, find(ps, "unknown-performer"), 1, ps)
		require.ErrorIs(t, pkg.ExternalPackages[0].LoadErr, xpdl.ErrExternalPackage)
	}

	// Read does not load references: a warning, not an error.
	ps := validate(t, main("lib.xpdl"), nil)
	ext := find(ps, "external-package")
	require.Len(t, ext, 1)
	require.Equal(t, xpdl.SeverityWarning, ext[0].Severity)
}

func TestRuleParameters(t *testing.T) {
	t.Parallel()
	tool := func(params ...string) string {
		var b strings.Builder
		for _, p := range params {
			b.WriteString("<ActualParameter>" + p + "</ActualParameter>")
		}
		return pkg10("", proc10("p", act("a", `<Implementation><Tool Id="calc" Type="APPLICATION"><ActualParameters>`+b.String()+`</ActualParameters></Tool></Implementation>`), ""))
	}
	subflow := func(params string) string {
		return pkg10("", `<WorkflowProcess Id="child"><FormalParameters>
			<FormalParameter Id="in" Mode="IN"><DataType><BasicType Type="STRING"/></DataType></FormalParameter>
			<FormalParameter Id="out" Mode="OUT"><DataType><BasicType Type="INTEGER"/></DataType></FormalParameter>
			</FormalParameters><Activities>`+noImpl("c")+`</Activities></WorkflowProcess>`+
			proc10("p", act("a", `<Implementation><SubFlow Id="child" Execution="SYNCHR"><ActualParameters>`+params+`</ActualParameters></SubFlow></Implementation>`), ""))
	}
	runRules(t, []ruleCase{
		{"matching tool call", tool("n + 1", "n"), "", "", nil},
		{"too few", tool("n"), "parameter-count", xpdl.SeverityError, []string{"a"}},
		{"too many", tool("n", "n", "n"), "parameter-count", xpdl.SeverityError, []string{"a"}},
		{"OUT into an expression", tool("n", "n + 1"), "parameter-mode", xpdl.SeverityError, []string{"a", "b"}},
		{"OUT into an undeclared variable", tool("n", "undeclared"), "parameter-mode", xpdl.SeverityError, []string{"a", "b"}},
		{"basic type mismatch", tool("s", "n"), "parameter-type", xpdl.SeverityWarning, []string{"a", "a"}},
		{"matching subflow call", subflow(`<ActualParameter>s</ActualParameter><ActualParameter>n</ActualParameter>`), "", "", nil},
		{"subflow count mismatch", subflow(`<ActualParameter>s</ActualParameter>`), "parameter-count", xpdl.SeverityError, []string{"a"}},
		{"subflow OUT into expression", subflow(`<ActualParameter>s</ActualParameter><ActualParameter>"x"</ActualParameter>`), "parameter-mode", xpdl.SeverityError, []string{"a", "out"}},
	})
}

func TestRuleConditions(t *testing.T) {
	t.Parallel()
	xorSplit := act("a1", `<Implementation><No/></Implementation><TransitionRestrictions><TransitionRestriction><Split Type="XOR"/></TransitionRestriction></TransitionRestrictions>`)
	two := func(c1, c2 string) string {
		return pkg10(`<Script Type="text/javascript"/>`, proc10("p", xorSplit+noImpl("a2")+noImpl("a3"),
			trCond("t1", "a1", "a2", c1)+trCond("t2", "a1", "a3", c2)))
	}
	xpdl21 := func(grammar, expr string) string {
		return `<?xml version="1.0"?><Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="pkg"><WorkflowProcesses>
		<WorkflowProcess Id="p"><Activities>` + act("a1", `<Route GatewayType="Exclusive"/>`) + noImpl("a2") + noImpl("a3") + `</Activities>
		<Transitions>` + trCond("t1", "a1", "a2", `<Condition Type="CONDITION"><Expression ScriptGrammar="`+grammar+`">`+expr+`</Expression></Condition>`) +
			trCond("t2", "a1", "a3", `<Condition Type="OTHERWISE"/>`) + `</Transitions></WorkflowProcess></WorkflowProcesses></Package>`
	}
	runRules(t, []ruleCase{
		{"javascript and otherwise", two(`<Condition Type="CONDITION">n &gt; 1</Condition>`, `<Condition Type="OTHERWISE"/>`), "", "", nil},
		{"condition without Type", two(`<Condition>s == "x"</Condition>`, `<Condition Type="OTHERWISE"/>`), "", "", nil},
		{"two OTHERWISE", two(`<Condition Type="OTHERWISE"/>`, `<Condition Type="OTHERWISE"/>`), "otherwise", xpdl.SeverityError, []string{"a1", "t2"}},
		{"two DEFAULTEXCEPTION", two(`<Condition Type="DEFAULTEXCEPTION"/>`, `<Condition Type="DEFAULTEXCEPTION"/>`), "otherwise", xpdl.SeverityError, []string{"a1"}},
		{"empty expression is a label", xpdl21("JavaScript", ""), "", "", nil},
		{"javascript grammar", xpdl21("JavaScript", "n == 1"), "", "", nil},
		{"python grammar", xpdl21("python", "not publish"), "script-language", xpdl.SeverityError, []string{"t1"}},
		{"free text grammar", xpdl21("Text", "approved"), "free-text-condition", xpdl.SeverityWarning, []string{"t1"}},
		{"unknown condition type", two(`<Condition Type="MAYBE">x</Condition>`, `<Condition Type="OTHERWISE"/>`), "unknown-value", xpdl.SeverityError, []string{"t1"}},
	})
}

func TestRuleDeadlines(t *testing.T) {
	t.Parallel()
	withDeadline := func(deadline, transitions string) string {
		return pkg10("", proc10("p", act("a1", `<Implementation><No/></Implementation><Performer>clerk</Performer>`+deadline)+noImpl("a2")+noImpl("late"),
			tr("t1", "a1", "a2")+transitions))
	}
	handler := trCond("t2", "a1", "late", `<Condition Type="EXCEPTION">tooLate</Condition>`)
	runRules(t, []ruleCase{
		{"handled millisecond deadline", withDeadline(`<Deadline Execution="SYNCHR"><DeadlineCondition>5000</DeadlineCondition><ExceptionName>tooLate</ExceptionName></Deadline>`, handler), "", "", nil},
		{"handled javascript deadline", withDeadline(`<Deadline Execution="ASYNCHR"><DeadlineCondition>var d=new Date(); d</DeadlineCondition><ExceptionName>tooLate</ExceptionName></Deadline>`, handler), "", "", nil},
		{"empty deadline", withDeadline(`<Deadline Execution="SYNCHR"><DeadlineCondition/><ExceptionName>tooLate</ExceptionName></Deadline>`, handler), "empty-deadline", xpdl.SeverityWarning, []string{"a1"}},
		{"no condition at all", withDeadline(`<Deadline Execution="SYNCHR"><ExceptionName>tooLate</ExceptionName></Deadline>`, handler), "empty-deadline", xpdl.SeverityWarning, []string{"a1"}},
		{"None", withDeadline(`<Deadline Execution="SYNCHR"><DeadlineCondition>None</DeadlineCondition><ExceptionName>tooLate</ExceptionName></Deadline>`, handler), "empty-deadline", xpdl.SeverityWarning, []string{"a1"}},
		{"unsupported language", withDeadline(`<Deadline><DeadlineCondition ScriptType="text/python">timedelta(days=5)</DeadlineCondition><ExceptionName>tooLate</ExceptionName></Deadline>`, handler), "deadline", xpdl.SeverityError, []string{"a1"}},
		{"free text that is no duration", withDeadline(`<Deadline><DeadlineCondition ScriptType="text">soon</DeadlineCondition><ExceptionName>tooLate</ExceptionName></Deadline>`, handler), "deadline", xpdl.SeverityError, []string{"a1"}},
		{"unknown execution", withDeadline(`<Deadline Execution="NOW"><DeadlineCondition>5000</DeadlineCondition><ExceptionName>tooLate</ExceptionName></Deadline>`, handler), "unknown-value", xpdl.SeverityError, []string{"a1"}},
		{"nothing handles it", withDeadline(`<Deadline><DeadlineCondition>5000</DeadlineCondition><ExceptionName>other</ExceptionName></Deadline>`, handler), "unhandled-deadline", xpdl.SeverityWarning, []string{"a1"}},
	})
}

func TestRuleGraphConformance(t *testing.T) {
	t.Parallel()
	gw := func(id, join, split string) string {
		inner := `<Route/><TransitionRestrictions><TransitionRestriction>`
		if join != "" {
			inner += `<Join Type="` + join + `"/>`
		}
		if split != "" {
			inner += `<Split Type="` + split + `"/>`
		}
		return act(id, inner+`</TransitionRestriction></TransitionRestrictions>`)
	}
	// start -> split -> (b1 | b2) -> join -> end
	diamond := func(class, split, join string) string {
		return pkg10(`<ConformanceClass GraphConformance="`+class+`"/>`, proc10("p",
			noImpl("start")+gw("split", "", split)+noImpl("b1")+noImpl("b2")+gw("join", join, "")+noImpl("end"),
			tr("t1", "start", "split")+tr("t2", "split", "b1")+tr("t3", "split", "b2")+tr("t4", "b1", "join")+tr("t5", "b2", "join")+tr("t6", "join", "end")))
	}
	loop := func(class string) string {
		return pkg10(`<ConformanceClass GraphConformance="`+class+`"/>`, proc10("p",
			noImpl("start")+gw("a", "XOR", "")+gw("b", "", "XOR")+noImpl("end"),
			tr("t1", "start", "a")+tr("t2", "a", "b")+trCond("t3", "b", "a", `<Condition Type="CONDITION">n &lt; 3</Condition>`)+trCond("t4", "b", "end", `<Condition Type="OTHERWISE"/>`)))
	}
	runRules(t, []ruleCase{
		{"loop in NON_BLOCKED", loop("NON_BLOCKED"), "", "", nil},
		{"loop in LOOP_BLOCKED", loop("LOOP_BLOCKED"), "conformance", xpdl.SeverityError, []string{"a", "b"}},
		{"loop in FULL_BLOCKED", loop("FULL_BLOCKED"), "conformance", xpdl.SeverityError, []string{"a", "b"}},
		{"matched block in FULL_BLOCKED", diamond("FULL_BLOCKED", "AND", "AND"), "", "", nil},
		{"NON-BLOCKED spelling", diamond("NON-BLOCKED", "AND", "XOR"), "", "", nil},
		{"type mismatch in FULL_BLOCKED", diamond("FULL_BLOCKED", "AND", "XOR"), "conformance", xpdl.SeverityError, []string{"split"}},
		{"two ends in FULL_BLOCKED", pkg10(`<ConformanceClass GraphConformance="FULL_BLOCKED"/>`, proc10("p",
			noImpl("start")+gw("split", "", "AND")+noImpl("e1")+noImpl("e2"),
			tr("t1", "start", "split")+tr("t2", "split", "e1")+tr("t3", "split", "e2"))), "conformance", xpdl.SeverityError, []string{"p"}},
	})
}

// xpdl21Process wraps activities and transitions in an XPDL 2.1 package.
func xpdl21Process(activities, transitions string) string {
	return `<?xml version="1.0"?><Package xmlns="http://www.wfmc.org/2008/XPDL2.1" Id="pkg"><WorkflowProcesses>
	<WorkflowProcess Id="p"><Activities>` + activities + `</Activities><Transitions>` + transitions + `</Transitions></WorkflowProcess>
	</WorkflowProcesses></Package>`
}

func TestRuleEventsAndLoops(t *testing.T) {
	t.Parallel()
	start := act("s", `<Event><StartEvent Trigger="None"/></Event>`)
	end := act("e", `<Event><EndEvent Result="None"/></Event>`)
	task := act("t", `<Implementation><Task><TaskUser/></Task></Implementation>`)
	runRules(t, []ruleCase{
		{"start task end", xpdl21Process(start+task+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "", "", nil},
		{"start event with incoming", xpdl21Process(start+task+end, tr("t1", "s", "t")+tr("t2", "t", "e")+tr("t3", "t", "s")), "event-flow", xpdl.SeverityError, []string{"s"}},
		{"end event with outgoing", xpdl21Process(start+task+end+noImpl("x"), tr("t1", "s", "t")+tr("t2", "t", "e")+tr("t3", "e", "x")), "event-flow", xpdl.SeverityError, []string{"e"}},
		{"boundary event on unknown activity", xpdl21Process(start+task+end+act("b", `<Event><IntermediateEvent Trigger="Timer" Target="ghost"><TriggerTimer><TimeDate>PT1H</TimeDate></TriggerTimer></IntermediateEvent></Event>`),
			tr("t1", "s", "t")+tr("t2", "t", "e")+tr("t3", "b", "e")), "unknown-activity", xpdl.SeverityError, []string{"b", "ghost"}},
		{"boundary timer is reachable through its target", xpdl21Process(start+task+end+act("b", `<Event><IntermediateEvent Trigger="Timer" Target="t"><TriggerTimer><TimeDate>PT1H</TimeDate></TriggerTimer></IntermediateEvent></Event>`),
			tr("t1", "s", "t")+tr("t2", "t", "e")+tr("t3", "b", "e")), "", "", nil},
		{"timer without time", xpdl21Process(start+act("w", `<Event><IntermediateEvent Trigger="Timer"><TriggerTimer/></IntermediateEvent></Event>`)+end, tr("t1", "s", "w")+tr("t2", "w", "e")), "timer", xpdl.SeverityWarning, []string{"w"}},
		{"signal without name", xpdl21Process(start+act("w", `<Event><IntermediateEvent Trigger="Signal"><TriggerResultSignal CatchThrow="CATCH"/></IntermediateEvent></Event>`)+end, tr("t1", "s", "w")+tr("t2", "w", "e")), "signal", xpdl.SeverityWarning, []string{"w"}},
		{"standard loop without condition or maximum", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="Standard"><LoopStandard LoopMaximum="0"/></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "loop", xpdl.SeverityWarning, []string{"t"}},
		{"multi-instance loop without condition", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="MultiInstance"><LoopMultiInstance MI_Ordering="Parallel"/></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "loop", xpdl.SeverityError, []string{"t"}},
		{"standard loop with maximum only", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="Standard"><LoopStandard LoopMaximum="3"/></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "", "", nil},
		{"standard while loop", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="Standard"><LoopStandard TestTime="Before" LoopMaximum="10"><LoopCondition>i &lt; n</LoopCondition></LoopStandard></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "", "", nil},
		{"standard loop TestTime in lower case", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="Standard"><LoopStandard TestTime="before" LoopCondition="i &lt; n"/></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "", "", nil},
		{"standard loop with unknown TestTime", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="Standard"><LoopStandard TestTime="Never" LoopCondition="i &lt; n"/></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "loop", xpdl.SeverityError, []string{"t"}},
		{"standard loop with LoopMaximum no number", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="Standard"><LoopStandard LoopMaximum="many" LoopCondition="i &lt; n"/></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "loop", xpdl.SeverityError, []string{"t"}},
		{"standard loop condition in python", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="Standard"><LoopStandard><LoopCondition ScriptGrammar="python">i &lt; n</LoopCondition></LoopStandard></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "script-language", xpdl.SeverityError, []string{"t"}},
		{"multi-instance loop", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="MultiInstance"><LoopMultiInstance MI_Ordering="Sequential" MI_FlowCondition="One"><MI_Condition>3</MI_Condition></LoopMultiInstance></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "", "", nil},
		{"multi-instance loop with defaults", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="MultiInstance"><LoopMultiInstance MI_Condition="n"/></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "", "", nil},
		{"multi-instance loop with unknown ordering", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="MultiInstance"><LoopMultiInstance MI_Ordering="Random" MI_Condition="3"/></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "loop", xpdl.SeverityError, []string{"t"}},
		{"multi-instance loop with unknown flow condition", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="MultiInstance"><LoopMultiInstance MI_FlowCondition="Some" MI_Condition="3"/></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "loop", xpdl.SeverityError, []string{"t"}},
		{"complex multi-instance loop", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="MultiInstance"><LoopMultiInstance MI_FlowCondition="Complex" MI_Condition="3" ComplexMI_FlowCondition="numberOfCompletedInstances &gt;= 2"/></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "", "", nil},
		{"complex multi-instance loop without condition", xpdl21Process(start+act("t", `<Implementation><No/></Implementation><Loop LoopType="MultiInstance"><LoopMultiInstance MI_FlowCondition="Complex" MI_Condition="3"/></Loop>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "loop", xpdl.SeverityError, []string{"t"}},
		{"loop on a gateway", xpdl21Process(start+act("g", `<Route/><Loop LoopType="Standard"><LoopStandard LoopMaximum="3"/></Loop>`)+end, tr("t1", "s", "g")+tr("t2", "g", "e")), "loop", xpdl.SeverityWarning, []string{"g"}},
		{"complex split", xpdl21Process(start+act("g", `<Route GatewayType="Complex"/>`)+end+noImpl("x"), tr("t1", "s", "g")+tr("t2", "g", "e")+tr("t3", "g", "x")), "unsupported", xpdl.SeverityError, []string{"g"}},
		{"complex join without IncomingCondition", xpdl21Process(start+act("g", `<Route GatewayType="Complex"/>`)+end+noImpl("x"), tr("t1", "s", "x")+tr("t2", "s", "g")+tr("t3", "x", "g")+tr("t4", "g", "e")), "unsupported", xpdl.SeverityError, []string{"g"}},
		{"script task in python", xpdl21Process(start+act("t", `<Implementation><Task><TaskScript><Script ScriptGrammar="python">x = 1</Script></TaskScript></Task></Implementation>`)+end, tr("t1", "s", "t")+tr("t2", "t", "e")), "script-language", xpdl.SeverityError, []string{"t"}},
		{"unknown gateway type", xpdl21Process(start+act("g", `<Route GatewayType="Sometimes"/>`)+end, tr("t1", "s", "g")+tr("t2", "g", "e")), "unknown-value", xpdl.SeverityError, []string{"g"}},
	})
}

func TestRuleInitialValues(t *testing.T) {
	t.Parallel()
	field := func(typ, val string) string {
		return pkg10("", `<WorkflowProcess Id="p"><DataFields><DataField Id="f"><DataType><BasicType Type="`+typ+`"/></DataType><InitialValue>`+val+`</InitialValue></DataField></DataFields><Activities>`+noImpl("a")+`</Activities></WorkflowProcess>`)
	}
	runRules(t, []ruleCase{
		{"integer", field("INTEGER", "42"), "", "", nil},
		{"boolean", field("BOOLEAN", "TRUE"), "", "", nil},
		{"float", field("FLOAT", "2.5"), "", "", nil},
		{"bad integer", field("INTEGER", "forty-two"), "initial-value", xpdl.SeverityError, []string{"f"}},
		{"bad boolean", field("BOOLEAN", "2008/07/31"), "initial-value", xpdl.SeverityError, []string{"f"}},
		{"unknown basic type", field("DECIMAL", "1"), "unknown-value", xpdl.SeverityError, nil},
	})
}

func TestValidateReportsEveryProblemSortedByPosition(t *testing.T) {
	t.Parallel()
	src := pkg10("", proc10("p",
		act("a1", `<Implementation><No/></Implementation><Performer>nobody</Performer>`)+noImpl("a1")+
			act("a2", `<Implementation><Tool Id="nope"/></Implementation>`),
		tr("t1", "a1", "a2")+tr("t2", "a2", "ghost")))
	ps := validate(t, src, nil)
	codes := map[string]bool{}
	for i, p := range ps {
		codes[p.Code] = true
		if i > 0 {
			prev := ps[i-1]
			require.True(t, prev.Line < p.Line || prev.Line == p.Line && prev.Col <= p.Col, "problems out of order: %v then %v", prev, p)
		}
	}
	for _, code := range []string{"unknown-performer", "duplicate-id", "unknown-application", "unknown-activity"} {
		require.True(t, codes[code], "missing %s in %v", code, ps)
	}
	err := ps.Err()
	require.ErrorIs(t, err, xpdl.ErrInvalid)
	var ve *xpdl.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, ps, ve.Problems)
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"5000", 5 * time.Second, true},
		{"0", 0, true},
		{"PT0.2S", 200 * time.Millisecond, true},
		{"PT30S", 30 * time.Second, true},
		{"P3D", 3 * day, true},
		{"P1DT12H", 36 * time.Hour, true},
		{"P2W", 14 * day, true},
		{"PT1H30M", 90 * time.Minute, true},
		{"3 days", 3 * day, true},
		{"5 days", 5 * day, true},
		{"90 min", 90 * time.Minute, true},
		{"1.5 hours", 90 * time.Minute, true},
		{"2w", 14 * day, true},
		{"", 0, false},
		{"P", 0, false},
		{"PT", 0, false},
		{"-5", 0, false},
		{"3 fortnights", 0, false},
		{"var d = new Date(); d", 0, false},
		{"99999999999999999999", 0, false},
	} {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			t.Parallel()
			got, ok := xpdl.ParseDuration(tc.in)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}
