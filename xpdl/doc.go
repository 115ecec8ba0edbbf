// Package xpdl reads, checks, builds and writes XPDL process definitions.
//
// One model, Package, holds a definition whatever XPDL version it came
// from (1.0, 2.0, 2.1, 2.2); the engine runs that model. Around it:
//
//   - Read and Load read XPDL (Load also the ExternalPackages a file
//     references) and fail only on what is not XPDL at all (*SyntaxError);
//   - Validate reports every problem of a package at once, typed
//     (Problem.Code), within its definition limits (Limits);
//   - Rewrite makes the deploy-time rewrites of loop entries and races in
//     loops, and Explain shows the result;
//   - NewPackage and NewProcess build a package in Go: the model Read makes
//     of the equivalent XPDL 2.2 file, checked by Build as a file is;
//   - Write and Marshal write any package as XPDL 2.2, which Read reads
//     back into the same model.
//
// The package is pure: no database, clock, goroutine or file other than
// the ones Load is asked to read. docs/xpdl-support.md says construct by
// construct what is read and what is checked; docs/builder.md shows the
// builders and what writing XPDL 2.2 keeps and converts.
package xpdl
