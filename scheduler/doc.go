// Package scheduler is the executor of goxpdl's dispatch core: it takes
// events off the bus (it is an eventbus.Sink), keeps a mailbox per process
// instance, and runs a Handler for each event on one of two goroutine
// pools (github.com/panjf2000/ants/v2): a critical one of fixed size and a
// normal one that adapts to the load.
//
// # Rules
//
//   - Events of one process instance (Event.ProcessInstanceID) are handled
//     one at a time, in Event.ID order: each instance has a mailbox, ordered
//     and deduplicated by ID. Different instances run in parallel. Events
//     with ProcessInstanceID 0 belong to no instance and are not serialised
//     with each other.
//   - A mailbox that becomes runnable goes to the critical pool when its
//     next event is Critical (process control: terminate, suspend, resume,
//     deadlines, recovery) and to the normal pool otherwise (activity work,
//     application calls), so a flood of slow application calls never
//     delays a terminate. The choice is made when the mailbox is queued for
//     a pool; an event with a lower ID that arrives later runs where its
//     mailbox was sent.
//   - Deliver never blocks on the pools: each pool has a run queue and a
//     feeder goroutine that submits to the pool, and only the feeder waits
//     when the pool is busy.
//   - Duplicates are dropped: an event whose ID is queued or running in its
//     mailbox, or was handled successfully by this scheduler recently, is
//     not handled again. A mailbox remembers its last successful IDs while
//     it lives; idle mailboxes are kept, with their memory, up to a bound.
//     This is a first line only: after a restart or on another node the
//     same event can be handled again (the bus delivers at least once), and
//     the handler must recognise events it has already applied.
//   - The Handler of an instance's running event may take the events
//     queued behind it in that instance's mailbox, one at a time from the
//     head (Take), to process them itself (the engine's chains run them in
//     the running event's transaction). A taken event is held, so its
//     duplicates are dropped, until the Handler settles it (Settle):
//     handled (remembered as handled), failed (forgotten, as a Handler
//     error forgets an event) or given back (queued again, in ID order).
//   - A Handler error is logged and counted, and the event is dropped from
//     its mailbox: it stays unprocessed in the outbox and the bus's poller
//     delivers it again once its lease expires (or when the handler
//     scheduled a retry with store.Tx.RetryEvent). A Handler panic is
//     recovered, logged with its stack and counted the same way; it never
//     kills a worker or the process.
//
// # Pool sizes
//
// The critical pool has the fixed size Config.CriticalWorkers. The normal
// pool starts at Config.NormalWorkers and, unless NormalWorkersMin equals
// NormalWorkersMax, a controller resizes it between them with ants'
// Tune. Every Config.AdaptInterval (on Config.Clock) it closes a window
// over the pool: the running handlers integrated over time, the handlers
// finished, the most that ran at once, what waits for a worker at the
// end, and the CPU time the process used. It grows the pool when work
// waits, the handlers filled the pool and the process's CPU is not
// saturated, to no more workers than keep about 80% of GOMAXPROCS busy at
// the CPU each busy worker used: handlers blocked in I/O justify many
// workers, CPU-bound ones about as many as there are cores. A grow that
// does not raise throughput in the next window is undone and growth
// pauses (the handlers were waiting on a lock or the database, not on
// I/O of their own). When workers sit idle and nothing waits, it shrinks
// the pool gradually, never below the minimum; running handlers finish
// first. Stats reports the current sizes and the bounds.
//
// # Lifecycle
//
// New, Start, then Deliver (the bus calls it); Stop drains. Events
// delivered before Start wait for it. Handlers receive a ctx derived from
// Start's ctx that is cancelled only on a hard stop: when Stop's ctx ends
// before the drain has finished, or when Start's ctx is cancelled. The
// Scheduler owns its pools and goroutines (a feeder per pool and the
// controller, each an internal/startstop Service on the handlers' ctx);
// Stop waits for the drain, then releases the pools and waits for every
// goroutine. Stop is idempotent and safe before Start, and a stopped
// Scheduler is not started again (ErrStopped).
//
// # ForEach
//
// ForEach is the scheduler's other, smaller job: it runs n calls on up to
// a given number of goroutines that the caller owns for the length of the
// call (the engine's batch runner gives a chunk's instances their
// commands with it). It uses neither the pools nor the mailboxes.
package scheduler
