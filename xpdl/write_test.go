package xpdl_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// Model equality for the round trips (read → Write → read, and builder →
// Write → read). Two models are the same when every exported field is,
// except what says where and how the package was written rather than
// what it says:
//
//   - positions (every Pos field): the written file has its own lines;
//   - Package.Version, Package.Source and Header.XPDLVersion: the written
//     file is XPDL 2.2, read under another name;
//   - ExternalPackage.Package and LoadErr: Read does not load references;
//   - the language of an empty expression (Expression.Grammar where Text
//     is ""): the reader gives the package's language to an expression
//     element that is present and empty, and none to one that is absent,
//     and XPDL 2.2 sometimes needs the element where 1.0 had none (an
//     empty TimeDate, a loop without condition); an empty expression is
//     never evaluated;
//   - unexported fields (the flows' indexes, derived from the exported
//     fields; a Route's record of whether it was typed, which XPDL 1.0
//     Routes are not — what it decides, the activity's gateways, is
//     compared).
//
// Besides, two changes are expected (normaliseForWrite):
//
//   - an XPDL 1 application call (Task "") that one TaskApplication
//     holds comes back as one (Task Application): XPDL 2.2 has no Tool
//     element;
//   - a Loop of LoopType None that says nothing else comes back as no
//     Loop (nil): XPDL 2.2 has no LoopType None; nothing acts on it;
//   - whether the gateways of an XPDL 1.0 Route were declared or filled
//     in (Gateway.Implicit) is not compared, only their types: an XPDL 2
//     Route without a Split splits by its gateway type (XOR), where 1.0
//     Routes split as any activity (OR), so the writer declares such a
//     split. The rewrites of loops and races, the one reader of Implicit
//     besides diagrams, are compared separately.
var modelEqual = cmp.Options{
	cmpopts.IgnoreUnexported(xpdl.Package{}, xpdl.Flow{}, xpdl.Route{}),
	cmpopts.IgnoreTypes(xpdl.Pos{}),
	cmpopts.IgnoreFields(xpdl.Package{}, "Version", "Source"),
	cmpopts.IgnoreFields(xpdl.PackageHeader{}, "XPDLVersion"),
	cmpopts.IgnoreFields(xpdl.ExternalPackage{}, "Package", "LoadErr"),
	cmp.Transformer("expression", func(x xpdl.Expression) xpdl.Expression {
		if x.Text == "" {
			return xpdl.Expression{}
		}
		return x
	}),
}

// normaliseForWrite changes a model read from any version into what
// reading its XPDL 2.2 form must give (see modelEqual).
func normaliseForWrite(pkg *xpdl.Package) {
	for _, proc := range pkg.Processes {
		for _, f := range proc.Flows() {
			for _, a := range f.Activities {
				if l := a.Loop; l != nil && (l.Type == xpdl.LoopNone || l.Type == "") && cmp.Equal(*l, xpdl.Loop{Type: l.Type}, modelEqual) {
					a.Loop = nil
				}
				if pkg.Version == xpdl.Version10 && a.Kind == xpdl.ActivityRoute {
					a.Join.Implicit, a.Split.Implicit = false, false
				}
				if a.Kind == xpdl.ActivityTool && a.Task == xpdl.TaskUnspecified && len(a.Tools) == 1 &&
					a.Tools[0].Type == xpdl.ToolApplication && len(a.Tools[0].ExtendedAttributes) == 0 {
					a.Task = xpdl.TaskApplication
				}
			}
		}
	}
}

// requireSameModel requires that out, written from want, reads back as
// want, changed as normaliseForWrite says (want and the model read back
// are normalised, not the caller's package).
func requireSameModel(tb testing.TB, want *xpdl.Package, out []byte) {
	tb.Helper()
	back, err := xpdl.Read(bytes.NewReader(out), nil)
	require.NoError(tb, err)
	normaliseForWrite(want)
	back.Version = want.Version // the 1.0 rule applies to both
	normaliseForWrite(back)
	if diff := cmp.Diff(want, back, modelEqual); diff != "" {
		tb.Fatalf("model differs after writing (-read +written):\n%s\n%s", diff, out)
	}
}

// roundTrip writes pkg and reads it back.
func roundTrip(tb testing.TB, pkg *xpdl.Package) (*xpdl.Package, []byte) {
	tb.Helper()
	out, err := xpdl.Marshal(pkg)
	require.NoError(tb, err)
	back, err := xpdl.Read(bytes.NewReader(out), &xpdl.ReadOpts{Name: "written.xpdl"})
	require.NoError(tb, err, "reading back:\n%s", out)
	return back, out
}

// xsdChecker validates documents against the XPDL 2.2 schema of the
// corpus with xmllint.
type xsdChecker struct {
	xsd, catalog string
}

// newXSDChecker returns a checker, or skips the test, saying why, when
// the corpus's schema or xmllint is missing (fails instead when
// GOXPDL_REQUIRE_XMLLINT is set, as CI sets it).
func newXSDChecker(tb testing.TB) *xsdChecker {
	tb.Helper()
	dir := requireCorpus(tb)
	schemaDir := filepath.Join(dir, "schema")
	xsd := filepath.Join(schemaDir, "bpmnxpdl_40a.xsd")
	if _, err := os.Stat(xsd); err != nil {
		tb.Skipf("XPDL 2.2 schema not found at %s; skipping schema validation", xsd)
	}
	if _, err := exec.LookPath("xmllint"); err != nil {
		if os.Getenv("GOXPDL_REQUIRE_XMLLINT") != "" {
			tb.Fatal("xmllint not found, and GOXPDL_REQUIRE_XMLLINT is set (apt-get install libxml2-utils)")
		}
		tb.Skip("xmllint not found (apt-get install libxml2-utils); skipping schema validation")
	}
	abs, err := filepath.Abs(schemaDir)
	require.NoError(tb, err)
	// The 2.2 schema imports the 1.0 one by URL: a catalog maps it to the
	// corpus's copy, so that validation needs no network.
	catalog := filepath.Join(tb.TempDir(), "catalog.xml")
	require.NoError(tb, os.WriteFile(catalog, []byte(`<?xml version="1.0"?>
<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">
  <system systemId="http://www.wfmc.org/standards/docs/TC-1025_schema_10_xpdl.xsd" uri="file://`+filepath.ToSlash(abs)+`/TC-1025_schema_10_xpdl.xsd"/>
</catalog>
`), 0o644))
	return &xsdChecker{xsd: xsd, catalog: catalog}
}

// check validates doc and returns xmllint's complaints, "" when valid.
func (c *xsdChecker) check(tb testing.TB, doc []byte) string {
	tb.Helper()
	file := filepath.Join(tb.TempDir(), "doc.xpdl")
	require.NoError(tb, os.WriteFile(file, doc, 0o644))
	cmd := exec.Command("xmllint", "--nonet", "--noout", "--schema", c.xsd, file)
	cmd.Env = append(os.Environ(), "XML_CATALOG_FILES="+c.catalog)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return ""
	}
	return strings.ReplaceAll(string(out), file, "doc.xpdl")
}

// TestWriteCorpusRoundTrip reads every corpus file the reader accepts,
// writes it as XPDL 2.2, reads that back and requires the same model
// (modelEqual), and a package the validator accepted to be accepted
// again and rewritten the same way. It also validates each written file against the XPDL 2.2
// schema and reports how many pass; those whose model XPDL 2.2 cannot
// say within the schema are listed in writeSchemaInvalid.
func TestWriteCorpusRoundTrip(t *testing.T) {
	t.Parallel()
	dir := requireCorpus(t)
	xsd := newXSDChecker(t)
	files := corpusFiles(t, dir)
	var (
		mu                                                          sync.Mutex
		read, same, accepted, rewrites, schemaValid, notSchemaValid int
	)
	count := func(n *int, by int) {
		mu.Lock()
		defer mu.Unlock()
		*n += by
	}
	t.Run("file", func(t *testing.T) {
		for _, rel := range files {
			t.Run(rel, func(t *testing.T) {
				t.Parallel()
				res := loadCorpusFile(t, dir, rel)
				if res.err != nil {
					return
				}
				count(&read, 1)
				want, err := xpdl.Read(bytes.NewReader(readFile(t, filepath.Join(dir, filepath.FromSlash(rel)))), &xpdl.ReadOpts{Name: rel})
				require.NoError(t, err)
				back, out := roundTrip(t, want)
				requireSameModel(t, want, out)
				count(&same, 1)
				if res.accepted() {
					for i, ext := range back.ExternalPackages {
						ext.Package = res.pkg.ExternalPackages[i].Package
					}
					opts := &xpdl.ValidateOpts{}
					for _, sib := range corpusDeployed[rel] {
						pkg, err := xpdl.Load(filepath.Join(dir, filepath.FromSlash(sib)), nil)
						require.NoError(t, err)
						opts.Deployed = append(opts.Deployed, pkg)
					}
					problems := xpdl.Validate(back, opts)
					require.Falsef(t, problems.HasErrors(), "accepted, but not once written:\n%v", problems.Errors())
					count(&accepted, 1)
					// The engine runs the rewritten model: the same rewrites.
					_, wantSteps, wantErr := xpdl.Rewrite(res.pkg)
					_, gotSteps, gotErr := xpdl.Rewrite(back)
					require.Equal(t, wantErr == nil, gotErr == nil, "rewrite errors: %v, once written %v", wantErr, gotErr)
					require.Equal(t, wantSteps, gotSteps)
					count(&rewrites, len(gotSteps))
				}
				if msg := xsd.check(t, out); msg != "" {
					count(&notSchemaValid, 1)
					for _, line := range strings.Split(strings.TrimSpace(msg), "\n") {
						if !strings.Contains(line, "validity error") || inherentSchemaError.MatchString(line) {
							continue
						}
						t.Errorf("written file not schema-valid beyond its model's identity constraints: %s", line)
					}
				} else {
					count(&schemaValid, 1)
				}
			})
		}
	})
	t.Logf("corpus: %d files read, %d the same after writing, %d accepted again (%d rewrites, the same); "+
		"written files schema-valid %d, invalid only as inherentSchemaError says %d",
		read, same, accepted, rewrites, schemaValid, notSchemaValid)
	require.Equal(t, read, same, "every file read must round-trip")
}

// inherentSchemaError matches the schema errors a written file may have
// because of what its model holds, not how it is written: the identity
// constraints of XPDL 2.2 (keys and key references) that older versions
// do not have or real files break. Ids of data fields and formal
// parameters unique across the package (ItemAware.Package; the XPDL 1
// samples reuse a parameter's id for a data field), a SubFlow calling a
// process of another package (Bonita's subflow tests), duplicate activity
// ids, a transition between activities of an activity set written at the
// top level. And XPDL 1 application calls that no XPDL 2.2 element
// holds (several in one activity, or of type PROCEDURE, as in JaWE's
// samples), which the writer keeps in their 1.0 form, Tool.
var inherentSchemaError = regexp.MustCompile(`Duplicate key-sequence|No match found for key-sequence|XPDL2.2}Tool': This element is not expected`)

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	require.NoError(tb, err)
	return b
}
