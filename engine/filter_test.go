package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// filterXPDL has a process "p" (named "Order") that waits for a clerk,
// and a process "q" whose application fails at once.
var filterXPDL = strings.Replace(xpdltest.PackageWith(apps,
	xpdltest.Process("p", "", xpdltest.Activity("Approve", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""), "")+
		xpdltest.Process("q", "", tool("Charge", "risky"), "")),
	`<WorkflowProcess Id="p">`, `<WorkflowProcess Id="p" Name="Order">`, 1)

// allInstances walks every page of f.
func (h *harness) allInstances(f engine.InstanceFilter) []int64 {
	h.t.Helper()
	var out []int64
	for pages := 0; ; pages++ {
		require.Less(h.t, pages, 100)
		page, err := h.e.Instances(h.ctx, f)
		require.NoError(h.t, err)
		if f.Limit > 0 {
			require.LessOrEqual(h.t, len(page.Instances), f.Limit)
		}
		for _, pi := range page.Instances {
			out = append(out, pi.ID)
		}
		if page.Next == 0 {
			return out
		}
		f.After = page.Next
	}
}

func TestInstancesFilterAndPage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, _ := timedHarness(t, db)
		h.e.RegisterApplication("risky", func(context.Context, *engine.Call) (map[string]any, error) {
			return nil, errors.New("card declined")
		})
		v1 := h.deploy(filterXPDL)
		p1 := h.startProcess("pkg", "p", nil)
		clock.Advance(time.Minute)
		q1 := h.startProcess("pkg", "q", nil)
		h.awaitIncident(q1, engine.CauseApplication)
		clock.Advance(time.Minute)
		v2 := h.deploy(filterXPDL)
		p2 := h.startProcess("pkg", "p", nil)
		clock.Advance(time.Minute)
		p3 := h.startProcess("pkg", "p", nil)
		h.idle()
		require.NoError(t, h.e.Suspend(h.ctx, p3, engine.Op{Actor: "alice", Reason: "check"}))
		h.idle()

		pi, err := h.e.Instance(h.ctx, p2)
		require.NoError(t, err)
		require.Equal(t, engine.ProcessInstance{
			ID: p2, Package: "pkg", Version: 2, DefinitionID: v2.ID, Process: "p", ProcessName: "Order",
			State: wftype.ProcessRunning, StartedAt: epoch.Add(2 * time.Minute), UpdatedAt: pi.UpdatedAt,
		}, pi)

		all := []int64{p1, q1, p2, p3}
		for _, tc := range []struct {
			name string
			f    engine.InstanceFilter
			want []int64
		}{
			{"all", engine.InstanceFilter{}, all},
			{"pages of one", engine.InstanceFilter{Limit: 1}, all},
			{"pages of three", engine.InstanceFilter{Limit: 3}, all},
			{"after a cursor", engine.InstanceFilter{After: q1}, []int64{p2, p3}},
			{"states", engine.InstanceFilter{States: []wftype.ProcessState{wftype.ProcessSuspended, wftype.ProcessCompleted}}, []int64{p3}},
			{"process", engine.InstanceFilter{Process: "p"}, []int64{p1, p2, p3}},
			{"package", engine.InstanceFilter{Package: "pkg"}, all},
			{"unknown package", engine.InstanceFilter{Package: "nope"}, nil},
			{"version", engine.InstanceFilter{Package: "pkg", Version: 1}, []int64{p1, q1}},
			{"definition", engine.InstanceFilter{DefinitionID: v1.ID, Process: "p"}, []int64{p1}},
			{"started after (inclusive)", engine.InstanceFilter{StartedAfter: epoch.Add(time.Minute)}, []int64{q1, p2, p3}},
			{"started before (exclusive)", engine.InstanceFilter{StartedBefore: epoch.Add(2 * time.Minute)}, []int64{p1, q1}},
			{"incident cause", engine.InstanceFilter{IncidentCause: engine.CauseApplication}, []int64{q1}},
			{"other incident cause", engine.InstanceFilter{IncidentCause: engine.CauseLocking}, nil},
			{"not a parent", engine.InstanceFilter{Parent: p1}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				require.Equal(t, tc.want, h.sub(t).allInstances(tc.f))
			})
		}

		for _, bad := range []engine.InstanceFilter{
			{States: []wftype.ProcessState{"running"}},
			{IncidentCause: "boom"},
			{Limit: -1},
			{After: -5},
			{Version: -1},
		} {
			_, err := h.e.Instances(h.ctx, bad)
			require.ErrorIs(t, err, engine.ErrBadFilter, "%+v", bad)
		}

		_, err = h.e.Instance(h.ctx, 424242)
		require.ErrorIs(t, err, engine.ErrNotFound)
	})
}
