package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

func (h *harness) testProcessInstances(t *testing.T) {
	t.Run("RoundTrip", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		in := store.ProcessInstance{
			ID:               nextID(),
			DefinitionID:     def.ID,
			ProcessDefID:     "sub",
			ParentInstanceID: ptr(int64(7)),
			ParentActivityID: ptr(int64(8)),
			Depth:            3,
			State:            "Locking",
			Version:          42, // ignored: a new instance has version 1
			Diagnosis:        "no successor of activity A could fire",
			Tokens:           []byte(`{"J":1}`),
			CreatedAt:        t0,
			UpdatedAt:        at(time.Second),
			EndedAt:          ptr(at(time.Minute)),
			StartKey:         "order-42/approve",
			BusinessKey:      "order-42",
		}
		pi, err := b.s.InsertProcessInstance(b.ctx, in)
		require.NoError(t, err)
		require.Equal(t, in.ID, pi.ID, "the caller's id")
		want := in
		want.Version = 1
		want.CreatedAt, want.UpdatedAt, want.EndedAt = norm(in.CreatedAt), norm(in.UpdatedAt), normPtr(in.EndedAt)
		require.Equal(t, want, pi)

		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, want, got)
	})

	t.Run("CallerIDs", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		row := func(id int64) store.ProcessInstance {
			return store.ProcessInstance{ID: id, DefinitionID: def.ID, ProcessDefID: "main", State: "Running", CreatedAt: t0, UpdatedAt: t0}
		}
		first := newProcessInstance(t, b, def.ID)
		_, err := b.s.InsertProcessInstance(b.ctx, row(first.ID))
		require.ErrorIs(t, err, store.ErrDuplicate, "an id already stored")
		err = b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := tx.InsertProcessInstance(ctx, row(first.ID))
			return err
		})
		require.ErrorIs(t, err, store.ErrDuplicate, "an id already stored, in a transaction (possibly reported at commit)")
		for _, id := range []int64{0, -1} {
			_, err = b.s.InsertProcessInstance(b.ctx, row(id))
			require.Error(t, err, "id %d", id)
			require.NotErrorIs(t, err, store.ErrDuplicate)
		}
		big := []int64{nextID() + 1<<52, nextID() + 1<<52 + 1}
		bulk, err := b.s.InsertProcessInstances(b.ctx, []store.ProcessInstance{row(big[1]), row(big[0])})
		require.NoError(t, err)
		require.Equal(t, []int64{big[1], big[0]}, []int64{bulk[0].ID, bulk[1].ID}, "the callers' ids, in argument order")
		_, err = b.s.InsertProcessInstances(b.ctx, []store.ProcessInstance{row(nextID()), row(0)})
		require.Error(t, err, "one row without an id")
		_, err = b.s.InsertProcessInstances(b.ctx, []store.ProcessInstance{row(nextID()), row(big[0])})
		require.ErrorIs(t, err, store.ErrDuplicate, "one id already stored")
		page, err := b.s.ListProcessInstances(b.ctx, store.ListProcessInstancesParams{})
		require.NoError(t, err)
		ids := make([]int64, len(page))
		for i, p := range page {
			ids[i] = p.ID
		}
		require.Equal(t, []int64{first.ID, big[0], big[1]}, ids, "all or none")
	})

	t.Run("NilPointers", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, newDefinition(t, b).ID)
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Nil(t, got.ParentInstanceID)
		require.Nil(t, got.ParentActivityID)
		require.Nil(t, got.EndedAt)
		require.Empty(t, got.Diagnosis)
		require.Zero(t, got.Depth)
	})

	t.Run("NegativeDepth", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		_, err := b.s.InsertProcessInstance(b.ctx, store.ProcessInstance{
			ID:           nextID(),
			DefinitionID: def.ID, ProcessDefID: "main", State: "Running", Depth: -1, CreatedAt: t0, UpdatedAt: t0,
		})
		require.Error(t, err)
		page, err := b.s.ListProcessInstances(b.ctx, store.ListProcessInstancesParams{})
		require.NoError(t, err)
		require.Empty(t, page)
	})

	t.Run("NotFound", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.GetProcessInstance(b.ctx, 12345)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{ID: 12345, ExpectedVersion: 1, State: "Running", UpdatedAt: t0})
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NotErrorIs(t, err, store.ErrConflict)
	})

	t.Run("OptimisticUpdate", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, newDefinition(t, b).ID)

		v, err := b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
			ID: pi.ID, ExpectedVersion: 1, State: "Locking", Diagnosis: "stuck", Tokens: []byte(`{"t":2}`),
			UpdatedAt: at(time.Second), EndedAt: ptr(at(2 * time.Second)),
		})
		require.NoError(t, err)
		require.Equal(t, int64(2), v)

		// A second writer that also read version 1 loses.
		_, err = b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
			ID: pi.ID, ExpectedVersion: 1, State: "Completed", UpdatedAt: at(3 * time.Second),
		})
		require.ErrorIs(t, err, store.ErrConflict)
		require.NotErrorIs(t, err, store.ErrNotFound)

		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		want := pi
		want.State, want.Diagnosis, want.Version, want.Tokens = "Locking", "stuck", 2, []byte(`{"t":2}`)
		want.UpdatedAt, want.EndedAt = norm(at(time.Second)), normPtr(ptr(at(2*time.Second)))
		require.Equal(t, want, got)

		// The update replaces: empty diagnosis and nil EndedAt clear them.
		v, err = b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
			ID: pi.ID, ExpectedVersion: 2, State: "Running", UpdatedAt: at(4 * time.Second),
		})
		require.NoError(t, err)
		require.Equal(t, int64(3), v)
		got, err = b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, "Running", got.State)
		require.Empty(t, got.Diagnosis)
		require.Nil(t, got.Tokens)
		require.Nil(t, got.EndedAt)
		require.Equal(t, int64(3), got.Version)
		require.Equal(t, pi.CreatedAt, got.CreatedAt, "CreatedAt never changes")
	})

	t.Run("ConcurrentUpdateOneWins", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, newDefinition(t, b).ID)
		const n = 4
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{
					ID: pi.ID, ExpectedVersion: 1, State: "Suspended", UpdatedAt: at(time.Second),
				})
			})
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
				continue
			}
			require.ErrorIs(t, err, store.ErrConflict)
		}
		require.Equal(t, 1, wins)
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, int64(2), got.Version)
	})

	t.Run("StartKeyIsUnique", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		insert := func(key string) (store.ProcessInstance, error) {
			return b.s.InsertProcessInstance(b.ctx, store.ProcessInstance{
				ID:           nextID(),
				DefinitionID: def.ID, ProcessDefID: "main", State: "Initiated", CreatedAt: t0, UpdatedAt: t0, StartKey: key,
			})
		}
		first, err := insert("k1")
		require.NoError(t, err)
		_, err = insert("k1")
		require.ErrorIs(t, err, store.ErrDuplicate)
		_, err = insert("K1")
		require.NoError(t, err, "keys are case-sensitive")
		for range 2 {
			_, err = insert("")
			require.NoError(t, err, "any number of instances without a key")
		}
		got, err := b.s.ListProcessInstances(b.ctx, store.ListProcessInstancesParams{StartKey: "k1"})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, first.ID, got[0].ID)
		require.Equal(t, "k1", got[0].StartKey)
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		b := h.setup(t)
		d1 := newDefinition(t, b)
		d2 := newDefinition(t, b)
		insert := func(defID int64, state string, parent *int64) store.ProcessInstance {
			pi, err := b.s.InsertProcessInstance(b.ctx, store.ProcessInstance{
				ID:           nextID(),
				DefinitionID: defID, ProcessDefID: "main", ParentInstanceID: parent, State: state,
				CreatedAt: t0, UpdatedAt: t0,
			})
			require.NoError(t, err)
			return pi
		}
		p1 := insert(d1.ID, "Running", nil)
		p2 := insert(d1.ID, "Completed", nil)
		p3 := insert(d2.ID, "Running", &p1.ID)
		p4 := insert(d2.ID, "Suspended", &p1.ID)
		p5 := insert(d1.ID, "Running", &p2.ID)
		id := func(p store.ProcessInstance) int64 { return p.ID }

		list := func(params store.ListProcessInstancesParams) []int64 {
			t.Helper()
			got, err := b.s.ListProcessInstances(b.ctx, params)
			require.NoError(t, err)
			return ids(got, id)
		}
		require.Equal(t, []int64{p1.ID, p2.ID, p3.ID, p4.ID, p5.ID}, list(store.ListProcessInstancesParams{}))
		require.Equal(t, []int64{p1.ID, p3.ID, p5.ID}, list(store.ListProcessInstancesParams{States: []string{"Running"}}))
		require.Equal(t, []int64{p2.ID, p4.ID}, list(store.ListProcessInstancesParams{States: []string{"Suspended", "Completed"}}))
		require.Equal(t, []int64{p3.ID, p4.ID}, list(store.ListProcessInstancesParams{DefinitionID: d2.ID}))
		require.Equal(t, []int64{p3.ID, p4.ID}, list(store.ListProcessInstancesParams{ParentInstanceID: p1.ID}))
		require.Equal(t, []int64{p3.ID}, list(store.ListProcessInstancesParams{ParentInstanceID: p1.ID, States: []string{"Running"}}))
		require.Equal(t, []int64{p5.ID}, list(store.ListProcessInstancesParams{DefinitionID: d1.ID, States: []string{"Running"}, AfterID: p1.ID}))
		require.Empty(t, list(store.ListProcessInstancesParams{States: []string{"Terminated"}}))
		require.Equal(t, []int64{p2.ID, p4.ID}, list(store.ListProcessInstancesParams{IDs: []int64{p4.ID, p2.ID, p4.ID + 1000}}), "by ids, in id order, unknown ids left out")
		require.Equal(t, []int64{p4.ID}, list(store.ListProcessInstancesParams{IDs: []int64{p2.ID, p4.ID}, AfterID: p2.ID}))
		require.Equal(t, []int64{p1.ID}, list(store.ListProcessInstancesParams{IDs: []int64{p1.ID, p2.ID}, States: []string{"Running"}}))

		// Walk all instances two at a time.
		var walked []int64
		after := int64(0)
		for pages := 0; ; pages++ {
			require.Less(t, pages, 4)
			page := list(store.ListProcessInstancesParams{AfterID: after, Limit: 2})
			require.LessOrEqual(t, len(page), 2)
			if len(page) == 0 {
				break
			}
			walked = append(walked, page...)
			after = page[len(page)-1]
		}
		require.Equal(t, []int64{p1.ID, p2.ID, p3.ID, p4.ID, p5.ID}, walked)

		// Only instances without an unprocessed event: p1's is pending,
		// p3's processed.
		evs, err := b.s.InsertEvents(b.ctx, []store.Event{event("pending", p1.ID), event("done", p3.ID)})
		require.NoError(t, err)
		require.NoError(t, b.s.MarkEventsProcessed(b.ctx, store.MarkEventsProcessedParams{IDs: []int64{evs[1].ID}, ProcessedAt: t0}))
		require.Equal(t, []int64{p3.ID, p5.ID}, list(store.ListProcessInstancesParams{States: []string{"Running"}, NoPendingEvents: true}))

		// Only instances with an activity in a state: p5's activity is
		// Initiated, p3's Completed, and p1's Initiated one has an event
		// pending.
		newActivityInstance(t, b, p5.ID, "A")
		newActivityInstance(t, b, p1.ID, "A")
		done := newActivityInstance(t, b, p3.ID, "A")
		_, err = b.s.UpdateActivityInstance(b.ctx, store.UpdateActivityInstanceParams{
			ID: done.ID, ExpectedVersion: done.Version, State: "Completed", UpdatedAt: t0,
		})
		require.NoError(t, err)
		require.Equal(t, []int64{p1.ID, p5.ID}, list(store.ListProcessInstancesParams{ActivityState: "Initiated"}))
		require.Equal(t, []int64{p5.ID}, list(store.ListProcessInstancesParams{
			States: []string{"Running"}, ActivityState: "Initiated", NoPendingEvents: true,
		}))

		// Full rows come back, not just ids.
		got, err := b.s.ListProcessInstances(b.ctx, store.ListProcessInstancesParams{ParentInstanceID: p2.ID})
		require.NoError(t, err)
		require.Equal(t, []store.ProcessInstance{p5}, got)
	})

	t.Run("ListByProcessPackageTimeAndIncident", func(t *testing.T) {
		b := h.setup(t)
		pkg1 := newDefinition(t, b) // pkg version 1
		pkg2 := newDefinition(t, b) // pkg version 2
		other, err := b.s.InsertDefinition(b.ctx, store.InsertDefinitionParams{
			ID:        nextID(),
			PackageID: "other", Name: "Other", Source: []byte("<Package/>"), CreatedAt: t0,
		})
		require.NoError(t, err)
		require.Equal(t, 1, other.Version)
		insert := func(defID int64, proc string, created time.Time) store.ProcessInstance {
			pi, err := b.s.InsertProcessInstance(b.ctx, store.ProcessInstance{
				ID:           nextID(),
				DefinitionID: defID, ProcessDefID: proc, State: "Running", CreatedAt: created, UpdatedAt: created,
			})
			require.NoError(t, err)
			return pi
		}
		p1 := insert(pkg1.ID, "main", at(0))
		p2 := insert(pkg1.ID, "sub", at(time.Second))
		p3 := insert(pkg2.ID, "main", at(2*time.Second))
		p4 := insert(other.ID, "main", at(3*time.Second))
		list := func(params store.ListProcessInstancesParams) []int64 {
			t.Helper()
			got, err := b.s.ListProcessInstances(b.ctx, params)
			require.NoError(t, err)
			return ids(got, func(p store.ProcessInstance) int64 { return p.ID })
		}
		require.Equal(t, []int64{p1.ID, p3.ID, p4.ID}, list(store.ListProcessInstancesParams{ProcessDefID: "main"}))
		require.Equal(t, []int64{p1.ID, p2.ID, p3.ID}, list(store.ListProcessInstancesParams{PackageID: "pkg"}))
		require.Equal(t, []int64{p3.ID}, list(store.ListProcessInstancesParams{PackageID: "pkg", PackageVersion: 2}))
		require.Equal(t, []int64{p1.ID, p2.ID, p4.ID}, list(store.ListProcessInstancesParams{PackageVersion: 1}))
		require.Empty(t, list(store.ListProcessInstancesParams{PackageID: "none"}))
		require.Equal(t, []int64{p1.ID}, list(store.ListProcessInstancesParams{PackageID: "pkg", ProcessDefID: "main", PackageVersion: 1}))

		// Creation times: CreatedFrom is inclusive, CreatedBefore is not,
		// both at the store's microsecond precision.
		require.Equal(t, []int64{p2.ID, p3.ID}, list(store.ListProcessInstancesParams{CreatedFrom: ptr(at(time.Second)), CreatedBefore: ptr(at(3 * time.Second))}))
		require.Equal(t, []int64{p1.ID}, list(store.ListProcessInstancesParams{CreatedBefore: ptr(at(time.Second))}))
		require.Equal(t, []int64{p4.ID}, list(store.ListProcessInstancesParams{CreatedFrom: ptr(at(3 * time.Second).In(time.FixedZone("x", 3600)))}))

		// Open incidents by cause: a resolved incident does not count.
		ai := newActivityInstance(t, b, p2.ID, "Charge")
		_, _, err = b.s.RecordIncident(b.ctx, store.Incident{ID: nextID(), ProcessInstanceID: p2.ID, ActivityInstanceID: &ai.ID, ActivityDefID: "Charge", Cause: "application", Error: "boom", LastFailureAt: t0})
		require.NoError(t, err)
		_, _, err = b.s.RecordIncident(b.ctx, store.Incident{ID: nextID(), ProcessInstanceID: p3.ID, Cause: "locking", Error: "lost", LastFailureAt: t0})
		require.NoError(t, err)
		_, _, err = b.s.RecordIncident(b.ctx, store.Incident{ID: nextID(), ProcessInstanceID: p4.ID, Cause: "application", Error: "boom", LastFailureAt: t0})
		require.NoError(t, err)
		_, err = b.s.ResolveIncidents(b.ctx, store.ResolveIncidentsParams{ProcessInstanceID: p4.ID, At: t0, By: "alice", Resolution: "retried"})
		require.NoError(t, err)
		require.Equal(t, []int64{p2.ID}, list(store.ListProcessInstancesParams{OpenIncidentCause: "application"}))
		require.Equal(t, []int64{p3.ID}, list(store.ListProcessInstancesParams{OpenIncidentCause: "locking", PackageID: "pkg"}))
		require.Empty(t, list(store.ListProcessInstancesParams{OpenIncidentCause: "locking", PackageVersion: 1}))
	})

	t.Run("CountByState", func(t *testing.T) {
		b := h.setup(t)
		counts, err := b.s.CountProcessInstancesByState(b.ctx)
		require.NoError(t, err)
		require.Empty(t, counts)

		def := newDefinition(t, b)
		for _, state := range []string{"Running", "Running", "Completed", "Locking", "Running"} {
			_, err := b.s.InsertProcessInstance(b.ctx, store.ProcessInstance{
				ID:           nextID(),
				DefinitionID: def.ID, ProcessDefID: "main", State: state, CreatedAt: t0, UpdatedAt: t0,
			})
			require.NoError(t, err)
		}
		counts, err = b.s.CountProcessInstancesByState(b.ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"Running": 3, "Completed": 1, "Locking": 1}, counts)
	})

	t.Run("InvalidParams", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.InsertProcessInstance(b.ctx, store.ProcessInstance{ID: nextID(), State: "Running", UpdatedAt: t0})
		require.Error(t, err, "zero CreatedAt")
		pi := newProcessInstance(t, b, 1)
		_, err = b.s.UpdateProcessInstance(b.ctx, store.UpdateProcessInstanceParams{ID: pi.ID, ExpectedVersion: 1, State: "Running"})
		require.Error(t, err, "zero UpdatedAt")
		got, err := b.s.GetProcessInstance(b.ctx, pi.ID)
		require.NoError(t, err)
		require.Equal(t, pi, got)
	})
}

func (h *harness) testActivityInstances(t *testing.T) {
	t.Run("BatchRoundTrip", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, newDefinition(t, b).ID)
		in := []store.ActivityInstance{
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "A", State: "Initiated", Version: 9, CreatedAt: t0, UpdatedAt: t0},
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "B", ActivitySetID: "set1", BlockInstanceID: ptr(int64(5)),
				State: "Abnormal", Attempt: 3, Diagnosis: "application failed", CreatedAt: t0, UpdatedAt: at(time.Second), EndedAt: ptr(at(time.Hour))},
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "C", State: "Active", Attempt: 1, CreatedAt: at(time.Millisecond), UpdatedAt: at(time.Millisecond)},
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "D", State: "Waiting", CreatedAt: t0, UpdatedAt: t0, LoopState: []byte(`{"n":3}`)},
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "D", State: "InActive", CreatedAt: t0, UpdatedAt: t0, LoopParentID: ptr(int64(6)), LoopIndex: 2},
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "E", State: "Initiated", CreatedAt: t0, UpdatedAt: t0, AssignTo: "ann 🙂"},
		}
		got, err := b.s.InsertActivityInstances(b.ctx, in)
		require.NoError(t, err)
		require.Len(t, got, 6)
		for i := range in {
			want := in[i]
			want.ID, want.Version = got[i].ID, 1
			want.CreatedAt, want.UpdatedAt, want.EndedAt = norm(want.CreatedAt), norm(want.UpdatedAt), normPtr(want.EndedAt)
			require.Equal(t, want, got[i])
			if i > 0 {
				require.Greater(t, got[i].ID, got[i-1].ID, "IDs follow argument order")
			}
			read, err := b.s.GetActivityInstance(b.ctx, got[i].ID)
			require.NoError(t, err)
			require.Equal(t, want, read)
		}
	})

	t.Run("EmptyBatch", func(t *testing.T) {
		b := h.setup(t)
		got, err := b.s.InsertActivityInstances(b.ctx, nil)
		require.NoError(t, err)
		require.Empty(t, got)
	})

	t.Run("CallerIDs", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, newDefinition(t, b).ID)
		row := func(id int64, def string) store.ActivityInstance {
			return store.ActivityInstance{ID: id, ProcessInstanceID: pi.ID, ActivityDefID: def, State: "Initiated", CreatedAt: t0, UpdatedAt: t0}
		}
		// The caller's IDs are kept, in any order.
		got, err := b.s.InsertActivityInstances(b.ctx, []store.ActivityInstance{row(1<<52+7, "A"), row(5, "B")})
		require.NoError(t, err)
		require.Equal(t, []int64{1<<52 + 7, 5}, []int64{got[0].ID, got[1].ID})
		a, err := b.s.GetActivityInstance(b.ctx, 1<<52+7)
		require.NoError(t, err)
		require.Equal(t, "A", a.ActivityDefID)

		// A row without an ID is refused, and the others with it.
		for _, id := range []int64{0, -1} {
			_, err = b.s.InsertActivityInstances(b.ctx, []store.ActivityInstance{row(11, "C"), row(id, "D")})
			require.Error(t, err)
		}
		// A stored ID is a duplicate, and the transaction inserts nothing.
		err = b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.InsertActivityInstances(ctx, []store.ActivityInstance{row(12, "E"), row(5, "F")}); err != nil {
				return err
			}
			return tx.Flush(ctx)
		})
		require.ErrorIs(t, err, store.ErrDuplicate)
		list, err := b.s.ListActivityInstances(b.ctx, store.ListActivityInstancesParams{ProcessInstanceID: pi.ID})
		require.NoError(t, err)
		require.Len(t, list, 2, "nothing else written")
		require.Equal(t, int64(5), list[0].ID, "in ID order")
	})

	t.Run("LargeBatch", func(t *testing.T) {
		// Larger than any single statement should carry.
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		in := make([]store.ActivityInstance, 1234)
		for i := range in {
			in[i] = store.ActivityInstance{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "A", State: "Completed", CreatedAt: t0, UpdatedAt: t0}
		}
		got, err := b.s.InsertActivityInstances(b.ctx, in)
		require.NoError(t, err)
		require.Len(t, got, len(in))
		seen := map[int64]bool{}
		for _, ai := range got {
			require.False(t, seen[ai.ID])
			seen[ai.ID] = true
		}
		list, err := b.s.ListActivityInstances(b.ctx, store.ListActivityInstancesParams{ProcessInstanceID: pi.ID})
		require.NoError(t, err)
		require.Equal(t, got, list)
	})

	t.Run("OptimisticUpdate", func(t *testing.T) {
		b := h.setup(t)
		ai := newActivityInstance(t, b, 1, "A")
		v, err := b.s.UpdateActivityInstance(b.ctx, store.UpdateActivityInstanceParams{
			ID: ai.ID, ExpectedVersion: 1, State: "Abnormal", Attempt: 2, Diagnosis: "boom",
			UpdatedAt: at(time.Second), EndedAt: ptr(at(time.Second)),
		})
		require.NoError(t, err)
		require.Equal(t, int64(2), v)

		_, err = b.s.UpdateActivityInstance(b.ctx, store.UpdateActivityInstanceParams{
			ID: ai.ID, ExpectedVersion: 1, State: "Completed", UpdatedAt: at(2 * time.Second),
		})
		require.ErrorIs(t, err, store.ErrConflict)

		got, err := b.s.GetActivityInstance(b.ctx, ai.ID)
		require.NoError(t, err)
		want := ai
		want.State, want.Attempt, want.Diagnosis, want.Version = "Abnormal", 2, "boom", 2
		want.UpdatedAt, want.EndedAt = norm(at(time.Second)), normPtr(ptr(at(time.Second)))
		require.Equal(t, want, got)

		v, err = b.s.UpdateActivityInstance(b.ctx, store.UpdateActivityInstanceParams{
			ID: ai.ID, ExpectedVersion: 2, State: "Active", Attempt: 3, UpdatedAt: at(3 * time.Second),
		})
		require.NoError(t, err)
		require.Equal(t, int64(3), v)
		got, err = b.s.GetActivityInstance(b.ctx, ai.ID)
		require.NoError(t, err)
		require.Nil(t, got.EndedAt)
		require.Empty(t, got.Diagnosis)
		require.Equal(t, 3, got.Attempt)
	})

	t.Run("BatchOptimisticUpdate", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		rows, err := b.s.InsertActivityInstances(b.ctx, []store.ActivityInstance{
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "A", State: "Active", CreatedAt: t0, UpdatedAt: t0},
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "B", State: "Waiting", CreatedAt: t0, UpdatedAt: t0, LoopState: []byte(`{"n":1}`)},
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "C", State: "Abnormal", Diagnosis: "boom", CreatedAt: t0, UpdatedAt: t0, EndedAt: ptr(t0)},
		})
		require.NoError(t, err)
		a, bb, c := rows[0], rows[1], rows[2]
		_, err = b.s.UpdateActivityInstance(b.ctx, store.UpdateActivityInstanceParams{ID: bb.ID, ExpectedVersion: 1, State: "Waiting", UpdatedAt: at(time.Second), LoopState: bb.LoopState})
		require.NoError(t, err)
		require.NoError(t, b.s.UpdateActivityInstances(b.ctx, nil), "nothing to change")

		// Each row gets its own values, at its own version.
		require.NoError(t, b.s.UpdateActivityInstances(b.ctx, []store.UpdateActivityInstanceParams{
			{ID: a.ID, ExpectedVersion: 1, State: "Completed", Attempt: 1, UpdatedAt: at(2 * time.Second), EndedAt: ptr(at(2 * time.Second))},
			{ID: bb.ID, ExpectedVersion: 2, State: "Waiting", Attempt: 2, UpdatedAt: at(3 * time.Second), LoopState: []byte(`{"n":2}`)},
			{ID: c.ID, ExpectedVersion: 1, State: "Active", Attempt: 3, UpdatedAt: at(4 * time.Second)},
		}))
		want := map[int64]store.ActivityInstance{}
		for _, r := range rows {
			want[r.ID] = r
		}
		wa, wb, wc := want[a.ID], want[bb.ID], want[c.ID]
		wa.State, wa.Attempt, wa.Version, wa.UpdatedAt, wa.EndedAt = "Completed", 1, 2, norm(at(2*time.Second)), normPtr(ptr(at(2*time.Second)))
		wb.State, wb.Attempt, wb.Version, wb.UpdatedAt = "Waiting", 2, 3, norm(at(3*time.Second))
		wc.State, wc.Attempt, wc.Version, wc.UpdatedAt, wc.Diagnosis, wc.EndedAt = "Active", 3, 2, norm(at(4*time.Second)), "", nil
		for _, w := range []store.ActivityInstance{wa, wb, wc} {
			got, err := b.s.GetActivityInstance(b.ctx, w.ID)
			require.NoError(t, err)
			if w.ID == bb.ID {
				require.JSONEq(t, `{"n":2}`, string(got.LoopState))
				got.LoopState, w.LoopState = nil, nil
			}
			require.Equal(t, w, got)
		}

		// One stale version fails the batch; rolled back, nothing moved.
		err = b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			return tx.UpdateActivityInstances(ctx, []store.UpdateActivityInstanceParams{
				{ID: a.ID, ExpectedVersion: 2, State: "Abnormal", UpdatedAt: at(5 * time.Second)},
				{ID: bb.ID, ExpectedVersion: 2, State: "Completed", UpdatedAt: at(5 * time.Second)},
			})
		})
		require.ErrorIs(t, err, store.ErrConflict)
		err = b.s.InTx(b.ctx, func(ctx context.Context, tx store.Tx) error {
			return tx.UpdateActivityInstances(ctx, []store.UpdateActivityInstanceParams{
				{ID: a.ID, ExpectedVersion: 2, State: "Abnormal", UpdatedAt: at(5 * time.Second)},
				{ID: 12345, ExpectedVersion: 1, State: "Completed", UpdatedAt: at(5 * time.Second)},
			})
		})
		require.ErrorIs(t, err, store.ErrNotFound)
		for _, w := range []store.ActivityInstance{wa, wb} {
			got, err := b.s.GetActivityInstance(b.ctx, w.ID)
			require.NoError(t, err)
			require.Equal(t, w.Version, got.Version)
			require.Equal(t, w.State, got.State)
		}

		err = b.s.UpdateActivityInstances(b.ctx, []store.UpdateActivityInstanceParams{
			{ID: a.ID, ExpectedVersion: 2, State: "Abnormal"},
			{ID: bb.ID, ExpectedVersion: 3, State: "Completed", UpdatedAt: at(5 * time.Second)},
		})
		require.Error(t, err, "the zero time is refused")
		got, err := b.s.GetActivityInstance(b.ctx, bb.ID)
		require.NoError(t, err)
		require.Equal(t, int64(3), got.Version, "refused before writing")
	})

	t.Run("LoopStateUpdate", func(t *testing.T) {
		// A looping activity's bookkeeping is replaced by every update
		// (nil clears it); its instances' parent and index stay.
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		rows, err := b.s.InsertActivityInstances(b.ctx, []store.ActivityInstance{
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "A", State: "Waiting", CreatedAt: t0, UpdatedAt: t0, LoopState: []byte(`{"n":2}`)},
		})
		require.NoError(t, err)
		parent := rows[0]
		rows, err = b.s.InsertActivityInstances(b.ctx, []store.ActivityInstance{
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "A", State: "InActive", CreatedAt: t0, UpdatedAt: t0, LoopParentID: &parent.ID, LoopIndex: 1},
		})
		require.NoError(t, err)
		child := rows[0]
		v, err := b.s.UpdateActivityInstance(b.ctx, store.UpdateActivityInstanceParams{
			ID: parent.ID, ExpectedVersion: 1, State: "Waiting", UpdatedAt: at(time.Second), LoopState: []byte(`{"n":2,"completed":1}`),
		})
		require.NoError(t, err)
		got, err := b.s.GetActivityInstance(b.ctx, parent.ID)
		require.NoError(t, err)
		require.JSONEq(t, `{"n":2,"completed":1}`, string(got.LoopState))
		_, err = b.s.UpdateActivityInstance(b.ctx, store.UpdateActivityInstanceParams{
			ID: parent.ID, ExpectedVersion: v, State: "Completed", UpdatedAt: at(2 * time.Second),
		})
		require.NoError(t, err)
		got, err = b.s.GetActivityInstance(b.ctx, parent.ID)
		require.NoError(t, err)
		require.Nil(t, got.LoopState)

		_, err = b.s.UpdateActivityInstance(b.ctx, store.UpdateActivityInstanceParams{
			ID: child.ID, ExpectedVersion: 1, State: "Completed", UpdatedAt: at(time.Second),
		})
		require.NoError(t, err)
		got, err = b.s.GetActivityInstance(b.ctx, child.ID)
		require.NoError(t, err)
		require.Equal(t, &parent.ID, got.LoopParentID)
		require.Equal(t, 1, got.LoopIndex)
		require.Nil(t, got.LoopState)
	})

	t.Run("NotFound", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.GetActivityInstance(b.ctx, 12345)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.UpdateActivityInstance(b.ctx, store.UpdateActivityInstanceParams{ID: 12345, ExpectedVersion: 1, UpdatedAt: t0})
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("ListByProcessAndState", func(t *testing.T) {
		b := h.setup(t)
		p1 := newProcessInstance(t, b, 1)
		p2 := newProcessInstance(t, b, 1)
		mk := func(pi int64, def, state string) store.ActivityInstance {
			return store.ActivityInstance{ID: nextID(), ProcessInstanceID: pi, ActivityDefID: def, State: state, CreatedAt: t0, UpdatedAt: t0}
		}
		got, err := b.s.InsertActivityInstances(b.ctx, []store.ActivityInstance{
			mk(p1.ID, "A", "Completed"), mk(p2.ID, "A", "Active"), mk(p1.ID, "B", "Active"),
			mk(p1.ID, "C", "InActive"), mk(p1.ID, "D", "Active"),
		})
		require.NoError(t, err)
		list := func(params store.ListActivityInstancesParams) []store.ActivityInstance {
			t.Helper()
			l, err := b.s.ListActivityInstances(b.ctx, params)
			require.NoError(t, err)
			return l
		}
		require.Equal(t, []store.ActivityInstance{got[0], got[2], got[3], got[4]}, list(store.ListActivityInstancesParams{ProcessInstanceID: p1.ID}))
		require.Equal(t, []store.ActivityInstance{got[2], got[4]}, list(store.ListActivityInstancesParams{ProcessInstanceID: p1.ID, States: []string{"Active"}}))
		require.Equal(t, []store.ActivityInstance{got[2], got[3], got[4]}, list(store.ListActivityInstancesParams{ProcessInstanceID: p1.ID, States: []string{"InActive", "Active"}}))
		require.Equal(t, []store.ActivityInstance{got[1]}, list(store.ListActivityInstancesParams{ProcessInstanceID: p2.ID}))
		require.Empty(t, list(store.ListActivityInstancesParams{ProcessInstanceID: p2.ID, States: []string{"Completed"}}))
		require.Empty(t, list(store.ListActivityInstancesParams{ProcessInstanceID: 12345}))
		// Pages: AfterID and Limit.
		require.Equal(t, []store.ActivityInstance{got[0], got[2]}, list(store.ListActivityInstancesParams{ProcessInstanceID: p1.ID, Limit: 2}))
		require.Equal(t, []store.ActivityInstance{got[3], got[4]}, list(store.ListActivityInstancesParams{ProcessInstanceID: p1.ID, AfterID: got[2].ID, Limit: 2}))
		require.Equal(t, []store.ActivityInstance{got[4]}, list(store.ListActivityInstancesParams{ProcessInstanceID: p1.ID, States: []string{"Active"}, AfterID: got[2].ID}))
		require.Empty(t, list(store.ListActivityInstancesParams{ProcessInstanceID: p1.ID, AfterID: got[4].ID}))
	})

	t.Run("InvalidBatchInsertsNothing", func(t *testing.T) {
		b := h.setup(t)
		pi := newProcessInstance(t, b, 1)
		_, err := b.s.InsertActivityInstances(b.ctx, []store.ActivityInstance{
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "A", State: "Initiated", CreatedAt: t0, UpdatedAt: t0},
			{ID: nextID(), ProcessInstanceID: pi.ID, ActivityDefID: "B", State: "Initiated", CreatedAt: t0}, // zero UpdatedAt
		})
		require.Error(t, err)
		list, err := b.s.ListActivityInstances(b.ctx, store.ListActivityInstancesParams{ProcessInstanceID: pi.ID})
		require.NoError(t, err)
		require.Empty(t, list)
	})
}

func (h *harness) testVariables(t *testing.T) {
	t.Run("PutGetUpsert", func(t *testing.T) {
		b := h.setup(t)
		require.NoError(t, b.s.PutVariables(b.ctx, []store.Variable{
			{ProcessInstanceID: 1, Name: "amount", Type: "INTEGER", Value: []byte("42")},
			{ProcessInstanceID: 1, Name: "customer", Type: "STRING", Value: []byte(`"ACME"`)},
			{ProcessInstanceID: 2, Name: "amount", Type: "INTEGER", Value: []byte("7")},
			{ProcessInstanceID: 1, Name: "unset", Type: "STRING"},
		}))
		require.NoError(t, b.s.PutVariables(b.ctx, []store.Variable{
			{ProcessInstanceID: 1, Name: "customer", Type: "STRING", Value: []byte(`"Initech"`)},
			{ProcessInstanceID: 1, Name: "approved", Type: "BOOLEAN", Value: []byte("true")},
			{ProcessInstanceID: 1, Name: "amount", Type: "FLOAT", Value: []byte("42.5")},
		}))

		got, err := b.s.GetVariables(b.ctx, 1)
		require.NoError(t, err)
		require.Equal(t, map[string]store.Variable{
			"amount":   {ProcessInstanceID: 1, Name: "amount", Type: "FLOAT", Value: []byte("42.5")},
			"customer": {ProcessInstanceID: 1, Name: "customer", Type: "STRING", Value: []byte(`"Initech"`)},
			"approved": {ProcessInstanceID: 1, Name: "approved", Type: "BOOLEAN", Value: []byte("true")},
			"unset":    {ProcessInstanceID: 1, Name: "unset", Type: "STRING"},
		}, got)

		got, err = b.s.GetVariables(b.ctx, 2)
		require.NoError(t, err)
		require.Equal(t, map[string]store.Variable{
			"amount": {ProcessInstanceID: 2, Name: "amount", Type: "INTEGER", Value: []byte("7")},
		}, got)
	})

	t.Run("UpsertToNil", func(t *testing.T) {
		b := h.setup(t)
		require.NoError(t, b.s.PutVariables(b.ctx, []store.Variable{{ProcessInstanceID: 1, Name: "x", Type: "STRING", Value: []byte(`"a"`)}}))
		require.NoError(t, b.s.PutVariables(b.ctx, []store.Variable{{ProcessInstanceID: 1, Name: "x", Type: "STRING", Value: []byte{}}}))
		got, err := b.s.GetVariables(b.ctx, 1)
		require.NoError(t, err)
		require.Nil(t, got["x"].Value)
	})

	t.Run("NoneIsEmptyMap", func(t *testing.T) {
		b := h.setup(t)
		require.NoError(t, b.s.PutVariables(b.ctx, nil))
		got, err := b.s.GetVariables(b.ctx, 12345)
		require.NoError(t, err)
		require.NotNil(t, got)
		require.Empty(t, got)
	})
}
