// Package console is goxpdl's administration console: the pages through
// which operators watch the engine and repair process instances (the
// paper's system monitor and work item manager, §1.2), and a JSON API
// under api/ that mirrors every page and action for scripts and the CLI
// (docs/console.md).
//
// The console is an http.Handler the host mounts in its own server:
//
//	h, err := console.New(eng, console.Options{Prefix: "/workflow"})
//	if err != nil { ... }
//	mux.Handle("/workflow/", h)
//
// The host's middleware authenticates; the console asks Options.Authorize
// before every page and action (the action names are the Action…
// constants) and records Options.Actor as the actor of every command, so
// the engine's history and audit say who did what. Pages are rendered on
// the server with html/template; htmx (vendored, served from the binary)
// refreshes their live parts by polling. Every state change is a POST
// that goes through net/http's CrossOriginProtection, and is refused in
// ReadOnly mode.
package console
