package script

import (
	"fmt"

	"github.com/dop251/goja"
)

// hardenPrelude is run once in every VM, after the compatibility and
// guard preludes, to keep one evaluation from changing what the next one
// on the same VM sees (a definition redefining String.prototype.equals
// for another's decision.equals("reject")). It
//
//   - walks every object reachable from the global object and from the
//     intrinsics no global names (the iterator, generator and async
//     function prototypes), through own properties, accessors and
//     prototypes: the builtins, the constructors, and the objects of the
//     preludes (java, Integer, Long ...);
//   - turns the writable data properties of those objects that scripts
//     commonly assign on their own objects (overrideable below) into
//     accessors. Their getter returns the builtin value; their setter,
//     called when a script assigns the name on an object that inherits it,
//     defines the property on that object instead, as assigning to an
//     unfrozen prototype's property would have. Without this, freezing
//     Object.prototype would make obj.toString = f fail silently in
//     sloppy code (JavaScript's "override mistake");
//   - freezes every object it found;
//   - makes every global binding there is by now (the builtins, the
//     preludes' names, globalThis) non-writable and non-configurable. The
//     global object itself stays extensible: data fields are set on it
//     for each evaluation, and a script may add names (which makes its VM
//     unfit for reuse, see release).
//
// Its value is Object.isExtensible, kept for release to check the global
// object with (a script could have changed the global property).
const hardenPrelude = `(function () {
  "use strict";
  var g = globalThis;
  var freeze = Object.freeze, defineProperty = Object.defineProperty, getPrototypeOf = Object.getPrototypeOf,
      getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor, ownKeys = Reflect.ownKeys,
      isExtensible = Object.isExtensible;
  var overrideable = ["constructor", "toString", "toLocaleString", "valueOf", "toJSON", "name", "message"];

  var found = new Set(), queue = [];
  function reach(v) {
    if (v !== null && (typeof v === "object" || typeof v === "function") && v !== g && !found.has(v)) {
      found.add(v);
      queue.push(v);
    }
  }
  function* gen() {}
  async function asyncFn() {}
  queue.push(g);
  [getPrototypeOf(gen), getPrototypeOf(asyncFn), getPrototypeOf(gen.prototype), getPrototypeOf([][Symbol.iterator]()),
   getPrototypeOf(""[Symbol.iterator]()), getPrototypeOf(new Map()[Symbol.iterator]()),
   getPrototypeOf(new Set()[Symbol.iterator]()), getPrototypeOf(/x/[Symbol.matchAll](""))].forEach(reach);
  while (queue.length > 0) {
    var o = queue.pop();
    reach(getPrototypeOf(o));
    var keys = ownKeys(o);
    for (var i = 0; i < keys.length; i++) {
      var d = getOwnPropertyDescriptor(o, keys[i]);
      reach(d.value);
      reach(d.get);
      reach(d.set);
    }
  }

  function overridable(o, name, value) {
    var get = function () { return value; };
    var set = function (v) {
      if (this === null || (typeof this !== "object" && typeof this !== "function")) return; // a primitive's
      if (this === o) throw new TypeError("Cannot assign to read only property '" + name + "'");
      defineProperty(this, name, {value: v, writable: true, enumerable: true, configurable: true});
    };
    defineProperty(o, name, {get: get, set: set, enumerable: false, configurable: false});
    freeze(get);
    freeze(set);
  }
  found.forEach(function (o) {
    for (var i = 0; i < overrideable.length; i++) {
      var d = getOwnPropertyDescriptor(o, overrideable[i]);
      if (d !== undefined && d.writable === true) overridable(o, overrideable[i], d.value);
    }
    freeze(o);
  });
  ownKeys(g).forEach(function (name) {
    var d = getOwnPropertyDescriptor(g, name);
    if (d.configurable || d.writable) {
      defineProperty(g, name, "value" in d ? {writable: false, configurable: false} : {configurable: false});
    }
  });
  return isExtensible;
})()`

// installHardening runs the hardening prelude (compiled from
// hardenPrelude) in vm and returns the Object.isExtensible it kept.
func installHardening(vm *goja.Runtime, prog *goja.Program) (goja.Callable, error) {
	v, err := vm.RunProgram(prog)
	if err != nil {
		return nil, err
	}
	isExtensible, ok := goja.AssertFunction(v)
	if !ok {
		return nil, fmt.Errorf("the hardening prelude returned no function")
	}
	return isExtensible, nil
}
