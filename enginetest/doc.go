// Package enginetest is a test kit for programs that embed goxpdl: an
// engine on a private in-memory SQLite database with a fake clock, and
// helpers that drive a process instance step by step from a host's own
// _test.go and say, when something is not as expected, why.
//
//	func TestApproval(t *testing.T) {
//		h := enginetest.New(t, enginetest.WithApplication("ship", ship))
//		h.DeployFile("testdata/approval.xpdl")
//		id := h.Start("approval", map[string]any{"amount": int64(120)})
//		h.WaitForState(id, "Review", wftype.ActivityInActive)
//		h.Advance(3 * time.Hour) // the review's two-hour deadline escalates it
//		h.CompleteWorkItem(id, "Escalate", map[string]any{"approved": true})
//		h.RunUntil(id, wftype.ProcessCompleted)
//		h.AssertHistory(id, "activity Escalate Completed", "activity Ship Completed")
//	}
//
// # Quiet, not sleeping
//
// The engine runs instances in the background. Every helper that acts
// (Deploy, Start, CompleteWorkItem, Advance) returns only once the engine
// is quiet: every event it can process now is processed and every due
// timer has fired (engine.Engine.WaitQuiet). What waits for a person, a
// message, a later timer or a retry's backoff is left waiting; nothing
// more happens until the test acts. So the helpers that check
// (RunUntil, WaitForState, WorkItem, AssertHistory) never wait for the
// state they want: when the engine is quiet and the state is not there,
// it never will be, and the test fails at once with a report of the
// instance (Report): its state and diagnosis, the activities not
// completed, open incidents, work items and timers, events waiting for a
// retry, and its recent history. A wait is also bounded in real time
// (WithTimeout), for an engine that never goes quiet.
//
// # Lockstep
//
// WaitForState(id, activity, state) reads the instance's history in
// order: each call matches the next entry after the one the previous
// call matched. A sequence of calls asserts the order in which the
// activities moved, and an activity that enters a state several times (a
// loop) is matched once per call.
//
// # Time
//
// The engine's clock is a timer.Fake that moves only when the test says:
// Advance(d) moves it on by d, stopping at each timer that falls due (and
// each retry of a failing application) in turn and letting the engine
// settle there, so that a timer armed by another one fires within the
// same Advance, at its own time, however fast the machine is.
//
// # Options
//
// WithApplication binds the Go code behind an XPDL Application (I2);
// WithDirectory says who the people are (I3); WithConfig changes any
// other field of engine.Config; WithDB or WithDSN run the engine on
// another database (a MySQL/MariaDB database for each test, say);
// WithStart sets the clock; WithSetup reaches the engine before it
// starts. Engine returns the engine for everything else.
//
// The harness's failures go through TB (a *testing.T is one), begin with
// "enginetest: " and name the instance.
package enginetest
