package diagram

import (
	"math"
	"slices"
	"strings"

	"github.com/goxpdl/goxpdl/xpdl"
)

// Tool ids the reader gives to XPDL 1 layout extended attributes.
const toolJaWE = "JaWE"

// JaWE's activity size, for the XPDL 1 files it wrote (they give none).
const jaweW, jaweH = 90.0, 50.0

// fromFile places the nodes at the coordinates the file gives and reports
// whether they are usable: every activity has some, not all are zero, and
// no two activities overlap. On false the builder is unchanged.
func (b *builder) fromFile() bool {
	if len(b.nodes) == 0 {
		return false
	}
	gs := make([]xpdl.NodeGraphics, len(b.nodes))
	allZero, allJaWE := true, true
	for i, a := range b.flow.Activities {
		g, ok := pickGraphics(a.Graphics)
		if !ok {
			return false
		}
		gs[i] = g
		allZero = allZero && g.X == 0 && g.Y == 0
		allJaWE = allJaWE && g.ToolID == toolJaWE
	}
	if allZero {
		return false
	}
	relative := allJaWE
	nodes := slices.Clone(b.nodes)
	for i := range nodes {
		switch {
		case gs[i].Width > 0 && gs[i].Height > 0:
			nodes[i].W, nodes[i].H = gs[i].Width, gs[i].Height
		case relative && b.pkg.Version == xpdl.Version10 && nodes[i].Shape != ShapeGateway && nodes[i].Shape != ShapeEvent:
			nodes[i].W, nodes[i].H = jaweW, jaweH
		}
		nodes[i].X, nodes[i].Y = gs[i].X, gs[i].Y
		nodes[i].Lane = b.laneKey(b.flow.Activities[i], gs[i])
	}
	var lanes []Lane
	vertical := false
	if relative {
		// JaWE writes offsets inside the participant's lane; the lanes
		// stack in the order the process (or block) declares, as rows or
		// as columns.
		o, _ := b.proc.ExtendedAttributes.Get("JaWE_GRAPH_WORKFLOW_PARTICIPANT_ORIENTATION")
		if pool := b.pool(); pool != nil && o == "" {
			o = pool.Orientation
		}
		vertical = strings.EqualFold(strings.TrimSpace(o), "VERTICAL")
		lanes = b.stackLanes(nodes, b.jaweOrder(), vertical)
	} else {
		lanes = bands(nodes, b.laneName)
	}
	if anyOverlap(nodes) && !relative {
		// Some tools (Eclipse's BPMN modeller) give the centre, not the
		// top-left corner.
		for i := range nodes {
			nodes[i].X, nodes[i].Y = gs[i].X-nodes[i].W/2, gs[i].Y-nodes[i].H/2
		}
		lanes = bands(nodes, b.laneName)
	}
	if anyOverlap(nodes) {
		return false
	}
	b.nodes, b.lanes, b.vertical = nodes, lanes, vertical
	b.fileRoutes()
	return true
}

// pickGraphics chooses the position of one activity among its tools'
// entries: the first with non-zero coordinates, else the first.
func pickGraphics(gs []xpdl.NodeGraphics) (xpdl.NodeGraphics, bool) {
	for _, g := range gs {
		if g.X != 0 || g.Y != 0 {
			return g, true
		}
	}
	if len(gs) > 0 {
		return gs[0], true
	}
	return xpdl.NodeGraphics{}, false
}

// laneKey is the lane of an activity: the lane its graphics name (an
// XPDL 2 lane id, or JaWE's participant id), else its first performer.
func (b *builder) laneKey(a *xpdl.Activity, g xpdl.NodeGraphics) string {
	if g.LaneID != "" {
		return g.LaneID
	}
	for _, gg := range a.Graphics {
		if gg.LaneID != "" {
			return gg.LaneID
		}
	}
	if len(a.Performers) > 0 {
		return strings.TrimSpace(a.Performers[0])
	}
	return ""
}

// laneName is what a lane is called: the XPDL 2 lane's name, the
// participant's name, or the key itself (a performer expression).
func (b *builder) laneName(key string) string {
	for _, p := range b.pkg.Pools {
		for _, l := range p.Lanes {
			if l.ID == key && l.Name != "" {
				return l.Name
			}
		}
	}
	for _, ps := range [][]*xpdl.Participant{b.proc.Participants, b.pkg.Participants} {
		for _, p := range ps {
			if p.ID == key {
				if p.Name != "" {
					return p.Name
				}
				return p.ID
			}
		}
	}
	return key
}

// jaweOrder is JaWE's participant order for the flow: the process's
// JaWE_GRAPH_WORKFLOW_PARTICIPANT_ORDER, or for an activity set the
// JaWE_GRAPH_BLOCK_PARTICIPANT_ORDER of the block activity that runs it.
func (b *builder) jaweOrder() []string {
	attr := "JaWE_GRAPH_WORKFLOW_PARTICIPANT_ORDER"
	ea := b.proc.ExtendedAttributes
	if b.flow != &b.proc.Flow {
		attr = "JaWE_GRAPH_BLOCK_PARTICIPANT_ORDER"
		ea = nil
		for _, f := range b.proc.Flows() {
			for _, a := range f.Activities {
				if a.Block != nil && b.proc.ActivitySet(a.Block.ActivitySet) != nil &&
					&b.proc.ActivitySet(a.Block.ActivitySet).Flow == b.flow {
					ea = a.ExtendedAttributes
				}
			}
		}
	}
	v, _ := ea.Get(attr)
	if pool := b.pool(); v == "" && pool != nil {
		// JaWE's XPDL 2 files order the lanes of the process's pool.
		for _, l := range pool.Lanes {
			v += l.ID + ";"
		}
	}
	var order []string
	for p := range strings.SplitSeq(v, ";") {
		if p = strings.TrimSpace(p); p != "" {
			order = append(order, p)
		}
	}
	return order
}

// pool returns the XPDL 2 pool of the process, or nil.
func (b *builder) pool() *xpdl.Pool {
	for _, p := range b.pkg.Pools {
		if p.Process == b.proc.ID {
			return p
		}
	}
	return nil
}

// stackLanes moves nodes whose position is relative to their lane into
// lanes stacked in the given order (keys not in it follow in the order
// of their first node): rows top to bottom, or columns left to right
// when vertical. It returns the lanes.
func (b *builder) stackLanes(nodes []Node, order []string, vertical bool) []Lane {
	keys := laneKeys(nodes)
	ordered := make([]string, 0, len(keys))
	for _, k := range order {
		if slices.Contains(keys, k) && !slices.Contains(ordered, k) {
			ordered = append(ordered, k)
		}
	}
	for _, k := range keys {
		if !slices.Contains(ordered, k) {
			ordered = append(ordered, k)
		}
	}
	var lanes []Lane
	at := 0.0
	for _, k := range ordered {
		end := 0.0
		for i := range nodes {
			if nodes[i].Lane != k {
				continue
			}
			if vertical {
				end = math.Max(end, nodes[i].X+nodes[i].W)
			} else {
				end = math.Max(end, nodes[i].Y+nodes[i].H+nameBelow(nodes[i]))
			}
		}
		size := math.Max(end+lanePad, 2*lanePad+taskH)
		for i := range nodes {
			if nodes[i].Lane == k {
				if vertical {
					nodes[i].X += at
				} else {
					nodes[i].Y += at
				}
			}
		}
		ln := Lane{ID: k, Name: b.laneName(k)}
		if vertical {
			ln.X, ln.W = at, size
		} else {
			ln.Y, ln.H = at, size
		}
		lanes = append(lanes, ln)
		at += size
	}
	return lanes
}

// laneKeys returns the distinct lane keys of nodes in order of first use.
func laneKeys(nodes []Node) []string {
	var keys []string
	for _, n := range nodes {
		if !slices.Contains(keys, n.Lane) {
			keys = append(keys, n.Lane)
		}
	}
	return keys
}

// bands draws lanes around nodes placed on one canvas: one band per lane
// key from its highest to its lowest node. It returns no lanes when no
// node has a lane or when the bands of two lanes overlap (the file's
// lanes are then not recoverable from the nodes alone).
func bands(nodes []Node, name func(string) string) []Lane {
	keys := laneKeys(nodes)
	if len(keys) == 1 && keys[0] == "" {
		return nil
	}
	type band struct {
		key      string
		min, max float64
	}
	var bs []band
	for _, k := range keys {
		bd := band{key: k, min: math.Inf(1), max: math.Inf(-1)}
		for _, n := range nodes {
			if n.Lane == k {
				bd.min = math.Min(bd.min, n.Y)
				bd.max = math.Max(bd.max, n.Y+n.H+nameBelow(n))
			}
		}
		bs = append(bs, bd)
	}
	slices.SortStableFunc(bs, func(a, b band) int {
		switch {
		case a.min < b.min:
			return -1
		case a.min > b.min:
			return 1
		}
		return 0
	})
	for i := 1; i < len(bs); i++ {
		if bs[i].min < bs[i-1].max {
			return nil
		}
	}
	lanes := make([]Lane, len(bs))
	for i, bd := range bs {
		top := bd.min - lanePad
		if i > 0 {
			top = (bs[i-1].max + bd.min) / 2
		}
		bottom := bd.max + lanePad
		if i+1 < len(bs) {
			bottom = (bd.max + bs[i+1].min) / 2
		}
		lanes[i] = Lane{ID: bd.key, Name: name(bd.key), Y: top, H: bottom - top}
	}
	return lanes
}

// fileRoutes takes the transitions' routes from the file where they lie
// on the drawing; the others are routed straight by finish.
func (b *builder) fileRoutes() {
	minX, minY := math.Inf(1), math.Inf(1)
	maxX, maxY := math.Inf(-1), math.Inf(-1)
	for _, n := range b.nodes {
		minX, minY = math.Min(minX, n.X), math.Min(minY, n.Y)
		maxX, maxY = math.Max(maxX, n.X+n.W), math.Max(maxY, n.Y+n.H)
	}
	const slack = 100
	inside := func(p xpdl.Point) bool {
		return p.X >= minX-slack && p.X <= maxX+slack && p.Y >= minY-slack && p.Y <= maxY+slack
	}
	k := 0
	for _, t := range b.flow.Transitions {
		if k >= len(b.edges) || b.edges[k].ID != t.ID || b.edges[k].From != t.From || b.edges[k].To != t.To {
			continue // left out (an end outside the flow)
		}
		e := &b.edges[k]
		k++
		from, to := &b.nodes[b.index[e.From]], &b.nodes[b.index[e.To]]
		for _, cg := range t.Graphics {
			if len(cg.Points) == 0 || !all(cg.Points, inside) || strings.HasSuffix(cg.ToolID, "AnchorPosition") {
				continue // TIBCO's anchor positions are not routes
			}
			if cg.ToolID != toolJaWE && (distance(from, cg.Points[0]) > routeSlack || distance(to, cg.Points[len(cg.Points)-1]) > routeSlack) {
				continue // XPDL 2 routes run from one activity to the other
			}
			via := slices.Clone(cg.Points)
			// XPDL 2 tools write the ends too; drop those lying on or in
			// the nodes, they are recomputed on the borders.
			if len(via) > 0 && within(&b.nodes[b.index[e.From]], via[0]) {
				via = via[1:]
			}
			if len(via) > 0 && within(&b.nodes[b.index[e.To]], via[len(via)-1]) {
				via = via[:len(via)-1]
			}
			if len(via) > 0 {
				e.Points = b.straight(e.From, e.To, via)
			}
			break
		}
	}
}

func all(ps []xpdl.Point, f func(xpdl.Point) bool) bool {
	for _, p := range ps {
		if !f(p) {
			return false
		}
	}
	return true
}

// routeSlack is how far from its activities an XPDL 2 route may start
// and end.
const routeSlack = 40.0

// distance is how far p lies from n's box (0 inside it).
func distance(n *Node, p xpdl.Point) float64 {
	dx := math.Max(0, math.Max(n.X-p.X, p.X-(n.X+n.W)))
	dy := math.Max(0, math.Max(n.Y-p.Y, p.Y-(n.Y+n.H)))
	return math.Hypot(dx, dy)
}

// within reports whether p lies in n's box or on its border (give or
// take a few units).
func within(n *Node, p xpdl.Point) bool {
	const e = 3
	return p.X >= n.X-e && p.X <= n.X+n.W+e && p.Y >= n.Y-e && p.Y <= n.Y+n.H+e
}
