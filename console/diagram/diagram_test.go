package diagram_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console/diagram"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

func readFile(t *testing.T, name string) *xpdl.Package {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	pkg, err := xpdl.Read(f, &xpdl.ReadOpts{Name: name})
	require.NoError(t, f.Close())
	require.NoError(t, err)
	return pkg
}

// TestGolden draws small processes with and without coordinates and
// compares the SVG with testdata/*.svg (-update rewrites them; review the
// diff and look at the pictures).
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden, file string
		opts         diagram.Options
		source       diagram.Source
		lanes        []string
	}{
		{"order-auto.svg", "order-auto.xpdl", diagram.Options{}, diagram.SourceAuto, []string{"Manager", "Clerk"}},
		{"order-auto-set.svg", "order-auto.xpdl", diagram.Options{ActivitySet: "bill"}, diagram.SourceAuto, nil},
		{"order-jawe.svg", "order-jawe.xpdl", diagram.Options{}, diagram.SourceFile, []string{"Manager", "Clerk"}},
		{"order-jawe-auto.svg", "order-jawe.xpdl", diagram.Options{IgnoreCoordinates: true}, diagram.SourceAuto, []string{"Manager", "Clerk"}},
		{"order-xpdl2.svg", "order-xpdl2.xpdl", diagram.Options{}, diagram.SourceFile, []string{"Clerk", "Manager"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			pkg := readFile(t, tc.file)
			l, err := diagram.NewLayout(context.Background(), pkg, "order", tc.opts)
			require.NoError(t, err)
			require.Equal(t, tc.source, l.Source)
			var lanes []string
			for _, ln := range l.Lanes {
				lanes = append(lanes, ln.Name)
			}
			require.Equal(t, tc.lanes, lanes)
			flow := &pkg.Process("order").Flow
			if tc.opts.ActivitySet != "" {
				flow = &pkg.Process("order").ActivitySet(tc.opts.ActivitySet).Flow
			}
			checkLayout(t, tc.golden, l, flow)
			checkGolden(t, filepath.Join("testdata", tc.golden), l.SVG(diagram.State{}))
		})
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./console/diagram -run TestGolden -update to create it")
	require.Equal(t, string(want), string(got), "output differs from %s; if intended, rerun with -update and review the diff", path)
}

// TestJaWECoordinates checks that JaWE's lane-relative offsets are
// stacked in its participant order and its break points kept.
func TestJaWECoordinates(t *testing.T) {
	t.Parallel()
	l, err := diagram.NewLayout(context.Background(), readFile(t, "order-jawe.xpdl"), "order", diagram.Options{})
	require.NoError(t, err)
	manager, clerk := l.Lanes[0], l.Lanes[1]
	require.Equal(t, "manager", manager.ID)
	require.InDelta(t, manager.Y+manager.H, clerk.Y, 0.01)
	enter, approve, ship := l.Node("enter"), l.Node("approve"), l.Node("ship")
	require.InDelta(t, clerk.Y+30, enter.Y, 0.01, "offset inside the clerk's lane")
	require.InDelta(t, manager.Y+20, approve.Y, 0.01, "offset inside the manager's lane")
	require.InDelta(t, 320, ship.X-enter.X, 0.01)
	require.InDelta(t, 90.0, enter.W, 0.01)
	require.Len(t, l.Edges[2].Points, 3, "the break point lies between the two ends")
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	pkg := readFile(t, "order-auto.xpdl")
	_, err := diagram.NewLayout(context.Background(), pkg, "nope", diagram.Options{})
	require.ErrorIs(t, err, diagram.ErrNotFound)
	_, err = diagram.NewLayout(context.Background(), pkg, "order", diagram.Options{ActivitySet: "nope"})
	require.ErrorIs(t, err, diagram.ErrNotFound)
	_, err = diagram.NewLayout(context.Background(), nil, "order", diagram.Options{})
	require.ErrorIs(t, err, diagram.ErrNotFound)
}

// TestStateOverlay checks the classes and badges the state puts on the
// drawing.
func TestStateOverlay(t *testing.T) {
	t.Parallel()
	l, err := diagram.NewLayout(context.Background(), readFile(t, "order-auto.xpdl"), "order", diagram.Options{})
	require.NoError(t, err)
	svg := l.SVG(diagram.State{
		Activities: map[string]diagram.ActivityState{
			"enter":   {State: wftype.ActivityCompleted, Count: 1},
			"approve": {State: wftype.ActivityInActive, Count: 2, Current: true},
			"ship":    {State: wftype.ActivityAbnormal, Count: 3, Current: true},
			"billing": {State: wftype.ActivityActive},
		},
		Taken: map[string]bool{"t1": true, "big": true},
	})
	nodes, edges := svgGroups(t, svg)
	require.Equal(t, "node task completed", nodes["enter"].class)
	require.Equal(t, "1", nodes["enter"].badge)
	require.Equal(t, "node task waiting current", nodes["approve"].class)
	require.Equal(t, "2", nodes["approve"].badge)
	require.Equal(t, "node task incident current", nodes["ship"].class, "an incident is drawn with the incident class")
	require.Equal(t, "3", nodes["ship"].badge)
	require.Equal(t, "node block running", nodes["billing"].class)
	require.Equal(t, "bill", l.Node("billing").ActivitySet, "a block names the set to draw on its own")
	require.Empty(t, nodes["billing"].badge, "no badge without a count")
	require.Equal(t, "node gateway", nodes["check"].class)
	require.Equal(t, "edge taken", edges["t1"])
	require.Equal(t, "edge taken", edges["big"])
	require.Equal(t, "edge", edges["small"])
	require.Contains(t, string(svg), ".xpdl-diagram .node.incident>rect")
}

type group struct{ class, badge string }

// svgGroups returns the class and badge text of each activity's group,
// and the class of each transition's group.
func svgGroups(t *testing.T, svg []byte) (nodes map[string]group, edges map[string]string) {
	t.Helper()
	nodes, edges = map[string]group{}, map[string]string{}
	d := xml.NewDecoder(bytes.NewReader(svg))
	var cur string
	inBadge := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nodes, edges
		}
		require.NoError(t, err)
		switch tok := tok.(type) {
		case xml.StartElement:
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				attrs[a.Name.Local] = a.Value
			}
			if id, ok := attrs["data-activity"]; ok {
				cur = id
				nodes[id] = group{class: attrs["class"]}
			}
			if id, ok := attrs["data-transition"]; ok {
				edges[id] = attrs["class"]
			}
			if attrs["class"] == "badge" {
				inBadge = true
			}
		case xml.CharData:
			if inBadge && strings.TrimSpace(string(tok)) != "" {
				g := nodes[cur]
				g.badge = string(tok)
				nodes[cur] = g
			}
		case xml.EndElement:
			if tok.Name.Local == "g" {
				inBadge = false
			}
		}
	}
}

// hostile are fragments that break markup when not escaped.
var hostile = []string{
	`<script>alert(1)</script>`, `"`, `'`, `" onload="alert(1)`, `&`, `&amp;`, `]]>`, `<!--`, `-->`,
	`<![CDATA[`, `</g>`, `</svg>`, `<foreignObject>`, `javascript:`, "\x00", "\x1b", "\uFFFE", "名前", " ",
	`url(#x)`, `%s`, `{{.}}`,
}

// TestHostileNames draws processes whose ids, names, conditions and
// participants are made of hostile fragments, and checks that the SVG
// stays well-formed, holds no element or attribute the fragments could
// have injected, and carries the ids as data.
func TestHostileNames(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		var sb strings.Builder
		for range 1 + rng.IntN(4) {
			sb.WriteString(hostile[rng.IntN(len(hostile))])
		}
		return sb.String()
	}
	for range 50 {
		p := &xpdl.Package{ID: "p", Participants: []*xpdl.Participant{{ID: "r", Name: word()}}}
		proc := &xpdl.Process{ID: word(), Name: word()}
		a := &xpdl.Activity{ID: word(), Name: word(), Kind: xpdl.ActivityNo, Performers: []string{"r"}}
		b := &xpdl.Activity{ID: word() + "b", Name: word(), Kind: xpdl.ActivityRoute, Performers: []string{word()}}
		proc.Activities = []*xpdl.Activity{a, b}
		proc.Transitions = []*xpdl.Transition{{ID: word(), From: a.ID, To: b.ID, Name: word(),
			Condition: &xpdl.Condition{Type: xpdl.ConditionCondition, Expression: xpdl.Expression{Text: word()}}}}
		p.Processes = []*xpdl.Process{proc}
		pkg := roundTrip(t, p)
		proc = pkg.Processes[0]
		l, err := diagram.NewLayout(context.Background(), pkg, proc.ID, diagram.Options{})
		require.NoError(t, err)
		svg := l.SVG(diagram.State{Activities: map[string]diagram.ActivityState{proc.Activities[0].ID: {State: wftype.ActivityAbnormal, Count: 1}}})
		activities, transitions := svgIDs(t, svg)
		require.Equal(t, []string{proc.Activities[0].ID, proc.Activities[1].ID}, activities)
		require.Equal(t, []string{proc.Transitions[0].ID}, transitions)
		d := xml.NewDecoder(bytes.NewReader(svg))
		for {
			tok, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			switch tok := tok.(type) {
			case xml.StartElement:
				require.NotContains(t, []string{"script", "foreignObject"}, tok.Name.Local)
				for _, at := range tok.Attr {
					require.False(t, strings.HasPrefix(strings.ToLower(at.Name.Local), "on"), "no event handler attribute %s", at.Name.Local)
				}
			case xml.Comment, xml.ProcInst, xml.Directive:
				t.Fatalf("unexpected %T in %s", tok, svg)
			}
		}
	}
}

// roundTrip builds the package through the reader, as an upload would:
// the model's indexes are built by xpdl.Read only. Text is written with
// XML escaping, so what the reader returns is the hostile text itself
// (less what XML cannot hold at all).
func roundTrip(t *testing.T, p *xpdl.Package) *xpdl.Package {
	t.Helper()
	esc := func(s string) string {
		var b bytes.Buffer
		require.NoError(t, xml.EscapeText(&b, []byte(s)))
		return b.String()
	}
	proc := p.Processes[0]
	var sb strings.Builder
	sb.WriteString(`<?xml version="1.0" encoding="UTF-8"?><Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="p"><Participants>`)
	sb.WriteString(`<Participant Id="r" Name="` + esc(p.Participants[0].Name) + `"><ParticipantType Type="ROLE"/></Participant></Participants>`)
	sb.WriteString(`<WorkflowProcesses><WorkflowProcess Id="` + esc(proc.ID) + `" Name="` + esc(proc.Name) + `"><Activities>`)
	a, b := proc.Activities[0], proc.Activities[1]
	sb.WriteString(`<Activity Id="` + esc(a.ID) + `" Name="` + esc(a.Name) + `"><Implementation><No/></Implementation><Performer>r</Performer></Activity>`)
	sb.WriteString(`<Activity Id="` + esc(b.ID) + `" Name="` + esc(b.Name) + `"><Route/><Performer>` + esc(b.Performers[0]) + `</Performer></Activity>`)
	tr := proc.Transitions[0]
	sb.WriteString(`</Activities><Transitions><Transition Id="` + esc(tr.ID) + `" From="` + esc(tr.From) + `" To="` + esc(tr.To) + `" Name="` + esc(tr.Name) + `">`)
	sb.WriteString(`<Condition Type="CONDITION">` + esc(tr.Condition.Expression.Text) + `</Condition></Transition></Transitions></WorkflowProcess></WorkflowProcesses></Package>`)
	pkg, err := xpdl.Read(strings.NewReader(sb.String()), nil)
	if err != nil {
		// Text XML cannot hold (a NUL, U+FFFE): the reader refuses the
		// upload, so there is nothing to draw; use the ids without it.
		clean := func(s string) string {
			return strings.Map(func(r rune) rune {
				if r == 0 || r == 0x1b || r == 0xFFFE {
					return -1
				}
				return r
			}, s)
		}
		for _, x := range []*string{&p.Participants[0].Name, &proc.ID, &proc.Name, &a.ID, &a.Name, &b.ID, &b.Name, &b.Performers[0],
			&tr.ID, &tr.Name, &tr.Condition.Expression.Text} {
			*x = clean(*x)
		}
		tr.From, tr.To = a.ID, b.ID
		return roundTrip(t, p)
	}
	return pkg
}
