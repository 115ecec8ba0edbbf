package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/xpdl"
)

// A run reads through its snapshot and writes at its flush (issue #21,
// one write discipline). The snapshot is the one place where a run's
// decisions read the database: what the run loaded at its start (its
// process instance and unfinished activities, by load), and what a
// decision needs beyond that, loaded on demand by the named methods
// below: work items, inbox messages, signal subscriptions, timers,
// business-key locks, subflow instances, the instance's finished
// activities, definitions. Each read is kept for the rest of the run, so
// a run that looks twice sees the same stored state, and each answer
// lays over the stored rows what the run itself holds until flush (the
// work items it staged, the messages it ended or keeps, the
// subscriptions it made and dropped, the locks it took, granted and
// dropped, the subflow instances it created): the run sees its own
// decisions before they are written. Decision code never calls the
// store's transaction; the snapshot and the flush* functions are the
// only code of a run that does (TestRunsReadThroughTheirSnapshot).
//
// What the snapshot read is what the flush fences: a work item is
// updated at the version it was read at, an inbox message only while it
// is Pending, the process instance at its version. A concurrent change
// fails the flush with store.ErrConflict, and the transaction runs again
// with a new run and a new snapshot.

// snapshot is what a run read from the database, with what the run holds
// over it. A run's snapshot lives as long as the run: one attempt of one
// transaction.
type snapshot struct {
	run *run
	tx  store.Tx

	instances  map[int64]store.ProcessInstance
	vars       map[int64]map[string]store.Variable
	items      map[int64]store.WorkItem
	itemLists  map[string][]store.WorkItem
	messages   map[string]store.InboxMessage
	inboxLists map[string][]store.InboxMessage
	subs       map[string][]store.Subscription
	keyLocks   map[string][]store.Lock // read under LocksForUpdate
	ownLocks   map[int64][]store.Lock
	timers     map[int64]store.Timer
	timerLists map[int64][]store.Timer
	childLists map[int64][]store.ProcessInstance
	actRows    map[int64]store.ActivityInstance
	actLists   map[string][]store.ActivityInstance
	matched    map[string][]int64
}

// forget drops what the snapshot read: after flush the database holds
// what the run wrote, and the run holds nothing over it any more.
func (s *snapshot) forget() {
	*s = snapshot{run: s.run, tx: s.tx}
}

// kept returns m[k], reading it with load the first time; an error is
// not kept.
func kept[K comparable, V any](m *map[K]V, k K, load func() (V, error)) (V, error) {
	if v, ok := (*m)[k]; ok {
		return v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
	return v, nil
}

// keptList is kept for a list: the caller gets its own copy.
func keptList[K comparable, V any](m *map[K][]V, k K, load func() ([]V, error)) ([]V, error) {
	v, err := kept(m, k, load)
	return slices.Clone(v), err
}

// load reads process instance id and its unfinished activities, from
// the engine's cache of committed instances when useCache and it holds
// id (see run.loadCached). A missing instance is a *NotFoundError.
func (s *snapshot) load(id int64, useCache bool) (committed, error) {
	r := s.run
	if p := r.preloaded; p != nil && p.pi.ID == id {
		// A chained step (chain.go): the instance as the step before it
		// left it, in this transaction.
		return *p, nil
	}
	if useCache {
		if c, ok := r.e.instances.get(id); ok {
			return c, nil
		}
	}
	pi, err := s.instance(id)
	if errors.Is(err, store.ErrNotFound) {
		return committed{}, notFound("process instance", id)
	} else if err != nil {
		return committed{}, err
	}
	rows, err := s.tx.ListActivityInstances(r.ctx, store.ListActivityInstancesParams{ProcessInstanceID: id, States: unfinishedStates})
	if err != nil {
		return committed{}, err
	}
	return committed{pi: pi, acts: rows}, nil
}

// instance reads process instance id (the run's own, another it checks,
// a subflow instance that ended). A missing one is store.ErrNotFound.
func (s *snapshot) instance(id int64) (store.ProcessInstance, error) {
	return kept(&s.instances, id, func() (store.ProcessInstance, error) {
		return s.tx.GetProcessInstance(s.run.ctx, id)
	})
}

// variables reads the stored variables of process instance id (the
// run's own: run.variables keeps the run's working copy; a subflow
// instance's OUT parameters).
func (s *snapshot) variables(id int64) (map[string]store.Variable, error) {
	return kept(&s.vars, id, func() (map[string]store.Variable, error) {
		return s.tx.GetVariables(s.run.ctx, id)
	})
}

// definition returns deployed definition id (a *NotFoundError when
// there is none); latest, the latest version of package packageID.
// Parsed definitions are the engine's, kept across runs (Engine.defs).
func (s *snapshot) definition(id int64) (*deployment, error) {
	return s.run.e.definition(s.run.ctx, s.tx, id)
}

func (s *snapshot) latest(packageID string) (*deployment, error) {
	return s.run.e.latest(s.run.ctx, s.tx, packageID)
}

// samePackageTogether finds process among the files of d's package
// deployed with it (Engine.samePackageTogether).
func (s *snapshot) samePackageTogether(d *deployment, process string) (*deployment, *xpdl.Process, error) {
	return s.run.e.samePackageTogether(s.run.ctx, s.tx, d, process)
}

// subflowTarget finds the process the SubFlow of activity def of the
// run's process calls: among the packages deployed with the run's, then
// in the latest deployed version of a referenced package.
func (s *snapshot) subflowTarget(def *xpdl.Activity) (*deployment, *xpdl.Process, error) {
	r := s.run
	together, err := r.e.togetherWith(r.ctx, s.tx, r.dep)
	if err != nil {
		return nil, nil, err
	}
	return r.e.resolveSubflow(r.ctx, s.tx, r.dep, together, r.proc, def)
}

// startedWith returns the instance started with idempotency key key, if
// any.
func (s *snapshot) startedWith(key string) ([]store.ProcessInstance, error) {
	return s.tx.ListProcessInstances(s.run.ctx, store.ListProcessInstancesParams{StartKey: key, Limit: 1})
}

// stalled reports whether process instance id is still among the open
// instances with no pending event (rescue.go), read now.
func (s *snapshot) stalled(id int64) (bool, error) {
	still, err := s.tx.ListProcessInstances(s.run.ctx, store.ListProcessInstancesParams{IDs: []int64{id}, Limit: 1, NoPendingEvents: true})
	return len(still) == 1, err
}

// matchingInstances returns the open instances whose variable holds a
// value, for a message correlated by data (at most params.Limit).
func (s *snapshot) matchingInstances(params store.FindByVariableParams) ([]int64, error) {
	key := fmt.Sprint(params.ProcessDefID, "\x00", params.Name, "\x00", string(params.Value), "\x00", params.States, params.Limit)
	return keptList(&s.matched, key, func() ([]int64, error) {
		return s.tx.FindProcessInstancesByVariable(s.run.ctx, params)
	})
}

// activityRow reads activity instance id, finished or not, of any
// instance (a move or a repair names one the run did not load).
func (s *snapshot) activityRow(id int64) (store.ActivityInstance, error) {
	return kept(&s.actRows, id, func() (store.ActivityInstance, error) {
		return s.tx.GetActivityInstance(s.run.ctx, id)
	})
}

// activityRows lists the stored activity instances of the run's
// instance in the given states (all with none), as stored: the run's
// own changes are in run.acts.
func (s *snapshot) activityRows(states ...string) ([]store.ActivityInstance, error) {
	return keptList(&s.actLists, fmt.Sprint(states), func() ([]store.ActivityInstance, error) {
		return s.tx.ListActivityInstances(s.run.ctx, store.ListActivityInstancesParams{ProcessInstanceID: s.run.pi.ID, States: states})
	})
}

// workItem reads work item id as the run sees it: staged, or stored.
func (s *snapshot) workItem(id int64) (store.WorkItem, error) {
	if st, ok := s.run.items[id]; ok {
		return st.wi, nil
	}
	return kept(&s.items, id, func() (store.WorkItem, error) {
		return s.tx.GetWorkItem(s.run.ctx, id)
	})
}

// errItemFilter is a run's workItems asked for a filter it does not
// apply to the staged items: a mistake in the engine, not an input.
var errItemFilter = errors.New("engine: a run lists work items by instance, activity instance and state only")

// workItems lists the work items params selects as the run sees them:
// the stored ones, replaced by the staged ones where the run changed
// them, and the ones it created, in ID order. params may select by
// process instance, activity instance and states only.
func (s *snapshot) workItems(params store.ListWorkItemsParams) ([]store.WorkItem, error) {
	if params.AfterID != 0 || params.Limit != 0 || params.Owner != "" || params.Performer != "" ||
		params.ActivityDefID != "" || params.DueBefore != nil || params.VisibleTo != nil {
		return nil, fmt.Errorf("%w: %+v", errItemFilter, params)
	}
	r := s.run
	key := fmt.Sprint(params.ProcessInstanceID, params.ActivityInstanceID, params.States)
	stored, err := keptList(&s.itemLists, key, func() ([]store.WorkItem, error) {
		return s.tx.ListWorkItems(r.ctx, params)
	})
	if err != nil || len(r.items) == 0 {
		return stored, err
	}
	out := make([]store.WorkItem, 0, len(stored)+len(r.items))
	for _, wi := range stored {
		if _, staged := r.items[wi.ID]; !staged {
			out = append(out, wi)
		}
	}
	for _, id := range r.itemOrder {
		if wi := r.items[id].wi; itemSelected(params, wi) {
			out = append(out, wi)
		}
	}
	slices.SortFunc(out, func(a, b store.WorkItem) int { return compareIDs(a.ID, b.ID) })
	return out, nil
}

// message reads inbox message messageID (a message or a signal sent
// before with that id). A missing one is store.ErrNotFound.
func (s *snapshot) message(messageID string) (store.InboxMessage, error) {
	return kept(&s.messages, messageID, func() (store.InboxMessage, error) {
		return s.tx.GetInboxMessage(s.run.ctx, messageID)
	})
}

// pendingMessages lists the inbox messages params selects, but those
// the run has ended already, and with those it keeps (both written at
// flush).
func (s *snapshot) pendingMessages(params store.ListInboxParams) ([]store.InboxMessage, error) {
	r := s.run
	var expires time.Time
	if params.ExpiresBefore != nil {
		expires = *params.ExpiresBefore
	}
	key := fmt.Sprint(params.ProcessInstanceID, params.Unmatched, "\x00", params.ProcessDefID, "\x00", params.ActivityDefID, "\x00",
		params.States, expires.UnixNano(), params.AfterID, params.Limit)
	msgs, err := keptList(&s.inboxLists, key, func() ([]store.InboxMessage, error) {
		return s.tx.ListInbox(r.ctx, params)
	})
	if err != nil || len(r.inboxEnds)+len(r.inboxNew) == 0 {
		return msgs, err
	}
	msgs = slices.DeleteFunc(msgs, func(m store.InboxMessage) bool {
		return slices.ContainsFunc(r.inboxEnds, func(u store.UpdateInboxMessageParams) bool { return u.ID == m.ID })
	})
	for _, m := range r.inboxNew {
		if inboxMatches(params, m) && (params.Limit <= 0 || len(msgs) < params.Limit) {
			msgs = append(msgs, m) // the run's ids are newer than the stored ones
		}
	}
	return msgs, nil
}

// receivers lists the events waiting for signal name, of one instance or
// of all (instance 0): those stored, but those the run unsubscribed, and
// those the run and the subflow instances it created subscribed (written
// at flush).
func (s *snapshot) receivers(name string, instance int64) ([]store.Subscription, error) {
	r := s.run
	subs, err := keptList(&s.subs, fmt.Sprint(name, "\x00", instance), func() ([]store.Subscription, error) {
		return s.tx.ListSubscriptions(r.ctx, store.ListSubscriptionsParams{
			Kind: subSignal, Name: name, ProcessInstanceID: instance, Limit: maxReceivers + 1,
		})
	})
	if err != nil {
		return nil, err
	}
	subs = slices.DeleteFunc(subs, r.unsubscribed)
	r.eachRun(func(run *run) {
		for _, s := range run.subs {
			if s.Name == name && (instance == 0 || s.ProcessInstanceID == instance) {
				subs = append(subs, s)
			}
		}
	})
	if len(subs) > maxReceivers {
		return nil, fmt.Errorf("%w: signal %s has more than %d", ErrTooManyReceivers, name, maxReceivers)
	}
	return subs, nil
}

// timer reads timer id (one that fired for the run's instance). A
// missing one is store.ErrNotFound.
func (s *snapshot) timer(id int64) (store.Timer, error) {
	return kept(&s.timers, id, func() (store.Timer, error) {
		return s.tx.GetTimer(s.run.ctx, id)
	})
}

// instanceTimers lists the stored timers of the run's instance.
func (s *snapshot) instanceTimers() ([]store.Timer, error) {
	id := s.run.pi.ID
	return keptList(&s.timerLists, id, func() ([]store.Timer, error) {
		return s.tx.ListTimers(s.run.ctx, store.ListTimersParams{ProcessInstanceID: id})
	})
}

// locksFor returns the locks of business key key, in queue order, as
// the run leaves them: the stored ones, read with a lock that
// serialises this transaction with every other that changes the key's
// locks (store.Tx.LocksForUpdate) and so do not change until it ends,
// with the run's changes applied, and the ones it took after them.
func (s *snapshot) locksFor(key string) ([]store.Lock, error) {
	r := s.run
	stored, err := keptList(&s.keyLocks, key, func() ([]store.Lock, error) {
		return s.tx.LocksForUpdate(r.ctx, key)
	})
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(stored, func(l store.Lock) bool { return slices.Contains(r.locks.dropped, l.ID) })
	for i := range out {
		if j := slices.IndexFunc(r.locks.granted, func(g store.Lock) bool { return g.ID == out[i].ID }); j >= 0 {
			out[i] = r.locks.granted[j]
		}
	}
	for _, l := range r.locks.taken {
		if l.BusinessKey == key {
			out = append(out, l)
		}
	}
	return out, nil
}

// instanceLocks lists the stored locks of the run's instance, held or
// waited for (the run's own changes are in run.locks).
func (s *snapshot) instanceLocks() ([]store.Lock, error) {
	id := s.run.pi.ID
	return keptList(&s.ownLocks, id, func() ([]store.Lock, error) {
		return s.tx.ListLocks(s.run.ctx, store.ListLocksParams{ProcessInstanceID: id})
	})
}

// children returns the open subflow instances of the run's instance:
// the stored ones, and those the run created, which flush inserts.
func (s *snapshot) children() ([]store.ProcessInstance, error) {
	r := s.run
	children, err := keptList(&s.childLists, r.pi.ID, func() ([]store.ProcessInstance, error) {
		return s.tx.ListProcessInstances(r.ctx, store.ListProcessInstancesParams{
			ParentInstanceID: r.pi.ID,
			States:           openStates,
		})
	})
	if err != nil {
		return nil, err
	}
	for _, c := range r.children {
		p := c.pi.ParentInstanceID
		if c.fresh && p != nil && *p == r.pi.ID && c.state().IsOpen() {
			children = append(children, c.pi)
		}
	}
	return children, nil
}
