package xpdl_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// fuzzReadOpts bound what one fuzz input may cost.
var fuzzReadOpts = xpdl.ReadOpts{Name: "fuzz.xpdl", MaxBytes: 1 << 20, MaxDepth: 64, MaxAttrs: 64, MaxElements: 50_000}

// fuzzSeeds are inputs of our own, added whether or not the corpus is there.
var fuzzSeeds = []string{
	"",
	"<Package/>",
	processDoc(ns10, noActivity("a")+noActivity("b"), transition("t", "a", "b")),
	processDoc(ns21, `<Activity Id="x"><Route GatewayType="Parallel"/></Activity>`+noActivity("a")+noActivity("b"),
		transition("t1", "a", "x")+transition("t2", "b", "x")),
	processDoc(ns22, `<Activity Id="s"><Event><StartEvent Trigger="Timer"><TriggerTimer><TimeCycle>R/PT1H</TimeCycle></TriggerTimer></StartEvent></Event></Activity>`+
		`<Activity Id="l"><Loop LoopType="Standard"><LoopStandard LoopMaximum="3"><LoopCondition>n &lt; 3</LoopCondition></LoopStandard></Loop></Activity>`,
		`<Transition Id="t" From="s" To="l"><Condition Type="CONDITION"><Expression ScriptGrammar="python">x</Expression></Condition></Transition>`),
	xpdlDoc(ns10, `<ConformanceClass GraphConformance="FULL_BLOCKED"/><ExternalPackages><ExternalPackage href="other.xpdl"/></ExternalPackages>`+
		`<WorkflowProcesses><WorkflowProcess Id="wp"><ActivitySets><ActivitySet Id="set"><Activities>`+noActivity("in")+`</Activities></ActivitySet></ActivitySets>`+
		`<Activities><Activity Id="blk"><BlockActivity BlockId="set"/></Activity><Activity Id="sub"><Implementation><SubFlow Id="wp"/></Implementation></Activity></Activities>`+
		`<Transitions>`+transition("t", "blk", "sub")+`</Transitions></WorkflowProcess></WorkflowProcesses>`),
	"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<Package xmlns=\"" + ns10 + "\" Id=\"\xe9\"/>",
	"<!DOCTYPE Package><Package/>",
	// Found by FuzzRead: a DataField without DataType made the reader
	// dereference nil in readTypeIn (fixed in 1151661); the same for an
	// Application's FormalParameter.
	"<Package><DataFields><DataField></DataField></DataFields></Package>",
	xpdlDoc(ns21, `<Applications><Application Id="a"><FormalParameters><FormalParameter Id="f"/></FormalParameters></Application></Applications>`),
	// Found by FuzzWrite: a 1.0 Route with a declared gateway type came
	// back from XPDL 2.2 with its implicit join declared.
	`<Package><WorkflowProcesses><WorkflowProcess><Activities><Activity Id="x"><Route GatewayType="0"/></Activity></Activities>` +
		`<Transitions><Transition To="x"/><Transition To="x"/></Transitions></WorkflowProcess></WorkflowProcesses></Package>`,
}

// FuzzRead reads arbitrary bytes and, when they read, validates them. It
// checks that nothing panics, that Read fails only with a *SyntaxError
// (matching ErrInvalid), that every problem has a code and a message, and
// that Validate is deterministic and leaves the package as it found it.
//
//	go test ./xpdl -run='^$' -fuzz=FuzzRead -fuzztime=60s
func FuzzRead(f *testing.F) {
	if dir := corpusDir(f); corpusPresent(dir) {
		for _, rel := range corpusFiles(f, dir) {
			src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
			require.NoError(f, err)
			f.Add(src)
		}
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkReadValidate(t, data)
	})
}

// checkReadValidate is FuzzRead's property, also run on fixed inputs.
func checkReadValidate(t *testing.T, data []byte) {
	t.Helper()
	opts := fuzzReadOpts
	pkg, err := xpdl.Read(bytes.NewReader(data), &opts)
	if err != nil {
		require.Nil(t, pkg)
		require.ErrorIs(t, err, xpdl.ErrInvalid, "Read of bytes fails only for invalid input")
		var se *xpdl.SyntaxError
		require.ErrorAs(t, err, &se)
		require.Error(t, se.Err, "a SyntaxError wraps a sentinel")
		checkProblems(t, xpdl.Problems{se.Problem()})
		return
	}
	require.NotNil(t, pkg)
	before := renderModel("", pkg)
	ps := xpdl.Validate(pkg, nil)
	checkProblems(t, ps)
	require.Equal(t, ps, xpdl.Validate(pkg, nil), "Validate is deterministic")
	// A package deployed alongside itself, as a careless caller might.
	checkProblems(t, xpdl.Validate(pkg, &xpdl.ValidateOpts{Deployed: []*xpdl.Package{pkg}}))
	require.Equal(t, before, renderModel("", pkg), "Validate must not change the package")
}

func checkProblems(t *testing.T, ps xpdl.Problems) {
	t.Helper()
	for _, p := range ps {
		require.NotEmpty(t, p.Code, "problem without code: %v", p)
		require.NotEmpty(t, p.Message, "problem without message: %v", p)
		require.Contains(t, []xpdl.Severity{xpdl.SeverityError, xpdl.SeverityWarning}, p.Severity, "problem %v", p)
	}
}

// TestReadValidateSeeds runs FuzzRead's property on our own seeds in
// every ordinary test run (FuzzRead itself runs only its seed corpus then).
func TestReadValidateSeeds(t *testing.T) {
	t.Parallel()
	for i, s := range fuzzSeeds {
		t.Run(string(rune('a'+i)), func(t *testing.T) {
			t.Parallel()
			checkReadValidate(t, []byte(s))
		})
	}
}

// FuzzWrite reads arbitrary bytes and, when they read, writes the package
// as XPDL 2.2 and reads that back. It checks that Write does not panic,
// fails only with ErrUnwritable, and otherwise gives back the model read
// (modelEqual, normaliseForWrite).
//
//	go test ./xpdl -run='^$' -fuzz=FuzzWrite -fuzztime=60s
func FuzzWrite(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pkg, err := xpdl.Read(bytes.NewReader(data), &fuzzReadOpts)
		if err != nil {
			return
		}
		out, err := xpdl.Marshal(pkg)
		if err != nil {
			require.ErrorIs(t, err, xpdl.ErrUnwritable)
			return
		}
		requireSameModel(t, pkg, out)
	})
}
