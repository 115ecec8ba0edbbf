package diagram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-graphviz"

	"github.com/goxpdl/goxpdl/xpdl"
)

// dot is the process's one Graphviz instance: a WebAssembly module run by
// wazero, made on first use. Graphviz is not safe for concurrent use, so
// one layout runs at a time; layouts are cached by the caller.
var dot struct {
	mu sync.Mutex
	gv *graphviz.Graphviz
}

// points per inch: Graphviz takes node sizes in inches.
const ppi = 72.0

// auto lays the flow out with Graphviz dot, left to right, or, when it
// has more than maxGraphviz activities to place, with the grid layout;
// then it sorts the nodes into lanes (see lanesAfterDot). It returns the
// source of the positions.
func (b *builder) auto(ctx context.Context, maxGraphviz int) (Source, error) {
	for i := range b.nodes {
		b.nodes[i].Lane = b.laneKey(b.flow.Activities[i], xpdl.NodeGraphics{})
	}
	b.inheritLanes()
	// Boundary events are not laid out: they sit on their activity.
	var laid []int
	for i, n := range b.nodes {
		if n.AttachedTo == "" {
			laid = append(laid, i)
		}
	}
	source := SourceAuto
	switch {
	case len(laid) == 0:
	case maxGraphviz >= 0 && len(laid) > maxGraphviz:
		b.grid(laid)
		source = SourceGrid
	default:
		if err := b.runDot(ctx, laid); err != nil {
			return "", err
		}
	}
	b.lanesAfterDot()
	b.attachBoundaryEvents()
	return source, nil
}

// inheritLanes gives an activity with no performer (a route, an event, an
// automatic step) the lane of its nearest predecessor, else successor,
// that has one.
func (b *builder) inheritLanes() {
	for changed := true; changed; {
		changed = false
		for i := range b.nodes {
			if b.nodes[i].Lane != "" {
				continue
			}
			id := b.nodes[i].ID
			for _, t := range b.flow.Incoming(id) {
				if j, ok := b.index[t.From]; ok && b.nodes[j].Lane != "" {
					b.nodes[i].Lane, changed = b.nodes[j].Lane, true
					break
				}
			}
			if b.nodes[i].Lane != "" {
				continue
			}
			for _, t := range b.flow.Outgoing(id) {
				if j, ok := b.index[t.To]; ok && b.nodes[j].Lane != "" {
					b.nodes[i].Lane, changed = b.nodes[j].Lane, true
					break
				}
			}
		}
	}
}

// dotJSON is the part of Graphviz's json0 output the layout reads.
type dotJSON struct {
	BB      string `json:"bb"`
	Objects []struct {
		Name string `json:"name"`
		Pos  string `json:"pos"`
	} `json:"objects"`
	Edges []struct {
		ID  string `json:"id"`
		Pos string `json:"pos"`
	} `json:"edges"`
}

// runDot lays out the nodes of the given indexes and the edges between
// them, and sets their positions and routes.
func (b *builder) runDot(ctx context.Context, laid []int) error {
	dot.mu.Lock()
	defer dot.mu.Unlock()
	if dot.gv == nil {
		gv, err := graphviz.New(ctx)
		if err != nil {
			return fmt.Errorf("start graphviz: %w", err)
		}
		dot.gv = gv
	}
	g, err := dot.gv.Graph()
	if err != nil {
		return fmt.Errorf("graphviz graph: %w", err)
	}
	defer g.Close() //nolint:errcheck // closing frees the graph; there is nothing to do if that fails
	g.SetRankDir(graphviz.LRRank).SetNodeSeparator(0.35).SetRankSeparator(0.55)
	gn := make(map[int]*graphviz.Node, len(laid))
	for _, i := range laid {
		n := &b.nodes[i]
		v, err := g.CreateNodeByName("n" + strconv.Itoa(i))
		if err != nil {
			return fmt.Errorf("graphviz node: %w", err)
		}
		v.SetShape(graphviz.BoxShape).SetFixedSize(true).SetLabel("").
			SetWidth((n.W + nameBelow(*n)) / ppi).SetHeight((n.H + nameBelow(*n)) / ppi)
		gn[i] = v
	}
	for k, e := range b.edges {
		from, to := gn[b.index[e.From]], gn[b.index[e.To]]
		if from == nil || to == nil {
			continue
		}
		ge, err := g.CreateEdgeByName("e"+strconv.Itoa(k), from, to)
		if err != nil {
			return fmt.Errorf("graphviz edge: %w", err)
		}
		if err := ge.SafeSet("id", "e"+strconv.Itoa(k), ""); err != nil {
			return fmt.Errorf("graphviz edge: %w", err)
		}
	}
	var out bytes.Buffer
	if err := dot.gv.Render(ctx, g, graphviz.Format("json0"), &out); err != nil {
		return fmt.Errorf("graphviz layout: %w", err)
	}
	var res dotJSON
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return fmt.Errorf("graphviz output: %w", err)
	}
	bb := parsePoints(res.BB)
	if len(bb) != 2 {
		return fmt.Errorf("graphviz output: bounding box %q", res.BB)
	}
	height := bb[1].Y
	flip := func(p xpdl.Point) xpdl.Point { return xpdl.Point{X: p.X, Y: height - p.Y} }
	for _, o := range res.Objects {
		i, err := strconv.Atoi(strings.TrimPrefix(o.Name, "n"))
		if err != nil || i < 0 || i >= len(b.nodes) {
			continue
		}
		c := parsePoints(o.Pos)
		if len(c) != 1 {
			return fmt.Errorf("graphviz output: node position %q", o.Pos)
		}
		n := &b.nodes[i]
		p := flip(c[0])
		// The Graphviz box holds the name below a gateway or event.
		n.X, n.Y = p.X-n.W/2, p.Y-(n.H+nameBelow(*n))/2
	}
	for _, oe := range res.Edges {
		k, err := strconv.Atoi(strings.TrimPrefix(oe.ID, "e"))
		if err != nil || k < 0 || k >= len(b.edges) {
			continue
		}
		// pos is "[s,x,y] [e,x,y] p0 p1 ... p3n": the arrow tail and head
		// points, then the Bézier control points. There is no arrow tail;
		// the head point is where the curve ends on the target.
		var end *xpdl.Point
		var ctrl []xpdl.Point
		for f := range strings.FieldsSeq(oe.Pos) {
			switch {
			case strings.HasPrefix(f, "e,"):
				if p := parsePoints(f[2:]); len(p) == 1 {
					q := flip(p[0])
					end = &q
				}
			case strings.HasPrefix(f, "s,"):
			default:
				if p := parsePoints(f); len(p) == 1 {
					ctrl = append(ctrl, flip(p[0]))
				}
			}
		}
		if len(ctrl) < 4 || (len(ctrl)-1)%3 != 0 {
			continue // finish routes it straight
		}
		pts := ctrl
		if end != nil {
			pts = append(pts, *end)
		}
		b.edges[k].Points, b.edges[k].Curved = pts, true
	}
	return nil
}

// parsePoints reads "x,y" (a point) or "x1,y1,x2,y2" (a box) from
// Graphviz output.
func parsePoints(s string) []xpdl.Point {
	fs := strings.Split(strings.TrimSuffix(strings.TrimSpace(s), "!"), ",")
	if len(fs)%2 != 0 {
		return nil
	}
	ps := make([]xpdl.Point, 0, len(fs)/2)
	for i := 0; i < len(fs); i += 2 {
		x, err1 := strconv.ParseFloat(fs[i], 64)
		y, err2 := strconv.ParseFloat(fs[i+1], 64)
		if err1 != nil || err2 != nil {
			return nil
		}
		ps = append(ps, xpdl.Point{X: x, Y: y})
	}
	return ps
}

// lanesAfterDot sorts the laid-out nodes into horizontal lanes: lanes are
// ordered by the mean height of their nodes in the dot layout, and each
// lane keeps its nodes' relative positions, moved up or down as one. A
// subset of a layout without overlaps has none, and lanes do not share
// heights, so nodes still do not overlap. Routes inside one lane move
// with it; routes between lanes are drawn straight by finish.
func (b *builder) lanesAfterDot() {
	keys := laneKeys(b.laidNodes())
	if len(keys) == 0 || (len(keys) == 1 && keys[0] == "") {
		return
	}
	type lane struct {
		key           string
		mean          float64
		minY, maxY    float64
		count, before int
	}
	ls := make([]lane, len(keys))
	for i, k := range keys {
		ls[i] = lane{key: k, minY: math.Inf(1), maxY: math.Inf(-1), before: i}
	}
	for _, n := range b.nodes {
		if n.AttachedTo != "" {
			continue
		}
		i := slices.Index(keys, n.Lane)
		ls[i].mean += n.Y + n.H/2
		ls[i].count++
		ls[i].minY = math.Min(ls[i].minY, n.Y)
		ls[i].maxY = math.Max(ls[i].maxY, n.Y+n.H+nameBelow(n))
	}
	for i := range ls {
		ls[i].mean /= float64(ls[i].count)
	}
	slices.SortStableFunc(ls, func(a, c lane) int {
		switch {
		case a.mean < c.mean:
			return -1
		case a.mean > c.mean:
			return 1
		}
		return a.before - c.before
	})
	shift := make(map[string]float64, len(ls))
	top := 0.0
	for _, l := range ls {
		shift[l.key] = top + lanePad - l.minY
		h := l.maxY - l.minY + 2*lanePad
		b.lanes = append(b.lanes, Lane{ID: l.key, Name: b.laneName(l.key), Y: top, H: h})
		top += h
	}
	for i := range b.nodes {
		if b.nodes[i].AttachedTo == "" {
			b.nodes[i].Y += shift[b.nodes[i].Lane]
		}
	}
	for i := range b.edges {
		e := &b.edges[i]
		from, to := b.nodes[b.index[e.From]], b.nodes[b.index[e.To]]
		if from.Lane != to.Lane || from.AttachedTo != "" || to.AttachedTo != "" {
			e.Points, e.Curved = nil, false
			continue
		}
		for k := range e.Points {
			e.Points[k].Y += shift[from.Lane]
		}
	}
}

// laidNodes returns the nodes that are not boundary events.
func (b *builder) laidNodes() []Node {
	var ns []Node
	for _, n := range b.nodes {
		if n.AttachedTo == "" {
			ns = append(ns, n)
		}
	}
	return ns
}

// attachBoundaryEvents puts each boundary event on the bottom border of
// its activity, from the right, and in its lane.
func (b *builder) attachBoundaryEvents() {
	count := make(map[string]int)
	for i := range b.nodes {
		n := &b.nodes[i]
		if n.AttachedTo == "" {
			continue
		}
		t := b.nodes[b.index[n.AttachedTo]]
		k := count[n.AttachedTo]
		count[n.AttachedTo]++
		n.X = t.X + t.W - boundaryEventShift - float64(k+1)*(n.W+4)
		n.Y = t.Y + t.H - n.H/2
		n.Lane = t.Lane
	}
}
