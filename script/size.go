package script

import (
	"strconv"

	"github.com/dop251/goja"
)

// The sizes sizeOf counts, about those of JSON: a number or a boolean
// takes up to a few bytes more than its digits, a key its quotes and
// colon, an element its comma, an array or object its brackets.
const (
	scalarSize    = 8
	keySize       = 4
	elemSize      = 1
	containerSize = 2
)

// sizeOf estimates how large v is once exported, about the size of its
// JSON, and stops counting once the estimate passes max (it returns a
// number above max then). It walks without recursion and counts an object
// every time it is referred to, as its JSON would repeat it: an array of
// a thousand references to one large object is a thousand times as large
// once exported and stored, and a cycle is larger than any max. Every
// object it reads adds to the count, so the walk ends after at most max/2
// of them. It reads properties as the script would, so it must run under
// the evaluation's limits: a getter is a script too.
func sizeOf(v goja.Value, max int64) int64 {
	var (
		total int64
		todo  []*goja.Object
	)
	// add counts a value: a scalar at once, an object when its turn comes.
	add := func(v goja.Value) {
		obj, isObject := v.(*goja.Object)
		switch {
		case isObject:
			todo = append(todo, obj)
		case v == nil || goja.IsUndefined(v) || goja.IsNull(v):
			total += scalarSize
		default:
			if s, ok := v.(goja.String); ok {
				total += int64(s.Length()) + 2
			} else {
				total += scalarSize
			}
		}
	}
	add(v)
	for len(todo) > 0 && total <= max {
		obj := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		switch obj.ClassName() {
		case "Array":
			// Each element is counted as it is read, so that a sparse
			// array of a billion holes stops the walk at max.
			n := obj.Get("length").ToInteger()
			total += containerSize
			for i := int64(0); i < n && total <= max; i++ {
				total += elemSize
				add(obj.Get(strconv.FormatInt(i, 10)))
			}
		case "Date", "Function":
			total += scalarSize
		default:
			total += containerSize
			for _, k := range obj.Keys() {
				if total > max {
					break
				}
				total += int64(len(k)) + keySize
				add(obj.Get(k))
			}
		}
	}
	return total
}
