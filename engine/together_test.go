package engine_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// togetherPackage is an XPDL 1.0 package with the given id, extra
// package-level XML (ExternalPackages) and processes.
func togetherPackage(id, extra, processes string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="` + id + `">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl tests</Vendor><Created>2026-11-26</Created></PackageHeader>
  ` + extra + `
  <WorkflowProcesses>` + processes + `</WorkflowProcesses>
</Package>`
}

// caller is a process that calls process target as a SYNCHR subflow.
func caller(id, target string) string {
	return xpdltest.Process(id, "", xpdltest.Activity("call",
		`<Implementation><SubFlow Id="`+target+`" Execution="SYNCHR"/></Implementation>`, "", ""), "")
}

// leaf is a process of one route activity.
func leaf(id string) string {
	return xpdltest.Process(id, "", xpdltest.Activity("work", "<Route/>", "", ""), "")
}

// Two files that share a package id (Bonita's subflow tests do), each
// calling a process of the other: deployed together, they are two
// packages of one deployment, and each one's subflow finds its process in
// the other. On the engine that looked subflows up by package id and
// latest version, the first was refused (its subflow's process is in a
// package not yet deployed), and once both were deployed one at a time
// the first's subflow looked in the latest version, the second file.
func TestDeployTogetherSharedPackageID(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		parent := togetherPackage("shared", "", caller("main", "sub")+leaf("back"))
		child := togetherPackage("shared", "", leaf("sub")+caller("other", "back"))

		_, err := h.e.Deploy(h.ctx, []byte(parent))
		require.ErrorIs(t, err, xpdl.ErrInvalid, "alone, the parent's subflow names a process that is nowhere")

		ds, err := h.e.DeployTogether(h.ctx, engine.Source{File: "parent.xpdl", XPDL: []byte(parent)}, engine.Source{File: "child.xpdl", XPDL: []byte(child)})
		require.NoError(t, err)
		require.Len(t, ds, 2)
		require.Equal(t, []string{"shared", "shared"}, []string{ds[0].PackageID, ds[1].PackageID})
		require.Equal(t, ds[0].ID, ds[0].Group)
		require.Equal(t, ds[0].ID, ds[1].Group)
		require.Equal(t, "child.xpdl", ds[1].File)

		// A later version of the package, deployed alone, with a process
		// "sub" of its own, does not change what the deployment calls.
		h.deploy(togetherPackage("shared", "", leaf("sub")))

		id, err := h.e.StartProcess(h.ctx, engine.StartOptions{DefinitionID: ds[0].ID, Process: "main"})
		require.NoError(t, err)
		h.requireState(id, wftype.ProcessCompleted)
		kids := children(h, id)
		require.Len(t, kids, 1)
		require.Equal(t, ds[1].ID, kids[0].DefinitionID, "the parent's subflow runs the child file deployed with it")
		require.Equal(t, "sub", kids[0].Process)

		id, err = h.e.StartProcess(h.ctx, engine.StartOptions{DefinitionID: ds[1].ID, Process: "other"})
		require.NoError(t, err)
		h.requireState(id, wftype.ProcessCompleted)
		kids = children(h, id)
		require.Len(t, kids, 1)
		require.Equal(t, ds[0].ID, kids[0].DefinitionID, "the child's subflow finds its process in the parent file")
		require.Equal(t, "back", kids[0].Process)

		// A restarted engine reads the deployment back from the store
		// and resolves the same way.
		h2 := newHarness(t, db).start()
		id, err = h2.e.StartProcess(h2.ctx, engine.StartOptions{DefinitionID: ds[0].ID, Process: "main"})
		require.NoError(t, err)
		h2.requireState(id, wftype.ProcessCompleted)
		kids = children(h2, id)
		require.Len(t, kids, 1)
		require.Equal(t, ds[1].ID, kids[0].DefinitionID)
	})
}

// An ExternalPackage reference with an href and no Id: DeployFiles
// deploys the referenced file with the one naming it, and the subflow
// runs the process of that file. Before, the reference was validated
// (Load follows hrefs) but the subflow looked only in packages named by
// Id, and the activity ended Abnormal.
func TestDeployFilesHrefOnlyExternalPackage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(src), 0o600))
		return p
	}
	main := write("main.xpdl", togetherPackage("orders", `<ExternalPackages><ExternalPackage href="lib/approvals.xpdl"/></ExternalPackages>`, caller("order", "approve")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "lib"), 0o700))
	write("lib/approvals.xpdl", togetherPackage("approvals", "", leaf("approve")))

	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		d, err := h.e.DeployFile(h.ctx, main)
		require.NoError(t, err)
		require.Equal(t, "main.xpdl", d.File)
		id, err := h.e.StartProcess(h.ctx, engine.StartOptions{DefinitionID: d.ID, Process: "order"})
		require.NoError(t, err)
		h.requireState(id, wftype.ProcessCompleted)
		kids := children(h, id)
		require.Len(t, kids, 1)
		deps, err := h.e.Deployments(h.ctx)
		require.NoError(t, err)
		require.Len(t, deps, 2)
		require.Equal(t, engine.Deployment{ID: kids[0].DefinitionID, PackageID: "approvals", Version: 1, Processes: []string{"approve"}, Group: d.ID, File: "approvals.xpdl"}, deps[1])
	})
}

// The same href-only reference with the packages given as bytes: the
// href matches the file name a Source gives.
func TestDeployTogetherMatchesHrefByFileName(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		// Two packages define "approve"; the one the ExternalPackage
		// names wins over the one deployed before it.
		decoy := togetherPackage("decoy", "", leaf("approve"))
		main := togetherPackage("orders", `<ExternalPackages><ExternalPackage href="file:approvals.xpdl"/></ExternalPackages>`, caller("order", "approve"))
		lib := togetherPackage("approvals", "", leaf("approve"))
		ds, err := h.e.DeployTogether(h.ctx,
			engine.Source{File: "dir/main.xpdl", XPDL: []byte(main)},
			engine.Source{File: "decoy.xpdl", XPDL: []byte(decoy)},
			engine.Source{File: "approvals.xpdl", XPDL: []byte(lib)})
		require.NoError(t, err)
		id, err := h.e.StartProcess(h.ctx, engine.StartOptions{DefinitionID: ds[0].ID, Process: "order"})
		require.NoError(t, err)
		h.requireState(id, wftype.ProcessCompleted)
		kids := children(h, id)
		require.Len(t, kids, 1)
		require.Equal(t, ds[2].ID, kids[0].DefinitionID)
	})
}

// A StartOptions naming a package and a process starts the process in the
// latest deployment of the package even when another file of that
// package, deployed with it, is the latest version.
func TestStartByPackageFindsTheFileDeployedTogether(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		_, err := h.e.DeployTogether(h.ctx,
			engine.Source{XPDL: []byte(togetherPackage("shared", "", caller("main", "sub")))},
			engine.Source{XPDL: []byte(togetherPackage("shared", "", leaf("sub")))})
		require.NoError(t, err)
		id := h.startProcess("shared", "main", nil)
		h.requireState(id, wftype.ProcessCompleted)
		_, err = h.e.StartProcess(h.ctx, engine.StartOptions{Package: "shared", Process: "nope"})
		require.ErrorIs(t, err, engine.ErrNotFound)
	})
}

// A deployment is all or nothing: a SubFlow whose process none of its
// packages (nor any deployed one) defines refuses every package of it,
// with a problem naming the activity and the missing process.
func TestDeployTogetherRefusesAnUnknownSubflow(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		_, err := h.e.DeployTogether(h.ctx,
			engine.Source{File: "a.xpdl", XPDL: []byte(togetherPackage("a", "", leaf("fine")))},
			engine.Source{File: "b.xpdl", XPDL: []byte(togetherPackage("b", "", caller("main", "missing")))})
		require.ErrorIs(t, err, xpdl.ErrInvalid)
		require.ErrorContains(t, err, `"missing"`)
		deps, err := h.e.Deployments(h.ctx)
		require.NoError(t, err)
		require.Empty(t, deps)

		_, err = h.e.DeployTogether(h.ctx)
		require.ErrorIs(t, err, xpdl.ErrInvalid, "nothing to deploy")
	})
}

// A PackageRef naming an id that two files of the deployment share finds
// the process in whichever of them has it (the validator agrees).
func TestDeployTogetherPackageRefAcrossFilesSharingAnID(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		parent := togetherPackage("orders", "", xpdltest.Process("order", "", xpdltest.Activity("call",
			`<Implementation><SubFlow Id="sub" PackageRef="shared" Execution="SYNCHR"/></Implementation>`, "", ""), ""))
		ds, err := h.e.DeployTogether(h.ctx,
			engine.Source{XPDL: []byte(parent)},
			engine.Source{XPDL: []byte(togetherPackage("shared", "", leaf("other")))},
			engine.Source{XPDL: []byte(togetherPackage("shared", "", leaf("sub")))})
		require.NoError(t, err)
		id, err := h.e.StartProcess(h.ctx, engine.StartOptions{DefinitionID: ds[0].ID})
		require.NoError(t, err)
		h.requireState(id, wftype.ProcessCompleted)
		kids := children(h, id)
		require.Len(t, kids, 1)
		require.Equal(t, ds[2].ID, kids[0].DefinitionID)
	})
}
