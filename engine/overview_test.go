package engine_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
)

// requireCountsMatch checks the Overview's counts, kept by the store with
// every change, against a walk of every instance.
func (h *harness) requireCountsMatch() engine.Overview {
	h.t.Helper()
	h.idle()
	o, err := h.e.Overview(h.ctx)
	require.NoError(h.t, err)
	want := map[wftype.ProcessState]int64{}
	byDef := map[string]int64{}
	for f := (engine.InstanceFilter{Limit: 1000}); ; {
		page, err := h.e.Instances(h.ctx, f)
		require.NoError(h.t, err)
		for _, pi := range page.Instances {
			want[pi.State]++
			byDef[strconv.FormatInt(pi.DefinitionID, 10)+"/"+pi.Process+"/"+string(pi.State)]++
		}
		if page.Next == 0 {
			break
		}
		f.After = page.Next
	}
	got := map[string]int64{}
	var total int64
	for _, d := range o.Definitions {
		for s, n := range d.States {
			got[strconv.FormatInt(d.DefinitionID, 10)+"/"+d.Process+"/"+string(s)] = n
			total += n
		}
	}
	require.Equal(h.t, want, o.States)
	require.Equal(h.t, byDef, got)
	require.Equal(h.t, total, o.Total)
	all, err := h.e.CountInstances(h.ctx, engine.InstanceFilter{}, 0)
	require.NoError(h.t, err)
	require.Equal(h.t, engine.InstanceCount{N: total}, all)
	return o
}

func TestOverview(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, _ := timedHarness(t, db)
		h.e.RegisterApplication("risky", func(context.Context, *engine.Call) (map[string]any, error) {
			return nil, errors.New("card declined")
		})
		o := h.requireCountsMatch()
		require.Zero(t, o.Total)
		require.Len(t, o.Minutes, 60)

		clock.Advance(30 * time.Second) // 09:00:30
		v1 := h.deploy(filterXPDL)
		p1 := h.startProcess("pkg", "p", nil)
		p2 := h.startProcess("pkg", "p", nil)
		p3 := h.startProcess("pkg", "p", nil)
		h.requireCountsMatch()
		clock.Advance(time.Minute) // 09:01:30
		q1 := h.startProcess("pkg", "q", nil)
		h.awaitIncident(q1, engine.CauseApplication)
		require.NoError(t, h.complete(h.openItems(p1)[0].ID, nil))
		h.requireState(p1, wftype.ProcessCompleted)
		h.requireCountsMatch()
		clock.Advance(time.Minute) // 09:02:30
		require.NoError(t, h.e.Terminate(h.ctx, p2, engine.Op{Actor: "alice", Reason: "duplicate"}))
		h.requireState(p2, wftype.ProcessTerminated)
		require.NoError(t, h.e.Suspend(h.ctx, p3, engine.Op{Actor: "alice"}))
		h.requireCountsMatch()
		require.NoError(t, h.e.Resume(h.ctx, p3, engine.Op{Actor: "alice"}))
		require.NoError(t, h.e.Suspend(h.ctx, p3, engine.Op{Actor: "alice"}))
		deadlines := h.deploy(deadlineXPDL(deadline("ASYNCHR", "PT1H"), ""))
		d1 := h.startProcess("deadlines", "approval", nil)
		h.idle()

		// An event that waits in the outbox (available in an hour), written
		// half a minute ago.
		now := clock.Now()
		_, err := h.e.Store().InsertEvents(h.ctx, []store.Event{{
			ID: 1, EventID: "waiting", ProcessInstanceID: d1, Kind: "test", CreatedAt: now.Add(-30 * time.Second), AvailableAt: now.Add(time.Hour),
		}})
		require.NoError(t, err)

		// The node renews its lease as the fake clock moves, on its own
		// goroutine: wait for the renewal (a busy machine can be late).
		waitAlive(t, h)
		o = h.requireCountsMatch()
		require.Equal(t, now, o.At)
		require.Equal(t, map[wftype.ProcessState]int64{
			wftype.ProcessRunning: 2, wftype.ProcessCompleted: 1, wftype.ProcessTerminated: 1, wftype.ProcessSuspended: 1,
		}, o.States)
		require.Equal(t, int64(5), o.Total)
		require.Equal(t, []engine.DefinitionCount{
			{DefinitionID: deadlines.ID, Package: "deadlines", Version: 1, Process: "approval",
				States: map[wftype.ProcessState]int64{wftype.ProcessRunning: 1}, Total: 1},
			{DefinitionID: v1.ID, Package: "pkg", Version: 1, Process: "p", ProcessName: "Order",
				States: map[wftype.ProcessState]int64{wftype.ProcessCompleted: 1, wftype.ProcessTerminated: 1, wftype.ProcessSuspended: 1}, Total: 3},
			{DefinitionID: v1.ID, Package: "pkg", Version: 1, Process: "q",
				States: map[wftype.ProcessState]int64{wftype.ProcessRunning: 1}, Total: 1},
		}, o.Definitions)

		require.Len(t, o.Minutes, 60)
		last := o.Minutes[59]
		require.Equal(t, epoch.Add(2*time.Minute), last.Minute)
		require.Equal(t, epoch.Add(-57*time.Minute), o.Minutes[0].Minute)
		require.Equal(t, engine.MinuteCount{Minute: epoch, Started: 3}, o.Minutes[57])
		require.Equal(t, engine.MinuteCount{Minute: epoch.Add(time.Minute), Started: 1, Completed: 1}, o.Minutes[58])
		require.Equal(t, engine.MinuteCount{Minute: epoch.Add(2 * time.Minute), Started: 1, Terminated: 1}, last)
		for _, m := range o.Minutes[:57] {
			require.Equal(t, engine.MinuteCount{Minute: m.Minute}, m)
		}

		require.Equal(t, map[engine.IncidentCause]int64{engine.CauseApplication: 1}, o.Incidents)
		oldest := now.Add(-30 * time.Second)
		require.Equal(t, engine.EventBacklog{Unprocessed: 1, Oldest: &oldest, Lag: 30 * time.Second}, o.Events)
		require.Equal(t, engine.TimerCounts{Due: 0, Pending: 1}, o.Timers)

		require.Equal(t, map[string]string{"sqlite": store.DialectSQLite, "mysql": store.DialectMySQL, "postgres": store.DialectPostgres}[db.Name()], o.Database.Dialect)
		require.Regexp(t, `^\d+\.\d+`, o.Database.Version)

		require.Len(t, o.Nodes, 1)
		node := o.Nodes[0]
		require.True(t, node.Self)
		require.True(t, node.Alive)
		require.Equal(t, int64(1), node.Epoch)
		require.Equal(t, epoch, node.StartedAt)
		require.True(t, node.LeaseUntil.After(now))
		nodes, err := h.e.Nodes(h.ctx)
		require.NoError(t, err)
		require.Equal(t, o.Nodes, nodes)

		// Another node's registration whose lease ran out.
		other := now.Add(-time.Minute)
		_, _, err = h.e.Store().RegisterNode(h.ctx, store.RegisterNodeParams{
			ID: "zz-other", Owner: "zz-other#1", Host: "elsewhere", PID: 7, Now: other, LeaseUntil: other.Add(5 * time.Second),
		})
		require.NoError(t, err)
		nodes, err = h.e.Nodes(h.ctx)
		require.NoError(t, err)
		require.Len(t, nodes, 2)
		require.Equal(t, engine.Node{
			ID: "zz-other", Run: "zz-other#1", Epoch: 1, Host: "elsewhere", PID: 7,
			StartedAt: other, HeartbeatAt: other, LeaseUntil: other.Add(5 * time.Second),
		}, nodes[1])

		// Folding the counts (every second of the engine clock) changes
		// none of them.
		clock.Advance(2 * time.Second)
		h.idle()
		h.requireCountsMatch()
	})
}

func TestCountInstances(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, _ := timedHarness(t, db)
		h.e.RegisterApplication("risky", func(context.Context, *engine.Call) (map[string]any, error) {
			return nil, errors.New("card declined")
		})
		v1 := h.deploy(filterXPDL)
		for range 3 {
			h.startProcess("pkg", "p", nil)
		}
		clock.Advance(time.Minute)
		v2 := h.deploy(filterXPDL)
		q := h.startProcess("pkg", "q", nil)
		h.awaitIncident(q, engine.CauseApplication)
		for i := range 4 {
			_, err := h.e.StartProcess(h.ctx, engine.StartOptions{Package: "pkg", Process: "p", BusinessKey: "k" + strconv.Itoa(i%2)})
			require.NoError(t, err)
		}
		h.idle()
		running := []wftype.ProcessState{wftype.ProcessRunning}
		for _, tc := range []struct {
			name string
			f    engine.InstanceFilter
			upTo int64
			want engine.InstanceCount
		}{
			{"all", engine.InstanceFilter{}, 0, engine.InstanceCount{N: 8}},
			{"all, upTo is for scans only", engine.InstanceFilter{}, 2, engine.InstanceCount{N: 8}},
			{"state", engine.InstanceFilter{States: running}, 0, engine.InstanceCount{N: 8}},
			{"other state", engine.InstanceFilter{States: []wftype.ProcessState{wftype.ProcessCompleted}}, 0, engine.InstanceCount{}},
			{"package", engine.InstanceFilter{Package: "pkg"}, 0, engine.InstanceCount{N: 8}},
			{"version", engine.InstanceFilter{Package: "pkg", Version: 2}, 0, engine.InstanceCount{N: 5}},
			{"definition and process", engine.InstanceFilter{DefinitionID: v2.ID, Process: "q"}, 0, engine.InstanceCount{N: 1}},
			{"definition", engine.InstanceFilter{DefinitionID: v1.ID}, 0, engine.InstanceCount{N: 3}},
			{"sort, cursor and limit are ignored", engine.InstanceFilter{Sort: engine.SortStartedDesc, Cursor: "x", Limit: 1}, 0, engine.InstanceCount{N: 8}},
			{"business key", engine.InstanceFilter{BusinessKey: "k1"}, 0, engine.InstanceCount{N: 2}},
			{"started after, capped", engine.InstanceFilter{StartedAfter: epoch.Add(time.Minute)}, 3, engine.InstanceCount{N: 3, More: true}},
			{"started after, cap not reached", engine.InstanceFilter{StartedAfter: epoch.Add(time.Minute)}, 5, engine.InstanceCount{N: 5}},
			{"started before", engine.InstanceFilter{StartedBefore: epoch.Add(time.Minute)}, 0, engine.InstanceCount{N: 3}},
			{"incident", engine.InstanceFilter{IncidentCause: engine.CauseApplication}, 10, engine.InstanceCount{N: 1}},
		} {
			got, err := h.e.CountInstances(h.ctx, tc.f, tc.upTo)
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.want, got, tc.name)
		}
		for _, bad := range []engine.InstanceFilter{{States: []wftype.ProcessState{"running"}}, {Version: -1}} {
			_, err := h.e.CountInstances(h.ctx, bad, 0)
			require.ErrorIs(t, err, engine.ErrBadFilter)
		}
		_, err := h.e.CountInstances(h.ctx, engine.InstanceFilter{BusinessKey: "k1"}, -1)
		require.ErrorIs(t, err, engine.ErrBadFilter)
	})
}

// Paging in every order by both cursors: no instance twice, none
// skipped, while instances are started between the pages; those started
// meanwhile appear at the end of the ascending orders and not at all in
// the descending ones (they sort before the cursor).
func TestInstancesSortAndPage(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock, _ := timedHarness(t, db)
		h.deploy(filterXPDL)
		var before []int64
		for i := range 7 { // two or three at each instant: ties in start time
			before = append(before, h.startProcess("pkg", "p", nil))
			if i%3 == 2 {
				clock.Advance(time.Second)
			}
		}
		for _, sort := range engine.InstanceSorts {
			for _, byCursor := range []bool{true, false} {
				if !byCursor && (sort == engine.SortStarted || sort == engine.SortStartedDesc) {
					continue // After is an id
				}
				t.Run(string(sort)+map[bool]string{true: " by Cursor", false: " by After"}[byCursor], func(t *testing.T) {
					f := engine.InstanceFilter{Sort: sort, Limit: 2}
					var seen, added []int64
					var starts []time.Time
					for pages := 0; ; pages++ {
						require.Less(t, pages, 50)
						page, err := h.e.Instances(h.ctx, f)
						require.NoError(t, err)
						for _, pi := range page.Instances {
							seen = append(seen, pi.ID)
							starts = append(starts, pi.StartedAt)
						}
						if page.Cursor == "" {
							require.Zero(t, page.Next)
							break
						}
						if sort == engine.SortStarted || sort == engine.SortStartedDesc {
							require.Zero(t, page.Next)
						} else {
							require.Equal(t, strconv.FormatInt(page.Next, 10), page.Cursor)
						}
						if byCursor {
							f.Cursor = page.Cursor
						} else {
							f.After = page.Next
						}
						if pages < 2 { // new instances, started later
							clock.Advance(time.Second)
							added = append(added, h.startProcess("pkg", "p", nil))
						}
					}
					want := slices.Clone(before)
					if sort == engine.SortID || sort == engine.SortStarted {
						want = append(want, added...)
					} else {
						slices.Reverse(want)
					}
					require.Equal(t, want, seen, "every instance once, in order")
					if sort == engine.SortStarted {
						require.True(t, slices.IsSortedFunc(starts, time.Time.Compare))
					}
					before = append(before, added...)
				})
			}
		}

		bad := []engine.InstanceFilter{
			{Sort: "name"},
			{Sort: engine.SortStarted, After: 3},
			{After: 3, Cursor: "3"},
			{Cursor: "abc"},
			{Cursor: "-4"},
			{Cursor: "1700000000000000.3"},
			{Sort: engine.SortStartedDesc, Cursor: "3"},
			{Sort: engine.SortStarted, Cursor: "x.3"},
		}
		for _, f := range bad {
			_, err := h.e.Instances(h.ctx, f)
			require.ErrorIs(t, err, engine.ErrBadFilter, "%+v", f)
		}
		_, err := h.e.StartBatch(h.ctx, engine.BatchRequest{Action: engine.BatchSuspend, Filter: engine.InstanceFilter{Cursor: "3"}})
		require.ErrorIs(t, err, engine.ErrBadBatch)
	})
}

// waitAlive waits until this engine's node has renewed its lease past
// the fake clock's now.
func waitAlive(t *testing.T, h *harness) {
	t.Helper()
	require.Eventually(t, func() bool {
		nodes, err := h.e.Nodes(h.ctx)
		return err == nil && len(nodes) == 1 && nodes[0].Alive
	}, time.Minute, 10*time.Millisecond, "the node renews its lease")
}
