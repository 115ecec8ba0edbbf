package engine_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/xpdl"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// smallLimit is the value each definition limit is set to in
// TestDeployLimits: small enough for the packages to be quick to build.
const smallLimit = 20

// TestDeployLimits deploys, for every definition limit set low in
// Config.DefinitionLimits, a package just over it, by every way in
// (Deploy, DeployTogether, DeployAs, DeployFiles, DeployPackage): each is
// refused with an *xpdl.LimitError naming the limit, its value and the
// count, nothing is stored, and the refused DeployAs is audited. A
// package at the limit deploys.
func TestDeployLimits(t *testing.T) {
	t.Parallel()
	names := limitFields(t)
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		// An engine per limit, with that one limit small and the others
		// at their defaults, on one database.
		engines := map[string]*harness{}
		for _, name := range names {
			var limits xpdl.Limits
			reflect.ValueOf(&limits).Elem().FieldByName(name).SetInt(smallLimit)
			engines[name] = newHarness(t, db, func(c *engine.Config) { c.DefinitionLimits = limits })
			require.Equal(t, limits.WithDefaults(), engines[name].e.Settings().DefinitionLimits)
		}
		dir := t.TempDir()
		for _, name := range names {
			h := engines[name]
			over := []byte(xpdltest.Sized(name, smallLimit+1))
			file := filepath.Join(dir, name+".xpdl")
			require.NoError(t, os.WriteFile(file, over, 0o600))
			pkg, err := xpdl.Read(strings.NewReader(string(over)), &xpdl.ReadOpts{Name: "host"})
			require.NoError(t, err)
			for _, way := range []struct {
				name   string
				deploy func() error
			}{
				{"Deploy", func() error { _, err := h.e.Deploy(h.ctx, over); return err }},
				{"DeployTogether", func() error {
					_, err := h.e.DeployTogether(h.ctx, engine.Source{File: "ok.xpdl", XPDL: []byte(xpdltest.Sized(name, smallLimit))},
						engine.Source{File: "over.xpdl", XPDL: over})
					return err
				}},
				{"DeployAs", func() error {
					_, err := h.e.DeployAs(h.ctx, engine.Op{Actor: "ops", Reason: "limits"}, engine.Source{File: "over.xpdl", XPDL: over})
					return err
				}},
				{"DeployFiles", func() error { _, err := h.e.DeployFiles(h.ctx, file); return err }},
				{"DeployPackage", func() error { _, err := h.e.DeployPackage(h.ctx, pkg, over); return err }},
			} {
				err := way.deploy()
				require.ErrorIs(t, err, xpdl.ErrLimit, "%s by %s", name, way.name)
				require.ErrorIs(t, err, xpdl.ErrInvalid)
				var le *xpdl.LimitError
				require.ErrorAs(t, err, &le)
				require.Equal(t, name, le.Limit)
				require.Equal(t, smallLimit, le.Max)
				require.Equal(t, smallLimit+1, le.Count)
				require.Contains(t, le.Error(), "(Limits."+name+")")
				deps, err := h.e.Deployments(h.ctx)
				require.NoError(t, err)
				require.Empty(t, deps, "%s by %s: nothing deployed", name, way.name)
			}
		}
		h := engines[names[0]]
		audit, err := h.e.Audit(h.ctx, engine.AuditFilter{Actions: []engine.AuditAction{engine.AuditDeploy}})
		require.NoError(t, err)
		require.Len(t, audit.Entries, len(names), "each refused DeployAs is audited")
		require.Equal(t, engine.AuditRefused, audit.Entries[0].Result)

		for _, name := range names {
			h := engines[name]
			_, err := h.e.Deploy(h.ctx, []byte(xpdltest.Sized(name, smallLimit)))
			require.NoError(t, err, "at the limit %s", name)
		}
	})
}

// limitFields lists the fields of xpdl.Limits.
func limitFields(t *testing.T) []string {
	t.Helper()
	typ := reflect.TypeFor[xpdl.Limits]()
	names := make([]string, typ.NumField())
	for i := range names {
		names[i] = typ.Field(i).Name
	}
	require.NotEmpty(t, names)
	return names
}

// TestDeployDefaultLimits: the zero Config applies xpdl's default limits
// (Settings shows them), and a package just over one is refused.
func TestDeployDefaultLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dbtest.OpenSQLite(t))
	s := h.e.Settings()
	require.Equal(t, xpdl.DefaultLimits(), s.DefinitionLimits)
	require.Equal(t, int64(xpdl.DefaultMaxBytes), s.MaxDefinitionBytes)
	_, err := h.e.Deploy(h.ctx, []byte(xpdltest.Sized("Nesting", xpdl.DefaultMaxNesting+1)))
	var le *xpdl.LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "Nesting", le.Limit)
	_, err = h.e.Deploy(h.ctx, []byte(xpdltest.Sized("Nesting", xpdl.DefaultMaxNesting)))
	require.NoError(t, err)
}

// TestMaxDefinitionBytes: a document larger than Config.MaxDefinitionBytes
// is refused (xpdl.ErrTooLarge) however it comes, and nothing is stored;
// one deployed under a higher limit is still read after a restart under
// a lower one.
func TestMaxDefinitionBytes(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		src := []byte(xpdltest.Sized("Activities", 50))
		limit := int64(len(src) - 1)
		h := newHarness(t, db, func(c *engine.Config) { c.MaxDefinitionBytes = limit })
		require.Equal(t, limit, h.e.Settings().MaxDefinitionBytes)
		file := filepath.Join(t.TempDir(), "big.xpdl")
		require.NoError(t, os.WriteFile(file, src, 0o600))
		pkg, err := xpdl.Read(strings.NewReader(string(src)), nil)
		require.NoError(t, err)
		for name, deploy := range map[string]func() error{
			"Deploy":         func() error { _, err := h.e.Deploy(h.ctx, src); return err },
			"DeployTogether": func() error { _, err := h.e.DeployTogether(h.ctx, engine.Source{XPDL: src}); return err },
			"DeployFiles":    func() error { _, err := h.e.DeployFiles(h.ctx, file); return err },
			"DeployPackage":  func() error { _, err := h.e.DeployPackage(h.ctx, pkg, src); return err },
		} {
			err := deploy()
			require.ErrorIs(t, err, xpdl.ErrTooLarge, name)
			require.ErrorIs(t, err, xpdl.ErrInvalid, name)
			deps, err := h.e.Deployments(h.ctx)
			require.NoError(t, err)
			require.Empty(t, deps, "%s: nothing deployed", name)
		}

		// Deployed under a limit it fits, it is read again under a lower
		// one: what is stored is not refused.
		roomy := newHarness(t, db)
		d, err := roomy.e.Deploy(roomy.ctx, src)
		require.NoError(t, err)
		deps, err := h.e.Deployments(h.ctx)
		require.NoError(t, err)
		require.Len(t, deps, 1)
		require.Equal(t, d.ID, deps[0].ID)
		_, stored, err := h.e.DefinitionSource(h.ctx, d.ID)
		require.NoError(t, err)
		require.Equal(t, src, stored)
	})
}
