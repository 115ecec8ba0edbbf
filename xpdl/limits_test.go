package xpdl_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// limitNames lists the fields of xpdl.Limits, so that a new limit cannot
// go untested.
func limitNames(tb testing.TB) []string {
	tb.Helper()
	typ := reflect.TypeFor[xpdl.Limits]()
	names := make([]string, typ.NumField())
	for i := range names {
		names[i] = typ.Field(i).Name
	}
	require.Len(tb, names, 14)
	return names
}

// limitOf returns the value of the named limit.
func limitOf(l xpdl.Limits, name string) int {
	return int(reflect.ValueOf(l).FieldByName(name).Int())
}

// withLimit returns limits with the named one set to n, the others zero.
func withLimit(name string, n int) *xpdl.Limits {
	var l xpdl.Limits
	reflect.ValueOf(&l).Elem().FieldByName(name).SetInt(int64(n))
	return &l
}

func readString(tb testing.TB, src string) *xpdl.Package {
	tb.Helper()
	pkg, err := xpdl.Read(strings.NewReader(src), &xpdl.ReadOpts{Name: "sized.xpdl"})
	require.NoError(tb, err)
	return pkg
}

// TestLimits checks every definition limit, at its default and at a small
// value: a package at the limit is within it and valid, and one just over
// it is refused with a *LimitError naming the limit, its value and the
// count, which Validate reports alone, as a "limit" problem.
func TestLimits(t *testing.T) {
	t.Parallel()
	defaults := xpdl.DefaultLimits()
	for _, name := range limitNames(t) {
		for _, at := range []struct {
			label  string
			limits *xpdl.Limits
			max    int
		}{
			{"default", nil, limitOf(defaults, name)},
			{"small", withLimit(name, 20), 20},
		} {
			t.Run(name+"/"+at.label, func(t *testing.T) {
				t.Parallel()
				within := readString(t, xpdltest.Sized(name, at.max))
				require.NoError(t, xpdl.CheckLimits(within, at.limits))
				problems := xpdl.Validate(within, &xpdl.ValidateOpts{Limits: at.limits})
				require.False(t, problems.HasErrors(), "%v", problems)

				over := readString(t, xpdltest.Sized(name, at.max+1))
				err := xpdl.CheckLimits(over, at.limits)
				require.ErrorIs(t, err, xpdl.ErrLimit)
				require.ErrorIs(t, err, xpdl.ErrInvalid)
				var le *xpdl.LimitError
				require.ErrorAs(t, err, &le)
				require.Equal(t, name, le.Limit)
				require.Equal(t, at.max, le.Max)
				require.Equal(t, at.max+1, le.Count)
				require.Equal(t, "sized.xpdl", le.File)
				require.NotZero(t, le.Pos.Line, "a limit error has a position")
				require.NotEmpty(t, le.IDs)
				require.Contains(t, le.Msg, fmt.Sprintf("%d", at.max+1))
				require.Contains(t, le.Msg, fmt.Sprintf("more than the limit of %d (Limits.%s)", at.max, name))
				require.Equal(t, fmt.Sprintf("sized.xpdl:%d:%d: %s", le.Pos.Line, le.Pos.Col, le.Msg), le.Error())

				problems = xpdl.Validate(over, &xpdl.ValidateOpts{Limits: at.limits})
				require.Len(t, problems.Errors(), 1, "%v", problems)
				require.Equal(t, le.Problem(), problems.Errors()[0])
				require.Equal(t, "limit", le.Problem().Code)
				require.ErrorAs(t, problems.Err(), new(*xpdl.ValidationError))
			})
		}
	}
}

// TestLimitsWhere checks the position and words of the limit errors that
// point at a process, an activity and an expression.
func TestLimitsWhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, limit string
		n           int
		want        string
	}{
		{"process", "Activities", 4, `sized.xpdl:11:22: process "p" has 4 activities (its activity sets' included), more than the limit of 3 (Limits.Activities)`},
		{"package", "Processes", 4, `sized.xpdl:2:1: package "pkg" has 4 processes, more than the limit of 3 (Limits.Processes)`},
		{"nesting", "Nesting", 4, `activity "a" has 4 levels of block activities, more than the limit of 3 (Limits.Nesting)`},
		{"condition", "ExpressionBytes", 16, `transition "t1": the condition is 16 bytes long, more than the limit of 15 (Limits.ExpressionBytes)`},
		{"id", "IDBytes", 100, `activity "` + strings.Repeat("a", 64) + `…": the id is 100 bytes long, more than the limit of 99 (Limits.IDBytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pkg := readString(t, xpdltest.Sized(tc.limit, tc.n))
			err := xpdl.CheckLimits(pkg, withLimit(tc.limit, tc.n-1))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestLimitsDefaults(t *testing.T) {
	t.Parallel()
	var zero xpdl.Limits
	require.Equal(t, xpdl.DefaultLimits(), zero.WithDefaults())
	d := xpdl.DefaultLimits()
	for _, name := range limitNames(t) {
		require.Positive(t, limitOf(d, name), name)
	}
	require.Equal(t, xpdl.DefaultMaxActivities, d.Activities)
	require.Equal(t, 255, d.IDBytes)
	custom := xpdl.Limits{Activities: 7, Nesting: -1}.WithDefaults()
	require.Equal(t, 7, custom.Activities)
	require.Equal(t, xpdl.DefaultMaxNesting, custom.Nesting, "a negative limit takes the default")
}

// TestBlockRecursion: an activity set that runs itself through a
// BlockActivity, directly or through another set, is an error.
func TestBlockRecursion(t *testing.T) {
	t.Parallel()
	set := func(id, block string) string {
		return `<ActivitySet Id="` + id + `"><Activities><Activity Id="` + strings.ToLower(id) + `"><BlockActivity BlockId="` + block + `"/></Activity></Activities></ActivitySet>`
	}
	for _, tc := range []struct{ name, sets string }{
		{"itself", set("S", "S")},
		{"through another", set("S", "T") + set("T", "S")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pkg := readString(t, xpdltest.Package(xpdltest.Process("p", "<ActivitySets>"+tc.sets+"</ActivitySets>",
				xpdltest.Activity("a", `<BlockActivity BlockId="S"/>`, "", ""), "")))
			require.NoError(t, xpdl.CheckLimits(pkg, nil), "a recursion is the validator's to refuse")
			errs := xpdl.Validate(pkg, nil).Errors()
			require.Len(t, errs, 1, "%v", errs)
			require.Equal(t, "block-recursion", errs[0].Code)
			require.Contains(t, errs[0].Message, "nest without end")
		})
	}
}
