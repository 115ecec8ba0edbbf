// Package diagram draws an XPDL process as SVG on the server, for the
// administration console (issue #20; docs/diagram.md).
//
// Drawing is two steps. NewLayout places the activities, lanes and
// transitions of one process (or one activity set) and returns a
// *Layout: an immutable value that depends only on the definition, so a
// caller keeps it per definition version (Cache does that) and draws it
// many times.
// (*Layout).SVG draws it with a State overlay: each activity's state and
// count of instances, the current activities and the transitions taken.
//
// NewLayout uses the coordinates the file carries when they are usable
// (XPDL 2 NodeGraphicsInfo and ConnectorGraphicsInfo; JaWE's lane-relative
// offsets, break points and participant order; Bonita's XOffset/YOffset)
// and otherwise lays the graph out with Graphviz's dot, compiled to
// WebAssembly and run in-process (github.com/goccy/go-graphviz): no cgo,
// no external program, nothing downloaded at run time.
//
// The SVG carries no script. Each activity is a <g> with
// data-activity="ID" and each transition a <g> with data-transition="ID",
// so the page around it can make them clickable. All text that comes from
// the definition (names, conditions) is escaped.
//
// Quick start:
//
//	l, err := diagram.NewLayout(ctx, pkg, "order", diagram.Options{})
//	if err != nil { ... }
//	svg := l.SVG(diagram.State{Activities: map[string]diagram.ActivityState{
//		"approve": {State: wftype.ActivityInActive, Count: 1, Current: true},
//	}})
package diagram
