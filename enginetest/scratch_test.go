package enginetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/enginetest"
	"github.com/goxpdl/goxpdl/wftype"
)

func TestScratch(t *testing.T) {
	h := enginetest.New(t, enginetest.WithApplication("ship", func(_ context.Context, c *engine.Call) (map[string]any, error) {
		return map[string]any{"tracking": fmt.Sprint("TRK-", c.Params["amount"])}, nil
	}))
	h.DeployFile("testdata/approval.xpdl")
	id := h.Start("approval", map[string]any{"amount": int64(120)})
	h.WaitForState(id, "Review", wftype.ActivityInActive)
	h.Advance(3 * time.Hour)
	h.CompleteWorkItem(id, "Escalate", map[string]any{"approved": true})
	h.RunUntil(id, wftype.ProcessCompleted)
	for _, s := range h.Steps(id) {
		t.Log(s)
	}
	t.Log(h.Vars(id))
	t.Log(h.Report(id))
	id2 := h.Start("approval", nil)
	h.RunUntil(id2, wftype.ProcessCompleted)
}
