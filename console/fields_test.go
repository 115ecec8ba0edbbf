package console

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/xpdl"
)

func TestFieldParse(t *testing.T) {
	t.Parallel()
	basic := func(b xpdl.BasicType) field {
		return fieldOf("v", "", xpdl.DataType{Kind: xpdl.TypeBasic, Basic: b}, false)
	}
	enum := fieldOf("v", "", xpdl.DataType{Kind: xpdl.TypeEnumeration, Enum: []string{"a", "b"}}, false)
	array := fieldOf("v", "", xpdl.DataType{Kind: xpdl.TypeBasic, Basic: xpdl.BasicString}, true)
	declared := fieldOf("v", "", xpdl.DataType{Kind: xpdl.TypeDeclared, Declared: "Money"}, false)
	cases := []struct {
		name string
		f    field
		in   any
		want any
		set  bool
		bad  bool
	}{
		{"empty text is not given", basic(xpdl.BasicInteger), "  ", nil, false, false},
		{"integer", basic(xpdl.BasicInteger), " 42 ", int64(42), true, false},
		{"integer from JSON", basic(xpdl.BasicInteger), json.Number("42"), int64(42), true, false},
		{"integer, not", basic(xpdl.BasicInteger), "4.2", nil, false, true},
		{"integer from JSON, fraction", basic(xpdl.BasicInteger), json.Number("4.2"), nil, false, true},
		{"float", basic(xpdl.BasicFloat), "-1.5e3", -1500.0, true, false},
		{"float, infinite", basic(xpdl.BasicFloat), "Inf", nil, false, true},
		{"float from JSON", basic(xpdl.BasicFloat), json.Number("0.25"), 0.25, true, false},
		{"boolean", basic(xpdl.BasicBoolean), "on", true, true, false},
		{"boolean false", basic(xpdl.BasicBoolean), "False", false, true, false},
		{"boolean from JSON", basic(xpdl.BasicBoolean), true, true, true, false},
		{"boolean, not", basic(xpdl.BasicBoolean), "perhaps", nil, false, true},
		{"string kept as written", basic(xpdl.BasicString), " hi ", " hi ", true, false},
		{"string from a number", basic(xpdl.BasicString), json.Number("1"), nil, false, true},
		{"null", basic(xpdl.BasicString), nil, nil, true, false},
		{"date", basic(xpdl.BasicDate), "2026-02-28", "2026-02-28", true, false},
		{"date, impossible", basic(xpdl.BasicDate), "2026-02-30", nil, false, true},
		{"datetime local", basic(xpdl.BasicDateTime), "2026-02-28T10:15", "2026-02-28T10:15", true, false},
		{"datetime zoned", basic(xpdl.BasicDateTime), "2026-02-28T10:15:00Z", "2026-02-28T10:15:00Z", true, false},
		{"datetime, not", basic(xpdl.BasicDateTime), "soon", nil, false, true},
		{"time", basic(xpdl.BasicTime), "23:59:59", "23:59:59", true, false},
		{"time, not", basic(xpdl.BasicTime), "24:00", nil, false, true},
		{"enumeration", enum, "b", "b", true, false},
		{"enumeration, not", enum, "c", nil, false, true},
		{"array", array, `["x", 2]`, []any{"x", 2.0}, true, false},
		{"array, not", array, `{"x":1}`, nil, false, true},
		{"array from JSON", array, []any{json.Number("1")}, []any{1.0}, true, false},
		{"declared type, JSON", declared, `{"amount": 3}`, map[string]any{"amount": 3.0}, true, false},
		{"declared type, free text", declared, `three euros`, "three euros", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, set, err := c.f.parse(c.in)
			if c.bad {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.set, set)
			require.Equal(t, c.want, got)
		})
	}
}

func TestFieldInputShowsValue(t *testing.T) {
	t.Parallel()
	f := fieldOf("at", "At", xpdl.DataType{Kind: xpdl.TypeBasic, Basic: xpdl.BasicDateTime}, false)
	out := withValues([]field{f, f}, map[string]any{"at": "2026-01-02T03:04"})
	require.Equal(t, "2026-01-02T03:04", out[0].Value)
	require.False(t, out[0].Text, "a datetime-local input shows it")
	out = withValues([]field{f}, map[string]any{"at": "2026-01-02T03:04:05+01:00"})
	require.True(t, out[0].Text, "a zone needs a text input")
	require.Equal(t, "datetime", f.Input())
	require.Empty(t, f.Value, "withValues does not change its argument")
}
