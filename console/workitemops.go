package console

import (
	"context"

	"github.com/goxpdl/goxpdl/engine"
)

// The engine's work-item commands as the console gives them, in one
// place. Each acts as the user the command is for (the item's holder, or
// the user named) and passes the console's op on: the history records
// op.Actor (the operator) as the actor, with the reason and data.

// claimItem allocates an offered item to user.
func claimItem(ctx context.Context, eng *engine.Engine, id int64, user string, op engine.Op) error {
	return eng.ClaimWorkItem(ctx, id, user, op)
}

// releaseItem gives a held item back, on behalf of owner who holds it.
func releaseItem(ctx context.Context, eng *engine.Engine, id int64, owner string, op engine.Op) error {
	return eng.ReleaseWorkItem(ctx, id, owner, op)
}

// delegateItem hands a held item from owner to another user.
func delegateItem(ctx context.Context, eng *engine.Engine, id int64, owner, to string, op engine.Op) error {
	return eng.DelegateWorkItem(ctx, id, owner, to, op)
}

// reassignItem offers an item afresh to the principals; op.Actor is the
// administrator.
func reassignItem(ctx context.Context, eng *engine.Engine, id int64, to []engine.Principal, op engine.Op) error {
	return eng.ReassignWorkItem(ctx, id, op.Actor, to, op)
}

// completeItem completes an item as c.User (on whose behalf the console
// acts).
func completeItem(ctx context.Context, eng *engine.Engine, id int64, c engine.Completion, op engine.Op) (engine.WorkItem, error) {
	c.Op = op
	return eng.CompleteWorkItem(ctx, id, c)
}
