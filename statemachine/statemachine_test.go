package statemachine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/enginetest"
	"github.com/goxpdl/goxpdl/resource"
	"github.com/goxpdl/goxpdl/statemachine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/timer"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
	"github.com/goxpdl/goxpdl/xpdl"
)

// free is a machine whose states a, b and c go wherever their input's
// "next" says; "set" sets the variable note, "enterFails" and
// "resumeFails" make the next state's Enter and this Resume fail. end is
// final. It counts the calls of its functions.
type free struct {
	mu     sync.Mutex
	calls  map[string]int
	inputs []map[string]any
}

var errBoom = errors.New("boom")

func (f *free) count(what string, in map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[what]++
	f.inputs = append(f.inputs, in)
}

func (f *free) called(what string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[what]
}

func (f *free) definition() statemachine.Definition {
	enter := func(_ context.Context, sc *statemachine.StateContext) error {
		f.count("enter "+sc.State, sc.Input)
		if sc.Input["enterFails"] == sc.State {
			return fmt.Errorf("enter %s: %w", sc.State, errBoom)
		}
		if sc.From == "" {
			sc.Set("visits", int64(0))
		}
		sc.Set("visits", sc.Var("visits").(int64)+1)
		return nil
	}
	resume := func(_ context.Context, sc *statemachine.StateContext, b statemachine.Bookmark, in map[string]any) (string, error) {
		f.count("resume "+sc.State, in)
		if b.State != sc.State || b.Instance != sc.Instance || b.Machine != "free" {
			return "", fmt.Errorf("resume %s got bookmark %s", sc.State, b)
		}
		if in["resumeFails"] == true {
			return "", fmt.Errorf("resume %s: %w", sc.State, errBoom)
		}
		if v, ok := in["set"]; ok {
			sc.Set("note", v)
		}
		if v, ok := in["setOther"]; ok {
			sc.Set("other", v)
		}
		next, _ := in["next"].(string)
		return next, nil
	}
	return statemachine.Definition{
		ID: "free", Initial: "a",
		Vars: []statemachine.Var{
			{Name: "note", Type: xpdl.Basic(xpdl.BasicString)},
			{Name: "visits", Type: xpdl.Basic(xpdl.BasicInteger)},
		},
		States: []statemachine.State{
			{Name: "a", Enter: enter, Resume: resume},
			{Name: "b", Enter: enter, Resume: resume},
			{Name: "c", Enter: enter, Resume: resume},
			{Name: "end", Final: true, Enter: enter},
		},
	}
}

// fixture is a started engine with a deployed machine.
type fixture struct {
	t   *testing.T
	ctx context.Context
	h   *enginetest.Harness
	e   *engine.Engine
	m   *statemachine.Machine
}

// setup starts an engine (enginetest) on db with the machine of def,
// created before the engine starts, and deploys it.
func setup(t *testing.T, db *gorm.DB, def statemachine.Definition, opts ...enginetest.Option) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: t.Context()}
	opts = append(opts, enginetest.WithDB(db), enginetest.WithSetup(func(e *engine.Engine) {
		m, err := statemachine.New(e, def)
		require.NoError(t, err)
		f.m = m
	}))
	f.h = enginetest.New(t, opts...)
	f.e = f.h.Engine()
	_, err := f.m.Deploy(f.ctx)
	require.NoError(t, err)
	return f
}

func (f *fixture) start(input map[string]any) statemachine.Step {
	f.t.Helper()
	step, err := f.m.Start(f.ctx, input)
	require.NoError(f.t, err)
	return step
}

func (f *fixture) resume(b statemachine.Bookmark, input map[string]any) statemachine.Step {
	f.t.Helper()
	step, err := f.m.Resume(f.ctx, b, input)
	require.NoError(f.t, err)
	return step
}

func (f *fixture) current(id int64) statemachine.Step {
	f.t.Helper()
	step, err := f.m.Current(f.ctx, id)
	require.NoError(f.t, err)
	return step
}

// trail is the history's visits as "state>next".
func (f *fixture) trail(id int64) []string {
	f.t.Helper()
	visits, err := f.m.History(f.ctx, id)
	require.NoError(f.t, err)
	var out []string
	for _, v := range visits {
		out = append(out, v.State+">"+v.Next)
	}
	return out
}

func TestResumeMovesOnRollsBackAndEnds(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		fr := &free{}
		f := setup(t, db, fr.definition())
		step := f.start(map[string]any{"hello": "world"})
		require.Equal(t, "a", step.State)
		require.Equal(t, statemachine.Bookmark{Machine: "free", State: "a", Instance: step.Instance, WorkItem: step.Bookmark.WorkItem}, step.Bookmark)
		require.Equal(t, map[string]any{"hello": "world"}, fr.inputs[0], "the initial Enter sees the start's input")

		step = f.resume(step.Bookmark, map[string]any{"next": "b", "set": "to b", "n": 1.5})
		require.Equal(t, "b", step.State)
		require.Equal(t, "b", step.Bookmark.State)
		vars := f.h.Vars(step.Instance)
		require.Equal(t, "to b", vars["note"], "Resume's Set is kept")
		require.Equal(t, int64(2), vars["visits"], "Enter of b read and set what the start's Enter set")

		// A rollback: b goes back to a, which is entered again.
		step = f.resume(step.Bookmark, map[string]any{"next": "a"})
		require.Equal(t, "a", step.State)
		// The same state again: a new visit with a new bookmark.
		again := f.resume(step.Bookmark, map[string]any{"next": "a"})
		require.Equal(t, "a", again.State)
		require.NotEqual(t, step.Bookmark, again.Bookmark)

		done := f.resume(again.Bookmark, map[string]any{"next": "end"})
		require.Equal(t, statemachine.Step{Instance: step.Instance, State: "end", Done: true}, done)
		require.Equal(t, done, f.current(step.Instance))
		require.Equal(t, wftype.ProcessCompleted, f.h.Instance(step.Instance).State)
		require.Equal(t, int64(5), f.h.Vars(step.Instance)["visits"], "a, b, a, a and end were entered")
		require.Equal(t, []string{"a>b", "b>a", "a>a", "a>end", "end>"}, f.trail(step.Instance))

		visits, err := f.m.History(f.ctx, step.Instance)
		require.NoError(t, err)
		require.Equal(t, statemachine.HostUser, visits[0].By)
		require.Equal(t, map[string]any{"next": "b", "set": "to b", "n": 1.5}, visits[0].Input, "the history keeps each input")
		require.NotNil(t, visits[0].Left)

		// The engine's own history shows the rollback as the state's
		// activity completing and starting again.
		f.h.WaitForState(step.Instance, "a", wftype.ActivityCompleted)
		f.h.WaitForState(step.Instance, "b", wftype.ActivityCompleted)
		f.h.WaitForState(step.Instance, "a", wftype.ActivityInActive)
		f.h.WaitForState(step.Instance, "end", wftype.ActivityCompleted)
	})
}

func TestRestartResumesAnOldBookmark(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		first := setup(t, db, (&free{}).definition())
		dep, err := first.m.Deploy(first.ctx)
		require.NoError(t, err)
		step := first.start(nil)
		text := step.Bookmark.String()
		require.NoError(t, first.e.Stop(first.ctx))

		// A new engine on the same database, with the machine declared
		// again: the same XPDL, so no new version.
		fr := &free{}
		second := setup(t, db, fr.definition())
		again, err := second.m.Deploy(second.ctx)
		require.NoError(t, err)
		require.Equal(t, dep, again, "a restart deploys nothing new")

		b, err := statemachine.ParseBookmark(text)
		require.NoError(t, err)
		require.Equal(t, step, second.current(step.Instance))
		next := second.resume(b, map[string]any{"next": "b"})
		require.Equal(t, "b", next.State)
		require.Equal(t, 1, fr.called("resume a"), "the new engine ran the machine's code")
		require.Equal(t, statemachine.Step{Instance: step.Instance, State: "end", Done: true},
			second.resume(next.Bookmark, map[string]any{"next": "end"}))
	})
}

func TestRestartEntersAnInstanceTheFirstEngineLeft(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := t.Context()
		// An engine that stops before it runs the instance it started
		// (here: never started; a crash after the commit leaves the
		// same).
		e, err := engine.New(engine.Config{DB: db, Clock: timer.NewFake(enginetest.Epoch), NodeID: t.Name() + "-first",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		m, err := statemachine.New(e, (&free{}).definition())
		require.NoError(t, err)
		_, err = m.Deploy(ctx)
		require.NoError(t, err)
		var id int64
		require.NoError(t, e.Transaction(ctx, db, func(tx *gorm.DB) error {
			id, err = m.StartTx(ctx, tx, statemachine.StartOpts{Input: map[string]any{"k": "v"}, BusinessKey: "order-7"})
			return err
		}))
		pending, err := m.Current(ctx, id)
		require.NoError(t, err)
		require.Equal(t, statemachine.Step{Instance: id}, pending, "not entered yet")
		m.Close()
		_, err = m.Wait(ctx, id)
		require.ErrorIs(t, err, engine.ErrNotRunning, "a closed machine does not wait")
		require.NoError(t, e.Stop(ctx))

		fr := &free{}
		second := setup(t, db, fr.definition())
		step, err := second.m.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "a", step.State)
		require.Equal(t, []map[string]any{{"k": "v"}}, fr.inputs, "the second engine entered the initial state with the start's input")
		require.Equal(t, "order-7", second.h.Instance(id).BusinessKey)
	})
}

func TestStaleAndForeignBookmarks(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		fr := &free{}
		f := setup(t, db, fr.definition())
		first := f.start(nil)
		second := f.resume(first.Bookmark, map[string]any{"next": "b"})

		_, err := f.m.Resume(f.ctx, first.Bookmark, map[string]any{"next": "c"})
		require.ErrorIs(t, err, statemachine.ErrBookmarkResumed)
		require.ErrorIs(t, err, statemachine.ErrStaleBookmark)
		var be *statemachine.BookmarkError
		require.ErrorAs(t, err, &be)
		require.Equal(t, first.Bookmark, be.Bookmark)
		require.Equal(t, 1, fr.called("resume a"), "a stale bookmark runs nothing")
		require.Equal(t, second, f.current(first.Instance), "and changes nothing")

		forged := second.Bookmark
		forged.State = "c"
		_, err = f.m.Resume(f.ctx, forged, nil)
		require.ErrorIs(t, err, statemachine.ErrBadBookmark)
		other := second.Bookmark
		other.Machine = "approval"
		_, err = f.m.Resume(f.ctx, other, nil)
		require.ErrorIs(t, err, statemachine.ErrBadBookmark)
		_, err = f.m.Resume(f.ctx, statemachine.Bookmark{}, nil)
		require.ErrorIs(t, err, statemachine.ErrBadBookmark)
		gone := second.Bookmark
		gone.WorkItem += 1000
		_, err = f.m.Resume(f.ctx, gone, nil)
		require.ErrorIs(t, err, statemachine.ErrStaleBookmark)
		require.NotErrorIs(t, err, statemachine.ErrBookmarkResumed)

		require.NoError(t, f.m.Abort(f.ctx, second.Instance, "customer cancelled"))
		aborted := f.current(second.Instance)
		require.Equal(t, statemachine.Step{Instance: second.Instance, State: "b", Aborted: true}, aborted)
		_, err = f.m.Resume(f.ctx, second.Bookmark, map[string]any{"next": "end"})
		require.ErrorIs(t, err, statemachine.ErrStaleBookmark)
		require.NotErrorIs(t, err, statemachine.ErrBookmarkResumed)
		require.Zero(t, fr.called("resume b"))
		visits, err := f.m.History(f.ctx, second.Instance)
		require.NoError(t, err)
		require.True(t, visits[len(visits)-1].Withdrawn)
		require.ErrorIs(t, f.m.Abort(f.ctx, second.Instance, "again"), engine.ErrInstanceFinished)
	})
}

func TestUnknownNextStateChangesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		fr := &free{}
		f := setup(t, db, fr.definition())
		step := f.start(nil)
		steps := f.h.Steps(step.Instance)
		vars := f.h.Vars(step.Instance)

		_, err := f.m.Resume(f.ctx, step.Bookmark, map[string]any{"next": "nowhere", "set": "lost"})
		require.ErrorIs(t, err, statemachine.ErrUnknownState)
		var ue *statemachine.UnknownStateError
		require.ErrorAs(t, err, &ue)
		require.Equal(t, statemachine.UnknownStateError{Machine: "free", From: "a", State: "nowhere"}, *ue)
		_, err = f.m.Resume(f.ctx, step.Bookmark, map[string]any{}) // no next at all
		require.ErrorIs(t, err, statemachine.ErrUnknownState)

		require.Equal(t, step, f.current(step.Instance), "the bookmark is still valid")
		require.Equal(t, vars, f.h.Vars(step.Instance), "Resume's Set was not kept")
		require.Equal(t, steps, f.h.Steps(step.Instance), "the history has nothing new")
		require.Equal(t, workitem.Offered, f.h.WorkItems(step.Instance)[0].State)

		require.Equal(t, "b", f.resume(step.Bookmark, map[string]any{"next": "b"}).State)
	})
}

func TestRefusedMovesChangeNothing(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		fr := &free{}
		f := setup(t, db, fr.definition())
		step := f.start(nil)
		vars := f.h.Vars(step.Instance)
		refused := func(input map[string]any, want error) {
			t.Helper()
			_, err := f.m.Resume(f.ctx, step.Bookmark, input)
			require.ErrorIs(t, err, want)
			require.Equal(t, step, f.current(step.Instance))
			require.Equal(t, vars, f.h.Vars(step.Instance))
		}
		refused(map[string]any{"next": "b", "resumeFails": true}, errBoom)
		refused(map[string]any{"next": "b", "enterFails": "b", "set": "x"}, errBoom)
		refused(map[string]any{"next": "b", "setOther": "x"}, engine.ErrUnknownVariable)
		refused(map[string]any{"next": "b", "set": 42}, engine.ErrWrongType)
		refused(map[string]any{"next": "b", "f": func() {}}, engine.ErrBadArgument)
		require.Equal(t, 3, fr.called("enter b"), "the input that is no JSON was refused before any call")
		require.Equal(t, "b", f.resume(step.Bookmark, map[string]any{"next": "b"}).State)
	})
}

func TestConcurrentResumeOneWins(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		f := setup(t, db, (&free{}).definition())
		step := f.start(nil)
		const n = 6
		errs := make([]error, n)
		steps := make([]statemachine.Step, n)
		var wg sync.WaitGroup
		ready := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-ready
				steps[i], errs[i] = f.m.Resume(f.ctx, step.Bookmark, map[string]any{"next": "b", "set": fmt.Sprint("winner ", i)})
			})
		}
		close(ready)
		wg.Wait()
		won := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, won, "two Resumes of one bookmark succeeded")
				won = i
				continue
			}
			require.ErrorIs(t, err, statemachine.ErrBookmarkResumed, "Resume %d", i)
		}
		require.NotEqual(t, -1, won, "no Resume succeeded")
		require.Equal(t, "b", steps[won].State)
		require.Equal(t, steps[won], f.current(step.Instance))
		require.Len(t, f.h.WorkItems(step.Instance), 1)
		require.Equal(t, fmt.Sprint("winner ", won), f.h.Vars(step.Instance)["note"])
		require.Equal(t, []string{"a>b", "b>"}, f.trail(step.Instance))
	})
}

func TestResumeInTheHostsTransaction(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		require.NoError(t, db.Exec("CREATE TABLE notes (id BIGINT PRIMARY KEY, text VARCHAR(100))").Error)
		def := (&free{}).definition()
		// a's Resume writes a note in the engine's transaction.
		resumeA := def.States[0].Resume
		def.States[0].Resume = func(ctx context.Context, sc *statemachine.StateContext, b statemachine.Bookmark, in map[string]any) (string, error) {
			if err := sc.Tx.Exec("INSERT INTO notes (id, text) VALUES (?, ?)", b.WorkItem, "left a").Error; err != nil {
				return "", err
			}
			return resumeA(ctx, sc, b, in)
		}
		f := setup(t, db, def)
		step := f.start(nil)
		notes := func() int64 {
			var n int64
			require.NoError(t, db.Table("notes").Count(&n).Error)
			return n
		}

		errRollback := errors.New("the host changed its mind")
		err := f.e.Transaction(f.ctx, db, func(tx *gorm.DB) error {
			next, err := f.m.ResumeTx(f.ctx, tx, step.Bookmark, statemachine.ResumeOpts{Input: map[string]any{"next": "b"}})
			require.NoError(t, err)
			require.Equal(t, "b", next.State, "the Step is what the transaction sees")
			return errRollback
		})
		require.ErrorIs(t, err, errRollback)
		require.Equal(t, step, f.current(step.Instance), "rolled back with the host's transaction")
		require.Zero(t, notes())

		var next statemachine.Step
		require.NoError(t, f.e.Transaction(f.ctx, db, func(tx *gorm.DB) error {
			var err error
			next, err = f.m.ResumeTx(f.ctx, tx, step.Bookmark, statemachine.ResumeOpts{Input: map[string]any{"next": "b"}})
			if err != nil {
				return err
			}
			return tx.Exec("INSERT INTO notes (id, text) VALUES (?, ?)", -1, "the host's own row").Error
		}))
		f.h.Settle()
		require.Equal(t, next, f.current(step.Instance))
		require.Equal(t, int64(2), notes(), "the host's row and the Resume's commit with the move")

		_, err = f.m.ResumeTx(f.ctx, nil, next.Bookmark, statemachine.ResumeOpts{})
		require.ErrorIs(t, err, engine.ErrBadArgument)
	})
}

// org: bob reviews, alice writes.
const org = `
users:
  - id: alice
  - id: bob
    roles: [reviewers]
roles:
  - id: reviewers
`

func TestWhoMayResume(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		dir, err := resource.ParseOrg([]byte(org), resource.FormatYAML)
		require.NoError(t, err)
		def := (&free{}).definition()
		def.Roles = []string{"reviewers"}
		def.States[1].Performers = []string{"reviewers"} // b
		enterC := def.States[2].Enter
		def.States[2].Enter = func(ctx context.Context, sc *statemachine.StateContext) error {
			sc.Assign(sc.Input["assign"].(string))
			return enterC(ctx, sc)
		}
		f := setup(t, db, def, enginetest.WithDirectory(dir))
		step := f.start(nil)
		step = f.resume(step.Bookmark, map[string]any{"next": "b"}) // a is offered to nobody: the host resumes it

		worklist, err := f.e.Worklist(f.ctx, "bob", engine.WorklistFilter{})
		require.NoError(t, err)
		require.Len(t, worklist.WorkItems, 1)
		require.Equal(t, step.Bookmark.WorkItem, worklist.WorkItems[0].ID, "b is in the reviewers' worklists")
		for _, user := range []string{"", "alice"} {
			_, err := f.m.ResumeWith(f.ctx, step.Bookmark, statemachine.ResumeOpts{User: user, Input: map[string]any{"next": "c"}})
			require.ErrorIs(t, err, engine.ErrNotAllowed, "user %q", user)
			require.Equal(t, step, f.current(step.Instance))
		}
		step, err = f.m.ResumeWith(f.ctx, step.Bookmark, statemachine.ResumeOpts{User: "bob", Input: map[string]any{"next": "c", "assign": "alice"}})
		require.NoError(t, err)
		worklist, err = f.e.Worklist(f.ctx, "alice", engine.WorklistFilter{})
		require.NoError(t, err)
		require.Len(t, worklist.WorkItems, 1, "Enter assigned c to alice")
		require.Equal(t, step.Bookmark.WorkItem, worklist.WorkItems[0].ID)
		visits, err := f.m.History(f.ctx, step.Instance)
		require.NoError(t, err)
		require.Equal(t, "bob", visits[1].By)
	})
}

func TestInitialEnterFailingLeavesTheInstanceStuck(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		f := setup(t, db, (&free{}).definition())
		step, err := f.m.Start(f.ctx, map[string]any{"enterFails": "a"})
		require.ErrorIs(t, err, statemachine.ErrStuck)
		var se *statemachine.StuckError
		require.ErrorAs(t, err, &se)
		require.NotZero(t, step.Instance, "the instance exists")
		require.Equal(t, step.Instance, se.Instance)
		require.Contains(t, se.Diagnosis, "enter a: boom")
		require.Len(t, f.h.Incidents(step.Instance), 1, "an operator sees an incident")
		_, err = f.m.Current(f.ctx, step.Instance)
		require.ErrorIs(t, err, statemachine.ErrStuck)

		// The cause fixed (here: the input the failing Enter read), an
		// operator retries the machine's activity: the set runs again
		// from the start.
		require.NoError(t, f.e.SetVariables(f.ctx, step.Instance, engine.Values{Variables: map[string]any{"_input": map[string]any{}}}, engine.Op{}))
		var block int64
		for _, a := range f.h.Activities(step.Instance) {
			if a.Activity == "_machine" {
				block = a.ID
			}
		}
		require.NoError(t, f.e.RetryActivity(f.ctx, step.Instance, block, engine.Op{Reason: "fixed"}))
		entered, err := f.m.Wait(f.ctx, step.Instance)
		require.NoError(t, err)
		require.Equal(t, "a", entered.State)
	})
}

func TestSuspendedInstanceRefusesResume(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		fr := &free{}
		f := setup(t, db, fr.definition())
		step := f.start(nil)
		require.NoError(t, f.e.Suspend(f.ctx, step.Instance, engine.Op{Reason: "audit"}))
		_, err := f.m.Resume(f.ctx, step.Bookmark, map[string]any{"next": "b"})
		require.ErrorIs(t, err, wftype.ErrIllegalState)
		require.NotErrorIs(t, err, statemachine.ErrStaleBookmark)
		require.Zero(t, fr.called("resume a"))
		require.NoError(t, f.e.Resume(f.ctx, step.Instance, engine.Op{}))
		require.Equal(t, "b", f.resume(step.Bookmark, map[string]any{"next": "b"}).State)
	})
}

func TestInitialStateFinal(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		def := (&free{}).definition()
		def.Initial = "end"
		f := setup(t, db, def)
		step := f.start(nil)
		require.Equal(t, statemachine.Step{Instance: step.Instance, State: "end", Done: true}, step)
		require.Equal(t, []string{"end>"}, f.trail(step.Instance))
	})
}

func TestNewVersionKeepsOldInstancesOnTheirStates(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		f := setup(t, db, (&free{}).definition())
		d1, err := f.m.Deploy(f.ctx)
		require.NoError(t, err)
		old := f.start(nil)

		// The program changes: a state is added. Declared again (here on
		// the running engine), it deploys a second version.
		def := (&free{}).definition()
		def.States = append(def.States, statemachine.State{Name: "extra", Resume: def.States[0].Resume})
		m2, err := statemachine.New(f.e, def)
		require.NoError(t, err)
		t.Cleanup(m2.Close)
		d2, err := m2.Deploy(f.ctx)
		require.NoError(t, err)
		require.Equal(t, d1.Version+1, d2.Version)

		_, err = m2.Resume(f.ctx, old.Bookmark, map[string]any{"next": "extra"})
		require.ErrorIs(t, err, statemachine.ErrUnknownState, "the old version cannot route to the new state")
		fresh, err := m2.Start(f.ctx, nil)
		require.NoError(t, err)
		next, err := m2.Resume(f.ctx, fresh.Bookmark, map[string]any{"next": "extra"})
		require.NoError(t, err)
		require.Equal(t, "extra", next.State)
		moved, err := m2.Resume(f.ctx, old.Bookmark, map[string]any{"next": "b"})
		require.NoError(t, err)
		require.Equal(t, "b", moved.State, "the old instance goes on with the new code")
	})
}

func TestInstancesOfOtherProcesses(t *testing.T) {
	t.Parallel()
	f := setup(t, dbtest.OpenSQLiteMemory(t), (&free{}).definition())
	p := xpdl.NewProcess("plain")
	p.UserTask("work")
	pkg, err := xpdl.NewPackage("plain").Process(p).Build()
	require.NoError(t, err)
	f.h.DeployPackage(pkg)
	id := f.h.Start("plain", nil)

	_, err = f.m.Current(f.ctx, id)
	require.ErrorIs(t, err, statemachine.ErrNotMachine)
	_, err = f.m.Wait(f.ctx, id)
	require.ErrorIs(t, err, statemachine.ErrNotMachine)
	require.ErrorIs(t, f.m.Abort(f.ctx, id, "no"), statemachine.ErrNotMachine)
	_, err = f.m.History(f.ctx, id)
	require.ErrorIs(t, err, statemachine.ErrNotMachine)
	_, err = f.m.Current(f.ctx, id+1000)
	require.ErrorIs(t, err, engine.ErrNotFound)
	require.Equal(t, wftype.ProcessRunning, f.h.Instance(id).State, "nothing was done to it")
}

func TestStartBeforeDeploy(t *testing.T) {
	t.Parallel()
	h := enginetest.New(t)
	m, err := statemachine.New(h.Engine(), (&free{}).definition())
	require.NoError(t, err)
	t.Cleanup(m.Close)
	_, err = m.Start(t.Context(), nil)
	require.ErrorIs(t, err, statemachine.ErrNotDeployed)
	_, err = m.StartTx(t.Context(), nil, statemachine.StartOpts{})
	require.ErrorIs(t, err, engine.ErrBadArgument)
}

func TestDefinitionProblems(t *testing.T) {
	t.Parallel()
	h := enginetest.New(t)
	resume := func(context.Context, *statemachine.StateContext, statemachine.Bookmark, map[string]any) (string, error) {
		return "", nil
	}
	ok := func() statemachine.Definition {
		return statemachine.Definition{ID: "m", Initial: "a", States: []statemachine.State{
			{Name: "a", Resume: resume}, {Name: "z", Final: true},
		}}
	}
	for _, tc := range []struct {
		name   string
		change func(d *statemachine.Definition)
		want   string
	}{
		{"no id", func(d *statemachine.Definition) { d.ID = "" }, `ID "" is not a name`},
		{"id with a slash", func(d *statemachine.Definition) { d.ID = "a/b" }, `ID "a/b" is not a name`},
		{"no states", func(d *statemachine.Definition) { d.States = nil }, "no states"},
		{"no final state", func(d *statemachine.Definition) { d.States = d.States[:1] }, "no final state"},
		{"unknown initial", func(d *statemachine.Definition) { d.Initial = "x" }, `Initial "x" is not a state`},
		{"reserved name", func(d *statemachine.Definition) { d.States[0].Name = "_next" }, `state "_next" is not a name`},
		{"duplicate state", func(d *statemachine.Definition) { d.States[1].Name = "a" }, `state "a" has the name of state "a"`},
		{"no resume", func(d *statemachine.Definition) { d.States[0].Resume = nil }, `state "a" has no Resume`},
		{"final with resume", func(d *statemachine.Definition) { d.States[1].Resume = resume }, `state "z" is final and has a Resume`},
		{"final with performers", func(d *statemachine.Definition) { d.States[1].Performers = []string{"x"} }, `state "z" is final and has Performers`},
		{"blank performer", func(d *statemachine.Definition) { d.States[0].Performers = []string{" "} }, `state "a" has an empty performer`},
		{"variable named as a state", func(d *statemachine.Definition) {
			d.Vars = []statemachine.Var{{Name: "a", Type: xpdl.Basic(xpdl.BasicString)}}
		}, `variable "a" has the name of state "a"`},
		{"untyped variable", func(d *statemachine.Definition) { d.Vars = []statemachine.Var{{Name: "v"}} }, `variable "v" has no type`},
		{"bad role", func(d *statemachine.Definition) { d.Roles = []string{"two words"} }, `role "two words" is not a name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := ok()
			tc.change(&d)
			_, err := statemachine.New(h.Engine(), d)
			require.ErrorIs(t, err, statemachine.ErrInvalid)
			var de *statemachine.DefinitionError
			require.ErrorAs(t, err, &de)
			require.Contains(t, de.Error(), tc.want)
		})
	}
	_, err := statemachine.New(nil, ok())
	require.ErrorIs(t, err, engine.ErrBadArgument)
	m, err := statemachine.New(h.Engine(), ok())
	require.NoError(t, err, "the definition the table changes is valid")
	m.Close()
	m.Close()
}

func TestParseBookmark(t *testing.T) {
	t.Parallel()
	b := statemachine.Bookmark{Machine: "approval", State: "review", Instance: 12, WorkItem: 345}
	require.Equal(t, "approval/review/12/345", b.String())
	back, err := statemachine.ParseBookmark(b.String())
	require.NoError(t, err)
	require.Equal(t, b, back)
	data, err := json.Marshal(map[string]statemachine.Bookmark{"b": b})
	require.NoError(t, err)
	require.JSONEq(t, `{"b": "approval/review/12/345"}`, string(data))
	var decoded map[string]statemachine.Bookmark
	require.NoError(t, json.Unmarshal(data, &decoded))
	require.Equal(t, b, decoded["b"])
	assert.True(t, statemachine.Bookmark{}.IsZero())
	assert.Empty(t, statemachine.Bookmark{}.String())
	data, err = json.Marshal(statemachine.Step{Instance: 12, State: "review", Bookmark: b})
	require.NoError(t, err)
	require.JSONEq(t, `{"instance": 12, "state": "review", "bookmark": "approval/review/12/345"}`, string(data))
	var step statemachine.Step // not entered yet: no bookmark
	data, err = json.Marshal(step)
	require.NoError(t, err)
	var stepBack statemachine.Step
	require.NoError(t, json.Unmarshal(data, &stepBack), "the zero Bookmark goes through JSON: %s", data)
	require.Equal(t, step, stepBack)
	for _, bad := range []string{"", "approval/review/12", "approval/review/12/345/6", "approval/review/x/345",
		"approval/review/0/345", "approval/review/12/-1", "approval/re view/12/345", "/review/12/345"} {
		_, err := statemachine.ParseBookmark(bad)
		require.ErrorIs(t, err, statemachine.ErrBadBookmark, "%q", bad)
	}
	require.ErrorIs(t, json.Unmarshal([]byte(`{"b": "nonsense"}`), &decoded), statemachine.ErrBadBookmark)
}

// The console shows a machine's instance like any other: its page, with
// the diagram of the compiled process and the bookmark's work item.
func TestConsoleShowsAMachine(t *testing.T) {
	t.Parallel()
	f := setup(t, dbtest.OpenSQLiteMemory(t), (&free{}).definition())
	step := f.start(nil)
	step = f.resume(step.Bookmark, map[string]any{"next": "b"})
	h, err := console.New(f.e, console.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	get := func(path string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(f.ctx, http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body.String())
		return rec.Body.String()
	}
	page := get(fmt.Sprintf("/instances/%d", step.Instance))
	require.Contains(t, page, "<svg", "the diagram is drawn")
	require.Contains(t, page, "_machine")
	var api struct {
		WorkItems []struct {
			ID       int64  `json:"id"`
			Activity string `json:"activity"`
		} `json:"workitems"`
	}
	require.NoError(t, json.Unmarshal([]byte(get(fmt.Sprintf("/api/instances/%d", step.Instance))), &api))
	require.Contains(t, api.WorkItems, struct {
		ID       int64  `json:"id"`
		Activity string `json:"activity"`
	}{step.Bookmark.WorkItem, "b"})
}
