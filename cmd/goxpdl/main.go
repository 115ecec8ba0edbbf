// Command goxpdl is the command-line program of the goxpdl workflow engine.
//
// Usage:
//
//	goxpdl <command> [arguments]
//
// Run "goxpdl help" for the list of commands, and "goxpdl help <command>"
// for the flags and exit codes of one. The commands, flags, exit codes and
// output formats are a stable interface; the README describes them.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
