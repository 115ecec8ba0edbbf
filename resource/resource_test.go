package resource_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/resource"
)

func TestAnyoneIsPermissive(t *testing.T) {
	t.Parallel()
	var d resource.Directory = resource.Anyone{}
	ctx := context.Background()
	for _, kind := range append(resource.ParticipantKinds, "ROBOT") {
		got, err := d.Resolve(ctx, p(kind, "whoever"))
		require.NoError(t, err, kind)
		require.Nil(t, got, kind)

		ok, err := d.IsMember(ctx, "anybody", p(kind, "whoever"))
		require.NoError(t, err, kind)
		require.True(t, ok, kind)
	}
	m, err := d.Memberships(ctx, "anybody")
	require.NoError(t, err)
	require.Equal(t, resource.Memberships{}, m)
}

func TestParticipantKindValid(t *testing.T) {
	t.Parallel()
	for _, kind := range resource.ParticipantKinds {
		require.True(t, kind.Valid(), kind)
	}
	for _, kind := range []resource.ParticipantKind{"", "human", "ROBOT"} {
		require.False(t, kind.Valid(), kind)
	}
	require.Len(t, resource.ParticipantKinds, 6)
}
