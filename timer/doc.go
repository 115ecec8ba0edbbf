// Package timer is goxpdl's time: the clock everything reads, the reading
// of the times an XPDL process writes down, and the goroutines that act
// when a time comes. It is the only goxpdl package that reads the system
// clock.
//
// # Clocks
//
// Clock is what every other package takes its time from: Real() in
// production, and a Fake in tests, which moves only when Advance or Set
// is called and fires its timers then, so that no test sleeps.
//
// # Reading times (pure)
//
// ParseTimeDate reads an XPDL 2 TimeDate, ParseCycle a TimeCycle (ISO 8601
// repetitions such as R3/PT1H, or a cron expression), ParseCron a cron
// expression into a Schedule (robfig/cron underneath), and
// ParseReminderPolicy the Reminder extended attribute of a manual
// activity. None of them reads a clock: every "now" is an argument.
// Errors are *ScheduleError (ErrBadSchedule) and *ReminderError
// (ErrBadReminder).
//
// # Durable timers
//
// The engine arms deadlines, limits, timer events and reminders as rows of
// the store (store.Timer, in the transaction of the step that starts the
// wait). Service fires them: it sleeps until the earliest is due (or
// until Armed tells it of an earlier one), then, a batch per transaction,
// moves the due timers to fired and hands them to its FireFunc in that
// transaction; the engine's FireFunc publishes an event per timer (the
// timer of a timer start event creates an instance instead). A timer
// never fires before its due time and fires once, also with several
// engine nodes on one database. docs/timers.md has the engine's rules
// (what arms what, the catch-up after downtime, suspended processes).
//
// # Runs in the process
//
// Periodic runs a function now and then every interval (recovery's
// sweep, the batch runner); Calendar runs one at the times of a Schedule
// (retention). Neither is durable: they are the engine's own background
// work, started and stopped with it.
//
// Service, Periodic and Calendar each own one goroutine between Start and
// Stop (internal/startstop): Stop is idempotent, safe before Start, and
// waits for a run in progress, whose ctx it cancels; a stopped one is not
// started again.
package timer
