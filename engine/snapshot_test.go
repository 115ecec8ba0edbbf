package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runTxAllowed are the functions of a run, besides the flush* functions
// and the snapshot's methods, that may touch its transaction, each with
// its reason. Nothing else of a run reads or writes the database: its
// decisions read through its snapshot (snapshot.go) and what they change
// is written at flush (issue #21, one write discipline).
var runTxAllowed = map[string]string{
	"run.hostTx":   "the transaction handed to a host's code (an application, a hook): its statements are the host's own",
	"run.spawn":    "a run of another instance in the same transaction (a subflow, a dequeued start) gets the transaction for its own snapshot and flush",
	"Engine.chain": "drives the transaction like transactAs: it sets a savepoint for each chained step and hands the savepoint's transaction to the step's new run",
}

// txUse is a place where code of a run touches the store outside its
// snapshot and flush, or other code a run's transaction.
type txUse struct {
	fn, what string
	pos      token.Position
}

// runTxUses parses the Go files of dir (not the tests) and returns where
// a run's code touches the store but through its snapshot and flush:
// code of a run is a method of run, a function or function literal
// taking a *run; touching is naming a run's (or a snapshot's) tx field,
// a store.Tx parameter, or the engine's store (e.store, r.e.store).
// Other code may use the store (it drives transactions, reads for the
// host) but not a run's tx field: a run made to read outside a
// transaction (r := e.newRun(ctx, e.store, ...)) reads through its
// snapshot too.
// allowed names the functions, besides the flush* methods of run and
// the methods of snapshot, that may. It also returns how many functions
// of runs it looked at, and the uses it found in the allowed places.
func runTxUses(t *testing.T, dir string, allowed map[string]string) (bad []txUse, checked, flushUses int) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name := fd.Name.Name
			recv := ""
			if fd.Recv != nil && len(fd.Recv.List) > 0 {
				recv = typeName(fd.Recv.List[0].Type)
				name = recv + "." + name
			}
			switch {
			case recv == "snapshot":
				continue // the snapshot reads the transaction
			case recv == "run" && strings.HasPrefix(fd.Name.Name, "flush"), allowed[name] != "":
				flushUses += len(txTouches(fd.Body, true, txParams(fd.Type)))
				continue
			}
			ofRun := recv == "run" || takesRun(fd.Type)
			if ofRun {
				checked++
			}
			for _, u := range txTouches(fd.Body, ofRun, txParams(fd.Type)) {
				fn := name
				if u.lit {
					fn += " (its func(*run))"
				}
				bad = append(bad, txUse{fn: fn, what: u.what, pos: fset.Position(u.pos)})
			}
		}
	}
	return bad, checked, flushUses
}

// typeName is the name of a receiver or parameter type, its pointer and
// type parameters dropped.
func typeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return typeName(x.X)
	case *ast.IndexExpr:
		return typeName(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			return id.Name + "." + x.Sel.Name
		}
	}
	return ""
}

func takesRun(ft *ast.FuncType) bool {
	if ft.Params == nil {
		return false
	}
	return slices.ContainsFunc(ft.Params.List, func(f *ast.Field) bool {
		s, ok := f.Type.(*ast.StarExpr)
		return ok && typeName(s.X) == "run"
	})
}

// txParams are the names of ft's parameters of type store.Tx.
func txParams(ft *ast.FuncType) map[string]bool {
	out := map[string]bool{}
	if ft.Params == nil {
		return out
	}
	for _, f := range ft.Params.List {
		if typeName(f.Type) == "store.Tx" {
			for _, n := range f.Names {
				out[n.Name] = true
			}
		}
	}
	return out
}

type touch struct {
	what string
	pos  token.Pos
	lit  bool // in a function literal taking a *run, in code not of a run
}

// txTouches finds in body the uses of a tx field and, in code of a run
// (ofRun, and the function literals taking a *run), of the store.Tx
// parameters params (and of those of the function literals in body),
// and of the engine's store.
func txTouches(body ast.Node, ofRun bool, params map[string]bool) []touch {
	var out []touch
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncLit:
			inner := txParams(x.Type)
			for p := range params {
				inner[p] = true
			}
			lit := !ofRun && takesRun(x.Type)
			for _, u := range txTouches(x.Body, ofRun || lit, inner) {
				u.lit = u.lit || lit
				out = append(out, u)
			}
			return false
		case *ast.SelectorExpr:
			switch {
			case x.Sel.Name == "tx":
				out = append(out, touch{what: "its transaction (." + x.Sel.Name + ")", pos: x.Pos()})
				return false
			case ofRun && x.Sel.Name == "store" && isEngine(x.X):
				out = append(out, touch{what: "the engine's store, outside the transaction", pos: x.Pos()})
				return false
			}
		case *ast.Ident:
			if ofRun && params[x.Name] {
				out = append(out, touch{what: "a store.Tx (" + x.Name + ")", pos: x.Pos()})
			}
		}
		return true
	})
	return out
}

// isEngine reports whether e names the engine as code of a run does: e,
// or r.e.
func isEngine(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "e"
	case *ast.SelectorExpr:
		return x.Sel.Name == "e"
	}
	return false
}

// TestRunsReadThroughTheirSnapshot keeps issue #21's one write
// discipline: a run's decisions read the database through its snapshot
// and write nothing; the snapshot's methods and the flush* functions are
// the only code of a run that touches its transaction, but for the
// short list runTxAllowed.
func TestRunsReadThroughTheirSnapshot(t *testing.T) {
	t.Parallel()
	bad, checked, flushUses := runTxUses(t, ".", runTxAllowed)
	for _, u := range bad {
		t.Errorf("%s: %s touches %s: read through the run's snapshot (snapshot.go), write at flush", u.pos, u.fn, u.what)
	}
	// The check looks where it should: the engine's runs, whose flush
	// functions write the transaction.
	require.Greater(t, checked, 100, "functions of runs checked")
	require.Greater(t, flushUses, 20, "uses of the transaction by the flush functions")
}

// TestRunTxCheckFindsBypasses shows the check of
// TestRunsReadThroughTheirSnapshot failing on each way a run's code can
// reach the database but through its snapshot.
func TestRunTxCheckFindsBypasses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := `package engine

func (r *run) decide() error {
	_, err := r.tx.GetWorkItem(r.ctx, 1)
	return err
}

func (r *run) flushItems() error { return r.tx.Flush(r.ctx) }

func (e *Engine) helper(r *run, tx store.Tx) error {
	return e.other(r.ctx, tx)
}

func (e *Engine) command() error {
	return e.transact(func(r *run) (*run, error) {
		_, err := e.store.GetWorkItem(r.ctx, 1)
		return r, err
	})
}

func (e *Engine) driver(tx store.Tx) error { return tx.Flush(nil) }

func (e *Engine) reader(id int64) error {
	r := e.newRun(nil, e.store, "host")
	_, err := r.tx.GetWorkItem(r.ctx, id)
	return err
}

func (r *run) allowed() { _ = r.tx }

func (s *snapshot) read() { _ = s.tx }

func (r *run) sneaky() { _ = r.snap.tx }
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o600))
	bad, checked, flushUses := runTxUses(t, dir, map[string]string{"run.allowed": "a test"})
	var got []string
	for _, u := range bad {
		got = append(got, u.fn+": "+u.what)
	}
	require.Equal(t, []string{
		"run.decide: its transaction (.tx)",
		"Engine.helper: a store.Tx (tx)",
		"Engine.command (its func(*run)): the engine's store, outside the transaction",
		"Engine.reader: its transaction (.tx)",
		"run.sneaky: its transaction (.tx)",
	}, got)
	require.Equal(t, 3, checked) // decide, helper, sneaky: the declared functions of runs
	require.Equal(t, 2, flushUses)
}
