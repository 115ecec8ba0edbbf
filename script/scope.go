package script

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
)

// A script's top-level declarations (var x, let x, const x, function f,
// class C) outlive it on the VM that ran it: var and function become
// properties of the global object that cannot be deleted, and let, const
// and class become global bindings that are no property at all, so that a
// later `let x` on the same VM fails with "Identifier 'x' has already
// been declared" and a later script that reads x finds the last one's
// value. Evaluations therefore run such scripts in a scope of their own:
// through a direct eval inside a function (scopedRunner), where var and
// function declarations belong to that function's call and let, const and
// class to the eval, while the script still sees the global object's names
// and its value is still its last expression's.
//
// What the scope changes: a var naming a variable the evaluation was
// given would declare a local one and hide the given one, so that an
// assignment to it no longer reaches the data field. A script that
// declares a given name runs as it always did, at the top level, and its
// VM is not reused when it declared anything else.

// scopedRunnerSource makes the function that runs a source in a scope of
// its own. The call eval(s) is a direct eval because the name eval holds
// the realm's eval when it runs (the guards delete the global one later,
// the parameter keeps it); arrow functions have no arguments object, so
// the code run cannot reach the runner through arguments.callee.
const scopedRunnerSource = `((eval) => (s) => eval(s))(eval)`

// declarations is what a script declares at its top level.
type declarations struct {
	// names are the var and function names.
	names []string
	// lexical: a let, const or class at the top level, or a var whose
	// names could not all be read.
	lexical bool
	// scopable: the script may run in a scope of its own; false when it
	// could name the runner's eval (it mentions eval, or escapes a
	// character of an identifier).
	scopable bool
}

// topLevelDeclarations reads what prog declares at its top level.
func topLevelDeclarations(src string, prog *ast.Program) declarations {
	d := declarations{scopable: !strings.Contains(src, "eval") && !strings.Contains(src, `\u`)}
	for _, v := range prog.DeclarationList {
		for _, b := range v.List {
			if !bindingNames(b.Target, &d.names) {
				d.lexical = true
			}
		}
	}
	for _, st := range prog.Body {
		switch st := st.(type) {
		case *ast.LexicalDeclaration, *ast.ClassDeclaration:
			d.lexical = true
		case *ast.FunctionDeclaration:
			if st.Function.Name != nil {
				d.names = append(d.names, st.Function.Name.Name.String())
			}
		}
	}
	return d
}

// bindingNames appends the names a binding target declares, and reports
// whether it could read them all.
func bindingNames(target ast.Expression, names *[]string) bool {
	switch t := target.(type) {
	case *ast.Identifier:
		*names = append(*names, t.Name.String())
		return true
	case *ast.AssignExpression: // a default value
		return bindingNames(t.Left, names)
	case *ast.ArrayPattern:
		for _, el := range t.Elements {
			if el != nil && !bindingNames(el, names) {
				return false
			}
		}
		return t.Rest == nil || bindingNames(t.Rest, names)
	case *ast.ObjectPattern:
		for _, p := range t.Properties {
			switch p := p.(type) {
			case *ast.PropertyShort:
				*names = append(*names, p.Name.Name.String())
			case *ast.PropertyKeyed:
				if !bindingNames(p.Value, names) {
					return false
				}
			default:
				return false
			}
		}
		return t.Rest == nil || bindingNames(t.Rest, names)
	}
	return false
}

// placement is where an evaluation runs a script.
type placement int

const (
	// atTopLevel: as a program, leaving nothing behind.
	atTopLevel placement = iota
	// inScope: through the scoped runner.
	inScope
	// atTopLevelOnce: as a program, after which the VM is not reused.
	atTopLevelOnce
)

// place decides where a script that declares d runs, given the names of
// the evaluation's variables.
func (d declarations) place(vars map[string]any) placement {
	given := slices.IndexFunc(d.names, func(n string) bool { _, ok := vars[n]; return ok }) >= 0
	switch {
	case !d.lexical && !slices.ContainsFunc(d.names, func(n string) bool { _, ok := vars[n]; return !ok }):
		return atTopLevel // nothing declared, or only given names (a no-op)
	case d.scopable && !given:
		return inScope
	}
	return atTopLevelOnce
}

// installScopedRunner returns the function that runs a source in a scope
// of its own (scopedRunnerSource, compiled in prog).
func installScopedRunner(vm *goja.Runtime, prog *goja.Program) (goja.Callable, error) {
	v, err := vm.RunProgram(prog)
	if err != nil {
		return nil, err
	}
	run, ok := goja.AssertFunction(v)
	if !ok {
		return nil, fmt.Errorf("the scoped runner is not a function")
	}
	return run, nil
}
