package engine_test

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/datadriven"

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
		for _, inc := range page.Incidents {
			fmt.Fprintf(out, "incident %s %s", s.alias(inc.Instance), inc.Cause)
			if inc.Activity != "" {
				fmt.Fprintf(out, " %s", inc.Activity)
			}
			fmt.Fprintf(out, " attempts=%d error=%q\n", inc.Attempts, firstLine(inc.Error))
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
func (s *spec) batch(action engine.BatchAction, op engine.Op, out *strings.Builder) error {
	wake := make(chan struct{}, 1)
	unsubscribe := s.e.Subscribe(func(r engine.Record) {
		if r.Batch != 0 {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	})
	defer unsubscribe()
	b, err := s.e.StartBatch(s.ctx, engine.BatchRequest{Action: action, Filter: engine.InstanceFilter{Package: s.latest.PackageID}, Op: op})
	if err != nil {
		return err
	}
	for !b.State.IsFinal() || b.Owner != "" { // a runner may still hold a batch it ended
		select {
		case <-wake:
		case <-s.ctx.Done():
			return fmt.Errorf("batch %d never ended: %+v", b.ID, b)
		}
		if b, err = s.e.Batch(s.ctx, b.ID); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "batch %s %s: done %d, skipped %d, failed %d\n", b.Action, b.State, b.Done, b.Skipped, b.Failed)
	page, err := s.e.BatchFailures(s.ctx, engine.BatchFailureFilter{Batch: b.ID})
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
	s.settle()
	s.mu.Lock()
	s.records = slices.DeleteFunc(s.records, func(r engine.Record) bool { return r.Instance == 0 })
	s.mu.Unlock()
	return nil
}

// openActivity is the id of the latest instance of activity def of
// process instance id that has not completed.
func (s *spec) openActivity(id int64, def string) (int64, error) {
	acts, err := activitiesOf(s.look, s.e, id)
	if err != nil {
		return 0, err
	}
	for _, a := range slices.Backward(acts) {
		if a.Activity == def && a.State != wftype.ActivityCompleted {
			return a.ID, nil
		}
	}
	return 0, fmt.Errorf("no open instance of activity %s in %s", def, s.alias(id))
}
