package users

import (
	"errors"
	"html/template"
	"net/http"
	"strconv"
)

// pageTemplate is the login and logout page: a form and nothing else (no
// script, no external file).
var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>goxpdl – {{.Title}}</title>
<style>
body { font-family: system-ui, sans-serif; background: #f4f5f7; margin: 0; }
main { max-width: 22rem; margin: 12vh auto; background: #fff; padding: 2rem; border-radius: 6px; box-shadow: 0 1px 4px rgba(0,0,0,.15); }
h1 { font-size: 1.3rem; margin-top: 0; }
label { display: block; margin: .8rem 0 .2rem; }
input[type=text], input[type=password] { width: 100%; box-sizing: border-box; padding: .45rem; }
button { margin-top: 1.2rem; padding: .5rem 1.2rem; }
.error { color: #b00020; }
</style>
</head>
<body>
<main>
<h1>goxpdl – {{.Title}}</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
{{if eq .Title "Log in"}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="next" value="{{.Next}}">
<label for="user">User</label>
<input type="text" id="user" name="user" value="{{.User}}" autocomplete="username" autofocus required>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit">Log in</button>
</form>
{{else}}
<p>Signed in as <strong>{{.User}}</strong>.</p>
<form method="post" action="{{.Action}}"><button type="submit">Log out</button></form>
{{end}}
</main>
</body>
</html>
`))

// pageData fills pageTemplate.
type pageData struct {
	Title, Action, Next, User, Error string
}

// maxFormBytes bounds the login form's body.
const maxFormBytes = 4096

// serveLogin serves the login page (GET) and logs in (POST).
func (a *Auth) serveLogin(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		next := a.safeNext(r.URL.Query().Get("next"))
		if _, ok := a.sessionUser(r); ok {
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		a.page(w, http.StatusOK, pageData{Title: "Log in", Action: a.login, Next: next})
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			a.page(w, http.StatusBadRequest, pageData{Title: "Log in", Action: a.login, Next: a.home, Error: "The form could not be read."})
			return
		}
		name, next := r.PostForm.Get("user"), a.safeNext(r.PostForm.Get("next"))
		u, err := a.authenticate(r, name, r.PostForm.Get("password"))
		if err != nil {
			status := http.StatusUnauthorized
			if le, ok := errors.AsType[*lockedError](err); ok {
				status = http.StatusTooManyRequests
				w.Header().Set("Retry-After", strconv.Itoa(int(le.retryAfter.Seconds())+1))
			}
			a.page(w, status, pageData{Title: "Log in", Action: a.login, Next: next, User: name, Error: capitalise(err.Error()) + "."})
			return
		}
		a.endSession(r)
		a.newSession(w, r, u.Name)
		http.Redirect(w, r, next, http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// serveLogout shows who is logged in with a button (GET) and logs out
// (POST): the session ends and its cookie is deleted.
func (a *Auth) serveLogout(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		u, ok := a.sessionUser(r)
		if !ok {
			http.Redirect(w, r, a.login, http.StatusSeeOther)
			return
		}
		a.page(w, http.StatusOK, pageData{Title: "Log out", Action: a.logout, User: u.Name})
	case http.MethodPost:
		a.endSession(r)
		http.SetCookie(w, a.cookie(r, "", -1))
		http.Redirect(w, r, a.login, http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// page writes the login or logout page.
func (a *Auth) page(w http.ResponseWriter, status int, d pageData) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if err := pageTemplate.Execute(w, d); err != nil {
		a.log.Warn("login page", "error", err)
	}
}

// capitalise upper-cases the first letter of an ASCII message.
func capitalise(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}
