package diagram

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/goxpdl/goxpdl/xpdl"
)

// ErrNotFound is returned, wrapped with the id, when the package has no
// process, or the process no activity set, of the id asked for.
var ErrNotFound = errors.New("diagram: not found")

// Options are the per-call options of NewLayout.
type Options struct {
	// ActivitySet names an activity set of the process to draw on its own
	// (the inside of a block activity); empty draws the process's top
	// level.
	ActivitySet string
	// IgnoreCoordinates lays the graph out automatically even when the
	// file carries usable coordinates.
	IgnoreCoordinates bool
	// MaxGraphviz is the most activities the automatic layout hands to
	// Graphviz; a flow with more gets the grid layout, which takes
	// linear time (SourceGrid). Zero means DefaultMaxGraphviz; negative,
	// Graphviz whatever the size.
	MaxGraphviz int
}

// Source says where a layout's positions came from.
type Source string

// The layout sources.
const (
	// SourceFile: the coordinates the file carries.
	SourceFile Source = "file"
	// SourceAuto: the automatic layered layout (Graphviz dot).
	SourceAuto Source = "auto"
	// SourceGrid: the automatic layout of a flow too large for Graphviz
	// (Options.MaxGraphviz): columns by rank, straight routes.
	SourceGrid Source = "grid"
)

// Shape is how a node is drawn.
type Shape string

// The node shapes.
const (
	ShapeTask    Shape = "task"    // a rounded box: manual, tool, script activities
	ShapeSubFlow Shape = "subflow" // a box with a subprocess marker
	ShapeBlock   Shape = "block"   // a box with a double border: a block activity
	ShapeGateway Shape = "gateway" // a diamond: a route activity
	ShapeEvent   Shape = "event"   // a circle: an XPDL 2 event
)

// Layout is the placed drawing of one flow: a process's top level or one
// of its activity sets. It depends only on the definition and is never
// changed after NewLayout returns, so it may be cached per definition
// version and drawn concurrently.
type Layout struct {
	ProcessID   string
	ActivitySet string
	Source      Source
	// Width and Height are the size of the drawing, in SVG user units.
	Width, Height float64
	// Vertical says that the lanes are columns (JaWE's VERTICAL
	// participant orientation) rather than rows.
	Vertical bool
	Lanes    []Lane
	Nodes    []Node
	Edges    []Edge
}

// Lane is a band for one participant (an XPDL 2 lane, or a participant
// of JaWE's order, or an activity performer): a row across the whole
// width of the drawing, or, when the layout is Vertical, a column down its
// whole height. X and Y are its top-left corner.
type Lane struct {
	ID, Name   string
	X, Y, W, H float64
}

// Node is one placed activity. X and Y are its top-left corner.
type Node struct {
	ID, Name string
	Shape    Shape
	Kind     xpdl.ActivityKind
	// Gateway is the marker of a gateway: the route's type, else its
	// split's, else its join's.
	Gateway xpdl.GatewayType
	// Join and Split are the declared (non-implicit) gateway behaviour.
	Join, Split xpdl.GatewayType
	Event       xpdl.EventType
	Trigger     xpdl.Trigger
	// ActivitySet is the set a block activity runs (draw it with
	// Options.ActivitySet); SubFlow the process a subflow calls.
	ActivitySet, SubFlow string
	// AttachedTo is the activity a boundary event sits on; such a node
	// overlaps its activity's border on purpose.
	AttachedTo string
	Lane       string
	X, Y, W, H float64
}

// Edge is one placed transition.
type Edge struct {
	ID, From, To string
	// Name is the transition's name; Label its condition, shortened.
	Name, Label string
	// Condition is the condition type; empty for an unconditional one.
	Condition xpdl.ConditionType
	// Points is the route: a polyline, or, when Curved, the control points
	// of cubic Bézier segments (1+3n points) followed by at most one point
	// reached in a straight line. The last point touches the target.
	Points []xpdl.Point
	Curved bool
	// LabelAt is where the label is drawn.
	LabelAt xpdl.Point
}

// Node returns the node of the activity with the given id, or nil.
func (l *Layout) Node(id string) *Node {
	for i := range l.Nodes {
		if l.Nodes[i].ID == id {
			return &l.Nodes[i]
		}
	}
	return nil
}

// Default node sizes of the automatic layout, and of file layouts that
// give none.
const (
	taskW, taskH       = 110.0, 56.0
	gatewaySize        = 44.0
	eventSize          = 34.0
	laneHeader         = 28.0 // width of the lane name column
	margin             = 16.0
	lanePad            = 16.0
	maxLabelRunes      = 32
	boundaryEventShift = 8.0
)

// NewLayout places the activities of process processID of pkg (or of its
// activity set opts.ActivitySet). It uses the coordinates in the file
// when every activity has some and no two activities overlap, and the
// automatic layout otherwise. Transitions whose ends are not both
// activities of the flow are left out.
func NewLayout(ctx context.Context, pkg *xpdl.Package, processID string, opts Options) (*Layout, error) {
	if pkg == nil {
		return nil, fmt.Errorf("diagram: process %q: no package: %w", processID, ErrNotFound)
	}
	proc := pkg.Process(processID)
	if proc == nil {
		return nil, fmt.Errorf("diagram: process %q: %w", processID, ErrNotFound)
	}
	flow := &proc.Flow
	if opts.ActivitySet != "" {
		set := proc.ActivitySet(opts.ActivitySet)
		if set == nil {
			return nil, fmt.Errorf("diagram: process %q: activity set %q: %w", processID, opts.ActivitySet, ErrNotFound)
		}
		flow = &set.Flow
	}
	b := newBuilder(pkg, proc, flow)
	l := &Layout{ProcessID: processID, ActivitySet: opts.ActivitySet}
	if !opts.IgnoreCoordinates && b.fromFile() {
		l.Source = SourceFile
	} else {
		maxGraphviz := opts.MaxGraphviz
		if maxGraphviz == 0 {
			maxGraphviz = DefaultMaxGraphviz
		}
		source, err := b.auto(ctx, maxGraphviz)
		if err != nil {
			return nil, fmt.Errorf("diagram: process %q: %w", processID, err)
		}
		l.Source = source
	}
	b.finish(l)
	return l, nil
}

// builder holds the work of one NewLayout call.
type builder struct {
	pkg   *xpdl.Package
	proc  *xpdl.Process
	flow  *xpdl.Flow
	nodes []Node
	// index maps an activity id to its first node.
	index map[string]int
	edges []Edge
	// lanes are the lanes in drawing order; vertical makes them columns.
	lanes    []Lane
	vertical bool
}

func newBuilder(pkg *xpdl.Package, proc *xpdl.Process, flow *xpdl.Flow) *builder {
	b := &builder{pkg: pkg, proc: proc, flow: flow, index: make(map[string]int)}
	for _, a := range flow.Activities {
		n := Node{ID: a.ID, Name: a.Name, Kind: a.Kind, Shape: ShapeTask, W: taskW, H: taskH}
		if !a.Join.Implicit {
			n.Join = a.Join.Type
		}
		if !a.Split.Implicit {
			n.Split = a.Split.Type
		}
		switch a.Kind {
		case xpdl.ActivityRoute:
			n.Shape, n.W, n.H = ShapeGateway, gatewaySize, gatewaySize
			n.Gateway = firstGateway(routeType(a), a.Split.Type, a.Join.Type, xpdl.GatewayXOR)
		case xpdl.ActivityEvent:
			n.Shape, n.W, n.H = ShapeEvent, eventSize, eventSize
			if a.Event != nil {
				n.Event, n.Trigger, n.AttachedTo = a.Event.Type, a.Event.Trigger, a.Event.Target
			}
		case xpdl.ActivitySubFlow:
			n.Shape = ShapeSubFlow
			if a.SubFlow != nil {
				n.SubFlow = a.SubFlow.Process
			}
		case xpdl.ActivityBlock:
			n.Shape = ShapeBlock
			if a.Block != nil {
				n.ActivitySet = a.Block.ActivitySet
			}
		}
		if _, dup := b.index[a.ID]; !dup {
			b.index[a.ID] = len(b.nodes)
		}
		b.nodes = append(b.nodes, n)
	}
	for i := range b.nodes {
		if t := b.nodes[i].AttachedTo; t != "" {
			if _, ok := b.index[t]; !ok || t == b.nodes[i].ID {
				b.nodes[i].AttachedTo = ""
			}
		}
	}
	for _, t := range flow.Transitions {
		if _, ok := b.index[t.From]; !ok {
			continue
		}
		if _, ok := b.index[t.To]; !ok {
			continue
		}
		e := Edge{ID: t.ID, From: t.From, To: t.To, Name: t.Name, Label: edgeLabel(t)}
		if t.Condition != nil {
			e.Condition = t.Condition.Type
		}
		b.edges = append(b.edges, e)
	}
	return b
}

func routeType(a *xpdl.Activity) xpdl.GatewayType {
	if a.Route == nil {
		return xpdl.GatewayNone
	}
	return a.Route.GatewayType
}

func firstGateway(types ...xpdl.GatewayType) xpdl.GatewayType {
	for _, t := range types {
		if t != xpdl.GatewayNone {
			return t
		}
	}
	return xpdl.GatewayNone
}

// edgeLabel is the text drawn on a transition: its condition, shortened.
// (Names, which tools often generate as "From_To", are in the tooltip.)
func edgeLabel(t *xpdl.Transition) string {
	if c := t.Condition; c != nil {
		switch c.Type {
		case xpdl.ConditionOtherwise:
			return "otherwise"
		case xpdl.ConditionDefaultException:
			return "default exception"
		case xpdl.ConditionException:
			return shorten("exception "+strings.TrimSpace(c.Expression.Text), maxLabelRunes)
		}
		return shorten(strings.TrimSpace(c.Expression.Text), maxLabelRunes)
	}
	return ""
}

// shorten collapses white space and cuts s to at most n runes, ending
// with an ellipsis when cut.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// overlap reports whether two boxes share an area (touching is fine).
func overlap(a, b *Node) bool {
	const eps = 0.5
	return a.X+eps < b.X+b.W && b.X+eps < a.X+a.W && a.Y+eps < b.Y+b.H && b.Y+eps < a.Y+a.H
}

// anyOverlap reports whether two nodes overlap, leaving out boundary
// events (drawn on their activity's border on purpose).
func anyOverlap(nodes []Node) bool {
	for i := range nodes {
		if nodes[i].AttachedTo != "" {
			continue
		}
		for j := i + 1; j < len(nodes); j++ {
			if nodes[j].AttachedTo == "" && overlap(&nodes[i], &nodes[j]) {
				return true
			}
		}
	}
	return false
}

// finish routes the edges that have no route yet, moves everything so
// the drawing starts at the margin, and copies the result into l.
func (b *builder) finish(l *Layout) {
	for i := range b.edges {
		e := &b.edges[i]
		if len(e.Points) == 0 {
			e.Points = b.straight(e.From, e.To, nil)
			e.Curved = false
		}
	}
	minX, minY := math.Inf(1), math.Inf(1)
	maxX, maxY := math.Inf(-1), math.Inf(-1)
	grow := func(x, y float64) {
		minX, minY = math.Min(minX, x), math.Min(minY, y)
		maxX, maxY = math.Max(maxX, x), math.Max(maxY, y)
	}
	for _, n := range b.nodes {
		grow(n.X, n.Y)
		grow(n.X+n.W, n.Y+n.H+nameBelow(n))
	}
	for _, e := range b.edges {
		for _, p := range e.Points {
			grow(p.X, p.Y)
		}
	}
	for _, ln := range b.lanes {
		if b.vertical {
			grow(ln.X, minY)
			grow(ln.X+ln.W, minY)
		} else {
			grow(minX, ln.Y)
			grow(minX, ln.Y+ln.H)
		}
	}
	if len(b.nodes) == 0 {
		minX, minY, maxX, maxY = 0, 0, 0, 0
	}
	left, top := margin, margin
	if len(b.lanes) > 0 {
		if b.vertical {
			top += laneHeader + lanePad
		} else {
			left += laneHeader + lanePad
		}
	}
	dx, dy := left-minX, top-minY
	for i := range b.nodes {
		b.nodes[i].X, b.nodes[i].Y = round(b.nodes[i].X+dx), round(b.nodes[i].Y+dy)
	}
	for i := range b.edges {
		e := &b.edges[i]
		for k := range e.Points {
			e.Points[k] = xpdl.Point{X: round(e.Points[k].X + dx), Y: round(e.Points[k].Y + dy)}
		}
		e.LabelAt = labelAt(e)
	}
	l.Width = round(maxX + dx + margin)
	l.Height = round(maxY + dy + margin)
	for i := range b.lanes {
		ln := &b.lanes[i]
		if b.vertical {
			ln.X, ln.W = round(ln.X+dx), round(ln.W)
			ln.Y, ln.H = margin, l.Height-2*margin
		} else {
			ln.Y, ln.H = round(ln.Y+dy), round(ln.H)
			ln.X, ln.W = margin, l.Width-2*margin
		}
	}
	l.Vertical = b.vertical && len(b.lanes) > 0
	l.Nodes, l.Edges, l.Lanes = b.nodes, b.edges, b.lanes
}

// nameBelow is the room a gateway's or event's name takes under it.
func nameBelow(n Node) float64 {
	if n.Name != "" && (n.Shape == ShapeGateway || n.Shape == ShapeEvent) {
		return 16
	}
	return 0
}

func round(v float64) float64 { return math.Round(v*10) / 10 }

// labelAt is the middle of an edge's route.
func labelAt(e *Edge) xpdl.Point {
	p := e.Points
	if len(p) == 0 {
		return xpdl.Point{}
	}
	if e.Curved && len(p) >= 4 {
		// The middle point of the middle segment's curve.
		seg := (len(p) - 1) / 3 / 2
		a, c1, c2, d := p[3*seg], p[3*seg+1], p[3*seg+2], p[3*seg+3]
		return xpdl.Point{
			X: round((a.X + 3*c1.X + 3*c2.X + d.X) / 8),
			Y: round((a.Y + 3*c1.Y + 3*c2.Y + d.Y) / 8),
		}
	}
	if len(p)%2 == 0 {
		a, c := p[len(p)/2-1], p[len(p)/2]
		return xpdl.Point{X: round((a.X + c.X) / 2), Y: round((a.Y + c.Y) / 2)}
	}
	return p[len(p)/2]
}

// straight routes an edge from the border of one node through via to the
// border of the other; a self-loop goes round the node's top-right
// corner.
func (b *builder) straight(from, to string, via []xpdl.Point) []xpdl.Point {
	s, t := &b.nodes[b.index[from]], &b.nodes[b.index[to]]
	if from == to && len(via) == 0 {
		return []xpdl.Point{
			{X: s.X + s.W*0.75, Y: s.Y},
			{X: s.X + s.W*0.75, Y: s.Y - 20},
			{X: s.X + s.W + 20, Y: s.Y - 20},
			{X: s.X + s.W + 20, Y: s.Y + s.H*0.25},
			{X: s.X + s.W, Y: s.Y + s.H*0.25},
		}
	}
	first, last := center(t), center(s)
	if len(via) > 0 {
		first, last = via[0], via[len(via)-1]
	}
	pts := make([]xpdl.Point, 0, len(via)+2)
	pts = append(pts, clip(s, first))
	pts = append(pts, via...)
	return append(pts, clip(t, last))
}

func center(n *Node) xpdl.Point { return xpdl.Point{X: n.X + n.W/2, Y: n.Y + n.H/2} }

// clip returns where the line from n's centre towards p leaves n's box.
func clip(n *Node, p xpdl.Point) xpdl.Point {
	c := center(n)
	dx, dy := p.X-c.X, p.Y-c.Y
	if dx == 0 && dy == 0 {
		return c
	}
	sx, sy := math.Inf(1), math.Inf(1)
	if dx != 0 {
		sx = (n.W / 2) / math.Abs(dx)
	}
	if dy != 0 {
		sy = (n.H / 2) / math.Abs(dy)
	}
	s := math.Min(sx, sy)
	if n.Shape == ShapeGateway {
		// The diamond |x|/(W/2) + |y|/(H/2) = 1.
		s = 1 / (math.Abs(dx)/(n.W/2) + math.Abs(dy)/(n.H/2))
	}
	if s > 1 {
		s = 1 // p lies inside the box
	}
	return xpdl.Point{X: c.X + dx*s, Y: c.Y + dy*s}
}
