package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
)

// maxBody bounds a form or JSON body (uploads have their own bound).
const maxBody = 1 << 20

// routes registers every page, API resource and action. Each part of
// the console registers its own in its file.
func (h *Handler) routes(mux *http.ServeMux) {
	mux.Handle("GET /static/", http.StripPrefix("/static/", static()))
	h.dashboardRoutes(mux)
	h.auditRoutes(mux)
	h.instanceRoutes(mux)
	h.definitionRoutes(mux)
	h.repairRoutes(mux)
	h.workItemRoutes(mux)
	h.incidentRoutes(mux)
	h.bulkRoutes(mux)
	h.engineRoutes(mux)
}

// unrouted answers a request no route takes with the console's own error
// (JSON for the API): 404, or 405 with the methods allowed.
func (h *Handler) unrouted(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// The mux's own answer says which: 404, or 405 with Allow.
		var answer muxAnswer
		next.ServeHTTP(&answer, r)
		if answer.code == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", answer.Header().Get("Allow"))
			h.fail(w, r, fmt.Errorf("%w: %s is not allowed on %s", errMethod, r.Method, r.URL.Path))
			return
		}
		h.fail(w, r, fmt.Errorf("%w: %s", errNoPage, r.URL.Path))
	})
}

// muxAnswer keeps the status and headers of the mux's own 404 or 405
// answer and discards its body, so that unrouted can answer in the
// console's form instead.
type muxAnswer struct {
	header http.Header
	code   int
}

func (a *muxAnswer) Header() http.Header {
	if a.header == nil {
		a.header = make(http.Header)
	}
	return a.header
}

func (a *muxAnswer) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}

func (a *muxAnswer) Write(b []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return len(b), nil
}

// view is what a read returns: the page's title and its data (the API
// answers with Data alone).
type view struct {
	Title string
	Data  any
}

// viewFunc reads what a page shows.
type viewFunc func(r *http.Request) (view, error)

// page registers a read at pattern ("GET /instances/{id}"): the HTML
// page rendered with template tmpl under menu entry nav, and the same
// data as JSON at /api plus the path. target names what is read, for
// Authorize.
func (h *Handler) page(mux *http.ServeMux, pattern, tmpl, nav string, target func(r *http.Request) string, read viewFunc) {
	method, route, _ := strings.Cut(pattern, " ")
	serve := func(api bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if err := h.authorize(r, ActionRead, target(r)); err != nil {
				h.fail(w, r, err)
				return
			}
			v, err := read(r)
			if err != nil {
				h.fail(w, r, err)
				return
			}
			if api {
				writeJSON(w, http.StatusOK, v.Data)
				return
			}
			h.render(w, r, http.StatusOK, tmpl, &page{Title: v.Title, Nav: nav, Data: v.Data, Flash: h.takeFlash(w, r)})
		}
	}
	if route == "/{$}" {
		mux.HandleFunc(method+" /{$}", serve(false))
		mux.HandleFunc(method+" /api/{$}", serve(true))
		return
	}
	mux.HandleFunc(method+" "+route, serve(false))
	mux.HandleFunc(method+" /api"+route, serve(true))
}

// action is a state change: a POST from a page's form, or from the API.
type action struct {
	// Name is the action Authorize is asked about (an Action… constant).
	Name string
	// Target names what it is applied to ("instance/42"); an error is a
	// malformed request.
	Target func(r *http.Request) (string, error)
	// Reason says whether the caller must give a reason (every
	// destructive action does).
	Reason bool
	// Do performs it, with op carrying the actor, reason and data; its
	// result is the API's answer.
	Do func(ctx context.Context, r *http.Request, in *input, op engine.Op) (any, error)
	// Done is, for a page's form, the flash message and the console path
	// to show after it succeeded.
	Done func(r *http.Request, result any) (flash, next string)
	// Upload says that it takes files (a multipart/form-data body of up
	// to Options.MaxUploadBytes, in input.files): one such request at a
	// time is read and done, so that what uploads cost in memory is what
	// one costs.
	Upload bool
}

// shown is an action's result that changed nothing and is shown rather
// than redirected after: a confirmation step (the count of what the
// action will touch and a form to confirm it). The API answers with
// Data.
type shown struct {
	Title, Nav, Template string
	Data                 any
}

// action registers a at pattern ("POST /instances/{id}/suspend") for the
// pages, and at /api plus the path for the API.
func (h *Handler) action(mux *http.ServeMux, pattern string, a action) {
	method, route, _ := strings.Cut(pattern, " ")
	serve := func(api bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			result, err := h.perform(r, a)
			if err != nil {
				h.fail(w, r, err)
				return
			}
			if s, ok := result.(*shown); ok {
				if api {
					writeJSON(w, http.StatusOK, s.Data)
					return
				}
				h.render(w, r, http.StatusOK, s.Template, &page{Title: s.Title, Nav: s.Nav, Data: s.Data})
				return
			}
			if api {
				writeJSON(w, http.StatusOK, result)
				return
			}
			flash, next := a.Done(r, result)
			h.setFlash(w, flash)
			h.redirect(w, r, h.path(next))
		}
	}
	mux.HandleFunc(method+" "+route, serve(false))
	mux.HandleFunc(method+" /api"+route, serve(true))
}

// perform checks and runs one action.
func (h *Handler) perform(r *http.Request, a action) (any, error) {
	if h.opts.ReadOnly {
		return nil, errReadOnly
	}
	target, err := a.Target(r)
	if err != nil {
		return nil, err
	}
	if err := h.authorize(r, a.Name, target); err != nil {
		return nil, err
	}
	limit := int64(maxBody)
	if a.Upload {
		select {
		case h.uploading <- struct{}{}:
			defer func() { <-h.uploading }()
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
		limit = h.opts.MaxUploadBytes
	}
	in, err := readInput(r, limit)
	if err != nil {
		return nil, err
	}
	op := engine.Op{Actor: h.actor(r), Reason: strings.TrimSpace(in.str("reason")), Data: in.object("data")}
	if a.Reason && op.Reason == "" {
		return nil, badRequest("%s needs a reason", a.Name)
	}
	if op.Data == nil {
		op.Data = map[string]any{}
	}
	op.Data["via"] = "console"
	result, err := a.Do(r.Context(), r, in, op)
	if err != nil {
		return nil, err
	}
	if _, ok := result.(*shown); ok {
		return result, nil // a step before the change (a confirmation): nothing changed yet
	}
	h.log.Info("console: action", "action", a.Name, "target", target, "actor", op.Actor, "reason", op.Reason)
	return result, nil
}

// redirect sends the browser to url after a form's POST: htmx follows
// HX-Location, a plain form a 303.
func (h *Handler) redirect(w http.ResponseWriter, r *http.Request, url string) {
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Location", url)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, url, http.StatusSeeOther)
}

const flashCookie = "goxpdl_flash"

// setFlash keeps a message for the next page the browser shows.
func (h *Handler) setFlash(w http.ResponseWriter, msg string) {
	if msg == "" {
		return
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: url.QueryEscape(msg), Path: h.path("/"),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: 60})
}

// takeFlash returns the message kept by setFlash, once.
func (h *Handler) takeFlash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(flashCookie)
	if err != nil || r.URL.Query().Get("fragment") != "" {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Path: h.path("/"), MaxAge: -1})
	msg, err := url.QueryUnescape(c.Value)
	if err != nil {
		return ""
	}
	return msg
}

// input is an action's parameters: a form (URL-encoded or multipart) or
// a JSON object.
type input struct {
	form url.Values
	body map[string]json.RawMessage
	// files are a multipart body's files, by field name, in order.
	files map[string][]file
}

// file is one uploaded file.
type file struct {
	Name    string
	Content []byte
}

// readInput reads the request's form or JSON body. A multipart body may
// be limit bytes long (a JSON or URL-encoded one maxBody).
func readInput(r *http.Request, limit int64) (*input, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		in := &input{}
		dec := json.NewDecoder(io.LimitReader(r.Body, maxBody+1))
		dec.UseNumber()
		if err := dec.Decode(&in.body); err != nil && !errors.Is(err, io.EOF) {
			return nil, badRequest("the body is not a JSON object: %v", err)
		}
		return in, nil
	case "multipart/form-data":
		in, err := readMultipart(r, limit)
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return nil, fmt.Errorf("%w: the form is larger than %d bytes", errTooLarge, limit)
			}
			return nil, badRequest("malformed form: %v", err)
		}
		return in, nil
	default:
		r.Body = http.MaxBytesReader(nil, r.Body, maxBody)
		if err := r.ParseForm(); err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return nil, fmt.Errorf("%w: the form is larger than %d bytes", errTooLarge, maxBody)
			}
			return nil, badRequest("malformed form: %v", err)
		}
		return &input{form: r.PostForm}, nil
	}
}

// str returns the string parameter name ("" when absent).
// readMultipart reads a multipart body of at most limit bytes, its
// files into memory, each copied once: the first into a buffer of the
// body's declared length (an upload is mostly one file), where
// Request.ParseMultipartForm would buffer it, growing, and the handler
// copy it again.
func readMultipart(r *http.Request, limit int64) (*input, error) {
	r.Body = http.MaxBytesReader(nil, r.Body, limit)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, err
	}
	in := &input{form: url.Values{}, files: map[string][]file{}}
	for k, vs := range r.URL.Query() {
		in.form[k] = append(in.form[k], vs...)
	}
	hint := r.ContentLength // for the first file only
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return in, nil
		}
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if part.FileName() != "" && hint > 0 {
			b.Grow(int(min(hint, limit)) + bytes.MinRead)
			hint = 0
		}
		_, err = b.ReadFrom(part)
		_ = part.Close()
		if err != nil {
			return nil, err
		}
		if part.FileName() != "" {
			in.files[part.FormName()] = append(in.files[part.FormName()], file{Name: part.FileName(), Content: b.Bytes()})
		} else {
			in.form[part.FormName()] = append(in.form[part.FormName()], b.String())
		}
	}
}

func (in *input) str(name string) string {
	if in.body != nil {
		raw, ok := in.body[name]
		if !ok {
			return ""
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return strings.Trim(string(raw), `"`)
	}
	return in.form.Get(name)
}

// strs returns every value of the parameter name (a JSON array of
// strings, or a form field given several times).
func (in *input) strs(name string) []string {
	if in.body != nil {
		raw, ok := in.body[name]
		if !ok {
			return nil
		}
		var ss []string
		if json.Unmarshal(raw, &ss) == nil {
			return ss
		}
		if s := in.str(name); s != "" {
			return []string{s}
		}
		return nil
	}
	var out []string
	for _, s := range in.form[name] {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// object returns the parameter name as an object: a JSON object, or the
// form fields "name.KEY" (as strings). Nil when absent.
func (in *input) object(name string) map[string]any {
	if in.body != nil {
		raw, ok := in.body[name]
		if !ok {
			return nil
		}
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		if dec.Decode(&m) != nil {
			return nil
		}
		return m
	}
	var m map[string]any
	for k, vs := range in.form {
		key, ok := strings.CutPrefix(k, name+".")
		if !ok || key == "" || len(vs) == 0 {
			continue
		}
		if m == nil {
			m = map[string]any{}
		}
		m[key] = vs[0]
	}
	return m
}

// pathID reads the path parameter name as a positive id.
func pathID(r *http.Request, name string) (int64, error) {
	s := r.PathValue(name)
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("%s %q is not an id", name, s)
	}
	return id, nil
}

// idTarget returns a Target function naming kind/{id}.
func idTarget(kind, param string) func(r *http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		id, err := pathID(r, param)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s/%d", kind, id), nil
	}
}

// fixed returns a read target that does not depend on the request.
func fixed(target string) func(r *http.Request) string {
	return func(*http.Request) string { return target }
}
