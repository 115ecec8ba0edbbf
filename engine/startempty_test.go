package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// A process without activities deploys (the validator only warns: the
// package's other processes may run) but does not start: an instance
// could never do anything. The refusal is typed and leaves no instance.
func TestStartingAnEmptyProcessIsRefused(t *testing.T) {
	t.Parallel()
	route := xpdltest.Activity("A", "<Route/>", "", "")
	src := xpdltest.Package(xpdltest.Process("p", "", route, "") + xpdltest.Process("empty", "", "", ""))
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(src)
		_, err := h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Process: "empty"})
		require.ErrorIs(t, err, engine.ErrEmptyProcess)
		var empty *engine.EmptyProcessError
		require.ErrorAs(t, err, &empty)
		require.Equal(t, "empty", empty.Process)
		require.EqualError(t, err, `process "empty" has no activities and cannot run`)
		all, err := h.e.Instances(h.ctx, engine.InstanceFilter{})
		require.NoError(t, err)
		require.Empty(t, all.Instances)

		id := h.startProcess("pkg", "p", nil)
		h.awaitFinal(id)
	})
}
