package enginetest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/enginetest"
	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
)

// approval is testdata/approval.xpdl: Review (a clerk's work item, a
// two-hour deadline to Escalate, a manager's) then Ship (the host's
// "ship" application) when approved.
var approval = mustRead("testdata/approval.xpdl")

func mustRead(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return b
}

// fakeTB is a TB whose Fatalf records the failure and ends the goroutine,
// as testing's does, so that a test can read what the harness said.
type fakeTB struct {
	*testing.T
	mu     sync.Mutex
	failed string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	f.failed = fmt.Sprintf(format, args...)
	f.mu.Unlock()
}

// failure runs fn with a fake TB on a goroutine of its own and returns
// the failure it reported; the test fails when there was none.
func failure(t *testing.T, fn func(tb enginetest.TB)) string {
	t.Helper()
	tb := &fakeTB{T: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	tb.mu.Lock()
	defer tb.mu.Unlock()
	require.NotEmpty(t, tb.failed, "the harness should have failed the test")
	return tb.failed
}

// each runs fn on a harness over each database: the default in-memory
// SQLite, MySQL/MariaDB when GOXPDL_MYSQL_DSN names a server, and
// PostgreSQL (through WithDSN) when GOXPDL_POSTGRES_DSN does.
func each(t *testing.T, fn func(t *testing.T, opts ...enginetest.Option)) {
	t.Helper()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		fn(t)
	})
	t.Run("MySQL", func(t *testing.T) {
		t.Parallel()
		db := dbtest.OpenMySQL(t)
		fn(t, enginetest.WithDB(db))
	})
	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, enginetest.WithDSN(dbtest.PostgresURL(t))) // as --db names it
	})
}

func TestApprovalRunsToCompletion(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, opts ...enginetest.Option) {
		h := enginetest.New(t, append(opts, enginetest.WithApplication("ship", ship))...)
		h.Deploy(approval)
		id := h.Start("approval", map[string]any{"amount": int64(120)})
		h.WaitForState(id, "Review", wftype.ActivityInActive)
		item := h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
		require.Equal(t, enginetest.DefaultUser, item.CompletedBy)
		pi := h.RunUntil(id, wftype.ProcessCompleted)
		require.Equal(t, wftype.ProcessCompleted, pi.State)
		require.Equal(t, "TRK-120", h.Vars(id)["tracking"])
		h.AssertHistory(id, "activity Review Completed", "activity Ship Completed", "process Completed")
		require.Empty(t, h.WorkItems(id))
		require.Len(t, h.Activities(id), 2)
	})
}

// RunUntil fails at once, without waiting, when the engine is quiet, and
// says why: the state, the open activity, its work item and its timer.
func TestRunUntilFailsWithTheInstancesState(t *testing.T) {
	t.Parallel()
	msg := failure(t, func(tb enginetest.TB) {
		h := enginetest.New(tb, enginetest.WithApplication("ship", ship))
		h.Deploy(approval)
		id := h.Start("approval", nil)
		h.RunUntil(id, wftype.ProcessCompleted)
	})
	require.Regexp(t, `RunUntil: instance [0-9]+ is Running, not Completed, and the engine is quiet`, msg)
	require.Regexp(t, `instance [0-9]+ of process approval \(package orders, version 1\) is Running`, msg)
	for _, want := range []string{
		"clock: 2026-01-05T09:00:00Z",
		"activities: 0 completed, 1 not:\n    Review (#",
		") InActive",
		"open work items:\n    #", // the engine's id
		" Review Offered, offered to role:clerk",
		"deadline of Review (#",
		"due 2026-01-05T11:00:00Z (in 2h0m0s), pending",
		"history (last 5 of 5):",
		"09:00:00.000 workitem Review Offered",
	} {
		require.Contains(t, msg, want)
	}
}

// A finished instance never reaches another state: RunUntil says so.
func TestRunUntilAFinishedInstance(t *testing.T) {
	t.Parallel()
	msg := failure(t, func(tb enginetest.TB) {
		h := enginetest.New(tb, enginetest.WithApplication("ship", ship))
		h.Deploy(approval)
		id := h.Start("approval", nil)
		h.CompleteWorkItem(id, "Review", map[string]any{"approved": false})
		h.RunUntil(id, wftype.ProcessTerminated)
	})
	require.Contains(t, msg, "is Completed, not Terminated, and it has finished")
	require.Contains(t, msg, "activity Rejected Completed")
}

// An activity that fails shows its incident and diagnosis.
func TestRunUntilShowsIncidents(t *testing.T) {
	t.Parallel()
	msg := failure(t, func(tb enginetest.TB) {
		h := enginetest.New(tb, enginetest.WithApplication("ship", func(context.Context, *engine.Call) (map[string]any, error) {
			return nil, errors.New("the carrier refused the parcel")
		}))
		h.Deploy(approval)
		id := h.Start("approval", nil)
		h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
		h.RunUntil(id, wftype.ProcessCompleted)
	})
	require.Contains(t, msg, ") Abnormal: ")
	require.Regexp(t, `open incidents:\n    #[0-9]+ application on Ship \(#`, msg)
	require.Contains(t, msg, "the carrier refused the parcel")
}

// WaitForState goes in lockstep through the history: each call matches
// the next entry after the previous call's, so a sequence asserts an
// order, and one out of order fails saying where the entry was.
func TestWaitForStateIsLockstep(t *testing.T) {
	t.Parallel()
	run := func(tb enginetest.TB) (*enginetest.Harness, int64) {
		h := enginetest.New(tb, enginetest.WithApplication("ship", ship))
		h.Deploy(approval)
		id := h.Start("approval", nil)
		h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
		return h, id
	}
	h, id := run(t)
	review := h.WaitForState(id, "Review", wftype.ActivityInActive)
	require.Equal(t, wftype.ActivityCompleted, review.State, "the activity as it is now")
	h.WaitForState(id, "Review", wftype.ActivityCompleted)
	h.WaitForState(id, "Ship", wftype.ActivityActive)
	h.WaitForState(id, "Ship", wftype.ActivityCompleted)

	msg := failure(t, func(tb enginetest.TB) {
		h, id := run(tb)
		h.WaitForState(id, "Review", wftype.ActivityCompleted)
		h.WaitForState(id, "Review", wftype.ActivityCompleted) // once only
	})
	require.Regexp(t, `WaitForState: activity Review of instance [0-9]+ did not enter Completed after history entry [0-9]+, which the previous WaitForState matched, and the engine is quiet`, msg)
	require.Contains(t, msg, "is Completed")

	msg = failure(t, func(tb enginetest.TB) {
		h, id := run(tb)
		h.WaitForState(id, "Ship", wftype.ActivityCompleted)
		h.WaitForState(id, "Review", wftype.ActivityCompleted) // it came before
	})
	require.Regexp(t, `did not enter Completed after history entry [0-9]+, which the previous WaitForState matched \(it did at entry [0-9]+, before that one: the order differs\)`, msg)
}

// A loop enters the same state several times: each WaitForState matches
// one of them.
func TestWaitForStateInALoop(t *testing.T) {
	t.Parallel()
	h := enginetest.New(t)
	h.Deploy([]byte(loopXPDL))
	id := h.Start("loop", map[string]any{"rounds": int64(3)})
	for round := 1; round <= 3; round++ {
		h.WaitForState(id, "Count", wftype.ActivityCompleted)
	}
	h.RunUntil(id, wftype.ProcessCompleted)
	require.Equal(t, int64(3), h.Vars(id)["n"])
	msg := failure(t, func(tb enginetest.TB) {
		h := enginetest.New(tb)
		h.Deploy([]byte(loopXPDL))
		id := h.Start("loop", map[string]any{"rounds": int64(2)})
		for range 3 {
			h.WaitForState(id, "Count", wftype.ActivityCompleted)
		}
	})
	require.Contains(t, msg, "did not enter Completed after history entry")
	require.NotContains(t, msg, "it did at entry", "a third round never was")
}

// loopXPDL counts n up to rounds with a script activity in a cycle.
const loopXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/XPDL2.1" Id="loop" Name="loop">
  <PackageHeader><XPDLVersion>2.1</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-26</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <WorkflowProcesses><WorkflowProcess Id="loop">
    <DataFields>
      <DataField Id="n"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>0</InitialValue></DataField>
      <DataField Id="rounds"><DataType><BasicType Type="INTEGER"/></DataType><InitialValue>1</InitialValue></DataField>
    </DataFields>
    <Activities>
      <Activity Id="Begin"><Route/></Activity>
      <Activity Id="Count"><Implementation><Task><TaskScript><Script>n = n + 1</Script></TaskScript></Task></Implementation>
        <TransitionRestrictions><TransitionRestriction><Join Type="Exclusive"/><Split Type="Exclusive"/></TransitionRestriction></TransitionRestrictions></Activity>
      <Activity Id="Done"><Route/></Activity>
    </Activities>
    <Transitions>
      <Transition Id="in" From="Begin" To="Count"/>
      <Transition Id="again" From="Count" To="Count"><Condition Type="CONDITION"><Expression>n &lt; rounds</Expression></Condition></Transition>
      <Transition Id="out" From="Count" To="Done"><Condition Type="OTHERWISE"/></Transition>
    </Transitions>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

// chainXPDL has two waits in a row, each left by a one-hour deadline:
// the second deadline is armed only when the first one fires.
const chainXPDL = `<?xml version="1.0" encoding="UTF-8"?>
<Package xmlns="http://www.wfmc.org/2002/XPDL1.0" Id="chain" Name="chain">
  <PackageHeader><XPDLVersion>1.0</XPDLVersion><Vendor>goxpdl</Vendor><Created>2026-11-26</Created></PackageHeader>
  <Script Type="text/javascript"/>
  <Participants><Participant Id="clerk"><ParticipantType Type="ROLE"/></Participant></Participants>
  <WorkflowProcesses><WorkflowProcess Id="chain">
    <Activities>
      <Activity Id="First"><Implementation><No/></Implementation><Performer>clerk</Performer>
        <Deadline Execution="SYNCHR"><DeadlineCondition>PT1H</DeadlineCondition><ExceptionName>late</ExceptionName></Deadline></Activity>
      <Activity Id="Second"><Implementation><No/></Implementation><Performer>clerk</Performer>
        <Deadline Execution="SYNCHR"><DeadlineCondition>PT1H</DeadlineCondition><ExceptionName>late</ExceptionName></Deadline></Activity>
      <Activity Id="Done"><Route/></Activity>
    </Activities>
    <Transitions>
      <Transition Id="t1" From="First" To="Second"><Condition Type="EXCEPTION">late</Condition></Transition>
      <Transition Id="t2" From="Second" To="Done"><Condition Type="EXCEPTION">late</Condition></Transition>
    </Transitions>
  </WorkflowProcess></WorkflowProcesses>
</Package>`

// Advance stops the clock at each timer in turn: a deadline armed by
// another deadline's firing fires within the same Advance, at its own
// time, whatever the machine's speed.
func TestAdvanceFiresTimersInTurn(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, opts ...enginetest.Option) {
		h := enginetest.New(t, opts...)
		h.Deploy([]byte(chainXPDL))
		id := h.Start("chain", nil)
		h.Advance(59 * time.Minute)
		h.WaitForState(id, "First", wftype.ActivityInActive)
		require.Equal(t, wftype.ProcessRunning, h.Instance(id).State, "never early")
		h.Advance(61 * time.Minute)
		require.Equal(t, enginetest.Epoch.Add(2*time.Hour), h.Now())
		h.RunUntil(id, wftype.ProcessCompleted)
		at := map[string]time.Time{}
		for _, en := range h.History(id) {
			if en.Subject == engine.SubjectActivity && en.To == string(wftype.ActivityCompleted) {
				at[en.Activity] = en.At
			}
		}
		require.Equal(t, map[string]time.Time{
			"First":  enginetest.Epoch.Add(time.Hour),
			"Second": enginetest.Epoch.Add(2 * time.Hour),
			"Done":   enginetest.Epoch.Add(2 * time.Hour),
		}, at)
	})
}

// Advance also stops at each retry of a failing application: the calls
// a second would see are made.
func TestAdvanceRunsRetries(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, opts ...enginetest.Option) {
		var calls atomic.Int32
		flaky := func(ctx context.Context, call *engine.Call) (map[string]any, error) {
			if calls.Add(1) <= 3 {
				return nil, engine.Retryable(errors.New("carrier busy"))
			}
			return ship(ctx, call)
		}
		h := enginetest.New(t, append(opts, enginetest.WithApplication("ship", flaky))...)
		h.Deploy(approval)
		id := h.Start("approval", map[string]any{"amount": int64(7)})
		h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
		require.Equal(t, int32(1), calls.Load())
		require.Equal(t, wftype.ProcessRunning, h.Instance(id).State)
		// The default policy waits 100ms, 200ms, 400ms: 700ms in all.
		h.Advance(699 * time.Millisecond)
		require.Equal(t, int32(3), calls.Load())
		h.Advance(time.Millisecond)
		h.RunUntil(id, wftype.ProcessCompleted)
		require.Equal(t, int32(4), calls.Load())
		require.Equal(t, "TRK-7", h.Vars(id)["tracking"])
	})
}

// A quiet engine with a retry pending: RunUntil says so rather than wait.
func TestRunUntilNamesAPendingRetry(t *testing.T) {
	t.Parallel()
	msg := failure(t, func(tb enginetest.TB) {
		h := enginetest.New(tb, enginetest.WithApplication("ship", func(context.Context, *engine.Call) (map[string]any, error) {
			return nil, engine.Retryable(errors.New("carrier busy"))
		}))
		h.Deploy(approval)
		id := h.Start("approval", nil)
		h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
		h.RunUntil(id, wftype.ProcessCompleted)
	})
	require.Contains(t, msg, "events waiting for a retry's backoff: 1 (Advance moves the clock)")
	require.Contains(t, msg, "Ship (#")
}

// An engine that never goes quiet (an application that does not return)
// fails the wait at WithTimeout, never hangs.
func TestAWaitIsBounded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	msg := failure(t, func(tb enginetest.TB) {
		h := enginetest.New(tb, enginetest.WithTimeout(2*time.Second),
			enginetest.WithApplication("ship", func(context.Context, *engine.Call) (map[string]any, error) {
				<-release
				return nil, nil
			}))
		tb.Cleanup(func() { close(release) }) // before the engine stops: cleanups run last first
		h.Deploy(approval)
		id := h.Start("approval", nil)
		h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
	})
	require.Contains(t, msg, "the engine did not go quiet within 2s (WithTimeout): it keeps working")
}

// A read the database holds up (an application holds the one connection
// of the in-memory database in its step's transaction) fails at
// WithTimeout too.
func TestACallIsBounded(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	msg := failure(t, func(tb enginetest.TB) {
		h := enginetest.New(tb, enginetest.WithTimeout(2*time.Second),
			enginetest.WithApplication("ship", func(context.Context, *engine.Call) (map[string]any, error) {
				close(entered)
				<-release
				return nil, nil
			}))
		tb.Cleanup(func() { close(release) })
		h.Deploy(approval)
		id := h.Start("approval", nil)
		item := h.WorkItem(id, "Review")
		_, err := h.Engine().CompleteWorkItem(h.Context(), item.ID, engine.Completion{User: "ann", Outputs: map[string]any{"approved": true}})
		require.NoError(t, err)
		select {
		case <-entered:
		case <-t.Context().Done():
			return
		}
		h.Vars(id)
	})
	require.Regexp(t, `enginetest: read the variables of instance [0-9]+: no answer within 2s \(WithTimeout\)`, msg)
}

func TestStartNames(t *testing.T) {
	t.Parallel()
	h := enginetest.New(t)
	h.Deploy(approval)
	h.Deploy([]byte(chainXPDL))
	for _, name := range []string{"orders", "approval", "orders:approval"} {
		require.Equal(t, "approval", h.Instance(h.Start(name, nil)).Process, name)
	}
	msg := failure(t, func(tb enginetest.TB) {
		h := enginetest.New(tb)
		h.Deploy(approval)
		h.Start("nosuch", nil)
	})
	require.Equal(t, `enginetest: start "nosuch": no deployed package or process has that id; deployed: orders:approval`, msg)
	msg = failure(t, func(tb enginetest.TB) {
		h := enginetest.New(tb)
		h.Deploy(approval)
		h.Start("orders:nosuch", nil)
	})
	require.Contains(t, msg, `enginetest: start orders:nosuch: `)
}

func TestWithConfigMayNotTakeTheClock(t *testing.T) {
	t.Parallel()
	msg := failure(t, func(tb enginetest.TB) {
		enginetest.New(tb, enginetest.WithConfig(func(cfg *engine.Config) { cfg.Clock = nil }))
	})
	require.Contains(t, msg, "WithConfig may not set Config.Clock")
	msg = failure(t, func(tb enginetest.TB) { enginetest.New(tb, enginetest.WithTimeout(0)) })
	require.Equal(t, "enginetest: WithTimeout(0s): the bound of a wait must be positive", msg)
	// Other fields are the test's.
	h := enginetest.New(t, enginetest.WithConfig(func(cfg *engine.Config) { cfg.NoOpUnboundApplications = true }))
	h.Deploy(approval)
	id := h.Start("approval", nil)
	h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
	h.RunUntil(id, wftype.ProcessCompleted)
}

const org = `
users:
  - id: carol
    roles: [clerk]
  - id: mallory
roles:
  - id: clerk
`

// With a directory, CompleteWorkItem acts as a user who may take the
// item; CompleteWorkItemAs as the user given, and the engine's refusal
// fails the test.
func TestWorkItemsWithADirectory(t *testing.T) {
	t.Parallel()
	dir, err := resource.ParseOrg([]byte(org), resource.FormatYAML)
	require.NoError(t, err)
	h := enginetest.New(t, enginetest.WithDirectory(dir), enginetest.WithApplication("ship", ship))
	h.Deploy(approval)
	id := h.Start("approval", nil)
	require.Equal(t, "carol", h.CompleteWorkItem(id, "Review", map[string]any{"approved": false}).CompletedBy)
	h.RunUntil(id, wftype.ProcessCompleted)

	msg := failure(t, func(tb enginetest.TB) {
		h := enginetest.New(tb, enginetest.WithDirectory(dir))
		h.Deploy(approval)
		id := h.Start("approval", nil)
		h.CompleteWorkItemAs(id, "Review", "mallory", nil)
	})
	require.Regexp(t, `complete work item [0-9]+ \(Review\) of instance [0-9]+ as mallory: `, msg)
	require.Contains(t, msg, "refused: the item is offered to role:clerk")
	require.Regexp(t, `#[0-9]+ Review Offered`, msg)
}

func TestWorkItemNone(t *testing.T) {
	t.Parallel()
	msg := failure(t, func(tb enginetest.TB) {
		h := enginetest.New(tb)
		h.Deploy(approval)
		id := h.Start("approval", nil)
		h.CompleteWorkItem(id, "Escalate", nil)
	})
	require.Regexp(t, `activity Escalate of instance [0-9]+ has no open work item, and the engine is quiet`, msg)
	require.Contains(t, msg, "Review (#")
}

func TestAssertHistory(t *testing.T) {
	t.Parallel()
	run := func(tb enginetest.TB, steps ...string) {
		h := enginetest.New(tb, enginetest.WithApplication("ship", ship))
		h.Deploy(approval)
		id := h.Start("approval", nil)
		h.CompleteWorkItem(id, "Review", map[string]any{"approved": true})
		h.AssertHistory(id, steps...)
	}
	run(t, "workitem Review Offered", "activity Ship Completed", "process Completed")
	msg := failure(t, func(tb enginetest.TB) { run(tb, "activity Ship Completed", "activity Review Completed") })
	require.Regexp(t, `AssertHistory: instance [0-9]+: step 2 "activity Review Completed" is in it, but not after the steps before it; matched \["activity Ship Completed"\]`, msg)
	require.Contains(t, msg, "\n      7 activity Review Completed\n")
	msg = failure(t, func(tb enginetest.TB) { run(tb, "activity Escalate Completed") })
	require.Contains(t, msg, `step 1 "activity Escalate Completed" is not in it`)
}

func TestAdvanceBackwards(t *testing.T) {
	t.Parallel()
	msg := failure(t, func(tb enginetest.TB) { enginetest.New(tb).Advance(-time.Second) })
	require.Equal(t, "enginetest: Advance(-1s): the clock does not go back", msg)
}

// WithDSN opens the database it names and closes it; empty keeps the
// in-memory default.
func TestWithDSN(t *testing.T) {
	t.Parallel()
	h := enginetest.New(t, enginetest.WithDSN("sqlite:"+filepath.Join(t.TempDir(), "e.db")))
	h.Deploy(approval)
	require.Equal(t, wftype.ProcessRunning, h.Instance(h.Start("approval", nil)).State)
	enginetest.New(t, enginetest.WithDSN("")).Deploy(approval)
	msg := failure(t, func(tb enginetest.TB) { enginetest.New(tb, enginetest.WithDSN("postgres://x")) })
	require.Contains(t, msg, "enginetest: open the database: ")
}
