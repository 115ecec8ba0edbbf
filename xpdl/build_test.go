package xpdl_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// buildOrders builds a package that uses every construct the builders
// offer.
func buildOrders() *xpdl.PackageBuilder {
	str, boolean, integer := xpdl.Basic(xpdl.BasicString), xpdl.Basic(xpdl.BasicBoolean), xpdl.Basic(xpdl.BasicInteger)
	b := xpdl.NewPackage("orders").Name("Orders").Header("goxpdl tests", "2026-11-21").Description("Order handling")
	b.Participant("clerk", "Clerk", xpdl.ParticipantRole)
	b.Application("ship", xpdl.Param("shipOrder", xpdl.ModeIn, str), xpdl.Param("shipTracking", xpdl.ModeOut, str))
	b.Application("notify", xpdl.Param("notifyOrder", xpdl.ModeIn, str))
	b.DataField("region", str).Initial("EU").Name("Region")
	b.ExtendedAttribute("owner", "sales")

	p := xpdl.NewProcess("order").Name("Handle an order")
	p.Param("orderId", xpdl.ModeIn, str)
	p.DataField("approved", boolean).Initial("false")
	p.DataField("tracking", str)
	p.DataField("amount", integer).Initial("0").Description("passes so far")
	p.DataField("count", integer).Initial("2")
	p.DataField("kind", xpdl.Enumeration("retail", "wholesale")).Initial("retail")
	p.StartEvent("start")
	p.UserTask("approve").Name("Approve the order").Performer("clerk").
		Deadline(xpdl.ExecSynchr, "PT1H", "late").Param("approved", xpdl.ModeOut, boolean)
	p.ManualTask("chase").Performer("clerk").Modes(xpdl.ModeManual, xpdl.ModeManual)
	p.IntermediateEvent("timeout", xpdl.TriggerTimer).Timer("PT2H").AttachTo("chase", false)
	p.Route("decide", xpdl.GatewayXOR).Split(xpdl.GatewayXOR, "ok", "no")
	p.ApplicationTask("ship", "ship", "orderId", "tracking").Description("calls the carrier")
	p.Route("fork", xpdl.GatewayAND)
	p.ScriptTask("calc", "amount = amount + 1").LoopWhile("amount < 3")
	p.ApplicationTask("notify", "notify", "orderId").MultiInstance("count", "Parallel")
	p.Route("join", xpdl.GatewayAND).Reentrant(false)
	p.TimerEvent("wait", "PT5M")
	p.SubFlow("archive", "archive", "orderId").Async()
	p.Block("review", "reviewing")
	p.EndEvent("end")
	p.EndEvent("rejected").Result(xpdl.TriggerTerminate)

	p.Sequence("start", "approve", "decide")
	p.Transition("approve", "chase").OnException("late")
	p.Transition("chase", "decide")
	p.Transition("timeout", "decide")
	p.Transition("decide", "ship").ID("ok").When("approved")
	p.Transition("decide", "rejected").ID("no").Otherwise()
	p.Sequence("ship", "fork", "calc", "join", "wait", "archive", "review", "end")
	p.Sequence("fork", "notify", "join")

	set := p.ActivitySet("reviewing")
	set.ScriptTask("check", "approved = approved")
	set.Route("done", xpdl.GatewayNone)
	set.Sequence("check", "done")
	b.Process(p)

	archive := xpdl.NewProcess("archive")
	archive.Param("archivedOrder", xpdl.ModeIn, str)
	archive.StartEvent("in")
	archive.ServiceTask("store", "")
	archive.IntermediateEvent("told", xpdl.TriggerSignal).Signal("archived").Throw()
	archive.EndEvent("out")
	archive.Sequence("in", "store", "told", "out")
	b.Process(archive)
	return b
}

// TestBuildRoundTrip builds a package with every construct, and requires
// that writing it and reading it back gives the model Build returned
// (modelEqual): the builder makes what the reader makes of the same
// XPDL 2.2 file.
func TestBuildRoundTrip(t *testing.T) {
	t.Parallel()
	pkg, err := buildOrders().Build()
	require.NoError(t, err)
	require.Empty(t, xpdl.Validate(pkg, nil), "the built package has no problems")
	back, out := roundTrip(t, pkg)
	if diff := cmp.Diff(pkg, back, modelEqual); diff != "" {
		t.Fatalf("model differs after writing (-built +read):\n%s\n%s", diff, out)
	}
	require.Empty(t, xpdl.Validate(back, nil), "read back, it has no problems either")

	// What the builder filled in as the reader does.
	p := pkg.Process("order")
	require.Equal(t, "start_approve", p.Transitions[0].ID, "generated transition id")
	require.Equal(t, xpdl.Gateway{Type: xpdl.GatewayOR, Implicit: true}, p.Activity("approve").Split, "implicit gateways are filled in")
	require.Equal(t, "text/javascript", p.Transition("ok").Condition.Expression.Grammar)
	require.False(t, p.Activity("join").IsReentrant())
}

// TestBuildSchemaValid validates the written form of the built package
// against the XPDL 2.2 schema. Its one complaint is the activity
// parameter "approved": goxpdl names the variable a manual activity's
// performer hands back by the parameter's id, which XPDL 2.2's
// ItemAware.Package key wants different from every data field's.
func TestBuildSchemaValid(t *testing.T) {
	t.Parallel()
	xsd := newXSDChecker(t)
	pkg, err := buildOrders().Build()
	require.NoError(t, err)
	out, err := xpdl.Marshal(pkg)
	require.NoError(t, err)
	var complaints []string
	for _, line := range strings.Split(xsd.check(t, out), "\n") {
		if strings.Contains(line, "validity error") {
			complaints = append(complaints, line[strings.Index(line, "Element"):])
		}
	}
	require.Equal(t, []string{"Element '{http://www.wfmc.org/2009/XPDL2.2}FormalParameter': Duplicate key-sequence ['approved'] " +
		"in key identity-constraint '{http://www.wfmc.org/2009/XPDL2.2}ItemAware.Package'."}, complaints)
}

// TestBuildProblems: Build reports every problem at once, typed, as the
// validator does for a file, and the builders' misuses with the code
// "builder"; it returns no package.
func TestBuildProblems(t *testing.T) {
	t.Parallel()
	b := xpdl.NewPackage("bad")
	p := xpdl.NewProcess("p")
	p.StartEvent("start")
	p.UserTask("work").Performer("nobody")
	p.ApplicationTask("call", "missing")
	p.ScriptTask("s", "x = 1").AttachTo("work", true) // not an event
	p.EndEvent("end")
	p.Sequence("start", "work", "call", "s", "end")
	p.Transition("end", "nowhere")
	b.Process(p)
	b.Process(p) // twice

	pkg, err := b.Build()
	require.Nil(t, pkg)
	require.ErrorIs(t, err, xpdl.ErrInvalid)
	var ve *xpdl.ValidationError
	require.ErrorAs(t, err, &ve)
	codes := map[string]bool{}
	for _, pr := range ve.Problems.Errors() {
		codes[pr.Code] = true
		require.Equal(t, xpdl.SourceBuilt, pr.File)
	}
	for _, code := range []string{"builder", "unknown-performer", "unknown-application", "unknown-activity"} {
		require.Truef(t, codes[code], "no %q problem in %v", code, ve.Problems)
	}
	text := err.Error()
	for _, words := range []string{"nobody", "missing", "nowhere"} {
		found := strings.Contains(text, words)
		for _, pr := range ve.Problems {
			found = found || strings.Contains(pr.Message, words)
		}
		require.Truef(t, found, "no problem names %q: %v", words, ve.Problems)
	}

	// Build again: the same answer.
	pkg2, err2 := b.Build()
	require.Nil(t, pkg2)
	require.Equal(t, err, err2)
}

// TestBuildFrozen: once built, the builders change nothing.
func TestBuildFrozen(t *testing.T) {
	t.Parallel()
	b := xpdl.NewPackage("ok")
	p := xpdl.NewProcess("p")
	a := p.ScriptTask("only", "x = 1")
	b.Process(p)
	pkg, err := b.Build()
	require.NoError(t, err)
	a.Name("changed").Performer("x")
	p.ScriptTask("more", "")
	tr := p.Transition("only", "more").When("true")
	tr.ID("t")
	b.Name("changed")
	again, err := b.Build()
	require.NoError(t, err)
	require.Same(t, pkg, again)
	require.Empty(t, pkg.Name)
	require.Len(t, pkg.Processes[0].Activities, 1)
	require.Empty(t, pkg.Processes[0].Activities[0].Name)
	require.Empty(t, pkg.Processes[0].Transitions)
}

// TestWriteUnwritable: text XML cannot hold, content that is not XML and
// nil elements are refused with ErrUnwritable, and nothing is written.
func TestWriteUnwritable(t *testing.T) {
	t.Parallel()
	base := func() *xpdl.Package {
		pkg, err := xpdl.Read(strings.NewReader(`<Package xmlns="http://www.wfmc.org/2009/XPDL2.2" Id="p">
  <PackageHeader><XPDLVersion>2.2</XPDLVersion><Vendor/><Created/></PackageHeader>
  <WorkflowProcesses><WorkflowProcess Id="wp"><ProcessHeader/>
    <Activities><Activity Id="a"><Implementation><No/></Implementation></Activity></Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`), nil)
		require.NoError(t, err)
		return pkg
	}
	for name, spoil := range map[string]func(*xpdl.Package){
		"NUL in a name":    func(p *xpdl.Package) { p.Processes[0].Activities[0].Name = "a\x00b" },
		"invalid UTF-8":    func(p *xpdl.Package) { p.Name = "\xff" },
		"U+FFFE":           func(p *xpdl.Package) { p.Header.Description = "\uFFFE" },
		"content not XML":  func(p *xpdl.Package) { p.ExtendedAttributes = xpdl.ExtendedAttributes{{Name: "x", Content: "<a>"}} },
		"nil activity":     func(p *xpdl.Package) { p.Processes[0].Activities = append(p.Processes[0].Activities, nil) },
		"nil activity set": func(p *xpdl.Package) { p.Processes[0].ActivitySets = []*xpdl.ActivitySet{nil} },
		"nil transition":   func(p *xpdl.Package) { p.Processes[0].Transitions = []*xpdl.Transition{nil} },
		"nil deadline":     func(p *xpdl.Package) { p.Processes[0].Activities[0].Deadlines = []*xpdl.Deadline{nil} },
		"event without Event": func(p *xpdl.Package) {
			p.Processes[0].Activities[0].Kind = xpdl.ActivityEvent
		},
		"nil process":              func(p *xpdl.Package) { p.Processes = append(p.Processes, nil) },
		"unknown kind":             func(p *xpdl.Package) { p.Processes[0].Activities[0].Kind = "Teleport" },
		"unknown application type": func(p *xpdl.Package) { p.Applications = []*xpdl.Application{{ID: "x", Type: "Corba"}} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pkg := base()
			spoil(pkg)
			out, err := xpdl.Marshal(pkg)
			require.ErrorIs(t, err, xpdl.ErrUnwritable)
			require.Nil(t, out)
			var buf bytes.Buffer
			require.ErrorIs(t, xpdl.Write(&buf, pkg), xpdl.ErrUnwritable)
			require.Zero(t, buf.Len(), "nothing written")
		})
	}
	_, err := xpdl.Marshal(nil)
	require.ErrorIs(t, err, xpdl.ErrUnwritable)
}

// TestWriteKeepsText: text with markup characters, line ends, tabs and
// characters beyond the BMP, in attributes and elements, and extended
// attribute content with vendor namespaces, read back unchanged.
func TestWriteKeepsText(t *testing.T) {
	t.Parallel()
	pkg, err := xpdl.Read(strings.NewReader(`<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" xmlns:v="urn:vendor" Id="p">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Description>a &lt; b &amp;&amp; "c" &gt; 'd'
second line	tab 😀</Description></PackageHeader>
  <WorkflowProcesses><WorkflowProcess Id="wp" Name="x&#10;y&#9;z &lt;&quot;&gt;">
    <Activities><Activity Id="a"><Implementation><No/></Implementation>
      <ExtendedAttributes>
        <ExtendedAttribute Name="hook">text <v:hook when="start">&lt;go&gt;</v:hook> <plain a="1"/></ExtendedAttribute>
        <ExtendedAttribute Name="multi">line 1
line 2</ExtendedAttribute>
      </ExtendedAttributes>
    </Activity></Activities>
  </WorkflowProcess></WorkflowProcesses>
</Package>`), nil)
	require.NoError(t, err)
	back, out := roundTrip(t, pkg)
	if diff := cmp.Diff(pkg, back, modelEqual); diff != "" {
		t.Fatalf("model differs after writing (-read +written):\n%s\n%s", diff, out)
	}
	ea := back.Processes[0].Activities[0].ExtendedAttributes
	require.Equal(t, `text <v:hook when="start">&lt;go&gt;</v:hook> <plain a="1"/>`, ea[0].Content)
	require.Equal(t, "line 1\nline 2", ea[1].Value)
	require.Equal(t, "x\ny\tz <\">", back.Processes[0].Name)
}
