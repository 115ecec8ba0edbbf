package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store"
)

// message returns an unstored pending message for activity "Approve" of
// process instance piID.
func message(id string, piID int64) store.InboxMessage {
	return store.InboxMessage{
		ID: nextID(), MessageID: id, Kind: "complete", ProcessInstanceID: piID, ActivityDefID: "Approve",
		User: "alice", Payload: []byte(`{"ok":true}`), State: store.InboxPending, CreatedAt: t0,
	}
}

func (h *harness) testInbox(t *testing.T) {
	insert := func(t *testing.T, b bundle, msg store.InboxMessage) store.InboxMessage {
		t.Helper()
		if msg.ID == 0 {
			msg.ID = nextID()
		}
		got, err := b.s.InsertInboxMessage(b.ctx, msg)
		require.NoError(t, err)
		return got
	}

	t.Run("RoundTrip", func(t *testing.T) {
		b := h.setup(t)
		in := store.InboxMessage{
			ID: 77, MessageID: "m1", Kind: "signal", ProcessDefID: "order", Variable: "orderNo", Value: []byte(`"A-7"`),
			ActivityDefID: "WaitForPayment", User: "bob", Payload: []byte(`{"paid":12.5}`), State: store.InboxExpired,
			Reason: "no instance", CreatedAt: t0, ExpiresAt: ptr(at(time.Hour)), EndedAt: ptr(at(2 * time.Hour)),
		}
		got, err := b.s.InsertInboxMessage(b.ctx, in)
		require.NoError(t, err)
		require.NotZero(t, got.ID)
		want := in
		want.ID = got.ID
		want.CreatedAt, want.ExpiresAt, want.EndedAt = norm(in.CreatedAt), normPtr(in.ExpiresAt), normPtr(in.EndedAt)
		require.Equal(t, want, got)
		read, err := b.s.GetInboxMessage(b.ctx, "m1")
		require.NoError(t, err)
		require.Equal(t, want, read)

		bare := insert(t, b, store.InboxMessage{MessageID: "m2", ProcessInstanceID: 4, Value: []byte{}, State: store.InboxPending, CreatedAt: t0})
		read, err = b.s.GetInboxMessage(b.ctx, "m2")
		require.NoError(t, err)
		require.Equal(t, store.InboxMessage{ID: bare.ID, MessageID: "m2", ProcessInstanceID: 4, State: store.InboxPending, CreatedAt: norm(t0)}, read)
		require.Greater(t, bare.ID, got.ID)
	})

	t.Run("DuplicateMessageID", func(t *testing.T) {
		b := h.setup(t)
		first := insert(t, b, message("m1", 1))
		dup := message("m1", 2)
		dup.Kind = "signal"
		_, err := b.s.InsertInboxMessage(b.ctx, dup)
		require.ErrorIs(t, err, store.ErrDuplicate)
		read, err := b.s.GetInboxMessage(b.ctx, "m1")
		require.NoError(t, err)
		require.Equal(t, first, read, "the first message stays as it was")
		insert(t, b, message("M1", 1)) // ids are case-sensitive
		list, err := b.s.ListInbox(b.ctx, store.ListInboxParams{})
		require.NoError(t, err)
		require.Len(t, list, 2)
	})

	t.Run("NotFound", func(t *testing.T) {
		b := h.setup(t)
		insert(t, b, message("m1", 1))
		_, err := b.s.GetInboxMessage(b.ctx, "m2")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = b.s.GetInboxMessage(b.ctx, "M1")
		require.ErrorIs(t, err, store.ErrNotFound)
		err = b.s.UpdateInboxMessage(b.ctx, store.UpdateInboxMessageParams{ID: 12345, State: store.InboxApplied})
		require.ErrorIs(t, err, store.ErrNotFound)
		err = b.s.UpdateInboxMessage(b.ctx, store.UpdateInboxMessageParams{ID: 12345, ExpectedState: store.InboxPending, State: store.InboxApplied})
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NotErrorIs(t, err, store.ErrConflict)
	})

	t.Run("InvalidParams", func(t *testing.T) {
		b := h.setup(t)
		_, err := b.s.InsertInboxMessage(b.ctx, message("", 1))
		require.Error(t, err, "empty MessageID")
		noTime := message("m1", 1)
		noTime.CreatedAt = time.Time{}
		_, err = b.s.InsertInboxMessage(b.ctx, noTime)
		require.Error(t, err, "zero CreatedAt")
		list, err := b.s.ListInbox(b.ctx, store.ListInboxParams{})
		require.NoError(t, err)
		require.Empty(t, list)
	})

	t.Run("Update", func(t *testing.T) {
		b := h.setup(t)
		m := message("m1", 0)
		m.ProcessDefID, m.Variable, m.Value, m.ExpiresAt = "order", "orderNo", []byte(`7`), ptr(at(time.Hour))
		msg := insert(t, b, m)

		require.NoError(t, b.s.UpdateInboxMessage(b.ctx, store.UpdateInboxMessageParams{
			ID: msg.ID, ExpectedState: store.InboxPending, State: store.InboxApplied, Reason: "completed work item 9",
			ProcessInstanceID: 42, EndedAt: ptr(at(time.Minute)),
		}))
		// The same values again: no error (MySQL reports no changed row).
		require.NoError(t, b.s.UpdateInboxMessage(b.ctx, store.UpdateInboxMessageParams{
			ID: msg.ID, ExpectedState: store.InboxApplied, State: store.InboxApplied, Reason: "completed work item 9",
			ProcessInstanceID: 42, EndedAt: ptr(at(time.Minute)),
		}))
		// A sweeper that read it pending loses.
		err := b.s.UpdateInboxMessage(b.ctx, store.UpdateInboxMessageParams{
			ID: msg.ID, ExpectedState: store.InboxPending, State: store.InboxExpired, Reason: "expired", EndedAt: ptr(at(time.Hour)),
		})
		require.ErrorIs(t, err, store.ErrConflict)
		require.NotErrorIs(t, err, store.ErrNotFound)

		got, err := b.s.GetInboxMessage(b.ctx, "m1")
		require.NoError(t, err)
		want := msg
		want.State, want.Reason, want.ProcessInstanceID, want.EndedAt = store.InboxApplied, "completed work item 9", 42, normPtr(ptr(at(time.Minute)))
		require.Equal(t, want, got)

		// Without ExpectedState the update is unconditional and replaces.
		require.NoError(t, b.s.UpdateInboxMessage(b.ctx, store.UpdateInboxMessageParams{ID: msg.ID, State: store.InboxPending}))
		got, err = b.s.GetInboxMessage(b.ctx, "m1")
		require.NoError(t, err)
		require.Equal(t, msg, got)
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		b := h.setup(t)
		with := func(m store.InboxMessage, f func(m *store.InboxMessage)) store.InboxMessage { f(&m); return m }
		m1 := insert(t, b, with(message("m1", 1), func(m *store.InboxMessage) { m.ExpiresAt = ptr(at(time.Hour)) }))
		m2 := insert(t, b, with(message("m2", 2), func(m *store.InboxMessage) { m.ActivityDefID = "Pay" }))
		m3 := insert(t, b, with(message("m3", 1), func(m *store.InboxMessage) {
			m.State, m.ExpiresAt = store.InboxApplied, ptr(at(time.Minute))
		}))
		m4 := insert(t, b, with(message("m4", 0), func(m *store.InboxMessage) {
			m.ProcessDefID, m.Variable, m.Value, m.ExpiresAt = "order", "orderNo", []byte(`"A-7"`), ptr(at(30*time.Minute))
		}))
		m5 := insert(t, b, with(message("m5", 0), func(m *store.InboxMessage) {
			m.ProcessDefID, m.Variable, m.Value, m.ActivityDefID = "claim", "claimNo", []byte(`1`), "Pay"
		}))
		m6 := insert(t, b, with(message("m6", 3), func(m *store.InboxMessage) { m.ProcessDefID, m.State = "order", store.InboxExpired }))
		list := func(params store.ListInboxParams) []store.InboxMessage {
			t.Helper()
			l, err := b.s.ListInbox(b.ctx, params)
			require.NoError(t, err)
			return l
		}
		require.Equal(t, []store.InboxMessage{m1, m2, m3, m4, m5, m6}, list(store.ListInboxParams{}))
		require.Equal(t, []store.InboxMessage{m1, m3}, list(store.ListInboxParams{ProcessInstanceID: 1}))
		require.Equal(t, []store.InboxMessage{m1}, list(store.ListInboxParams{ProcessInstanceID: 1, States: []string{store.InboxPending}}))
		require.Equal(t, []store.InboxMessage{m1, m3, m4}, list(store.ListInboxParams{ActivityDefID: "Approve", States: []string{store.InboxPending, store.InboxApplied}}))
		require.Equal(t, []store.InboxMessage{m2, m5}, list(store.ListInboxParams{ActivityDefID: "Pay"}))
		require.Equal(t, []store.InboxMessage{m4, m5}, list(store.ListInboxParams{Unmatched: true}))
		require.Equal(t, []store.InboxMessage{m4}, list(store.ListInboxParams{Unmatched: true, ProcessDefID: "order", ActivityDefID: "Approve", States: []string{store.InboxPending}}))
		require.Equal(t, []store.InboxMessage{m4, m6}, list(store.ListInboxParams{ProcessDefID: "order"}))
		require.Empty(t, list(store.ListInboxParams{Unmatched: true, ProcessDefID: "claim", ActivityDefID: "Approve"}))
		require.Equal(t, []store.InboxMessage{m3, m4}, list(store.ListInboxParams{ExpiresBefore: ptr(at(time.Hour))}))
		require.Equal(t, []store.InboxMessage{m4}, list(store.ListInboxParams{ExpiresBefore: ptr(at(time.Hour)), States: []string{store.InboxPending}}))
		require.Equal(t, []store.InboxMessage{m1, m3, m4}, list(store.ListInboxParams{ExpiresBefore: ptr(at(time.Hour + time.Microsecond))}))
		require.Equal(t, []store.InboxMessage{m2, m3}, list(store.ListInboxParams{AfterID: m1.ID, Limit: 2}))
		require.Equal(t, []store.InboxMessage{m6}, list(store.ListInboxParams{AfterID: m5.ID, Limit: 2}))
		require.Empty(t, list(store.ListInboxParams{AfterID: m6.ID}))
		require.Empty(t, list(store.ListInboxParams{States: []string{"pending"}}), "states are case-sensitive")
	})
}

func (h *harness) testFindByVariable(t *testing.T) {
	t.Run("ExactValue", func(t *testing.T) {
		b := h.setup(t)
		def := newDefinition(t, b)
		instance := func(process, state string) int64 {
			t.Helper()
			pi, err := b.s.InsertProcessInstance(b.ctx, store.ProcessInstance{
				ID:           nextID(),
				DefinitionID: def.ID, ProcessDefID: process, State: state, CreatedAt: t0, UpdatedAt: t0,
			})
			require.NoError(t, err)
			return pi.ID
		}
		put := func(pi int64, name, value string) {
			t.Helper()
			require.NoError(t, b.s.PutVariables(b.ctx, []store.Variable{{ProcessInstanceID: pi, Name: name, Type: "STRING", Value: []byte(value)}}))
		}
		// Values longer than what MySQL's index holds, equal in their
		// first 300 bytes.
		long := `"` + strings.Repeat("x", 300)
		p1, p2, p3, p4, p5 := instance("order", "Running"), instance("order", "Completed"), instance("claim", "Running"), instance("order", "Running"), instance("order", "Running")
		put(p1, "orderNo", `"A-7"`)
		put(p2, "orderNo", `"A-7"`)
		put(p3, "orderNo", `"A-7"`)
		put(p4, "orderNo", `"a-7"`)
		put(p4, "OrderNo", `"A-7"`)
		put(p5, "orderNo", `"A-8"`)
		put(p5, "amount", `7`)
		put(p4, "amount", `7.0`)
		put(p1, "note", long+`1"`)
		put(p4, "note", long+`2"`)

		find := func(params store.FindByVariableParams) []int64 {
			t.Helper()
			ids, err := b.s.FindProcessInstancesByVariable(b.ctx, params)
			require.NoError(t, err)
			return ids
		}
		require.Equal(t, []int64{p1, p2}, find(store.FindByVariableParams{ProcessDefID: "order", Name: "orderNo", Value: []byte(`"A-7"`)}))
		require.Equal(t, []int64{p1}, find(store.FindByVariableParams{ProcessDefID: "order", Name: "orderNo", Value: []byte(`"A-7"`), States: []string{"Running", "Suspended"}}))
		require.Equal(t, []int64{p1}, find(store.FindByVariableParams{ProcessDefID: "order", Name: "orderNo", Value: []byte(`"A-7"`), Limit: 1}))
		require.Equal(t, []int64{p3}, find(store.FindByVariableParams{ProcessDefID: "claim", Name: "orderNo", Value: []byte(`"A-7"`)}))
		require.Equal(t, []int64{p4}, find(store.FindByVariableParams{ProcessDefID: "order", Name: "OrderNo", Value: []byte(`"A-7"`)}))
		require.Equal(t, []int64{p4}, find(store.FindByVariableParams{ProcessDefID: "order", Name: "orderNo", Value: []byte(`"a-7"`)}))
		require.Equal(t, []int64{p5}, find(store.FindByVariableParams{ProcessDefID: "order", Name: "amount", Value: []byte(`7`)}), "byte for byte: 7.0 is not 7")
		require.Equal(t, []int64{p4}, find(store.FindByVariableParams{ProcessDefID: "order", Name: "note", Value: []byte(long + `2"`)}))
		require.Empty(t, find(store.FindByVariableParams{ProcessDefID: "order", Name: "note", Value: []byte(long + `3"`)}))
		require.Empty(t, find(store.FindByVariableParams{ProcessDefID: "order", Name: "orderNo", Value: []byte(`"A-9"`)}))
		require.Empty(t, find(store.FindByVariableParams{ProcessDefID: "leave", Name: "orderNo", Value: []byte(`"A-7"`)}))

		// A value far larger than an index entry may hold (PostgreSQL's
		// B-tree refuses entries over about 2.7 kB) is stored and found.
		huge := `"` + strings.Repeat("0123456789", 1000) + `"`
		put(p5, "note", huge)
		require.Equal(t, []int64{p5}, find(store.FindByVariableParams{ProcessDefID: "order", Name: "note", Value: []byte(huge)}))

		// A changed value is found under the new value only.
		put(p1, "orderNo", `"A-9"`)
		require.Equal(t, []int64{p2}, find(store.FindByVariableParams{ProcessDefID: "order", Name: "orderNo", Value: []byte(`"A-7"`)}))
		require.Equal(t, []int64{p1}, find(store.FindByVariableParams{ProcessDefID: "order", Name: "orderNo", Value: []byte(`"A-9"`)}))
	})

	t.Run("InvalidParams", func(t *testing.T) {
		b := h.setup(t)
		for name, p := range map[string]store.FindByVariableParams{
			"NoProcess": {Name: "x", Value: []byte(`1`)},
			"NoName":    {ProcessDefID: "p", Value: []byte(`1`)},
			"NoValue":   {ProcessDefID: "p", Name: "x", Value: []byte{}},
		} {
			_, err := b.s.FindProcessInstancesByVariable(b.ctx, p)
			require.Error(t, err, name)
		}
	})
}
