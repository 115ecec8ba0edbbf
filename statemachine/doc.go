// Package statemachine runs workflows written as state machines in Go
// on the engine: the host declares states with an Enter function, which
// runs when the machine enters the state, and a Resume function, which
// decides from an input which state comes next. A waiting machine is
// held by a bookmark, which Start and Resume hand out and Resume takes
// back; Abort ends a machine.
//
//	m, _ := statemachine.New(e, statemachine.Definition{
//		ID: "approval", Initial: "draft",
//		States: []statemachine.State{
//			{Name: "draft", Resume: submit},
//			{Name: "review", Performers: []string{"reviewers"}, Enter: notify, Resume: decide},
//			{Name: "approved", Final: true},
//		},
//		Roles: []string{"reviewers"},
//	})
//	_, _ = m.Deploy(ctx)
//	step, _ := m.Start(ctx, map[string]any{"title": "Q3 budget"})
//	step, _ = m.Resume(ctx, step.Bookmark, map[string]any{"done": true})
//
// It is not a second engine. New compiles the Definition into an XPDL
// process (xpdl's builders), which Deploy deploys: a machine instance is
// a process instance, so it is kept in the engine's database, shown and
// drawn by the console, recovered after a crash, and has a history like
// any other. Every state that is not final is a user task whose work
// item is the state's bookmark; the Go functions are the engine's hooks
// (engine.AttrHook), called in the engine's transaction: Resume and the
// next state's Enter when the work item is completed, so a Resume is one
// transaction that either moves the machine, offers the next bookmark and
// commits the host's writes through StateContext.Tx, or changes nothing.
//
// # Bookmarks
//
// A Bookmark names the machine, the state, the instance and the work
// item; its text (String) is durable, and ParseBookmark reads it back,
// after a restart too. A bookmark is valid once: Resume refuses one
// resumed before (ErrBookmarkResumed; of two Resumes at once exactly one
// wins), one whose instance was aborted (ErrStaleBookmark) and one of
// another machine (ErrBadBookmark), and changes nothing.
//
// # Moving on, rolling back
//
// Resume may return any state's name: the next one, an earlier one (a
// rollback, which the history shows as a second visit of the state), the
// same one (the state is entered again with a new bookmark) or a final
// one, which completes the instance. A name that is no state is refused
// (*UnknownStateError) and nothing changes.
//
// docs/statemachine.md has the guide: the compiled process, who may
// resume, transactions shared with the host, restarts and versions.
package statemachine
