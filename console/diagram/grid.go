package diagram

import (
	"cmp"
	"slices"
)

// DefaultMaxGraphviz is Options.MaxGraphviz's default: Graphviz lays out
// flows of up to 300 activities, larger ones get the grid layout.
// Graphviz's time grows faster than the number of activities: on chains
// with skips and loops (BenchmarkLargeLayout, development machine) 56 ms
// at 100, 160 ms at 300, 1.0 s at 1,000 and 26 s at 10,000; the grid
// layout takes 0.3 ms at 300 and 30-120 ms at 10,000.
const DefaultMaxGraphviz = 300

// The gaps of the grid layout, between ranks (columns) and between the
// nodes of one rank.
const (
	gridRankGap = 40.0
	gridNodeGap = 24.0
)

// grid lays the nodes of the given indexes out in linear time, left to
// right, for flows too large for Graphviz: each node in the column of its
// rank (the longest path to it from a node without predecessors, once the
// transitions that close cycles are set aside), the nodes of one column
// in the order of the mean row of their predecessors (one pass, which
// untangles chains and simple branches), and every route straight.
// Positions are what Graphviz would give: the lanes are sorted out
// afterwards in the same way.
func (b *builder) grid(laid []int) {
	pos := make(map[int]int, len(laid)) // node index -> position in laid
	for p, i := range laid {
		pos[i] = p
	}
	succ := make([][]int, len(laid))
	for _, e := range b.edges {
		from, okFrom := pos[b.index[e.From]]
		to, okTo := pos[b.index[e.To]]
		if okFrom && okTo && from != to {
			succ[from] = append(succ[from], to)
		}
	}
	forward := dropBackEdges(succ)
	rank := longestPathRanks(forward)

	// Columns, each ordered by the mean row of the node's predecessors in
	// earlier columns; ties keep the order of the file.
	columns := make([][]int, slices.Max(append(rank, 0))+1)
	for p := range laid {
		columns[rank[p]] = append(columns[rank[p]], p)
	}
	pred := make([][]int, len(laid))
	for p, ss := range forward {
		for _, s := range ss {
			pred[s] = append(pred[s], p)
		}
	}
	row := make([]float64, len(laid))
	for _, col := range columns {
		key := make(map[int]float64, len(col))
		for k, p := range col {
			key[p] = float64(k)
			if len(pred[p]) > 0 {
				sum := 0.0
				for _, q := range pred[p] {
					sum += row[q]
				}
				key[p] = sum / float64(len(pred[p]))
			}
		}
		slices.SortStableFunc(col, func(a, c int) int { return cmp.Compare(key[a], key[c]) })
		for k, p := range col {
			row[p] = float64(k)
		}
	}

	// Place: columns as wide as their widest node, nodes centred in them.
	x := 0.0
	for _, col := range columns {
		width, y := 0.0, 0.0
		for _, p := range col {
			width = max(width, b.nodes[laid[p]].W)
		}
		for _, p := range col {
			n := &b.nodes[laid[p]]
			n.X, n.Y = x+(width-n.W)/2, y
			y += n.H + nameBelow(*n) + gridNodeGap
		}
		x += width + gridRankGap
	}
}

// dropBackEdges returns the successor lists without the edges that close
// a cycle (those to a node still on the stack of a depth-first search
// begun at each node in turn), so that what is left is acyclic. It walks
// with a stack of its own: a chain of 10,000 activities would nest as
// deep.
func dropBackEdges(succ [][]int) [][]int {
	const (
		unseen = iota
		open
		done
	)
	state := make([]int, len(succ))
	out := make([][]int, len(succ))
	type frame struct{ node, next int }
	for root := range succ {
		if state[root] != unseen {
			continue
		}
		stack := []frame{{node: root}}
		state[root] = open
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.next == len(succ[f.node]) {
				state[f.node] = done
				stack = stack[:len(stack)-1]
				continue
			}
			s := succ[f.node][f.next]
			f.next++
			switch state[s] {
			case open:
				// a back edge: left out
			case unseen:
				out[f.node] = append(out[f.node], s)
				state[s] = open
				stack = append(stack, frame{node: s})
			default:
				out[f.node] = append(out[f.node], s)
			}
		}
	}
	return out
}

// longestPathRanks gives each node of an acyclic graph the length of the
// longest path to it from a node without predecessors (Kahn's order).
func longestPathRanks(succ [][]int) []int {
	indeg := make([]int, len(succ))
	for _, ss := range succ {
		for _, s := range ss {
			indeg[s]++
		}
	}
	rank := make([]int, len(succ))
	queue := make([]int, 0, len(succ))
	for p, d := range indeg {
		if d == 0 {
			queue = append(queue, p)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, s := range succ[p] {
			rank[s] = max(rank[s], rank[p]+1)
			if indeg[s]--; indeg[s] == 0 {
				queue = append(queue, s)
			}
		}
	}
	return rank
}
