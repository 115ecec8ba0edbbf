package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// TestNilTxIsTheEnginesOwn: every …Tx method takes a nil tx as "run in
// the engine's own transaction", the plain method's behaviour.
func TestNilTxIsTheEnginesOwn(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(xpdltest.Package(xpdltest.Process("p", "",
			xpdltest.Activity("Approve", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""), "")))

		id, err := h.e.StartProcessTx(h.ctx, nil, engine.StartOptions{Package: "pkg"})
		require.NoError(t, err)
		h.requireState(id, wftype.ProcessRunning)
		require.NoError(t, h.e.SuspendTx(h.ctx, nil, id, engine.Op{Actor: "alice"}))
		h.requireState(id, wftype.ProcessSuspended)
		require.NoError(t, h.e.ResumeTx(h.ctx, nil, id, engine.Op{Actor: "alice"}))
		h.requireState(id, wftype.ProcessRunning)
		b, err := h.e.SignalTx(h.ctx, nil, "nobody-waits", engine.SignalOpts{})
		require.NoError(t, err)
		require.Empty(t, b.Receivers)
		item := h.item(id, "Approve")
		_, err = h.e.CompleteWorkItemTx(h.ctx, nil, item.ID, engine.Completion{User: "clerk1"})
		require.NoError(t, err)
		h.requireState(id, wftype.ProcessCompleted)
	})
}
