package jsonnum_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/internal/jsonnum"
)

func TestPlain(t *testing.T) {
	t.Parallel()
	dec := json.NewDecoder(bytes.NewReader([]byte(`{"n":3,"f":2.5,"big":1e30,"list":[1,-2.25,"x",{"deep":7}],"s":"9"}`)))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	require.Equal(t, map[string]any{
		"n": int64(3), "f": 2.5, "big": 1e30,
		"list": []any{int64(1), -2.25, "x", map[string]any{"deep": int64(7)}},
		"s":    "9",
	}, jsonnum.Plain(v))
	require.Equal(t, int64(42), jsonnum.Plain(json.Number("42")))
	require.Nil(t, jsonnum.Plain(nil))
}
