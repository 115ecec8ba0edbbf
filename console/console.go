package console

import (
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"

	"github.com/goxpdl/goxpdl/console/diagram"
	"github.com/goxpdl/goxpdl/engine"
)

// Options configure a console.
type Options struct {
	// Prefix is the path the console is mounted at ("/workflow"); empty
	// for the root. Links and redirects the console writes start with it.
	Prefix string
	// ReadOnly refuses every state change (403), whatever Authorize says;
	// pages show no action buttons.
	ReadOnly bool
	// Authorize decides whether the request may perform action (one of the
	// Action… constants; ActionRead for every page and API read) on target
	// (what the action is applied to: "instance/42", "definition/7" (a
	// deployed version, by its definition id), "page/instances"; an
	// upload of definitions is "page/definitions"; the repairs of an
	// activity are asked about its instance). A non-nil error refuses it
	// with 403 and the error's text. Nil allows everything: the host's
	// middleware is then the only gate.
	Authorize func(r *http.Request, action, target string) error
	// Actor names who makes the request, recorded as the actor of every
	// command in the engine's history and audit. Nil or "" records
	// "console".
	Actor func(r *http.Request) string
	// LogoutURL, when set, is where the header's "Log out" link goes (the
	// host's logout page); empty shows none.
	LogoutURL string
	// Logger receives the console's logs (failed requests); default
	// slog.Default().
	Logger *slog.Logger
	// DiagramCacheSize is how many process diagram layouts are kept in
	// memory (one per definition version and process); default 64.
	DiagramCacheSize int
	// MaxUploadBytes bounds an upload of definitions: the whole
	// multipart body, every file in it; default DefaultMaxUploadBytes. A
	// larger one is refused with 413 before it is read further. Reading
	// and deploying a file costs up to about 45 times its size in memory
	// (docs/security.md), and the engine's own limit
	// (engine.Config.MaxDefinitionBytes) applies to each file as well.
	MaxUploadBytes int64
}

// DefaultMaxUploadBytes is the default Options.MaxUploadBytes: 4 MiB,
// twenty times the largest file of the corpus of real XPDL the project
// tests against, and room for a package of about four thousand
// activities; a quarter of what the engine takes from its host
// (xpdl.DefaultMaxBytes), as an upload comes from further away.
const DefaultMaxUploadBytes = 4 << 20

// The actions Options.Authorize is asked about. ActionRead covers every
// page and every API read; the others are state changes.
const (
	ActionRead = "read"

	ActionDeploy = "definition.deploy"
	ActionStart  = "instance.start"

	ActionSuspend   = "instance.suspend"
	ActionResume    = "instance.resume"
	ActionTerminate = "instance.terminate"
	ActionJump      = "instance.jump"
	ActionRollback  = "instance.rollback"
	ActionMigrate   = "instance.migrate"
	ActionVariables = "instance.variables"

	ActionRetry = "activity.retry"
	ActionSkip  = "activity.skip"

	ActionWorkItemClaim    = "workitem.claim"
	ActionWorkItemRelease  = "workitem.release"
	ActionWorkItemReassign = "workitem.reassign"
	ActionWorkItemDelegate = "workitem.delegate"
	ActionWorkItemComplete = "workitem.complete"

	ActionBatchStart  = "batch.start"
	ActionBatchCancel = "batch.cancel"
	ActionBatchPause  = "batch.pause"
	ActionBatchResume = "batch.resume"

	ActionRecover     = "engine.recover"
	ActionLockRelease = "lock.release"
)

// Handler serves the console's pages, its JSON API and its static files.
// Create it with New.
type Handler struct {
	eng      *engine.Engine
	opts     Options
	log      *slog.Logger
	pages    map[string]*template.Template
	diagrams *diagram.Cache
	pkgs     *packages
	// uploading lets one upload at a time be read and deployed
	// (action.Upload): a file at the limits takes a second or more and
	// tens of times its size in memory to read (docs/security.md), and
	// uploads side by side would multiply that.
	uploading chan struct{}
	root      http.Handler
}

// New returns the console of eng.
func New(eng *engine.Engine, opts Options) (*Handler, error) {
	if eng == nil {
		return nil, errors.New("console: nil engine")
	}
	prefix := strings.TrimRight(opts.Prefix, "/")
	if prefix != "" && !strings.HasPrefix(prefix, "/") {
		return nil, fmt.Errorf("console: Prefix %q does not start with /", opts.Prefix)
	}
	opts.Prefix = prefix
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.DiagramCacheSize <= 0 {
		opts.DiagramCacheSize = 64
	}
	if opts.MaxUploadBytes <= 0 {
		opts.MaxUploadBytes = DefaultMaxUploadBytes
	}
	cache, err := diagram.NewCache(opts.DiagramCacheSize)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	h := &Handler{eng: eng, opts: opts, log: opts.Logger, diagrams: cache, uploading: make(chan struct{}, 1)}
	if h.pkgs, err = newPackages(eng, opts.DiagramCacheSize); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if h.pages, err = parsePages(h.funcs()); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	mux := http.NewServeMux()
	h.routes(mux)
	var root = h.unrouted(mux)
	root = http.NewCrossOriginProtection().Handler(root)
	root = h.recoverPanics(root)
	if prefix != "" {
		root = http.StripPrefix(prefix, root)
	}
	h.root = root
	return h, nil
}

// ServeHTTP serves one request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.root.ServeHTTP(w, r)
}

// recoverPanics turns a panic in a page into a 500 (logged), so that no
// panic reaches the host's server.
func (h *Handler) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				h.log.Error("console: panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				h.fail(w, r, fmt.Errorf("%w: internal error", errInternal))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// actor is who makes the request.
func (h *Handler) actor(r *http.Request) string {
	if h.opts.Actor != nil {
		if a := strings.TrimSpace(h.opts.Actor(r)); a != "" {
			return a
		}
	}
	return "console"
}

// authorize asks Options.Authorize.
func (h *Handler) authorize(r *http.Request, action, target string) error {
	if h.opts.Authorize == nil {
		return nil
	}
	if err := h.opts.Authorize(r, action, target); err != nil {
		return &forbiddenError{reason: err.Error()}
	}
	return nil
}

// can says whether the request may perform action on target; the pages
// show only the buttons it may use.
func (h *Handler) can(r *http.Request, action, target string) bool {
	if h.opts.ReadOnly {
		return false
	}
	return h.authorize(r, action, target) == nil
}

// path returns the console path p (starting with /) under the prefix.
func (h *Handler) path(p string) string {
	return h.opts.Prefix + p
}
