package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Packages deployed together (docs/engine.md, "Packages deployed
// together"). One deployment may store several packages, one definition
// row each, grouped by the id of the first (store.Definition.GroupID). A
// SubFlow finds its process first among the packages deployed with its
// own, so that two files that share a package id (Bonita exports do) are
// two packages of one deployment and do not hide each other, and only then
// in the latest deployed version of a package it references. The group
// never changes once committed, so the resolution inside it is fixed at
// deploy time: an instance's subflows run the versions deployed with it.

// Source is one package of a deployment of several (DeployTogether).
type Source struct {
	// File names the file the package was read from, or is empty. Its
	// base name is what an ExternalPackage href of another package of the
	// deployment matches.
	File string
	// XPDL is the package's text.
	XPDL []byte
}

// ErrUnknownSubflow: a SubFlow names a process that none of the places a
// subflow's process is looked up in holds. It is matched by
// *UnknownSubflowError.
var ErrUnknownSubflow = errors.New("subflow process not found")

// UnknownSubflowError names a SubFlow whose process cannot be found: Deploy
// refuses its package with it, and an activity that meets it at run time
// (its package was deployed before the rule) ends Abnormal with its text.
// It matches ErrUnknownSubflow and xpdl.ErrInvalid.
type UnknownSubflowError struct {
	// Package and Process hold the SubFlow activity Activity.
	Package, Process, Activity string
	// Target is the process the SubFlow calls, PackageRef the package it
	// names for it ("" when it names none).
	Target, PackageRef string
}

func (e *UnknownSubflowError) Error() string {
	where := "the packages deployed with it or the latest deployed version of the packages it references"
	if e.PackageRef != "" {
		where = fmt.Sprintf("package %s (deployed with it or its latest deployed version)", e.PackageRef)
	}
	return fmt.Sprintf("%s: package %s, process %s, activity %s: subflow process %s is not in %s",
		ErrUnknownSubflow, e.Package, e.Process, e.Activity, e.Target, where)
}

// Is makes the error match ErrUnknownSubflow and xpdl.ErrInvalid.
func (e *UnknownSubflowError) Is(target error) bool {
	return target == ErrUnknownSubflow || target == xpdl.ErrInvalid
}

// member is a package on its way into a deployment.
type member struct {
	pkg  *xpdl.Package
	src  []byte
	file string // base name; "" when not read from a file
}

// DeployTogether reads, validates and stores several packages as one
// deployment: each gets a new version of its package id (two sources
// with the same package id are two versions, both kept), and a SubFlow
// of any of them finds its process among all of them (docs/engine.md).
// Each package is validated with the others deployed alongside it, as
// "goxpdl validate" does with the files named together. Nothing is stored
// unless every package is within the definition limits (as Deploy says),
// valid, and every SubFlow finds its process (*UnknownSubflowError). The Deployments are in the order of srcs.
func (e *Engine) DeployTogether(ctx context.Context, srcs ...Source) ([]Deployment, error) {
	ms, err := e.readSources(srcs)
	if err != nil {
		return nil, err
	}
	return e.deployTogether(ctx, ms, nil)
}

// DeployAs is DeployTogether as an operator's command (an upload in the
// console, the CLI's deploy): it is written to the audit log (Audit) as
// AuditDeploy, whether it succeeds or is refused, with op's actor,
// reason and data. Its target is the package of the first source, and
// its detail the versions the deployment made. The other Deploy methods
// are the host's own and are not audited.
func (e *Engine) DeployAs(ctx context.Context, op Op, srcs ...Source) ([]Deployment, error) {
	a := e.audit(ctx, op, audited{action: AuditDeploy, kind: TargetPackage})
	if err := op.check(); err != nil {
		return nil, a.end(ctx, nil, err)
	}
	ms, err := e.readSources(srcs)
	if err != nil {
		return nil, a.end(ctx, nil, err)
	}
	a.target(TargetPackage, ms[0].pkg.ID)
	ds, err := e.deployTogether(ctx, ms, a)
	return ds, a.end(ctx, nil, err)
}

// readSources reads the packages of srcs (none: xpdl.ErrInvalid).
func (e *Engine) readSources(srcs []Source) ([]member, error) {
	if len(srcs) == 0 {
		return nil, fmt.Errorf("%w: deploy: no packages", xpdl.ErrInvalid)
	}
	ms := make([]member, 0, len(srcs))
	for i, s := range srcs {
		name := s.File
		if name == "" {
			name = fmt.Sprintf("deployment[%d]", i)
		}
		pkg, err := xpdl.Read(bytes.NewBuffer(s.XPDL), e.readOpts(name))
		if err != nil {
			return nil, err
		}
		ms = append(ms, member{pkg: pkg, src: s.XPDL, file: baseName(s.File)})
	}
	return ms, nil
}

// DeployFiles deploys the XPDL files at paths, with every package they
// reference as ExternalPackages (resolved by href, whether or not the
// reference gives an Id), as one deployment (DeployTogether). A file
// named twice, or named and also referenced, is deployed once. The
// Deployments are one per path, in their order (a file named twice twice
// over), then those of the referenced packages no path names.
func (e *Engine) DeployFiles(ctx context.Context, paths ...string) ([]Deployment, error) {
	var ms []member
	at := map[string]int{} // absolute path -> index in ms
	add := func(pkg *xpdl.Package, file string) (int, error) {
		key, err := filepath.Abs(file)
		if err != nil {
			key = filepath.Clean(file)
		}
		if i, ok := at[key]; ok {
			return i, nil
		}
		src, err := os.ReadFile(file)
		if err != nil {
			return 0, fmt.Errorf("deploy %s: %w", file, err)
		}
		at[key] = len(ms)
		ms = append(ms, member{pkg: pkg, src: src, file: filepath.Base(file)})
		return len(ms) - 1, nil
	}
	named := make([]int, len(paths))
	var externals []*xpdl.Package
	for i, p := range paths {
		pkg, err := xpdl.Load(p, e.readOpts(""))
		if err != nil {
			return nil, err
		}
		if named[i], err = add(pkg, p); err != nil {
			return nil, err
		}
		externals = append(externals, referenced(pkg)...)
	}
	for _, ext := range externals {
		if _, err := add(ext, ext.Source); err != nil {
			return nil, err
		}
	}
	ds, err := e.deployTogether(ctx, ms, nil)
	if err != nil {
		return nil, err
	}
	out := make([]Deployment, 0, len(ds))
	isNamed := map[int]bool{}
	for _, k := range named {
		out = append(out, ds[k])
		isNamed[k] = true
	}
	for k, d := range ds {
		if !isNamed[k] {
			out = append(out, d)
		}
	}
	return out, nil
}

// referenced lists the packages pkg references as ExternalPackages that
// Load loaded, recursively, each once, pkg excluded.
func referenced(pkg *xpdl.Package) []*xpdl.Package {
	seen := map[*xpdl.Package]bool{pkg: true}
	var out []*xpdl.Package
	var walk func(p *xpdl.Package)
	walk = func(p *xpdl.Package) {
		for _, ep := range p.ExternalPackages {
			if ep.Package != nil && !seen[ep.Package] {
				seen[ep.Package] = true
				out = append(out, ep.Package)
				walk(ep.Package)
			}
		}
	}
	walk(pkg)
	return out
}

// deployTogether validates, rewrites and checks the packages, then stores
// them in one transaction, the first as the group of the others; a (nil
// when the deployment is not audited) writes its entry there.
func (e *Engine) deployTogether(ctx context.Context, ms []member, a *auditing) ([]Deployment, error) {
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: deploy: no packages", xpdl.ErrInvalid)
	}
	pkgs := make([]*xpdl.Package, len(ms))
	for i, m := range ms {
		if m.pkg == nil {
			return nil, errors.New("deploy: nil package")
		}
		pkgs[i] = m.pkg
	}
	// The limits first, every package's, before any costs more.
	for _, m := range ms {
		if int64(len(m.src)) > e.cfg.MaxDefinitionBytes {
			return nil, &xpdl.SyntaxError{File: m.pkg.Source, Pos: xpdl.Pos{Line: 1, Col: 1}, Err: xpdl.ErrTooLarge,
				Msg: fmt.Sprintf("input is larger than the limit of %d bytes", e.cfg.MaxDefinitionBytes)}
		}
		if err := xpdl.CheckLimits(m.pkg, &e.cfg.DefinitionLimits); err != nil {
			return nil, err
		}
	}
	for i, m := range ms {
		others := make([]*xpdl.Package, 0, len(ms)-1)
		for j, p := range pkgs {
			if j != i {
				others = append(others, p)
			}
		}
		for _, id := range referencedPackages(m.pkg) {
			if d, err := e.latest(ctx, e.store, id); err == nil {
				others = append(others, d.pkg)
			}
		}
		if err := xpdl.Validate(m.pkg, &xpdl.ValidateOpts{Deployed: others, Limits: &e.cfg.DefinitionLimits}).Err(); err != nil {
			return nil, err
		}
	}
	// The packages as the engine runs them, each in a deployment that has
	// no id yet: the SubFlows are resolved and the start times worked out
	// on them before the transaction, so that a bad one refuses all early.
	deps := make([]*deployment, len(ms))
	for i, m := range ms {
		if v, ok := m.pkg.ExtendedAttributes.Get(AttrDeadBranch); ok && !DeadBranchMode(strings.ToLower(strings.TrimSpace(v))).valid() {
			return nil, fmt.Errorf("%w: package %s: extended attribute %s=%q: want %q or %q",
				xpdl.ErrInvalid, m.pkg.ID, AttrDeadBranch, v, DeadBranchLock, DeadBranchEnd)
		}
		pkg, err := rewrite(m.pkg)
		if err != nil {
			return nil, err
		}
		deps[i] = newDeployment(store.Definition{PackageID: pkg.ID, File: m.file}, pkg)
	}
	for _, d := range deps {
		if err := e.checkSubflows(ctx, d, deps); err != nil {
			return nil, err
		}
		if err := e.checkTimerRates(d); err != nil {
			return nil, fmt.Errorf("deploy %s: %w", d.pkg.ID, err)
		}
		if err := checkCountersigns(d); err != nil {
			return nil, fmt.Errorf("deploy %s: %w", d.pkg.ID, err)
		}
	}
	now := e.now()
	armed := make([][]store.Timer, len(deps))
	for i, d := range deps {
		var err error
		if armed[i], err = e.planStartTimers(ctx, d, now); err != nil {
			return nil, fmt.Errorf("deploy %s: %w", d.pkg.ID, err)
		}
	}
	stored := make([]*deployment, len(deps))
	err := e.deployTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var group int64
		for i, d := range deps {
			id, err := e.ids.Next(ctx)
			if err != nil {
				return fmt.Errorf("deploy %s: %w", d.pkg.ID, err)
			}
			def, err := tx.InsertDefinition(ctx, store.InsertDefinitionParams{
				ID: id, PackageID: d.pkg.ID, Name: d.pkg.Name, Source: ms[i].src, CreatedAt: now,
				GroupID: group, File: ms[i].file,
			})
			if err != nil {
				return fmt.Errorf("deploy %s: %w", d.pkg.ID, err)
			}
			group = def.GroupID
			stored[i] = newDeployment(def, d.pkg)
			if err := e.replaceStartTimers(ctx, tx, stored[i], armed[i]); err != nil {
				return fmt.Errorf("deploy %s: %w", d.pkg.ID, err)
			}
		}
		if a == nil {
			return nil
		}
		versions := make([]string, len(stored))
		for i, d := range stored {
			versions[i] = fmt.Sprintf("%s version %d (deployment %d)", d.def.PackageID, d.def.Version, d.def.ID)
		}
		made := *a // the versions this attempt made, not a later refusal's
		made.detail("%s", strings.Join(versions, ", "))
		return made.ok(ctx, tx)
	})
	if err != nil {
		return nil, err
	}
	out := make([]Deployment, len(stored))
	for i, d := range stored {
		d.setTogether(stored)
		e.defs.Add(d.def.ID, d)
		for _, t := range armed[i] {
			e.timers.Armed(t.DueAt)
		}
		out[i] = d.public()
	}
	return out, nil
}

// deployTries bounds the attempts of a deployment whose version another
// deployment of the same package took first. Each round has a winner, so
// n concurrent deployers need at most n rounds.
const deployTries = 16

// deployTx runs the transaction of a deployment, again when a concurrent
// deployment of one of its packages committed the version it chose (the
// unique index on package and version refuses the later one: store.
// ErrDuplicate, or ErrConflict where the database reports a deadlock):
// concurrent deployments of a package get distinct, gapless versions.
// When the attempts run out the error matches ErrConflict, and the
// deployment may be given again.
func (e *Engine) deployTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	var err error
	for range deployTries {
		err = e.store.InTx(ctx, fn)
		if !errors.Is(err, store.ErrDuplicate) && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	if errors.Is(err, store.ErrDuplicate) {
		err = fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// checkSubflows refuses a package with a SubFlow whose process is neither
// among the packages deployed with it nor in the latest deployed version
// of a package it references.
func (e *Engine) checkSubflows(ctx context.Context, d *deployment, together []*deployment) error {
	for _, p := range d.pkg.Processes {
		for _, f := range p.Flows() {
			for _, a := range f.Activities {
				if a.SubFlow == nil {
					continue
				}
				if _, _, err := e.resolveSubflow(ctx, e.store, d, together, p, a); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// resolveSubflow finds the process the SubFlow of activity a (of process
// p of package d) calls, in this order:
//
//  1. d itself, unless the SubFlow's PackageRef names another package;
//  2. the packages deployed with d that d's ExternalPackages name, by Id
//     or by href (the file name of the package), in the order d lists
//     them;
//  3. the other packages deployed with d, in deployment order;
//  4. the latest deployed version of the package the PackageRef names,
//     or else of each package d references (ExternalPackage Ids and
//     PackageRefs), as before packages could be deployed together.
//
// In 2 and 3 a PackageRef admits only the packages with that id, or the
// one an ExternalPackage with that Id names. The first package that
// defines the process wins.
func (e *Engine) resolveSubflow(ctx context.Context, tx store.Tx, d *deployment, together []*deployment, p *xpdl.Process, a *xpdl.Activity) (*deployment, *xpdl.Process, error) {
	sf := a.SubFlow
	ref := sf.PackageRef
	if ref == "" || ref == d.pkg.ID {
		if proc := d.pkg.Process(sf.Process); proc != nil {
			return d, proc, nil
		}
	}
	named := map[*deployment]string{} // member -> the Id of the ExternalPackage naming it
	var order []*deployment
	for _, ext := range d.pkg.ExternalPackages {
		for _, m := range together {
			if m == d || !m.namedBy(ext) {
				continue
			}
			if _, dup := named[m]; !dup {
				named[m] = ext.ID
				order = append(order, m)
			}
		}
	}
	for _, m := range together {
		if _, dup := named[m]; !dup && m != d {
			order = append(order, m)
		}
	}
	for _, m := range order {
		if ref != "" && m.pkg.ID != ref && named[m] != ref {
			continue
		}
		if proc := m.pkg.Process(sf.Process); proc != nil {
			return m, proc, nil
		}
	}
	ids := []string{ref}
	if ref == "" {
		ids = referencedPackages(d.pkg)
	}
	for _, id := range ids {
		dep, err := e.latest(ctx, tx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if proc := dep.pkg.Process(sf.Process); proc != nil {
			return dep, proc, nil
		}
	}
	return nil, nil, &UnknownSubflowError{Package: d.pkg.ID, Process: p.ID, Activity: a.ID, Target: sf.Process, PackageRef: ref}
}

// namedBy reports whether an ExternalPackage reference names the package
// of d: by its Id, or by an href whose file name is the one d was read
// from.
func (d *deployment) namedBy(ext *xpdl.ExternalPackage) bool {
	if ext.ID != "" && ext.ID == d.pkg.ID {
		return true
	}
	return d.def.File != "" && baseName(ext.Href) == d.def.File
}

// baseName is the file name an href or a path ends in, whichever
// separator it uses; "" for none.
func baseName(ref string) string {
	ref = strings.TrimPrefix(strings.TrimSpace(ref), "file:")
	ref = strings.ReplaceAll(ref, "\\", "/")
	if ref == "" {
		return ""
	}
	return path.Base(ref)
}

// setTogether records the packages deployed with d (d among them).
func (d *deployment) setTogether(ds []*deployment) {
	cp := append([]*deployment(nil), ds...)
	d.together.Store(&cp)
}

// togetherWith returns the packages deployed together with d, d among
// them, in deployment order. They never change once stored, so the first
// read is kept.
func (e *Engine) togetherWith(ctx context.Context, tx store.Tx, d *deployment) ([]*deployment, error) {
	if ds := d.together.Load(); ds != nil {
		return *ds, nil
	}
	defs, err := tx.ListDefinitions(ctx, store.ListDefinitionsParams{GroupID: d.def.GroupID})
	if err != nil {
		return nil, err
	}
	ds := make([]*deployment, 0, len(defs))
	for _, def := range defs {
		if def.ID == d.def.ID {
			ds = append(ds, d)
			continue
		}
		m, err := e.parsed(def)
		if err != nil {
			return nil, err
		}
		ds = append(ds, m)
	}
	d.setTogether(ds)
	return ds, nil
}

// samePackageTogether finds process among the packages deployed with d
// that share d's package id (several files of one package, deployed as
// one), the latest first. It returns d and a nil process when none has it.
func (e *Engine) samePackageTogether(ctx context.Context, tx store.Tx, d *deployment, process string) (*deployment, *xpdl.Process, error) {
	together, err := e.togetherWith(ctx, tx, d)
	if err != nil {
		return nil, nil, err
	}
	for i := len(together) - 1; i >= 0; i-- {
		m := together[i]
		if m.pkg.ID != d.pkg.ID {
			continue
		}
		if proc := m.pkg.Process(process); proc != nil {
			return m, proc, nil
		}
	}
	return d, nil, nil
}
