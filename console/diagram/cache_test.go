package diagram_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console/diagram"
)

func TestCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pkg := readFile(t, "order-auto.xpdl")
	c, err := diagram.NewCache(2)
	require.NoError(t, err)

	first, err := c.Layout(ctx, "orders/1", pkg, "order", diagram.Options{})
	require.NoError(t, err)
	again, err := c.Layout(ctx, "orders/1", pkg, "order", diagram.Options{})
	require.NoError(t, err)
	require.Same(t, first, again, "a second call for the same version is served from the cache")

	set, err := c.Layout(ctx, "orders/1", pkg, "order", diagram.Options{ActivitySet: "bill"})
	require.NoError(t, err)
	require.NotSame(t, first, set, "the options are part of the key")
	other, err := c.Layout(ctx, "orders/2", pkg, "order", diagram.Options{})
	require.NoError(t, err)
	require.NotSame(t, first, other, "so is the version")

	_, err = c.Layout(ctx, "orders/1", pkg, "nope", diagram.Options{})
	require.ErrorIs(t, err, diagram.ErrNotFound)

	_, err = diagram.NewCache(0)
	require.Error(t, err)
}
