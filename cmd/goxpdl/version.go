package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// versionUsage is the full usage text of "goxpdl version".
const versionUsage = `Usage: goxpdl version [--json]

Version prints the goxpdl module version this program was built from
("(devel)" for a build inside the repository), the version control
revision, its time and whether the work tree had changes, when the build
recorded them, and the Go version and platform.

	--json   one JSON object: module, version, revision, time, modified,
	         go, platform (revision, time and modified only when known)

Exit status: 0, or 2 on a usage error.
`

// versionInfo is what "goxpdl version" reports.
type versionInfo struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified *bool  `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// readVersion describes the program from its build information; ok is
// false when the binary carries none.
func readVersion(bi *debug.BuildInfo, ok bool) versionInfo {
	v := versionInfo{Module: "github.com/goxpdl/goxpdl", Version: "unknown", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok || bi == nil {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			modified := s.Value == "true"
			v.Modified = &modified
		}
	}
	return v
}

// String is the text form: the version, then one line per known fact.
func (v versionInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "goxpdl %s\nmodule   %s\n", v.Version, v.Module)
	if v.Revision != "" {
		fmt.Fprintf(&b, "revision %s", v.Revision)
		if v.Modified != nil && *v.Modified {
			b.WriteString(" (modified)")
		}
		b.WriteByte('\n')
	}
	if v.Time != "" {
		fmt.Fprintf(&b, "time     %s\n", v.Time)
	}
	fmt.Fprintf(&b, "go       %s %s\n", v.Go, v.Platform)
	return b.String()
}

func runVersion(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printErr(stderr, "%s", versionUsage) }
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeOut(stdout, stderr, versionUsage, exitOK)
		}
		return exitUsage
	}
	if fs.NArg() != 0 {
		printErr(stderr, "goxpdl version: unexpected argument %q\n%s", fs.Arg(0), versionUsage)
		return exitUsage
	}
	v := readVersion(debug.ReadBuildInfo())
	if !*asJSON {
		return writeOut(stdout, stderr, v.String(), exitOK)
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		printErr(stderr, "goxpdl version: %v\n", err)
		return exitUsage
	}
	return writeOut(stdout, stderr, string(data)+"\n", exitOK)
}
