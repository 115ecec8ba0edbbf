package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// timer returns an unstored pending timer of process instance piID, due
// at due.
func timer(piID int64, kind string, due time.Time) store.Timer {
	return store.Timer{
		ProcessInstanceID: piID, Kind: kind, Key: "k", DueAt: due, Payload: []byte(`{"n":1}`), CreatedAt: t0,
	}
}

// insertTimers stores timers, giving a new id to those without one, and
// returns them as stored.
func insertTimers(t *testing.T, b bundle, timers ...store.Timer) []store.Timer {
	t.Helper()
	for i := range timers {
		if timers[i].ID == 0 {
			timers[i].ID = nextID()
		}
	}
	got, err := b.s.InsertTimers(b.ctx, timers)
	require.NoError(t, err)
	require.Len(t, got, len(timers))
	return got
}

// getTimer reads the timer with the given id.
func getTimer(t *testing.T, b bundle, id int64) store.Timer {
	t.Helper()
	got, err := b.s.GetTimer(b.ctx, id)
	require.NoError(t, err)
	return got
}

// listTimers lists the timers matching params.
func listTimers(t *testing.T, b bundle, params store.ListTimersParams) []store.Timer {
	t.Helper()
	got, err := b.s.ListTimers(b.ctx, params)
	require.NoError(t, err)
	return got
}

// fireDue fires the timers due at now, at most limit.
func fireDue(t *testing.T, b bundle, now time.Time, limit int) []store.Timer {
	t.Helper()
	got, err := b.s.FireDueTimers(b.ctx, store.FireDueTimersParams{Now: now, Limit: limit})
	require.NoError(t, err)
	return got
}

// fired is tm as FireDueTimers leaves it when it fires it at now.
func fired(tm store.Timer, now time.Time) store.Timer {
	tm.State, tm.FiredAt = store.TimerFired, normPtr(&now)
	return tm
}

func timerIDs(timers []store.Timer) []int64 {
	return ids(timers, func(tm store.Timer) int64 { return tm.ID })
}

func (h *harness) testTimers(t *testing.T) {
	t.Run("InsertRoundTrip", func(t *testing.T) {
		b := h.setup(t)
		zone := time.FixedZone("UTC-3", -3*3600)
		in := []store.Timer{
			{
				ProcessInstanceID: 7, ActivityInstanceID: 8, Kind: "deadline", Key: "0",
				DueAt: at(time.Hour).In(zone), Count: 3, Payload: []byte(`{"deadline":0}`), CreatedAt: t0.In(zone),
				// The caller's ID is kept. Ignored: a new timer has
				// neither fired nor been paused. An empty State is pending.
				ID: nextID(), FiredAt: ptr(t0), PausedAt: ptr(t0),
			},
			// Argument order, not due order, is the order returned.
			{ID: nextID(), DefinitionID: 5, Kind: "start", Key: "main", State: store.TimerPending, DueAt: at(time.Minute), Payload: []byte(`{}`), CreatedAt: at(time.Second)},
			// A state given is kept.
			{ID: nextID(), ProcessInstanceID: 7, Kind: "limit", State: store.TimerPaused, DueAt: at(2 * time.Hour), PausedAt: ptr(at(-time.Hour)), CreatedAt: t0},
			// Empty payloads come back nil.
			{ID: nextID(), ProcessInstanceID: 9, ActivityInstanceID: 10, Kind: "reminder", Key: "r", DueAt: at(-time.Minute), Payload: []byte{}, CreatedAt: t0},
		}
		got, err := b.s.InsertTimers(b.ctx, in)
		require.NoError(t, err)
		require.Len(t, got, len(in))
		for i := range got {
			require.Equal(t, in[i].ID, got[i].ID, "the caller's ids, in argument order")
		}
		want := []store.Timer{
			{
				ID: got[0].ID, ProcessInstanceID: 7, ActivityInstanceID: 8, Kind: "deadline", Key: "0", State: store.TimerPending,
				DueAt: norm(at(time.Hour)), Count: 3, Payload: []byte(`{"deadline":0}`), CreatedAt: norm(t0),
			},
			{
				ID: got[1].ID, DefinitionID: 5, Kind: "start", Key: "main", State: store.TimerPending,
				DueAt: norm(at(time.Minute)), Payload: []byte(`{}`), CreatedAt: norm(at(time.Second)),
			},
			{ID: got[2].ID, ProcessInstanceID: 7, Kind: "limit", State: store.TimerPaused, DueAt: norm(at(2 * time.Hour)), CreatedAt: norm(t0)},
			{
				ID: got[3].ID, ProcessInstanceID: 9, ActivityInstanceID: 10, Kind: "reminder", Key: "r", State: store.TimerPending,
				DueAt: norm(at(-time.Minute)), CreatedAt: norm(t0),
			},
		}
		require.Equal(t, want, got)
		for _, w := range want {
			read := getTimer(t, b, w.ID)
			require.Equal(t, w, read)
			require.Equal(t, time.UTC, read.DueAt.Location())
			require.Equal(t, time.UTC, read.CreatedAt.Location())
		}
		require.Equal(t, []store.Timer{want[3], want[1], want[0], want[2]}, listTimers(t, b, store.ListTimersParams{}),
			"ListTimers: earliest DueAt first")

		none, err := b.s.InsertTimers(b.ctx, nil)
		require.NoError(t, err)
		require.Empty(t, none)
		require.Len(t, listTimers(t, b, store.ListTimersParams{}), len(in))
	})

	t.Run("InsertLargeBatchKeepsOrder", func(t *testing.T) {
		// More rows than one INSERT carries: still one batch, IDs in
		// argument order.
		b := h.setup(t)
		const n = 1200
		in := make([]store.Timer, n)
		for i := range in {
			in[i] = timer(int64(i%7+1), "event", at(-time.Duration(i)*time.Second))
			in[i].Key = fmt.Sprintf("t%04d", i)
		}
		got := insertTimers(t, b, in...)
		for i := range got {
			require.Equal(t, in[i].Key, got[i].Key)
			if i > 0 {
				require.Greater(t, got[i].ID, got[i-1].ID)
			}
		}
		// Due times fall as IDs rise: the list runs backwards.
		list := listTimers(t, b, store.ListTimersParams{})
		require.Len(t, list, n)
		for i, tm := range list {
			require.Equal(t, got[n-1-i], tm)
		}
	})

	t.Run("GetNotFound", func(t *testing.T) {
		b := h.setup(t)
		tms := insertTimers(t, b, timer(1, "deadline", t0))
		_, err := b.s.GetTimer(b.ctx, tms[0].ID+1000)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.GetTimer(b.ctx, 0)
		require.ErrorIs(t, err, store.ErrNotFound)
		n, err := b.s.DeleteTimers(b.ctx, store.DeleteTimersParams{IDs: []int64{tms[0].ID}})
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		_, err = b.s.GetTimer(b.ctx, tms[0].ID)
		require.ErrorIs(t, err, store.ErrNotFound, "a deleted timer")
	})

	t.Run("FireDueOrderAndLimit", func(t *testing.T) {
		b := h.setup(t)
		start := timer(0, "start", at(-time.Minute))
		start.DefinitionID = 3
		tms := insertTimers(t, b,
			timer(1, "deadline", at(-time.Minute)),     // 0
			timer(1, "limit", t0),                      // 1: due exactly now
			timer(2, "event", at(-time.Hour)),          // 2: earliest
			start,                                      // 3: due with 0, later ID
			timer(2, "reminder", at(time.Microsecond)), // 4: not yet due
			timer(3, "deadline", at(time.Hour)),        // 5
		)

		got := fireDue(t, b, t0, 2)
		require.Equal(t, []store.Timer{fired(tms[2], t0), fired(tms[0], t0)}, got, "earliest DueAt first, up to Limit")
		for _, tm := range got {
			require.Equal(t, tm, getTimer(t, b, tm.ID), "what is returned is what is stored")
		}

		got = fireDue(t, b, t0, 10)
		require.Equal(t, []store.Timer{fired(tms[3], t0), fired(tms[1], t0)}, got, "equal DueAt by ID; DueAt == Now is due")
		require.Empty(t, fireDue(t, b, t0, 10), "fired timers do not fire again")
		for _, i := range []int{4, 5} {
			require.Equal(t, tms[i], getTimer(t, b, tms[i].ID), "not due: untouched")
		}

		now := at(time.Microsecond)
		got = fireDue(t, b, now, 10)
		require.Equal(t, []store.Timer{fired(tms[4], now)}, got)
		later := at(24 * time.Hour)
		got = fireDue(t, b, later, 10)
		require.Equal(t, []store.Timer{fired(tms[5], later)}, got)
		require.Empty(t, fireDue(t, b, at(48*time.Hour), 10))

		// Earlier firings keep their FiredAt.
		require.Equal(t, fired(tms[2], t0), getTimer(t, b, tms[2].ID))
		require.Empty(t, listTimers(t, b, store.ListTimersParams{States: []store.TimerState{store.TimerPending}}))
	})

	t.Run("FireDueAtBoundary", func(t *testing.T) {
		// Microsecond steps and whole seconds must order correctly on
		// every dialect (SQLite compares timestamps as text).
		b := h.setup(t)
		whole := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
		tms := insertTimers(t, b,
			timer(1, "a", whole.Add(time.Microsecond)),
			timer(1, "b", whole),
			timer(1, "c", whole.Add(1500*time.Nanosecond)), // stored as whole + 1µs
		)
		require.Equal(t, []int64{tms[1].ID, tms[0].ID, tms[2].ID}, timerIDs(listTimers(t, b, store.ListTimersParams{})))
		next, ok, err := b.s.NextTimerDue(b.ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, whole, next)

		require.Empty(t, fireDue(t, b, whole.Add(-time.Microsecond), 10))
		require.Equal(t, []int64{tms[1].ID}, timerIDs(fireDue(t, b, whole, 10)))
		require.Equal(t, []int64{tms[0].ID, tms[2].ID}, timerIDs(fireDue(t, b, whole.Add(time.Microsecond), 10)))
	})

	t.Run("FireInvalidLimit", func(t *testing.T) {
		b := h.setup(t)
		tms := insertTimers(t, b, timer(1, "deadline", t0))
		for _, limit := range []int{0, -1} {
			_, err := b.s.FireDueTimers(b.ctx, store.FireDueTimersParams{Now: t0, Limit: limit})
			require.Error(t, err, "limit %d", limit)
		}
		require.Equal(t, tms[0], getTimer(t, b, tms[0].ID), "the invalid calls fired nothing")
	})

	t.Run("FireRolledBackIsFiredAgain", func(t *testing.T) {
		// A caller that fails after firing (it could not write the
		// timer's event) leaves the timers pending for the next one.
		b := h.setup(t)
		tms := insertTimers(t, b, timer(1, "deadline", t0), timer(2, "deadline", t0))
		errBoom := errors.New("boom")
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			got, err := tx.FireDueTimers(ctx, store.FireDueTimersParams{Now: t0, Limit: 10})
			require.NoError(t, err)
			require.Equal(t, timerIDs(tms), timerIDs(got))
			read, err := tx.GetTimer(ctx, tms[0].ID)
			require.NoError(t, err)
			require.Equal(t, store.TimerFired, read.State, "the transaction reads its own firing")
			return errBoom
		})
		require.ErrorIs(t, err, errBoom)
		for _, tm := range tms {
			require.Equal(t, tm, getTimer(t, b, tm.ID))
		}
		now := at(time.Second)
		require.Equal(t, []store.Timer{fired(tms[0], now), fired(tms[1], now)}, fireDue(t, b, now, 10))
	})

	t.Run("PausedTimersDoNotFire", func(t *testing.T) {
		b := h.setup(t)
		tms := insertTimers(t, b,
			timer(1, "deadline", at(-time.Hour)),
			timer(2, "deadline", at(-time.Hour)),
			timer(1, "limit", at(time.Minute)),
		)
		n, err := b.s.PauseTimers(b.ctx, store.PauseTimersParams{ProcessInstanceID: 1, At: t0})
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		now := at(1000 * time.Hour)
		require.Equal(t, []store.Timer{fired(tms[1], now)}, fireDue(t, b, now, 10))
		require.Empty(t, fireDue(t, b, now, 10))
		for _, i := range []int{0, 2} {
			require.Equal(t, store.TimerPaused, getTimer(t, b, tms[i].ID).State)
		}
	})

	t.Run("ConcurrentFiringExactlyOnce", func(t *testing.T) {
		// Several schedulers fire timers in parallel, each call in a
		// transaction of its own: every timer fires exactly once. On MySQL
		// this exercises SKIP LOCKED; on SQLite the transactions are
		// serialised by the database's write lock.
		b := h.setup(t)
		const total, workers, limit = 200, 4, 7
		in := make([]store.Timer, total)
		for i := range in {
			// Many equal due times, so that ties are broken by ID.
			in[i] = timer(int64(i%10+1), "event", at(-time.Duration(i%13)*time.Second))
		}
		tms := insertTimers(t, b, in...)
		insertTimers(t, b, timer(1, "event", at(time.Hour))) // not due

		firedBy := make([][]int64, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				// Stop at the first empty answer: with SKIP LOCKED it can
				// also mean "all locked by the others", but the caller
				// holding them goes on until it finds none.
				for range total {
					var got []store.Timer
					err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
						var err error
						got, err = tx.FireDueTimers(ctx, store.FireDueTimersParams{Now: t0, Limit: limit})
						return err
					})
					if err != nil {
						errs[w] = err
						return
					}
					if len(got) == 0 {
						return
					}
					for _, tm := range got {
						if tm.State != store.TimerFired {
							errs[w] = fmt.Errorf("timer %d returned in state %q", tm.ID, tm.State)
							return
						}
					}
					firedBy[w] = append(firedBy[w], timerIDs(got)...)
				}
			})
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
		var all []int64
		for _, f := range firedBy {
			all = append(all, f...)
		}
		require.ElementsMatch(t, timerIDs(tms), all, "every due timer exactly once")

		require.Empty(t, fireDue(t, b, t0, total))
		require.Len(t, listTimers(t, b, store.ListTimersParams{States: []store.TimerState{store.TimerFired}}), total)
		pending := listTimers(t, b, store.ListTimersParams{States: []store.TimerState{store.TimerPending}})
		require.Len(t, pending, 1)
		require.Equal(t, norm(at(time.Hour)), pending[0].DueAt)
	})

	t.Run("SkipLocked", func(t *testing.T) {
		// With SKIP LOCKED a caller does not wait for another's open
		// firing transaction: it fires the timers that transaction has not
		// locked. The other fires in InTx, as a scheduler does that writes
		// the timers' events in the same transaction.
		b := h.setup(t)
		if !b.s.Capabilities().SupportsSkipLocked {
			t.Skipf("%s serialises firing; nothing to skip", b.s.Capabilities().Dialect)
		}
		tms := insertTimers(t, b,
			timer(1, "deadline", at(-4*time.Second)),
			timer(2, "deadline", at(-3*time.Second)),
			timer(3, "deadline", at(-2*time.Second)),
			timer(4, "deadline", at(-time.Second)),
		)
		ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
		defer cancel()
		var outer, inner []store.Timer
		err := b.s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			if outer, err = tx.FireDueTimers(ctx, store.FireDueTimersParams{Now: t0, Limit: 2}); err != nil {
				return err
			}
			// The outer firing is not committed yet; its rows are locked.
			inner, err = b.s.FireDueTimers(ctx, store.FireDueTimersParams{Now: t0, Limit: 10})
			return err
		})
		require.NoError(t, err)
		require.Equal(t, []int64{tms[0].ID, tms[1].ID}, timerIDs(outer))
		require.Equal(t, []int64{tms[2].ID, tms[3].ID}, timerIDs(inner))
	})

	t.Run("NextTimerDue", func(t *testing.T) {
		b := h.setup(t)
		next := func() (time.Time, bool) {
			t.Helper()
			due, ok, err := b.s.NextTimerDue(b.ctx)
			require.NoError(t, err)
			return due, ok
		}
		_, ok := next()
		require.False(t, ok, "no timers")

		tms := insertTimers(t, b,
			timer(1, "deadline", at(time.Hour)),
			timer(2, "deadline", at(2*time.Minute)),
			timer(3, "deadline", at(time.Minute)),
		)
		due, ok := next()
		require.True(t, ok)
		require.Equal(t, norm(at(time.Minute)), due)

		require.Len(t, fireDue(t, b, at(time.Minute), 10), 1)
		due, ok = next()
		require.True(t, ok)
		require.Equal(t, norm(at(2*time.Minute)), due, "fired timers are not next")

		n, err := b.s.PauseTimers(b.ctx, store.PauseTimersParams{ProcessInstanceID: 2, At: at(time.Minute)})
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		due, ok = next()
		require.True(t, ok)
		require.Equal(t, norm(at(time.Hour)), due, "paused timers are not next")

		require.Len(t, fireDue(t, b, at(time.Hour), 10), 1)
		_, ok = next()
		require.False(t, ok, "only paused and fired timers left")

		n, err = b.s.ResumeTimers(b.ctx, store.ResumeTimersParams{ProcessInstanceID: 2, At: at(3 * time.Hour)})
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		due, ok = next()
		require.True(t, ok)
		require.Equal(t, norm(at(2*time.Minute+3*time.Hour-time.Minute)), due, "the resumed timer, pushed back")
		require.Equal(t, due, getTimer(t, b, tms[1].ID).DueAt)
	})

	t.Run("CountTimers", func(t *testing.T) {
		b := h.setup(t)
		count := func(now time.Time) store.TimerCounts {
			t.Helper()
			c, err := b.s.CountTimers(b.ctx, now)
			require.NoError(t, err)
			return c
		}
		require.Equal(t, store.TimerCounts{}, count(t0), "no timers")

		insertTimers(t, b,
			timer(1, "deadline", at(time.Minute)),
			timer(1, "limit", at(2*time.Minute)),
			timer(2, "deadline", at(time.Hour)),
			timer(3, "event", at(time.Minute)),
		)
		require.Equal(t, store.TimerCounts{Pending: 4}, count(t0))
		require.Equal(t, store.TimerCounts{Pending: 4, Due: 2}, count(at(time.Minute)), "due at now counts")

		require.Len(t, fireDue(t, b, at(time.Minute), 1), 1)
		n, err := b.s.PauseTimers(b.ctx, store.PauseTimersParams{ProcessInstanceID: 2, At: at(time.Minute)})
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		require.Equal(t, store.TimerCounts{Pending: 2, Due: 1, Paused: 1, Fired: 1}, count(at(time.Minute)),
			"a paused timer is not due, whatever its DueAt")
		require.Equal(t, store.TimerCounts{Pending: 2, Due: 2, Paused: 1, Fired: 1}, count(at(2*time.Hour)))

		_, err = b.s.CountTimers(b.ctx, time.Time{})
		require.Error(t, err, "no time")
	})

	t.Run("ListFiltersAndOrder", func(t *testing.T) {
		b := h.setup(t)
		with := func(tm store.Timer, f func(tm *store.Timer)) store.Timer { f(&tm); return tm }
		tms := insertTimers(t, b,
			with(timer(1, "deadline", at(3*time.Minute)), func(tm *store.Timer) { tm.ActivityInstanceID = 10 }), // 0
			with(timer(1, "limit", at(time.Minute)), func(tm *store.Timer) { tm.ActivityInstanceID = 11 }),      // 1
			timer(1, "limit", at(2*time.Minute)), // 2: of the whole process
			with(timer(2, "deadline", at(time.Minute)), func(tm *store.Timer) { tm.ActivityInstanceID = 20 }), // 3: ties with 1
			with(timer(0, "start", at(4*time.Minute)), func(tm *store.Timer) { tm.DefinitionID = 5 }),         // 4
			with(timer(0, "start", at(-time.Minute)), func(tm *store.Timer) { tm.DefinitionID = 6 }),          // 5
			with(timer(2, "event", at(-2*time.Minute)), func(tm *store.Timer) { tm.ActivityInstanceID = 21 }), // 6
		)
		require.Len(t, fireDue(t, b, t0, 10), 2) // 6 and 5
		n, err := b.s.PauseTimers(b.ctx, store.PauseTimersParams{ProcessInstanceID: 2, At: t0})
		require.NoError(t, err)
		require.Equal(t, int64(1), n) // 3

		// Read them back as they are now: 5 and 6 fired, 3 paused.
		now := make([]store.Timer, len(tms))
		for i, tm := range tms {
			now[i] = getTimer(t, b, tm.ID)
		}
		pick := func(idx ...int) []store.Timer {
			out := make([]store.Timer, len(idx))
			for i, j := range idx {
				out[i] = now[j]
			}
			return out
		}
		states := func(s ...store.TimerState) []store.TimerState { return s }
		for name, c := range map[string]struct {
			params store.ListTimersParams
			want   []store.Timer
		}{
			"all":                     {store.ListTimersParams{}, pick(6, 5, 1, 3, 2, 0, 4)},
			"process":                 {store.ListTimersParams{ProcessInstanceID: 1}, pick(1, 2, 0)},
			"other process":           {store.ListTimersParams{ProcessInstanceID: 2}, pick(6, 3)},
			"no such process":         {store.ListTimersParams{ProcessInstanceID: 99}, pick()},
			"activity":                {store.ListTimersParams{ActivityInstanceID: 10}, pick(0)},
			"fired activity":          {store.ListTimersParams{ActivityInstanceID: 21}, pick(6)},
			"process and activity":    {store.ListTimersParams{ProcessInstanceID: 2, ActivityInstanceID: 20}, pick(3)},
			"activity of another":     {store.ListTimersParams{ProcessInstanceID: 1, ActivityInstanceID: 20}, pick()},
			"definition":              {store.ListTimersParams{DefinitionID: 5}, pick(4)},
			"other definition":        {store.ListTimersParams{DefinitionID: 6}, pick(5)},
			"pending":                 {store.ListTimersParams{States: states(store.TimerPending)}, pick(1, 2, 0, 4)},
			"paused":                  {store.ListTimersParams{States: states(store.TimerPaused)}, pick(3)},
			"fired":                   {store.ListTimersParams{States: states(store.TimerFired)}, pick(6, 5)},
			"paused or fired":         {store.ListTimersParams{States: states(store.TimerPaused, store.TimerFired)}, pick(6, 5, 3)},
			"kind":                    {store.ListTimersParams{Kinds: []string{"limit"}}, pick(1, 2)},
			"kinds":                   {store.ListTimersParams{Kinds: []string{"deadline", "start"}}, pick(5, 3, 0, 4)},
			"no such kind":            {store.ListTimersParams{Kinds: []string{"Limit"}}, pick()},
			"limit":                   {store.ListTimersParams{Limit: 3}, pick(6, 5, 1)},
			"process, kind and limit": {store.ListTimersParams{ProcessInstanceID: 1, Kinds: []string{"limit", "deadline"}, Limit: 2}, pick(1, 2)},
			"pending of a process":    {store.ListTimersParams{ProcessInstanceID: 2, States: states(store.TimerPending)}, pick()},
			"after a tie":             {store.ListTimersParams{After: &store.TimerCursor{DueAt: now[1].DueAt, ID: now[1].ID}}, pick(3, 2, 0, 4)},
			"after the tie":           {store.ListTimersParams{After: &store.TimerCursor{DueAt: now[3].DueAt, ID: now[3].ID}, Limit: 2}, pick(2, 0)},
			"after in another zone":   {store.ListTimersParams{After: &store.TimerCursor{DueAt: now[2].DueAt.In(time.FixedZone("x", -7200)), ID: now[2].ID}}, pick(0, 4)},
			"after the last":          {store.ListTimersParams{After: &store.TimerCursor{DueAt: now[4].DueAt, ID: now[4].ID}}, pick()},
		} {
			got := listTimers(t, b, c.params)
			if len(c.want) == 0 {
				require.Empty(t, got, name)
				continue
			}
			require.Equal(t, c.want, got, name)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		b := h.setup(t)
		with := func(tm store.Timer, ai int64) store.Timer { tm.ActivityInstanceID = ai; return tm }
		start := timer(0, "start", at(time.Hour))
		start.DefinitionID = 5
		tms := insertTimers(t, b,
			with(timer(1, "deadline", at(time.Hour)), 10),  // 0
			with(timer(1, "deadline", at(time.Hour)), 11),  // 1
			with(timer(1, "limit", at(time.Hour)), 12),     // 2
			timer(1, "limit", at(time.Hour)),               // 3: of the whole process
			with(timer(1, "reminder", at(-time.Hour)), 10), // 4: fired below
			with(timer(2, "deadline", at(time.Hour)), 20),  // 5
			with(timer(2, "deadline", at(time.Hour)), 10),  // 6: same activity id, other process
			start, // 7
		)
		require.Equal(t, []int64{tms[4].ID}, timerIDs(fireDue(t, b, t0, 10)))
		left := func(idx ...int) {
			t.Helper()
			want := make([]int64, len(idx))
			for i, j := range idx {
				want[i] = tms[j].ID
			}
			require.ElementsMatch(t, want, timerIDs(listTimers(t, b, store.ListTimersParams{})))
		}
		del := func(params store.DeleteTimersParams) int64 {
			t.Helper()
			n, err := b.s.DeleteTimers(b.ctx, params)
			require.NoError(t, err)
			return n
		}

		// A filter without process nor IDs would delete too much.
		for name, p := range map[string]store.DeleteTimersParams{
			"empty":              {},
			"activities only":    {ActivityInstanceIDs: []int64{10, 11}},
			"states only":        {States: []store.TimerState{store.TimerPending, store.TimerFired}},
			"activity and state": {ActivityInstanceIDs: []int64{10}, States: []store.TimerState{store.TimerFired}},
			"empty IDs":          {IDs: []int64{}},
		} {
			_, err := b.s.DeleteTimers(b.ctx, p)
			require.Error(t, err, name)
		}
		left(0, 1, 2, 3, 4, 5, 6, 7)

		require.Equal(t, int64(2), del(store.DeleteTimersParams{
			ProcessInstanceID: 1, ActivityInstanceIDs: []int64{10, 11}, States: []store.TimerState{store.TimerPending},
		}), "activities of the process, pending only")
		left(2, 3, 4, 5, 6, 7)

		require.Equal(t, int64(2), del(store.DeleteTimersParams{IDs: []int64{tms[2].ID, tms[5].ID, tms[7].ID + 1000}}))
		left(3, 4, 6, 7)

		require.Zero(t, del(store.DeleteTimersParams{IDs: []int64{tms[7].ID}, States: []store.TimerState{store.TimerFired}}))
		require.Equal(t, int64(1), del(store.DeleteTimersParams{IDs: []int64{tms[7].ID}}), "a deployment's timer by ID")
		left(3, 4, 6)

		require.Equal(t, int64(1), del(store.DeleteTimersParams{ProcessInstanceID: 1, IDs: []int64{tms[3].ID, tms[6].ID}}),
			"IDs within the process")
		left(4, 6)

		require.Equal(t, int64(1), del(store.DeleteTimersParams{ProcessInstanceID: 1}), "fired timers too")
		require.Zero(t, del(store.DeleteTimersParams{ProcessInstanceID: 1}))
		left(6)
		require.Equal(t, tms[6], getTimer(t, b, tms[6].ID))
	})

	t.Run("DeleteInTxRollsBack", func(t *testing.T) {
		b := h.setup(t)
		tms := insertTimers(t, b, timer(1, "deadline", t0), timer(1, "limit", t0))
		errBoom := errors.New("boom")
		err := b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			n, err := tx.DeleteTimers(ctx, store.DeleteTimersParams{ProcessInstanceID: 1})
			require.NoError(t, err)
			require.Equal(t, int64(2), n)
			return errBoom
		})
		require.ErrorIs(t, err, errBoom)
		require.Equal(t, tms, listTimers(t, b, store.ListTimersParams{ProcessInstanceID: 1}))
	})

	t.Run("Pause", func(t *testing.T) {
		b := h.setup(t)
		start := timer(0, "start", at(time.Hour))
		start.DefinitionID = 1 // the same number as the instance, another thing
		tms := insertTimers(t, b,
			timer(1, "deadline", at(time.Hour)), // 0
			timer(1, "limit", at(2*time.Hour)),  // 1
			timer(1, "event", at(-time.Minute)), // 2: fired below
			timer(2, "deadline", at(time.Hour)), // 3: another instance
			start,                               // 4
		)
		require.Equal(t, []int64{tms[2].ID}, timerIDs(fireDue(t, b, t0, 10)))
		firedTimer := getTimer(t, b, tms[2].ID)

		pause := func(piID int64, when time.Time) int64 {
			t.Helper()
			n, err := b.s.PauseTimers(b.ctx, store.PauseTimersParams{ProcessInstanceID: piID, At: when})
			require.NoError(t, err)
			return n
		}
		pausedAt := at(10*time.Minute + 123*time.Microsecond + 456*time.Nanosecond)
		require.Equal(t, int64(2), pause(1, pausedAt))
		for _, i := range []int{0, 1} {
			want := tms[i]
			want.State, want.PausedAt = store.TimerPaused, normPtr(&pausedAt)
			require.Equal(t, want, getTimer(t, b, tms[i].ID), "paused, DueAt kept")
		}
		require.Equal(t, firedTimer, getTimer(t, b, tms[2].ID), "a fired timer stays fired")
		require.Equal(t, tms[3], getTimer(t, b, tms[3].ID), "another instance's timer stays pending")
		require.Equal(t, tms[4], getTimer(t, b, tms[4].ID), "a deployment's timer stays pending")

		require.Zero(t, pause(1, at(20*time.Minute)), "nothing pending left")
		require.Equal(t, normPtr(&pausedAt), getTimer(t, b, tms[0].ID).PausedAt, "the first pause stands")
		require.Zero(t, pause(99, t0), "no such instance")
	})

	t.Run("Resume", func(t *testing.T) {
		b := h.setup(t)
		tms := insertTimers(t, b,
			timer(1, "deadline", at(time.Hour)),      // 0
			timer(1, "limit", at(5*time.Minute)),     // 1: overdue when paused
			timer(1, "event", at(-time.Minute)),      // 2: fired below
			timer(2, "deadline", at(time.Hour)),      // 3: another instance, paused too
			timer(3, "deadline", at(1000*time.Hour)), // 4: another instance, pending
		)
		require.Equal(t, []int64{tms[2].ID}, timerIDs(fireDue(t, b, at(-time.Minute), 1)))
		firedTimer := getTimer(t, b, tms[2].ID)

		pause := func(piID int64, when time.Time) {
			t.Helper()
			_, err := b.s.PauseTimers(b.ctx, store.PauseTimersParams{ProcessInstanceID: piID, At: when})
			require.NoError(t, err)
		}
		resume := func(piID int64, when time.Time) int64 {
			t.Helper()
			n, err := b.s.ResumeTimers(b.ctx, store.ResumeTimersParams{ProcessInstanceID: piID, At: when})
			require.NoError(t, err)
			return n
		}
		pausedAt := at(10 * time.Minute)
		pause(1, pausedAt)
		pause(2, pausedAt)
		other := getTimer(t, b, tms[3].ID)
		require.Equal(t, store.TimerPaused, other.State)

		// Paused for two days, an hour and 7µs, across midnight.
		resumedAt := pausedAt.Add(49*time.Hour + 7*time.Microsecond)
		pausedFor := norm(resumedAt).Sub(norm(pausedAt))
		require.Equal(t, int64(2), resume(1, resumedAt))
		for _, i := range []int{0, 1} {
			want := tms[i]
			want.DueAt = norm(tms[i].DueAt).Add(pausedFor)
			require.Equal(t, want, getTimer(t, b, tms[i].ID), "pending again with the time it had left")
		}
		require.Equal(t, firedTimer, getTimer(t, b, tms[2].ID), "a fired timer is left alone")
		require.Equal(t, other, getTimer(t, b, tms[3].ID), "another instance's paused timer stays paused")
		require.Equal(t, tms[4], getTimer(t, b, tms[4].ID))

		require.Zero(t, resume(1, resumedAt.Add(time.Hour)), "nothing paused left: DueAt is not pushed again")
		require.Zero(t, resume(3, resumedAt), "pending timers are not resumed")
		require.Zero(t, resume(99, resumedAt), "no such instance")
		require.Equal(t, norm(tms[0].DueAt).Add(pausedFor), getTimer(t, b, tms[0].ID).DueAt)
		require.Equal(t, tms[4], getTimer(t, b, tms[4].ID))

		// The timer that was overdue when paused is overdue again by as
		// much: it fires at its new DueAt, not before.
		firstDue := norm(tms[1].DueAt).Add(pausedFor)
		require.Empty(t, fireDue(t, b, firstDue.Add(-time.Microsecond), 10))
		require.Equal(t, []int64{tms[1].ID}, timerIDs(fireDue(t, b, firstDue, 10)))

		// A second pause pushes back again by its own length only.
		pause(1, resumedAt.Add(time.Minute))
		require.Equal(t, int64(1), resume(1, resumedAt.Add(31*time.Minute)))
		want := tms[0]
		want.DueAt = norm(tms[0].DueAt).Add(pausedFor + 30*time.Minute)
		require.Equal(t, want, getTimer(t, b, tms[0].ID))
	})
}
