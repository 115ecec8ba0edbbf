package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/goxpdl/goxpdl/scheduler"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/wftype"
)

// Bulk actions (docs/operations.md, "Bulk actions"). A batch applies one
// operator command to every process instance an InstanceFilter selects,
// in the background: a runner of one engine node at a time (it claims
// the batch in goxpdl_batches) walks the selection in ascending instance
// id, a chunk at a time, gives each instance the command (Suspend,
// Resume, Terminate, RetryActivity, Migrate, on the normal commit lane),
// and commits the chunk's progress (the cursor: the last instance id
// done; the counts; the failures) with a fence on its claim. A restart,
// or another node after this one died, continues at the cursor.
//
// Suspend and terminate, which call no application, go Config.BatchPerTx
// instances to a database transaction, each instance in a savepoint of
// its own (commandMany): its own load, its own version fence, its own
// history; one whose command fails is rolled back alone and then given
// its command again in a transaction of its own, as the other actions
// always are, so that a conflict is retried as for any command and a
// failure is that instance's alone. Config.BatchParallel runs several
// transactions (or commands) of a chunk at once.

// BatchAction is the command a batch gives each selected instance.
type BatchAction string

// The batch actions.
const (
	// BatchSuspend suspends Running instances (Suspend).
	BatchSuspend BatchAction = "suspend"
	// BatchResume resumes Suspended instances (Resume).
	BatchResume BatchAction = "resume"
	// BatchTerminate terminates Running and Suspended instances
	// (Terminate).
	BatchTerminate BatchAction = "terminate"
	// BatchRetry retries every Abnormal activity of Running instances
	// (RetryActivity), which resolves their incidents.
	BatchRetry BatchAction = "retry"
	// BatchMigrate migrates instances to another version of their
	// package (Migrate, with BatchRequest.Migration).
	BatchMigrate BatchAction = "migrate"
)

// BatchActions lists the batch actions.
var BatchActions = []BatchAction{BatchSuspend, BatchResume, BatchTerminate, BatchRetry, BatchMigrate}

// BatchState is where a batch is in its life: Running (waiting for a
// runner or in its hands), Paused (by an operator; no runner takes it),
// and the final states Cancelled (by an operator), Completed (every
// selected instance was processed) and Failed (it could not go on; its
// Error says why).
type BatchState string

// The batch states.
const (
	BatchRunning   BatchState = store.BatchRunning
	BatchPaused    BatchState = store.BatchPaused
	BatchCancelled BatchState = store.BatchCancelled
	BatchCompleted BatchState = store.BatchCompleted
	BatchFailed    BatchState = store.BatchFailed
)

// IsFinal reports whether a batch in state s is over.
func (s BatchState) IsFinal() bool {
	return s == BatchCancelled || s == BatchCompleted || s == BatchFailed
}

// Record types of batches: a chunk's progress was committed; a batch
// ended (State is Completed, Failed or Cancelled) or was let go (Paused,
// or its runner stopped). Record.Batch names the batch, Detail the
// counts.
const (
	RecordBatchProgress = "batch.progress"
	RecordBatchStopped  = "batch.stopped"
)

// ErrBadBatch: a BatchRequest names an unknown action, lacks or has a
// Migration that does not fit its action, or limits its filter; nothing
// was started.
var ErrBadBatch = errors.New("invalid batch request")

// BatchRequest asks for a batch.
type BatchRequest struct {
	// Action is the command given to each instance.
	Action BatchAction
	// Filter selects the instances. Its After starts the walk after that
	// instance id; its Limit must be 0 (a batch takes every instance the
	// filter selects) and its Cursor "" (a batch walks in id order; Sort
	// is ignored).
	Filter InstanceFilter
	// Op is who asks and why; each instance's command carries it, its
	// Data with "batch": the batch's id added.
	Op Op
	// Migration is where BatchMigrate moves each instance; required for
	// it and refused for the other actions. Its typed Variables cannot be
	// kept with the batch (JSON loses their Go types): give them as
	// Variables.TextVariables.
	Migration *Migration
}

// Batch is a bulk action and its progress.
type Batch struct {
	ID        int64          `json:"id"`
	Action    BatchAction    `json:"action"`
	Filter    InstanceFilter `json:"filter"`
	Migration *Migration     `json:"migration,omitempty"`
	// Actor, Reason and Data are the Op of the request.
	Actor  string         `json:"actor"`
	Reason string         `json:"reason,omitempty"`
	Data   map[string]any `json:"data,omitempty"`
	State  BatchState     `json:"state"`
	// Total is how many instances the filter selected when the batch
	// started. MaxInstance is the highest of their ids: instances created
	// later are never selected (ids grow with time; one created on
	// another node within the nodes' clock skew of the start may be).
	Total       int64 `json:"total"`
	MaxInstance int64 `json:"maxInstance"`
	// Cursor is the id of the last instance processed.
	Cursor int64 `json:"cursor"`
	// Done counts the instances the command was applied to; Skipped,
	// those where it no longer applied (the instance had moved to another
	// state, or had nothing to retry); Failed, those where it failed.
	// Instances that stopped matching the filter before their turn are in
	// none of them, so the three may add up to less than Total.
	Done    int64 `json:"done"`
	Skipped int64 `json:"skipped"`
	Failed  int64 `json:"failed"`
	// Error says why a Failed batch stopped; Note who paused, resumed or
	// cancelled it last, and why.
	Error string `json:"error,omitempty"`
	Note  string `json:"note,omitempty"`
	// Owner is the engine run working on it ("" when none).
	Owner     string     `json:"owner,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
}

// Processed is how many instances the batch has processed.
func (b Batch) Processed() int64 { return b.Done + b.Skipped + b.Failed }

// BatchFilter selects batches. Zero fields do not filter.
type BatchFilter struct {
	States  []BatchState
	Actions []BatchAction
	// After is the cursor: the Next of the previous page.
	After int64
	// Limit is the page size; default 100, at most 1000.
	Limit int
}

// BatchPage is one page of batches, oldest first. Next is the cursor of
// the next page; 0 when this is the last.
type BatchPage struct {
	Batches []Batch `json:"batches"`
	Next    int64   `json:"next,omitempty"`
}

// BatchFailure is an instance a batch skipped or failed on.
type BatchFailure struct {
	ID       int64     `json:"id"`
	Instance int64     `json:"instance"`
	Skipped  bool      `json:"skipped,omitempty"`
	Error    string    `json:"error"`
	At       time.Time `json:"at"`
}

// BatchFailureFilter selects the failures of a batch.
type BatchFailureFilter struct {
	// Batch is the batch; required.
	Batch int64
	// After is the cursor: the Next of the previous page.
	After int64
	// Limit is the page size; default 100, at most 1000.
	Limit int
}

// BatchFailurePage is one page of a batch's failures, oldest first.
type BatchFailurePage struct {
	Failures []BatchFailure `json:"failures"`
	Next     int64          `json:"next,omitempty"`
}

// DefaultBatchChunk is the default Config.BatchChunk.
const DefaultBatchChunk = 100

// DefaultBatchPerTx is the default Config.BatchPerTx.
const DefaultBatchPerTx = 20

// maxBatchFailures is how many failures (skipped and failed instances)
// a batch keeps with their errors; the counts go on beyond it.
const maxBatchFailures = 1000

// encodeFilter is the JSON of f as kept with a batch: every field, so
// that a field added to InstanceFilter is kept without a change here
// (a batch must never select more than its filter).
func encodeFilter(f InstanceFilter) []byte { return mustJSON(f) }

func decodeFilter(b []byte) (InstanceFilter, error) {
	var f InstanceFilter
	err := json.Unmarshal(b, &f)
	return f, err
}

// check refuses a request that cannot run (ErrBadBatch, ErrBadFilter,
// ErrBadArgument for Op.Data, ErrNotFound for a migration's target).
func (e *Engine) checkBatch(ctx context.Context, req BatchRequest) error {
	switch {
	case !slices.Contains(BatchActions, req.Action):
		return fmt.Errorf("%w: unknown action %q (want one of %v)", ErrBadBatch, req.Action, BatchActions)
	case req.Filter.Cursor != "":
		return fmt.Errorf("%w: Filter.Cursor is set; a batch walks in id order from Filter.After (its Sort is ignored)", ErrBadBatch)
	case req.Filter.Limit != 0:
		return fmt.Errorf("%w: Filter.Limit is %d; a batch takes every instance its filter selects", ErrBadBatch, req.Filter.Limit)
	case req.Action == BatchMigrate && req.Migration == nil:
		return fmt.Errorf("%w: a migrate batch needs a Migration", ErrBadBatch)
	case req.Action != BatchMigrate && req.Migration != nil:
		return fmt.Errorf("%w: a %s batch takes no Migration", ErrBadBatch, req.Action)
	case req.Migration != nil && len(req.Migration.Variables.Variables) > 0:
		return fmt.Errorf("%w: a batch cannot keep typed Migration.Variables; give them as Variables.TextVariables", ErrBadBatch)
	}
	if _, err := req.Filter.params(); err != nil {
		return err
	}
	if err := req.Op.check(); err != nil {
		return err
	}
	if req.Migration != nil {
		if _, err := e.definition(ctx, e.store, req.Migration.To); errors.Is(err, store.ErrNotFound) {
			return notFound("definition", req.Migration.To)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// StartBatch starts a bulk action over the instances req.Filter selects
// and returns the batch: Running, or Completed at once when the filter
// selects nothing. The selection is fixed by instance id as the batch
// starts (the highest id selected bounds it; Total counts it); each
// instance is looked at again when its turn comes and is processed if it
// still matches the filter. The batch runs in the background on a
// started engine of the database (this one, or another node), and goes on
// after a restart. A bad request is refused (ErrBadBatch, ErrBadFilter,
// ErrBadArgument for Op.Data, ErrNotFound for a migration to an unknown
// deployment) and nothing is started.
func (e *Engine) StartBatch(ctx context.Context, req BatchRequest) (Batch, error) {
	a := e.audit(ctx, req.Op, audited{action: AuditBatchStart, kind: TargetBatch})
	a.detail("%s", req.Action)
	b, err := e.startBatch(ctx, req, a)
	return b, a.end(ctx, nil, err)
}

func (e *Engine) startBatch(ctx context.Context, req BatchRequest, a *auditing) (Batch, error) {
	if err := e.checkBatch(ctx, req); err != nil {
		return Batch{}, err
	}
	params, _ := req.Filter.params()
	params.Limit = 1000
	var total, maxID int64
	for {
		rows, err := e.store.ListProcessInstances(ctx, params)
		if err != nil {
			return Batch{}, err
		}
		total += int64(len(rows))
		if len(rows) > 0 {
			maxID = rows[len(rows)-1].ID
			params.AfterID = maxID
		}
		if len(rows) < params.Limit {
			break
		}
	}
	now := e.now()
	row := store.Batch{
		Action: string(req.Action), Filter: encodeFilter(req.Filter), Actor: req.Op.actor("host"),
		Reason: req.Op.Reason, State: store.BatchRunning, Total: total, MaxInstanceID: maxID,
		Cursor: req.Filter.After, CreatedAt: now, UpdatedAt: now,
	}
	if len(req.Op.Data) > 0 {
		row.Data = mustJSON(req.Op.Data)
	}
	if req.Migration != nil {
		row.Params = mustJSON(req.Migration)
	}
	if total == 0 {
		row.State, row.EndedAt = store.BatchCompleted, &now
	}
	a.detail("%s of %d instances", req.Action, total)
	var stored store.Batch
	err := e.store.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		if row.ID, err = e.ids.Next(ctx); err != nil {
			return err
		}
		if stored, err = tx.InsertBatch(ctx, row); err != nil {
			return err
		}
		return a.okOn(ctx, tx, idText(stored.ID), 0)
	})
	if err != nil {
		return Batch{}, err
	}
	if e.batches != nil && total > 0 {
		e.batches.Now()
	}
	return batchOf(stored)
}

// batchOf is the API's view of a stored batch.
func batchOf(row store.Batch) (Batch, error) {
	b := Batch{
		ID: row.ID, Action: BatchAction(row.Action), Actor: row.Actor, Reason: row.Reason, State: BatchState(row.State),
		Total: row.Total, MaxInstance: row.MaxInstanceID, Cursor: row.Cursor, Done: row.Done, Skipped: row.Skipped,
		Failed: row.Failed, Error: row.Error, Note: row.Note, Owner: row.Owner,
		CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt, EndedAt: row.EndedAt,
	}
	var err error
	if b.Filter, err = decodeFilter(row.Filter); err != nil {
		return b, fmt.Errorf("batch %d: its filter does not decode: %w", row.ID, err)
	}
	if len(row.Data) > 0 {
		if err := json.Unmarshal(row.Data, &b.Data); err != nil {
			return b, fmt.Errorf("batch %d: its data do not decode: %w", row.ID, err)
		}
	}
	if len(row.Params) > 0 {
		b.Migration = &Migration{}
		if err := json.Unmarshal(row.Params, b.Migration); err != nil {
			return b, fmt.Errorf("batch %d: its migration does not decode: %w", row.ID, err)
		}
	}
	return b, nil
}

// Batch returns a batch with its progress (ErrNotFound when there is
// none).
func (e *Engine) Batch(ctx context.Context, id int64) (Batch, error) {
	row, err := e.store.GetBatch(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return Batch{}, notFound("batch", id)
	} else if err != nil {
		return Batch{}, err
	}
	return batchOf(row)
}

// Batches lists the batches the filter selects, one page at a time.
func (e *Engine) Batches(ctx context.Context, f BatchFilter) (BatchPage, error) {
	if err := checkPage(f.After, f.Limit); err != nil {
		return BatchPage{}, err
	}
	limit := pageLimit(f.Limit)
	params := store.ListBatchesParams{AfterID: f.After, Limit: limit + 1}
	for _, s := range f.States {
		params.States = append(params.States, string(s))
	}
	for _, a := range f.Actions {
		params.Actions = append(params.Actions, string(a))
	}
	rows, err := e.store.ListBatches(ctx, params)
	if err != nil {
		return BatchPage{}, err
	}
	var page BatchPage
	if len(rows) > limit {
		rows = rows[:limit]
		page.Next = rows[limit-1].ID
	}
	for _, row := range rows {
		b, err := batchOf(row)
		if err != nil {
			return BatchPage{}, err
		}
		page.Batches = append(page.Batches, b)
	}
	return page, nil
}

// BatchFailures lists the instances a batch skipped or failed on, with
// why (the first 1000 of them; the counts go on).
func (e *Engine) BatchFailures(ctx context.Context, f BatchFailureFilter) (BatchFailurePage, error) {
	if err := checkPage(f.After, f.Limit); err != nil {
		return BatchFailurePage{}, err
	}
	if _, err := e.Batch(ctx, f.Batch); err != nil {
		return BatchFailurePage{}, err
	}
	limit := pageLimit(f.Limit)
	rows, err := e.store.ListBatchFailures(ctx, store.ListBatchFailuresParams{BatchID: f.Batch, AfterID: f.After, Limit: limit + 1})
	if err != nil {
		return BatchFailurePage{}, err
	}
	var page BatchFailurePage
	if len(rows) > limit {
		rows = rows[:limit]
		page.Next = rows[limit-1].ID
	}
	for _, r := range rows {
		page.Failures = append(page.Failures, BatchFailure{ID: r.ID, Instance: r.ProcessInstanceID, Skipped: r.Skipped, Error: r.Error, At: r.At})
	}
	return page, nil
}

// CancelBatch stops a Running or Paused batch for good. The chunk a
// runner is working on finishes (its instances are counted); nothing
// after it is done. A finished batch refuses (ErrIllegalState).
func (e *Engine) CancelBatch(ctx context.Context, id int64, op Op) (Batch, error) {
	return e.setBatchState(ctx, id, op, AuditBatchCancel, []string{store.BatchRunning, store.BatchPaused}, store.BatchCancelled)
}

// PauseBatch pauses a Running batch: the chunk a runner is working on
// finishes, and no runner takes the batch until ResumeBatch. Any other
// state refuses (ErrIllegalState).
func (e *Engine) PauseBatch(ctx context.Context, id int64, op Op) (Batch, error) {
	return e.setBatchState(ctx, id, op, AuditBatchPause, []string{store.BatchRunning}, store.BatchPaused)
}

// ResumeBatch lets a Paused batch run again from its cursor. Any other
// state refuses (ErrIllegalState).
func (e *Engine) ResumeBatch(ctx context.Context, id int64, op Op) (Batch, error) {
	b, err := e.setBatchState(ctx, id, op, AuditBatchResume, []string{store.BatchPaused}, store.BatchRunning)
	if err == nil && e.batches != nil {
		e.batches.Now()
	}
	return b, err
}

// setBatchState is an operator's change of a batch's state, audited as
// action (whose verb names the command in a refusal).
func (e *Engine) setBatchState(ctx context.Context, id int64, op Op, action AuditAction, from []string, to string) (Batch, error) {
	a := e.audit(ctx, op, audited{action: action, kind: TargetBatch, target: idText(id)})
	if err := op.check(); err != nil {
		return Batch{}, a.end(ctx, nil, err)
	}
	note := op.actor("host")
	if op.Reason != "" {
		note += ": " + op.Reason
	}
	var (
		row store.Batch
		err error
	)
	// A deadlock (or another transient error) matches store.ErrConflict
	// as a batch in another state does; it is tried again rather than
	// refused with a state the batch is not in.
	for attempt := 0; attempt == 0 || transientDBError(err) && attempt <= maxConflictRetries; attempt++ {
		err = e.store.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			if row, err = tx.SetBatchState(ctx, store.SetBatchStateParams{ID: id, From: from, To: to, Note: note, Now: e.now()}); err != nil {
				return err
			}
			a.detail("%s: %d of %d done", row.Action, row.Done+row.Skipped+row.Failed, row.Total)
			return a.ok(ctx, tx)
		})
	}
	switch {
	case transientDBError(err):
		// Still failing: the database's error, as it is.
	case errors.Is(err, store.ErrNotFound):
		err = notFound("batch", id)
	case errors.Is(err, store.ErrConflict):
		_, cmd, _ := strings.Cut(string(action), ".")
		err = &wftype.StateError{Subject: "batch", State: row.State, Command: cmd}
	}
	if err != nil {
		return Batch{}, a.end(ctx, nil, err)
	}
	return batchOf(row)
}

// bulkKey marks the context of a batch's commands: they take a normal
// commit lane, so that the engine's own process control keeps the
// critical one (command.go).
type bulkKey struct{}

// bulk reports whether ctx is a batch's.
func bulk(ctx context.Context) bool { return ctx.Value(bulkKey{}) != nil }

// runBatches is the batch runner's work (a timer.Periodic started by
// Start): it claims Running batches one after another and runs each
// until it ends, is paused or cancelled, or ctx ends.
func (e *Engine) runBatches(ctx context.Context) {
	for ctx.Err() == nil && !e.replaced.Load() {
		row, err := e.store.ClaimBatch(ctx, store.ClaimBatchParams{Owner: e.owner, Now: e.now()})
		if errors.Is(err, store.ErrNotFound) || ctx.Err() != nil {
			return
		}
		if err != nil {
			e.log.Warn("claiming a batch failed; the runner looks again later", "err", err)
			return
		}
		if !e.runBatch(ctx, row) {
			return
		}
	}
}

// batchRun is one batch in a runner's hands.
type batchRun struct {
	e     *Engine
	row   store.Batch
	b     Batch
	op    Op
	chunk int
}

// runBatch runs a claimed batch chunk by chunk and reports whether the
// runner may go on to the next batch.
func (e *Engine) runBatch(ctx context.Context, row store.Batch) bool {
	keep := context.WithoutCancel(ctx) // progress and release are written even as the runner stops
	b, err := batchOf(row)
	params, perr := b.Filter.params()
	err = errors.Join(err, perr)
	if !slices.Contains(BatchActions, b.Action) {
		err = errors.Join(err, fmt.Errorf("unknown action %q", b.Action))
	} else if (b.Action == BatchMigrate) != (b.Migration != nil) {
		err = errors.Join(err, fmt.Errorf("a %s batch with migration %v", b.Action, b.Migration))
	}
	if err != nil {
		e.finishBatch(keep, row, store.BatchProgressParams{Finish: store.BatchFailed, Error: err.Error()})
		return true
	}
	data := maps.Clone(b.Data)
	if data == nil {
		data = map[string]any{}
	}
	data["batch"] = b.ID
	br := &batchRun{e: e, row: row, b: b, op: Op{Actor: b.Actor, Reason: b.Reason, Data: data}, chunk: e.cfg.BatchChunk}
	ctx = context.WithValue(ctx, bulkKey{}, true)
	for {
		params.AfterID, params.Limit = br.row.Cursor, br.chunk
		rows, err := e.store.ListProcessInstances(ctx, params)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("reading a batch's next chunk failed; the runner looks again later", "batch", b.ID, "err", err)
			}
			e.releaseBatch(keep, br.row)
			return false
		}
		last := len(rows) < br.chunk
		for i, r := range rows {
			if r.ID > br.row.MaxInstanceID {
				rows, last = rows[:i], true
				break
			}
		}
		prog := store.BatchProgressParams{ID: b.ID, Owner: e.owner, Cursor: br.row.Cursor}
		results := br.applyChunk(ctx, rows)
		for i, r := range rows {
			failure, outcome := results[i].failure, results[i].outcome
			if results[i].cut {
				last = false // this instance's command was cut off: the next run does it again
				break
			}
			switch outcome {
			case batchDone:
				prog.Done++
			case batchSkipped:
				prog.Skipped++
			case batchFailed:
				prog.Failed++
			}
			if outcome != batchDone && br.row.Skipped+br.row.Failed+prog.Skipped+prog.Failed <= maxBatchFailures {
				prog.Failures = append(prog.Failures, store.BatchFailure{ProcessInstanceID: r.ID,
					Skipped: outcome == batchSkipped, Error: failure, At: e.now()})
			}
			prog.Cursor = r.ID
		}
		if last {
			prog.Finish = store.BatchCompleted
		}
		prog.Now = e.now()
		next, err := e.recordBatchProgress(keep, prog)
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			e.log.Warn("a batch was taken from this node; another runs it", "batch", b.ID)
			return ctx.Err() == nil
		case err != nil:
			e.log.Warn("recording a batch's progress failed; its last chunk is done again", "batch", b.ID, "err", err)
			e.releaseBatch(keep, br.row)
			return false
		}
		br.row = next
		if next.State != store.BatchRunning || last || ctx.Err() != nil {
			if next.Owner != "" {
				e.releaseBatch(keep, next)
			} else {
				e.publishBatch(next, RecordBatchStopped)
			}
			return ctx.Err() == nil
		}
		e.publishBatch(next, RecordBatchProgress)
		// An operator's pause or cancel takes effect before the next chunk.
		if cur, err := e.store.GetBatch(ctx, b.ID); err == nil && cur.State != store.BatchRunning {
			e.releaseBatch(keep, cur)
			return true
		}
	}
}

// finishBatch ends a batch that cannot run.
func (e *Engine) finishBatch(ctx context.Context, row store.Batch, prog store.BatchProgressParams) {
	prog.ID, prog.Owner, prog.Cursor, prog.Now = row.ID, e.owner, row.Cursor, e.now()
	next, err := e.recordBatchProgress(ctx, prog)
	if err != nil {
		e.log.Warn("ending a batch failed", "batch", row.ID, "err", err)
		return
	}
	e.log.Error("batch failed", "batch", row.ID, "error", prog.Error)
	e.publishBatch(next, RecordBatchStopped)
}

// recordBatchProgress records what a chunk did, its failures with ids of
// the engine's.
func (e *Engine) recordBatchProgress(ctx context.Context, prog store.BatchProgressParams) (store.Batch, error) {
	for i := range prog.Failures {
		var err error
		if prog.Failures[i].ID, err = e.ids.Next(ctx); err != nil {
			return store.Batch{}, err
		}
	}
	return e.store.UpdateBatchProgress(ctx, prog)
}

// releaseBatch lets go of a batch this runner holds.
func (e *Engine) releaseBatch(ctx context.Context, row store.Batch) {
	if err := e.store.ReleaseBatch(ctx, row.ID, e.owner); err != nil {
		e.log.Warn("releasing a batch failed; it is released when this node leaves", "batch", row.ID, "err", err)
	}
	row.Owner = ""
	e.publishBatch(row, RecordBatchStopped)
}

// publishBatch tells observers of a batch's progress.
func (e *Engine) publishBatch(row store.Batch, typ string) {
	e.publish([]Record{{Time: e.now(), Type: typ, Batch: row.ID, State: row.State,
		Detail: fmt.Sprintf("%s: %d of %d (done %d, skipped %d, failed %d)", row.Action,
			row.Done+row.Skipped+row.Failed, row.Total, row.Done, row.Skipped, row.Failed)}})
}

// batchOutcome is what a batch's command did to one instance.
type batchOutcome int

const (
	batchDone batchOutcome = iota
	batchSkipped
	batchFailed
)

// batchResult is what a chunk's command did to one instance.
type batchResult struct {
	failure string
	outcome batchOutcome
	cut     bool // the runner was stopping: not done, or not for sure
}

// applyChunk gives a chunk's instances the batch's command: suspend and
// terminate BatchPerTx instances to a transaction (applyGroup), the
// other actions one instance to a transaction (apply); BatchParallel of
// them at once.
func (br *batchRun) applyChunk(ctx context.Context, rows []store.ProcessInstance) []batchResult {
	results := make([]batchResult, len(rows))
	per := 1
	if br.b.Action == BatchSuspend || br.b.Action == BatchTerminate {
		per = max(1, min(br.e.cfg.BatchPerTx, len(rows)))
	}
	if per == 1 {
		scheduler.ForEach(len(rows), br.e.cfg.BatchParallel, func(i int) {
			if ctx.Err() == nil {
				results[i].failure, results[i].outcome = br.apply(ctx, rows[i])
			}
			results[i].cut = ctx.Err() != nil
		})
		return results
	}
	groups := (len(rows) + per - 1) / per
	scheduler.ForEach(groups, br.e.cfg.BatchParallel, func(g int) {
		lo, hi := g*per, min((g+1)*per, len(rows))
		br.applyGroup(ctx, rows[lo:hi], results[lo:hi])
	})
	return results
}

// applyGroup gives instances the batch's suspend or terminate in one
// transaction (commandMany). An instance whose command was refused
// because it no longer applies is skipped; one whose command failed
// otherwise (a conflict with the engine's own progress, anything else),
// or all of them when the transaction failed, get the command again,
// each in a transaction of its own (apply), whose outcome is theirs.
func (br *batchRun) applyGroup(ctx context.Context, rows []store.ProcessInstance, results []batchResult) {
	if ctx.Err() != nil {
		for i := range results {
			results[i].cut = true
		}
		return
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	fn := (*run).terminate
	if br.b.Action == BatchSuspend {
		fn = (*run).suspend
	}
	errs, _ := br.e.commandMany(ctx, ids, br.op, fn) // a failed transaction's instances are errNotRun
	for i, row := range rows {
		if !errors.Is(errs[i], errNotRun) {
			if failure, outcome := outcomeOf(errs[i]); outcome != batchFailed {
				results[i].failure, results[i].outcome = failure, outcome
				continue
			}
		}
		if ctx.Err() == nil {
			results[i].failure, results[i].outcome = br.apply(ctx, row)
		}
		results[i].cut = ctx.Err() != nil
	}
}

// apply gives one instance the batch's command. A refusal because the
// instance is no longer in a state the command applies to is a skip.
func (br *batchRun) apply(ctx context.Context, row store.ProcessInstance) (string, batchOutcome) {
	e, id := br.e, row.ID
	var err error
	switch br.b.Action {
	case BatchSuspend:
		err = e.Suspend(ctx, id, br.op)
	case BatchResume:
		err = e.Resume(ctx, id, br.op)
	case BatchTerminate:
		err = e.Terminate(ctx, id, br.op)
	case BatchMigrate:
		if row.DefinitionID == br.b.Migration.To {
			return fmt.Sprintf("already runs from definition %d", row.DefinitionID), batchSkipped
		}
		err = e.Migrate(ctx, id, *br.b.Migration, br.op)
	case BatchRetry:
		return br.retry(ctx, row)
	default:
		return fmt.Sprintf("unknown action %q", br.b.Action), batchFailed
	}
	return outcomeOf(err)
}

// retry retries every Abnormal activity of an instance.
func (br *batchRun) retry(ctx context.Context, row store.ProcessInstance) (string, batchOutcome) {
	acts, err := br.e.store.ListActivityInstances(ctx, store.ListActivityInstancesParams{
		ProcessInstanceID: row.ID, States: []string{string(wftype.ActivityAbnormal)},
	})
	if err != nil {
		return err.Error(), batchFailed
	}
	if len(acts) == 0 {
		return fmt.Sprintf("process instance is %s with no Abnormal activity to retry", row.State), batchSkipped
	}
	var msgs []string
	outcome := batchSkipped
	for _, a := range acts {
		msg, o := outcomeOf(br.e.RetryActivity(ctx, row.ID, a.ID, br.op))
		if o != batchDone {
			msgs = append(msgs, fmt.Sprintf("activity instance %d (%s): %s", a.ID, a.ActivityDefID, msg))
		}
		outcome = min(outcome, o) // done wins over skipped
		if o == batchFailed {
			outcome = batchFailed
		}
	}
	if outcome == batchFailed {
		return strings.Join(msgs, "; "), batchFailed
	}
	if outcome == batchDone {
		return "", batchDone
	}
	return strings.Join(msgs, "; "), batchSkipped
}

// outcomeOf classifies a command's error.
func outcomeOf(err error) (string, batchOutcome) {
	switch {
	case err == nil:
		return "", batchDone
	case errors.Is(err, ErrIllegalState), errors.Is(err, ErrNotFound):
		return err.Error(), batchSkipped
	}
	return err.Error(), batchFailed
}
