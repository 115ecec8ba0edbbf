package script

import (
	"slices"
	"time"

	"github.com/dop251/goja"
)

// toJS makes a Go value a JavaScript one for a script: records
// (map[string]any) and arrays ([]any), at any depth, become objects and
// arrays of the VM's own, with the record's fields in the order of their
// names; a time.Time becomes a Date; anything else goes in as goja maps
// it.
//
// goja would wrap a map or a slice instead, live, and its wrappers do not
// nest: rec.items.push(3) on a wrapped map appended to a copy of the
// slice that the map never saw, so the push was lost, and what a script
// changed in a record it changed in the caller's map. A copy behaves as
// JavaScript does, and what a script changes comes back only as Exec's
// result.
func (rt *runtime) toJS(val any) (goja.Value, error) {
	switch v := val.(type) {
	case time.Time:
		return rt.vm.New(rt.vm.Get("Date"), rt.vm.ToValue(v.UnixMilli()))
	case map[string]any:
		o := rt.vm.NewObject()
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			x, err := rt.toJS(v[k])
			if err != nil {
				return nil, err
			}
			if err := o.Set(k, x); err != nil {
				return nil, err
			}
		}
		return o, nil
	case []any:
		items := make([]any, len(v))
		for i, el := range v {
			x, err := rt.toJS(el)
			if err != nil {
				return nil, err
			}
			items[i] = x
		}
		return rt.vm.NewArray(items...), nil
	}
	return rt.vm.ToValue(val), nil
}
