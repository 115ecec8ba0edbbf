package xpdl_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// The tests of Rewrite describe processes compactly and build minimal
// XPDL 1.0 from the description (buildXPDL), so that each case reads as
// its graph.
//
// Activities are separated by spaces, each an id with options after a
// colon, separated by commas:
//
//	route      a Route (otherwise Implementation/No)
//	and        a declared AND split     xor    a declared XOR join
//	andjoin    a declared AND join      r+ r-  Reentrant="true" / "false"
//	block=SET  a BlockActivity running activity set SET
//	start=ID   with StartActivityId ID
//
// Transitions are separated by spaces: "a>b" (id "a-b"), "a>b?cond" with
// the condition cond, "a>b!" OTHERWISE.
type flowSpec struct{ acts, trans string }

type setSpec struct {
	id string
	flowSpec
}

type procSpec struct {
	id string
	flowSpec
	sets []setSpec
}

func buildXPDL(procs ...procSpec) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="pkg">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion></PackageHeader>
  <DataFields><DataField Id="shared"><DataType><BasicType Type="STRING"/></DataType></DataField></DataFields>
  <WorkflowProcesses>
`)
	for _, p := range procs {
		fmt.Fprintf(&b, "    <WorkflowProcess Id=%q>\n", p.id)
		b.WriteString(`      <DataFields><DataField Id="again"><DataType><BasicType Type="BOOLEAN"/></DataType></DataField></DataFields>` + "\n")
		if len(p.sets) > 0 {
			b.WriteString("      <ActivitySets>\n")
			for _, s := range p.sets {
				fmt.Fprintf(&b, "        <ActivitySet Id=%q>\n", s.id)
				writeFlow(&b, s.flowSpec)
				b.WriteString("        </ActivitySet>\n")
			}
			b.WriteString("      </ActivitySets>\n")
		}
		writeFlow(&b, p.flowSpec)
		b.WriteString("    </WorkflowProcess>\n")
	}
	b.WriteString("  </WorkflowProcesses>\n</Package>\n")
	return b.String()
}

func writeFlow(b *strings.Builder, f flowSpec) {
	b.WriteString("<Activities>\n")
	for _, spec := range strings.Fields(f.acts) {
		id, opts, _ := strings.Cut(spec, ":")
		body, join, split, attrs := "<Implementation><No/></Implementation>", "", "", ""
		for opt := range strings.SplitSeq(opts, ",") {
			key, val, _ := strings.Cut(opt, "=")
			switch key {
			case "":
			case "route":
				body = "<Route/>"
			case "block":
				body = fmt.Sprintf("<BlockActivity BlockId=%q/>", val)
			case "start":
				body = strings.Replace(body, "/>", fmt.Sprintf(" StartActivityId=%q/>", val), 1)
			case "and":
				split = `<Split Type="AND"/>`
			case "xor":
				join = `<Join Type="XOR"/>`
			case "andjoin":
				join = `<Join Type="AND"/>`
			case "r+", "r-":
				attrs = fmt.Sprintf(`<ExtendedAttributes><ExtendedAttribute Name="Reentrant" Value="%t"/></ExtendedAttributes>`, key == "r+")
			default:
				panic("unknown activity option " + opt)
			}
		}
		fmt.Fprintf(b, "<Activity Id=%q>%s", id, body)
		if join != "" || split != "" {
			fmt.Fprintf(b, "<TransitionRestrictions><TransitionRestriction>%s%s</TransitionRestriction></TransitionRestrictions>", join, split)
		}
		b.WriteString(attrs + "</Activity>\n")
	}
	b.WriteString("</Activities>\n<Transitions>\n")
	for _, spec := range strings.Fields(f.trans) {
		cond := ""
		switch {
		case strings.HasSuffix(spec, "!"):
			spec = strings.TrimSuffix(spec, "!")
			cond = `<Condition Type="OTHERWISE"/>`
		case strings.Contains(spec, "?"):
			var c string
			spec, c, _ = strings.Cut(spec, "?")
			cond = fmt.Sprintf(`<Condition Type="CONDITION">%s</Condition>`, c)
		}
		from, to, ok := strings.Cut(spec, ">")
		if !ok {
			panic("bad transition " + spec)
		}
		fmt.Fprintf(b, "<Transition Id=%q From=%q To=%q>%s</Transition>\n", from+"-"+to, from, to, cond)
	}
	b.WriteString("</Transitions>\n")
}

func readSpec(t testing.TB, procs ...procSpec) *xpdl.Package {
	t.Helper()
	pkg, err := xpdl.Read(strings.NewReader(buildXPDL(procs...)), &xpdl.ReadOpts{Name: "test.xpdl"})
	require.NoError(t, err)
	return pkg
}

// renderFlows renders every process's flows compactly: one line of
// activities, with their kind, gateways, Reentrant and generated mark in
// brackets, and one of transitions.
func renderFlows(pkg *xpdl.Package) string {
	var b strings.Builder
	for _, p := range pkg.Processes {
		b.WriteString("process " + p.ID)
		if p.IsGenerated() {
			b.WriteString(" [gen]")
		}
		if len(p.FormalParameters) > 0 {
			var params []string
			for _, fp := range p.FormalParameters {
				params = append(params, string(fp.Mode)+" "+fp.ID)
			}
			b.WriteString(" (" + strings.Join(params, ", ") + ")")
		}
		b.WriteByte('\n')
		renderFlow(&b, "", &p.Flow)
		for _, s := range p.ActivitySets {
			renderFlow(&b, "set "+s.ID+" ", &s.Flow)
		}
	}
	return b.String()
}

func renderFlow(b *strings.Builder, prefix string, f *xpdl.Flow) {
	var acts, trans []string
	for _, a := range f.Activities {
		var notes []string
		switch a.Kind {
		case xpdl.ActivityNo:
		case xpdl.ActivitySubFlow:
			notes = append(notes, "SubFlow "+a.SubFlow.Process)
		case xpdl.ActivityBlock:
			s := "Block " + a.Block.ActivitySet
			if a.Block.StartActivity != "" {
				s += "@" + a.Block.StartActivity
			}
			notes = append(notes, s)
		default:
			notes = append(notes, string(a.Kind))
		}
		if a.Join.Type != xpdl.GatewayNone {
			notes = append(notes, "join="+string(a.Join.Type))
		}
		if a.Split.Type != xpdl.GatewayNone {
			notes = append(notes, "split="+string(a.Split.Type))
		}
		if a.Reentrant != nil {
			notes = append(notes, map[bool]string{true: "r+", false: "r-"}[*a.Reentrant])
		}
		if a.IsGenerated() {
			notes = append(notes, "gen")
		}
		s := a.ID
		if len(notes) > 0 {
			s += "[" + strings.Join(notes, " ") + "]"
		}
		acts = append(acts, s)
	}
	for _, t := range f.Transitions {
		trans = append(trans, t.From+">"+t.To)
	}
	fmt.Fprintf(b, "  %sacts: %s\n  %strans: %s\n", prefix, strings.Join(acts, " "), prefix, strings.Join(trans, " "))
}

// step is the part of a RewriteStep a test states; the reason is
// checked apart.
type step struct {
	kind        xpdl.RewriteKind
	process     string
	set         string
	activities  string // space-separated
	transitions string
	generated   string
}

func stepsOf(steps []xpdl.RewriteStep) []step {
	if len(steps) == 0 {
		return nil
	}
	out := make([]step, len(steps))
	for i, s := range steps {
		out[i] = step{
			kind: s.Kind, process: s.Process, set: s.ActivitySet,
			activities: strings.Join(s.Activities, " "), transitions: strings.Join(s.Transitions, " "),
			generated: strings.Join(s.Generated, " "),
		}
	}
	return out
}

// errorCodes returns the codes and messages of a package's validation
// errors.
func errorCodes(pkg *xpdl.Package) []string {
	var out []string
	for _, p := range xpdl.Validate(pkg, nil).Errors() {
		out = append(out, p.Code+": "+p.Message)
	}
	return out
}

// checkRewritten checks what every successful Rewrite must satisfy: the
// input is unchanged, the result has no validation error the input did
// not have, and rewriting the result again changes nothing.
func checkRewritten(t *testing.T, in, out *xpdl.Package, before string) {
	t.Helper()
	require.Equal(t, before, renderFlows(in), "Rewrite changed its input")
	inErrs := errorCodes(in)
	for _, e := range errorCodes(out) {
		require.Contains(t, inErrs, e, "the rewritten package has a new validation error")
	}
	again, steps, err := xpdl.Rewrite(out)
	require.NoError(t, err)
	require.Empty(t, steps, "rewriting the rewritten package rewrote again")
	require.Same(t, out, again)
}

func TestRewrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		procs []procSpec
		steps []step
		want  string // renderFlows of the result; "" when no rewrite applies
		// reasons are substrings of the steps' reasons, one per step.
		reasons []string
	}{
		{
			name: "plain loop",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start A B end",
				trans: "start>A A>B B>A?again B>end!",
			}}},
		},
		{
			name: "race outside a loop",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S:and B1 B2 J:xor,r- end",
				trans: "start>S S>B1 S>B2 B1>J B2>J J>end",
			}}},
		},
		{
			name: "multi-merge: Reentrant true on a loop entry",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start:and x y A:r+ B end",
				trans: "start>x start>y x>A y>A A>B B>A?again B>end!",
			}}},
		},
		{
			name: "a loop entry with one arrival from outside",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start A B end",
				trans: "start>A A>B B>A?again B>end!",
			}}},
		},
		{
			name: "an AND join at a loop entry is not rewritten",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start:and x y A:andjoin B end",
				trans: "start>x start>y x>A y>A A>B B>A?again B>end!",
			}}},
		},
		{
			name: "loop entry, implicit XOR join",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start:and x y A B end",
				trans: "start>x start>y x>A y>A A>B B>A?again B>end!",
			}}},
			steps: []step{{
				kind: xpdl.RewriteLoopEntry, process: "main", activities: "A",
				transitions: "x-A y-A", generated: "A__entry A__entry__out",
			}},
			want: `process main
  acts: start[split=AND] x y A__entry[Route join=XOR r- gen] A[join=XOR] B[split=OR] end
  trans: start>x start>y x>A__entry y>A__entry A>B B>A B>end A__entry>A
`,
			reasons: []string{`activity "A" is the entry of a loop (loop-back "B-A") and also the XOR join of 2 transitions from outside it ("x-A", "y-A")`},
		},
		{
			name: "loop entry marked Reentrant false: the mark moves to the route",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start:and x y A:xor,r- B end",
				trans: "start>x start>y x>A y>A A>B B>A?again B>end!",
			}}},
			steps: []step{{
				kind: xpdl.RewriteLoopEntry, process: "main", activities: "A",
				transitions: "x-A y-A", generated: "A__entry A__entry__out",
			}},
			want: `process main
  acts: start[split=AND] x y A__entry[Route join=XOR r- gen] A[join=XOR r+] B[split=OR] end
  trans: start>x start>y x>A__entry y>A__entry A>B B>A B>end A__entry>A
`,
			reasons: []string{`its Reentrant="false" now applies to "A__entry", and "A" itself is reentrant`},
		},
		{
			name: "loop entry whose generated id is taken",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start:and x y A B A__entry",
				trans: "start>x start>y x>A y>A A>B B>A?again B>A__entry!",
			}}},
			steps: []step{{
				kind: xpdl.RewriteLoopEntry, process: "main", activities: "A",
				transitions: "x-A y-A", generated: "A__entry_2 A__entry_2__out",
			}},
			want: `process main
  acts: start[split=AND] x y A__entry_2[Route join=XOR r- gen] A[join=XOR] B[split=OR] A__entry
  trans: start>x start>y x>A__entry_2 y>A__entry_2 A>B B>A B>A__entry A__entry_2>A
`,
		},
		{
			name: "race in a loop",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S:and B1 B2 J:xor,r- C end",
				trans: "start>S S>B1 S>B2 B1>J B2>J J>C C>S?again C>end!",
			}}},
			steps: []step{{
				kind: xpdl.RewriteRace, process: "main", activities: "S B1 B2 J",
				transitions: "start-S S-B1 S-B2 B1-J B2-J J-C C-S", generated: "J__race main__race_J",
			}},
			want: `process main
  acts: start J__race[SubFlow main__race_J join=XOR gen] C[split=OR] end
  trans: start>J__race J__race>C C>J__race C>end
process main__race_J [gen] (INOUT shared, INOUT again)
  acts: S[split=AND] B1 B2 J[join=XOR r-]
  trans: S>B1 S>B2 B1>J B2>J
`,
			reasons: []string{`AND split "S" and non-reentrant XOR join "J" race on a loop`},
		},
		{
			name: "race in a loop closed straight from the join to the split",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S:and B1 B2 J:xor,r- end",
				trans: "start>S S>B1 S>B2 B1>J B2>J J>S?again J>end!",
			}}},
			steps: []step{{
				kind: xpdl.RewriteRace, process: "main", activities: "S B1 B2 J",
				transitions: "start-S S-B1 S-B2 B1-J B2-J J-S J-end", generated: "J__race main__race_J",
			}},
			want: `process main
  acts: start J__race[SubFlow main__race_J join=XOR split=OR gen] end
  trans: start>J__race J__race>J__race J__race>end
process main__race_J [gen] (INOUT shared, INOUT again)
  acts: S[split=AND] B1 B2 J[join=XOR r-]
  trans: S>B1 S>B2 B1>J B2>J
`,
		},
		{
			name: "race in a loop, the split implicit",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S B1 B2 J:xor,r- C end",
				trans: "start>S S>B1 S>B2 B1>J B2>J J>C C>S?again C>end!",
			}}},
			steps: []step{{
				kind: xpdl.RewriteRace, process: "main", activities: "S B1 B2 J",
				transitions: "start-S S-B1 S-B2 B1-J B2-J J-C C-S", generated: "J__race main__race_J",
			}},
			want: `process main
  acts: start J__race[SubFlow main__race_J join=XOR gen] C[split=OR] end
  trans: start>J__race J__race>C C>J__race C>end
process main__race_J [gen] (INOUT shared, INOUT again)
  acts: S[split=OR] B1 B2 J[join=XOR r-]
  trans: S>B1 S>B2 B1>J B2>J
`,
		},
		{
			name: "an implicit split with conditions is no race",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S B1 B2 J:xor,r- C end",
				trans: "start>S S>B1?again S>B2! B1>J B2>J J>C C>S?again C>end!",
			}}},
		},
		{
			name: "a race whose join is not marked is no race",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S:and B1 B2 J:xor C end",
				trans: "start>S S>B1 S>B2 B1>J B2>J J>C C>S?again C>end!",
			}}},
		},
		{
			name: "race in a loop inside an activity set",
			procs: []procSpec{{
				id:       "main",
				flowSpec: flowSpec{acts: "start body:block=loop end", trans: "start>body body>end"},
				sets: []setSpec{{id: "loop", flowSpec: flowSpec{
					acts:  "first S:and B1 B2 J:xor,r- C last",
					trans: "first>S S>B1 S>B2 B1>J B2>J J>C C>S?again C>last!",
				}}},
			}},
			steps: []step{{
				kind: xpdl.RewriteRace, process: "main", set: "loop", activities: "S B1 B2 J",
				transitions: "first-S S-B1 S-B2 B1-J B2-J J-C C-S", generated: "J__race main__race_J",
			}},
			want: `process main
  acts: start body[Block loop] end
  trans: start>body body>end
  set loop acts: first J__race[SubFlow main__race_J join=XOR gen] C[split=OR] last
  set loop trans: first>J__race J__race>C C>J__race C>last
process main__race_J [gen] (INOUT shared, INOUT again)
  acts: S[split=AND] B1 B2 J[join=XOR r-]
  trans: S>B1 S>B2 B1>J B2>J
`,
		},
		{
			name: "a BlockActivity that starts its set at the split starts it at the call",
			procs: []procSpec{{
				id:       "main",
				flowSpec: flowSpec{acts: "start body:block=loop,start=S end", trans: "start>body body>end"},
				sets: []setSpec{{id: "loop", flowSpec: flowSpec{
					acts:  "S:and B1 B2 J:xor,r- C last",
					trans: "S>B1 S>B2 B1>J B2>J J>C C>S?again C>last!",
				}}},
			}},
			steps: []step{{
				kind: xpdl.RewriteRace, process: "main", set: "loop", activities: "S B1 B2 J",
				transitions: "S-B1 S-B2 B1-J B2-J J-C C-S", generated: "J__race main__race_J",
			}},
			want: `process main
  acts: start body[Block loop@J__race] end
  trans: start>body body>end
  set loop acts: J__race[SubFlow main__race_J gen] C[split=OR] last
  set loop trans: J__race>C C>J__race C>last
process main__race_J [gen] (INOUT shared, INOUT again)
  acts: S[split=AND] B1 B2 J[join=XOR r-]
  trans: S>B1 S>B2 B1>J B2>J
`,
		},
		{
			name: "a race whose branches run an activity set takes the set along",
			procs: []procSpec{{
				id: "main",
				flowSpec: flowSpec{
					acts:  "start S:and B1:block=inner B2 J:xor,r- C end",
					trans: "start>S S>B1 S>B2 B1>J B2>J J>C C>S?again C>end!",
				},
				sets: []setSpec{{id: "inner", flowSpec: flowSpec{acts: "i1 i2", trans: "i1>i2"}}},
			}},
			steps: []step{{
				kind: xpdl.RewriteRace, process: "main", activities: "S B1 B2 J",
				transitions: "start-S S-B1 S-B2 B1-J B2-J J-C C-S", generated: "J__race main__race_J",
			}},
			want: `process main
  acts: start J__race[SubFlow main__race_J join=XOR gen] C[split=OR] end
  trans: start>J__race J__race>C C>J__race C>end
process main__race_J [gen] (INOUT shared, INOUT again)
  acts: S[split=AND] B1[Block inner] B2 J[join=XOR r-]
  trans: S>B1 S>B2 B1>J B2>J
  set inner acts: i1 i2
  set inner trans: i1>i2
`,
		},
		{
			name: "nested races: the outer one moves, the inner goes with it",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S1:and S2:and a b J2:xor,r- c J1:xor,r- C end",
				trans: "start>S1 S1>S2 S1>c S2>a S2>b a>J2 b>J2 J2>J1 c>J1 J1>C C>S1?again C>end!",
			}}},
			steps: []step{{
				kind: xpdl.RewriteRace, process: "main", activities: "S1 S2 a b J2 c J1",
				transitions: "start-S1 S1-S2 S1-c S2-a S2-b a-J2 b-J2 J2-J1 c-J1 J1-C C-S1",
				generated:   "J1__race main__race_J1",
			}},
			want: `process main
  acts: start J1__race[SubFlow main__race_J1 join=XOR gen] C[split=OR] end
  trans: start>J1__race J1__race>C C>J1__race C>end
process main__race_J1 [gen] (INOUT shared, INOUT again)
  acts: S1[split=AND] S2[split=AND] a b J2[join=XOR r-] c J1[join=XOR r-]
  trans: S1>S2 S1>c S2>a S2>b a>J2 b>J2 J2>J1 c>J1
`,
		},
		{
			name: "nested: a race in a loop inside a race in a loop",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S1:and S2:and a b J2:xor,r- d c J1:xor,r- C end",
				trans: "start>S1 S1>S2 S1>c S2>a S2>b a>J2 b>J2 J2>d d>S2?again d>J1! c>J1 J1>C C>S1?again C>end!",
			}}},
			steps: []step{
				{
					kind: xpdl.RewriteRace, process: "main", activities: "S1 S2 a b J2 d c J1",
					transitions: "start-S1 S1-S2 S1-c S2-a S2-b a-J2 b-J2 J2-d d-S2 d-J1 c-J1 J1-C C-S1",
					generated:   "J1__race main__race_J1",
				},
				{
					kind: xpdl.RewriteRace, process: "main__race_J1", activities: "S2 a b J2",
					transitions: "S1-S2 S2-a S2-b a-J2 b-J2 J2-d d-S2",
					generated:   "J2__race main__race_J1__race_J2",
				},
			},
			want: `process main
  acts: start J1__race[SubFlow main__race_J1 join=XOR gen] C[split=OR] end
  trans: start>J1__race J1__race>C C>J1__race C>end
process main__race_J1 [gen] (INOUT shared, INOUT again)
  acts: S1[split=AND] J2__race[SubFlow main__race_J1__race_J2 join=XOR gen] d[split=OR] c J1[join=XOR r-]
  trans: S1>J2__race S1>c J2__race>d d>J2__race d>J1 c>J1
process main__race_J1__race_J2 [gen] (INOUT shared, INOUT again)
  acts: S2[split=AND] a b J2[join=XOR r-]
  trans: S2>a S2>b a>J2 b>J2
`,
		},
		{
			name: "nested: a loop entry inside a race in a loop",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S:and x y A B z J:xor,r- C end",
				trans: "start>S S>x S>y S>z x>A y>A A>B B>A?again B>J! z>J J>C C>S?again C>end!",
			}}},
			steps: []step{
				{
					kind: xpdl.RewriteRace, process: "main", activities: "S x y A B z J",
					transitions: "start-S S-x S-y S-z x-A y-A A-B B-A B-J z-J J-C C-S",
					generated:   "J__race main__race_J",
				},
				{
					kind: xpdl.RewriteLoopEntry, process: "main__race_J", activities: "A",
					transitions: "x-A y-A", generated: "A__entry A__entry__out",
				},
			},
			want: `process main
  acts: start J__race[SubFlow main__race_J join=XOR gen] C[split=OR] end
  trans: start>J__race J__race>C C>J__race C>end
process main__race_J [gen] (INOUT shared, INOUT again)
  acts: S[split=AND] x y A__entry[Route join=XOR r- gen] A[join=XOR] B[split=OR] z J[join=XOR r-]
  trans: S>x S>y S>z x>A__entry y>A__entry A>B B>A B>J z>J A__entry>A
`,
		},
		{
			name: "two processes, rewritten in package order",
			procs: []procSpec{
				{id: "p1", flowSpec: flowSpec{
					acts:  "start:and x y A B end",
					trans: "start>x start>y x>A y>A A>B B>A?again B>end!",
				}},
				{id: "p2", flowSpec: flowSpec{
					acts:  "start S:and B1 B2 J:xor,r- C end",
					trans: "start>S S>B1 S>B2 B1>J B2>J J>C C>S?again C>end!",
				}},
			},
			steps: []step{
				{
					kind: xpdl.RewriteLoopEntry, process: "p1", activities: "A",
					transitions: "x-A y-A", generated: "A__entry A__entry__out",
				},
				{
					kind: xpdl.RewriteRace, process: "p2", activities: "S B1 B2 J",
					transitions: "start-S S-B1 S-B2 B1-J B2-J J-C C-S", generated: "J__race p2__race_J",
				},
			},
			want: `process p1
  acts: start[split=AND] x y A__entry[Route join=XOR r- gen] A[join=XOR] B[split=OR] end
  trans: start>x start>y x>A__entry y>A__entry A>B B>A B>end A__entry>A
process p2
  acts: start J__race[SubFlow p2__race_J join=XOR gen] C[split=OR] end
  trans: start>J__race J__race>C C>J__race C>end
process p2__race_J [gen] (INOUT shared, INOUT again)
  acts: S[split=AND] B1 B2 J[join=XOR r-]
  trans: S>B1 S>B2 B1>J B2>J
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pkg := readSpec(t, tt.procs...)
			require.Empty(t, errorCodes(pkg), "the test's package is not valid")
			before := renderFlows(pkg)
			out, steps, err := xpdl.Rewrite(pkg)
			require.NoError(t, err)
			require.Equal(t, tt.steps, stepsOf(steps))
			if tt.want == "" {
				require.Same(t, pkg, out, "nothing to rewrite, yet a new package")
			} else {
				require.Equal(t, tt.want, renderFlows(out))
			}
			for i, r := range tt.reasons {
				require.Contains(t, steps[i].Reason, r)
			}
			for _, s := range steps {
				require.NotEmpty(t, s.Reason)
			}
			checkRewritten(t, pkg, out, before)
		})
	}
}

func TestRewriteRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		procs []procSpec
		want  []xpdl.RaceRegionError // File and Pos are checked apart
	}{
		{
			name: "a transition leaves the region and one enters it",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S:and B1 B2 J:xor,r- C out end",
				trans: "start>S start>B1 S>B1 S>B2 B1>J B2>J B2>out J>C C>S?again C>end!",
			}}},
			want: []xpdl.RaceRegionError{{
				Process: "main", Split: "S", Join: "J", Entering: []string{"start-B1"}, Leaving: []string{"B2-out"},
			}},
		},
		{
			name: "the join leads back into the region",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S:and B1 B2 J:xor,r- C end",
				trans: "start>S S>B1 S>B2 B1>J B2>J J>B1?again J>C! C>S?again C>end!",
			}}},
			want: []xpdl.RaceRegionError{{
				Process: "main", Split: "S", Join: "J", Entering: []string{"J-B1"},
			}},
		},
		{
			name: "a loop inside the region goes back to the split",
			procs: []procSpec{{id: "main", flowSpec: flowSpec{
				acts:  "start S:and B1 B2 J:xor,r- C end",
				trans: "start>S S>B1 S>B2 B1>S?again B1>J! B2>J J>C C>S?again C>end!",
			}}},
			want: []xpdl.RaceRegionError{{
				Process: "main", Split: "S", Join: "J", Entering: []string{"B1-S"},
			}},
		},
		{
			name: "a BlockActivity starts the set inside the region",
			procs: []procSpec{{
				id:       "main",
				flowSpec: flowSpec{acts: "start body:block=loop,start=B1 end", trans: "start>body body>end"},
				sets: []setSpec{{id: "loop", flowSpec: flowSpec{
					acts:  "first S:and B1 B2 J:xor,r- C last",
					trans: "first>S S>B1 S>B2 B1>J B2>J J>C C>S?again C>last!",
				}}},
			}},
			want: []xpdl.RaceRegionError{{
				Process: "main", ActivitySet: "loop", Split: "S", Join: "J", Entering: []string{"body"},
			}},
		},
		{
			name: "every refusal is reported",
			procs: []procSpec{
				{id: "p1", flowSpec: flowSpec{
					acts:  "start S:and B1 B2 J:xor,r- C out end",
					trans: "start>S S>B1 S>B2 B1>J B2>J B2>out J>C C>S?again C>end!",
				}},
				{id: "p2", flowSpec: flowSpec{
					acts:  "start S:and B1 B2 J:xor,r- C end",
					trans: "start>S start>B2 S>B1 S>B2 B1>J B2>J J>C C>S?again C>end!",
				}},
			},
			want: []xpdl.RaceRegionError{
				{Process: "p1", Split: "S", Join: "J", Leaving: []string{"B2-out"}},
				{Process: "p2", Split: "S", Join: "J", Entering: []string{"start-B2"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pkg := readSpec(t, tt.procs...)
			require.Empty(t, errorCodes(pkg), "the test's package is not valid")
			before := renderFlows(pkg)
			out, steps, err := xpdl.Rewrite(pkg)
			require.ErrorIs(t, err, xpdl.ErrRaceRegion)
			require.Nil(t, out)
			require.Nil(t, steps)
			require.Equal(t, before, renderFlows(pkg), "Rewrite changed its input")
			got := raceErrors(err)
			require.Len(t, got, len(tt.want))
			for i, err := range got {
				e := *err
				require.Equal(t, "test.xpdl", e.File)
				join := pkg.Process(e.Process).Activity(e.Join)
				if e.ActivitySet != "" {
					join = pkg.Process(e.Process).ActivitySet(e.ActivitySet).Activity(e.Join)
				}
				require.Equal(t, join.Pos, e.Pos)
				p := err.Problem()
				e.File, e.Pos = "", xpdl.Pos{}
				require.Equal(t, tt.want[i], e)
				require.Equal(t, "race-region", p.Code)
				require.Equal(t, xpdl.SeverityError, p.Severity)
				require.Equal(t, join.Pos.Line, p.Line)
				require.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("test.xpdl:%d:%d: ", p.Line, p.Col)))
				require.Contains(t, p.Message, fmt.Sprintf("AND split %q and non-reentrant XOR join %q", e.Split, e.Join))
			}
		})
	}
}

// raceErrors returns the *RaceRegionErrors in err, one or joined.
func raceErrors(err error) []*xpdl.RaceRegionError {
	var out []*xpdl.RaceRegionError
	if joined, ok := err.(interface{ Unwrap() []error }); ok { //nolint:errorlint // the list of a joined error
		for _, e := range joined.Unwrap() {
			out = append(out, raceErrors(e)...)
		}
		return out
	}
	var re *xpdl.RaceRegionError
	if errors.As(err, &re) {
		out = append(out, re)
	}
	return out
}

func TestReadReentrant(t *testing.T) {
	t.Parallel()
	doc := func(values ...string) string {
		var attrs strings.Builder
		for _, v := range values {
			fmt.Fprintf(&attrs, "\n      <ExtendedAttribute Name=\"Reentrant\" Value=%q/>", v)
		}
		return `<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="p">
  <WorkflowProcesses><WorkflowProcess Id="main"><Activities>
    <Activity Id="a"><Implementation><No/></Implementation><ExtendedAttributes>` + attrs.String() + `
    </ExtendedAttributes></Activity>
  </Activities></WorkflowProcess></WorkflowProcesses>
</Package>`
	}
	yes, no := true, false
	tests := []struct {
		name   string
		values []string
		want   *bool
		errors []string // "LINE:COL: message"
	}{
		{name: "absent", values: nil, want: nil},
		{name: "true", values: []string{"true"}, want: &yes},
		{name: "any case, spaces", values: []string{" FALSE "}, want: &no},
		{name: "True", values: []string{"True"}, want: &yes},
		{name: "not a boolean", values: []string{"yes"}, want: nil,
			errors: []string{`4:7: activity "a": extended attribute Reentrant is "yes"; it must be true or false`}},
		{name: "empty", values: []string{""}, want: nil,
			errors: []string{`4:7: activity "a": extended attribute Reentrant is ""; it must be true or false`}},
		{name: "the same twice", values: []string{"false", "FALSE"}, want: &no},
		{name: "contradicting", values: []string{"false", "true"}, want: &no,
			errors: []string{`5:7: activity "a": extended attribute Reentrant is "true" here and false before`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pkg, err := xpdl.Read(strings.NewReader(doc(tt.values...)), &xpdl.ReadOpts{Name: "r.xpdl"})
			require.NoError(t, err)
			a := pkg.Process("main").Activity("a")
			require.Equal(t, tt.want, a.Reentrant)
			require.Equal(t, tt.want == nil || *tt.want, a.IsReentrant())
			var got []string
			for _, p := range xpdl.Validate(pkg, nil).Errors() {
				require.Equal(t, "r.xpdl", p.File)
				require.Equal(t, "unknown-value", p.Code)
				got = append(got, fmt.Sprintf("%d:%d: %s", p.Line, p.Col, p.Message))
			}
			require.Equal(t, tt.errors, got)
		})
	}
}

// TestRewriteCorpus rewrites every file of the shared corpus: none may
// fail, gain a validation error or change when rewritten again.
func TestRewriteCorpus(t *testing.T) {
	t.Parallel()
	dir := requireCorpus(t)
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.xpdl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	rewritten := 0
	for _, file := range files {
		pkg, err := xpdl.Load(file, nil)
		if err != nil {
			continue // unreadable files are the reader's tests' business
		}
		before := renderFlows(pkg)
		out, steps, err := xpdl.Rewrite(pkg)
		require.NoError(t, err, file)
		if len(steps) > 0 {
			rewritten++
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			checkRewritten(t, pkg, out, before)
		})
	}
	t.Logf("%d of %d corpus files rewritten", rewritten, len(files))
}

// TestRewriteRandom rewrites random graphs with random Reentrant marks
// and checks the invariants of checkRewritten, and that a refusal leaves
// the input unchanged.
func TestRewriteRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	outcomes := map[string]int{}
	for range 1000 {
		n := 3 + rng.IntN(8)
		var acts, trans []string
		acts = append(acts, "start")
		for i := 1; i < n; i++ {
			var opts []string
			switch rng.IntN(4) {
			case 0:
				opts = append(opts, "and")
			case 1:
				opts = append(opts, "xor", []string{"r-", "r-", "r+"}[rng.IntN(3)])
			}
			id := fmt.Sprintf("a%d", i)
			if len(opts) > 0 {
				id += ":" + strings.Join(opts, ",")
			}
			acts = append(acts, id)
		}
		name := func(i int) string {
			if i == 0 {
				return "start"
			}
			return fmt.Sprintf("a%d", i)
		}
		seen := map[[2]int]bool{}
		edge := func(from, to int) {
			if !seen[[2]int{from, to}] {
				seen[[2]int{from, to}] = true
				trans = append(trans, name(from)+">"+name(to))
			}
		}
		// A spine from start through every activity, in half the cases
		// with a race on a loop, then random edges, forward and back
		// (loops), none into start and none out of the last activity.
		for i := 1; i < n; i++ {
			edge(i-1, i)
		}
		if k := 1 + rng.IntN(n-1); rng.IntN(2) == 0 && k+4 < n-1 {
			acts[k], acts[k+3] = name(k)+":and", name(k+3)+":xor,r-"
			edge(k, k+2)
			edge(k+1, k+3)
			delete(seen, [2]int{k + 1, k + 2})
			trans = slices.DeleteFunc(trans, func(s string) bool { return s == name(k+1)+">"+name(k+2) })
			edge(k+4, k)
		}
		for range rng.IntN(n/2 + 1) {
			from, to := rng.IntN(n), 1+rng.IntN(n-1)
			if from != n-1 {
				edge(from, to)
			}
		}
		pkg := readSpec(t, procSpec{id: "main", flowSpec: flowSpec{acts: strings.Join(acts, " "), trans: strings.Join(trans, " ")}})
		before := renderFlows(pkg)
		out, steps, err := xpdl.Rewrite(pkg)
		spec := strings.Join(acts, " ") + " | " + strings.Join(trans, " ")
		if err != nil {
			require.ErrorIs(t, err, xpdl.ErrRaceRegion, spec)
			require.Equal(t, before, renderFlows(pkg), spec)
			outcomes["refused"]++
			continue
		}
		for _, s := range steps {
			outcomes[string(s.Kind)]++
		}
		if len(steps) == 0 {
			outcomes["unchanged"]++
		}
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			checkRewritten(t, pkg, out, before)
			for _, p := range out.Processes {
				if !p.IsGenerated() {
					continue
				}
				// S is the only start and J the only end.
				var starts, ends []string
				for _, a := range p.Activities {
					if len(p.Incoming(a.ID)) == 0 {
						starts = append(starts, a.ID)
					}
					if len(p.Outgoing(a.ID)) == 0 {
						ends = append(ends, a.ID)
					}
				}
				require.Len(t, starts, 1, spec)
				require.Len(t, ends, 1, spec)
				require.True(t, slices.ContainsFunc(p.Activities, func(a *xpdl.Activity) bool {
					return a.ID == ends[0] && a.Reentrant != nil && !*a.Reentrant
				}), spec)
			}
		})
	}
	t.Logf("outcomes: %v", outcomes)
	for _, o := range []string{"unchanged", "refused", string(xpdl.RewriteLoopEntry), string(xpdl.RewriteRace)} {
		require.Positive(t, outcomes[o], "no random case ended %s", o)
	}
}

func ExampleRewrite() {
	const doc = `<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="orders">
  <WorkflowProcesses><WorkflowProcess Id="order">
    <Activities>
      <Activity Id="receive"><Implementation><No/></Implementation></Activity>
      <Activity Id="ask"><Route/>
        <TransitionRestrictions><TransitionRestriction><Split Type="AND"/></TransitionRestriction></TransitionRestrictions></Activity>
      <Activity Id="supplierA"><Implementation><No/></Implementation></Activity>
      <Activity Id="supplierB"><Implementation><No/></Implementation></Activity>
      <Activity Id="firstOffer"><Route/>
        <TransitionRestrictions><TransitionRestriction><Join Type="XOR"/></TransitionRestriction></TransitionRestrictions>
        <ExtendedAttributes><ExtendedAttribute Name="Reentrant" Value="false"/></ExtendedAttributes></Activity>
      <Activity Id="check"><Implementation><No/></Implementation></Activity>
      <Activity Id="ship"><Implementation><No/></Implementation></Activity>
    </Activities>
    <Transitions>
      <Transition Id="t1" From="receive" To="ask"/>
      <Transition Id="t2" From="ask" To="supplierA"/>
      <Transition Id="t3" From="ask" To="supplierB"/>
      <Transition Id="t4" From="supplierA" To="firstOffer"/>
      <Transition Id="t5" From="supplierB" To="firstOffer"/>
      <Transition Id="t6" From="firstOffer" To="check"/>
      <Transition Id="t7" From="check" To="ask"><Condition Type="CONDITION">tooExpensive</Condition></Transition>
      <Transition Id="t8" From="check" To="ship"><Condition Type="OTHERWISE"/></Transition>
    </Transitions>
  </WorkflowProcess></WorkflowProcesses>
</Package>`
	pkg, err := xpdl.Read(strings.NewReader(doc), &xpdl.ReadOpts{Name: "orders.xpdl"})
	if err != nil {
		fmt.Println(err)
		return
	}
	// begin docblock docs/reentrancy.md
	rewritten, steps, err := xpdl.Rewrite(pkg)
	// end docblock
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range steps {
		fmt.Printf("%s in %s: moved %v, generated %v\n", s.Kind, s.Process, s.Activities, s.Generated)
	}
	for _, p := range rewritten.Processes {
		fmt.Printf("process %s (generated: %t):", p.ID, p.IsGenerated())
		for _, t := range p.Transitions {
			fmt.Printf(" %s>%s", t.From, t.To)
		}
		fmt.Println()
	}
	// Output:
	// race in order: moved [ask supplierA supplierB firstOffer], generated [firstOffer__race order__race_firstOffer]
	// process order (generated: false): receive>firstOffer__race firstOffer__race>check check>firstOffer__race check>ship
	// process order__race_firstOffer (generated: true): ask>supplierA ask>supplierB supplierA>firstOffer supplierB>firstOffer
}
