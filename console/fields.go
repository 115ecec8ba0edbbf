package console

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/xpdl"
)

// field is one variable of a process as a form shows it: the start form,
// the variables an operator edits, the values a skipped activity hands
// on. Its kind says how a value is written and read.
type field struct {
	// Name is the variable's id; Label its name, when it has one.
	Name  string `json:"name"`
	Label string `json:"label,omitempty"`
	// Type is the declared type as the engine names it: STRING, INTEGER,
	// FLOAT, BOOLEAN, DATE, DATETIME, TIME, REFERENCE, PERFORMER,
	// ENUMERATION, ARRAY or JSON (any other declared type).
	Type string `json:"type"`
	// Enum lists the values of an ENUMERATION.
	Enum []string `json:"enum,omitempty"`
	// Initial is the InitialValue as written, when there is one.
	Initial string `json:"initial,omitempty"`
	// Value is the variable's current value as text (in the instance's
	// forms); Text says that the typed input cannot show it (a DATETIME
	// with a zone): a text input shows it as it is.
	Value string `json:"-"`
	Text  bool   `json:"-"`
}

// fitsInput says whether the HTML input of kind input can show the
// value s: date, time and datetime-local inputs take only their own
// format.
func fitsInput(input, s string) bool {
	var layouts []string
	switch input {
	case "date":
		layouts = []string{time.DateOnly}
	case "datetime":
		layouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04"}
	case "time":
		layouts = []string{"15:04:05", "15:04"}
	default:
		return true
	}
	for _, l := range layouts {
		if _, err := time.Parse(l, s); err == nil {
			return true
		}
	}
	return false
}

// fieldTypeJSON and fieldTypeArray are the field types of variables that
// are not of a basic type or an enumeration.
const (
	fieldTypeEnum  = "ENUMERATION"
	fieldTypeArray = "ARRAY"
	fieldTypeJSON  = "JSON"
)

// Input is the HTML input a form uses for the field: "number", "float",
// "boolean" (a select of true and false), "enum" (a select), "date",
// "datetime", "time", "json" (a text area) or "text".
func (f field) Input() string {
	switch f.Type {
	case string(xpdl.BasicInteger):
		return "number"
	case string(xpdl.BasicFloat):
		return "float"
	case string(xpdl.BasicBoolean):
		return "boolean"
	case fieldTypeEnum:
		return "enum"
	case string(xpdl.BasicDate):
		return "date"
	case string(xpdl.BasicDateTime):
		return "datetime"
	case string(xpdl.BasicTime):
		return "time"
	case fieldTypeArray, fieldTypeJSON:
		return "json"
	}
	return "text"
}

// fieldOf describes a data field or formal parameter's type.
func fieldOf(name, label string, dt xpdl.DataType, isArray bool) field {
	f := field{Name: name, Label: label, Type: fieldTypeJSON}
	switch {
	case isArray:
		f.Type = fieldTypeArray
	case dt.Kind == xpdl.TypeBasic:
		f.Type = string(dt.Basic)
	case dt.Kind == xpdl.TypeEnumeration:
		f.Type, f.Enum = fieldTypeEnum, dt.Enum
	}
	if label == name {
		f.Label = ""
	}
	return f
}

// processFields lists the variables an instance of proc has, in the
// engine's order of scopes (the package's data fields, then the process's
// formal parameters and data fields; a later one replaces an earlier one
// of the same id). With start, only what a start may set: OUT
// parameters are left out.
func processFields(pkg *xpdl.Package, proc *xpdl.Process, start bool) []field {
	var out []field
	add := func(f field) {
		if i := slices.IndexFunc(out, func(o field) bool { return o.Name == f.Name }); i >= 0 {
			out = slices.Delete(out, i, i+1)
		}
		out = append(out, f)
	}
	for _, df := range pkg.DataFields {
		f := fieldOf(df.ID, df.Name, df.Type, df.IsArray)
		if df.HasInitialValue {
			f.Initial = df.InitialValue
		}
		add(f)
	}
	for _, fp := range proc.FormalParameters {
		if start && fp.Mode == xpdl.ModeOut {
			continue
		}
		add(fieldOf(fp.ID, fp.Name, fp.Type, fp.IsArray))
	}
	for _, df := range proc.DataFields {
		f := fieldOf(df.ID, df.Name, df.Type, df.IsArray)
		if df.HasInitialValue {
			f.Initial = df.InitialValue
		}
		add(f)
	}
	return out
}

// withValues returns fields with each one's current value written as
// its input takes it.
func withValues(fields []field, vars map[string]any) []field {
	out := slices.Clone(fields)
	for i := range out {
		v, ok := vars[out[i].Name]
		if !ok || v == nil {
			continue
		}
		switch v := v.(type) {
		case string:
			out[i].Value = v
			out[i].Text = !fitsInput(out[i].Input(), v)
		case bool, int64, float64, json.Number:
			out[i].Value = fmt.Sprint(v)
		default:
			b, err := json.Marshal(v)
			if err == nil {
				out[i].Value = string(b)
			}
		}
	}
	return out
}

// parseValues reads the variables an operator gave (the form fields
// "variables.NAME", or the API's "variables" object) by the declared
// types of fields. An empty form field is not given: the variable keeps
// its value (its initial value, for a start). A name that is not a
// variable, or a value that does not parse, is a *fieldError naming it.
func parseValues(fields []field, given map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(given))
	names := make([]string, 0, len(given))
	for name := range given {
		names = append(names, name)
	}
	slices.Sort(names) // the first error is the same every time
	for _, name := range names {
		i := slices.IndexFunc(fields, func(f field) bool { return f.Name == name })
		if i < 0 {
			return nil, &fieldError{Field: "variables." + name, Msg: "not a variable of the process"}
		}
		v, set, err := fields[i].parse(given[name])
		if err != nil {
			return nil, &fieldError{Field: "variables." + name, Msg: err.Error()}
		}
		if set {
			out[name] = v
		}
	}
	return out, nil
}

// parse reads one value of the field: text (a form field, or a string
// in JSON) parsed by the declared type, or a JSON value of that type.
// set is false for an empty form field.
func (f field) parse(raw any) (v any, set bool, err error) {
	s, isText := raw.(string)
	if !isText {
		v, err := f.typed(raw)
		return v, err == nil, err
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return nil, false, nil
	}
	switch f.Input() {
	case "number":
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return nil, false, fmt.Errorf("%q is not a whole number (INTEGER)", s)
		}
		return n, true, nil
	case "float":
		x, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, false, fmt.Errorf("%q is not a number (FLOAT)", s)
		}
		return x, true, nil
	case "boolean":
		switch strings.ToLower(t) {
		case "true", "on", "yes", "1":
			return true, true, nil
		case "false", "off", "no", "0":
			return false, true, nil
		}
		return nil, false, fmt.Errorf("%q is not true or false (BOOLEAN)", s)
	case "enum":
		if !slices.Contains(f.Enum, t) {
			return nil, false, fmt.Errorf("%q is not one of %s", s, strings.Join(f.Enum, ", "))
		}
		return t, true, nil
	case "date":
		if _, err := time.Parse(time.DateOnly, t); err != nil {
			return nil, false, fmt.Errorf("%q is not a date (YYYY-MM-DD)", s)
		}
		return t, true, nil
	case "datetime":
		if _, err := timer.ParseTimeDate(t, nil); err != nil {
			return nil, false, fmt.Errorf("%q is not a date and time (YYYY-MM-DDTHH:MM[:SS], optionally with a zone: RFC 3339)", s)
		}
		return t, true, nil
	case "time":
		for _, layout := range []string{"15:04", "15:04:05"} {
			if _, err := time.Parse(layout, t); err == nil {
				return t, true, nil
			}
		}
		return nil, false, fmt.Errorf("%q is not a time of day (HH:MM[:SS])", s)
	case "json":
		var x any
		if err := json.Unmarshal([]byte(t), &x); err != nil {
			if f.Type == fieldTypeArray {
				return nil, false, fmt.Errorf("%q is not a JSON array", s)
			}
			return s, true, nil // free text for a declared type, as the engine keeps it
		}
		if _, ok := x.([]any); f.Type == fieldTypeArray && !ok {
			return nil, false, fmt.Errorf("%q is not a JSON array", s)
		}
		return x, true, nil
	}
	return s, true, nil // the string types take the text as written
}

// typed checks a JSON value (not a string) given for the field: a
// number for INTEGER or FLOAT, true or false for BOOLEAN, null for any;
// declared types take any JSON value.
func (f field) typed(raw any) (any, error) {
	if raw == nil {
		return nil, nil
	}
	switch f.Input() {
	case "number":
		if n, ok := raw.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				return i, nil
			}
		}
		return nil, fmt.Errorf("%s is not a whole number (INTEGER)", jsonText(raw))
	case "float":
		if n, ok := raw.(json.Number); ok {
			if x, err := n.Float64(); err == nil {
				return x, nil
			}
		}
		return nil, fmt.Errorf("%s is not a number (FLOAT)", jsonText(raw))
	case "boolean":
		if b, ok := raw.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("%s is not true or false (BOOLEAN)", jsonText(raw))
	case "json":
		if _, ok := raw.([]any); f.Type == fieldTypeArray && !ok {
			return nil, fmt.Errorf("%s is not a JSON array", jsonText(raw))
		}
		return numbersAsGo(raw), nil
	}
	return nil, fmt.Errorf("%s is not a %s (give it as a string)", jsonText(raw), f.Type)
}

// numbersAsGo replaces the json.Numbers of a decoded JSON value with
// float64, as encoding/json decodes them by default.
func numbersAsGo(v any) any {
	switch v := v.(type) {
	case json.Number:
		x, err := v.Float64()
		if err != nil {
			return v.String()
		}
		return x
	case []any:
		for i := range v {
			v[i] = numbersAsGo(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = numbersAsGo(v[k])
		}
	}
	return v
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
