package storetest

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

func (h *harness) testDefinitions(t *testing.T) {
	t.Run("RoundTrip", func(t *testing.T) {
		b := h.setup(t)
		source := []byte("<Package Id=\"p\">\x00binary\xff</Package>")
		d, err := b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{
			ID:        nextID(),
			PackageID: "p", Name: "A package", Source: source, CreatedAt: t0,
		})
		require.NoError(t, err)
		require.NotZero(t, d.ID)
		want := store.Definition{ID: d.ID, PackageID: "p", Version: 1, Name: "A package", Source: source, CreatedAt: norm(t0), GroupID: d.ID}
		require.Equal(t, want, d)

		got, err := b.s.GetDefinition(b.ctx, d.ID)
		require.NoError(t, err)
		require.Equal(t, want, got)
	})

	t.Run("EmptySourceReadsNil", func(t *testing.T) {
		b := h.setup(t)
		d, err := b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: "p", Source: []byte{}, CreatedAt: t0})
		require.NoError(t, err)
		got, err := b.s.GetDefinition(b.ctx, d.ID)
		require.NoError(t, err)
		require.Nil(t, got.Source)
		require.Empty(t, got.Name)
	})

	t.Run("VersionPerPackage", func(t *testing.T) {
		b := h.setup(t)
		insert := func(pkg string) store.Definition {
			d, err := b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: pkg, Name: pkg, CreatedAt: t0})
			require.NoError(t, err)
			return d
		}
		a1, a2, b1, a3 := insert("a"), insert("a"), insert("b"), insert("a")
		require.Equal(t, []int{1, 2, 1, 3}, []int{a1.Version, a2.Version, b1.Version, a3.Version})

		latest, err := b.s.LatestDefinition(b.ctx, "a")
		require.NoError(t, err)
		require.Equal(t, a3, latest)
		latest, err = b.s.LatestDefinition(b.ctx, "b")
		require.NoError(t, err)
		require.Equal(t, b1, latest)
		id, err := b.s.LatestDefinitionID(b.ctx, "a")
		require.NoError(t, err)
		require.Equal(t, a3.ID, id)

		all, err := b.s.ListDefinitions(b.ctx, store.ListDefinitionsParams{})
		require.NoError(t, err)
		require.Equal(t, []store.Definition{a1, a2, b1, a3}, all)
		onlyA, err := b.s.ListDefinitions(b.ctx, store.ListDefinitionsParams{PackageID: "a"})
		require.NoError(t, err)
		require.Equal(t, []store.Definition{a1, a2, a3}, onlyA)
		none, err := b.s.ListDefinitions(b.ctx, store.ListDefinitionsParams{PackageID: "c"})
		require.NoError(t, err)
		require.Empty(t, none)
	})

	t.Run("VersionInsideTx", func(t *testing.T) {
		b := h.setup(t)
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			for want := 1; want <= 3; want++ {
				d, err := tx.InsertDefinition(ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: "p", CreatedAt: t0})
				require.NoError(t, err)
				require.Equal(t, want, d.Version)
			}
			return nil
		})
		require.NoError(t, err)
		latest, err := b.s.LatestDefinition(b.ctx, "p")
		require.NoError(t, err)
		require.Equal(t, 3, latest.Version)
	})

	t.Run("ConcurrentVersions", func(t *testing.T) {
		// Deployments of one package racing on a Store over a pool all
		// succeed, each with its own version.
		b := h.setup(t)
		const n = 4
		var wg sync.WaitGroup
		versions := make([]int, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				d, err := b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: "p", CreatedAt: t0})
				versions[i], errs[i] = d.Version, err
			})
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.ElementsMatch(t, []int{1, 2, 3, 4}, versions)
	})

	t.Run("DeployedTogether", func(t *testing.T) {
		// Packages deployed together name the first of them as their
		// group; one deployed alone is its own group. A file name is kept
		// as given, and none reads as "".
		b := h.setup(t)
		var first, second store.Definition
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			first, err = tx.InsertDefinition(ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: "p", File: "parent.xpdl", CreatedAt: t0})
			if err != nil {
				return err
			}
			second, err = tx.InsertDefinition(ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: "p", File: "child.xpdl", GroupID: first.ID, CreatedAt: t0})
			return err
		})
		require.NoError(t, err)
		alone, err := b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: "q", CreatedAt: t0})
		require.NoError(t, err)
		require.Equal(t, first.ID, first.GroupID)
		require.Equal(t, first.ID, second.GroupID)
		require.Equal(t, []int{1, 2}, []int{first.Version, second.Version}, "two files sharing a package id are two versions")
		require.Equal(t, alone.ID, alone.GroupID)
		require.Equal(t, "child.xpdl", second.File)
		require.Empty(t, alone.File)

		got, err := b.s.GetDefinition(b.ctx, second.ID)
		require.NoError(t, err)
		require.Equal(t, second, got)
		group, err := b.s.ListDefinitions(b.ctx, store.ListDefinitionsParams{GroupID: first.ID})
		require.NoError(t, err)
		require.Equal(t, []store.Definition{first, second}, group)
		group, err = b.s.ListDefinitions(b.ctx, store.ListDefinitionsParams{GroupID: alone.ID})
		require.NoError(t, err)
		require.Equal(t, []store.Definition{alone}, group)

		// A group must be the first definition of a deployment.
		_, err = b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: "r", GroupID: second.ID, CreatedAt: t0})
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: "r", GroupID: 12345, CreatedAt: t0})
		require.ErrorIs(t, err, store.ErrNotFound)
		none, err := b.s.ListDefinitions(b.ctx, store.ListDefinitionsParams{PackageID: "r"})
		require.NoError(t, err)
		require.Empty(t, none)
	})

	t.Run("NotFound", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.GetDefinition(b.ctx, 12345)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.LatestDefinition(b.ctx, "missing")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.LatestDefinitionID(b.ctx, "missing")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("InvalidParams", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{ID: nextID(), CreatedAt: t0})
		require.Error(t, err, "empty package id")
		_, err = b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: "p"})
		require.Error(t, err, "zero CreatedAt")
		all, err := b.s.ListDefinitions(b.ctx, store.ListDefinitionsParams{})
		require.NoError(t, err)
		require.Empty(t, all)
	})
}
