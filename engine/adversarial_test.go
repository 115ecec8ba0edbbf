package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/internal/adversary"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// The adversarial suite's named scenarios (docs/testing.md): each runs on
// SQLite and, when GOXPDL_MYSQL_DSN is set, MySQL/MariaDB, and asserts the
// typed error of every refusal and that a refusal changes nothing. The
// randomised part is internal/adversary.

// adv is an engine for the adversarial scenarios: the package of
// internal/adversary deployed (Review, Chase, Book, Approve), its
// organisation (clerks ann, bob, cy; eve holds no role), book counting its
// committed calls, and a fake clock.
type adv struct {
	*harness
	clock *timer.Fake
	dep   engine.Deployment
	calls atomic.Int64 // calls of book, committed or not
}

func newAdv(t *testing.T, db *gorm.DB, configure ...func(*engine.Config)) *adv {
	t.Helper()
	dir, err := adversary.Directory()
	require.NoError(t, err)
	clock := timer.NewFake(adversary.DefaultStart)
	a := &adv{clock: clock}
	cfgs := append([]func(*engine.Config){func(c *engine.Config) {
		c.Clock, c.Directory, c.RescueInterval, c.NodeID = clock, dir, -1, "adv"
	}}, configure...)
	a.harness = newHarness(t, db, cfgs...)
	require.NoError(t, db.Exec("CREATE TABLE adversary_bookings (instance_id BIGINT NOT NULL, activity_instance_id BIGINT NOT NULL, call_key VARCHAR(255) NOT NULL)").Error)
	a.e.RegisterApplication("book", a.book)
	a.start()
	a.dep = a.deploy(string(adversary.Source(1)))
	return a
}

func (a *adv) book(ctx context.Context, c *engine.Call) (map[string]any, error) {
	a.calls.Add(1)
	if n, _ := c.Params["amount"].(int64); n < 0 {
		return nil, fmt.Errorf("amount %d declined", n)
	}
	return nil, c.Tx.WithContext(ctx).Exec("INSERT INTO adversary_bookings (instance_id, activity_instance_id, call_key) VALUES (?, ?, ?)",
		c.ProcessInstanceID, c.ActivityInstanceID, c.IdempotencyKey).Error
}

// complete completes a work item as ann, a clerk.
func (a *adv) complete(id int64, outputs map[string]any) error {
	_, err := a.e.CompleteWorkItem(a.ctx, id, engine.Completion{User: "ann", Outputs: outputs})
	return err
}

// bookings counts the committed bookings of an instance.
func (a *adv) bookings(id int64) int {
	a.t.Helper()
	var n int
	require.NoError(a.t, a.db.Raw("SELECT COUNT(*) FROM adversary_bookings WHERE instance_id = ?", id).Scan(&n).Error)
	return n
}

// run starts an instance and waits until it waits for Review.
func (a *adv) run(vars map[string]any) (int64, engine.WorkItem) {
	a.t.Helper()
	id := a.startProcess(adversary.PackageID, "", vars)
	items := a.openItems(id)
	require.Len(a.t, items, 1)
	require.Equal(a.t, adversary.ActReview, items[0].Activity)
	return id, items[0]
}

// snapshot is what a refused command must leave as it was.
type snapshot struct {
	instance  engine.ProcessInstance
	vars      map[string]any
	items     []engine.WorkItem
	acts      []engine.ActivityInstance
	history   int
	auditOK   int
	instances int
}

func (a *adv) snapshot(id int64) snapshot {
	a.t.Helper()
	a.idle()
	var s snapshot
	var err error
	if id != 0 {
		s.instance, err = a.e.Instance(a.ctx, id)
		require.NoError(a.t, err)
		s.vars = a.vars(id)
		s.items, err = workItemsOf(a.ctx, a.e, engine.WorkItemFilter{Instance: id})
		require.NoError(a.t, err)
		s.acts, err = activitiesOf(a.ctx, a.e, id)
		require.NoError(a.t, err)
		s.history = len(a.history(id))
	}
	ok, err := a.e.Audit(a.ctx, engine.AuditFilter{Results: []engine.AuditResult{engine.AuditOK}, Limit: 1000})
	require.NoError(a.t, err)
	s.auditOK = len(ok.Entries)
	n, err := a.e.CountInstances(a.ctx, engine.InstanceFilter{}, 1<<20)
	require.NoError(a.t, err)
	s.instances = int(n.N)
	return s
}

// refused gives a command that must be refused with want and checks that
// it changed nothing of instance id (and created no instance, and wrote
// no successful audit entry).
func (a *adv) refused(id int64, want error, what string, cmd func() error) {
	a.t.Helper()
	before := a.snapshot(id)
	err := cmd()
	require.ErrorIs(a.t, err, want, what)
	after := a.snapshot(id)
	require.Equal(a.t, before, after, "%s: the refusal changed something", what)
}

// TestAdversarialRace: 20 goroutines complete the same work item at
// once. Exactly one wins; each of the others gets ErrIllegalState (the
// item is Completed by the time it looks) or ErrNotAllowed (it read the
// item before the winner committed, and its write found it changed), never
// an untyped error. The history shows one completion, Book ran once, and
// the process moved on once. The same for 20 claims.
func TestAdversarialRace(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		a := newAdv(t, db)
		for _, claim := range []bool{false, true} {
			id, wi := a.run(map[string]any{"amount": int64(7)})
			errs := make([]error, 20)
			users := make([]string, 20)
			var wg sync.WaitGroup
			gate := make(chan struct{})
			for j := range errs {
				users[j] = adversary.Clerks[j%len(adversary.Clerks)]
				wg.Go(func() {
					<-gate
					if claim {
						errs[j] = a.e.ClaimWorkItem(a.ctx, wi.ID, users[j], engine.Op{})
					} else {
						_, errs[j] = a.e.CompleteWorkItem(a.ctx, wi.ID, engine.Completion{User: users[j], Outputs: map[string]any{"note": "by " + users[j]}})
					}
				})
			}
			close(gate)
			wg.Wait()
			winner, kinds := -1, map[string]int{}
			for j, err := range errs {
				switch {
				case err == nil:
					require.Equal(t, -1, winner, "two goroutines won")
					winner = j
				case errors.Is(err, engine.ErrIllegalState):
					// The item is Completed (a *workitem.TransitionError), or
					// its activity is no longer waiting (a *wftype.StateError).
					kinds["ErrIllegalState"]++
				case errors.Is(err, engine.ErrNotAllowed):
					var we *engine.WorkItemError
					require.ErrorAs(t, err, &we)
					kinds["ErrNotAllowed"]++
				default:
					t.Fatalf("goroutine %d: %v is neither ErrIllegalState nor ErrNotAllowed", j, err)
				}
			}
			require.GreaterOrEqual(t, winner, 0, "nobody won: %v", errs)
			t.Logf("claim=%v: the losers' errors: %v", claim, kinds)
			got, err := a.e.WorkItem(a.ctx, wi.ID)
			require.NoError(t, err)
			if claim {
				require.Equal(t, workitem.Allocated, got.State)
				require.Equal(t, users[winner], got.Owner)
				continue
			}
			require.Equal(t, workitem.Completed, got.State)
			require.Equal(t, users[winner], got.CompletedBy)
			require.Equal(t, "by "+users[winner], a.vars(id)["note"])
			completions := 0
			for _, h := range a.history(id) {
				if h.Subject == engine.SubjectWorkItem && h.To == string(workitem.Completed) {
					completions++
				}
			}
			require.Equal(t, 1, completions, "one completion in the history")
			require.Equal(t, 1, a.bookings(id), "Book ran once")
			items := a.openItems(id)
			require.Len(t, items, 1, "the process moved on once")
			require.Equal(t, adversary.ActApprove, items[0].Activity)
			require.Equal(t, map[string]int{adversary.ActBegin: 1, adversary.ActReview: 1, adversary.ActBook: 1, adversary.ActApprove: 1}, a.started(id))
		}
	})
}

// TestAdversarialWrongStates gives every command in every state it must
// refuse, and checks the typed error and that nothing changed (the
// instance, its variables, work items, activities and history, and no
// command is audited as done).
func TestAdversarialWrongStates(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		a := newAdv(t, db)
		op := engine.Op{Actor: "ops", Reason: "adversarial"}
		const nobody = int64(1 << 40)

		// Instances in every process state, and work items in every state.
		running, offered := a.run(nil)
		allocatedID, allocated := a.run(nil)
		require.NoError(t, a.e.ClaimWorkItem(a.ctx, allocated.ID, "ann", engine.Op{}))
		startedID, started := a.run(nil)
		require.NoError(t, a.e.ClaimWorkItem(a.ctx, started.ID, "ann", engine.Op{}))
		require.NoError(t, a.e.StartWorkItem(a.ctx, started.ID, "ann", engine.Op{}))
		suspended, suspendedItem := a.run(nil)
		require.NoError(t, a.e.Suspend(a.ctx, suspended, op))
		terminated, withdrawn := a.run(nil)
		require.NoError(t, a.e.Terminate(a.ctx, terminated, op))
		completed, review := a.run(map[string]any{"ok": true})
		require.NoError(t, a.complete(review.ID, nil))
		approve := a.openItems(completed)[0]
		require.NoError(t, a.complete(approve.ID, nil))
		a.requireState(completed, wftype.ProcessCompleted)
		abnormal, declined := a.run(map[string]any{"amount": int64(-1)})
		require.NoError(t, a.complete(declined.ID, nil))
		a.idle()
		acts, err := activitiesOf(a.ctx, a.e, abnormal)
		require.NoError(t, err)
		book := acts[len(acts)-1]
		require.Equal(t, wftype.ActivityAbnormal, book.State)
		loopedID, looped := a.run(nil) // Review completed once: Approve is open
		require.NoError(t, a.complete(looped.ID, nil))
		a.deploy(xpdltest.Graph("A B", "A>B?x > 1")) // x is 0: the branch is lost
		locking := a.startProcess("pkg", "", nil)
		a.requireState(locking, wftype.ProcessLocking)
		reviewAct := offered.ActivityInstance

		type cmd struct {
			name string
			do   func(id, item, act int64) error
			// audited commands write a refused entry; it is not an ok one.
		}
		suspend := cmd{"Suspend", func(id, _, _ int64) error { return a.e.Suspend(a.ctx, id, op) }}
		resume := cmd{"Resume", func(id, _, _ int64) error { return a.e.Resume(a.ctx, id, op) }}
		terminate := cmd{"Terminate", func(id, _, _ int64) error { return a.e.Terminate(a.ctx, id, op) }}
		setVars := cmd{"SetVariables", func(id, _, _ int64) error {
			return a.e.SetVariables(a.ctx, id, engine.Values{Variables: map[string]any{"note": "x"}}, op)
		}}
		retry := cmd{"RetryActivity", func(id, _, act int64) error { return a.e.RetryActivity(a.ctx, id, act, op) }}
		skip := cmd{"SkipActivity", func(id, _, act int64) error { return a.e.SkipActivity(a.ctx, id, act, engine.Values{}, op) }}
		jump := cmd{"Jump", func(id, _, _ int64) error { return a.e.Jump(a.ctx, id, adversary.ActApprove, op) }}
		rollback := cmd{"Rollback", func(id, _, _ int64) error { return a.e.Rollback(a.ctx, id, adversary.ActReview, op) }}
		migrate := cmd{"Migrate", func(id, _, _ int64) error { return a.e.Migrate(a.ctx, id, engine.Migration{To: a.dep.ID}, op) }}
		withdraw := cmd{"Withdraw", func(_, item, _ int64) error { return a.e.Withdraw(a.ctx, item, "ann", op) }}
		claim := cmd{"ClaimWorkItem", func(_, item, _ int64) error { return a.e.ClaimWorkItem(a.ctx, item, "bob", engine.Op{}) }}
		startItem := cmd{"StartWorkItem", func(_, item, _ int64) error { return a.e.StartWorkItem(a.ctx, item, "bob", engine.Op{}) }}
		release := cmd{"ReleaseWorkItem", func(_, item, _ int64) error { return a.e.ReleaseWorkItem(a.ctx, item, "bob", engine.Op{}) }}
		delegate := cmd{"DelegateWorkItem", func(_, item, _ int64) error { return a.e.DelegateWorkItem(a.ctx, item, "bob", "cy", engine.Op{}) }}
		reassign := cmd{"ReassignWorkItem", func(_, item, _ int64) error {
			return a.e.ReassignWorkItem(a.ctx, item, "admin", []engine.Principal{{Kind: "user", ID: "cy"}}, op)
		}}
		completeItem := cmd{"CompleteWorkItem", func(_, item, _ int64) error {
			_, err := a.e.CompleteWorkItem(a.ctx, item, engine.Completion{User: "bob"})
			return err
		}}
		instanceCmds := []cmd{suspend, resume, terminate, setVars, retry, skip, jump, rollback, migrate}
		itemCmds := []cmd{claim, startItem, release, delegate, reassign, completeItem, withdraw}

		cases := []struct {
			state    string
			id, item int64
			act      int64
			cmds     []cmd
			want     error
		}{
			// Finished instances refuse everything with ErrInstanceFinished.
			{"Completed", completed, approve.ID, approve.ActivityInstance, append(slices.Clone(instanceCmds), itemCmds...), engine.ErrInstanceFinished},
			{"Terminated", terminated, withdrawn.ID, withdrawn.ActivityInstance, append(slices.Clone(instanceCmds), itemCmds...), engine.ErrInstanceFinished},
			{"Locking", locking, 0, 0, []cmd{suspend, resume, terminate}, engine.ErrInstanceFinished},
			// Unknown ids.
			{"unknown instance", nobody, nobody, nobody, append(slices.Clone(instanceCmds), itemCmds...), engine.ErrNotFound},
			{"unknown activity", running, offered.ID, nobody, []cmd{retry, skip}, engine.ErrNotFound},
			{"activity of another instance", abnormal, declined.ID, reviewAct, []cmd{retry, skip}, engine.ErrWrongInstance},
			// Running, its Review offered.
			{"Running", running, offered.ID, reviewAct, []cmd{resume, retry, skip}, engine.ErrIllegalState},
			{"Running, migrated to its own version", running, offered.ID, reviewAct, []cmd{migrate}, engine.ErrCannotMigrate},
			{"Running, Review never completed", running, offered.ID, reviewAct, []cmd{rollback}, engine.ErrCannotMove},
			{"Offered item", running, offered.ID, reviewAct, []cmd{startItem, release, delegate}, engine.ErrIllegalState},
			{"Offered item, not completed by the user", running, offered.ID, reviewAct, []cmd{withdraw}, engine.ErrNotAllowed},
			{"Allocated item", allocatedID, allocated.ID, allocated.ActivityInstance, []cmd{claim}, engine.ErrIllegalState},
			{"Allocated to someone else", allocatedID, allocated.ID, allocated.ActivityInstance, []cmd{startItem, release, delegate, completeItem}, engine.ErrNotAllowed},
			{"Started item", startedID, started.ID, started.ActivityInstance, []cmd{claim}, engine.ErrIllegalState},
			{"Started by someone else", startedID, started.ID, started.ActivityInstance, []cmd{release, delegate, completeItem}, engine.ErrNotAllowed},
			{"Completed item", loopedID, looped.ID, looped.ActivityInstance, []cmd{claim, startItem, release, delegate, reassign, completeItem}, engine.ErrIllegalState},
			{"Completed item, its successor ran", loopedID, looped.ID, looped.ActivityInstance, []cmd{withdraw}, engine.ErrCannotMove},
			{"Suspended", suspended, suspendedItem.ID, suspendedItem.ActivityInstance, []cmd{suspend, retry, skip, claim, startItem, release, delegate, reassign, completeItem}, engine.ErrIllegalState},
			{"Abnormal activity, process Suspended", 0, 0, 0, nil, nil}, // set below
		}
		// An Abnormal Book of a suspended instance refuses retry and skip.
		stuck, stuckItem := a.run(map[string]any{"amount": int64(-2)})
		require.NoError(t, a.complete(stuckItem.ID, nil))
		a.idle()
		stuckActs, err := activitiesOf(a.ctx, a.e, stuck)
		require.NoError(t, err)
		require.NoError(t, a.e.Suspend(a.ctx, stuck, op))
		cases[len(cases)-1] = struct {
			state    string
			id, item int64
			act      int64
			cmds     []cmd
			want     error
		}{"Abnormal activity, process Suspended", stuck, 0, stuckActs[len(stuckActs)-1].ID, []cmd{retry, skip}, engine.ErrIllegalState}

		n := 0
		for _, c := range cases {
			for _, cm := range c.cmds {
				id := c.id
				if id == nobody {
					id = 0 // nothing to compare but the counts
				}
				a.refused(id, c.want, c.state+": "+cm.name, func() error { return cm.do(c.id, c.item, c.act) })
				n++
			}
		}
		// Every refused operator command is in the audit log as refused.
		refused, err := a.e.Audit(a.ctx, engine.AuditFilter{Results: []engine.AuditResult{engine.AuditRefused}, Limit: 1000})
		require.NoError(t, err)
		require.NotEmpty(t, refused.Entries)
		t.Logf("%d refusals checked, %d audited as refused", n, len(refused.Entries))
		_ = book
	})
}

// TestAdversarialVariables gives values of the wrong type for every basic
// type, and unknown names, to every command that takes values, as Go
// values and as text: a typed error, and nothing written.
func TestAdversarialVariables(t *testing.T) {
	t.Parallel()
	bad := []struct {
		name string
		v    any
		want error
	}{
		{"amount", "12", engine.ErrWrongType}, {"amount", 1.5, engine.ErrWrongType}, {"amount", true, engine.ErrWrongType},
		{"amount", math.NaN(), engine.ErrWrongType}, {"amount", []any{1}, engine.ErrWrongType},
		{"amount", 1e19, engine.ErrWrongType}, {"amount", uint64(math.MaxUint64), engine.ErrWrongType}, {"amount", math.Inf(1), engine.ErrWrongType},
		{"rate", "fast", engine.ErrWrongType}, {"rate", math.NaN(), engine.ErrWrongType}, {"rate", math.Inf(-1), engine.ErrWrongType},
		{"ok", "yes", engine.ErrWrongType}, {"ok", int64(1), engine.ErrWrongType},
		{"note", int64(42), engine.ErrWrongType}, {"note", "a\xffb", engine.ErrWrongType}, {"note", map[string]any{"a": 1}, engine.ErrWrongType},
		{"nope", int64(1), engine.ErrUnknownVariable}, {"Amount", int64(1), engine.ErrUnknownVariable},
		{"", "x", engine.ErrUnknownVariable}, {"amount'; DROP TABLE goxpdl_variables; --", int64(1), engine.ErrUnknownVariable},
	}
	badText := []struct {
		name, v string
		want    error
	}{
		{"amount", "twelve", engine.ErrWrongType}, {"amount", "1.5", engine.ErrWrongType}, {"amount", "99999999999999999999", engine.ErrWrongType},
		{"amount", "9.3e18", engine.ErrWrongType}, {"amount", "-1e19", engine.ErrWrongType},
		{"rate", "1e400", engine.ErrWrongType}, {"rate", "NaN", engine.ErrWrongType}, {"ok", "maybe", engine.ErrWrongType},
		{"note", "a\xffb", engine.ErrWrongType}, {"nope", "1", engine.ErrUnknownVariable},
	}
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		a := newAdv(t, db)
		id, wi := a.run(nil)
		abnormal, declined := a.run(map[string]any{"amount": int64(-1)})
		require.NoError(t, a.complete(declined.ID, nil))
		a.idle()
		acts, err := activitiesOf(a.ctx, a.e, abnormal)
		require.NoError(t, err)
		book := acts[len(acts)-1].ID
		for _, b := range bad {
			what := fmt.Sprintf("%s=%#v", b.name, b.v)
			vars := map[string]any{b.name: b.v, "amount": int64(3)}
			if b.name == "amount" {
				vars = map[string]any{b.name: b.v}
			}
			a.refused(0, b.want, "StartProcess "+what, func() error {
				_, err := a.e.StartProcess(a.ctx, engine.StartOptions{Package: adversary.PackageID, Variables: vars})
				return err
			})
			a.refused(id, b.want, "SetVariables "+what, func() error {
				return a.e.SetVariables(a.ctx, id, engine.Values{Variables: vars}, engine.Op{})
			})
			a.refused(id, b.want, "CompleteWorkItem "+what, func() error {
				_, err := a.e.CompleteWorkItem(a.ctx, wi.ID, engine.Completion{User: "ann", Outputs: vars})
				return err
			})
			a.refused(abnormal, b.want, "SkipActivity "+what, func() error {
				return a.e.SkipActivity(a.ctx, abnormal, book, engine.Values{Variables: vars}, engine.Op{})
			})
		}
		for _, b := range badText {
			what := fmt.Sprintf("text %s=%q", b.name, b.v)
			text := map[string]string{b.name: b.v}
			a.refused(0, b.want, "StartProcess "+what, func() error {
				_, err := a.e.StartProcess(a.ctx, engine.StartOptions{Package: adversary.PackageID, TextVariables: text})
				return err
			})
			a.refused(id, b.want, "SetVariables "+what, func() error {
				return a.e.SetVariables(a.ctx, id, engine.Values{TextVariables: text}, engine.Op{})
			})
			a.refused(id, b.want, "CompleteWorkItem "+what, func() error {
				_, err := a.e.CompleteWorkItem(a.ctx, wi.ID, engine.Completion{User: "ann", TextOutputs: text})
				return err
			})
		}
		// Each refusal says which variable, with a *VariableError.
		_, err = a.e.StartProcess(a.ctx, engine.StartOptions{Package: adversary.PackageID, Variables: map[string]any{"rate": math.Inf(1)}})
		var ve *engine.VariableError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "rate", ve.Name)
	})
}

// TestAdversarialLargeValues: a value up to MaxValueBytes is kept whole
// on every database (MariaDB's max_allowed_packet is 16 MiB by default,
// and SetVariables writes the old and the new value to the history); a
// larger one, a 10 MB one, and values larger together are refused with
// ErrTooLarge on every database, and nothing is written.
func TestAdversarialLargeValues(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		a := newAdv(t, db)
		limit := strings.Repeat("z", engine.MaxValueBytes-2) // its JSON has the quotes
		id := a.startProcess(adversary.PackageID, "", map[string]any{"note": limit})
		require.Equal(t, limit, a.vars(id)["note"])
		other := strings.Repeat("y", engine.MaxValueBytes-2)
		require.NoError(t, a.e.SetVariables(a.ctx, id, engine.Values{Variables: map[string]any{"note": other}}, engine.Op{}))
		require.Equal(t, other, a.vars(id)["note"])
		hist := a.history(id)
		last := hist[len(hist)-1]
		require.Equal(t, engine.SubjectVariable, last.Subject)
		require.Equal(t, limit, last.Old)
		require.Equal(t, other, last.New)
		wi := a.openItems(id)[0]
		_, err := a.e.CompleteWorkItem(a.ctx, wi.ID, engine.Completion{User: "ann", Outputs: map[string]any{"note": limit}})
		require.NoError(t, err)

		tenMB := strings.Repeat("x", 10<<20)
		over := strings.Repeat("x", engine.MaxValueBytes-1)
		escaped := strings.Repeat("\x00", engine.MaxValueBytes/5) // six bytes each in JSON
		id2, wi2 := a.run(nil)
		for name, v := range map[string]string{"10 MB": tenMB, "one byte over": over, "escaped over": escaped} {
			a.refused(0, engine.ErrTooLarge, "StartProcess "+name, func() error {
				_, err := a.e.StartProcess(a.ctx, engine.StartOptions{Package: adversary.PackageID, Variables: map[string]any{"note": v}})
				return err
			})
			a.refused(id2, engine.ErrTooLarge, "SetVariables "+name, func() error {
				return a.e.SetVariables(a.ctx, id2, engine.Values{TextVariables: map[string]string{"note": v}}, engine.Op{})
			})
			a.refused(id2, engine.ErrTooLarge, "CompleteWorkItem "+name, func() error {
				_, err := a.e.CompleteWorkItem(a.ctx, wi2.ID, engine.Completion{User: "ann", Outputs: map[string]any{"note": v}})
				return err
			})
		}
		half := strings.Repeat("h", engine.MaxValueBytes/2)
		a.refused(0, engine.ErrTooLarge, "two values over the limit together", func() error {
			_, err := a.e.StartProcess(a.ctx, engine.StartOptions{Package: adversary.PackageID, Variables: map[string]any{"note": half, "memo": half}})
			return err
		})
		a.refused(id2, engine.ErrTooLarge, "two outputs over the limit together", func() error {
			_, err := a.e.CompleteWorkItem(a.ctx, wi2.ID, engine.Completion{User: "ann", Outputs: map[string]any{"note": half, "memo": half}})
			return err
		})
		_, err = a.e.StartProcess(a.ctx, engine.StartOptions{Package: adversary.PackageID, Variables: map[string]any{"note": tenMB}})
		var ve *engine.VariableError
		require.ErrorAs(t, err, &ve)
		require.Less(t, len(err.Error()), 1000, "the message does not carry the value")
	})
}

// hostileStrings are texts that must come back byte for byte, or be
// refused with a typed error, the same way on every database.
var hostileStrings = map[string]string{
	"quotes":         `it's "quoted" \ back\slash`,
	"sql":            `'; DROP TABLE goxpdl_process_instances; --`,
	"nul":            "a\x00b",
	"invalid UTF-8":  "a\xff\xfeb",
	"lone surrogate": "\xed\xa0\x80",
	"emoji":          "🙂 ünïcödé ☃ 𝄞 👩‍👩‍👧",
	"control":        "line\nbreak\ttab\r\x1b[31m",
	"percent":        "100%_off\\%",
	"255 bytes":      strings.Repeat("é", 127) + "x",
	"256 bytes":      strings.Repeat("é", 128),
	"64 KiB":         strings.Repeat("k", 64<<10),
}

// hostileOutcomes holds, per database, what each field did with each
// string, to compare the databases when both ran.
var hostileOutcomes sync.Map

// TestAdversarialHostileStrings gives hostile strings as business keys,
// idempotency keys, STRING variables, reasons, actors, users, performers
// (principals) and an application's error: each comes back byte for byte
// or is refused with ErrBadArgument (a *TextError) or ErrWrongType, and every
// database does the same.
func TestAdversarialHostileStrings(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start() // resource.Anyone: any user may take the items
		h.deploy(string(adversary.Source(1)))
		failing := make(chan string, 1)
		h.e.RegisterApplication("book", func(context.Context, *engine.Call) (map[string]any, error) {
			return nil, errors.New(<-failing)
		})
		outcomes := map[string]string{}
		record := func(field, name string, err error, same bool) {
			t.Helper()
			key := field + " " + name
			switch {
			case err == nil:
				require.True(t, same, "%s: accepted but changed", key)
				outcomes[key] = "kept"
			case errors.Is(err, engine.ErrBadArgument) || errors.Is(err, engine.ErrWrongType):
				outcomes[key] = "refused"
			default:
				t.Fatalf("%s: %v is not a typed refusal", key, err)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(hostileStrings)) {
			s := hostileStrings[name]
			before := h.countRows()
			id, err := h.e.StartProcess(h.ctx, engine.StartOptions{Package: adversary.PackageID, BusinessKey: s})
			same := err == nil && h.instance(id).BusinessKey == s
			if err != nil {
				require.Equal(t, before, h.countRows(), "a refused start writes nothing")
			}
			record("business key", name, err, same)

			id, err = h.e.StartProcess(h.ctx, engine.StartOptions{Package: adversary.PackageID, IdempotencyKey: s})
			record("idempotency key", name, err, err == nil && h.instance(id).StartKey == s)
			if err == nil {
				again, err := h.e.StartProcess(h.ctx, engine.StartOptions{Package: adversary.PackageID, IdempotencyKey: s})
				require.NoError(t, err)
				require.Equal(t, id, again, "the key finds its instance")
			}

			id, err = h.e.StartProcess(h.ctx, engine.StartOptions{Package: adversary.PackageID, Variables: map[string]any{"note": s}})
			record("STRING variable", name, err, err == nil && h.vars(id)["note"] == s)

			id = h.startProcess(adversary.PackageID, "", map[string]any{"amount": int64(-1)})
			wi := h.openItems(id)[0] // running: it may be suspended
			err = h.e.Suspend(h.ctx, id, engine.Op{Reason: s})
			record("reason", name, err, err == nil && lastEntry(h, id).Reason == s)
			if err == nil {
				require.NoError(t, h.e.Resume(h.ctx, id, engine.Op{}))
			}
			err = h.e.Suspend(h.ctx, id, engine.Op{Actor: s})
			record("actor", name, err, err == nil && lastEntry(h, id).Actor == strings.TrimSpace(s))
			if err == nil {
				require.NoError(t, h.e.Resume(h.ctx, id, engine.Op{}))
			}
			err = h.e.Suspend(h.ctx, id, engine.Op{Data: map[string]any{"ticket": s}})
			record("Op.Data", name, err, err == nil && lastEntry(h, id).Data["ticket"] == s)
			if err == nil {
				require.NoError(t, h.e.Resume(h.ctx, id, engine.Op{}))
			}

			err = h.e.ReassignWorkItem(h.ctx, wi.ID, "admin", []engine.Principal{{Kind: "user", ID: s}}, engine.Op{})
			got, _ := h.e.WorkItem(h.ctx, wi.ID)
			record("performer", name, err, err == nil && len(got.Assignees) == 1 && got.Assignees[0].ID == s)
			err = h.e.ClaimWorkItem(h.ctx, wi.ID, s, engine.Op{})
			got, _ = h.e.WorkItem(h.ctx, wi.ID)
			record("user (claim)", name, err, err == nil && got.Owner == s)
			user := s
			if err != nil {
				user = "ann"
			}
			failing <- s // Book, which the completion runs, fails with it
			_, err = h.e.CompleteWorkItem(h.ctx, wi.ID, engine.Completion{User: user, IdempotencyKey: s})
			got, _ = h.e.WorkItem(h.ctx, wi.ID)
			record("completion key", name, err, err == nil && got.CompletedBy == user)
			if err != nil {
				_, err = h.e.CompleteWorkItem(h.ctx, wi.ID, engine.Completion{User: user})
				require.NoError(t, err)
			}
			// Book fails with the string as its error: the activity is
			// Abnormal with a diagnosis on every database.
			h.idle()
			acts, err := activitiesOf(h.ctx, h.e, id)
			require.NoError(t, err)
			last := acts[len(acts)-1]
			require.Equal(t, wftype.ActivityAbnormal, last.State, "application error %s", name)
			diag := strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
			require.Equal(t, diag[:min(len(diag), 16<<10)], last.Diagnosis, "the error is the diagnosis, its invalid bytes and NULs replaced, cut at 16 KiB")
		}
		hostileOutcomes.Store(t.Name(), outcomes)
		for _, k := range slices.Sorted(maps.Keys(outcomes)) {
			t.Logf("%s: %s", k, outcomes[k])
		}
	})
	sqlite, _ := hostileOutcomes.Load(t.Name() + "/SQLite")
	for _, other := range []string{"MySQL", "Postgres"} {
		if outcomes, ok := hostileOutcomes.Load(t.Name() + "/" + other); ok && sqlite != nil {
			require.Equal(t, sqlite, outcomes, "SQLite and %s keep and refuse the same strings", other)
		}
	}
}

// lastEntry is the newest history entry of an instance.
func lastEntry(h *harness, id int64) engine.HistoryEntry {
	hist := h.history(id)
	return hist[len(hist)-1]
}

// countRows counts the rows of the engine's main tables.
func (h *harness) countRows() map[string]int64 {
	h.t.Helper()
	out := map[string]int64{}
	for _, table := range []string{"goxpdl_process_instances", "goxpdl_activity_instances", "goxpdl_variables", "goxpdl_work_items", "goxpdl_events", "goxpdl_history", "goxpdl_timers"} {
		var n int64
		require.NoError(h.t, h.db.Raw("SELECT COUNT(*) FROM "+table).Scan(&n).Error)
		out[table] = n
	}
	return out
}

// TestAdversarialConcurrentDeploy: the same package deployed from 10
// goroutines at once gets versions 1 to 10, each once.
func TestAdversarialConcurrentDeploy(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		src := adversary.Source(1)
		versions := make([]int, 10)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		for j := range versions {
			wg.Go(func() {
				<-gate
				d, err := h.e.Deploy(h.ctx, src)
				if err != nil {
					t.Errorf("deploy %d: %v", j, err)
					return
				}
				versions[j] = d.Version
			})
		}
		close(gate)
		wg.Wait()
		slices.Sort(versions)
		require.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, versions)
		vs, err := h.e.Versions(h.ctx, adversary.PackageID)
		require.NoError(t, err)
		require.Len(t, vs, 10)
	})
}

// TestAdversarialCancelledContext: a command given with a cancelled
// context fails with the context's error and writes nothing.
func TestAdversarialCancelledContext(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		a := newAdv(t, db)
		id, wi := a.run(nil)
		before := a.countRows()
		snap := a.snapshot(id)
		cancelled, cancel := context.WithCancel(a.ctx)
		cancel()
		_, err := a.e.StartProcess(cancelled, engine.StartOptions{Package: adversary.PackageID, Variables: map[string]any{"amount": int64(1)}})
		require.ErrorIs(t, err, context.Canceled)
		_, err = a.e.StartProcess(cancelled, engine.StartOptions{Package: adversary.PackageID, IdempotencyKey: "k"})
		require.ErrorIs(t, err, context.Canceled)
		_, err = a.e.CompleteWorkItem(cancelled, wi.ID, engine.Completion{User: "ann"})
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, a.e.Suspend(cancelled, id, engine.Op{}), context.Canceled)
		require.ErrorIs(t, a.e.SetVariables(cancelled, id, engine.Values{Variables: map[string]any{"note": "x"}}, engine.Op{}), context.Canceled)
		_, err = a.e.Deploy(cancelled, adversary.Source(2))
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, before, a.countRows(), "nothing written")
		require.Equal(t, snap, a.snapshot(id))
		// A context that runs out while the start waits for the database.
		expired, stop := context.WithDeadline(a.ctx, time.Unix(0, 0))
		defer stop()
		_, err = a.e.StartProcess(expired, engine.StartOptions{Package: adversary.PackageID})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, before, a.countRows(), "nothing written")
	})
}

// TestAdversarialStopWithWorkInFlight starts instances whose first step
// calls an application, stops the engine before it has run them, and
// starts a new engine on the database: every instance completes, and
// every call's business write is committed exactly once. The clock is a
// fake one, so that no claim of the stopped engine can run out: the new
// one takes the events at once, also on a private in-memory SQLite
// database (which has no node registry; it waited for the claims' lease
// before).
func TestAdversarialStopWithWorkInFlight(t *testing.T) {
	t.Parallel()
	const src = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="inflight" Name="inflight">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-01-01</Created></PackageHeader>
  <Applications><Application Id="book"/></Applications>
  <WorkflowProcesses><WorkflowProcess Id="p">
    <Activities>
      <Activity Id="A"><Implementation><Tool Id="book" Type="APPLICATION"/></Implementation></Activity>
      <Activity Id="B"><Implementation><Tool Id="book" Type="APPLICATION"/></Implementation></Activity>
    </Activities>
    <Transitions><Transition Id="t1" From="A" To="B"/></Transitions>
  </WorkflowProcess></WorkflowProcesses>
</Package>`
	run := func(t *testing.T, db *gorm.DB) {
		clock := timer.NewFake(adversary.DefaultStart)
		require.NoError(t, db.Exec("CREATE TABLE inflight_calls (instance_id BIGINT NOT NULL, activity VARCHAR(16) NOT NULL)").Error)
		var calls atomic.Int64
		app := func(ctx context.Context, c *engine.Call) (map[string]any, error) {
			calls.Add(1)
			return nil, c.Tx.WithContext(ctx).Exec("INSERT INTO inflight_calls (instance_id, activity) VALUES (?, ?)", c.ProcessInstanceID, c.ActivityID).Error
		}
		newEngine := func() *engine.Engine {
			e, err := engine.New(engine.Config{DB: db, Clock: clock, NodeID: "inflight", RescueInterval: -1, PollInterval: 20 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			require.NoError(t, err)
			e.RegisterApplication("book", app)
			require.NoError(t, e.Start(t.Context()))
			return e
		}
		first := newEngine()
		_, err := first.Deploy(t.Context(), []byte(src))
		require.NoError(t, err)
		const n = 50
		ids := make([]int64, n)
		for i := range ids {
			ids[i], err = first.StartProcess(t.Context(), engine.StartOptions{Package: "inflight"})
			require.NoError(t, err)
		}
		require.NoError(t, first.Stop(t.Context())) // with work in flight
		stoppedCalls := calls.Load()
		second := newEngine()
		defer func() { require.NoError(t, second.Stop(context.Background())) }()
		require.NoError(t, second.WaitQuiet(t.Context()))
		for _, id := range ids {
			pi, err := second.Instance(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, wftype.ProcessCompleted, pi.State, "instance %d", id)
			var rows []struct{ Activity string }
			require.NoError(t, db.Raw("SELECT activity FROM inflight_calls WHERE instance_id = ? ORDER BY activity", id).Scan(&rows).Error)
			require.Equal(t, []struct{ Activity string }{{"A"}, {"B"}}, rows, "instance %d: each call committed once", id)
			completed := map[string]int{}
			page, err := second.History(t.Context(), engine.HistoryFilter{Instance: id, Limit: 1000})
			require.NoError(t, err)
			for _, h := range page.Entries {
				if h.To == string(wftype.ActivityCompleted) {
					completed[h.Subject+" "+h.Activity]++
				}
			}
			require.Equal(t, map[string]int{"process ": 1, "activity A": 1, "activity B": 1}, completed, "instance %d: the history shows each step once", id)
		}
		t.Logf("%d calls before the stop, %d in all, %d committed", stoppedCalls, calls.Load(), 2*n)
	}
	dbtest.Each(t, run)
	t.Run("SQLite in memory", func(t *testing.T) { run(t, dbtest.OpenSQLiteMemory(t)) })
}

// TestAdversarialMovesWhileSuspended: the moves the adversary found
// broken. A Jump or Rollback of a Suspended instance is accepted (the
// open activity is cancelled; what the move starts waits for the
// resume), and a rolled-back manual activity goes, at the resume, to the
// user who completed it last. Withdraw finds the successors of a
// completion by creation, also when the clock did not move between them
// (a fake clock; two steps in one microsecond).
func TestAdversarialMovesWhileSuspended(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		a := newAdv(t, db)
		op := engine.Op{Actor: "ops"}
		id, review := a.run(nil)
		require.NoError(t, a.e.Suspend(a.ctx, id, op))
		require.NoError(t, a.e.Jump(a.ctx, id, adversary.ActApprove, op))
		require.Empty(t, a.openItems(id), "nothing is offered while Suspended")
		got, err := a.e.WorkItem(a.ctx, review.ID)
		require.NoError(t, err)
		require.Equal(t, workitem.Withdrawn, got.State, "the Review was cancelled")
		require.NoError(t, a.e.Resume(a.ctx, id, op))
		items := a.openItems(id)
		require.Len(t, items, 1)
		require.Equal(t, adversary.ActApprove, items[0].Activity)

		// Approve completed by bob loops back to Review; roll back to
		// Approve while Suspended: bob gets it at the resume.
		_, err = a.e.CompleteWorkItem(a.ctx, items[0].ID, engine.Completion{User: "bob"})
		require.NoError(t, err)
		require.Equal(t, adversary.ActReview, a.openItems(id)[0].Activity)
		require.NoError(t, a.e.Suspend(a.ctx, id, op))
		require.NoError(t, a.e.Rollback(a.ctx, id, adversary.ActApprove, op))
		require.NoError(t, a.e.Resume(a.ctx, id, op))
		items = a.openItems(id)
		require.Len(t, items, 1)
		require.Equal(t, adversary.ActApprove, items[0].Activity)
		require.Equal(t, []engine.Principal{{Kind: "user", ID: "bob"}}, items[0].Assignees)

		// The clock has not moved since the instance started: Withdraw
		// of Approve must not count the first Review as its successor.
		_, err = a.e.CompleteWorkItem(a.ctx, items[0].ID, engine.Completion{User: "bob"})
		require.NoError(t, err)
		require.NoError(t, a.e.Withdraw(a.ctx, items[0].ID, "bob", op))
		items = a.openItems(id)
		require.Len(t, items, 1)
		require.Equal(t, adversary.ActApprove, items[0].Activity)
		require.Equal(t, []engine.Principal{{Kind: "user", ID: "bob"}}, items[0].Assignees)
	})
}
