package xpdl

import (
	"slices"
	"strconv"
	"strings"
)

// checkGraphs checks the shape of every flow of a process: start and end
// activities, reachability, and the declared graph conformance class.
func (v *validator) checkGraphs(proc *Process) {
	declaredStart := map[string]string{} // activity set id -> declared start
	usedSets := map[string]bool{}
	for _, f := range proc.Flows() {
		for _, a := range f.Activities {
			if a.Block != nil {
				usedSets[a.Block.ActivitySet] = true
				if a.Block.StartActivity != "" {
					declaredStart[a.Block.ActivitySet] = a.Block.StartActivity
				}
			}
		}
	}
	v.checkFlowGraph(&proc.Flow, "process "+strconv.Quote(proc.ID), proc.ID, proc.Pos, "")
	for _, s := range proc.ActivitySets {
		if !usedSets[s.ID] {
			v.warnf(s.Pos, "unused-activity-set", []string{s.ID}, "activity set %q is not used by any BlockActivity", s.ID)
		}
		v.checkFlowGraph(&s.Flow, "activity set "+strconv.Quote(s.ID), s.ID, s.Pos, declaredStart[s.ID])
	}
}

// graph is a flow as adjacency lists over activity indexes, with the
// transitions whose ends are unknown left out (they are reported apart).
type graph struct {
	acts []*Activity
	idx  map[string]int // the flow's: id to the first activity with it
	succ [][]int
	pred [][]int
}

func newGraph(f *Flow) *graph {
	g := &graph{acts: f.Activities, idx: f.activityIndex}
	outs, ins := make([]int, len(f.Activities)), make([]int, len(f.Activities))
	for _, e := range f.ends {
		if e.from >= 0 && e.to >= 0 {
			outs[e.from]++
			ins[e.to]++
		}
	}
	g.succ, g.pred = carve[int](outs), carve[int](ins)
	for _, e := range f.ends {
		if e.from >= 0 && e.to >= 0 {
			g.succ[e.from] = append(g.succ[e.from], e.to)
			g.pred[e.to] = append(g.pred[e.to], e.from)
		}
	}
	return g
}

// isBoundary reports whether an activity is an event attached to another
// activity; it starts when its target's trigger fires, not by transition.
func isBoundary(a *Activity) bool { return a.Event != nil && a.Event.Target != "" }

// reach marks every node reachable from the given ones along next, where
// boundary events count as reachable once their target is.
func (g *graph) reach(from []int, next [][]int, attach bool) []bool {
	seen := make([]bool, len(g.acts))
	// Every node enters the queue once (from aside), so it never grows;
	// head is where the unvisited part starts.
	queue := make([]int, 0, len(g.acts)+len(from))
	queue = append(queue, from...)
	for _, i := range from {
		seen[i] = true
	}
	for head := 0; ; {
		for head < len(queue) {
			n := queue[head]
			head++
			for _, m := range next[n] {
				if !seen[m] {
					seen[m] = true
					queue = append(queue, m)
				}
			}
		}
		if !attach {
			return seen
		}
		// Boundary events follow their targets (forwards), and a target
		// can end through its boundary events (backwards: see canEnd).
		grew := false
		for i, a := range g.acts {
			if seen[i] || !isBoundary(a) {
				continue
			}
			if t, ok := g.idx[a.Event.Target]; ok && seen[t] {
				seen[i] = true
				queue = append(queue, i)
				grew = true
			}
		}
		if !grew {
			return seen
		}
	}
}

func (v *validator) checkFlowGraph(f *Flow, scope, scopeID string, pos Pos, declaredStart string) {
	if len(f.Activities) == 0 {
		return
	}
	g := newGraph(f)
	var starts, ends []int
	if declaredStart != "" {
		if i, ok := g.idx[declaredStart]; ok {
			starts = append(starts, i)
		}
	}
	for i, a := range g.acts {
		if len(g.pred[i]) == 0 && !isBoundary(a) && declaredStart == "" {
			starts = append(starts, i)
		}
		if len(g.succ[i]) == 0 {
			ends = append(ends, i)
		}
	}
	if len(starts) == 0 {
		v.errorf(pos, "no-start", []string{scopeID}, "%s has no start activity: every activity has an incoming transition", scope)
		return
	}
	reachable := g.reach(starts, g.succ, true)
	for i, a := range g.acts {
		if !reachable[i] {
			v.warnf(a.Pos, "unreachable", []string{a.ID}, "activity %q in %s cannot be reached from a start activity", a.ID, scope)
		}
	}
	if len(ends) == 0 {
		v.errorf(pos, "no-end", []string{scopeID}, "%s has no end activity: every activity has an outgoing transition, so it can never complete", scope)
	} else {
		canEnd := g.canEnd(ends)
		for i, a := range g.acts {
			if reachable[i] && !canEnd[i] {
				v.warnf(a.Pos, "no-path-to-end", []string{a.ID}, "activity %q in %s has no path to an end activity", a.ID, scope)
			}
		}
	}
	switch v.pkg.Conformance {
	case ConformanceLoopBlocked:
		v.checkAcyclic(g, scope, scopeID, pos, ConformanceLoopBlocked)
	case ConformanceFullBlocked:
		if v.checkAcyclic(g, scope, scopeID, pos, ConformanceFullBlocked) {
			v.checkFullBlocked(g, scope, scopeID, pos, starts, ends)
		}
	}
}

// canEnd marks the activities from which some end activity is reachable.
// An activity with a boundary event can also end through that event.
func (g *graph) canEnd(ends []int) []bool {
	// back is pred, plus an edge from each boundary event to its target.
	targets := make([]int, len(g.acts))
	attached := false
	for i, a := range g.acts {
		targets[i] = -1
		if isBoundary(a) {
			if t, ok := g.idx[a.Event.Target]; ok {
				targets[i], attached = t, true
			}
		}
	}
	if !attached {
		return g.reach(ends, g.pred, false)
	}
	counts := make([]int, len(g.acts))
	for i := range g.acts {
		counts[i] = len(g.pred[i])
		if targets[i] >= 0 {
			counts[i]++
		}
	}
	back := carve[int](counts)
	for i := range g.acts {
		back[i] = append(back[i], g.pred[i]...)
		if targets[i] >= 0 {
			back[i] = append(back[i], targets[i])
		}
	}
	return g.reach(ends, back, false)
}

// checkAcyclic reports every cycle (strongly connected component) of a
// flow whose conformance class forbids loops; it returns true when there
// is none.
func (v *validator) checkAcyclic(g *graph, scope, scopeID string, pos Pos, class GraphConformance) bool {
	cycles := g.cycles()
	for _, c := range cycles {
		ids := make([]string, len(c))
		for i, n := range c {
			ids[i] = g.acts[n].ID
		}
		v.errorf(g.acts[c[0]].Pos, "conformance", ids, "%s is declared %s but has a loop through activities %s", scope, class, quoteList(ids))
	}
	return len(cycles) == 0
}

func quoteList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = strconv.Quote(id)
	}
	return strings.Join(q, ", ")
}

// cycles returns the strongly connected components that form loops (more
// than one node, or one node with a transition to itself), each in
// document order, found with Tarjan's algorithm (iteratively, so deep
// graphs cannot exhaust the stack).
func (g *graph) cycles() [][]int {
	n := len(g.acts)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var out [][]int
	var sccStack []int
	counter := 0
	type frame struct{ node, next int }
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		work := []frame{{root, 0}}
		index[root], low[root] = counter, counter
		counter++
		sccStack = append(sccStack, root)
		onStack[root] = true
		for len(work) > 0 {
			top := &work[len(work)-1]
			if top.next < len(g.succ[top.node]) {
				m := g.succ[top.node][top.next]
				top.next++
				if index[m] < 0 {
					index[m], low[m] = counter, counter
					counter++
					sccStack = append(sccStack, m)
					onStack[m] = true
					work = append(work, frame{m, 0})
				} else if onStack[m] {
					low[top.node] = min(low[top.node], index[m])
				}
				continue
			}
			node := top.node
			work = work[:len(work)-1]
			if len(work) > 0 {
				parent := work[len(work)-1].node
				low[parent] = min(low[parent], low[node])
			}
			if low[node] != index[node] {
				continue
			}
			var comp []int
			for {
				m := sccStack[len(sccStack)-1]
				sccStack = sccStack[:len(sccStack)-1]
				onStack[m] = false
				comp = append(comp, m)
				if m == node {
					break
				}
			}
			if len(comp) > 1 || slices.Contains(g.succ[node], node) {
				slices.Sort(comp)
				out = append(out, comp)
			}
		}
	}
	slices.SortFunc(out, func(a, b []int) int { return a[0] - b[0] })
	return out
}

// checkFullBlocked checks the block structure FULL_BLOCKED demands of an
// acyclic flow: one start and one end activity, and every split closed by
// a join of the same type that post-dominates it, and every join closing
// such a split.
func (v *validator) checkFullBlocked(g *graph, scope, scopeID string, pos Pos, starts, ends []int) {
	if len(starts) != 1 || len(ends) != 1 {
		v.errorf(pos, "conformance", []string{scopeID}, "%s is declared FULL_BLOCKED but has %d start and %d end activities (one of each is required)", scope, len(starts), len(ends))
		return
	}
	ipdom := g.postDominators(ends[0])
	closes := map[int]bool{}
	for i, a := range g.acts {
		if len(g.succ[i]) < 2 {
			continue
		}
		j := ipdom[i]
		if j < 0 || len(g.pred[j]) < 2 || g.acts[j].Join.Type != a.Split.Type {
			v.errorf(a.Pos, "conformance", []string{a.ID}, "%s is declared FULL_BLOCKED but the %s split of activity %q is not closed by a matching %s join", scope, a.Split.Type, a.ID, a.Split.Type)
			continue
		}
		closes[j] = true
	}
	for i, a := range g.acts {
		if len(g.pred[i]) >= 2 && !closes[i] {
			v.errorf(a.Pos, "conformance", []string{a.ID}, "%s is declared FULL_BLOCKED but the %s join of activity %q closes no split of the same type", scope, a.Join.Type, a.ID)
		}
	}
}

// postDominators returns the immediate post-dominator of every node of an
// acyclic graph with the single exit end (-1 for the exit and for nodes
// that cannot reach it), computed in reverse topological order as the
// nearest common ancestor of the successors in the post-dominator tree.
func (g *graph) postDominators(end int) []int {
	n := len(g.acts)
	order := g.topoOrder()
	ipdom := make([]int, n)
	depth := make([]int, n)
	done := make([]bool, n)
	for i := range ipdom {
		ipdom[i] = -1
	}
	done[end] = true
	lca := func(a, b int) int {
		for a != b {
			if a < 0 || b < 0 {
				return -1
			}
			if depth[a] > depth[b] {
				a = ipdom[a]
			} else if depth[b] > depth[a] {
				b = ipdom[b]
			} else {
				a, b = ipdom[a], ipdom[b]
			}
		}
		return a
	}
	for k := len(order) - 1; k >= 0; k-- {
		node := order[k]
		if node == end {
			continue
		}
		cur, first := -1, true
		for _, s := range g.succ[node] {
			if !done[s] {
				cur, first = -1, false
				break
			}
			if first {
				cur, first = s, false
			} else {
				cur = lca(cur, s)
			}
		}
		if cur >= 0 {
			ipdom[node] = cur
			depth[node] = depth[cur] + 1
			done[node] = true
		}
	}
	return ipdom
}

// topoOrder returns the nodes of an acyclic graph in topological order.
func (g *graph) topoOrder() []int {
	n := len(g.acts)
	indeg := make([]int, n)
	for i := range g.acts {
		indeg[i] = len(g.pred[i])
	}
	// order doubles as the queue: the nodes from head on are yet to visit.
	order := make([]int, 0, n)
	for i := range g.acts {
		if indeg[i] == 0 {
			order = append(order, i)
		}
	}
	for head := 0; head < len(order); head++ {
		node := order[head]
		for _, s := range g.succ[node] {
			indeg[s]--
			if indeg[s] == 0 {
				order = append(order, s)
			}
		}
	}
	return order
}
