// Package eventbus is goxpdl's asynchronous event bus, backed by the
// durable outbox table of the store (store.Event rows).
//
// # Flow of one event
//
//  1. Publish writes events into the outbox inside the caller's
//     transaction, already claimed by this node (ClaimedBy is Config.Owner,
//     ClaimedUntil is now plus Config.Lease), so that no poller, this
//     node's or another's, hands them out while this node works on them.
//  2. After that transaction has committed, the caller passes the events
//     Publish returned to Dispatch, which hands them to the Sink in memory,
//     without another round trip to the database. Events of a transaction
//     that rolled back must never be dispatched; they do not exist.
//  3. The Sink (the scheduler) handles each event; the handler marks it
//     processed (store.Tx.MarkEventsProcessed) in the transaction that
//     applies it.
//
// # The poller and the at-least-once rule
//
// Events the node did not publish itself, or whose commit it did not see
// (a host transaction, another engine node, a restart), are found by the
// poller: every Config.PollInterval, and soon after Nudge, it claims
// unprocessed, available, unclaimed events (store.Tx.ClaimEvents, up to
// Config.BatchSize at a time, until a batch comes back short) and
// delivers each batch to the Sink. A store error is logged and the claim
// is retried on the next tick; the poller never gives up.
//
// Delivery is at least once. An event whose handling failed, or whose
// node crashed or stopped before it was handled, is left unprocessed;
// once its claim's lease expires the poller (of any node) claims and
// delivers it again. A handler may instead give the claim up itself with
// a backoff (store.Tx.RetryEvent: the event is claimable again at a
// later AvailableAt), as the engine does; when the database cannot even
// record that (an outage), Redeliver holds the event in memory and the
// poller hands it over again when it is due. An event may therefore be
// delivered more than once, also to the same node (for example when it
// waited in the scheduler's queue for longer than the lease), and
// handlers must recognise an event they have already applied: the
// engine's handler marks it processed only while this node holds its claim
// (store.MarkEventsProcessedParams.Owner), which fails for a second
// delivery. Choose Config.Lease longer than an event normally waits and
// runs.
//
// Events published with an AvailableAt in the future are not pre-claimed
// and Dispatch skips them: the poller delivers them once they are due.
//
// # Lifecycle
//
// New, then Start: the Bus owns one goroutine, the poller, between Start
// and Stop (an internal/startstop Service). Publish and Dispatch work
// without it. Stop waits for a delivery in progress; it is idempotent
// and safe before Start, and a stopped Bus is not started again
// (ErrStopped). Stats counts what was published, dispatched and polled.
//
// # Quick start
//
//	ids, err := idgen.New(idgen.Config{Store: st, Clock: timer.Real(), Owner: "node-1"})
//	... ids.Acquire(ctx) ... defer ids.Stop(ctx)
//	bus, err := eventbus.New(eventbus.Config{Store: st, Clock: timer.Real(), Owner: "node-1", IDs: ids.Next}, sched)
//	...
//	if err := bus.Start(ctx); err != nil { ... }
//	defer bus.Stop(ctx)
//
//	var published []store.Event
//	err = st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
//		// ... the state change ...
//		var err error
//		published, err = bus.Publish(ctx, tx, events)
//		return err
//	})
//	if err == nil {
//		bus.Dispatch(published)
//	}
package eventbus
