package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
)

const migrateUsage = `Usage: goxpdl migrate --db DSN --from PACKAGE:VERSION --to VERSION [--map OLD=NEW]... [--set NAME=VALUE]... [--dry-run] [ID...]

Migrate moves the running instances of one version of a package to
another version of it (engine.Migrate): every Running, Suspended or
Locking instance of --from, or only the instances named. Each open
activity goes to the activity with the same id in the new version, or to
the one --map names; work items, timers and arrivals at joins move with
it; variables keep their values. Each instance is checked and moved in
one step, all or nothing; an instance that cannot move is left as it was,
with every reason printed, and the others still move.

With --dry-run nothing changes: each instance's plan (or why it cannot
move) is printed (engine.PlanMigration).

Flags (before or after the ids):

	--from PKG:VER    the package and the version its instances run now
	                  (goxpdl definitions lists the versions)
	--to VER          the version of the same package to move them to
	--map OLD=NEW     an activity id of the old version and the id it has
	                  in the new one (repeatable)
	--set NAME=VALUE  a variable to set in the same step (repeatable),
	                  parsed by its type in the new version
	--dry-run         plan only
` + opUsage + `
Exit status: 0 every instance was migrated (or, with --dry-run, can be);
1 some instance could not be (each reason on standard error) or the
versions do not exist; 2 usage error, or the database cannot be used.
`

const migrateShortUsage = "usage: goxpdl migrate --db DSN --from PACKAGE:VERSION --to VERSION [--map OLD=NEW]... [--set NAME=VALUE]... [--dry-run] [ID...]\n"

// migrateRow is what migrate did, or would do, to one instance.
type migrateRow struct {
	Instance int64                 `json:"instance"`
	Migrated bool                  `json:"migrated"`
	Plan     *engine.MigrationPlan `json:"plan,omitempty"`
	Error    string                `json:"error,omitempty"`
}

func runMigrate(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o opFlags
	mapping, sets := pairFlags{}, pairFlags{}
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	o.register(fs)
	from := fs.String("from", "", "PACKAGE:VERSION")
	to := fs.Int("to", 0, "VERSION")
	fs.Var(mapping, "map", "OLD=NEW")
	fs.Var(sets, "set", "NAME=VALUE")
	dryRun := fs.Bool("dry-run", false, "plan only")
	pos, code, ok := parseOp(fs, cmdSpec{name: "migrate", usage: migrateUsage, short: migrateShortUsage, args: anyArgs}, &o, args, stdout, stderr)
	if !ok {
		return code
	}
	pkg, fromText, found := strings.Cut(*from, ":")
	fromVersion, err := strconv.Atoi(fromText)
	switch {
	case !found || pkg == "" || err != nil || fromVersion <= 0:
		printErr(stderr, "goxpdl migrate: --from %q: want PACKAGE:VERSION\n%s", *from, migrateShortUsage)
		return exitUsage
	case *to <= 0:
		printErr(stderr, "goxpdl migrate: --to VERSION is required (a version number of the package)\n%s", migrateShortUsage)
		return exitUsage
	}
	var ids []int64
	for _, p := range pos {
		id, err := parseID("instance", p)
		if err != nil {
			printErr(stderr, "goxpdl migrate: %v\n%s", err, migrateShortUsage)
			return exitUsage
		}
		ids = append(ids, id)
	}
	ctx, s, code := openSession("migrate", &o, stderr)
	if s == nil {
		return code
	}
	defer s.close()
	src, err := versionOf(ctx, s.e, pkg, fromVersion)
	if err != nil {
		return s.refusal(err)
	}
	dst, err := versionOf(ctx, s.e, pkg, *to)
	if err != nil {
		return s.refusal(err)
	}
	if ids == nil {
		if ids, err = openInstancesOf(ctx, s.e, src.ID); err != nil {
			return s.refusal(err)
		}
	}
	m := engine.Migration{To: dst.ID, Activities: mapping, Variables: engine.Values{TextVariables: sets}}
	rows := []migrateRow{}
	var b strings.Builder
	code = exitOK
	for _, id := range ids {
		row := migrateRow{Instance: id}
		plan, err := s.e.PlanMigration(ctx, id, m)
		if err == nil && plan.From != src.ID {
			err = fmt.Errorf("%w: instance %d runs definition %d, not %s version %d", engine.ErrNotFound, id, plan.From, pkg, fromVersion)
		}
		if err == nil && !*dryRun {
			err = s.e.Migrate(ctx, id, m, o.op())
		}
		if err != nil {
			row.Error = describeErr(explain(err, id, 0))
			if !refused(err) {
				return s.refusal(err)
			}
			printErr(stderr, "goxpdl migrate: %s\n", row.Error)
			code = exitRefused
		} else {
			row.Plan, row.Migrated = &plan, !*dryRun
			verb := "migrated"
			if *dryRun {
				verb = "can migrate"
			}
			fmt.Fprintf(&b, "instance %d: %s from %s version %d to version %d", id, verb, pkg, plan.FromVersion, plan.ToVersion)
			var moves []string
			for _, a := range plan.Activities {
				if a.From != a.To {
					moves = append(moves, fmt.Sprintf("%d %s -> %s", a.ActivityInstance, a.From, a.To))
				}
			}
			if len(moves) > 0 {
				fmt.Fprintf(&b, "; activities %s", strings.Join(moves, ", "))
			}
			if len(plan.NewVariables) > 0 {
				fmt.Fprintf(&b, "; new variables %s", strings.Join(plan.NewVariables, ", "))
			}
			b.WriteString("\n")
		}
		rows = append(rows, row)
	}
	if len(ids) == 0 {
		fmt.Fprintf(&b, "no running instance of %s version %d\n", pkg, fromVersion)
	}
	if c := s.settle(ctx); c != exitOK {
		code = c
	}
	return printResult(stdout, stderr, o.json, map[string]any{"from": src.ID, "to": dst.ID, "dry_run": *dryRun, "instances": rows}, b.String(), code)
}
