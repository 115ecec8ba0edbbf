// Package adversary is a Jepsen-style adversary for the engine: a
// generator of operations, a model of their expected outcome, and a
// checker that compares the engine with the model after every operation.
// Its tests run it for many seeds on SQLite and MySQL/MariaDB
// (docs/testing.md); other tests drive it over a database of their own,
// for instance one that injects faults.
//
// # What a run does
//
// Run deploys a small package (Source: a Review work item with a SYNCHR
// deadline, a Chase on the deadline, Book calling an application that
// writes a row in the engine's transaction and refuses a negative amount,
// an Approve that loops back to Review unless ok is true) and makes
// Config.Ops operations chosen by a generator seeded with Config.Seed:
// starts with good and bad variables, reused idempotency keys and hostile
// business keys; every work-item command (claim, start, release,
// delegate, reassign, complete, also on completed and withdrawn items and
// with repeated idempotency keys); races of 2 to 8 goroutines completing
// or claiming one item; suspend, resume, terminate, SetVariables, retry
// and skip of the Abnormal Book, jump, rollback, withdraw, migrate; ids
// that do not exist; the fake clock moved on so that deadlines fire; the
// engine stopped and a new one started on the database with starts in
// flight; new versions deployed, also concurrently.
//
// The model (model.go, expect.go) says for each operation the refusal the
// engine must answer with, in the order the engine checks (errors.Is on
// its sentinels), or how the instance moves on when it succeeds. After
// the operation the checker waits for the engine to settle and compares
// every instance it may have touched: its state, version, business and
// start keys, variables, open work item (state, owner, who it is offered
// to), Abnormal and waiting activities, deadline timer and due time,
// committed application rows, and completions in the history; every
// closed work item and every instance from time to time and at the end;
// and that no application call committed twice. A refused operation must
// leave its instance's revision and history as they were.
//
// A problem ends the run with a *Failure: the seed, the step, what
// differed, and the operations so far with the engine's answers. The same
// seed makes the same operations again.
//
// # Faults
//
// Config.IsFault classifies errors that a faulty database injected. An
// operation that fails with one has an unknown outcome (Jepsen's :info):
// the checker accepts the engine's state when it is the model's either
// without the operation or with it, and goes on from the one it finds. A
// start is repeated with its idempotency key until it gets an answer, as
// a host resolves an unknown outcome; reads are repeated; events whose
// processing failed are waited for by moving the fake clock on (and the
// model's with it), and a deadline may then fall due that much later.
// Config.Checking tells the injector when the run reads the engine back,
// so that it may pause. TestFaultsAreInfo is a small example: gorm
// callbacks that fail one statement in 40.
//
// TestOverFaultDB opens the run's database through internal/faultdb on
// SQLite and MySQL/MariaDB and arms faults of every kind it models at
// random, seeded, one at a time, while operations run: a statement
// failing with a deadlock (1213), a lock wait timeout (1205), SQLITE_BUSY
// or a lost connection, a BEGIN or a COMMIT failing, a COMMIT that went
// through and then lost its connection, an outage. Config.Checking
// clears the fault. Its default, 3 seeds of 80 operations per database,
// strikes some 60 to 90 faults per database in 4 to 10 s (40 s with
// -race); docs/testing.md has the figures of longer runs and the defects
// it found.
package adversary
