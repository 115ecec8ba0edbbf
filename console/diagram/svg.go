package diagram

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// State is what an instance (or a definition's instances together) has
// done, drawn over a layout. The zero State draws the bare definition.
type State struct {
	// Activities maps an activity id to its state.
	Activities map[string]ActivityState
	// Taken holds the ids of the transitions that were taken.
	Taken map[string]bool
}

// ActivityState is the state drawn on one activity.
type ActivityState struct {
	// State colours the activity: Initiated and Active as running,
	// Waiting and InActive as waiting for a person, Completed as done,
	// Abnormal as an incident (red). Empty draws it plain.
	State wftype.ActivityState
	// Count is the number of instances of the activity; shown as a badge
	// when above zero.
	Count int
	// Current highlights the activity (where the instance stands now).
	Current bool
}

// stateClass is the CSS class of an activity state.
func stateClass(s wftype.ActivityState) string {
	switch s {
	case wftype.ActivityInitiated, wftype.ActivityActive:
		return "running"
	case wftype.ActivityWaiting, wftype.ActivityInActive:
		return "waiting"
	case wftype.ActivityCompleted:
		return "completed"
	case wftype.ActivityAbnormal:
		return "incident"
	}
	return ""
}

// style is the drawing's style sheet, scoped to the diagram so that a
// page can inline several and override any rule.
const style = `.xpdl-diagram{font-family:sans-serif;font-size:11px}
.xpdl-diagram .lane rect{fill:#f7f7f7;stroke:#bbb}
.xpdl-diagram .lane text{fill:#555;font-weight:bold}
.xpdl-diagram .edge path{fill:none;stroke:#555;stroke-width:1.2}
.xpdl-diagram .edge.taken path{stroke:#1a7f37;stroke-width:2.4}
.xpdl-diagram .edge.exception path{stroke-dasharray:5 3}
.xpdl-diagram .edge text{fill:#444;font-size:10px}
.xpdl-diagram .node>rect,.xpdl-diagram .node>polygon,.xpdl-diagram .node>circle{fill:#fff;stroke:#333;stroke-width:1.4}
.xpdl-diagram .node.block>rect.inner{fill:none}
.xpdl-diagram .node.event.end>circle{stroke-width:3}
.xpdl-diagram .node text{fill:#111}
.xpdl-diagram .node .marker{font-weight:bold;font-size:14px}
.xpdl-diagram .node.running>rect,.xpdl-diagram .node.running>polygon,.xpdl-diagram .node.running>circle{fill:#dbeafe;stroke:#1d4ed8}
.xpdl-diagram .node.waiting>rect,.xpdl-diagram .node.waiting>polygon,.xpdl-diagram .node.waiting>circle{fill:#fef9c3;stroke:#a16207}
.xpdl-diagram .node.completed>rect,.xpdl-diagram .node.completed>polygon,.xpdl-diagram .node.completed>circle{fill:#dcfce7;stroke:#15803d}
.xpdl-diagram .node.incident>rect,.xpdl-diagram .node.incident>polygon,.xpdl-diagram .node.incident>circle{fill:#fee2e2;stroke:#dc2626;stroke-width:2.4}
.xpdl-diagram .node.current>rect,.xpdl-diagram .node.current>polygon,.xpdl-diagram .node.current>circle{stroke-width:3.2}
.xpdl-diagram .badge circle{fill:#1d4ed8;stroke:none}
.xpdl-diagram .node.incident .badge circle{fill:#dc2626}
.xpdl-diagram .badge text{fill:#fff;font-size:10px;font-weight:bold}
`

// SVG draws the layout with the state over it. The result is a complete
// SVG document without an XML declaration, so it can be served as
// image/svg+xml or put inline in an HTML page.
func (l *Layout) SVG(state State) []byte {
	w := &svgWriter{}
	w.printf(`<svg xmlns="http://www.w3.org/2000/svg" class="xpdl-diagram" data-process="`)
	w.esc(l.ProcessID)
	if l.ActivitySet != "" {
		w.printf(`" data-activity-set="`)
		w.esc(l.ActivitySet)
	}
	w.printf(`" width="%s" height="%s" viewBox="0 0 %s %s">`+"\n", f(l.Width), f(l.Height), f(l.Width), f(l.Height))
	w.printf("<style>%s</style>\n", style)
	w.printf(`<defs><marker id="xpdl-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="context-stroke"/></marker></defs>` + "\n")
	if len(l.Lanes) > 0 {
		w.printf(`<g class="lanes">` + "\n")
		for _, ln := range l.Lanes {
			w.lane(l, ln)
		}
		w.printf("</g>\n")
	}
	w.printf(`<g class="edges">` + "\n")
	for i := range l.Edges {
		w.edge(&l.Edges[i], state.Taken[l.Edges[i].ID])
	}
	w.printf("</g>\n")
	w.printf(`<g class="nodes">` + "\n")
	for i := range l.Nodes {
		n := &l.Nodes[i]
		w.node(n, state.Activities[n.ID])
	}
	w.printf("</g>\n</svg>\n")
	return w.buf.Bytes()
}

// Render lays out process processID of pkg and draws it with the state
// in one call. A caller that draws a definition more than once keeps the
// *Layout of NewLayout instead.
func Render(ctx context.Context, pkg *xpdl.Package, processID string, opts Options, state State) ([]byte, error) {
	l, err := NewLayout(ctx, pkg, processID, opts)
	if err != nil {
		return nil, err
	}
	return l.SVG(state), nil
}

// svgWriter collects the document.
type svgWriter struct{ buf bytes.Buffer }

// printf writes markup; its arguments are numbers and fixed words, never
// text from the definition (that goes through esc).
func (w *svgWriter) printf(format string, args ...any) {
	if len(args) == 0 {
		w.buf.WriteString(format)
		return
	}
	fmt.Fprintf(&w.buf, format, args...)
}

// esc writes text from the definition, escaped for element content and
// attribute values alike (&, <, >, quotes, and invalid characters).
func (w *svgWriter) esc(s string) {
	_ = xml.EscapeText(&w.buf, []byte(s)) // writes to a bytes.Buffer, which does not fail
}

// f formats a coordinate.
func f(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func (w *svgWriter) lane(l *Layout, ln Lane) {
	w.printf(`<g class="lane" data-lane="`)
	w.esc(ln.ID)
	w.printf(`"><rect x="%s" y="%s" width="%s" height="%s"/>`, f(ln.X), f(ln.Y), f(ln.W), f(ln.H))
	if l.Vertical {
		w.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#bbb"/>`, f(ln.X), f(ln.Y+laneHeader), f(ln.X+ln.W), f(ln.Y+laneHeader))
		w.printf(`<text x="%s" y="%s" text-anchor="middle">`, f(ln.X+ln.W/2), f(ln.Y+laneHeader/2+4))
		w.esc(shorten(ln.Name, max(4, int(ln.W/7))))
	} else {
		cx, cy := ln.X+laneHeader/2+4, ln.Y+ln.H/2
		w.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#bbb"/>`, f(ln.X+laneHeader), f(ln.Y), f(ln.X+laneHeader), f(ln.Y+ln.H))
		w.printf(`<text x="%s" y="%s" text-anchor="middle" transform="rotate(-90 %s %s)">`, f(cx), f(cy), f(cx), f(cy))
		w.esc(shorten(ln.Name, max(4, int(ln.H/7))))
	}
	w.printf("</text></g>\n")
}

func (w *svgWriter) edge(e *Edge, taken bool) {
	class := "edge"
	if taken {
		class += " taken"
	}
	if e.Condition == xpdl.ConditionException || e.Condition == xpdl.ConditionDefaultException {
		class += " exception"
	}
	w.printf(`<g class="%s" data-transition="`, class)
	w.esc(e.ID)
	w.printf(`" data-from="`)
	w.esc(e.From)
	w.printf(`" data-to="`)
	w.esc(e.To)
	w.printf(`"><title>`)
	w.esc(edgeTitle(e))
	w.printf(`</title><path d="%s" marker-end="url(#xpdl-arrow)"/>`, pathData(e))
	if e.Label != "" {
		w.printf(`<text x="%s" y="%s" text-anchor="middle">`, f(e.LabelAt.X), f(e.LabelAt.Y-3))
		w.esc(e.Label)
		w.printf("</text>")
	}
	w.printf("</g>\n")
}

// edgeTitle is the tooltip of an edge: its name, id and whole
// condition label.
func edgeTitle(e *Edge) string {
	s := "[" + e.ID + "]"
	if e.Name != "" {
		s = e.Name + " " + s
	}
	if e.Label != "" {
		s += " " + e.Label
	}
	return s
}

// pathData is the SVG path of an edge's route.
func pathData(e *Edge) string {
	p := e.Points
	if len(p) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("M" + f(p[0].X) + "," + f(p[0].Y))
	i := 1
	if e.Curved {
		for ; i+2 < len(p) && (i-1)%3 == 0; i += 3 {
			sb.WriteString("C" + f(p[i].X) + "," + f(p[i].Y) + " " + f(p[i+1].X) + "," + f(p[i+1].Y) + " " + f(p[i+2].X) + "," + f(p[i+2].Y))
		}
	}
	for ; i < len(p); i++ {
		sb.WriteString("L" + f(p[i].X) + "," + f(p[i].Y))
	}
	return sb.String()
}

func (w *svgWriter) node(n *Node, st ActivityState) {
	class := "node " + string(n.Shape)
	if n.Shape == ShapeEvent && n.Event != "" {
		class += " " + strings.ToLower(string(n.Event))
	}
	if c := stateClass(st.State); c != "" {
		class += " " + c
	}
	if st.Current {
		class += " current"
	}
	w.printf(`<g class="%s" data-activity="`, class)
	w.esc(n.ID)
	if n.ActivitySet != "" {
		w.printf(`" data-activity-set="`)
		w.esc(n.ActivitySet)
	}
	if n.SubFlow != "" {
		w.printf(`" data-subflow="`)
		w.esc(n.SubFlow)
	}
	w.printf(`"><title>`)
	w.esc(title(n, st))
	w.printf("</title>")
	cx, cy := n.X+n.W/2, n.Y+n.H/2
	switch n.Shape {
	case ShapeGateway:
		w.printf(`<polygon points="%s,%s %s,%s %s,%s %s,%s"/>`, f(cx), f(n.Y), f(n.X+n.W), f(cy), f(cx), f(n.Y+n.H), f(n.X), f(cy))
		w.printf(`<text class="marker" x="%s" y="%s" text-anchor="middle">%s</text>`, f(cx), f(cy+5), gatewayMarker(n.Gateway))
		w.nameBelow(n)
	case ShapeEvent:
		r := min(n.W, n.H) / 2
		w.printf(`<circle cx="%s" cy="%s" r="%s"/>`, f(cx), f(cy), f(r))
		if m := triggerMarker(n.Trigger); m != "" {
			w.printf(`<text class="marker" x="%s" y="%s" text-anchor="middle">%s</text>`, f(cx), f(cy+5), m)
		}
		w.nameBelow(n)
	default:
		w.printf(`<rect x="%s" y="%s" width="%s" height="%s" rx="8"/>`, f(n.X), f(n.Y), f(n.W), f(n.H))
		switch n.Shape {
		case ShapeBlock:
			w.printf(`<rect class="inner" x="%s" y="%s" width="%s" height="%s" rx="6"/>`, f(n.X+3), f(n.Y+3), f(n.W-6), f(n.H-6))
		case ShapeSubFlow:
			bx, by := cx-6, n.Y+n.H-14
			w.printf(`<rect class="inner" x="%s" y="%s" width="12" height="12" fill="none" stroke="#333"/>`, f(bx), f(by))
			w.printf(`<path d="M%s,%sh6M%s,%sv6" stroke="#333"/>`, f(cx-3), f(by+6), f(cx), f(by+3))
		}
		w.nameInside(n)
	}
	if st.Count > 0 {
		bx, by := n.X+n.W, n.Y
		w.printf(`<g class="badge"><circle cx="%s" cy="%s" r="9"/><text x="%s" y="%s" text-anchor="middle">%s</text></g>`,
			f(bx), f(by), f(bx), f(by+3.5), strconv.Itoa(st.Count))
	}
	w.printf("</g>\n")
}

// title is the tooltip of a node: its name, id, kind and state.
func title(n *Node, st ActivityState) string {
	var sb strings.Builder
	if n.Name != "" {
		sb.WriteString(n.Name + " ")
	}
	sb.WriteString("[" + n.ID + "] " + string(n.Kind))
	if n.Join != xpdl.GatewayNone {
		sb.WriteString(", join " + string(n.Join))
	}
	if n.Split != xpdl.GatewayNone {
		sb.WriteString(", split " + string(n.Split))
	}
	if st.State != "" {
		sb.WriteString(": " + string(st.State))
	}
	if st.Count > 0 {
		sb.WriteString(" (" + strconv.Itoa(st.Count) + ")")
	}
	return sb.String()
}

// nameInside writes a box's name on up to three lines.
func (w *svgWriter) nameInside(n *Node) {
	perLine := max(4, int((n.W-10)/6.2))
	lines := wrap(n.Name, perLine, 3)
	if len(lines) == 0 {
		return
	}
	const lh = 13.0
	y := n.Y + n.H/2 - lh*float64(len(lines)-1)/2 + 4
	w.printf(`<text x="%s" y="%s" text-anchor="middle">`, f(n.X+n.W/2), f(y))
	for i, ln := range lines {
		if i == 0 {
			w.printf(`<tspan x="%s">`, f(n.X+n.W/2))
		} else {
			w.printf(`<tspan x="%s" dy="%s">`, f(n.X+n.W/2), f(lh))
		}
		w.esc(ln)
		w.printf("</tspan>")
	}
	w.printf("</text>")
}

// nameBelow writes a gateway's or event's name under it, on one line.
func (w *svgWriter) nameBelow(n *Node) {
	if n.Name == "" {
		return
	}
	w.printf(`<text x="%s" y="%s" text-anchor="middle">`, f(n.X+n.W/2), f(n.Y+n.H+12))
	w.esc(shorten(n.Name, 24))
	w.printf("</text>")
}

// wrap breaks s into at most maxLines lines of at most width runes,
// shortening the last one when the text does not fit.
func wrap(s string, width, maxLines int) []string {
	var lines []string
	cur := ""
	for _, wd := range strings.Fields(s) {
		for utf8.RuneCountInString(wd) > width {
			if cur != "" {
				lines, cur = append(lines, cur), ""
			}
			r := []rune(wd)
			lines = append(lines, string(r[:width]))
			wd = string(r[width:])
		}
		switch {
		case wd == "":
		case cur == "":
			cur = wd
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(wd) <= width:
			cur += " " + wd
		default:
			lines, cur = append(lines, cur), wd
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	if len(lines) > maxLines {
		last := strings.Join(lines[maxLines-1:], " ")
		lines = append(lines[:maxLines-1], shorten(last, width))
	}
	return lines
}

// gatewayMarker is the symbol inside a gateway diamond.
func gatewayMarker(t xpdl.GatewayType) string {
	switch t {
	case xpdl.GatewayAND:
		return "+"
	case xpdl.GatewayOR:
		return "O"
	case xpdl.GatewayComplex:
		return "*"
	}
	return "X"
}

// triggerMarker is a letter for an event's trigger; none for a plain
// event.
func triggerMarker(t xpdl.Trigger) string {
	switch t {
	case xpdl.TriggerMessage:
		return "M"
	case xpdl.TriggerTimer:
		return "T"
	case xpdl.TriggerError:
		return "E"
	case xpdl.TriggerSignal:
		return "S"
	case xpdl.TriggerTerminate:
		return "●"
	case xpdl.TriggerConditional:
		return "C"
	case xpdl.TriggerLink:
		return "L"
	case xpdl.TriggerCancel, xpdl.TriggerCompensation, xpdl.TriggerEscalation,
		xpdl.TriggerMultiple, xpdl.TriggerParallelMultiple:
		return "*"
	}
	return ""
}
