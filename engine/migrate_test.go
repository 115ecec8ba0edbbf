package engine_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// versionedPackage is package id with process p: A -> middle -> C, all
// manual, and extra before the activities (process data fields).
func versionedPackage(id, middle, extra string) string {
	src := xpdltest.PackageWith("",
		xpdltest.Process("p", extra, manual("A")+manual(middle)+manual("C"),
			xpdltest.Transition("t1", "A>"+middle)+xpdltest.Transition("t2", middle+">C")))
	return replaceOnce(src, `Id="pkg"`, `Id="`+id+`"`)
}

const priorityField = `<DataFields><DataField Id="priority"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>5</InitialValue></DataField></DataFields>`

func TestMigrateMovesAnInstanceToANewVersion(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		v1 := h.deploy(versionedPackage("mig", "B", ""))
		id := h.startProcess("mig", "p", map[string]any{"x": int64(7)})
		require.NoError(t, h.complete(h.openItem(id).ID, nil))
		b := h.openItem(id)
		require.Equal(t, "B", b.Activity)
		v2 := h.deploy(versionedPackage("mig", "Review", priorityField))

		versions, err := h.e.Versions(h.ctx, "mig")
		require.NoError(t, err)
		require.Len(t, versions, 2)
		require.Equal(t, int64(1), versions[0].Open())
		require.Equal(t, int64(0), versions[1].Open())

		m := engine.Migration{To: v2.ID, Activities: map[string]string{"B": "Review"}}
		plan, err := h.e.PlanMigration(h.ctx, id, m)
		require.NoError(t, err)
		require.Equal(t, engine.MigrationPlan{
			Instance: id, Process: "p", From: v1.ID, FromVersion: 1, To: v2.ID, ToVersion: 2,
			Activities:   []engine.ActivityMapping{{ActivityInstance: b.ActivityInstance, From: "B", To: "Review"}},
			NewVariables: []string{"priority"},
		}, plan)
		require.Equal(t, v1.ID, h.instance(id).DefinitionID, "a plan changes nothing")

		require.NoError(t, h.e.Migrate(h.ctx, id, m, engine.Op{Actor: "ops", Reason: "review step renamed"}))
		require.Equal(t, v2.ID, h.instance(id).DefinitionID)
		item := h.openItem(id)
		require.Equal(t, b.ID, item.ID, "the work item is the same")
		require.Equal(t, "Review", item.Activity)
		require.Equal(t, map[string]any{"x": int64(7), "s": "", "priority": int64(5)}, h.vars(id))
		var migrated *engine.HistoryEntry
		for _, e := range h.history(id) {
			if e.Subject == engine.SubjectProcess && e.Detail["fromDefinition"] != nil {
				migrated = &e
			}
		}
		require.NotNil(t, migrated)
		require.Equal(t, "ops", migrated.Actor)
		require.Equal(t, "review step renamed", migrated.Reason)
		require.Equal(t, "migrated from version 1 (definition "+itoa(v1.ID)+") to version 2 (definition "+itoa(v2.ID)+")", migrated.Diagnosis)

		require.NoError(t, h.complete(item.ID, nil))
		c := h.openItem(id)
		require.Equal(t, "C", c.Activity)
		require.NoError(t, h.complete(c.ID, nil))
		h.requireState(id, wftype.ProcessCompleted)
		versions, err = h.e.Versions(h.ctx, "mig")
		require.NoError(t, err)
		require.Equal(t, int64(1), versions[1].Instances[wftype.ProcessCompleted])
	})
}

func TestMigrateRefusesWhatWouldLoseSomething(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(versionedPackage("refmig", "B", ""))
		id := h.startProcess("refmig", "p", nil)
		require.NoError(t, h.complete(h.openItem(id).ID, nil))
		b := h.openItem(id)
		v2 := h.deploy(versionedPackage("refmig", "Review", ""))
		other := h.deploy(chainPackage("othermig"))
		before := h.instance(id)

		var me *engine.MigrationError
		err := h.e.Migrate(h.ctx, id, engine.Migration{To: v2.ID}, engine.Op{})
		require.ErrorIs(t, err, engine.ErrCannotMigrate)
		require.ErrorAs(t, err, &me)
		require.Equal(t, []string{"open activity instance " + itoa(b.ActivityInstance) + " (B) would go to B, which is not in the top level of version 2: map it to an activity there"}, me.Problems)

		err = h.e.Migrate(h.ctx, id, engine.Migration{To: v2.ID, Activities: map[string]string{"B": "Nope", "Zed": "C"}}, engine.Op{})
		require.ErrorAs(t, err, &me)
		require.Contains(t, me.Problems, "the mapping names activity Zed, which process p of version 1 does not have")
		require.Contains(t, me.Problems, "the mapping sends B to activity Nope, which process p of version 2 does not have")

		err = h.e.Migrate(h.ctx, id, engine.Migration{To: other.ID}, engine.Op{})
		require.ErrorAs(t, err, &me)
		require.Contains(t, me.Problems[0], "is package othermig, not refmig")

		err = h.e.Migrate(h.ctx, id, engine.Migration{To: 987654}, engine.Op{})
		require.ErrorIs(t, err, engine.ErrNotFound)

		// A variable the new version does not declare would be lost.
		v3 := h.deploy(replaceOnce(versionedPackage("refmig", "B", ""), `<DataField Id="s">`, `<DataField Id="renamed">`))
		err = h.e.Migrate(h.ctx, id, engine.Migration{To: v3.ID}, engine.Op{})
		require.ErrorAs(t, err, &me)
		require.Equal(t, []string{"variable s is not declared in version 3: its value would be lost"}, me.Problems)

		after := h.instance(id)
		require.Equal(t, before.DefinitionID, after.DefinitionID)
		require.Equal(t, before.Version, after.Version, "nothing was written")
		require.Equal(t, "B", h.openItem(id).Activity)

		// A finished instance is not migrated.
		require.NoError(t, h.e.Terminate(h.ctx, id, engine.Op{}))
		err = h.e.Migrate(h.ctx, id, engine.Migration{To: v2.ID, Activities: map[string]string{"B": "Review"}}, engine.Op{})
		var se *wftype.StateError
		require.ErrorAs(t, err, &se)
		require.True(t, se.Finished)
	})
}

// joinPackage is S -> (P1, P2) -> J (AND join) -> E; transition ids given.
func joinPackage(id, t3 string) string {
	src := xpdltest.PackageWith("", xpdltest.Process("p", "",
		xpdltest.Activity("S", `<Route/>`, "", "AND")+manual("P1")+manual("P2")+
			xpdltest.Activity("J", `<Route/>`, "AND", "")+manual("E"),
		xpdltest.Transition("t1", "S>P1")+xpdltest.Transition("t2", "S>P2")+
			xpdltest.Transition(t3, "P1>J")+xpdltest.Transition("t4", "P2>J")+xpdltest.Transition("t5", "J>E")))
	return replaceOnce(src, `Id="pkg"`, `Id="`+id+`"`)
}

func TestMigrateKeepsArrivalsWaitingAtAJoin(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		h.deploy(joinPackage("joinmig", "t3"))
		id := h.startProcess("joinmig", "p", nil)
		h.idle()
		var p2 engine.WorkItem
		for _, wi := range h.openItems(id) {
			if wi.Activity == "P1" {
				require.NoError(t, h.complete(wi.ID, nil))
			} else {
				p2 = wi
			}
		}
		renamed := h.deploy(joinPackage("joinmig", "t3b"))
		err := h.e.Migrate(h.ctx, id, engine.Migration{To: renamed.ID}, engine.Op{})
		var me *engine.MigrationError
		require.ErrorAs(t, err, &me)
		require.Equal(t, []string{"an arrival over transition t3 waits at join J; in version 2 no transition t3 leads to J"}, me.Problems)

		same := h.deploy(joinPackage("joinmig", "t3"))
		require.NoError(t, h.e.Migrate(h.ctx, id, engine.Migration{To: same.ID}, engine.Op{}))
		require.NoError(t, h.complete(p2.ID, nil))
		e := h.openItem(id)
		require.Equal(t, "E", e.Activity, "the join fired with the arrival kept across the migration")
		require.NoError(t, h.complete(e.ID, nil))
		h.requireState(id, wftype.ProcessCompleted)
	})
}

// A migration racing the instance's own progress: whichever commits
// first, the other sees its result (the version fence), and the instance
// ends on the new version with every step done once.
func TestMigrateRacesACompletion(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		v1 := h.deploy(versionedPackage("racemig", "B", ""))
		v2 := h.deploy(versionedPackage("racemig", "B", priorityField))
		for range 5 {
			id, err := h.e.StartProcess(h.ctx, engine.StartOptions{DefinitionID: v1.ID, Process: "p"})
			require.NoError(t, err)
			require.NoError(t, h.complete(h.openItem(id).ID, nil))
			b := h.openItem(id)
			var wg sync.WaitGroup
			var migErr, doneErr error
			wg.Go(func() { migErr = h.e.Migrate(h.ctx, id, engine.Migration{To: v2.ID}, engine.Op{}) })
			wg.Go(func() { doneErr = h.complete(b.ID, nil) })
			wg.Wait()
			require.NoError(t, doneErr)
			if migErr != nil && !errors.Is(migErr, engine.ErrConflict) {
				require.NoError(t, migErr)
			}
			if migErr != nil {
				require.NoError(t, h.e.Migrate(h.ctx, id, engine.Migration{To: v2.ID}, engine.Op{}))
			}
			require.Equal(t, v2.ID, h.instance(id).DefinitionID)
			c := h.openItem(id)
			require.Equal(t, "C", c.Activity)
			require.NoError(t, h.complete(c.ID, nil))
			h.requireState(id, wftype.ProcessCompleted)
			require.Equal(t, map[string]int{"A": 1, "B": 1, "C": 1}, h.started(id))
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// deadlinePackage is Approve (manual, with the deadlines given) -> Done,
// and Escalated on the exception late.
func deadlinePackage(deadlines string) string {
	return replaceOnce(xpdltest.PackageWith("", `<WorkflowProcess Id="p"><Activities>
    <Activity Id="Approve"><Implementation><No/></Implementation><Performer>clerk</Performer>`+deadlines+`</Activity>
    <Activity Id="Done"><Route/></Activity>
    <Activity Id="Escalated"><Route/></Activity>
  </Activities><Transitions>
    <Transition Id="t1" From="Approve" To="Done"/>
    <Transition Id="t2" From="Approve" To="Escalated"><Condition Type="EXCEPTION">late</Condition></Transition>
  </Transitions></WorkflowProcess>`), `Id="pkg"`, `Id="deadlinemig"`)
}

func TestMigrateRefusesToDropAPendingDeadline(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		h := newHarness(t, db).start()
		late := `<Deadline Execution="SYNCHR"><DeadlineCondition>PT1H</DeadlineCondition><ExceptionName>late</ExceptionName></Deadline>`
		h.deploy(deadlinePackage(late))
		id := h.startProcess("deadlinemig", "p", nil)
		h.idle()
		item := h.openItem(id)
		none := h.deploy(deadlinePackage(""))
		err := h.e.Migrate(h.ctx, id, engine.Migration{To: none.ID}, engine.Op{})
		var me *engine.MigrationError
		require.ErrorAs(t, err, &me)
		require.Equal(t, []string{"activity instance " + itoa(item.ActivityInstance) + " (Approve) has pending deadlines; Approve of version 2 has 0 deadlines, not 1"}, me.Problems)

		same := h.deploy(deadlinePackage(late))
		require.NoError(t, h.e.Migrate(h.ctx, id, engine.Migration{To: same.ID}, engine.Op{}))
		timers, err := timersOf(h.ctx, h.e, id)
		require.NoError(t, err)
		require.Len(t, timers, 1, "the deadline stays armed")
	})
}
