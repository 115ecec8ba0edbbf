package flow_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine/flow"
	"github.com/goxpdl/goxpdl/xpdl"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// nonReentrant marks activities of an xpdltest.Graph Reentrant="false".
func nonReentrant(src string, ids ...string) string {
	for _, id := range ids {
		re := regexp.MustCompile(`(<Activity Id="` + id + `">.*?)(</Activity>)`)
		src = re.ReplaceAllString(src, `${1}<ExtendedAttributes><ExtendedAttribute Name="Reentrant" Value="false"/></ExtendedAttributes>${2}`)
	}
	return src
}

func TestNonReentrantActivityStartsOncePerScope(t *testing.T) {
	t.Parallel()
	p := process(t, nonReentrant(xpdltest.Graph("A:/and B C D", "A>B", "A>C", "B>D", "C>D"), "D"))
	require.False(t, p.Activity("D").IsReentrant())
	sc := flow.Scope{Flow: &p.Flow}
	var tk flow.Tokens
	require.True(t, arrive(t, &tk, sc, p.Transition("t3")), "the first arrival starts it")
	require.False(t, arrive(t, &tk, sc, p.Transition("t4")), "a later one is absorbed")

	back, err := flow.Decode(tk.Encode())
	require.NoError(t, err)
	require.False(t, arrive(t, back, sc, p.Transition("t3")), "the memory survives persisting")
	require.True(t, arrive(t, back, flow.Scope{Flow: &p.Flow, Block: 7}, p.Transition("t3")),
		"another scope (a block run) starts it afresh")

	back.Clear(sc)
	require.True(t, arrive(t, back, sc, p.Transition("t4")), "a cleared scope starts it again")
	_, out, _ := back.Settle(sc, nil, true)
	require.Equal(t, flow.Done, out, "absorbed arrivals do not wait anywhere")
}

func TestNonReentrantAndJoinStartsOnce(t *testing.T) {
	t.Parallel()
	p := process(t, nonReentrant(xpdltest.Graph("A:/and B C D:and", "A>B", "A>C", "B>D", "C>D"), "D"))
	sc := flow.Scope{Flow: &p.Flow}
	var tk flow.Tokens
	require.False(t, arrive(t, &tk, sc, p.Transition("t3")))
	require.True(t, arrive(t, &tk, sc, p.Transition("t4")))
	require.False(t, arrive(t, &tk, sc, p.Transition("t3")), "a second round is absorbed")
	require.False(t, arrive(t, &tk, sc, p.Transition("t4")))
	_, out, _ := tk.Settle(sc, nil, true)
	require.Equal(t, flow.Done, out)
}

func TestLosers(t *testing.T) {
	t.Parallel()
	// A splits three ways; B and C..C2 can only reach J; X can also end
	// at Y, so it is no loser, and neither is A. An exception path counts.
	p := process(t, xpdltest.Graph("A:/and B C C2 X Y J K E",
		"A>B", "A>C", "A>X", "B>J", "C>C2", "C2>J", "X>J", "X>Y", "J>K", "C2>E!exception=oops", "E>J"))
	losers := flow.Losers(&p.Flow, p.Activity("J"))
	require.Equal(t, map[string]bool{"B": true, "C": true, "C2": true, "E": true}, losers)

	p = process(t, xpdltest.Graph("A:/and B C J", "A>B", "A>C", "B>J", "C>J", "C>C!exception=again"))
	require.Equal(t, map[string]bool{"A": true, "B": true, "C": true}, flow.Losers(&p.Flow, p.Activity("J")),
		"a loop that can only leave towards J loses too")
}

// pattern reads a process of testdata/patterns.
func pattern(t *testing.T, file string) *xpdl.Process {
	t.Helper()
	src, err := os.ReadFile("../../testdata/patterns/" + file)
	require.NoError(t, err)
	return process(t, string(src))
}

// atLeast decides a Complex join's condition as "arrivals >= n".
func atLeast(n int) flow.JoinCondition {
	return func(_ *xpdl.Activity, arrived, _ int) (bool, error) { return arrived >= n, nil }
}

func TestComplexJoinIsADiscriminator(t *testing.T) {
	t.Parallel()
	p := pattern(t, "wcp09-structured-discriminator.xpdl")
	require.Equal(t, "arrivals >= 1", p.Activity("Disc").Route.IncomingCondition)
	sc := flow.Scope{Flow: &p.Flow}
	var tk flow.Tokens
	for round := range 2 {
		start, err := tk.Arrive(sc, p.Transition("t4"), atLeast(1))
		require.NoError(t, err)
		require.True(t, start, "round %d: the first arrival passes", round)
		start, err = tk.Arrive(sc, p.Transition("t5"), atLeast(1))
		require.NoError(t, err)
		require.False(t, start, "round %d: the second is absorbed", round)
		require.True(t, tk.Empty(), "round %d: every branch arrived, the join resets", round)
	}
}

func TestComplexJoinIsAPartialJoin(t *testing.T) {
	t.Parallel()
	p := pattern(t, "wcp30-structured-partial-join.xpdl")
	sc := flow.Scope{Flow: &p.Flow}
	var tk flow.Tokens
	var got []bool
	for _, id := range []string{"t6", "t7", "t5"} {
		start, err := tk.Arrive(sc, p.Transition(id), atLeast(2))
		require.NoError(t, err)
		got = append(got, start)
	}
	require.Equal(t, []bool{false, true, false}, got, "the second of three passes, the third is absorbed")
	require.True(t, tk.Empty())
}

func TestComplexJoinRoundEndsWhenTheRestCannotArrive(t *testing.T) {
	t.Parallel()
	p := pattern(t, "wcp09-structured-discriminator.xpdl")
	sc := flow.Scope{Flow: &p.Flow}
	var tk flow.Tokens
	start, err := tk.Arrive(sc, p.Transition("t4"), atLeast(1))
	require.NoError(t, err)
	require.True(t, start)
	_, out, _ := tk.Settle(sc, []string{"C"}, true)
	require.Equal(t, flow.Busy, out, "C may still arrive")
	require.False(t, tk.Empty())
	_, out, _ = tk.Settle(sc, nil, true)
	require.Equal(t, flow.Done, out, "C's branch died: the round is over, nothing is locked")
	require.True(t, tk.Empty())
}

func TestComplexJoinThatNeverHoldsLocks(t *testing.T) {
	t.Parallel()
	p := pattern(t, "wcp30-structured-partial-join.xpdl")
	sc := flow.Scope{Flow: &p.Flow}
	var tk flow.Tokens
	start, err := tk.Arrive(sc, p.Transition("t5"), atLeast(2))
	require.NoError(t, err)
	require.False(t, start)
	_, out, diag := tk.Settle(sc, nil, true)
	require.Equal(t, flow.Locked, out)
	require.Contains(t, diag, "Complex-join Join can never fire")
	require.Contains(t, diag, "t6 from C")
}

func TestComplexJoinConditionError(t *testing.T) {
	t.Parallel()
	p := pattern(t, "wcp09-structured-discriminator.xpdl")
	sc := flow.Scope{Flow: &p.Flow}
	var tk flow.Tokens
	start, err := tk.Arrive(sc, p.Transition("t4"), func(*xpdl.Activity, int, int) (bool, error) { return false, errBoom })
	require.True(t, start, "the join fires, for its activity to go Abnormal")
	var jce *flow.JoinConditionError
	require.ErrorAs(t, err, &jce)
	require.Equal(t, "Disc", jce.Join)
	require.ErrorIs(t, err, errBoom)
	start, err = tk.Arrive(sc, p.Transition("t5"), atLeast(1))
	require.NoError(t, err)
	require.False(t, start, "it has passed in this round")
}
