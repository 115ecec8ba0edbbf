package engine

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

// TestSameValue is the rule by which a script's result counts as a change
// of a variable (runScript): values compare by the variable's type, not
// as text.
func TestSameValue(t *testing.T) {
	t.Parallel()
	basic := func(b xpdl.BasicType) varType { return varType{basic: b} }
	jsonType, array := varType{}, varType{array: true}
	at := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		typ  varType
		a, b any
		same bool
	}{
		{"integers", basic(xpdl.BasicInteger), int64(6), int64(6), true},
		{"other integer", basic(xpdl.BasicInteger), int64(6), int64(7), false},
		{"floats", basic(xpdl.BasicFloat), 2.5, 2.5, true},
		{"NaN is NaN", basic(xpdl.BasicFloat), math.NaN(), math.NaN(), true},
		{"NaN is not a number", basic(xpdl.BasicFloat), math.NaN(), 1.0, false},
		{"negative zero", basic(xpdl.BasicFloat), math.Copysign(0, -1), 0.0, true},
		{"strings", basic(xpdl.BasicString), "6", "6", true},
		{"text is not a number", jsonType, "6", int64(6), false},
		{"booleans", basic(xpdl.BasicBoolean), true, false, false},
		{"nil and zero", basic(xpdl.BasicInteger), nil, int64(0), false},
		{"nil and nil", jsonType, nil, nil, true},
		{"same instant in another zone", basic(xpdl.BasicDateTime), "2026-01-05T10:00:00+01:00", "2026-01-05T09:00:00Z", true},
		{"fractions of a second", basic(xpdl.BasicDateTime), "2026-01-05T09:00:00.5Z", "2026-01-05T09:00:00.500Z", true},
		{"another instant", basic(xpdl.BasicDateTime), "2026-01-05T10:00:00+01:00", "2026-01-05T10:00:00Z", false},
		{"DATETIME not RFC 3339 compares as text", basic(xpdl.BasicDateTime), "5 Jan 2026", "5 Jan 2026", true},
		{"a DATE is text", basic(xpdl.BasicDate), "2026-01-05", "2026-01-05", true},
		{"JSON integer and integral float", jsonType, map[string]any{"n": int64(2)}, map[string]any{"n": 2.0}, true},
		{"JSON integer and fraction", jsonType, map[string]any{"n": int64(2)}, map[string]any{"n": 2.5}, false},
		{"JSON integer beyond float precision", jsonType, int64(1<<53 + 1), float64(1 << 53), false},
		{"JSON number kinds", jsonType, json.Number("7"), int(7), true},
		{"JSON NaN", jsonType, []any{math.NaN()}, []any{math.NaN()}, true},
		{"maps member by member", jsonType, map[string]any{"a": []any{int64(1), "x"}}, map[string]any{"a": []any{1.0, "x"}}, true},
		{"a member more", jsonType, map[string]any{"a": int64(1)}, map[string]any{"a": int64(1), "b": nil}, false},
		{"a member missing", jsonType, map[string]any{"a": nil}, map[string]any{"b": nil}, false},
		{"arrays in order", array, []any{int64(1), int64(2)}, []any{int64(2), int64(1)}, false},
		{"array and map", array, []any{}, map[string]any{}, false},
		{"times in JSON by instant", jsonType, at, at.In(time.FixedZone("CET", 3600)), true},
		{"other Go values deeply", jsonType, []string{"a"}, []string{"a"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.same, tt.typ.same(tt.a, tt.b))
			require.Equal(t, tt.same, tt.typ.same(tt.b, tt.a), "symmetric")
		})
	}
}

// A FLOAT is finite: NaN and the infinities cannot be stored (JSON).
func TestCoerceRefusesNonFiniteFloats(t *testing.T) {
	t.Parallel()
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := varType{basic: xpdl.BasicFloat}.coerce("f", f)
		require.ErrorIs(t, err, ErrWrongType, "%v", f)
	}
}
