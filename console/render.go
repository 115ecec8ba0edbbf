package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// htmxFile is the vendored htmx, pinned (console/assets/static; its
// licence is beside it).
const htmxFile = "htmx-2.0.11.min.js"

// parsePages parses the layout with each page template
// (assets/templates/*.html, except layout.html): one template set per
// page, keyed by the page file's base name without .html.
func parsePages(funcs template.FuncMap) (map[string]*template.Template, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/templates/layout.html")
	if err != nil {
		return nil, err
	}
	files, err := fs.Glob(assets, "assets/templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(assets, f)
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}

// navItem is one entry of the menu.
type navItem struct{ Key, Label, Path string }

// navItems is the menu, in order.
var navItems = []navItem{
	{"dashboard", "Dashboard", "/"},
	{"definitions", "Definitions", "/definitions"},
	{"instances", "Instances", "/instances"},
	{"workitems", "Work items", "/workitems"},
	{"incidents", "Incidents", "/incidents"},
	{"audit", "Audit", "/audit"},
	{"engine", "Engine", "/engine"},
}

// page is what every page template gets: the page's own data in Data and
// what the layout needs.
type page struct {
	h *Handler
	r *http.Request
	// Title is the page's title; Nav the menu entry it belongs to.
	Title string
	Nav   string
	// Data is the page's own data.
	Data any
	// Flash is a message shown once at the top (after an action).
	Flash string
}

// Can says whether the page may offer action on target.
func (p *page) Can(action, target string) bool { return p.h.can(p.r, action, target) }

// ReadOnly says whether the console refuses every state change.
func (p *page) ReadOnly() bool { return p.h.opts.ReadOnly }

// Actor is who is looking at the page.
func (p *page) Actor() string { return p.h.actor(p.r) }

// LogoutURL is where the header's logout link goes; "" for none.
func (p *page) LogoutURL() string { return p.h.opts.LogoutURL }

// Query returns a query parameter of the request.
func (p *page) Query(name string) string { return p.r.URL.Query().Get(name) }

// funcs are the template functions.
func (h *Handler) funcs() template.FuncMap {
	return template.FuncMap{
		"path": func(parts ...any) string {
			var b strings.Builder
			for _, p := range parts {
				fmt.Fprint(&b, p)
			}
			return h.path(b.String())
		},
		"static": func(name string) string {
			if name == "htmx" {
				name = htmxFile
			}
			return h.path("/static/" + name)
		},
		"when": func(t any) string {
			switch t := t.(type) {
			case time.Time:
				return formatTime(t)
			case *time.Time:
				if t == nil {
					return ""
				}
				return formatTime(*t)
			}
			return ""
		},
		"json": func(v any) string {
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Sprint(v)
			}
			return string(b)
		},
		"lower":      strings.ToLower,
		"filterText": describeFilter,
		"sum": func(ns ...int64) int64 {
			var t int64
			for _, n := range ns {
				t += n
			}
			return t
		},
		// pct is n as a whole percentage of total (0 when total is 0).
		"pct": func(n, total int64) int64 {
			if total <= 0 {
				return 0
			}
			return n * 100 / total
		},
		"nav": func() []navItem { return navItems },
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[fmt.Sprint(kv[i])] = kv[i+1]
			}
			return m
		},
	}
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// render writes the page template name with data. A request from htmx
// with ?fragment=F gets only the template F the page defines (its live
// part), which must start with "live-".
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	p.h, p.r = h, r
	t, ok := h.pages[name]
	if !ok {
		h.fail(w, r, fmt.Errorf("%w: no page %s", errInternal, name))
		return
	}
	exec := "layout.html"
	if f := r.URL.Query().Get("fragment"); f != "" {
		if !strings.HasPrefix(f, "live-") || t.Lookup(f) == nil {
			h.fail(w, r, badRequest("no fragment %q on this page", f))
			return
		}
		exec = f
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, exec, p); err != nil {
		h.log.Error("console: rendering a page", "page", name, "err", err)
		h.fail(w, r, fmt.Errorf("%w: rendering %s", errInternal, name))
		return
	}
	htmlHeaders(w)
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// htmlHeaders sets the headers of every page: no caching, and a content
// security policy that allows only the console's own script and styles
// and no framing (clickjacking).
func htmlHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
}

// writeJSON writes v as the JSON body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"encoding the response failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// isAPI says whether the request is for the JSON API.
func isAPI(r *http.Request) bool {
	return r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/")
}

// fail answers a failed request: a JSON error for the API, an error page
// (or, for htmx, a fragment it shows in place) for the pages.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, body := classify(err)
	if status >= 500 {
		h.log.Error("console: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else {
		h.log.Debug("console: request refused", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
	}
	if isAPI(r) {
		writeJSON(w, status, map[string]apiError{"error": body})
		return
	}
	t := h.pages["error"]
	exec := "layout.html"
	if r.Header.Get("HX-Request") == "true" {
		exec = "live-error"
		// htmx swaps only 2xx answers by default; the error fragment
		// goes into the page's message area instead of the target.
		w.Header().Set("HX-Retarget", "#messages")
		w.Header().Set("HX-Reswap", "innerHTML")
	}
	var buf bytes.Buffer
	p := &page{h: h, r: r, Title: http.StatusText(status), Data: errorPage{Status: status, Error: body}}
	if t == nil || t.ExecuteTemplate(&buf, exec, p) != nil {
		http.Error(w, body.Message, status)
		return
	}
	htmlHeaders(w)
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// errorPage is the data of the error page.
type errorPage struct {
	Status int
	Error  apiError
}

// static serves the embedded static files.
func static() http.Handler {
	sub, err := fs.Sub(assets, "assets/static")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(path.Base(r.URL.Path), "htmx-") {
			// The file name carries the version: it never changes.
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		files.ServeHTTP(w, r)
	})
}
