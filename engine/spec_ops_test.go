package engine_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// operate runs the spec's operator commands (docs/operations.md), each
// given by "ops" with the reason in reason=TEXT, on the current instance
// or instance=pN; it reports false for a command that is not one:
//
//	retry ACTIVITY              retry its Abnormal instance
//	skip ACTIVITY [k=v ...]     skip its Abnormal instance, setting k=v
//	jump ACTIVITY               free flow to it
//	rollback ACTIVITY           back to it
//	withdraw ACTIVITY [user=U]  take back the work item U completed
//	move [cancel=A,B] [start=C,D] [all] [k=v ...]
//	set k=v ...                 set variables
//	migrate [A=B ...]           to the latest deployment, mapping A to B
//	incidents                   the open incidents of every instance
//	batch ACTION                a batch (suspend, resume, terminate) over
//	                            every instance of the latest package
func (s *spec) operate(d *datadriven.TestData, out *strings.Builder) (bool, error) {
	op := engine.Op{Actor: "ops"}
	var args []datadriven.CmdArg
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "reason":
			op.Reason = strings.Join(a.Vals, ",")
		case "instance":
		default:
			args = append(args, a)
		}
	}
	id := s.instance(d)
	first := func() string {
		if len(args) == 0 {
			return ""
		}
		return args[0].Key
	}
	switch d.Cmd {
	case "retry", "skip":
		act, err := s.openActivity(id, first())
		if err != nil {
			return true, err
		}
		if d.Cmd == "retry" {
			return true, s.e.RetryActivity(s.ctx, id, act, op)
		}
		return true, s.e.SkipActivity(s.ctx, id, act, engine.Values{Variables: s.values(args[1:])}, op)
	case "jump":
		return true, s.e.Jump(s.ctx, id, first(), op)
	case "rollback":
		return true, s.e.Rollback(s.ctx, id, first(), op)
	case "withdraw":
		user := "clerk1"
		for _, a := range args[1:] {
			if a.Key == "user" {
				user = a.Vals[0]
			}
		}
		items, err := workItemsOf(s.look, s.e, engine.WorkItemFilter{Instance: id, States: []workitem.State{workitem.Completed}})
		if err != nil {
			return true, err
		}
		for _, wi := range slices.Backward(items) {
			if wi.Activity == first() {
				return true, s.e.Withdraw(s.ctx, wi.ID, user, op)
			}
		}
		return true, fmt.Errorf("no completed work item of activity %s", first())
	case "move":
		var m engine.Move
		var rest []datadriven.CmdArg
		for _, a := range args {
			switch a.Key {
			case "cancel":
				for _, name := range a.Vals {
					act, err := s.openActivity(id, name)
					if err != nil {
						return true, err
					}
					m.Cancel = append(m.Cancel, act)
				}
			case "start":
				m.Start = a.Vals
			case "all":
				m.CancelAll = true
			default:
				rest = append(rest, a)
			}
		}
		m.Variables.Variables = s.values(rest)
		return true, s.e.MoveInstance(s.ctx, id, m, op)
	case "set":
		return true, s.e.SetVariables(s.ctx, id, engine.Values{Variables: s.values(args)}, op)
	case "migrate":
		m := engine.Migration{To: s.latest.ID, Activities: map[string]string{}}
		for _, a := range args {
			m.Activities[a.Key] = strings.Join(a.Vals, ",")
		}
		return true, s.e.Migrate(s.ctx, id, m, op)
	case "batch":
		return true, s.batch(engine.BatchAction(first()), op, out)
	case "incidents":
		page, err := s.e.Incidents(s.look, engine.IncidentFilter{})
		if err != nil {
			return true, err
		}
		// By instance, in the order the script met them, each instance's
		// in id order: the ids of an engine the script restarted on its
		// fake clock, which stands still, may sort before those of the
		// engine before it, which ran ahead of the clock (package idgen).
		incs := page.Incidents
		slices.SortStableFunc(incs, func(a, b engine.Incident) int {
			return cmp.Compare(slices.Index(s.instances, a.Instance), slices.Index(s.instances, b.Instance))
		})
		for _, inc := range incs {
			fmt.Fprintf(out, "incident %s %s", s.alias(inc.Instance), inc.Cause)
			if inc.Activity != "" {
				fmt.Fprintf(out, " %s", inc.Activity)
			}
			fmt.Fprintf(out, " attempts=%d error=%q\n", inc.Attempts, s.named(firstLine(inc.Error)))
		}
		if len(page.Incidents) == 0 {
			out.WriteString("no incidents\n")
		}
		return true, nil
	}
	return false, nil
}

// batch starts a batch of action over every instance of the latest
// deployment's package, waits for it to end and prints its counts and
// the instances it skipped or failed. Suspend and terminate give up to
// Config.BatchPerTx instances one transaction, each in a savepoint of
// its own: one that is refused is rolled back alone. The batch's own
// records (no instance) are summed up by the counts.
//
// The wait is the engine's settling: WaitQuiet covers the batch runner
// told of the batch. Under the fault suite a fault may keep the batch
// from ending there: its start may fail (and a commit whose outcome is
// unknown may have stored it), or the runner may let go of it after a
// failed chunk and look again only at its next poll. The command then
// does what a host would: it starts the batch again unless it finds it
// stored, and moves the fake clock on by the runner's poll interval
// until the batch ends, a bounded number of times.
func (s *spec) batch(action engine.BatchAction, op engine.Op, out *strings.Builder) error {
	req := engine.BatchRequest{Action: action, Filter: engine.InstanceFilter{Package: s.latest.PackageID}, Op: op}
	b, err := s.startBatch(req)
	if err != nil {
		return err
	}
	for polls := 0; ; polls++ {
		s.settle()
		if b, err = s.e.Batch(s.look, b.ID); err != nil {
			return err
		}
		if b.State.IsFinal() && b.Owner == "" { // a runner may still hold a batch it ended
			break
		}
		if !s.faulty || polls == maxBatchPolls {
			require.Failf(s.t, "the batch never ended", "after %d polls of the runner: %+v", polls, b)
		}
		s.clock.Advance(s.batchPoll()) // the runner looks again
	}
	fmt.Fprintf(out, "batch %s %s: done %d, skipped %d, failed %d\n", b.Action, b.State, b.Done, b.Skipped, b.Failed)
	page, err := s.e.BatchFailures(s.look, engine.BatchFailureFilter{Batch: b.ID})
	if err != nil {
		return err
	}
	for _, f := range page.Failures {
		what := "failed"
		if f.Skipped {
			what = "skipped"
		}
		fmt.Fprintf(out, "%s %s\n", what, s.alias(f.Instance))
	}
	s.mu.Lock()
	s.records = slices.DeleteFunc(s.records, func(r engine.Record) bool { return r.Instance == 0 })
	s.mu.Unlock()
	return nil
}

// maxBatchPolls bounds how often the spec's batch command moves the
// clock on for the batch runner under the fault suite. One fault costs
// at most one let-go of the batch and so one poll; the rest is margin.
const maxBatchPolls = 10

// batchPoll is the batch runner's poll interval.
func (s *spec) batchPoll() time.Duration {
	if s.cfg.BatchPollInterval > 0 {
		return s.cfg.BatchPollInterval
	}
	return time.Second // Config.BatchPollInterval's default
}

// startBatch starts a batch. Under the fault suite a start that failed
// is looked for among the batches after the last one the script knows
// (a commit whose outcome was unknown may have stored it), and started
// again when it is not there, as a host would.
func (s *spec) startBatch(req engine.BatchRequest) (engine.Batch, error) {
	for attempt := 1; ; attempt++ {
		b, err := s.e.StartBatch(s.ctx, req)
		if err == nil || !s.faulty {
			if err == nil {
				s.lastBatch = b.ID
			}
			return b, err
		}
		s.heal()
		page, lerr := s.e.Batches(s.look, engine.BatchFilter{After: s.lastBatch})
		if lerr != nil {
			return engine.Batch{}, lerr
		}
		if len(page.Batches) > 0 {
			b = page.Batches[0]
			s.lastBatch = b.ID
			return b, nil
		}
		if attempt == 3 {
			return engine.Batch{}, err
		}
	}
}

// openActivity is the id of the latest instance of activity def of
// process instance id that has not completed, an Abnormal one first (a
// loop that failed while its instances are open).
func (s *spec) openActivity(id int64, def string) (int64, error) {
	acts, err := activitiesOf(s.look, s.e, id)
	if err != nil {
		return 0, err
	}
	for _, a := range slices.Backward(acts) {
		if a.Activity == def && a.State == wftype.ActivityAbnormal {
			return a.ID, nil
		}
	}
	for _, a := range slices.Backward(acts) {
		if a.Activity == def && a.State != wftype.ActivityCompleted {
			return a.ID, nil
		}
	}
	return 0, fmt.Errorf("no open instance of activity %s in %s", def, s.alias(id))
}
