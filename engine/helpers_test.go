package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// harness is a started engine on a fresh database.
type harness struct {
	t   *testing.T
	ctx context.Context
	db  *gorm.DB
	e   *engine.Engine
}

func newHarness(t *testing.T, db *gorm.DB, configure ...func(*engine.Config)) *harness {
	t.Helper()
	cfg := engine.Config{
		DB:           db,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		PollInterval: 20 * time.Millisecond,
	}
	for _, c := range configure {
		c(&cfg)
	}
	e, err := engine.New(cfg)
	require.NoError(t, err)
	ctx := t.Context()
	h := &harness{t: t, ctx: ctx, db: db, e: e}
	return h
}

// start starts the engine and stops it when the test ends.
func (h *harness) start() *harness {
	h.t.Helper()
	require.NoError(h.t, h.e.Start(h.ctx))
	h.t.Cleanup(func() { require.NoError(h.t, h.e.Stop(context.Background())) })
	return h
}

func (h *harness) deploy(src string) engine.Deployment {
	h.t.Helper()
	d, err := h.e.Deploy(h.ctx, []byte(src))
	require.NoError(h.t, err)
	return d
}

func (h *harness) startProcess(pkg, proc string, vars map[string]any) int64 {
	h.t.Helper()
	id, err := h.e.StartProcess(h.ctx, engine.StartOptions{Package: pkg, Process: proc, Variables: vars})
	require.NoError(h.t, err)
	return id
}

// idle waits until the engine has nothing to do.
func (h *harness) idle() {
	h.t.Helper()
	require.NoError(h.t, h.e.WaitIdle(h.ctx))
}

// instance returns a process instance after the engine went idle.
func (h *harness) instance(id int64) engine.ProcessInstance {
	h.t.Helper()
	h.idle()
	pi, err := h.e.Instance(h.ctx, id)
	require.NoError(h.t, err)
	return pi
}

// requireState checks the state of an instance once the engine is idle.
// A final state is waited for: events retried after a backoff come back
// through the outbox poller after the engine went idle.
func (h *harness) requireState(id int64, want wftype.ProcessState) engine.ProcessInstance {
	h.t.Helper()
	if want.IsFinal() {
		h.awaitFinal(id)
	}
	pi := h.instance(id)
	require.Equal(h.t, want, pi.State, "diagnosis: %s", pi.Diagnosis)
	return pi
}

// awaitBound is how long the harness's waits (awaitFinal, await) wait,
// in real time, before they fail the test with what the engine was
// doing: a hang reads as a diagnosis, not as the whole run's timeout.
const awaitBound = 3 * time.Minute

// awaitFinal waits until the instance is Completed, Terminated or Locking.
func (h *harness) awaitFinal(id int64) {
	h.t.Helper()
	h.await(id, "finish", func(ctx context.Context) (bool, error) {
		pi, err := h.e.Instance(ctx, id)
		return err == nil && pi.State.IsFinal(), err
	})
}

// await waits until done says the instance got where the test wants it
// (what names that, for the failure), woken by every record the engine
// publishes and, should a change publish none, by a look every 200 ms.
// After awaitBound it fails the test with a diagnosis of the instance.
func (h *harness) await(id int64, what string, done func(context.Context) (bool, error)) {
	h.t.Helper()
	wake := make(chan struct{}, 1)
	defer h.e.Subscribe(func(engine.Record) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})()
	ctx, cancel := context.WithTimeout(h.ctx, awaitBound)
	defer cancel()
	look := time.NewTicker(200 * time.Millisecond)
	defer look.Stop()
	for {
		ok, err := done(ctx)
		if ctx.Err() != nil {
			break
		}
		require.NoError(h.t, err)
		if ok {
			return
		}
		select {
		case <-wake:
		case <-look.C:
		case <-ctx.Done():
		}
	}
	h.t.Fatalf("instance %d did not %s within %v: %s", id, what, awaitBound, h.diagnose(id))
}

// diagnose describes an instance that does not move on: its state, its
// activities, the engine's backlog and counters, read with a bound of
// their own.
func (h *harness) diagnose(id int64) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	if pi, err := h.e.Instance(ctx, id); err != nil {
		fmt.Fprintf(&b, "instance: %v; ", err)
	} else {
		fmt.Fprintf(&b, "instance %s (%s); ", pi.State, pi.Diagnosis)
	}
	if page, err := h.e.Activities(ctx, engine.ActivityFilter{Instance: id, Limit: 1000}); err != nil {
		fmt.Fprintf(&b, "activities: %v; ", err)
	} else {
		for _, a := range page.Activities {
			fmt.Fprintf(&b, "%s=%s ", a.Activity, a.State)
		}
	}
	backlog, err := h.e.Backlog(ctx)
	fmt.Fprintf(&b, "; backlog %+v (err %v); stats %+v", backlog, err, h.e.Stats())
	return b.String()
}

// openItems lists the open work items of an instance.
func (h *harness) openItems(id int64) []engine.WorkItem {
	h.t.Helper()
	h.idle()
	items, err := workItemsOf(h.ctx, h.e, openItemsOf(id))
	require.NoError(h.t, err)
	return items
}

// complete completes a work item as user "clerk1" with outputs.
func (h *harness) complete(id int64, outputs map[string]any) error {
	_, err := h.e.CompleteWorkItem(h.ctx, id, engine.Completion{User: "clerk1", Outputs: outputs})
	return err
}

// completeAll completes work items until the instance has none open or
// finished, and returns its final state.
func (h *harness) completeAll(ids ...int64) {
	h.t.Helper()
	for range 1000 {
		h.idle()
		items, err := workItemsOf(h.ctx, h.e, engine.WorkItemFilter{States: []workitem.State{workitem.Offered}})
		require.NoError(h.t, err)
		if len(items) == 0 {
			return
		}
		for _, wi := range items {
			require.NoError(h.t, h.complete(wi.ID, nil))
		}
	}
	h.t.Fatal("work items kept coming")
}

// started counts the activity instances per activity id.
func (h *harness) started(id int64) map[string]int {
	h.t.Helper()
	h.idle()
	acts, err := activitiesOf(h.ctx, h.e, id)
	require.NoError(h.t, err)
	out := map[string]int{}
	for _, a := range acts {
		out[a.Activity]++
	}
	return out
}

// history returns the whole audit trail of an instance, page by page.
func (h *harness) history(id int64) []engine.HistoryEntry {
	h.t.Helper()
	var out []engine.HistoryEntry
	f := engine.HistoryFilter{Instance: id, Limit: 7} // small pages: the cursor is walked too
	for {
		page, err := h.e.History(h.ctx, f)
		require.NoError(h.t, err)
		out = append(out, page.Entries...)
		if page.Next == 0 {
			return out
		}
		f.After = page.Next
	}
}

func (h *harness) vars(id int64) map[string]any {
	h.t.Helper()
	h.idle()
	v, err := h.e.Variables(h.ctx, id)
	require.NoError(h.t, err)
	return v
}

// activitiesOf reads every page of the activity instances of process
// instance id.
func activitiesOf(ctx context.Context, e *engine.Engine, id int64) ([]engine.ActivityInstance, error) {
	var out []engine.ActivityInstance
	f := engine.ActivityFilter{Instance: id, Limit: 7} // small pages: the cursor is walked too
	for {
		page, err := e.Activities(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Activities...)
		if page.Next == 0 {
			return out, nil
		}
		f.After = page.Next
	}
}

// workItemsOf reads every page of the work items f selects.
func workItemsOf(ctx context.Context, e *engine.Engine, f engine.WorkItemFilter) ([]engine.WorkItem, error) {
	var out []engine.WorkItem
	f.Limit = 7 // small pages: the cursor is walked too
	for {
		page, err := e.WorkItems(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page.WorkItems...)
		if page.Next == 0 {
			return out, nil
		}
		f.After = page.Next
	}
}

// openItemsOf is the filter of the open work items of process instance
// id.
func openItemsOf(id int64) engine.WorkItemFilter {
	return engine.WorkItemFilter{Instance: id, States: workitem.OpenStates}
}

// timersOf reads every page of the timers of process instance id.
func timersOf(ctx context.Context, e *engine.Engine, id int64) ([]engine.Timer, error) {
	var out []engine.Timer
	f := engine.TimerFilter{Instance: id, Limit: 2} // small pages: the cursor is walked too
	for {
		page, err := e.Timers(ctx, f)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Timers...)
		if page.Next == "" {
			return out, nil
		}
		f.After = page.Next
	}
}
