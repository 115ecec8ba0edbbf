// Package users is the authentication of goxpdl's standalone console
// (goxpdl serve --users FILE; docs/serve.md): a file of users with bcrypt
// password hashes and roles, a middleware that logs them in, and the
// Authorize and Actor functions the console's Options take.
//
// A host that mounts the console in its own server authenticates with
// its own middleware and need not use this package; it may still reuse
// the roles (Role.Allows) by putting a User in the request's context
// (NewContext).
//
// # The users file
//
// One user a line, three fields separated by colons:
//
//	# NAME:ROLE:BCRYPT-HASH
//	alice:admin:$2a$10$...
//	bob:operator:$2a$10$...
//	carol:viewer:$2a$10$...
//
// Blank lines and lines starting with # are ignored. A name is 1 to 64
// bytes without colons, white space or control characters; the role is
// viewer, operator or admin; the hash is bcrypt's ("goxpdl users add"
// writes it, as does "htpasswd -nbB NAME PASSWORD" after its colon). The
// format is htpasswd's with a role between name and hash: one line per
// user keeps the file easy to read, to diff and to edit by hand or with
// sed, and Put and Remove change one line without touching the comments
// around it.
//
// # Logging in
//
// Auth.Handler wraps the console. A browser is sent to the login page
// (Prefix+"/login"), which posts the user and password and on success
// sets a session cookie (HttpOnly, SameSite=Lax, Secure when the request
// came over TLS) holding a random 256-bit token; the server keeps only
// the token's SHA-256, with the user and the session's times, in memory.
// A session ends after Config.IdleTimeout without use, Config.SessionMax
// after the login, or at logout (a POST to Prefix+"/logout"). Scripts
// and the JSON API use HTTP basic auth on each request instead.
//
// Passwords are checked with bcrypt, whose comparison takes constant
// time; a name that is not in the file is checked against a dummy hash of
// the same cost, so a wrong name costs as much as a wrong password and
// the answer is the same. After Config.MaxFailures failed logins of one
// name within Config.LockoutWindow, that name is refused (429) until the
// window has passed, without checking the password.
//
// # Roles
//
// Authorize allows the console's actions by role (Role.Allows): a viewer
// reads; an operator also acts on instances, activities, work items and
// incidents; an admin may also deploy, migrate, run bulk actions, purge,
// recover and release locks.
//
// Quick start:
//
//	f, err := users.Load("users.txt")
//	if err != nil { ... }
//	auth, err := users.NewAuth(f, users.Config{})
//	if err != nil { ... }
//	h, err := console.New(eng, console.Options{Authorize: users.Authorize, Actor: users.Actor})
//	if err != nil { ... }
//	mux.Handle("/", auth.Handler(h))
package users
