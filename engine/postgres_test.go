package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/engine"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/wftype"
	"github.com/goxpdl/goxpdl/workitem"
)

// postgresQuickStart is the start of docs/postgres.md: an engine on the
// PostgreSQL database url names, which runs the order process of
// Example to its end.
func postgresQuickStart(ctx context.Context, url string) (wftype.ProcessState, error) {
	// begin docblock docs/postgres.md
	db, err := gormstore.OpenPostgres(url) // postgres://USER:PASS@HOST:5432/DB?sslmode=verify-full
	if err != nil {
		return "", err
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}()
	e, err := engine.New(engine.Config{DB: db, NodeID: "node-1"}) // migrates the goxpdl_* tables
	if err != nil {
		return "", err
	}
	if err := e.Start(ctx); err != nil {
		return "", err
	}
	defer func() { _ = e.Stop(ctx) }()
	// end docblock
	e.RegisterApplication("ship", func(context.Context, *engine.Call) (map[string]any, error) {
		return map[string]any{"tracking": "TRK-42"}, nil
	})
	if _, err := e.Deploy(ctx, []byte(orderXPDL)); err != nil {
		return "", err
	}
	id, err := e.StartProcess(ctx, engine.StartOptions{Package: "orders", Variables: map[string]any{"orderId": "42"}})
	if err != nil {
		return "", err
	}
	_ = e.WaitIdle(ctx)
	open, err := e.WorkItems(ctx, engine.WorkItemFilter{Instance: id, States: workitem.OpenStates})
	if err != nil {
		return "", err
	}
	if _, err := e.CompleteWorkItem(ctx, open.WorkItems[0].ID, engine.Completion{User: "alice", Outputs: map[string]any{"approved": true}}); err != nil {
		return "", err
	}
	_ = e.WaitIdle(ctx)
	pi, err := e.Instance(ctx, id)
	return pi.State, err
}

// TestPostgresQuickStart runs docs/postgres.md's start on a fresh schema
// of GOXPDL_POSTGRES_DSN's database, named by its URL as --db names it.
func TestPostgresQuickStart(t *testing.T) {
	t.Parallel()
	state, err := postgresQuickStart(t.Context(), dbtest.PostgresURL(t))
	require.NoError(t, err)
	require.Equal(t, wftype.ProcessCompleted, state)
}
