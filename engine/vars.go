package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/internal/jsonnum"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Variable values in Go, by XPDL basic type:
//
//	STRING, REFERENCE, PERFORMER   string
//	INTEGER                        int64
//	FLOAT                          float64
//	BOOLEAN                        bool
//	DATETIME, DATE, TIME           string (as written, e.g. RFC 3339)
//	anything else                  any JSON value (declared, record,
//	                               enumeration, array, external types)
//
// A data field without an InitialValue starts at its type's zero value
// ("" for strings, 0, false) so that conditions of real files such as
// status.equals("ok") can run before anyone set it; other types start
// as nil.

// varType is the declared type of one variable of a process.
type varType struct {
	basic xpdl.BasicType // "" when not a basic type
	array bool
	enum  []string
}

func typeOf(dt xpdl.DataType, isArray bool) varType {
	vt := varType{array: isArray}
	switch dt.Kind {
	case xpdl.TypeBasic:
		vt.basic = dt.Basic
	case xpdl.TypeEnumeration:
		vt.enum = dt.Enum
	}
	return vt
}

// name is the type as stored and reported.
func (vt varType) name() string {
	switch {
	case vt.array:
		return "ARRAY"
	case vt.basic != "":
		return string(vt.basic)
	case vt.enum != nil:
		return "ENUMERATION"
	}
	return "JSON"
}

// zero is the value of a variable nobody set.
func (vt varType) zero() any {
	if vt.array {
		return nil
	}
	switch vt.basic {
	case xpdl.BasicString, xpdl.BasicReference, xpdl.BasicPerformer:
		return ""
	case xpdl.BasicInteger:
		return int64(0)
	case xpdl.BasicFloat:
		return float64(0)
	case xpdl.BasicBoolean:
		return false
	}
	return nil
}

// MaxValueBytes is the most one variable's value may take, encoded as
// JSON, and the most the values one command gives may take together (a
// start's variables, a completion's outputs, the values of SetVariables,
// a skip, a move or a migration). A larger value is refused with a
// *VariableError matching ErrTooLarge, on every database alike: MySQL and
// MariaDB refuse a statement longer than their max_allowed_packet (16 MiB
// by default on MariaDB), and a variable's change is written to the
// history with its old and its new value.
const MaxValueBytes = 4 << 20

// coerce checks v against the type and returns it in its canonical Go
// form. Numbers may come as any Go integer or float kind (JavaScript and
// JSON give float64); an INTEGER must be integral. A value the engine
// could not keep as given (text that is not valid UTF-8, a number that is
// not finite: JSON has neither) is of the wrong type; one larger than
// MaxValueBytes is refused with ErrTooLarge.
func (vt varType) coerce(name string, v any) (any, error) {
	c, err := vt.coerceType(name, v)
	if err != nil {
		return nil, err
	}
	if want := badValue(c); want != "" {
		return nil, &VariableError{Name: name, Want: vt.name() + " (" + want + ")", Value: v, kind: ErrWrongType}
	}
	if encodedSize(c) > MaxValueBytes {
		return nil, &VariableError{Name: name, Want: vt.name(), Value: v, kind: ErrTooLarge}
	}
	return c, nil
}

// encodedSize is about the length of v's JSON: exact for all but short
// strings, whose escapes it leaves out (they cannot reach the limits it is
// compared with).
func encodedSize(v any) int {
	switch x := v.(type) {
	case nil, bool, int64, float64:
		return 24
	case string:
		if len(x) <= 64<<10 {
			return len(x) + 2
		}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(data)
}

// checkValuesSize refuses values one command gives that are larger than
// MaxValueBytes together.
func checkValuesSize(values map[string]any) error {
	total := 0
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if total += encodedSize(values[name]); total > MaxValueBytes {
			return &VariableError{Name: name, Value: values[name], kind: ErrTooLarge}
		}
	}
	return nil
}

func (vt varType) coerceType(name string, v any) (any, error) {
	bad := func() (any, error) {
		return nil, &VariableError{Name: name, Want: vt.name(), Value: v, kind: ErrWrongType}
	}
	if v == nil {
		return nil, nil
	}
	if vt.array {
		if _, ok := v.([]any); ok {
			return v, nil
		}
		data, err := json.Marshal(v)
		if err != nil || len(data) == 0 || data[0] != '[' {
			return bad()
		}
		return v, nil
	}
	if vt.enum != nil {
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		for _, e := range vt.enum {
			if e == s {
				return s, nil
			}
		}
		return bad()
	}
	switch vt.basic {
	case xpdl.BasicString, xpdl.BasicReference, xpdl.BasicPerformer,
		xpdl.BasicDateTime, xpdl.BasicDate, xpdl.BasicTime:
		switch s := v.(type) {
		case string:
			return s, nil
		case time.Time:
			if vt.basic == xpdl.BasicString || vt.basic == xpdl.BasicReference || vt.basic == xpdl.BasicPerformer {
				return bad()
			}
			return s.Format(time.RFC3339Nano), nil
		}
		return bad()
	case xpdl.BasicBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return bad()
	case xpdl.BasicInteger:
		if i, ok := integral(v); ok {
			return i, nil
		}
		return bad()
	case xpdl.BasicFloat:
		// NaN and the infinities have no JSON form to be stored in.
		if f, ok := number(v); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, nil
		}
		return bad()
	}
	return v, nil
}

// same reports whether a and b, two values of a variable of this type in
// their canonical form (coerce), are the same value: whether a script
// that left b where a was changed the variable. Scalars compare by
// value; a DATETIME by the instant it names, so that one written with
// another zone is the same (two texts that are not RFC 3339 compare as
// text); JSON values (arrays, records, declared and schema types) member
// by member, their numbers by value whatever their Go type (the integer 2
// and the float 2.0 are the same), NaN the same as NaN.
func (vt varType) same(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if vt.array || (vt.basic == "" && vt.enum == nil) {
		return sameJSON(a, b)
	}
	switch vt.basic {
	case xpdl.BasicDateTime:
		x, xok := a.(string)
		y, yok := b.(string)
		if !xok || !yok {
			return false
		}
		tx, errx := time.Parse(time.RFC3339Nano, x)
		ty, erry := time.Parse(time.RFC3339Nano, y)
		if errx == nil && erry == nil {
			return tx.Equal(ty)
		}
		return x == y
	case xpdl.BasicFloat:
		return sameNumber(a, b)
	}
	return a == b // string, int64, bool: comparable
}

// sameJSON compares two JSON values as decoded (maps, slices, strings,
// bools, numbers of any Go kind) or as a script exported them (times
// too); anything else is compared with reflect.DeepEqual.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !sameJSON(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	}
	if _, ok := number(a); ok {
		return sameNumber(a, b)
	}
	return reflect.DeepEqual(a, b)
}

// sameNumber reports whether a and b are numbers of the same value: two
// integers exactly, an integer and a float when the float is that
// integer, two floats when equal or both NaN.
func sameNumber(a, b any) bool {
	x, xok := number(a)
	y, yok := number(b)
	if !xok || !yok {
		return false
	}
	i, aInt := integer(a)
	j, bInt := integer(b)
	switch {
	case aInt && bInt:
		return i == j
	case aInt:
		return y == math.Trunc(y) && y >= math.MinInt64 && y < math.MaxInt64 && int64(y) == i
	case bInt:
		return x == math.Trunc(x) && x >= math.MinInt64 && x < math.MaxInt64 && int64(x) == j
	}
	return x == y || (math.IsNaN(x) && math.IsNaN(y))
}

// integer returns v as an int64 when it is a Go integer that fits one.
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint:
		return int64(n), uint64(n) <= math.MaxInt64
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		return int64(n), n <= math.MaxInt64
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// integral returns v as an int64 when it is an integer that fits one
// exactly: a Go integer of any kind (integer), or a float (JavaScript and
// JSON give float64) that is integral and within range. A float64 holds
// integers exactly only up to 2^53; the integer kinds are taken without
// passing through one.
func integral(v any) (int64, bool) {
	if i, ok := integer(v); ok {
		return i, true
	}
	f, ok := number(v)
	// -2^63 is an int64; 2^63 is not, and is the first float64 above
	// MaxInt64.
	if !ok || f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int8:
		return float64(n), true
	case int16:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint8:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// parseText reads a value written as text: an InitialValue, or NAME=VALUE
// on the command line. Strings are taken as written (surrounding double
// quotes, which some exporters add, are removed); other types are parsed.
func (vt varType) parseText(name, text string) (any, error) {
	bad := func() (any, error) {
		return nil, &VariableError{Name: name, Want: vt.name(), Value: text, kind: ErrWrongType}
	}
	t := strings.TrimSpace(text)
	if vt.array || (vt.basic == "" && vt.enum == nil) {
		if t == "" {
			return nil, nil
		}
		var v any
		if err := json.Unmarshal([]byte(t), &v); err != nil {
			return text, nil // free text for a declared type: keep it
		}
		return v, nil
	}
	switch vt.basic {
	case xpdl.BasicInteger:
		if t == "" {
			return vt.zero(), nil
		}
		i, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(t, 64)
			if ferr != nil {
				return bad()
			}
			var ok bool
			if i, ok = integral(f); !ok {
				return bad() // not integral, or out of an INTEGER's range
			}
		}
		return i, nil
	case xpdl.BasicFloat:
		if t == "" {
			return vt.zero(), nil
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return bad()
		}
		return f, nil
	case xpdl.BasicBoolean:
		switch strings.ToLower(t) {
		case "":
			return false, nil
		case "true", "1", "yes":
			return true, nil
		case "false", "0", "no":
			return false, nil
		}
		return bad()
	}
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
		text = t[1 : len(t)-1]
	}
	return vt.coerce(name, text)
}

// decl is one variable a process instance has.
type decl struct {
	name string
	typ  varType
	// initial is the InitialValue text; hasInitial says it was written.
	initial    string
	hasInitial bool
}

// declarations lists the variables of a process instance: the package's
// data fields, then the process's formal parameters and data fields
// (later ones win on a name clash, as the process scope is innermost).
func declarations(pkg *xpdl.Package, proc *xpdl.Process) map[string]decl {
	out := make(map[string]decl)
	for _, df := range pkg.DataFields {
		out[df.ID] = decl{name: df.ID, typ: typeOf(df.Type, df.IsArray), initial: df.InitialValue, hasInitial: df.HasInitialValue}
	}
	for _, fp := range proc.FormalParameters {
		out[fp.ID] = decl{name: fp.ID, typ: typeOf(fp.Type, fp.IsArray)}
	}
	for _, df := range proc.DataFields {
		out[df.ID] = decl{name: df.ID, typ: typeOf(df.Type, df.IsArray), initial: df.InitialValue, hasInitial: df.HasInitialValue}
	}
	return out
}

// initialValues returns every variable's starting value, with the given
// values applied on top. A name that is not declared, or a value of the
// wrong type, is refused.
func initialValues(decls map[string]decl, given map[string]any) (map[string]any, error) {
	vals := make(map[string]any, len(decls))
	for name, d := range decls {
		v := d.typ.zero()
		if d.hasInitial {
			parsed, err := d.typ.parseText(name, d.initial)
			if err == nil {
				v = parsed
			}
		}
		vals[name] = v
	}
	for name, v := range given {
		d, ok := decls[name]
		if !ok {
			return nil, &VariableError{Name: name, Value: v, kind: ErrUnknownVariable}
		}
		c, err := d.typ.coerce(name, v)
		if err != nil {
			return nil, err
		}
		vals[name] = c
	}
	return vals, nil
}

func encodeVariable(instance int64, name string, typ varType, v any) (store.Variable, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return store.Variable{}, fmt.Errorf("variable %q: encode: %w", name, err)
	}
	return store.Variable{ProcessInstanceID: instance, Name: name, Type: typ.name(), Value: data}, nil
}

// decodeVariable reads a stored value back into its Go form.
func decodeVariable(v store.Variable) (any, error) {
	if len(v.Value) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(v.Value))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("variable %q: decode: %w", v.Name, err)
	}
	switch v.Type {
	case string(xpdl.BasicInteger):
		if n, ok := out.(json.Number); ok {
			return n.Int64()
		}
	case string(xpdl.BasicFloat):
		if n, ok := out.(json.Number); ok {
			return n.Float64()
		}
	}
	return jsonnum.Plain(out), nil
}
