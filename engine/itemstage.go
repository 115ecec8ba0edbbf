package engine

import (
	"fmt"
	"slices"

	"github.com/goxpdl/goxpdl/store"
)

// A run changes work items the way it changes activity instances: in
// memory, each written once at flush (issue #21, one write discipline).
// An item the run creates is inserted in the state the run left it in
// (offered and at once completed by a waiting inbox message: one insert
// of a Completed item); an item it read and changed is updated once,
// fenced by the version it was read at. The run's own reads of work
// items (its snapshot's workItems, workItem) see what it staged.

// stagedItem is a work item a run created or changed, not written yet.
type stagedItem struct {
	wi store.WorkItem
	// fresh: the run created the item; flush inserts it.
	fresh bool
	// readVersion is the version the item had when the run read it: the
	// fence of its update at flush. 0 for a fresh item.
	readVersion int64
}

// stageItem records wi, as the run now has it, for flush, and gives it
// the version it will have once written: 1 for a new item, one more
// than the version it was read at for a changed one.
func (r *run) stageItem(wi *store.WorkItem, fresh bool) {
	if r.items == nil {
		r.items = make(map[int64]*stagedItem)
	}
	s, ok := r.items[wi.ID]
	if !ok {
		s = &stagedItem{fresh: fresh}
		if !fresh {
			s.readVersion = wi.Version
		}
		r.items[wi.ID] = s
		r.itemOrder = append(r.itemOrder, wi.ID)
	}
	wi.Version = s.readVersion + 1
	s.wi = *wi
}

func compareIDs(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// itemSelected reports whether params (instance, activity instance,
// states) selects wi.
func itemSelected(params store.ListWorkItemsParams, wi store.WorkItem) bool {
	return (params.ProcessInstanceID == 0 || wi.ProcessInstanceID == params.ProcessInstanceID) &&
		(params.ActivityInstanceID == 0 || wi.ActivityInstanceID == params.ActivityInstanceID) &&
		(len(params.States) == 0 || slices.Contains(params.States, wi.State))
}

// flushItems writes the staged work items in the order the run first
// touched them: the new ones inserted, the changed ones updated with
// their version fence. An item someone else changed since the run read
// it fails the update with store.ErrConflict, and the transaction is
// tried again from what is stored now (transact), where the command
// meets the item's new state.
func (r *run) flushItems() error {
	for _, id := range r.itemOrder {
		s := r.items[id]
		wi := s.wi
		if s.fresh {
			if _, err := r.tx.InsertWorkItem(r.ctx, store.InsertWorkItemParams{Item: wi, VisibleTo: visibleTo(wi)}); err != nil {
				return err
			}
			continue
		}
		_, err := r.tx.UpdateWorkItem(r.ctx, store.UpdateWorkItemParams{
			ID: wi.ID, ExpectedVersion: s.readVersion, State: wi.State, Performer: wi.Performer, Owner: wi.Owner,
			Assignees: wi.Assignees, Priority: wi.Priority, DueAt: wi.DueAt, CompletedBy: wi.CompletedBy,
			CompletionKey: wi.CompletionKey, SuspendedFrom: wi.SuspendedFrom, Result: wi.Result, UpdatedAt: wi.UpdatedAt,
			EndedAt: wi.EndedAt, VisibleTo: visibleTo(wi),
		})
		if err != nil {
			return fmt.Errorf("work item %d: %w", wi.ID, err)
		}
	}
	r.items, r.itemOrder = nil, nil
	return nil
}
