package engine

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Op says who gives a command and why. Every state change the command
// makes is written to the history with it: Actor as the entry's actor,
// Reason and Data in the entry's detail. The zero Op is the host acting
// without a reason.
type Op struct {
	// Actor is who gives the command: a user, "console", "cli"; default
	// "host".
	Actor string
	// Reason is why, in the operator's words ("customer cancelled").
	Reason string
	// Data is the host's own data kept with the history entries (a ticket
	// number, a request id); it must encode as JSON.
	Data map[string]any
}

// actor returns the Actor, or def when it is empty.
func (o Op) actor(def string) string {
	if a := strings.TrimSpace(o.Actor); a != "" {
		return a
	}
	return def
}

// entryDetail is the JSON detail of a history entry.
type entryDetail struct {
	Diagnosis string         `json:"diagnosis,omitempty"`
	Reason    string         `json:"reason,omitempty"`
	Data      map[string]any `json:"data,omitempty"`
}

// detail encodes a history entry's detail: the diagnosis of the change
// and the reason and data of the command that made it; nil when there is
// none of them.
func (r *run) detail(diagnosis string) []byte {
	if diagnosis == "" && r.op.Reason == "" && len(r.op.Data) == 0 {
		return nil
	}
	return mustJSON(entryDetail{Diagnosis: diagnosis, Reason: r.op.Reason, Data: r.op.Data})
}

// check refuses an Op whose Data does not encode as JSON (ErrBadArgument), or
// whose texts cannot be kept as given (a *TextError).
func (o Op) check() error {
	if err := checkText("Op.Actor", o.Actor, maxKey); err != nil {
		return err
	}
	if err := checkText("Op.Reason", o.Reason, 0); err != nil {
		return err
	}
	if len(o.Data) == 0 {
		return nil
	}
	if want := badValue(o.Data); want != "" {
		return &TextError{Field: "Op.Data", Reason: "cannot be kept: " + want}
	}
	if _, err := json.Marshal(o.Data); err != nil {
		return fmt.Errorf("%w: Op.Data does not encode as JSON: %w", ErrBadArgument, err)
	}
	return nil
}
