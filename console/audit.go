package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/goxpdl/goxpdl/engine"
)

// auditRoutes registers the audit log: every operator command, by whom,
// on what, why, and what came of it.
func (h *Handler) auditRoutes(mux *http.ServeMux) {
	h.page(mux, "GET /audit", "audit", "audit", fixed("page/audit"), h.auditView)
}

// auditList is the data of the audit page.
type auditList struct {
	Entries []engine.AuditEntry `json:"entries"`
	Next    string              `json:"next,omitempty"`
	// NextPage is the console path of the next (older) page.
	NextPage string `json:"-"`
	// Actions, Results and Kinds are offered in the filter form.
	Actions []engine.AuditAction     `json:"-"`
	Results []engine.AuditResult     `json:"-"`
	Kinds   []engine.AuditTargetKind `json:"-"`
}

func (h *Handler) auditView(r *http.Request) (view, error) {
	f, err := auditFilter(r.URL.Query())
	if err != nil {
		return view{}, err
	}
	page, err := h.eng.Audit(r.Context(), f)
	if err != nil {
		return view{}, err
	}
	out := auditList{Entries: page.Entries, Next: page.Next,
		Actions: engine.AuditActions, Results: engine.AuditResults, Kinds: engine.AuditTargetKinds}
	if out.Entries == nil {
		out.Entries = []engine.AuditEntry{}
	}
	if page.Next != "" {
		out.NextPage = nextPage("/audit", r.URL.Query(), page.Next)
	}
	return view{Title: "Audit", Data: out}, nil
}

// auditFilter reads an AuditFilter from query parameters: actor, action
// and result (each repeatable), kind and target (the target's kind and
// id), instance, since and until (RFC 3339 or YYYY-MM-DD), after (the
// cursor) and limit.
func auditFilter(q url.Values) (engine.AuditFilter, error) {
	f := engine.AuditFilter{
		Actor:      strings.TrimSpace(q.Get("actor")),
		TargetKind: engine.AuditTargetKind(strings.TrimSpace(q.Get("kind"))),
		TargetID:   strings.TrimSpace(q.Get("target")),
		After:      strings.TrimSpace(q.Get("after")),
	}
	for _, a := range nonEmpty(q["action"]) {
		f.Actions = append(f.Actions, engine.AuditAction(a))
	}
	for _, s := range nonEmpty(q["result"]) {
		f.Results = append(f.Results, engine.AuditResult(s))
	}
	var err error
	if f.Instance, err = queryInt64(q, "instance"); err != nil {
		return f, err
	}
	if f.Limit, err = queryInt(q, "limit"); err != nil {
		return f, err
	}
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Since, err = queryTime(q, "since"); err != nil {
		return f, err
	}
	if f.Until, err = queryTime(q, "until"); err != nil {
		return f, err
	}
	return f, nil
}

// nonEmpty drops blank values (an "any" choice of a select).
func nonEmpty(vs []string) []string {
	var out []string
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
