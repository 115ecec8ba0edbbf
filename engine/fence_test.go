package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/xpdl/xpdltest"
)

// A node whose claim on an event was taken over cannot commit the
// event's transition: the transaction rolls back, the event stays with its
// new holder, and the instance is as it was.
func TestALostClaimCannotCommit(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		e, err := New(Config{DB: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		ctx := t.Context()
		_, err = e.Deploy(ctx, []byte(xpdltest.Package(xpdltest.Process("p", "",
			xpdltest.Activity("M", `<Implementation><No/></Implementation><Performer>clerk</Performer>`, "", ""), ""))))
		require.NoError(t, err)
		id, err := e.StartProcess(ctx, StartOptions{Package: "pkg"})
		require.NoError(t, err)
		require.NoError(t, e.Start(ctx))
		t.Cleanup(func() { require.NoError(t, e.Stop(context.Background())) })
		require.NoError(t, e.WaitIdle(ctx))

		// This node claimed a terminate request; then it was declared dead
		// and another node claimed the event.
		until := e.now().Add(time.Hour)
		evID, err := e.ids.Next(ctx)
		require.NoError(t, err)
		evs, err := e.store.InsertEvents(ctx, []store.Event{{
			ID: evID, EventID: "terminate", ProcessInstanceID: id, Kind: evTerminate, Critical: true,
			CreatedAt: e.now(), AvailableAt: until, ClaimedBy: e.owner, ClaimedUntil: &until,
		}})
		require.NoError(t, err)
		released, err := e.store.ReleaseClaims(ctx, e.owner)
		require.NoError(t, err)
		require.Equal(t, int64(1), released)
		taken, err := e.store.ClaimEvents(ctx, store.ClaimEventsParams{Owner: "other#1", Now: until, LeaseUntil: until.Add(time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Len(t, taken, 1)

		require.NoError(t, e.handle(ctx, evs[0]), "a lost claim is dropped, not retried")
		inst, err := e.Instance(ctx, id)
		require.NoError(t, err)
		require.Equal(t, wftype.ProcessRunning, inst.State, "the terminate did not commit")
		ev, err := e.store.GetEvent(ctx, evs[0].ID)
		require.NoError(t, err)
		require.Nil(t, ev.ProcessedAt)
		require.Equal(t, "other#1", ev.ClaimedBy, "the new holder keeps its claim")
	})
}
