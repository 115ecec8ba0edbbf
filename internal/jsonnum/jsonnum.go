// Package jsonnum turns the json.Number values of JSON decoded with
// UseNumber into Go numbers: the one rule, shared by the engine's
// variables and package statemachine, by which a whole number stays an
// int64 and any other number becomes a float64.
package jsonnum

import "encoding/json"

// Plain replaces every json.Number inside v (itself, or in the slices
// and maps of decoded JSON, changed in place) by an int64 when it is a
// whole number that fits, else by a float64, and returns v.
func Plain(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = Plain(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = Plain(x[k])
		}
	}
	return v
}
