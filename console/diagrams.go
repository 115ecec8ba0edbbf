package console

import (
	"bytes"
	"context"
	"fmt"
	"html/template"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/goxpdl/goxpdl/console/diagram"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// svgHTML is an SVG drawn by package diagram, which escapes every text of
// the definition it carries and writes no script: safe to put in a page
// as it is.
type svgHTML = template.HTML

// packages keeps parsed definitions (as written, before the engine's
// rewrite) by definition id, for drawing them and for their forms. A
// deployed version never changes, so an entry stays true.
type packages struct {
	eng   *engine.Engine
	cache *lru.Cache[int64, parsedDefinition]
}

// parsedDefinition is one deployed version, read.
type parsedDefinition struct {
	pkg *xpdl.Package
	dep engine.Deployment
}

func newPackages(eng *engine.Engine, size int) (*packages, error) {
	c, err := lru.New[int64, parsedDefinition](size)
	if err != nil {
		return nil, err
	}
	return &packages{eng: eng, cache: c}, nil
}

// get returns the parsed package of definition id.
func (p *packages) get(ctx context.Context, id int64) (*xpdl.Package, engine.Deployment, error) {
	if d, ok := p.cache.Get(id); ok {
		return d.pkg, d.dep, nil
	}
	dep, src, err := p.eng.DefinitionSource(ctx, id)
	if err != nil {
		return nil, dep, err
	}
	// Stored, so accepted at its deployment: read whatever its size.
	pkg, err := xpdl.Read(bytes.NewBuffer(src), &xpdl.ReadOpts{Name: dep.File, MaxBytes: int64(len(src))})
	if err != nil {
		return nil, dep, err
	}
	p.cache.Add(id, parsedDefinition{pkg: pkg, dep: dep})
	return pkg, dep, nil
}

// drawing returns the diagram of one process of definition id with
// state drawn over it.
func (h *Handler) drawing(ctx context.Context, definition int64, process string, state diagram.State) (svgHTML, error) {
	pkg, dep, err := h.pkgs.get(ctx, definition)
	if err != nil {
		return "", err
	}
	l, err := h.diagrams.Layout(ctx, fmt.Sprintf("%d/%d", dep.ID, dep.Version), pkg, process, diagram.Options{})
	if err != nil {
		return "", err
	}
	return svgHTML(l.SVG(state)), nil //nolint:gosec // package diagram escapes every text and writes no script
}

// instanceDiagram draws an instance's process with the state of its
// activities: the newest instance of each activity gives its colour, the
// count badge says how many there were, and unfinished ones are current.
func (h *Handler) instanceDiagram(ctx context.Context, inst engine.ProcessInstance, acts []engine.ActivityInstance) (svgHTML, error) {
	return h.drawing(ctx, inst.DefinitionID, inst.Process, activityStates(acts))
}

// activityStates sums activity instances up by activity.
func activityStates(acts []engine.ActivityInstance) diagram.State {
	st := diagram.State{Activities: map[string]diagram.ActivityState{}}
	for _, a := range acts {
		if a.ActivitySet != "" {
			continue // drawn inside its block activity, not on the top level
		}
		s := st.Activities[a.Activity]
		s.Count++
		s.State = a.State
		if a.State != wftype.ActivityCompleted {
			s.Current = true
		}
		if a.State == wftype.ActivityAbnormal {
			s.State = wftype.ActivityAbnormal
		}
		st.Activities[a.Activity] = s
	}
	return st
}
