package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/goxpdl/goxpdl/xpdl"
)

// validateUsage is the full usage text of "goxpdl validate".
const validateUsage = `Usage: goxpdl validate [--json] [--explain] FILE...

Validate reads each XPDL file, with the ExternalPackages it references, and
reports every problem it finds. Each problem is printed on standard output as

	FILE:LINE:COL: message

and warnings as "FILE:LINE:COL: warning: message". A warning does not make
a file invalid. One summary line per file goes to standard error.

The files named on one command line are validated as one deployment: a
SubFlow in one file may name a process defined in another of the files.

A valid file is also rewritten as the engine runs it (loop entries and
races in loops, docs/reentrancy.md); a race that cannot be rewritten is an
error (race-region).

Flags (before the files):

	--json     print one JSON object instead of text:
	           {"files":[{"file","valid","errors","warnings","problems":[...]}],"valid"}
	--explain  after the problems of each valid file, print the model the
	           engine runs: per process its activities (id, kind, join,
	           split, reentrant) and transitions (id, from, to, condition),
	           then each rewrite with its reason; with --json, as "explain"
	           in the file's object: {"processes":[...],"rewrites":[...]}

Exit status:

	0  every file is valid (warnings allowed)
	1  some file has errors
	2  usage error, or some file cannot be read
`

// validateShortUsage follows a usage error.
const validateShortUsage = `Usage: goxpdl validate [--json] [--explain] FILE...
Run "goxpdl help validate" for details.
`

// fileReport is the outcome of validating one file; it is also the JSON
// form of one entry of "files".
type fileReport struct {
	File     string        `json:"file"`
	Valid    bool          `json:"valid"`
	Errors   int           `json:"errors"`
	Warnings int           `json:"warnings"`
	Problems xpdl.Problems `json:"problems"`
	// Error says why the file could not be read; it is set only then.
	Error string `json:"error,omitempty"`
	// Explain is the rewritten model, with --explain for a valid file.
	Explain *xpdl.Explanation `json:"explain,omitempty"`
}

// validateReport is the JSON output of "goxpdl validate --json".
type validateReport struct {
	Files []fileReport `json:"files"`
	Valid bool         `json:"valid"`
}

// runValidate implements "goxpdl validate".
func runValidate(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("validate", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {} // printed below, where -h and a bad flag are told apart
	jsonOut := fset.Bool("json", false, "print one JSON object instead of text")
	explain := fset.Bool("explain", false, "print the rewritten model of each valid file")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeOut(stdout, stderr, validateUsage, exitOK)
		}
		// The flag package has printed what was wrong.
		printErr(stderr, "%s", validateShortUsage)
		return exitUsage
	}
	if fset.NArg() == 0 {
		printErr(stderr, "goxpdl validate: no files named\n%s", validateShortUsage)
		return exitUsage
	}

	reports := validateFiles(fset.Args(), *explain)
	code := exitOK
	for _, r := range reports {
		switch {
		case r.Error != "":
			code = exitUsage
		case !r.Valid && code == exitOK:
			code = exitProblems
		}
	}

	if *jsonOut {
		for _, r := range reports {
			if r.Error != "" {
				printErr(stderr, "%s: %s\n", r.File, r.Error)
			}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // messages quote elements such as <Package>
		if err := enc.Encode(validateReport{Files: reports, Valid: code == exitOK}); err != nil {
			printErr(stderr, "goxpdl validate: %v\n", err)
			return exitUsage
		}
		return writeOut(stdout, stderr, b.String(), code)
	}
	for _, r := range reports {
		// One write per file, so that in a terminal each file's summary
		// follows its problems.
		var b strings.Builder
		for _, p := range r.Problems {
			b.WriteString(p.String())
			b.WriteByte('\n')
		}
		if r.Explain != nil {
			fmt.Fprintf(&b, "%s: rewritten model\n", r.File)
			b.WriteString(r.Explain.Text())
		}
		if writeOut(stdout, stderr, b.String(), exitOK) != exitOK {
			return exitUsage
		}
		printErr(stderr, "%s: %s\n", r.File, summary(r))
	}
	return code
}

// validateFiles loads every file, then validates each package that loaded
// with the others deployed alongside it, and rewrites each valid one as
// the engine will (a race that cannot be rewritten is a problem); with
// explain, the rewritten model goes in the report. The reports are in
// file order.
func validateFiles(files []string, explain bool) []fileReport {
	reports, _ := validateDeployment(files, explain)
	return reports
}

// validateDeployment is validateFiles that also returns the packages that
// loaded, in file order (nil for a file that did not).
func validateDeployment(files []string, explain bool) ([]fileReport, []*xpdl.Package) {
	reports := make([]fileReport, len(files))
	pkgs := make([]*xpdl.Package, len(files))
	for i, file := range files {
		reports[i].File = file
		pkg, err := xpdl.Load(file, nil)
		var syntaxErr *xpdl.SyntaxError
		switch {
		case err == nil:
			pkgs[i] = pkg
		case errors.As(err, &syntaxErr):
			// Unreadable as XPDL: a problem of the file, not an I/O error.
			reports[i].Problems = xpdl.Problems{syntaxErr.Problem()}
		default:
			reports[i].Error = "cannot read: " + ioMessage(err)
			if strings.HasPrefix(file, "-") {
				reports[i].Error += " (flags go before the files)"
			}
		}
	}
	for i, pkg := range pkgs {
		if pkg == nil {
			continue
		}
		others := make([]*xpdl.Package, 0, len(pkgs)-1)
		for j, other := range pkgs {
			if j != i && other != nil {
				others = append(others, other)
			}
		}
		problems := xpdl.Validate(pkg, &xpdl.ValidateOpts{Deployed: others})
		if !problems.HasErrors() {
			rewritten, steps, err := xpdl.Rewrite(pkg)
			if err != nil {
				problems = append(problems, xpdl.RewriteProblems(err)...)
				slices.SortStableFunc(problems, func(a, b xpdl.Problem) int {
					return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
				})
			} else if explain {
				reports[i].Explain = xpdl.Explain(rewritten, steps)
			}
		}
		reports[i].Problems = problems
	}
	for i := range reports {
		r := &reports[i]
		if r.Problems == nil {
			r.Problems = xpdl.Problems{} // "problems": [] rather than null
		}
		r.Errors = len(r.Problems.Errors())
		r.Warnings = len(r.Problems.Warnings())
		r.Valid = r.Error == "" && r.Errors == 0
	}
	return reports, pkgs
}

// loadDeployment loads and validates files as one deployment, as validate
// does, for a command (cmd) that deploys them. When one cannot be read it
// says why and returns exitUsage; when some are invalid it prints their
// errors (FILE:LINE:COL: message) and returns exitProblems.
func loadDeployment(cmd string, files []string, stderr io.Writer) ([]*xpdl.Package, int) {
	reports, pkgs := validateDeployment(files, false)
	for _, r := range reports {
		if r.Error != "" {
			printErr(stderr, "goxpdl %s: %s: %s\n", cmd, r.File, r.Error)
			return nil, exitUsage
		}
	}
	code := exitOK
	for _, r := range reports {
		for _, p := range r.Problems.Errors() {
			printErr(stderr, "%s\n", p)
			code = exitProblems
		}
	}
	return pkgs, code
}

// ioMessage says why a file could not be read. The error of Load names
// the file relative to its directory, so only the cause is kept; the
// caller prefixes the name as the user wrote it.
func ioMessage(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err.Error()
	}
	return err.Error()
}

// summary is the one-line verdict on a file, e.g. "valid (2 warnings)" or
// "3 errors, 1 warning".
func summary(r fileReport) string {
	switch {
	case r.Error != "":
		return r.Error
	case r.Valid && r.Warnings == 0:
		return "valid"
	case r.Valid:
		return "valid (" + count(r.Warnings, "warning") + ")"
	case r.Warnings == 0:
		return count(r.Errors, "error")
	}
	return count(r.Errors, "error") + ", " + count(r.Warnings, "warning")
}

// count formats n with noun, plural when n is not 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
