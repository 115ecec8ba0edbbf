package xpdl_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// Regression tests for faults found in review.

func TestLatin1ExtendedAttributeContentIsDecoded(t *testing.T) {
	t.Parallel()
	src := "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>" +
		"<Package xmlns=\"http://www.wfmc.org/2002/XPDL1.0\" Id=\"p\" Name=\"caf\xe9\">" +
		"<ExtendedAttributes><ExtendedAttribute Name=\"x\"><A b=\"\xe9\xe9\xe9\"/></ExtendedAttribute></ExtendedAttributes></Package>"
	pkg, err := xpdl.Read(strings.NewReader(src), nil)
	require.NoError(t, err)
	require.Equal(t, "café", pkg.Name)
	require.Equal(t, `<A b="ééé"/>`, pkg.ExtendedAttributes[0].Content)
}

func TestUnknownEncodingIsASyntaxError(t *testing.T) {
	t.Parallel()
	src := `<?xml version="1.0" encoding="x-no-such-charset"?><Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="p"/>`
	_, err := xpdl.Read(strings.NewReader(src), nil)
	require.ErrorIs(t, err, xpdl.ErrMalformed)
	require.ErrorIs(t, err, xpdl.ErrInvalid)
}

func TestDataFieldWithoutDataTypeDoesNotPanic(t *testing.T) {
	t.Parallel()
	src := pkg10("", `<WorkflowProcess Id="p"><FormalParameters><FormalParameter Id="f"/></FormalParameters>
		<DataFields><DataField Id="d"/></DataFields><Activities>`+noImpl("a")+`</Activities></WorkflowProcess>`)
	pkg, err := xpdl.Read(strings.NewReader(src), nil)
	require.NoError(t, err)
	require.Equal(t, xpdl.TypeUnknown, pkg.Processes[0].DataFields[0].Type.Kind)
	require.Equal(t, xpdl.TypeUnknown, pkg.Processes[0].FormalParameters[0].Type.Kind)
}

// XPDL 1.0 Routes have no gateway type: an untyped fan-out Route is an
// OR split (all unconditional transitions taken), not the XPDL 2 XOR.
func TestXPDL10RouteTakesActivityDefaults(t *testing.T) {
	t.Parallel()
	src := pkg10("", proc10("p", act("r", `<Route/>`)+noImpl("b1")+noImpl("b2")+noImpl("j"),
		tr("t1", "r", "b1")+tr("t2", "r", "b2")+tr("t3", "b1", "j")+tr("t4", "b2", "j")))
	pkg, err := xpdl.Read(strings.NewReader(src), nil)
	require.NoError(t, err)
	r := pkg.Processes[0].Activity("r")
	require.Equal(t, xpdl.GatewayOR, r.Split.Type)
	require.True(t, r.Split.Implicit)
	j := pkg.Processes[0].Activity("j")
	require.Equal(t, xpdl.GatewayXOR, j.Join.Type)
	require.True(t, j.Join.Implicit)
}

func TestFreeTextConditionIsNotARule(t *testing.T) {
	t.Parallel()
	c := &xpdl.Condition{Type: xpdl.ConditionCondition, Expression: xpdl.Expression{Text: "approved", Grammar: "Text"}}
	require.False(t, c.IsRule())
	c.Expression.Grammar = "JavaScript"
	require.True(t, c.IsRule())
}

func TestAbsoluteExternalPackageReferencesAreNotFollowed(t *testing.T) {
	t.Parallel()
	for _, href := range []string{"/etc/passwd", "file:///etc/passwd", `C:\x.xpdl`} {
		src := pkg10(`<ExternalPackages><ExternalPackage href="`+href+`"/></ExternalPackages>`, seq)
		dir := t.TempDir()
		path := dir + "/main.xpdl"
		require.NoError(t, writeFile(path, src))
		pkg, err := xpdl.Load(path, nil)
		require.NoError(t, err)
		require.ErrorIs(t, pkg.ExternalPackages[0].LoadErr, xpdl.ErrExternalPackage, href)
		require.Nil(t, pkg.ExternalPackages[0].Package)
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

func TestLoadHonoursReadOptsName(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/main.xpdl"
	require.NoError(t, writeFile(path, pkg10("", seq)))
	pkg, err := xpdl.Load(path, &xpdl.ReadOpts{Name: "orders.xpdl"})
	require.NoError(t, err)
	require.Equal(t, "orders.xpdl", pkg.Source)
	pkg, err = xpdl.Load(path, nil)
	require.NoError(t, err)
	require.Equal(t, path, pkg.Source)
}
