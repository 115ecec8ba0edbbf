package script_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/script"
)

// Records and arrays are JavaScript's own in a script: a push into an
// array inside a record comes back, at any depth, and the caller's values
// are not changed behind its back.
func TestRecordsAndArraysBehaveAsJavaScript(t *testing.T) {
	t.Parallel()
	ev := script.New(script.Config{})
	rec := map[string]any{"items": []any{int64(1), int64(2)}, "sub": map[string]any{"a": []any{int64(1)}}, "n": int64(1)}
	list := []any{int64(1)}
	out, err := ev.Exec(context.Background(),
		`rec.items.push(3); rec.items[0] = 9; rec.n = 2; rec.sub.a.push(2); rec.added = {b: [true]}; list.push(5)`,
		map[string]any{"rec": rec, "list": list})
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"rec": map[string]any{
			"items": []any{int64(9), int64(2), int64(3)}, "n": int64(2),
			"sub": map[string]any{"a": []any{int64(1), int64(2)}}, "added": map[string]any{"b": []any{true}},
		},
		"list": []any{int64(1), int64(5)},
	}, out)
	require.Equal(t, map[string]any{"items": []any{int64(1), int64(2)}, "sub": map[string]any{"a": []any{int64(1)}}, "n": int64(1)}, rec,
		"the caller's record is as it was")
	require.Equal(t, []any{int64(1)}, list)

	got, err := ev.Eval(context.Background(),
		`Array.isArray(rec.items) && rec.items.map(function (x) { return x * 2; }).join() === "2,4" && JSON.stringify(rec)`,
		map[string]any{"rec": map[string]any{"z": int64(1), "items": []any{int64(1), int64(2)}, "a": "x"}})
	require.NoError(t, err)
	require.Equal(t, `{"a":"x","items":[1,2],"z":1}`, got, "fields in the order of their names") //nolint:testifylint // the order is what is tested

	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	got, err = ev.Eval(context.Background(), `r.due.getTime() === when.getTime() && r.due.getUTCHours()`,
		map[string]any{"r": map[string]any{"due": at}, "when": at})
	require.NoError(t, err)
	require.Equal(t, int64(12), got)
}
