package main

import (
	"errors"
	"flag"
	"io"

	"github.com/goxpdl/goxpdl/xpdl"
)

// convertUsage is the full usage text of "goxpdl convert".
const convertUsage = `Usage: goxpdl convert FILE

Convert reads an XPDL file of any version the reader knows (1.0, 2.0,
2.1, 2.2) and writes it to standard output as XPDL 2.2: the same model,
read back (docs/xpdl-support.md, "Writing XPDL 2.2", says what changes
in the conversion). It does not validate; run goxpdl validate for that.

Exit status:

	0  written
	1  the file is not XPDL (malformed, not a Package, over a limit),
	   reported as FILE:LINE:COL: message on standard error, or holds
	   what XPDL cannot carry (text with characters XML does not allow)
	2  usage error, or the file cannot be read
`

// convertShortUsage follows a usage error.
const convertShortUsage = `Usage: goxpdl convert FILE
Run "goxpdl help convert" for details.
`

// runConvert implements "goxpdl convert".
func runConvert(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("convert", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeOut(stdout, stderr, convertUsage, exitOK)
		}
		printErr(stderr, "%s", convertShortUsage)
		return exitUsage
	}
	if fset.NArg() != 1 {
		printErr(stderr, "goxpdl convert: want one file, got %d\n%s", fset.NArg(), convertShortUsage)
		return exitUsage
	}
	file := fset.Arg(0)
	pkg, err := xpdl.Load(file, nil)
	if err != nil {
		var syntaxErr *xpdl.SyntaxError
		if errors.As(err, &syntaxErr) {
			printErr(stderr, "%s\n", syntaxErr.Problem())
			return exitProblems
		}
		printErr(stderr, "goxpdl convert: %s: cannot read: %s\n", file, ioMessage(err))
		return exitUsage
	}
	out, err := xpdl.Marshal(pkg)
	if err != nil {
		printErr(stderr, "goxpdl convert: %s: %v\n", file, err)
		return exitProblems
	}
	return writeOut(stdout, stderr, string(out), exitOK)
}
