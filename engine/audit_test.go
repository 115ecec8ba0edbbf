package engine_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl"
)

// auditLog reads every page of the audit entries f selects, newest
// first, two at a time (the cursor is walked too).
func (h *harness) auditLog(f engine.AuditFilter) []engine.AuditEntry {
	h.t.Helper()
	f.Limit = 2
	var out []engine.AuditEntry
	for {
		page, err := h.e.Audit(h.ctx, f)
		require.NoError(h.t, err)
		out = append(out, page.Entries...)
		if page.Next == "" {
			return out
		}
		require.Len(h.t, page.Entries, 2)
		f.After = page.Next
	}
}

// lines shows entries as "action result actor kind:id", oldest first.
func lines(entries []engine.AuditEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[len(out)-1-i] = fmt.Sprintf("%s %s %s %s:%s", e.Action, e.Result, e.Actor, e.TargetKind, e.TargetID)
	}
	return out
}

var auditEpoch = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// note is a business row of the host, written in its transaction around
// the engine's commands.
type note struct {
	ID    int64
	Title string
}

// auditHarness is a started engine on a fake clock at auditEpoch with
// package "orders" (chainPackage: manual A, B, C) deployed.
func auditHarness(t *testing.T, db *gorm.DB, configure ...func(*engine.Config)) (*harness, *timer.Fake) {
	t.Helper()
	clock := timer.NewFake(auditEpoch)
	h := newHarness(t, db, append([]func(*engine.Config){func(c *engine.Config) { c.Clock = clock }}, configure...)...).start()
	h.deploy(chainPackage("orders"))
	return h, clock
}

// Every operator command writes one entry, whether it is carried out or
// refused, with its actor, target, reason, data and result.
func TestAuditRecordsCommandsAndRefusals(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, _ := auditHarness(t, db)
		alice := engine.Op{Actor: "alice", Reason: "phone order", Data: map[string]any{"ticket": "T-1"}}
		id, err := h.e.StartProcess(h.ctx, engine.StartOptions{Package: "orders", Process: "p", BusinessKey: "order-7", Op: &alice})
		require.NoError(t, err)
		h.requireState(id, wftype.ProcessRunning)
		plain := h.startProcess("orders", "p", nil) // the host's own start: not audited
		h.idle()
		n := strconv.FormatInt(id, 10)

		require.NoError(t, h.e.Suspend(h.ctx, id, engine.Op{Actor: "alice"}))
		require.ErrorIs(t, h.e.Suspend(h.ctx, id, engine.Op{Actor: "alice"}), engine.ErrIllegalState)
		require.NoError(t, h.e.Resume(h.ctx, id, engine.Op{Actor: "bob", Reason: "customer called back"}))
		require.ErrorIs(t, h.e.Jump(h.ctx, id, "Nowhere", engine.Op{Actor: "carol"}), engine.ErrCannotMove)
		require.NoError(t, h.e.Jump(h.ctx, id, "C", engine.Op{Actor: "carol"}))
		c := h.openItem(id)
		require.Equal(t, "C", c.Activity)
		require.ErrorIs(t, h.e.RetryActivity(h.ctx, id, c.ActivityInstance, engine.Op{Actor: "carol"}), engine.ErrIllegalState)
		require.ErrorIs(t, h.e.SetVariables(h.ctx, id, engine.Values{Variables: map[string]any{"nope": 1}}, engine.Op{Actor: "dave"}),
			engine.ErrUnknownVariable)
		require.ErrorIs(t, h.e.Suspend(h.ctx, id, engine.Op{Actor: "dave", Data: map[string]any{"f": func() {}}}), engine.ErrBadArgument)
		require.NoError(t, h.e.Terminate(h.ctx, id, engine.Op{}))
		require.ErrorIs(t, h.e.Terminate(h.ctx, id, engine.Op{Actor: "erin"}), engine.ErrInstanceFinished)
		require.ErrorIs(t, h.e.Suspend(h.ctx, 999999, engine.Op{Actor: "erin"}), engine.ErrNotFound)
		_, err = h.e.StartProcess(h.ctx, engine.StartOptions{Package: "nope", Op: &engine.Op{Actor: "frank"}})
		require.ErrorIs(t, err, engine.ErrNotFound)

		all := h.auditLog(engine.AuditFilter{})
		require.Equal(t, []string{
			"instance.start ok alice instance:" + n,
			"instance.suspend ok alice instance:" + n,
			"instance.suspend refused alice instance:" + n,
			"instance.resume ok bob instance:" + n,
			"instance.jump refused carol instance:" + n,
			"instance.jump ok carol instance:" + n,
			"activity.retry refused carol activity:" + strconv.FormatInt(c.ActivityInstance, 10),
			"instance.set_variables refused dave instance:" + n,
			"instance.suspend refused dave instance:" + n,
			"instance.terminate ok host instance:" + n,
			"instance.terminate refused erin instance:" + n,
			"instance.suspend refused erin instance:999999",
			"instance.start refused frank instance:",
		}, lines(all))
		for _, e := range all {
			require.Equal(t, auditEpoch, e.At, "the engine's clock")
			if e.Result == engine.AuditOK {
				require.Empty(t, e.Error)
			} else {
				require.NotEmpty(t, e.Error)
			}
			if e.TargetID != "" && e.TargetID != "999999" {
				require.Equal(t, id, e.Instance, "%s names its instance", e.Action)
			}
			require.NotEqual(t, strconv.FormatInt(plain, 10), e.TargetID)
		}

		start := all[len(all)-1]
		require.Equal(t, "phone order", start.Reason)
		require.Equal(t, map[string]any{"ticket": "T-1"}, start.Data)
		require.Equal(t, "package orders, process p, business key order-7", start.Detail)
		created := h.history(id)[0]
		require.Equal(t, "alice", created.Actor)
		require.Equal(t, "phone order", created.Reason, "the start's history carries its Op")
		require.Equal(t, map[string]any{"ticket": "T-1"}, created.Data)

		refused := all[len(all)-3]
		require.Equal(t, engine.AuditRefused, refused.Result)
		require.Contains(t, refused.Error, "Suspended")
		badData := all[4]
		require.Equal(t, "dave", badData.Actor)
		require.Nil(t, badData.Data, "data that do not encode are not kept")
		require.Contains(t, badData.Error, "Op.Data")
		require.Empty(t, all[0].TargetID, "a start that created nothing has no target")
		require.Equal(t, "package nope", all[0].Detail)
	})
}

// Batches are audited by their start, pause, resume and cancel; the
// commands their runner gives each instance are not (each instance's
// history names the batch).
func TestAuditBatches(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		a, _ := auditHarness(t, db, noBatchRunner, func(c *engine.Config) { c.NodeID = "a" })
		ids := a.startN(3, "orders", "p")
		op := engine.Op{Actor: "alice", Reason: "stock check"}
		batch, err := a.e.StartBatch(a.ctx, engine.BatchRequest{Action: engine.BatchSuspend, Filter: engine.InstanceFilter{Package: "orders"}, Op: op})
		require.NoError(t, err)
		_, err = a.e.StartBatch(a.ctx, engine.BatchRequest{Action: "explode", Op: op})
		require.ErrorIs(t, err, engine.ErrBadBatch)
		_, err = a.e.PauseBatch(a.ctx, batch.ID, engine.Op{Actor: "bob"})
		require.NoError(t, err)
		_, err = a.e.PauseBatch(a.ctx, batch.ID, engine.Op{Actor: "bob"})
		require.ErrorIs(t, err, engine.ErrIllegalState)
		_, err = a.e.CancelBatch(a.ctx, batch.ID+100, engine.Op{Actor: "bob"})
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = a.e.ResumeBatch(a.ctx, batch.ID, engine.Op{Actor: "alice"})
		require.NoError(t, err)

		b := newHarness(t, db, func(c *engine.Config) { c.NodeID, c.SkipMigrate = "b", true }).start()
		require.Equal(t, engine.BatchCompleted, b.awaitBatch(batch.ID).State)
		a.requireStates(ids, wftype.ProcessSuspended)
		_, err = a.e.CancelBatch(a.ctx, batch.ID, engine.Op{Actor: "bob"})
		require.ErrorIs(t, err, engine.ErrIllegalState, "it is over")

		bid := strconv.FormatInt(batch.ID, 10)
		all := a.auditLog(engine.AuditFilter{})
		require.Equal(t, []string{
			"batch.start ok alice batch:" + bid,
			"batch.start refused alice batch:",
			"batch.pause ok bob batch:" + bid,
			"batch.pause refused bob batch:" + bid,
			"batch.cancel refused bob batch:" + strconv.FormatInt(batch.ID+100, 10),
			"batch.resume ok alice batch:" + bid,
			"batch.cancel refused bob batch:" + bid,
		}, lines(all), "no entry per instance")
		require.Equal(t, "suspend of 3 instances", all[len(all)-1].Detail)
		require.Equal(t, "stock check", all[len(all)-1].Reason)

		var suspended bool
		for _, e := range a.history(ids[0]) {
			if e.Subject == engine.SubjectProcess && e.To == string(wftype.ProcessSuspended) {
				suspended = true
				require.Equal(t, "alice", e.Actor)
				require.Equal(t, map[string]any{"batch": float64(batch.ID)}, e.Data)
			}
		}
		require.True(t, suspended)
	})
}

// In a …Tx form a command's entry is in the host's transaction: a
// success's goes with the host's rollback, a refusal's is kept when the
// host commits. Neither is written on another connection, which on
// SQLite would wait for the writer the host's transaction holds: the
// in-memory database has one connection, so such a write would hang.
func TestAuditInTheHostsTransaction(t *testing.T) {
	t.Parallel()
	dialects := append([]dbtest.Dialect{{Name: "SQLiteMemory", Open: dbtest.OpenSQLiteMemory}}, dbtest.Dialects...)
	for _, d := range dialects {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			db := d.Open(t)
			h, _ := auditHarness(t, db)
			require.NoError(t, db.AutoMigrate(&note{}))
			id := h.startProcess("orders", "p", nil)
			h.requireState(id, wftype.ProcessRunning)
			n := strconv.FormatInt(id, 10)
			errAbort := errors.New("host changed its mind")
			op := engine.Op{Actor: "alice"}

			// A success rolled back with the host: no entry, no change.
			err := h.e.Transaction(h.ctx, db, func(tx *gorm.DB) error {
				if err := h.e.SuspendTx(h.ctx, tx, id, op); err != nil {
					return err
				}
				return errAbort
			})
			require.ErrorIs(t, err, errAbort)
			h.requireState(id, wftype.ProcessRunning)
			require.Empty(t, h.auditLog(engine.AuditFilter{}))

			// Refusals the host carries on after, then commits with its
			// own row: kept.
			err = h.e.Transaction(h.ctx, db, func(tx *gorm.DB) error {
				require.ErrorIs(t, h.e.ResumeTx(h.ctx, tx, id, op), engine.ErrIllegalState)
				require.ErrorIs(t, h.e.WithdrawTx(h.ctx, tx, 999999, "alice", engine.Op{}), engine.ErrNotFound)
				require.ErrorIs(t, h.e.ReleaseLockTx(h.ctx, tx, engine.LockKey{Scope: engine.LockGlobal, BusinessKey: "k"}, op), engine.ErrNotFound)
				_, err := h.e.StartProcessTx(h.ctx, tx, engine.StartOptions{Package: "orders", Process: "nope", Op: &op})
				require.ErrorIs(t, err, engine.ErrNotFound)
				_, err = h.e.PurgeTx(h.ctx, tx, engine.PurgeOptions{}, op)
				require.ErrorIs(t, err, engine.ErrInvalidPurge)
				return tx.Create(&note{Title: "kept"}).Error
			})
			require.NoError(t, err)
			require.Equal(t, []string{
				"instance.resume refused alice instance:" + n,
				"workitem.withdraw refused alice workitem:999999",
				"lock.release refused alice lock:k",
				"instance.start refused alice instance:",
				"instance.purge refused alice package:",
			}, lines(h.auditLog(engine.AuditFilter{})))

			// A refusal whose host rolls back: gone with it.
			err = h.e.Transaction(h.ctx, db, func(tx *gorm.DB) error {
				return h.e.ResumeTx(h.ctx, tx, id, engine.Op{Actor: "bob"})
			})
			require.ErrorIs(t, err, engine.ErrIllegalState)
			require.Empty(t, h.auditLog(engine.AuditFilter{Actor: "bob"}))

			// Successes the host commits: kept, with the change.
			var started int64
			err = h.e.Transaction(h.ctx, db, func(tx *gorm.DB) error {
				if err := h.e.SuspendTx(h.ctx, tx, id, op); err != nil {
					return err
				}
				var err error
				started, err = h.e.StartProcessTx(h.ctx, tx, engine.StartOptions{Package: "orders", Process: "p", Op: &engine.Op{Actor: "carol"}})
				return err
			})
			require.NoError(t, err)
			h.requireState(id, wftype.ProcessSuspended)
			_, err = h.e.Instance(h.ctx, started)
			require.NoError(t, err, "committed")
			require.Equal(t, []string{
				"instance.suspend ok alice instance:" + n,
				"instance.start ok carol instance:" + strconv.FormatInt(started, 10),
			}, lines(h.auditLog(engine.AuditFilter{Results: []engine.AuditResult{engine.AuditOK}})))
		})
	}
}

// The filter selects by actor, action, result, target, instance and
// time; pages walk back from the newest; a bad filter is refused.
func TestAuditFilterAndPages(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, clock := auditHarness(t, db)
		first := h.startProcess("orders", "p", nil)
		second := h.startProcess("orders", "p", nil)
		item := h.openItem(first)
		at := func(minutes int) time.Time { return auditEpoch.Add(time.Duration(minutes) * time.Minute) }
		clock.Set(at(1))
		require.NoError(t, h.e.Suspend(h.ctx, first, engine.Op{Actor: "alice"}))
		clock.Set(at(2))
		require.Error(t, h.e.Resume(h.ctx, second, engine.Op{Actor: "alice"}))
		clock.Set(at(3))
		require.NoError(t, h.e.Suspend(h.ctx, second, engine.Op{Actor: "bob"}))
		clock.Set(at(4))
		require.Error(t, h.e.SkipActivity(h.ctx, first, item.ActivityInstance, engine.Values{}, engine.Op{Actor: "bob"}))
		clock.Set(at(5))
		require.NoError(t, h.e.Terminate(h.ctx, first, engine.Op{Actor: "Alice"}))

		all := h.auditLog(engine.AuditFilter{})
		require.Len(t, all, 5)
		for i := 1; i < len(all); i++ {
			require.Greater(t, all[i-1].ID, all[i].ID, "newest first")
		}
		pick := func(f engine.AuditFilter) []time.Time {
			t.Helper()
			var out []time.Time
			for _, e := range h.auditLog(f) {
				out = append(out, e.At)
			}
			return out
		}
		require.Equal(t, []time.Time{at(2), at(1)}, pick(engine.AuditFilter{Actor: "alice"}), "actors are case-sensitive")
		require.Equal(t, []time.Time{at(3), at(1)}, pick(engine.AuditFilter{Actions: []engine.AuditAction{engine.AuditSuspend}}))
		require.Equal(t, []time.Time{at(4), at(2)}, pick(engine.AuditFilter{Results: []engine.AuditResult{engine.AuditRefused, engine.AuditFailed}}))
		require.Equal(t, []time.Time{at(5), at(4), at(1)}, pick(engine.AuditFilter{Instance: first}), "its activities' entries too")
		require.Equal(t, []time.Time{at(5), at(1)}, pick(engine.AuditFilter{TargetKind: engine.TargetInstance, TargetID: strconv.FormatInt(first, 10)}))
		require.Equal(t, []time.Time{at(4)}, pick(engine.AuditFilter{TargetKind: engine.TargetActivity}))
		require.Equal(t, []time.Time{at(4), at(3), at(2)}, pick(engine.AuditFilter{Since: at(2), Until: at(5)}))
		require.Equal(t, []time.Time{at(3)}, pick(engine.AuditFilter{Actor: "bob", Until: at(4)}))
		require.Empty(t, pick(engine.AuditFilter{Actor: "carol"}))

		page, err := h.e.Audit(h.ctx, engine.AuditFilter{Limit: 3})
		require.NoError(t, err)
		require.Equal(t, all[:3], page.Entries)
		require.NotEmpty(t, page.Next)
		page, err = h.e.Audit(h.ctx, engine.AuditFilter{Limit: 3, After: page.Next})
		require.NoError(t, err)
		require.Equal(t, all[3:], page.Entries)
		require.Empty(t, page.Next, "the last page")

		for name, f := range map[string]engine.AuditFilter{
			"unknown action":      {Actions: []engine.AuditAction{"instance.explode"}},
			"unknown result":      {Results: []engine.AuditResult{"maybe"}},
			"unknown target kind": {TargetKind: "planet"},
			"negative instance":   {Instance: -1},
			"negative limit":      {Limit: -1},
			"malformed cursor":    {After: "x"},
			"zero cursor":         {After: "0"},
			"negative cursor":     {After: "-5"},
			"empty time range":    {Since: at(3), Until: at(3)},
			"inverted time range": {Since: at(4), Until: at(3)},
		} {
			_, err := h.e.Audit(h.ctx, f)
			require.ErrorIs(t, err, engine.ErrBadFilter, name)
		}
	})
}

// Deployments, lock releases and purges are operator commands too; the
// audit log outlives the instances a purge deletes.
func TestAuditDeployLockAndPurge(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, _ := auditHarness(t, db)
		op := engine.Op{Actor: "ops", Reason: "release 42"}
		ds, err := h.e.DeployAs(h.ctx, op, engine.Source{XPDL: []byte(lockXPDL)})
		require.NoError(t, err)
		_, err = h.e.DeployAs(h.ctx, op, engine.Source{XPDL: []byte("<Package")})
		require.ErrorIs(t, err, xpdl.ErrInvalid)
		h.deploy(chainPackage("plain")) // the host's own: not audited

		holder, err := h.e.StartProcess(h.ctx, locked("acct-1", engine.LockGlobal, false))
		require.NoError(t, err)
		h.requireState(holder, wftype.ProcessRunning)
		key := engine.LockKey{Scope: engine.LockGlobal, BusinessKey: "acct-1"}
		require.NoError(t, h.e.ReleaseLock(h.ctx, key, op))
		require.ErrorIs(t, h.e.ReleaseLock(h.ctx, key, op), engine.ErrNotFound)

		id := h.startProcess("orders", "p", nil)
		h.idle()
		require.NoError(t, h.e.Terminate(h.ctx, id, op))
		h.requireState(id, wftype.ProcessTerminated)
		rep, err := h.e.Purge(h.ctx, engine.PurgeOptions{Before: auditEpoch.Add(time.Minute), Package: "orders"}, op)
		require.NoError(t, err)
		require.EqualValues(t, 1, rep.Instances)

		pkg := ds[0].PackageID
		all := h.auditLog(engine.AuditFilter{})
		require.Equal(t, []string{
			"package.deploy ok ops package:" + pkg,
			"package.deploy refused ops package:",
			"lock.release ok ops lock:acct-1",
			"lock.release refused ops lock:acct-1",
			"instance.terminate ok ops instance:" + strconv.FormatInt(id, 10),
			"instance.purge ok ops package:orders",
		}, lines(all))
		require.Equal(t, fmt.Sprintf("%s version 1 (deployment %d)", pkg, ds[0].ID), all[5].Detail)
		require.Equal(t, holder, all[3].Instance, "a release names the holder")
		require.Equal(t, `global lock on "acct-1"`, all[3].Detail)
		require.Equal(t, fmt.Sprintf("ended before 2026-12-01T09:01:00Z: 1 instances, %d rows", rep.Rows), all[0].Detail)

		_, err = h.e.Instance(h.ctx, id)
		require.ErrorIs(t, err, engine.ErrNotFound, "purged")
		kept := h.auditLog(engine.AuditFilter{Instance: id})
		require.Len(t, kept, 1, "the audit log outlives the instance")
		require.Equal(t, engine.AuditTerminate, kept[0].Action)
	})
}

// A work-item command is audited when an operator gives it on someone's
// behalf (its Op's actor is not the acting user), and a reassignment
// always; a user's own claims and completions are in the history only.
func TestAuditWorkItemsOnBehalf(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h, _ := auditHarness(t, db)
		id := h.startProcess("orders", "p", nil)
		h.idle()
		a := h.openItem(id)
		w := strconv.FormatInt(a.ID, 10)

		require.NoError(t, h.e.ClaimWorkItem(h.ctx, a.ID, "bob", engine.Op{}))               // bob himself
		require.NoError(t, h.e.ReleaseWorkItem(h.ctx, a.ID, "bob", engine.Op{Actor: "bob"})) // still bob
		require.NoError(t, h.e.ClaimWorkItem(h.ctx, a.ID, "carol", engine.Op{Actor: "olga", Reason: "carol is on the phone"}))
		require.ErrorIs(t, h.e.ReleaseWorkItem(h.ctx, a.ID, "bob", engine.Op{Actor: "olga"}), engine.ErrNotAllowed)
		require.NoError(t, h.e.ReassignWorkItem(h.ctx, a.ID, "admin", []engine.Principal{{Kind: engine.PrincipalUser, ID: "dave"}}, engine.Op{}))
		_, err := h.e.CompleteWorkItem(h.ctx, a.ID, engine.Completion{User: "dave", Op: engine.Op{Actor: "olga", Reason: "dave said so"}})
		require.NoError(t, err)
		h.idle()
		b := h.openItem(id)
		_, err = h.e.CompleteWorkItem(h.ctx, b.ID, engine.Completion{User: "erin"}) // erin herself
		require.NoError(t, err)

		got := h.auditLog(engine.AuditFilter{Instance: id})
		require.Equal(t, []string{
			"workitem.claim ok olga workitem:" + w,
			"workitem.release refused olga workitem:" + w,
			"workitem.reassign ok admin workitem:" + w,
			"workitem.complete ok olga workitem:" + w,
		}, lines(got))
		require.Equal(t, "dave said so", got[0].Reason)
	})
}
