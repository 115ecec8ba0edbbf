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
	"github.com/goxpdl/goxpdl/workitem"
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
		p3, err := h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Process: "p", BusinessKey: "order-7"})
		require.NoError(t, err)
		h.idle()
		require.NoError(t, h.e.Suspend(h.ctx, p3, engine.Op{Actor: "alice", Reason: "check"}))
		h.idle()

		pi, err := h.e.Instance(h.ctx, p2)
		require.NoError(t, err)
		require.Equal(t, engine.ProcessInstance{
			ID: p2, Package: "pkg", Version: 2, DefinitionID: v2.ID, Process: "p", ProcessName: "Order",
			State: wftype.ProcessRunning, StartedAt: epoch.Add(2 * time.Minute), UpdatedAt: pi.UpdatedAt, Revision: pi.Revision,
		}, pi)
		require.Positive(t, pi.Revision)

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
			{"business key", engine.InstanceFilter{BusinessKey: "order-7"}, []int64{p3}},
			{"other business key", engine.InstanceFilter{BusinessKey: "order-8"}, nil},
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

func TestReadAPITypesFiltersAndPages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(xpdltest.Package(xpdltest.Process("p", "",
			`<Activity Id="Approve" Name="Approve the order"><Implementation><No/></Implementation><Performer>clerk</Performer></Activity>`, "")))
		var ids []int64
		for range 3 {
			ids = append(ids, h.startProcess("pkg", "p", nil))
		}
		h.idle()

		acts, err := h.e.Activities(h.ctx, engine.ActivityFilter{Instance: ids[0]})
		require.NoError(t, err)
		require.Len(t, acts.Activities, 1)
		a := acts.Activities[0]
		require.Equal(t, "Approve", a.Activity)
		require.Equal(t, "Approve the order", a.ActivityName, "activities are named by id and name")
		require.Equal(t, wftype.ActivityInActive, a.State)
		require.Equal(t, ids[0], a.Instance)
		require.Zero(t, acts.Next)
		none, err := h.e.Activities(h.ctx, engine.ActivityFilter{Instance: ids[0], States: []wftype.ActivityState{wftype.ActivityCompleted}})
		require.NoError(t, err)
		require.Empty(t, none.Activities)

		// Work items: by instance, by owner, by performer, page by page.
		open := h.item(ids[1], "Approve")
		require.Equal(t, workitem.Offered, open.State)
		require.Equal(t, "Approve the order", open.ActivityName)
		require.Equal(t, "p", open.Process)
		require.NoError(t, h.e.ClaimWorkItem(h.ctx, open.ID, "clerk1", engine.Op{}))
		held, err := h.e.WorkItems(h.ctx, engine.WorkItemFilter{Owner: "clerk1"})
		require.NoError(t, err)
		require.Len(t, held.WorkItems, 1)
		require.Equal(t, open.ID, held.WorkItems[0].ID)
		require.Equal(t, workitem.Allocated, held.WorkItems[0].State)
		items, err := workItemsOf(h.ctx, h.e, engine.WorkItemFilter{Performer: "clerk"})
		require.NoError(t, err)
		require.Len(t, items, 3)
		first, err := h.e.WorkItems(h.ctx, engine.WorkItemFilter{Performer: "clerk", Limit: 2})
		require.NoError(t, err)
		require.Len(t, first.WorkItems, 2)
		require.Equal(t, first.WorkItems[1].ID, first.Next)
		rest, err := h.e.WorkItems(h.ctx, engine.WorkItemFilter{Performer: "clerk", Limit: 2, After: first.Next})
		require.NoError(t, err)
		require.Len(t, rest.WorkItems, 1)
		require.Zero(t, rest.Next)
		_, err = h.e.CompleteWorkItem(h.ctx, open.ID, engine.Completion{User: "clerk1"})
		require.NoError(t, err)
		h.idle()
		done, err := h.e.WorkItems(h.ctx, engine.WorkItemFilter{Instance: ids[1], States: []workitem.State{workitem.Completed}})
		require.NoError(t, err)
		require.Len(t, done.WorkItems, 1)
		require.Equal(t, "clerk1", done.WorkItems[0].CompletedBy)

		// Bad filters are refused; unknown instances are not found.
		for name, call := range map[string]func() error{
			"activity state": func() error {
				_, err := h.e.Activities(h.ctx, engine.ActivityFilter{Instance: ids[0], States: []wftype.ActivityState{"Done"}})
				return err
			},
			"activity limit": func() error {
				_, err := h.e.Activities(h.ctx, engine.ActivityFilter{Instance: ids[0], Limit: -1})
				return err
			},
			"work item state": func() error {
				_, err := h.e.WorkItems(h.ctx, engine.WorkItemFilter{States: []workitem.State{"offered"}})
				return err
			},
			"work item cursor": func() error {
				_, err := h.e.WorkItems(h.ctx, engine.WorkItemFilter{After: -1})
				return err
			},
			"timer state": func() error {
				_, err := h.e.Timers(h.ctx, engine.TimerFilter{States: []engine.TimerState{"armed"}})
				return err
			},
			"timer cursor": func() error {
				_, err := h.e.Timers(h.ctx, engine.TimerFilter{After: "yesterday"})
				return err
			},
			"worklist cursor": func() error {
				_, err := h.e.Worklist(h.ctx, "clerk1", engine.WorklistFilter{After: "x"})
				return err
			},
			"history cursor": func() error {
				_, err := h.e.History(h.ctx, engine.HistoryFilter{Instance: ids[0], After: -1})
				return err
			},
			"incident cause": func() error {
				_, err := h.e.Incidents(h.ctx, engine.IncidentFilter{Causes: []engine.IncidentCause{"Application"}})
				return err
			},
			"incident state": func() error {
				_, err := h.e.Incidents(h.ctx, engine.IncidentFilter{States: []engine.IncidentState{"closed"}})
				return err
			},
			"worklist limit": func() error {
				_, err := h.e.Worklist(h.ctx, "clerk1", engine.WorklistFilter{Limit: -3})
				return err
			},
		} {
			require.ErrorIs(t, call(), engine.ErrBadFilter, name)
		}
		_, err = h.e.Activities(h.ctx, engine.ActivityFilter{Instance: 424242})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = h.e.Variables(h.ctx, 424242)
		require.ErrorIs(t, err, engine.ErrNotFound)
	})
}
