package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/xpdl"
)

// Deployment is one deployed version of an XPDL package.
type Deployment struct {
	// ID identifies this version; StartOptions.DefinitionID takes it.
	ID int64
	// PackageID is the XPDL package id.
	PackageID string
	// Version counts the deployments of PackageID, from 1.
	Version int
	// Processes lists the package's WorkflowProcess ids.
	Processes []string
	// Group is the ID of the first package of the deployment this one was
	// stored with (DeployTogether, DeployFiles); ID itself for the first,
	// and for a package deployed alone.
	Group int64
	// File is the base name of the file the package was read from; empty
	// when it was deployed from bytes.
	File string
}

// deployment is a parsed definition, shared by all instances of its
// processes.
type deployment struct {
	def store.Definition
	pkg *xpdl.Package
	// timed says, by process id, whether a process arms timers.
	timed map[string]bool
	// signalled says, by process id, whether a process has events that
	// wait for signals.
	signalled map[string]bool
	// addressable says, by process id, whether a process has activities
	// that people or messages finish (manual activities, receive tasks,
	// message catch events): only its instances can have work items or
	// messages waiting in the inbox when they end.
	addressable map[string]bool
	// deadBranch is the package's DeadBranch extended attribute ("" when
	// it has none; Config.DeadBranch applies then).
	deadBranch DeadBranchMode
	// together are the packages deployed with this one, itself among
	// them, in deployment order (togetherWith); nil until known.
	together atomic.Pointer[[]*deployment]
}

func newDeployment(def store.Definition, pkg *xpdl.Package) *deployment {
	d := &deployment{
		def: def, pkg: pkg,
		timed: make(map[string]bool, len(pkg.Processes)), signalled: make(map[string]bool, len(pkg.Processes)),
		addressable: make(map[string]bool, len(pkg.Processes)),
	}
	if v, ok := pkg.ExtendedAttributes.Get(AttrDeadBranch); ok {
		d.deadBranch = DeadBranchMode(strings.ToLower(strings.TrimSpace(v)))
	}
	for _, p := range pkg.Processes {
		d.timed[p.ID] = timedProcess(p)
		d.signalled[p.ID] = catchesSignals(p)
		d.addressable[p.ID] = addressable(p)
	}
	return d
}

func (d *deployment) public() Deployment {
	out := Deployment{ID: d.def.ID, PackageID: d.def.PackageID, Version: d.def.Version, Group: d.def.GroupID, File: d.def.File}
	for _, p := range d.pkg.Processes {
		if !p.IsGenerated() { // the rewrite's subprocesses are the engine's business
			out.Processes = append(out.Processes, p.ID)
		}
	}
	return out
}

// Deploy reads, validates and stores an XPDL package. A package larger
// than Config.MaxDefinitionBytes is refused with an *xpdl.SyntaxError
// (xpdl.ErrTooLarge), one over a Config.DefinitionLimits with an
// *xpdl.LimitError (xpdl.ErrLimit); both match xpdl.ErrInvalid. A
// package that does not validate is refused with the validator's problems (an
// *xpdl.ValidationError matching xpdl.ErrInvalid) and nothing is stored;
// so is one with a SubFlow whose process cannot be found
// (*UnknownSubflowError). Deploying a package id again makes a new
// version; instances already running keep the version they started with.
// References to processes of other packages (ExternalPackages, SubFlow
// PackageRef) resolve against the latest deployed version of those
// packages; to deploy packages that call each other as one, use
// DeployTogether or DeployFiles.
func (e *Engine) Deploy(ctx context.Context, src []byte) (Deployment, error) {
	pkg, err := xpdl.Read(bytes.NewBuffer(src), e.readOpts("deployment"))
	if err != nil {
		return Deployment{}, err
	}
	return e.deployOne(ctx, member{pkg: pkg, src: src})
}

// readOpts are the reader's options for a definition being deployed.
func (e *Engine) readOpts(name string) *xpdl.ReadOpts {
	return &xpdl.ReadOpts{Name: name, MaxBytes: e.cfg.MaxDefinitionBytes}
}

// DeployFile deploys the XPDL file at path together with the packages it
// references as ExternalPackages, as one deployment (DeployFiles), so
// that subflows across them run. It returns the file's own Deployment.
func (e *Engine) DeployFile(ctx context.Context, path string) (Deployment, error) {
	ds, err := e.DeployFiles(ctx, path)
	if err != nil {
		return Deployment{}, err
	}
	return ds[0], nil
}

// DeployPackage deploys a package the caller has read (and possibly
// built or transformed); src is its XPDL text, which is what is stored
// and parsed again after a restart.
func (e *Engine) DeployPackage(ctx context.Context, pkg *xpdl.Package, src []byte) (Deployment, error) {
	return e.deployOne(ctx, member{pkg: pkg, src: src})
}

// deployOne deploys a package alone.
func (e *Engine) deployOne(ctx context.Context, m member) (Deployment, error) {
	ds, err := e.deployTogether(ctx, []member{m}, nil)
	if err != nil {
		return Deployment{}, err
	}
	return ds[0], nil
}

// rewrite applies the deploy-time rewrite of loop entries and races in
// loops (docs/reentrancy.md); the engine runs the package it returns.
// The stored source stays as written, and is rewritten again, the same
// way, whenever it is parsed.
func rewrite(pkg *xpdl.Package) (*xpdl.Package, error) {
	out, _, err := xpdl.Rewrite(pkg)
	if err != nil {
		return nil, fmt.Errorf("deploy %s: %w", pkg.ID, err)
	}
	return out, nil
}

// referencedPackages lists the ids of packages pkg may call subflows in.
func referencedPackages(pkg *xpdl.Package) []string {
	var ids []string
	for _, ep := range pkg.ExternalPackages {
		if ep.ID != "" {
			ids = append(ids, ep.ID)
		}
	}
	for _, p := range pkg.Processes {
		for _, f := range p.Flows() {
			for _, a := range f.Activities {
				if a.SubFlow != nil && a.SubFlow.PackageRef != "" {
					ids = append(ids, a.SubFlow.PackageRef)
				}
			}
		}
	}
	return ids
}

// definition returns the parsed definition with the given id.
func (e *Engine) definition(ctx context.Context, tx store.Tx, id int64) (*deployment, error) {
	if d, ok := e.defs.Get(id); ok {
		return d, nil
	}
	def, err := tx.GetDefinition(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFound("definition", id)
		}
		return nil, err
	}
	return e.parsed(def)
}

func (e *Engine) parsed(def store.Definition) (*deployment, error) {
	if d, ok := e.defs.Get(def.ID); ok {
		return d, nil
	}
	// What was stored was accepted when it was deployed, under the
	// limits of then: it is read whatever its size, so that a lower
	// MaxDefinitionBytes does not lose the versions already deployed.
	pkg, err := xpdl.Read(bytes.NewBuffer(def.Source), &xpdl.ReadOpts{Name: def.PackageID, MaxBytes: int64(len(def.Source))})
	if err == nil {
		pkg, err = rewrite(pkg)
	}
	if err != nil {
		return nil, fmt.Errorf("definition %d (%s): %w", def.ID, def.PackageID, err)
	}
	d := newDeployment(def, pkg)
	e.defs.Add(def.ID, d)
	return d, nil
}

// latest returns the latest deployed version of a package. It reads
// the version's ID, and its source only when this engine has not parsed
// it yet: a definition's ID names one source for good.
func (e *Engine) latest(ctx context.Context, tx store.Tx, packageID string) (*deployment, error) {
	id, err := tx.LatestDefinitionID(ctx, packageID)
	if err == nil {
		if d, ok := e.defs.Get(id); ok {
			return d, nil
		}
		var def store.Definition
		if def, err = tx.GetDefinition(ctx, id); err == nil {
			return e.parsed(def)
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFound("package", packageID)
	}
	return nil, err
}

// Deployments lists every deployed version, oldest first.
func (e *Engine) Deployments(ctx context.Context) ([]Deployment, error) {
	defs, err := e.store.ListDefinitions(ctx, store.ListDefinitionsParams{})
	if err != nil {
		return nil, err
	}
	out := make([]Deployment, 0, len(defs))
	for _, def := range defs {
		d, err := e.parsed(def)
		if err != nil {
			return nil, err
		}
		out = append(out, d.public())
	}
	return out, nil
}

// DefinitionSource returns one deployed version and the XPDL it was
// deployed from, as written (before the engine's rewrite): what a console
// shows and draws. An unknown id is a *NotFoundError (ErrNotFound).
func (e *Engine) DefinitionSource(ctx context.Context, id int64) (Deployment, []byte, error) {
	def, err := e.store.GetDefinition(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Deployment{}, nil, notFound("definition", id)
		}
		return Deployment{}, nil, err
	}
	d, err := e.parsed(def)
	if err != nil {
		return Deployment{}, nil, err
	}
	return d.public(), def.Source, nil
}

// MainProcess returns the process of pkg that starts by default: the only
// process, or the only one that no other process of the package uses as a
// subflow. With several candidates it returns an error naming them.
func MainProcess(pkg *xpdl.Package) (*xpdl.Process, error) {
	if len(pkg.Processes) == 0 {
		return nil, notFound("process in package", pkg.ID)
	}
	if len(pkg.Processes) == 1 {
		return pkg.Processes[0], nil
	}
	called := map[string]bool{}
	for _, p := range pkg.Processes {
		for _, f := range p.Flows() {
			for _, a := range f.Activities {
				if a.SubFlow != nil {
					called[a.SubFlow.Process] = true
				}
			}
		}
	}
	var candidates []*xpdl.Process
	var ids []string
	for _, p := range pkg.Processes {
		if !called[p.ID] {
			candidates = append(candidates, p)
			ids = append(ids, p.Label())
		}
	}
	if len(candidates) == 1 {
		return candidates[0], nil
	}
	return nil, fmt.Errorf("%w: package %s has %d top-level processes (%s); name one", ErrAmbiguousProcess, pkg.ID, len(ids), strings.Join(ids, ", "))
}

// ErrAmbiguousProcess: no process was named and the package has several
// that could start.
var ErrAmbiguousProcess = errors.New("which process to start is ambiguous")
