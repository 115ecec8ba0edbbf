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

// The test docs/testing.md shows, as a host writes it: the review's
// deadline passes, a manager approves, the host's application ships.

// begin docblock docs/testing.md
// ship is the host's code behind the XPDL Application "ship".
func ship(_ context.Context, call *engine.Call) (map[string]any, error) {
	return map[string]any{"tracking": fmt.Sprint("TRK-", call.Params["amount"])}, nil
}

func TestApprovalEscalates(t *testing.T) {
	t.Parallel()
	h := enginetest.New(t, enginetest.WithApplication("ship", ship))
	h.DeployFile("testdata/approval.xpdl")
	id := h.Start("approval", map[string]any{"amount": int64(120)})

	h.WaitForState(id, "Review", wftype.ActivityInActive) // the clerk's work item is offered
	h.Advance(3 * time.Hour)                              // its two-hour deadline passes: a manager gets the work
	h.CompleteWorkItem(id, "Escalate", map[string]any{"approved": true})
	h.RunUntil(id, wftype.ProcessCompleted)

	h.AssertHistory(id, "workitem Review Withdrawn", "activity Escalate Completed", "activity Ship Completed")
	if got := h.Vars(id)["tracking"]; got != "TRK-120" {
		t.Errorf("tracking = %v, want TRK-120", got)
	}
}

// end docblock
