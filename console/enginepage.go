package console

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
)

// engineRoutes registers the engine page (configuration, pools and load,
// recovery, locks, running batches), the batch pages, and their
// commands.
func (h *Handler) engineRoutes(mux *http.ServeMux) {
	h.page(mux, "GET /engine", "engine", "engine", fixed("page/engine"), h.engineView)
	h.page(mux, "GET /batches", "batches", "engine", fixed("page/batches"), h.batchesView)
	h.page(mux, "GET /batches/{id}", "batch", "engine", func(r *http.Request) string {
		return "batch/" + r.PathValue("id")
	}, h.batchView)

	h.action(mux, "POST /engine/recover", action{
		Name: ActionRecover, Target: func(*http.Request) (string, error) { return "engine", nil },
		Do: func(ctx context.Context, _ *http.Request, _ *input, _ engine.Op) (any, error) {
			return h.eng.Recover(ctx)
		},
		Done: func(_ *http.Request, result any) (string, string) {
			rep, _ := result.(engine.RecoveryReport)
			msg := fmt.Sprintf("Recovered: %d node(s) taken over, %d claim(s) released, %d event(s) pending, %d waiting, %d instance(s) rescued",
				len(rep.ReapedNodes), rep.ReleasedClaims, rep.PendingEvents, rep.WaitingEvents, rep.Rescued)
			if rep.OverdueTimers {
				msg += ", overdue timers woken"
			}
			return msg + ".", "/engine"
		},
	})
	h.action(mux, "POST /engine/locks/{id}/release", action{
		Name: ActionLockRelease, Target: idTarget("lock", "id"), Reason: true,
		Do: func(ctx context.Context, r *http.Request, _ *input, op engine.Op) (any, error) {
			l, err := h.lock(ctx, r)
			if err != nil {
				return nil, err
			}
			if l.State != engine.LockHeld {
				return nil, &engine.NotFoundError{What: "held lock", ID: strconv.FormatInt(l.ID, 10)}
			}
			if err := h.eng.ReleaseLock(ctx, l.Key, op); err != nil {
				return nil, err
			}
			return l, nil
		},
		Done: func(_ *http.Request, result any) (string, string) {
			l, _ := result.(engine.Lock)
			return fmt.Sprintf("Released the %s (instance %d).", l.Key, l.Instance), "/engine"
		},
	})
	for _, c := range []struct {
		verb, action string
		reason       bool
		do           func(e *engine.Engine, ctx context.Context, id int64, op engine.Op) (engine.Batch, error)
	}{
		{"cancel", ActionBatchCancel, true, (*engine.Engine).CancelBatch},
		{"pause", ActionBatchPause, false, (*engine.Engine).PauseBatch},
		{"resume", ActionBatchResume, false, (*engine.Engine).ResumeBatch},
	} {
		h.action(mux, "POST /batches/{id}/"+c.verb, action{
			Name: c.action, Target: idTarget("batch", "id"), Reason: c.reason,
			Do: func(ctx context.Context, r *http.Request, _ *input, op engine.Op) (any, error) {
				id, err := pathID(r, "id")
				if err != nil {
					return nil, err
				}
				return c.do(h.eng, ctx, id, op)
			},
			Done: func(r *http.Request, result any) (string, string) {
				b, _ := result.(engine.Batch)
				return fmt.Sprintf("Batch %d is %s.", b.ID, b.State), "/batches/" + r.PathValue("id")
			},
		})
	}
}

// lock reads the lock of the path (held or waited for).
func (h *Handler) lock(ctx context.Context, r *http.Request) (engine.Lock, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return engine.Lock{}, err
	}
	page, err := h.eng.Locks(ctx, engine.LockFilter{After: id - 1, Limit: 1})
	if err != nil {
		return engine.Lock{}, err
	}
	if len(page.Locks) == 0 || page.Locks[0].ID != id {
		return engine.Lock{}, &engine.NotFoundError{What: "lock", ID: strconv.FormatInt(id, 10)}
	}
	return page.Locks[0], nil
}

// enginePage is the data of the engine page.
type enginePage struct {
	// Settings is the configuration; Stats the pools' sizes and load and
	// the counters.
	Settings engine.Settings `json:"settings"`
	Stats    engine.Stats    `json:"stats"`
	// Locks are the held business-key locks (a page; LocksNext its
	// cursor, the query parameter locks_after).
	Locks     []engine.Lock `json:"locks"`
	LocksNext string        `json:"locksNext,omitempty"`
	LocksPage string        `json:"-"`
	// Batches are the batches running or paused.
	Batches []engine.Batch `json:"batches"`
}

func (h *Handler) engineView(r *http.Request) (view, error) {
	ctx := r.Context()
	q := r.URL.Query()
	after, err := queryInt64(q, "locks_after")
	if err != nil {
		return view{}, err
	}
	d := enginePage{Settings: h.eng.Settings(), Stats: h.eng.Stats()}
	locks, err := h.eng.Locks(ctx, engine.LockFilter{State: engine.LockHeld, After: after, Limit: 50})
	if err != nil {
		return view{}, err
	}
	d.Locks = append([]engine.Lock{}, locks.Locks...)
	if locks.Next != 0 {
		d.LocksNext = strconv.FormatInt(locks.Next, 10)
		d.LocksPage = "/engine?locks_after=" + d.LocksNext
	}
	batches, err := h.eng.Batches(ctx, engine.BatchFilter{States: []engine.BatchState{engine.BatchRunning, engine.BatchPaused}, Limit: 100})
	if err != nil {
		return view{}, err
	}
	d.Batches = append([]engine.Batch{}, batches.Batches...)
	return view{Title: "Engine", Data: d}, nil
}

// batchList is the data of the batch list.
type batchList struct {
	Batches  []engine.Batch       `json:"batches"`
	Next     string               `json:"next,omitempty"`
	NextPage string               `json:"-"`
	States   []engine.BatchState  `json:"-"`
	Actions  []engine.BatchAction `json:"-"`
}

// batchStates are the batch states a filter offers.
var batchStates = []engine.BatchState{engine.BatchRunning, engine.BatchPaused, engine.BatchCompleted, engine.BatchCancelled, engine.BatchFailed}

// batchesView lists batches, oldest first: query parameters state and
// action (repeatable), after (the cursor) and limit (default 50).
func (h *Handler) batchesView(r *http.Request) (view, error) {
	q := r.URL.Query()
	f := engine.BatchFilter{}
	for _, s := range q["state"] {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(batchStates, engine.BatchState(s)) {
			return view{}, badRequest("no batch state %q (want one of %v)", s, batchStates)
		}
		f.States = append(f.States, engine.BatchState(s))
	}
	for _, a := range q["action"] {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if !slices.Contains(engine.BatchActions, engine.BatchAction(a)) {
			return view{}, badRequest("no batch action %q (want one of %v)", a, engine.BatchActions)
		}
		f.Actions = append(f.Actions, engine.BatchAction(a))
	}
	var err error
	if f.After, err = queryInt64(q, "after"); err != nil {
		return view{}, err
	}
	if f.Limit, err = queryInt(q, "limit"); err != nil {
		return view{}, err
	}
	f.Limit = cmp.Or(f.Limit, 50)
	page, err := h.eng.Batches(r.Context(), f)
	if err != nil {
		return view{}, err
	}
	out := batchList{Batches: append([]engine.Batch{}, page.Batches...), States: batchStates, Actions: engine.BatchActions}
	if page.Next != 0 {
		out.Next = strconv.FormatInt(page.Next, 10)
		out.NextPage = nextPage("/batches", q, out.Next)
	}
	return view{Title: "Batches", Data: out}, nil
}

// batchDetail is one batch with its progress and failures.
type batchDetail struct {
	Batch engine.Batch `json:"batch"`
	// Failures are the instances it skipped or failed on (a page;
	// FailuresNext its cursor, the query parameter failures_after).
	Failures     []engine.BatchFailure `json:"failures"`
	FailuresNext string                `json:"failuresNext,omitempty"`
	FailuresPage string                `json:"-"`
}

// Percent is how much of the batch is processed, 0 to 100.
func (d batchDetail) Percent() int64 {
	if d.Batch.Total == 0 {
		return 100
	}
	return min(100, d.Batch.Processed()*100/d.Batch.Total)
}

func (h *Handler) batchView(r *http.Request) (view, error) {
	ctx := r.Context()
	id, err := pathID(r, "id")
	if err != nil {
		return view{}, err
	}
	after, err := queryInt64(r.URL.Query(), "failures_after")
	if err != nil {
		return view{}, err
	}
	b, err := h.eng.Batch(ctx, id)
	if err != nil {
		return view{}, err
	}
	fails, err := h.eng.BatchFailures(ctx, engine.BatchFailureFilter{Batch: id, After: after, Limit: 100})
	if err != nil {
		return view{}, err
	}
	d := batchDetail{Batch: b, Failures: append([]engine.BatchFailure{}, fails.Failures...)}
	if fails.Next != 0 {
		d.FailuresNext = strconv.FormatInt(fails.Next, 10)
		d.FailuresPage = fmt.Sprintf("/batches/%d?failures_after=%s", id, d.FailuresNext)
	}
	return view{Title: fmt.Sprintf("Batch %d", id), Data: d}, nil
}
