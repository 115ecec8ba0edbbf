package console

import (
	"context"

	"github.com/goxpdl/goxpdl/engine"
)

// The engine's work-item commands as the console gives them, in one
// place. The engine's work-item commands take no engine.Op: the history
// records as their actor the user the console acts for (the item's owner,
// or the user named), except a reassignment, which records the console's
// actor as the administrator; the console's log records op (actor,
// reason, data) for every one of them (perform). When the commands take
// an Op, each passes op on here and the history gets the console's actor
// and the reason.

// claimItem allocates an offered item to user.
func claimItem(ctx context.Context, eng *engine.Engine, id int64, user string, _ engine.Op) error {
	return eng.ClaimWorkItem(ctx, id, user)
}

// releaseItem gives a held item back, on behalf of owner who holds it.
func releaseItem(ctx context.Context, eng *engine.Engine, id int64, owner string, _ engine.Op) error {
	return eng.ReleaseWorkItem(ctx, id, owner)
}

// delegateItem hands a held item from owner to another user.
func delegateItem(ctx context.Context, eng *engine.Engine, id int64, owner, to string, _ engine.Op) error {
	return eng.DelegateWorkItem(ctx, id, owner, to)
}

// reassignItem offers an item afresh to the principals; op.Actor is the
// administrator.
func reassignItem(ctx context.Context, eng *engine.Engine, id int64, to []engine.Principal, op engine.Op) error {
	return eng.ReassignWorkItem(ctx, id, op.Actor, to)
}

// completeItem completes an item as c.User (on whose behalf the console
// acts).
func completeItem(ctx context.Context, eng *engine.Engine, id int64, c engine.Completion, _ engine.Op) (engine.WorkItem, error) {
	return eng.CompleteWorkItem(ctx, id, c)
}
