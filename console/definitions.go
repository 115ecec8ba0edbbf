package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/console/diagram"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// definitionRoutes registers the definitions: the list of packages and
// their versions, one version with its processes, source and rewritten
// model, the upload of new versions and the start of an instance.
func (h *Handler) definitionRoutes(mux *http.ServeMux) {
	h.page(mux, "GET /definitions", "definitions", "definitions", fixed("page/definitions"), h.definitionsView)
	h.page(mux, "GET /definitions/{id}", "definition", "definitions", definitionTarget, h.definitionView)
	h.page(mux, "GET /definitions/{id}/source", "definition-source", "definitions", definitionTarget, h.definitionSourceView)
	h.page(mux, "GET /definitions/{id}/explain", "definition-explain", "definitions", definitionTarget, h.explainView)
	mux.HandleFunc("GET /definitions/{id}/file", h.definitionFile)
	h.action(mux, "POST /definitions", action{
		Name:   ActionDeploy,
		Upload: true,
		Target: func(*http.Request) (string, error) { return "page/definitions", nil },
		Do:     h.deploy,
		Done: func(_ *http.Request, result any) (string, string) {
			deployed := result.(deployResult).Deployments
			names := make([]string, len(deployed))
			for i, d := range deployed {
				names[i] = fmt.Sprintf("%s v%d", d.Package, d.Version)
			}
			next := "/definitions"
			if len(deployed) == 1 {
				next = fmt.Sprintf("/definitions/%d", deployed[0].ID)
			}
			return "Deployed " + strings.Join(names, ", ") + ".", next
		},
	})
	h.action(mux, "POST /definitions/{id}/start", action{
		Name:   ActionStart,
		Target: idTarget("definition", "id"),
		Do:     h.start,
		Done: func(_ *http.Request, result any) (string, string) {
			inst := result.(engine.ProcessInstance)
			return fmt.Sprintf("Instance %d of %s started.", inst.ID, inst.Process), fmt.Sprintf("/instances/%d", inst.ID)
		},
	})
}

// definitionTarget names the definition a read is about, for Authorize.
func definitionTarget(r *http.Request) string { return "definition/" + r.PathValue("id") }

// versionRow is one deployed version with its instance counts.
type versionRow struct {
	// ID is the definition id (what instances name as their
	// definition); Package and Version the package id and its version.
	ID      int64  `json:"id"`
	Package string `json:"package"`
	Version int    `json:"version"`
	// Processes are the package's WorkflowProcess ids.
	Processes []string `json:"processes"`
	// Group is the id of the first definition deployed with this one
	// (its own id when deployed alone); File the uploaded file's name.
	Group int64  `json:"group"`
	File  string `json:"file,omitempty"`
	// Instances counts its instances by state; Open those not ended.
	Instances map[wftype.ProcessState]int64 `json:"instances"`
	Open      int64                         `json:"open"`
}

// stateCount is one state's count, for the pages (in state order).
type stateCount struct {
	State wftype.ProcessState
	Count int64
}

// Counts lists the states that have instances, in life-cycle order.
func (v versionRow) Counts() []stateCount {
	var out []stateCount
	for _, s := range wftype.ProcessStates {
		if n := v.Instances[s]; n > 0 {
			out = append(out, stateCount{s, n})
		}
	}
	return out
}

func rowOf(v engine.Version) versionRow {
	procs := v.Processes
	if procs == nil {
		procs = []string{}
	}
	return versionRow{ID: v.ID, Package: v.PackageID, Version: v.Version, Processes: procs,
		Group: v.Group, File: v.File, Instances: v.Instances, Open: v.Open()}
}

// packageRow is one package with its versions, newest first.
type packageRow struct {
	ID       string       `json:"id"`
	Versions []versionRow `json:"versions"`
	// Open counts the open instances of all its versions.
	Open int64 `json:"open"`
}

// definitionList is the data of the definitions page.
type definitionList struct {
	Packages []packageRow `json:"packages"`
}

func (h *Handler) definitionsView(r *http.Request) (view, error) {
	versions, err := h.eng.Versions(r.Context(), "")
	if err != nil {
		return view{}, err
	}
	out := definitionList{Packages: []packageRow{}}
	for _, v := range versions { // by package, then version
		n := len(out.Packages)
		if n == 0 || out.Packages[n-1].ID != v.PackageID {
			out.Packages = append(out.Packages, packageRow{ID: v.PackageID})
			n++
		}
		p := &out.Packages[n-1]
		p.Versions = append(p.Versions, rowOf(v))
		p.Open += v.Open()
	}
	for i := range out.Packages {
		slices.Reverse(out.Packages[i].Versions)
	}
	return view{Title: "Definitions", Data: out}, nil
}

// definitionDetail is the data of one version's page.
type definitionDetail struct {
	Definition versionRow `json:"definition"`
	// Name is the package's name.
	Name string `json:"name,omitempty"`
	// Versions are all the versions of the package, newest first.
	Versions []versionRow `json:"versions"`
	// Processes are the package's processes, in file order.
	Processes []processView `json:"processes"`
}

// processView is one process of a version: its start form and diagram.
type processView struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Main says that it is the process a start without a process id
	// starts.
	Main bool `json:"main"`
	// Variables are what a start may set.
	Variables []field `json:"variables"`
	// Diagram is the process drawn; DiagramError why it is not.
	Diagram      svgHTML `json:"-"`
	DiagramError string  `json:"-"`
	// StartKey is the idempotency key of the page's start form, so that
	// a form sent twice starts one instance.
	StartKey string `json:"-"`
}

// definitionID reads the path's definition id and the parsed version.
func (h *Handler) definitionOf(r *http.Request) (*xpdl.Package, engine.Deployment, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return nil, engine.Deployment{}, err
	}
	return h.pkgs.get(r.Context(), id)
}

// versionsOf returns the versions of package pkg, newest first, and the
// row of definition id among them.
func (h *Handler) versionsOf(ctx context.Context, pkg string, id int64) ([]versionRow, versionRow, error) {
	versions, err := h.eng.Versions(ctx, pkg)
	if err != nil {
		return nil, versionRow{}, err
	}
	rows := make([]versionRow, 0, len(versions))
	var this versionRow
	for i := len(versions) - 1; i >= 0; i-- {
		row := rowOf(versions[i])
		if row.ID == id {
			this = row
		}
		rows = append(rows, row)
	}
	if this.ID == 0 {
		return nil, this, &engine.NotFoundError{What: "definition", ID: strconv.FormatInt(id, 10)}
	}
	return rows, this, nil
}

func (h *Handler) definitionView(r *http.Request) (view, error) {
	ctx := r.Context()
	pkg, dep, err := h.definitionOf(r)
	if err != nil {
		return view{}, err
	}
	d := definitionDetail{Name: pkg.Name, Processes: []processView{}}
	if d.Versions, d.Definition, err = h.versionsOf(ctx, dep.PackageID, dep.ID); err != nil {
		return view{}, err
	}
	main, _ := engine.MainProcess(pkg)
	for _, p := range pkg.Processes {
		pv := processView{ID: p.ID, Name: p.Name, Main: p == main, Variables: processFields(pkg, p, true)}
		if pv.Name == p.ID {
			pv.Name = ""
		}
		pv.Diagram, err = h.drawing(ctx, dep.ID, p.ID, diagram.State{})
		if err != nil {
			pv.DiagramError = err.Error()
		}
		if pv.StartKey, err = startKey(); err != nil {
			return view{}, err
		}
		d.Processes = append(d.Processes, pv)
	}
	return view{Title: fmt.Sprintf("%s v%d", dep.PackageID, dep.Version), Data: d}, nil
}

// startKey returns a fresh idempotency key for a start form.
func startKey() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("%w: start key: %w", errInternal, err)
	}
	return "console-" + hex.EncodeToString(b), nil
}

// definitionSource is the data of a version's source page.
type definitionSource struct {
	Definition versionRow `json:"definition"`
	// Source is the XPDL as it was deployed.
	Source string `json:"source"`
}

func (h *Handler) definitionSourceView(r *http.Request) (view, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return view{}, err
	}
	dep, src, err := h.eng.DefinitionSource(r.Context(), id)
	if err != nil {
		return view{}, err
	}
	_, row, err := h.versionsOf(r.Context(), dep.PackageID, dep.ID)
	if err != nil {
		return view{}, err
	}
	return view{Title: fmt.Sprintf("%s v%d: source", dep.PackageID, dep.Version), Data: definitionSource{Definition: row, Source: string(src)}}, nil
}

// definitionFile sends a version's XPDL as a file to save; it is never
// shown by the browser as a document of the console's origin.
func (h *Handler) definitionFile(w http.ResponseWriter, r *http.Request) {
	if err := h.authorize(r, ActionRead, definitionTarget(r)); err != nil {
		h.fail(w, r, err)
		return
	}
	id, err := pathID(r, "id")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	dep, src, err := h.eng.DefinitionSource(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	name := dep.File
	if name == "" {
		name = dep.PackageID + ".xpdl"
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", safeFileName(fmt.Sprintf("v%d-%s", dep.Version, name))))
	hd.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	_, _ = w.Write(src)
}

// safeFileName keeps the characters of name that need no quoting in a
// Content-Disposition header.
func safeFileName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._-", r):
			return r
		}
		return '_'
	}, name)
}

// definitionExplain is the data of a version's rewritten model.
type definitionExplain struct {
	Definition versionRow `json:"definition"`
	// Explain is what "goxpdl validate --explain" shows of the file.
	Explain *xpdl.Explanation `json:"explain"`
	// Text is the same as that command prints it.
	Text string `json:"-"`
}

func (h *Handler) explainView(r *http.Request) (view, error) {
	pkg, dep, err := h.definitionOf(r)
	if err != nil {
		return view{}, err
	}
	_, row, err := h.versionsOf(r.Context(), dep.PackageID, dep.ID)
	if err != nil {
		return view{}, err
	}
	rewritten, steps, err := xpdl.Rewrite(pkg)
	if err != nil {
		return view{}, err
	}
	e := xpdl.Explain(rewritten, steps)
	return view{Title: fmt.Sprintf("%s v%d: rewritten model", dep.PackageID, dep.Version),
		Data: definitionExplain{Definition: row, Explain: e, Text: e.Text()}}, nil
}

// deployResult is the API's answer to an upload.
type deployResult struct {
	Deployments []versionRow `json:"deployments"`
}

// deploy deploys the uploaded files ("file", one or more) as one
// deployment (engine.DeployAs: DeployTogether, audited): all or none.
// It runs alone (action.Upload).
func (h *Handler) deploy(ctx context.Context, _ *http.Request, in *input, op engine.Op) (any, error) {
	files := in.files["file"]
	if len(files) == 0 {
		return nil, badRequest(`no file: upload each definition in a "file" field of a multipart/form-data body`)
	}
	srcs := make([]engine.Source, len(files))
	for i, f := range files {
		srcs[i] = engine.Source{File: f.Name, XPDL: f.Content}
	}
	deps, err := h.eng.DeployAs(ctx, op, srcs...)
	if err != nil {
		return nil, err
	}
	out := deployResult{Deployments: make([]versionRow, len(deps))}
	for i, d := range deps {
		out.Deployments[i] = rowOf(engine.Version{Deployment: d, Instances: map[wftype.ProcessState]int64{}})
	}
	return out, nil
}

// maxBusinessKey is the longest business key the engine keeps (bytes).
const maxBusinessKey = 255

// start starts an instance of a process of the version: "process" (the
// main process when empty), "business_key", "idempotency_key" and the
// variables ("variables.NAME" or a "variables" object), each parsed by
// its declared type. A value that does not parse is refused, naming the
// field, and nothing starts.
func (h *Handler) start(ctx context.Context, r *http.Request, in *input, op engine.Op) (any, error) {
	pkg, dep, err := h.definitionOf(r)
	if err != nil {
		return nil, err
	}
	opts := engine.StartOptions{DefinitionID: dep.ID, Actor: op.Actor, Op: &op,
		BusinessKey:    strings.TrimSpace(in.str("business_key")),
		IdempotencyKey: strings.TrimSpace(in.str("idempotency_key")),
	}
	if len(opts.BusinessKey) > maxBusinessKey {
		return nil, &fieldError{Field: "business_key", Msg: fmt.Sprintf("longer than %d bytes", maxBusinessKey)}
	}
	if len(opts.IdempotencyKey) > maxBusinessKey {
		return nil, &fieldError{Field: "idempotency_key", Msg: fmt.Sprintf("longer than %d bytes", maxBusinessKey)}
	}
	proc, err := startProcess(pkg, strings.TrimSpace(in.str("process")))
	if err != nil {
		return nil, err
	}
	opts.Process = proc.ID
	if opts.Variables, err = parseValues(processFields(pkg, proc, true), in.object("variables")); err != nil {
		return nil, err
	}
	id, err := h.eng.StartProcess(ctx, opts)
	if err != nil {
		return nil, err
	}
	return h.eng.Instance(ctx, id)
}

// startProcess returns the process id names, or the main process.
func startProcess(pkg *xpdl.Package, id string) (*xpdl.Process, error) {
	if id == "" {
		p, err := engine.MainProcess(pkg)
		if err != nil {
			return nil, &fieldError{Field: "process", Msg: err.Error()}
		}
		return p, nil
	}
	p := pkg.Process(id)
	if p == nil {
		return nil, &fieldError{Field: "process", Msg: fmt.Sprintf("no process %q in package %s", id, pkg.ID)}
	}
	return p, nil
}
