package flow_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine/flow"
	"github.com/goxpdl/goxpdl/xpdl"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

func process(t *testing.T, src string) *xpdl.Process {
	t.Helper()
	pkg, err := xpdl.Read(strings.NewReader(src), &xpdl.ReadOpts{Name: "test.xpdl"})
	require.NoError(t, err)
	require.NoError(t, xpdl.Validate(pkg, nil).Err())
	return pkg.Processes[0]
}

// truth decides conditions by their expression text: "yes" holds.
func truth(t *xpdl.Transition) (bool, error) {
	return strings.TrimSpace(t.Condition.Expression.Text) == "yes", nil
}

// run plays a flow from the activity start to the end, completing live
// activities first in first out, and returns how often each activity
// started, the outcome and the diagnosis.
func run(t *testing.T, p *xpdl.Process, start string) (map[string]int, flow.Outcome, string) {
	t.Helper()
	sc := flow.Scope{Flow: &p.Flow}
	var tk flow.Tokens
	started := map[string]int{start: 1}
	live := []string{start}
	for steps := 0; steps < 1000; steps++ {
		if len(live) > 0 {
			id := live[0]
			live = live[1:]
			a := p.Activity(id)
			fired, err := flow.Choose(sc.Flow, a, truth)
			require.NoError(t, err)
			if len(fired) == 0 && len(sc.Flow.Outgoing(id)) > 0 {
				tk.DeadEnd(sc, a)
			}
			for _, tr := range fired {
				if arrive(t, &tk, sc, tr) {
					started[tr.To]++
					live = append(live, tr.To)
				}
			}
		}
		// A round trip through the persisted form, as the engine does.
		data := tk.Encode()
		back, err := flow.Decode(data)
		require.NoError(t, err)
		tk = *back
		starts, out, diag := tk.Settle(sc, live, true)
		for _, id := range starts {
			started[id]++
			live = append(live, id)
		}
		if out != flow.Busy {
			return started, out, diag
		}
	}
	t.Fatal("flow did not finish in 1000 steps")
	return nil, 0, ""
}

func TestChooseXOR(t *testing.T) {
	t.Parallel()
	p := process(t, xpdltest.Graph("A:/xor B C D E", "A>B?no", "A>C?yes", "A>D?yes", "A>E!otherwise"))
	fired, err := flow.Choose(&p.Flow, p.Activity("A"), truth)
	require.NoError(t, err)
	require.Equal(t, []string{"t2"}, ids(fired), "the first transition that holds")

	p = process(t, xpdltest.Graph("A:/xor B C E", "A>B?no", "A>E!otherwise", "A>C?no"))
	fired, err = flow.Choose(&p.Flow, p.Activity("A"), truth)
	require.NoError(t, err)
	require.Equal(t, []string{"t2"}, ids(fired), "otherwise when nothing holds")

	p = process(t, xpdltest.Graph("A:/xor B C", "A>B?no", "A>C?no"))
	fired, err = flow.Choose(&p.Flow, p.Activity("A"), truth)
	require.NoError(t, err)
	require.Empty(t, fired, "no successor")
}

func TestChooseAndOrTakeEveryTrueTransition(t *testing.T) {
	t.Parallel()
	for _, split := range []string{"and", "or"} {
		p := process(t, xpdltest.Graph("A:/"+split+" B C D E", "A>B?yes", "A>C", "A>D?no", "A>E!otherwise"))
		fired, err := flow.Choose(&p.Flow, p.Activity("A"), truth)
		require.NoError(t, err)
		require.Equal(t, []string{"t1", "t2"}, ids(fired), split)
	}
}

func TestChooseFollowsTransitionRefsOrder(t *testing.T) {
	t.Parallel()
	src := xpdltest.Package(xpdltest.Process("p", "",
		`<Activity Id="A"><Route/><TransitionRestrictions><TransitionRestriction><Split Type="XOR"><TransitionRefs>
		<TransitionRef Id="t2"/><TransitionRef Id="t1"/></TransitionRefs></Split></TransitionRestriction></TransitionRestrictions></Activity>`+
			xpdltest.Activity("B", "<Route/>", "", "")+xpdltest.Activity("C", "<Route/>", "", ""),
		xpdltest.Transition("t1", "A>B?yes")+xpdltest.Transition("t2", "A>C?yes")))
	p := process(t, src)
	fired, err := flow.Choose(&p.Flow, p.Activity("A"), truth)
	require.NoError(t, err)
	require.Equal(t, []string{"t2"}, ids(fired))
}

func TestChooseException(t *testing.T) {
	t.Parallel()
	p := process(t, xpdltest.Graph("A B C D", "A>B", "A>C!exception=Boom", "A>D!defaultexception"))
	a := p.Activity("A")
	require.Equal(t, []string{"t2"}, ids(flow.ChooseException(&p.Flow, a, "Boom")))
	require.Equal(t, []string{"t3"}, ids(flow.ChooseException(&p.Flow, a, "Other")))
	fired, err := flow.Choose(&p.Flow, a, truth)
	require.NoError(t, err)
	require.Equal(t, []string{"t1"}, ids(fired), "exception paths never fire on normal completion")

	p = process(t, xpdltest.Graph("A B", "A>B"))
	require.Empty(t, flow.ChooseException(&p.Flow, p.Activity("A"), "Boom"), "unhandled")
}

func TestConditionErrorNamesTransition(t *testing.T) {
	t.Parallel()
	p := process(t, xpdltest.Graph("A:/xor B", "A>B?yes"))
	_, err := flow.Choose(&p.Flow, p.Activity("A"), func(*xpdl.Transition) (bool, error) { return false, errBoom })
	require.ErrorIs(t, err, errBoom)
	require.ErrorContains(t, err, "transition t1")
}

func TestNavigation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		src     string
		started map[string]int
		outcome flow.Outcome
		diag    string
	}{
		{
			name:    "Sequence",
			src:     xpdltest.Graph("A B C", "A>B", "B>C"),
			started: map[string]int{"A": 1, "B": 1, "C": 1},
			outcome: flow.Done,
		},
		{
			name:    "AndSplitAndJoinStartsJoinOnce",
			src:     xpdltest.Graph("A:/and B C D:and", "A>B", "A>C", "B>D", "C>D"),
			started: map[string]int{"A": 1, "B": 1, "C": 1, "D": 1},
			outcome: flow.Done,
		},
		{
			name:    "XorJoinStartsOnEveryArrival",
			src:     xpdltest.Graph("A:/and B C D:xor", "A>B", "A>C", "B>D", "C>D"),
			started: map[string]int{"A": 1, "B": 1, "C": 1, "D": 2},
			outcome: flow.Done,
		},
		{
			name:    "OrJoinEliminatesDeadPath",
			src:     xpdltest.Graph("A:/or B C D:or", "A>B?yes", "A>C?no", "B>D", "C>D"),
			started: map[string]int{"A": 1, "B": 1, "D": 1},
			outcome: flow.Done,
		},
		{
			name:    "OrJoinWaitsForEveryTakenBranch",
			src:     xpdltest.Graph("A:/or B C X D:or", "A>B?yes", "A>C?yes", "B>D", "C>X", "X>D"),
			started: map[string]int{"A": 1, "B": 1, "C": 1, "X": 1, "D": 1},
			outcome: flow.Done,
		},
		{
			name: "OrJoinWaitsForUpstreamAndJoin",
			// D (OR) must wait while the AND-join J, upstream of one
			// of its inputs, still holds an arrival and can fire.
			src: xpdltest.Graph("A:/and B C E J:and D:or",
				"A>B", "A>C", "A>E", "B>J", "C>J", "J>D", "E>D"),
			started: map[string]int{"A": 1, "B": 1, "C": 1, "E": 1, "J": 1, "D": 1},
			outcome: flow.Done,
		},
		{
			name:    "AndJoinAfterXorSplitLocks",
			src:     xpdltest.Graph("A:/xor B C D:and", "A>B?yes", "A>C?yes", "B>D", "C>D"),
			started: map[string]int{"A": 1, "B": 1},
			outcome: flow.Locked,
			diag:    "AND-join D can never fire: it waits for t4 from C (arrived: t3 from B)",
		},
		{
			name:    "DeadEndTerminatesImplicitly",
			src:     xpdltest.Graph("A:/xor B C", "A>B?no", "A>C?no"),
			started: map[string]int{"A": 1},
			outcome: flow.Done,
		},
		{
			name:    "DeadEndNamedWhenAJoinLostIt",
			src:     xpdltest.Graph("A:/and B:/xor C D:and", "A>B", "A>C", "B>D?no", "C>D"),
			started: map[string]int{"A": 1, "B": 1, "C": 1},
			outcome: flow.Locked,
			diag:    "AND-join D can never fire: it waits for t3 from B (arrived: t4 from C); branch lost at B: no successor could fire",
		},
		{
			name: "LoopThroughXorJoin",
			// A loop runs until its condition fails; here B's split
			// leaves on the otherwise branch at once.
			src:     xpdltest.Graph("A B:xor/xor C", "A>B", "B>B?no", "B>C!otherwise"),
			started: map[string]int{"A": 1, "B": 1, "C": 1},
			outcome: flow.Done,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := process(t, tt.src)
			started, out, diag := run(t, p, "A")
			require.Equal(t, tt.started, started)
			require.Equal(t, tt.outcome, out)
			require.Equal(t, tt.diag, diag)
		})
	}
}

func TestAndJoinCountsArrivalsPerTransition(t *testing.T) {
	t.Parallel()
	p := process(t, xpdltest.Graph("A:/and B C D:and", "A>B", "A>C", "B>D", "C>D"))
	sc := flow.Scope{Flow: &p.Flow}
	var tk flow.Tokens
	b, c := p.Transition("t3"), p.Transition("t4")
	require.False(t, arrive(t, &tk, sc, b))
	require.False(t, arrive(t, &tk, sc, b), "a second arrival on the same input does not complete the join")
	require.True(t, arrive(t, &tk, sc, c))
	require.True(t, arrive(t, &tk, sc, c), "the second round is complete too: B had arrived twice")
	require.True(t, tk.Empty())
}

func TestScopesAreSeparate(t *testing.T) {
	t.Parallel()
	p := process(t, xpdltest.Graph("A:/and B C D:and", "A>B", "A>C", "B>D", "C>D"))
	one, two := flow.Scope{Flow: &p.Flow, Block: 1}, flow.Scope{Flow: &p.Flow, Block: 2}
	var tk flow.Tokens
	require.False(t, arrive(t, &tk, one, p.Transition("t3")))
	require.False(t, arrive(t, &tk, two, p.Transition("t4")), "an arrival in another block run does not count")
	_, out, _ := tk.Settle(two, nil, true)
	require.Equal(t, flow.Locked, out)
	tk.Clear(two)
	_, out, _ = tk.Settle(two, nil, true)
	require.Equal(t, flow.Done, out)
	_, out, _ = tk.Settle(one, nil, true)
	require.Equal(t, flow.Locked, out, "clearing one run leaves the other")
}

func TestTokensEncoding(t *testing.T) {
	t.Parallel()
	var tk flow.Tokens
	require.Nil(t, tk.Encode())
	got, err := flow.Decode(nil)
	require.NoError(t, err)
	require.True(t, got.Empty())
	_, err = flow.Decode([]byte("{"))
	require.Error(t, err)
}

// arrive is Tokens.Arrive for flows without Complex joins.
func arrive(t *testing.T, tk *flow.Tokens, sc flow.Scope, tr *xpdl.Transition) bool {
	t.Helper()
	start, err := tk.Arrive(sc, tr, nil)
	require.NoError(t, err)
	return start
}

func ids(ts []*xpdl.Transition) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

var errBoom = errorString("boom")

type errorString string

func (e errorString) Error() string { return string(e) }

func TestLostBranchLocksOnceNothingElseIsAlive(t *testing.T) {
	t.Parallel()
	p := process(t, xpdltest.Graph("A:/and B:/xor C D E", "A>B", "A>E", "B>C?no", "B>D?no"))
	sc := flow.Scope{Flow: &p.Flow}
	for _, tc := range []struct {
		name     string
		lockLost bool
		want     flow.Outcome
		diag     string
	}{
		{"Paper", true, flow.Locked, "branch lost at B: no successor could fire: t3 no: false"},
		{"Shark", false, flow.Done, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var tk flow.Tokens
			tk.Lose(sc, p.Activity("B"), "t3 no: false")
			back, err := flow.Decode(tk.Encode())
			require.NoError(t, err)
			_, out, _ := back.Settle(sc, []string{"E"}, tc.lockLost)
			require.Equal(t, flow.Busy, out, "E is still alive")
			_, out, diag := back.Settle(sc, nil, tc.lockLost)
			require.Equal(t, tc.want, out)
			require.Equal(t, tc.diag, diag)
			back.Clear(sc)
			require.True(t, back.Empty(), "Clear forgets the loss")
		})
	}
}
