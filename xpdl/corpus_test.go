package xpdl_test

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// The corpus of real XPDL files (docs/architecture.md, "The packages";
// docs/corpus-run.md) lives outside the
// repository, next to it: ../shared/xpdl-corpus relative to the module root
// (../../shared/xpdl-corpus from this package's directory). GOXPDL_CORPUS
// overrides the location. The tests skip, saying so, when it is absent.

// corpusFolders are the corpus folders holding XPDL files, by version family.
var corpusFolders = []string{"xpdl1", "xpdl2"}

// corpusDir returns the corpus location, whether or not it exists.
func corpusDir(tb testing.TB) string {
	tb.Helper()
	if dir := os.Getenv("GOXPDL_CORPUS"); dir != "" {
		return dir
	}
	return filepath.Join(repoRoot(tb), "..", "shared", "xpdl-corpus")
}

// requireCorpus returns the corpus location, skipping the test when the
// corpus is not there.
func requireCorpus(tb testing.TB) string {
	tb.Helper()
	dir := corpusDir(tb)
	if !corpusPresent(dir) {
		tb.Skipf("xpdl corpus not found at %s (set GOXPDL_CORPUS to its location); skipping", dir)
	}
	return dir
}

// corpusPresent reports whether the corpus folders exist at dir.
func corpusPresent(dir string) bool {
	for _, folder := range corpusFolders {
		if fi, err := os.Stat(filepath.Join(dir, folder)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// corpusFiles returns the corpus's *.xpdl files as slash-separated paths
// relative to dir ("xpdl1/M1.xpdl"), sorted.
func corpusFiles(tb testing.TB, dir string) []string {
	tb.Helper()
	var files []string
	for _, folder := range corpusFolders {
		entries, err := os.ReadDir(filepath.Join(dir, folder))
		require.NoError(tb, err)
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".xpdl") {
				files = append(files, path.Join(folder, e.Name()))
			}
		}
	}
	slices.Sort(files)
	require.NotEmpty(tb, files, "no *.xpdl files in %s", dir)
	return files
}

// corpusDeployed lists, per corpus file, the sibling files deployed
// alongside it: their processes are what its SubFlows call. The Bonita
// tests deploy these together (SOURCES.md; bonita-tests SubflowTest,
// AsyncTest, MultiInstantiationTest). Kept explicit, not guessed.
//
// Deliberately absent: bonita-subflow.xpdl (its test deploys
// subflow-sub.xpdl, not in the corpus) and bonita-mainSubflowJoinXor.xpdl
// (calls subflowWithTask, not in the corpus): both call a process nobody
// deploys. JaWE's Business_Example reaches Process_Repository through
// ExternalPackages, which Load follows.
var corpusDeployed = map[string][]string{
	"xpdl1/bonita-nestedSubflow.xpdl":                          {"xpdl1/bonita-nestedSubflow-sub.xpdl", "xpdl1/bonita-nestedSubflow-nestedSub.xpdl"},
	"xpdl1/bonita-nestedSubflow-sub.xpdl":                      {"xpdl1/bonita-nestedSubflow-nestedSub.xpdl"},
	"xpdl1/bonita-subflowParams.xpdl":                          {"xpdl1/bonita-subflowParams-sub.xpdl"},
	"xpdl1/bonita-asyncSubParent.xpdl":                         {"xpdl1/bonita-asyncSubChild.xpdl"},
	"xpdl1/bonita-subflowMultiInstantiation-mainCondPass.xpdl": {"xpdl1/bonita-subflowMultiInstantiation-sub.xpdl"},
	"xpdl1/bonita-main_variables_proed.xpdl":                   {"xpdl1/bonita-subflow_proed_variables.xpdl"},
}

// minCorpusAccepted is how many of the 150 corpus files the validator must
// accept: all but a handful of known-invalid ones.
const minCorpusAccepted = 130

// corpusMalformed is the corpus file that is not well-formed XML, and the
// line at which it breaks.
const (
	corpusMalformed     = "xpdl1/bonita-testManagementAPIWithParsingError.xpdl"
	corpusMalformedLine = 28
)

// corpusRejected are corpus files known to be invalid by meaning, with
// words of which the code or message of one of their errors must contain
// at least one (case-insensitively): the reason they are rejected.
var corpusRejected = map[string][]string{
	// Declares FULL_BLOCKED and contains processes that are not.
	"xpdl1/jawe-FullBlocked.xpdl": {"FULL_BLOCKED", "full-blocked", "conformance"},
	// Declares LOOP_BLOCKED and contains a cyclic process.
	"xpdl1/jawe-LoopBlocked.xpdl": {"LOOP_BLOCKED", "loop-blocked", "conformance"},
	// A transition condition in <Expression ScriptGrammar="python"/>.
	"xpdl2/shoobx-publication-2.1.xpdl":                             {"python"},
	"xpdl2/shoobx-publication-2.1-script.xpdl":                      {"python"},
	"xpdl2/shoobx-publication-2.1-duplicate-Deadline.xpdl":          {"python"},
	"xpdl2/shoobx-publication-2.1-duplicate-ExtendedAttribute.xpdl": {"python"},
}

// corpusResult is what loading and validating one corpus file gave.
type corpusResult struct {
	rel      string
	pkg      *xpdl.Package // nil when Load failed
	err      error         // Load's error
	problems xpdl.Problems // Validate's problems, or the SyntaxError's
}

// verdict is "accepted" (no errors) or "rejected: CODE: MESSAGE" for the
// first error.
func (r corpusResult) verdict() string {
	if errs := r.problems.Errors(); len(errs) > 0 {
		return fmt.Sprintf("rejected: %s: %s", errs[0].Code, errs[0].Message)
	}
	if r.err != nil {
		return "rejected: " + r.err.Error()
	}
	return "accepted"
}

func (r corpusResult) accepted() bool { return r.err == nil && !r.problems.HasErrors() }

// loadCorpusFile loads one corpus file with its ExternalPackages, and the
// siblings deployed alongside it, and validates it.
func loadCorpusFile(tb testing.TB, dir, rel string) corpusResult {
	tb.Helper()
	res := corpusResult{rel: rel}
	res.pkg, res.err = xpdl.Load(filepath.Join(dir, filepath.FromSlash(rel)), &xpdl.ReadOpts{Name: rel})
	if res.err != nil {
		var se *xpdl.SyntaxError
		if errors.As(res.err, &se) {
			res.problems = xpdl.Problems{se.Problem()}
		}
		return res
	}
	opts := &xpdl.ValidateOpts{}
	for _, sib := range corpusDeployed[rel] {
		pkg, err := xpdl.Load(filepath.Join(dir, filepath.FromSlash(sib)), &xpdl.ReadOpts{Name: sib})
		require.NoError(tb, err, "deployed alongside %s", rel)
		opts.Deployed = append(opts.Deployed, pkg)
	}
	res.problems = xpdl.Validate(res.pkg, opts)
	return res
}

// scrub makes text independent of where the corpus is: paths under dir
// (external packages' names, I/O errors) become corpus-relative.
func scrub(dir, s string) string {
	for _, prefix := range []string{dir + string(filepath.Separator), filepath.ToSlash(dir) + "/"} {
		s = strings.ReplaceAll(s, prefix, "")
	}
	return s
}

// renderCorpusSummary renders the deterministic per-file summary kept in
// testdata/corpus/<folder>/<file>.golden.
func renderCorpusSummary(dir string, r corpusResult) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("file: %s", r.rel)
	if deployed := corpusDeployed[r.rel]; len(deployed) > 0 {
		w("deployed alongside: %s", strings.Join(deployed, ", "))
	}
	if p := r.pkg; p != nil {
		w("version: %s", p.Version)
		w("package: %q", p.ID)
		if p.Conformance != xpdl.ConformanceNone {
			w("conformance: %s", p.Conformance)
		}
		for _, ext := range p.ExternalPackages {
			switch {
			case ext.Package != nil:
				w("external package %q: loaded %q from %s", ext.Href, ext.Package.ID, scrub(dir, ext.Package.Source))
			case ext.LoadErr != nil:
				w("external package %q: not loaded: %s", ext.Href, scrub(dir, ext.LoadErr.Error()))
			default:
				w("external package %q: not loaded", ext.Href)
			}
		}
		for _, proc := range p.Processes {
			w("process %q: activities %d, transitions %d, activity sets %d",
				proc.ID, len(proc.Activities), len(proc.Transitions), len(proc.ActivitySets))
			for _, set := range proc.ActivitySets {
				w("  activity set %q: activities %d, transitions %d", set.ID, len(set.Activities), len(set.Transitions))
			}
		}
	} else if r.err != nil {
		w("load error: %s", scrub(dir, r.err.Error()))
	}
	w("problems: %d", len(r.problems))
	for _, p := range r.problems {
		where := fmt.Sprintf("%d:%d", p.Line, p.Col)
		if scrub(dir, p.File) != r.rel {
			where = scrub(dir, p.File) + ":" + where
		}
		w("  %s %s %s: %s", p.Severity, p.Code, where, scrub(dir, p.Message))
	}
	w("verdict: %s", scrub(dir, r.verdict()))
	return b.String()
}

// TestCorpus loads and validates every corpus file, compares a summary of
// each with its golden file, and checks the overall verdicts. Rewrite the
// goldens with: go test ./xpdl -run TestCorpus -update
func TestCorpus(t *testing.T) {
	t.Parallel()
	dir := requireCorpus(t)
	files := corpusFiles(t, dir)
	results := make([]corpusResult, len(files))

	t.Run("file", func(t *testing.T) {
		for i, rel := range files {
			t.Run(rel, func(t *testing.T) {
				t.Parallel()
				results[i] = loadCorpusFile(t, dir, rel)
				checkGolden(t, testdataPath(t, "corpus", filepath.FromSlash(rel)+".golden"), renderCorpusSummary(dir, results[i]))
			})
		}
	})
	for i, r := range results {
		require.NotEmptyf(t, r.rel, "%s stopped before it was validated", files[i])
	}

	t.Run("summary", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		accepted := 0
		for _, r := range results {
			verdict := "rejected"
			if r.accepted() {
				verdict = "accepted"
				accepted++
			}
			fmt.Fprintf(&b, "%s  %s\n", verdict, r.rel)
		}
		fmt.Fprintf(&b, "total %d, accepted %d, rejected %d\n", len(results), accepted, len(results)-accepted)
		checkGolden(t, testdataPath(t, "corpus", "SUMMARY.golden"), b.String())
	})

	t.Run("malformed", func(t *testing.T) {
		t.Parallel()
		i := slices.Index(files, corpusMalformed)
		require.GreaterOrEqual(t, i, 0, "%s is not in the corpus", corpusMalformed)
		r := results[i]
		require.False(t, r.accepted())
		require.ErrorIs(t, r.err, xpdl.ErrInvalid)
		require.ErrorIs(t, r.err, xpdl.ErrMalformed)
		var se *xpdl.SyntaxError
		require.ErrorAs(t, r.err, &se)
		require.Equal(t, corpusMalformedLine, se.Pos.Line)
		require.Equal(t, "syntax", se.Problem().Code)
	})

	t.Run("rejected", func(t *testing.T) {
		t.Parallel()
		for rel, words := range corpusRejected {
			t.Run(rel, func(t *testing.T) {
				t.Parallel()
				i := slices.Index(files, rel)
				require.GreaterOrEqual(t, i, 0, "%s is not in the corpus", rel)
				r := results[i]
				require.NoError(t, r.err, "%s should read, and be rejected by Validate", rel)
				require.Falsef(t, r.accepted(), "%s should be rejected for %q", rel, words)
				require.Truef(t, hasErrorAbout(r.problems, words), "%s is rejected, but for none of %q:\n%s", rel, words, renderCorpusSummary(dir, r))
			})
		}
	})

	t.Run("accepted", func(t *testing.T) {
		t.Parallel()
		accepted := 0
		var rejected []string
		for _, r := range results {
			if r.accepted() {
				accepted++
			} else {
				rejected = append(rejected, r.rel+": "+scrub(dir, r.verdict()))
			}
		}
		t.Logf("corpus: %d of %d accepted", accepted, len(results))
		require.GreaterOrEqualf(t, accepted, minCorpusAccepted,
			"only %d of %d corpus files accepted; rejected:\n%s", accepted, len(results), strings.Join(rejected, "\n"))
	})
}

// hasErrorAbout reports whether an error's code or message contains one of
// the words, case-insensitively.
func hasErrorAbout(ps xpdl.Problems, words []string) bool {
	for _, p := range ps.Errors() {
		text := strings.ToLower(p.Code + " " + p.Message)
		for _, w := range words {
			if strings.Contains(text, strings.ToLower(w)) {
				return true
			}
		}
	}
	return false
}

// TestCorpusLoadDeterministic loads every corpus file twice and requires
// identical models (rendered in full) and identical problems.
func TestCorpusLoadDeterministic(t *testing.T) {
	t.Parallel()
	dir := requireCorpus(t)
	for _, rel := range corpusFiles(t, dir) {
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			first, second := loadCorpusFile(t, dir, rel), loadCorpusFile(t, dir, rel)
			if first.err != nil {
				require.Error(t, second.err)
				require.Equal(t, first.err.Error(), second.err.Error())
				return
			}
			require.NoError(t, second.err)
			require.Equal(t, renderModel(dir, first.pkg), renderModel(dir, second.pkg))
			require.Equal(t, first.problems, second.problems)
		})
	}
}
