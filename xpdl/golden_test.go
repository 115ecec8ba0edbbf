package xpdl_test

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// modelGoldenFiles are the corpus files whose whole model is kept as a
// golden file in testdata/model/<golden name>.golden.
var modelGoldenFiles = []struct{ rel, golden string }{
	{"xpdl1/jawe-leave_request.xpdl", "xpdl1-jawe-leave_request"},
	{"xpdl2/jawe-leave_request.xpdl", "xpdl2-jawe-leave_request"},
	{"xpdl1/bonita-carpool.xpdl", "xpdl1-bonita-carpool"},
	{"xpdl2/karl-Subprocess exception.xpdl", "xpdl2-karl-Subprocess_exception"},
	{"xpdl2/bizagi-5.5.13 Real Property-Monthly Reviews-Inclusive.xpdl", "xpdl2-bizagi-Monthly_Reviews-Inclusive"},
	{"xpdl2/bpmxpdl-sample-xpdl2.0.xpdl", "xpdl2-bpmxpdl-sample-xpdl2.0"},
	{"xpdl1/jawe-workflow_patterns.xpdl", "xpdl1-jawe-workflow_patterns"},
}

// TestModelGolden renders the whole model of a few corpus files and
// compares it with testdata/model/*.golden. Rewrite the goldens with:
// go test ./xpdl -run TestModelGolden -update
func TestModelGolden(t *testing.T) {
	t.Parallel()
	dir := requireCorpus(t)
	for _, tc := range modelGoldenFiles {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			pkg, err := xpdl.Load(filepath.Join(dir, filepath.FromSlash(tc.rel)), &xpdl.ReadOpts{Name: tc.rel})
			require.NoError(t, err)
			checkGolden(t, testdataPath(t, "model", tc.golden+".golden"), renderModel(dir, pkg))
		})
	}
}

// renderModel renders every exported field of a package as indented text,
// one field a line, leaving out zero values (an absent line means the
// field is empty, false or nil). Positions print as LINE:COL. A loaded
// ExternalPackage prints as the id and source of the package it loaded,
// not the package itself (references may be cyclic). dir is scrubbed from
// paths so that the output does not depend on where the corpus is.
func renderModel(dir string, pkg *xpdl.Package) string {
	m := &modelRenderer{dir: dir}
	m.b.WriteString("Package:\n")
	m.fields(1, reflect.ValueOf(pkg).Elem())
	return m.b.String()
}

type modelRenderer struct {
	dir string
	b   strings.Builder
}

var (
	typePos         = reflect.TypeFor[xpdl.Pos]()
	typeExpression  = reflect.TypeFor[xpdl.Expression]()
	typeGateway     = reflect.TypeFor[xpdl.Gateway]()
	typeDataType    = reflect.TypeFor[xpdl.DataType]()
	typeGraphics    = reflect.TypeFor[xpdl.NodeGraphics]()
	typeExtAttr     = reflect.TypeFor[xpdl.ExtendedAttribute]()
	typePackagePtr  = reflect.TypeFor[*xpdl.Package]()
	typeError       = reflect.TypeFor[error]()
	typeStringSlice = reflect.TypeFor[[]string]()
)

func (m *modelRenderer) line(depth int, format string, args ...any) {
	m.b.WriteString(strings.Repeat("  ", depth))
	fmt.Fprintf(&m.b, format, args...)
	m.b.WriteByte('\n')
}

// fields renders the exported fields of struct v, embedded structs (Flow)
// inline, except the fields named in skip.
func (m *modelRenderer) fields(depth int, v reflect.Value, skip ...string) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || slices.Contains(skip, f.Name) {
			continue
		}
		fv := v.Field(i)
		if f.Anonymous && fv.Kind() == reflect.Struct {
			m.fields(depth, fv)
			continue
		}
		m.field(depth, f.Name, fv)
	}
}

// field renders one named value, or nothing when it is zero.
func (m *modelRenderer) field(depth int, name string, v reflect.Value) {
	if v.IsZero() {
		return
	}
	if s, ok := m.inline(v); ok {
		m.line(depth, "%s: %s", name, s)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		m.line(depth, "%s:", name)
		m.fields(depth+1, v.Elem())
	case reflect.Struct:
		m.line(depth, "%s:", name)
		m.fields(depth+1, v)
	case reflect.Slice:
		m.line(depth, "%s: [%d]", name, v.Len())
		for i := range v.Len() {
			m.item(depth+1, v.Index(i))
		}
	default:
		panic(fmt.Sprintf("renderModel: unexpected kind %s for %s", v.Kind(), name))
	}
}

// item renders one element of a list.
func (m *modelRenderer) item(depth int, v reflect.Value) {
	if s, ok := m.inline(v); ok {
		m.line(depth, "- %s", s)
		return
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			m.line(depth, "- <nil>")
			return
		}
		v = v.Elem()
	}
	// "- Activity 12:7" then the fields; the type and position head the
	// item so that the golden reads like the XML.
	head := v.Type().Name()
	if p := v.FieldByName("Pos"); p.IsValid() && p.Type() == typePos {
		head += " " + renderPos(p.Interface().(xpdl.Pos))
	}
	m.line(depth, "- %s", head)
	m.fields(depth+1, v, "Pos")
}

// inline returns the one-line rendering of v for scalars and for the
// model's small value types.
func (m *modelRenderer) inline(v reflect.Value) (string, bool) {
	if v.Type().Implements(typeError) && v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "<nil>", true
		}
		return strconv.Quote(scrub(m.dir, v.Interface().(error).Error())), true
	}
	switch v.Type() {
	case typePos:
		return renderPos(v.Interface().(xpdl.Pos)), true
	case typeExpression:
		return renderExpression(v.Interface().(xpdl.Expression)), true
	case typeGateway:
		return renderGateway(v.Interface().(xpdl.Gateway)), true
	case typeDataType:
		return renderDataType(v.Interface().(xpdl.DataType)), true
	case typeGraphics:
		return renderGraphics(v.Interface().(xpdl.NodeGraphics)), true
	case typeExtAttr:
		ea := v.Interface().(xpdl.ExtendedAttribute)
		s := fmt.Sprintf("ExtendedAttribute %s Name=%q Value=%q", renderPos(ea.Pos), ea.Name, ea.Value)
		if ea.Content != "" {
			s += fmt.Sprintf(" Content=%q", ea.Content)
		}
		return s, true
	case typePackagePtr:
		p := v.Interface().(*xpdl.Package)
		if p == nil {
			return "<nil>", true
		}
		return fmt.Sprintf("loaded package Id=%q Version=%s Source=%q", p.ID, p.Version, scrub(m.dir, p.Source)), true
	case typeStringSlice:
		var parts []string
		for _, s := range v.Interface().([]string) {
			parts = append(parts, strconv.Quote(s))
		}
		return "[" + strings.Join(parts, ", ") + "]", true
	}
	switch v.Kind() {
	case reflect.String:
		if v.Type() == reflect.TypeFor[string]() {
			return strconv.Quote(scrub(m.dir, v.String())), true
		}
		return v.String(), true // an enumeration: Version, ActivityKind, ...
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true
	case reflect.Pointer:
		if !v.IsNil() && v.Elem().Kind() == reflect.Bool { // Activity.Reentrant
			return strconv.FormatBool(v.Elem().Bool()), true
		}
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), true
	}
	return "", false
}

func renderPos(p xpdl.Pos) string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

func renderExpression(x xpdl.Expression) string {
	s := strconv.Quote(x.Text)
	if x.Grammar != "" {
		s += fmt.Sprintf(" grammar=%q", x.Grammar)
	}
	return s + " " + renderPos(x.Pos)
}

func renderGateway(g xpdl.Gateway) string {
	s := string(g.Type)
	if s == "" {
		s = "<none>"
	}
	if g.Implicit {
		s += " implicit"
	} else {
		s += " declared"
	}
	s += " " + renderPos(g.Pos)
	if len(g.TransitionRefs) > 0 {
		s += " TransitionRefs=" + strings.Join(g.TransitionRefs, ",")
	}
	return s
}

func renderDataType(t xpdl.DataType) string {
	switch t.Kind {
	case xpdl.TypeBasic:
		return "Basic " + string(t.Basic)
	case xpdl.TypeDeclared:
		return fmt.Sprintf("Declared %q", t.Declared)
	case xpdl.TypeExternal:
		return fmt.Sprintf("ExternalReference %q", t.External)
	case xpdl.TypeEnumeration:
		var vals []string
		for _, v := range t.Enum {
			vals = append(vals, strconv.Quote(v))
		}
		return "Enumeration [" + strings.Join(vals, ", ") + "]"
	case xpdl.TypeArray, xpdl.TypeList:
		elem := "<nil>"
		if t.Elem != nil {
			elem = renderDataType(*t.Elem)
		}
		return fmt.Sprintf("%s of (%s)", t.Kind, elem)
	case xpdl.TypeRecord, xpdl.TypeUnion:
		var members []string
		for _, mt := range t.Members {
			members = append(members, renderDataType(mt))
		}
		return fmt.Sprintf("%s {%s}", t.Kind, strings.Join(members, "; "))
	case xpdl.TypeUnknown:
		return "<unknown>"
	}
	return string(t.Kind)
}

func renderGraphics(g xpdl.NodeGraphics) string {
	s := fmt.Sprintf("NodeGraphics ToolID=%q", g.ToolID)
	for _, kv := range []struct{ k, v string }{{"LaneID", g.LaneID}, {"PageID", g.PageID}, {"FillColor", g.FillColor}, {"Shape", g.Shape}} {
		if kv.v != "" {
			s += fmt.Sprintf(" %s=%q", kv.k, kv.v)
		}
	}
	for _, kv := range []struct {
		k string
		v float64
	}{{"X", g.X}, {"Y", g.Y}, {"Width", g.Width}, {"Height", g.Height}} {
		if kv.v != 0 {
			s += fmt.Sprintf(" %s=%s", kv.k, strconv.FormatFloat(kv.v, 'g', -1, 64))
		}
	}
	return s
}
