package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// finalStates are the states the purge tests delete.
var finalStates = []string{"Completed", "Terminated"}

// purgeRowsPerInstance is how many rows purgeFill writes for one
// instance, the instance's own included: one in every table.
const purgeRowsPerInstance = 11

// purgeFixture is one process instance with a row in every table that
// belongs to an instance.
type purgeFixture struct {
	pi    store.ProcessInstance
	user  store.Principal // sees the instance's work item, and nobody else's
	event int64
	msgID string
}

// purgeWorld builds the instances the purge tests look at:
// cutoff is at(-24h); "old" instances ended at(-48h), "recent" ones
// at(-1h).
type purgeWorld struct {
	pkg1, pkg2, other store.Definition // pkg1 and pkg2 are versions 1 and 2 of package "pkg"

	oldDone, oldChild, oldGrandchild  purgeFixture // a finished tree: deleted
	oldTerminated                     purgeFixture // package "pkg" version 2: deleted
	asyncRoot                         purgeFixture // old, Completed, whose child still runs: deleted alone
	asyncChild, asyncGrandchild       purgeFixture // Running child and its finished child: kept
	recent                            purgeFixture // ended after the cutoff: kept
	running                           purgeFixture // never ended: kept
	locking                           purgeFixture // Locking, old: kept (not a listed state)
	runningParent, finishedOfRunning  purgeFixture // a finished child of a running parent: kept
	pending                           purgeFixture // old, but an event still waits: kept
	otherOld                          purgeFixture // old, package "other": kept by the package filter
	recentChildRoot, recentChildChild purgeFixture // old root with a child that ended recently: root deleted, child kept
}

var purgeCutoff = at(-24 * time.Hour)

func (h *harness) newPurgeWorld(t *testing.T, b bundle) *purgeWorld {
	t.Helper()
	def := func(pkg string) store.Definition {
		d, err := b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: pkg, Name: pkg, Source: []byte("<Package/>"), CreatedAt: t0})
		require.NoError(t, err)
		return d
	}
	w := &purgeWorld{}
	w.pkg1, w.pkg2, w.other = def("pkg"), def("pkg"), def("other")
	old, recent := at(-48*time.Hour), at(-time.Hour)
	w.oldDone = purgeFill(t, b, w.pkg1, "main", nil, "Completed", &old, true)
	w.oldChild = purgeFill(t, b, w.pkg1, "sub", &w.oldDone.pi.ID, "Completed", &old, true)
	w.oldGrandchild = purgeFill(t, b, w.other, "leaf", &w.oldChild.pi.ID, "Terminated", &old, true)
	w.oldTerminated = purgeFill(t, b, w.pkg2, "main", nil, "Terminated", &old, true)
	w.asyncRoot = purgeFill(t, b, w.pkg1, "main", nil, "Completed", &old, true)
	w.asyncChild = purgeFill(t, b, w.pkg1, "sub", &w.asyncRoot.pi.ID, "Running", nil, true)
	w.asyncGrandchild = purgeFill(t, b, w.pkg1, "sub", &w.asyncChild.pi.ID, "Completed", &old, true)
	w.recent = purgeFill(t, b, w.pkg1, "main", nil, "Completed", &recent, true)
	w.running = purgeFill(t, b, w.pkg1, "main", nil, "Running", nil, true)
	w.locking = purgeFill(t, b, w.pkg1, "main", nil, "Locking", &old, true)
	w.runningParent = purgeFill(t, b, w.pkg1, "main", nil, "Running", nil, true)
	w.finishedOfRunning = purgeFill(t, b, w.pkg1, "sub", &w.runningParent.pi.ID, "Completed", &old, true)
	w.pending = purgeFill(t, b, w.pkg1, "main", nil, "Completed", &old, false)
	w.otherOld = purgeFill(t, b, w.other, "main", nil, "Completed", &old, true)
	w.recentChildRoot = purgeFill(t, b, w.pkg1, "main", nil, "Completed", &old, true)
	w.recentChildChild = purgeFill(t, b, w.pkg1, "sub", &w.recentChildRoot.pi.ID, "Completed", &recent, true)
	return w
}

// purgeFill stores a process instance of definition def and process
// proc, in state with end time ended, and one row of its own in every
// table: an activity instance, a variable, a work item visible to a user
// of its own, an event (processed unless processed is false), a history
// entry, an inbox message, a timer, a subscription and a resolved
// incident.
func purgeFill(t *testing.T, b bundle, def store.Definition, proc string, parent *int64, state string, ended *time.Time, processed bool) purgeFixture {
	t.Helper()
	pi, err := b.s.InsertProcessInstance(b.ctx, store.ProcessInstance{
		ID:           nextID(),
		DefinitionID: def.ID, ProcessDefID: proc, ParentInstanceID: parent, State: "Running", CreatedAt: at(-72 * time.Hour), UpdatedAt: at(-72 * time.Hour),
	})
	require.NoError(t, err)
	if state != "Running" || ended != nil {
		v, err := b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
			ID: pi.ID, ExpectedVersion: pi.Version, State: state, UpdatedAt: at(-72 * time.Hour), EndedAt: ended,
		})
		require.NoError(t, err)
		pi.State, pi.Version, pi.EndedAt = state, v, normPtr(ended)
	}
	f := purgeFixture{pi: pi, user: store.Principal{Kind: store.PrincipalUser, ID: fmt.Sprintf("u%d", pi.ID)}, msgID: fmt.Sprintf("m%d", pi.ID)}
	ai := newActivityInstance(t, b, pi.ID, "A")
	require.NoError(t, b.s.PutVariables(b.ctx, []store.Variable{{ProcessInstanceID: pi.ID, Name: "x", Type: "INTEGER", Value: []byte("1")}}))
	insertItem(t, b, store.WorkItem{
		ProcessInstanceID: pi.ID, ActivityInstanceID: ai.ID, ProcessDefID: proc, ActivityDefID: "A",
		Name: "A", State: "Completed", CreatedAt: t0, UpdatedAt: t0,
	}, f.user)
	evs, err := b.s.InsertEvents(b.ctx, []store.Event{event(fmt.Sprintf("e%d", pi.ID), pi.ID)})
	require.NoError(t, err)
	f.event = evs[0].ID
	if processed {
		require.NoError(t, b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: []int64{f.event}, ProcessedAt: t0}))
	}
	require.NoError(t, b.s.InsertHistory(b.ctx, []store.HistoryEntry{{
		ID: nextID(), ProcessInstanceID: pi.ID, Subject: store.SubjectProcess, ToState: state, Actor: "engine", At: t0,
	}}))
	_, err = b.s.InsertInboxMessage(b.ctx, message(f.msgID, pi.ID))
	require.NoError(t, err)
	insertTimers(t, b, timer(pi.ID, "deadline", t0))
	_, err = b.s.InsertSubscriptions(b.ctx, []store.Subscription{subscription("go", pi.ID, ai.ID)})
	require.NoError(t, err)
	_, _, err = b.s.RecordIncident(b.ctx, store.Incident{ID: nextID(), ProcessInstanceID: pi.ID, ActivityInstanceID: &ai.ID, Cause: "failing", LastFailureAt: t0})
	require.NoError(t, err)
	_, err = b.s.ResolveIncidents(b.ctx, store.ResolveIncidentsParams{ProcessInstanceID: pi.ID, At: t0, By: "alice", Resolution: "retried"})
	require.NoError(t, err)
	return f
}

// purgeRowsOf counts the rows f's instance still has, in every table.
func purgeRowsOf(t *testing.T, b bundle, f purgeFixture) int {
	t.Helper()
	n := 0
	count := func(k int, err error) {
		t.Helper()
		require.NoError(t, err)
		n += k
	}
	_, err := b.s.GetProcessInstance(b.ctx, f.pi.ID)
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	} else {
		n++
	}
	require.NoError(t, err)
	ais, err := b.s.ListActivityInstances(b.ctx, store.ListActivityInstancesParams{ProcessInstanceID: f.pi.ID})
	count(len(ais), err)
	vars, err := b.s.GetVariables(b.ctx, f.pi.ID)
	count(len(vars), err)
	items, err := b.s.ListWorkItems(b.ctx, store.ListWorkItemsParams{ProcessInstanceID: f.pi.ID})
	count(len(items), err)
	list, err := b.s.ListWorklist(b.ctx, store.ListWorklistParams{Principals: []store.Principal{f.user}, Limit: 10})
	count(len(list), err)
	_, err = b.s.GetEvent(b.ctx, f.event)
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	} else {
		n++
	}
	require.NoError(t, err)
	hist, err := b.s.ListHistory(b.ctx, store.ListHistoryParams{ProcessInstanceID: f.pi.ID})
	count(len(hist), err)
	_, err = b.s.GetInboxMessage(b.ctx, f.msgID)
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	} else {
		n++
	}
	require.NoError(t, err)
	timers, err := b.s.ListTimers(b.ctx, store.ListTimersParams{ProcessInstanceID: f.pi.ID})
	count(len(timers), err)
	subs, err := b.s.ListSubscriptions(b.ctx, store.ListSubscriptionsParams{ProcessInstanceID: f.pi.ID})
	count(len(subs), err)
	incs, err := b.s.ListIncidents(b.ctx, store.ListIncidentsParams{ProcessInstanceID: f.pi.ID})
	count(len(incs), err)
	return n
}

// requirePurged checks that gone have no row left and kept have all of
// theirs.
func requirePurged(t *testing.T, b bundle, gone, kept []purgeFixture) {
	t.Helper()
	for _, f := range gone {
		require.Zero(t, purgeRowsOf(t, b, f), "instance %d (%s, %s) must be gone with all its rows", f.pi.ID, f.pi.ProcessDefID, f.pi.State)
	}
	for _, f := range kept {
		require.Equal(t, purgeRowsPerInstance, purgeRowsOf(t, b, f), "instance %d (%s, %s) must keep all its rows", f.pi.ID, f.pi.ProcessDefID, f.pi.State)
	}
}

// purgeAll calls PurgeProcessInstances until it deletes nothing, and
// returns the sums and the number of calls that deleted something.
func purgeAll(t *testing.T, b bundle, params store.PurgeProcessInstancesParams) (store.PurgeResult, int) {
	t.Helper()
	var sum store.PurgeResult
	for calls := 0; ; calls++ {
		res, err := b.s.PurgeProcessInstances(b.ctx, params)
		require.NoError(t, err)
		if res.Instances == 0 {
			require.Zero(t, res.Rows)
			return sum, calls
		}
		require.Less(t, calls, 100, "purge never ends")
		sum.Instances += res.Instances
		sum.Rows += res.Rows
	}
}

func (h *harness) testPurge(t *testing.T) {
	t.Run("FinishedTreesOnly", func(t *testing.T) {
		b := h.setup(t)
		w := h.newPurgeWorld(t, b)
		all := []purgeFixture{
			w.oldDone, w.oldChild, w.oldGrandchild, w.oldTerminated, w.asyncRoot, w.asyncChild, w.asyncGrandchild,
			w.recent, w.running, w.locking, w.runningParent, w.finishedOfRunning, w.pending, w.otherOld,
			w.recentChildRoot, w.recentChildChild,
		}
		requirePurged(t, b, nil, all) // the fixture is complete

		sum, calls := purgeAll(t, b, store.PurgeProcessInstancesParams{
			States: finalStates, EndedBefore: purgeCutoff, PackageID: "pkg", Limit: 1,
		})
		gone := []purgeFixture{w.oldDone, w.oldChild, w.oldGrandchild, w.oldTerminated, w.asyncRoot, w.recentChildRoot}
		require.EqualValues(t, len(gone), sum.Instances, "the grandchild of another package goes with its root")
		require.EqualValues(t, len(gone)*purgeRowsPerInstance, sum.Rows)
		require.Equal(t, 4, calls, "Limit counts top-level instances: one tree per call")
		kept := []purgeFixture{
			w.asyncChild, w.asyncGrandchild, w.recent, w.running, w.locking, w.runningParent,
			w.finishedOfRunning, w.pending, w.otherOld, w.recentChildChild,
		}
		requirePurged(t, b, gone, kept)

		// The running child of the deleted root is an orphan now; once it
		// ends, it and its child go as a tree of their own.
		v, err := b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
			ID: w.asyncChild.pi.ID, ExpectedVersion: w.asyncChild.pi.Version, State: "Completed",
			UpdatedAt: at(-30 * time.Hour), EndedAt: ptr(at(-30 * time.Hour)),
		})
		require.NoError(t, err)
		require.Equal(t, w.asyncChild.pi.Version+1, v)
		sum, _ = purgeAll(t, b, store.PurgeProcessInstancesParams{States: finalStates, EndedBefore: purgeCutoff, Limit: 10, PackageID: "pkg"})
		require.EqualValues(t, 2, sum.Instances)
		requirePurged(t, b, []purgeFixture{w.asyncChild, w.asyncGrandchild}, kept[2:])
	})

	t.Run("Filters", func(t *testing.T) {
		b := h.setup(t)
		w := h.newPurgeWorld(t, b)
		params := store.PurgeProcessInstancesParams{States: finalStates, EndedBefore: purgeCutoff, Limit: 100}

		// Package "other" only.
		p := params
		p.PackageID = "other"
		sum, _ := purgeAll(t, b, p)
		require.EqualValues(t, 1, sum.Instances)
		requirePurged(t, b, []purgeFixture{w.otherOld}, []purgeFixture{w.oldDone, w.oldChild, w.oldGrandchild, w.oldTerminated})

		// Everything but package "pkg" process "main" of the instances
		// still there: only Terminated ones (state filter), then the rest.
		p = params
		p.States = []string{"Terminated"}
		sum, _ = purgeAll(t, b, p)
		require.EqualValues(t, 1, sum.Instances, "only oldTerminated is a Terminated top-level instance")
		requirePurged(t, b, []purgeFixture{w.oldTerminated}, []purgeFixture{w.oldDone, w.oldChild, w.oldGrandchild})

		// A process filter and an exclusion.
		p = params
		p.ProcessDefID = "main"
		p.Exclude = []store.ProcessScope{{PackageID: "pkg", ProcessDefID: "main"}}
		sum, _ = purgeAll(t, b, p)
		require.Zero(t, sum.Instances)
		p.Exclude = []store.ProcessScope{{PackageID: "pkg"}}
		sum, _ = purgeAll(t, b, p)
		require.Zero(t, sum.Instances)
		p.Exclude = []store.ProcessScope{{PackageID: "other"}}
		p.EndedBefore = at(-40 * time.Hour) // after the old ones ended: they qualify
		sum, _ = purgeAll(t, b, p)
		require.EqualValues(t, 5, sum.Instances, "oldDone's tree (3), asyncRoot, recentChildRoot")
		requirePurged(t, b, []purgeFixture{w.oldDone, w.oldChild, w.oldGrandchild, w.asyncRoot, w.recentChildRoot},
			[]purgeFixture{w.recent, w.running, w.locking, w.pending, w.finishedOfRunning, w.recentChildChild, w.asyncChild})
	})

	t.Run("Refuses", func(t *testing.T) {
		b := h.setup(t)
		ok := store.PurgeProcessInstancesParams{States: finalStates, EndedBefore: t0, Limit: 10}
		for name, mutate := range map[string]func(p *store.PurgeProcessInstancesParams){
			"no states":        func(p *store.PurgeProcessInstancesParams) { p.States = nil },
			"no cutoff":        func(p *store.PurgeProcessInstancesParams) { p.EndedBefore = time.Time{} },
			"no limit":         func(p *store.PurgeProcessInstancesParams) { p.Limit = 0 },
			"limit too large":  func(p *store.PurgeProcessInstancesParams) { p.Limit = store.MaxPurgeLimit + 1 },
			"scope no package": func(p *store.PurgeProcessInstancesParams) { p.Exclude = []store.ProcessScope{{ProcessDefID: "main"}} },
		} {
			p := ok
			mutate(&p)
			_, err := b.s.PurgeProcessInstances(b.ctx, p)
			require.Error(t, err, name)
		}
		res, err := b.s.PurgeProcessInstances(b.ctx, ok)
		require.NoError(t, err)
		require.Equal(t, store.PurgeResult{}, res, "an empty database")
	})

	t.Run("InTx", func(t *testing.T) {
		b := h.setup(t)
		w := h.newPurgeWorld(t, b)
		params := store.PurgeProcessInstancesParams{States: finalStates, EndedBefore: purgeCutoff, PackageID: "other", Limit: 10}
		rollback := errors.New("rollback")
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			res, err := tx.PurgeProcessInstances(ctx, params)
			require.NoError(t, err)
			require.EqualValues(t, 1, res.Instances)
			return rollback
		})
		require.ErrorIs(t, err, rollback)
		requirePurged(t, b, nil, []purgeFixture{w.otherOld})
	})

	t.Run("Concurrent", func(t *testing.T) {
		b := h.setup(t)
		// Many finished trees, purged by several callers at once (engine
		// nodes): each instance is deleted and counted once, and nobody
		// fails because another got there first.
		def, err := b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{ID: nextID(), PackageID: "pkg", Name: "pkg", CreatedAt: t0})
		require.NoError(t, err)
		old := at(-48 * time.Hour)
		var fixtures []purgeFixture
		for range 12 {
			root := purgeFill(t, b, def, "main", nil, "Completed", &old, true)
			child := purgeFill(t, b, def, "sub", &root.pi.ID, "Completed", &old, true)
			fixtures = append(fixtures, root, child)
		}
		kept := purgeFill(t, b, def, "main", nil, "Running", nil, true)
		const callers = 4
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			total store.PurgeResult
			errs  []error
		)
		for range callers {
			wg.Go(func() {
				for {
					res, err := b.s.PurgeProcessInstances(b.ctx, store.PurgeProcessInstancesParams{
						States: finalStates, EndedBefore: purgeCutoff, Limit: 2,
					})
					mu.Lock()
					total.Instances += res.Instances
					total.Rows += res.Rows
					if err != nil {
						errs = append(errs, err)
					}
					mu.Unlock()
					if err != nil || res.Instances == 0 {
						return
					}
				}
			})
		}
		wg.Wait()
		require.Empty(t, errs)
		// A caller that found every candidate taken by others stops early;
		// one more pass finds whatever they left.
		rest, _ := purgeAll(t, b, store.PurgeProcessInstancesParams{States: finalStates, EndedBefore: purgeCutoff, Limit: 100})
		require.EqualValues(t, len(fixtures), total.Instances+rest.Instances, "each instance counted once")
		require.EqualValues(t, len(fixtures)*purgeRowsPerInstance, total.Rows+rest.Rows)
		requirePurged(t, b, fixtures, []purgeFixture{kept})
	})
}
