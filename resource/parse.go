package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Format is the syntax of an organisation file.
type Format string

// The organisation file formats.
const (
	FormatYAML Format = "yaml"
	FormatJSON Format = "json"
)

// MaxOrgFileSize is the largest organisation file ParseOrg and LoadOrgFile
// accept, in bytes (4 MiB). Larger input is refused before it is parsed.
const MaxOrgFileSize = 4 << 20

// ErrInvalidOrg matches every *OrgError: the organisation file cannot be
// used.
var ErrInvalidOrg = errors.New("invalid organisation file")

// Problem is one thing wrong with an organisation file.
type Problem struct {
	// Line is the 1-based line of the problem, or 0 when the parser gives
	// none (most JSON problems).
	Line int
	// Path locates the problem in the document, e.g. "users[1].roles[0]"
	// or "participants.Approver"; empty when unknown.
	Path string
	// Code names the rule, e.g. "duplicate-id"; stable, for tools and
	// tests.
	Code string
	// Msg says what is wrong.
	Msg string
}

// String formats the problem as "line LINE: PATH: MSG", leaving out what
// is unknown.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// OrgError is returned when an organisation file is refused. It holds
// every problem found, in the order of the document where lines are known.
type OrgError struct {
	Problems []Problem
}

// Error lists every problem, one per line after the first.
func (e *OrgError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid organisation file: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid organisation file: %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n\t" + p.String())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidOrg) true for every *OrgError.
func (e *OrgError) Is(target error) bool { return target == ErrInvalidOrg }

// LoadOrgFile reads the organisation file at path. The format follows the
// extension: .yaml or .yml for YAML, .json for JSON. Files larger than
// MaxOrgFileSize are refused without being read in full.
func LoadOrgFile(path string) (*OrgDirectory, error) {
	var format Format
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		format = FormatYAML
	case ".json":
		format = FormatJSON
	default:
		return nil, fmt.Errorf("load organisation file %s: unknown extension %q, want .yaml, .yml or .json", path, filepath.Ext(path))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load organisation file: %w", err)
	}
	// Closing a file opened for reading cannot lose data.
	defer func() { _ = f.Close() }()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxOrgFileSize {
		return nil, fmt.Errorf("load organisation file %s: %w", path, tooLarge(fi.Size()))
	}
	// Read one byte more than the limit, so that a file that grew or is
	// not a regular file is still refused.
	data, err := io.ReadAll(io.LimitReader(f, MaxOrgFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("load organisation file %s: %w", path, err)
	}
	d, err := ParseOrg(data, format)
	if err != nil {
		return nil, fmt.Errorf("load organisation file %s: %w", path, err)
	}
	return d, nil
}

// ParseOrg reads an organisation file in the given format. Parsing is
// strict: unknown fields, missing and duplicate ids, references to
// undeclared users, roles or units, unit parent cycles and participant
// mappings that name no target or several are refused, as an *OrgError
// listing every problem with its line (YAML) and path. YAML aliases are
// refused (they can expand a small file into a huge one), and so is input
// larger than MaxOrgFileSize, before it is parsed.
//
// Two limits on "every problem at once": when a YAML value has the wrong
// type or a mapping repeats a key, the references are not checked, since
// the entry in question could not be read; and encoding/json reports only
// its first problem, without a line for an unknown field.
func ParseOrg(data []byte, format Format) (*OrgDirectory, error) {
	if len(data) > MaxOrgFileSize {
		return nil, tooLarge(int64(len(data)))
	}
	v := &validator{}
	var doc *orgDoc
	switch format {
	case FormatYAML:
		doc = v.decodeYAML(data)
	case FormatJSON:
		doc = v.decodeJSON(data)
	default:
		return nil, fmt.Errorf("parse organisation file: unknown format %q, want %q or %q", format, FormatYAML, FormatJSON)
	}
	if doc != nil {
		v.validate(doc)
	}
	if len(v.problems) > 0 {
		if v.root != nil {
			sort.SliceStable(v.problems, func(i, j int) bool { return v.problems[i].Line < v.problems[j].Line })
		}
		return nil, &OrgError{Problems: v.problems}
	}
	return newOrgDirectory(doc), nil
}

func tooLarge(size int64) error {
	return &OrgError{Problems: []Problem{{
		Code: "too-large",
		Msg:  fmt.Sprintf("the file is %d bytes, more than the limit of %d (4 MiB)", size, MaxOrgFileSize),
	}}}
}

// The document as written. Field names are the same in YAML and JSON.
type (
	orgDoc struct {
		Users        []userDoc            `yaml:"users" json:"users"`
		Roles        []roleDoc            `yaml:"roles" json:"roles"`
		Units        []unitDoc            `yaml:"units" json:"units"`
		Participants map[string]targetDoc `yaml:"participants" json:"participants"`
	}
	userDoc struct {
		ID    string   `yaml:"id" json:"id"`
		Name  string   `yaml:"name" json:"name"`
		Roles []string `yaml:"roles" json:"roles"`
		Units []string `yaml:"units" json:"units"`
	}
	roleDoc struct {
		ID   string `yaml:"id" json:"id"`
		Name string `yaml:"name" json:"name"`
	}
	unitDoc struct {
		ID      string `yaml:"id" json:"id"`
		Name    string `yaml:"name" json:"name"`
		Parent  string `yaml:"parent" json:"parent"`
		Manager string `yaml:"manager" json:"manager"`
	}
	targetDoc struct {
		Role string `yaml:"role" json:"role"`
		Unit string `yaml:"unit" json:"unit"`
		User string `yaml:"user" json:"user"`
	}
)

// docTypes names the document's parts for unknown-field messages.
var docTypes = map[string]string{
	reflect.TypeFor[orgDoc]().String():    "at the top level",
	reflect.TypeFor[userDoc]().String():   "in a user",
	reflect.TypeFor[roleDoc]().String():   "in a role",
	reflect.TypeFor[unitDoc]().String():   "in a unit",
	reflect.TypeFor[targetDoc]().String(): "in a participant mapping",
}

// wantTypes says what a value of each decoded type looks like, for type
// mismatch messages.
var wantTypes = map[string]string{
	reflect.TypeFor[string]().String():               "a string",
	reflect.TypeFor[[]string]().String():             "a list of ids",
	reflect.TypeFor[[]userDoc]().String():            "a list of users",
	reflect.TypeFor[[]roleDoc]().String():            "a list of roles",
	reflect.TypeFor[[]unitDoc]().String():            "a list of units",
	reflect.TypeFor[map[string]targetDoc]().String(): "a mapping of participant ids to targets",
	reflect.TypeFor[userDoc]().String():              "a user (a mapping)",
	reflect.TypeFor[roleDoc]().String():              "a role (a mapping)",
	reflect.TypeFor[unitDoc]().String():              "a unit (a mapping)",
	reflect.TypeFor[targetDoc]().String():            "a target such as {role: manager}",
}

// yamlTags names the YAML tags in type mismatch messages.
var yamlTags = map[string]string{
	"str": "a string", "seq": "a list", "map": "a mapping", "int": "a number",
	"float": "a number", "bool": "a boolean", "null": "null", "timestamp": "a timestamp",
	"binary": "binary data",
}

// validator collects the problems of one document.
type validator struct {
	root     *yaml.Node // the YAML document, for line numbers; nil for JSON
	problems []Problem
}

// loc is a path into the document: string keys and int indexes.
type loc []any

func (l loc) String() string {
	var b strings.Builder
	for _, s := range l {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		case string:
			if s == "" || strings.ContainsAny(s, ".[]\" ") {
				fmt.Fprintf(&b, "[%q]", s)
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// at extends l by one step.
func (l loc) at(s any) loc { return append(slices.Clip(l), s) }

// line returns the line of the node at l in the YAML document: the key's
// line when l ends in a key, else the node's; 0 if unknown.
func (v *validator) line(l loc) int {
	if v.root == nil || len(v.root.Content) == 0 {
		return 0
	}
	n, line := v.root.Content[0], 0
	for _, s := range l {
		switch s := s.(type) {
		case int:
			if n.Kind != yaml.SequenceNode || s >= len(n.Content) {
				return 0
			}
			n = n.Content[s]
			line = n.Line
		case string:
			if n.Kind != yaml.MappingNode {
				return 0
			}
			i := 0
			for i < len(n.Content)-1 && n.Content[i].Value != s {
				i += 2
			}
			if i >= len(n.Content)-1 {
				return 0
			}
			line, n = n.Content[i].Line, n.Content[i+1]
		}
	}
	return line
}

// where names l for a message: its line in YAML, its path in JSON.
func (v *validator) where(l loc) string {
	if line := v.line(l); line > 0 {
		return "line " + strconv.Itoa(line)
	}
	return l.String()
}

func (v *validator) add(l loc, code, format string, args ...any) {
	v.problems = append(v.problems, Problem{Line: v.line(l), Path: l.String(), Code: code, Msg: fmt.Sprintf(format, args...)})
}

var (
	yamlLineRe       = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	yamlUnknownRe    = regexp.MustCompile(`^field (.*) not found in type (\S+)$`)
	yamlDuplicateRe  = regexp.MustCompile(`^(mapping key .* already defined|field .* already set)`)
	yamlMismatchRe   = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
	jsonUnknownField = regexp.MustCompile(`^json: unknown field "(.*)"$`)
)

// yamlParserProblems are the messages of the YAML library's parser (as
// opposed to its scanner). The library reports their lines counted from 0
// (go-yaml/yaml issue 205); yamlProblem counts them from 1 like the rest.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// yamlProblem turns one message of the YAML library into a Problem.
func yamlProblem(msg, code string) Problem {
	p := Problem{Code: code, Msg: strings.TrimPrefix(msg, "yaml: ")}
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		p.Msg = m[2]
		if code == "syntax" && yamlParserProblems[p.Msg] {
			p.Line++
		}
	}
	if m := yamlUnknownRe.FindStringSubmatch(p.Msg); m != nil {
		p.Code = "unknown-field"
		p.Msg = fmt.Sprintf("unknown field %q", m[1])
		if part, ok := docTypes[m[2]]; ok {
			p.Msg += " " + part
		}
	} else if yamlDuplicateRe.MatchString(p.Msg) {
		p.Code = "duplicate-key"
	} else if m := yamlMismatchRe.FindStringSubmatch(p.Msg); m != nil {
		found, want := yamlTags[m[1]], wantTypes[m[3]]
		if found == "" {
			found = "!!" + m[1]
		}
		if want == "" {
			want = m[3]
		}
		if m[2] != "" {
			found += " " + strconv.Quote(m[2])
		}
		p.Msg = fmt.Sprintf("found %s, want %s", found, want)
	}
	return p
}

// decodeYAML parses data strictly. It returns nil when the document is
// unusable; problems that leave the rest readable (unknown fields, type
// mismatches) are recorded and the document returned for validation.
func (v *validator) decodeYAML(data []byte) *orgDoc {
	// First as a node tree, which does not expand aliases: for the alias
	// check and for line numbers.
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			v.problems = append(v.problems, Problem{Code: "empty", Msg: "the document is empty"})
		} else {
			v.problems = append(v.problems, yamlProblem(err.Error(), "syntax"))
		}
		return nil
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		v.problems = append(v.problems, Problem{Line: next.Line, Code: "syntax", Msg: "more than one YAML document; an organisation file holds one"})
	case !errors.Is(err, io.EOF):
		v.problems = append(v.problems, yamlProblem(err.Error(), "syntax"))
	}
	v.findAliases(&root)
	if len(v.problems) > 0 {
		return nil
	}
	top := root.Content[0]
	if top.Kind != yaml.MappingNode {
		if top.Kind == yaml.ScalarNode && top.Tag == "!!null" {
			v.problems = append(v.problems, Problem{Code: "empty", Msg: "the document is empty"})
		} else {
			v.problems = append(v.problems, Problem{Line: top.Line, Code: "type", Msg: "the document must be a mapping of users, roles, units and participants"})
		}
		return nil
	}
	v.root = &root

	// Then into the document, strictly. The library reports every unknown
	// field, type mismatch and duplicate key, and decodes the rest.
	var doc orgDoc
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(&doc); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			v.problems = append(v.problems, yamlProblem(err.Error(), "syntax"))
			return nil
		}
		intact := true
		for _, msg := range te.Errors {
			p := yamlProblem(msg, "type")
			v.problems = append(v.problems, p)
			intact = intact && p.Code == "unknown-field"
		}
		// An unknown field leaves the rest as written, so its references
		// are checked too. A mismatch or a duplicate key leaves a value
		// or a whole entry out, and checking references then would
		// report problems that are not there.
		if !intact {
			return nil
		}
	}
	return &doc
}

// findAliases records every alias in the tree under n. It does not follow
// them, so it takes time linear in the size of the input.
func (v *validator) findAliases(n *yaml.Node) {
	if n.Kind == yaml.AliasNode {
		v.problems = append(v.problems, Problem{Line: n.Line, Code: "alias",
			Msg: fmt.Sprintf("alias *%s: YAML aliases are not accepted (they can expand a small file into a huge one); write the value out", n.Value)})
		return
	}
	for _, c := range n.Content {
		v.findAliases(c)
	}
}

// decodeJSON parses data strictly. encoding/json stops at the first
// problem, so a JSON document has at most one decoding problem.
func (v *validator) decodeJSON(data []byte) *orgDoc {
	lineAt := func(off int64) int {
		if off < 0 || off > int64(len(data)) {
			return 0
		}
		return 1 + bytes.Count(data[:off], []byte("\n"))
	}
	var doc orgDoc
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&doc)
	if err == nil {
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			v.problems = append(v.problems, Problem{Line: lineAt(dec.InputOffset()), Code: "syntax", Msg: "data after the JSON document"})
			return nil
		}
		return &doc
	}
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		v.problems = append(v.problems, Problem{Code: "empty", Msg: "the document is empty"})
	case errors.Is(err, io.ErrUnexpectedEOF):
		v.problems = append(v.problems, Problem{Line: lineAt(int64(len(data))), Code: "syntax", Msg: "unexpected end of JSON input"})
	case errors.As(err, &syntaxErr):
		v.problems = append(v.problems, Problem{Line: lineAt(syntaxErr.Offset), Code: "syntax", Msg: syntaxErr.Error()})
	case errors.As(err, &typeErr):
		want := map[reflect.Kind]string{reflect.String: "a string", reflect.Slice: "a list", reflect.Map: "an object", reflect.Struct: "an object"}[typeErr.Type.Kind()]
		if want == "" {
			want = typeErr.Type.String()
		}
		v.problems = append(v.problems, Problem{Line: lineAt(typeErr.Offset), Path: typeErr.Field, Code: "type",
			Msg: fmt.Sprintf("found a JSON %s, want %s", typeErr.Value, want)})
	default:
		// encoding/json gives no place for an unknown field, and keeps
		// only the first problem it meets: later ones may have left zero
		// values behind, so the document is not validated further.
		if m := jsonUnknownField.FindStringSubmatch(err.Error()); m != nil {
			v.problems = append(v.problems, Problem{Code: "unknown-field", Msg: fmt.Sprintf("unknown field %q", m[1])})
			return nil
		}
		v.problems = append(v.problems, Problem{Code: "syntax", Msg: strings.TrimPrefix(err.Error(), "json: ")})
	}
	return nil
}

// validate checks the references of a decoded document.
func (v *validator) validate(doc *orgDoc) {
	roles := v.ids(loc{"roles"}, "role", len(doc.Roles), func(i int) string { return doc.Roles[i].ID })
	units := v.ids(loc{"units"}, "unit", len(doc.Units), func(i int) string { return doc.Units[i].ID })
	users := v.ids(loc{"users"}, "user", len(doc.Users), func(i int) string { return doc.Users[i].ID })

	for i, u := range doc.Users {
		at := loc{"users", i}
		for j, r := range u.Roles {
			if _, ok := roles[r]; !ok {
				v.add(at.at("roles").at(j), "unknown-role", "user %q has role %q, which is not declared under roles", u.ID, r)
			}
		}
		for j, unit := range u.Units {
			if _, ok := units[unit]; !ok {
				v.add(at.at("units").at(j), "unknown-unit", "user %q is in unit %q, which is not declared under units", u.ID, unit)
			}
		}
	}
	for i, u := range doc.Units {
		at := loc{"units", i}
		if _, ok := units[u.Parent]; u.Parent != "" && !ok {
			v.add(at.at("parent"), "unknown-parent", "unit %q has parent %q, which is not declared under units", u.ID, u.Parent)
		}
		if _, ok := users[u.Manager]; u.Manager != "" && !ok {
			v.add(at.at("manager"), "unknown-user", "unit %q has manager %q, which is not declared under users", u.ID, u.Manager)
		}
	}
	v.cycles(doc, units)

	ids := make([]string, 0, len(doc.Participants))
	for id := range doc.Participants {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := doc.Participants[id]
		at := loc{"participants", id}
		var named []string
		for _, t := range []struct {
			kind, id string
			known    map[string]int
		}{{"role", m.Role, roles}, {"unit", m.Unit, units}, {"user", m.User, users}} {
			if t.id == "" {
				continue
			}
			named = append(named, fmt.Sprintf("%s %q", t.kind, t.id))
			if _, ok := t.known[t.id]; !ok {
				v.add(at.at(t.kind), "unknown-"+t.kind, "participant %q maps to %s %q, which is not declared under %ss", id, t.kind, t.id, t.kind)
			}
		}
		switch {
		case id == "":
			v.add(at, "missing-id", "a participant mapping has an empty participant id")
		case len(named) == 0:
			v.add(at, "mapping-target", "participant %q maps to nothing; give one of role, unit or user", id)
		case len(named) > 1:
			v.add(at, "mapping-target", "participant %q maps to %s; give only one of role, unit or user", id, strings.Join(named, " and "))
		}
	}
}

// ids checks the ids of one list for presence and uniqueness and returns
// each id's first index.
func (v *validator) ids(list loc, kind string, n int, id func(int) string) map[string]int {
	first := make(map[string]int, n)
	for i := range n {
		at := list.at(i)
		switch j, dup := first[id(i)]; {
		case id(i) == "":
			v.add(at, "missing-id", "%s without an id", kind)
		case dup:
			v.add(at.at("id"), "duplicate-id", "duplicate %s id %q (first at %s)", kind, id(i), v.where(list.at(j)))
		default:
			first[id(i)] = i
		}
	}
	return first
}

// cycles reports every cycle of unit parents once, at the unit of the
// cycle that comes first in the document.
func (v *validator) cycles(doc *orgDoc, units map[string]int) {
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[string]int, len(units))
	for i, u := range doc.Units {
		if units[u.ID] != i {
			continue // no id, or a duplicate: reported already
		}
		var path []string
		cur := u.ID
		for {
			j, known := units[cur]
			if !known || state[cur] != unseen {
				break
			}
			state[cur] = onPath
			path = append(path, cur)
			cur = doc.Units[j].Parent
		}
		if state[cur] == onPath {
			cycle := path[slices.Index(path, cur):]
			start := 0
			for k, id := range cycle {
				if units[id] < units[cycle[start]] {
					start = k
				}
			}
			cycle = slices.Concat(cycle[start:], cycle[:start])
			v.add(loc{"units", units[cycle[0]], "parent"}, "parent-cycle",
				"unit parents form a cycle: %s -> %s", strings.Join(cycle, " -> "), cycle[0])
		}
		for _, id := range path {
			state[id] = done
		}
	}
}
