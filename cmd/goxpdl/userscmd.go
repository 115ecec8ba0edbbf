package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/term"

	"github.com/goxpdl/goxpdl/console/users"
)

const usersUsage = `Usage:

	goxpdl users add FILE NAME --role viewer|operator|admin [--cost N]
	goxpdl users remove FILE NAME
	goxpdl users list FILE

Users edits the users file of "goxpdl serve --users FILE": one user a
line, NAME:ROLE:BCRYPT-HASH (docs/serve.md).

	add     adds the user, or gives an existing one a new password and
	        role. The password is read from standard input: asked for
	        twice, without echo, on a terminal; otherwise the first line.
	        The file is created (mode 0600) when missing; other lines and
	        comments are kept
	remove  deletes the user's line
	list    prints each user's name and role

Roles: viewer reads every page; operator also acts on instances,
activities, work items and incidents; admin may also deploy, migrate, run
bulk actions, purge, recover and release locks.

Flags (before or after the arguments):

	--role R    add: the user's role (required)
	--cost N    add: bcrypt's cost, 4 to 31 (default 10); each step
	            doubles the time a login takes

Exit status: 0 done; 1 refused (a bad name, role or password, an unknown
user to remove, a users file with problems, named FILE:LINE); 2 usage
error, or the file cannot be read or written.
`

const usersShortUsage = "usage: goxpdl users add|remove|list FILE [NAME] [--role R] [--cost N]\n"

func runUsers(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("users", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printErr(stderr, "%s", usersShortUsage) }
	role := fs.String("role", "", "viewer|operator|admin")
	cost := fs.Int("cost", bcrypt.DefaultCost, "bcrypt cost")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return writeOut(stdout, stderr, usersUsage, exitOK)
		}
		return exitUsage
	}
	want := map[string]int{"add": 3, "remove": 3, "list": 2}
	if len(pos) == 0 || want[pos[0]] == 0 {
		printErr(stderr, "goxpdl users: want a subcommand: add, remove or list\n%s", usersShortUsage)
		return exitUsage
	}
	sub := pos[0]
	if len(pos) != want[sub] {
		printErr(stderr, "goxpdl users %s: want %d argument%s, got %d\n%s", sub, want[sub]-1, plural(want[sub]-1), len(pos)-1, usersShortUsage)
		return exitUsage
	}
	if sub != "add" && (*role != "" || *cost != bcrypt.DefaultCost) {
		printErr(stderr, "goxpdl users %s: --role and --cost are for add\n", sub)
		return exitUsage
	}
	file := pos[1]
	switch sub {
	case "list":
		return usersList(file, stdout, stderr)
	case "remove":
		if err := users.Remove(file, pos[2]); err != nil {
			return usersFailed("remove", err, stderr)
		}
		return writeOut(stdout, stderr, fmt.Sprintf("removed %s from %s\n", pos[2], file), exitOK)
	}
	return usersAdd(file, pos[2], *role, *cost, stdin, stdout, stderr)
}

// usersAdd implements "goxpdl users add".
func usersAdd(file, name, roleText string, cost int, stdin io.Reader, stdout, stderr io.Writer) int {
	if roleText == "" {
		printErr(stderr, "goxpdl users add: --role is required: viewer, operator or admin\n")
		return exitUsage
	}
	if cost < bcrypt.MinCost || cost > bcrypt.MaxCost {
		printErr(stderr, "goxpdl users add: --cost %d: want %d to %d\n", cost, bcrypt.MinCost, bcrypt.MaxCost)
		return exitUsage
	}
	role, err := users.ParseRole(roleText)
	if err != nil {
		printErr(stderr, "goxpdl users add: %v\n", err)
		return exitRefused
	}
	if err := users.CheckName(name); err != nil {
		printErr(stderr, "goxpdl users add: %v\n", err)
		return exitRefused
	}
	password, code := readPassword(name, stdin, stderr)
	if code != exitOK {
		return code
	}
	hash, err := users.Hash(password, cost)
	if err != nil {
		printErr(stderr, "goxpdl users add: %v\n", err)
		return exitRefused
	}
	replaced, err := users.Put(file, name, role, hash)
	if err != nil {
		return usersFailed("add", err, stderr)
	}
	verb := "added"
	if replaced {
		verb = "updated"
	}
	return writeOut(stdout, stderr, fmt.Sprintf("%s %s (%s) in %s\n", verb, name, role, file), exitOK)
}

// readPassword reads the new password of name: on a terminal twice,
// without echo; otherwise the first line of stdin.
func readPassword(name string, stdin io.Reader, stderr io.Writer) ([]byte, int) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		printErr(stderr, "Password for %s: ", name)
		first, err := term.ReadPassword(int(f.Fd()))
		printErr(stderr, "\n")
		if err != nil {
			printErr(stderr, "goxpdl users add: read password: %v\n", err)
			return nil, exitUsage
		}
		printErr(stderr, "Again: ")
		second, err := term.ReadPassword(int(f.Fd()))
		printErr(stderr, "\n")
		if err != nil {
			printErr(stderr, "goxpdl users add: read password: %v\n", err)
			return nil, exitUsage
		}
		if !bytes.Equal(first, second) {
			printErr(stderr, "goxpdl users add: the passwords differ; nothing changed\n")
			return nil, exitRefused
		}
		return first, exitOK
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 1024)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		printErr(stderr, "goxpdl users add: read password from standard input: %v\n", err)
		return nil, exitUsage
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		printErr(stderr, "goxpdl users add: no password on standard input (its first line is the password)\n")
		return nil, exitRefused
	}
	return []byte(line), exitOK
}

// usersList implements "goxpdl users list".
func usersList(file string, stdout, stderr io.Writer) int {
	f, err := users.Load(file)
	if err != nil {
		return usersFailed("list", err, stderr)
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "NAME\tROLE")
	for _, u := range f.Users() {
		_, _ = fmt.Fprintf(w, "%s\t%s\n", u.Name, u.Role)
	}
	_ = w.Flush()
	return writeOut(stdout, stderr, b.String(), exitOK)
}

// usersFailed reports err of users SUB: 1 for a refusal (bad content, an
// unknown user), 2 for an I/O error.
func usersFailed(sub string, err error, stderr io.Writer) int {
	printErr(stderr, "goxpdl users %s: %v\n", sub, err)
	for _, refusal := range []error{users.ErrInvalidFile, users.ErrUnknownUser, users.ErrBadName, users.ErrBadRole, users.ErrBadPassword} {
		if errors.Is(err, refusal) {
			return exitRefused
		}
	}
	return exitUsage
}
