package statemachine

import (
	"maps"
	"slices"
	"strings"

	"gorm.io/gorm"
)

// StateContext is what Enter and Resume see of the machine instance, and
// how they change it. It is valid only during the call.
type StateContext struct {
	// Machine is the machine's ID, Instance its process instance.
	Machine  string
	Instance int64
	// State is the state being entered (Enter) or resumed (Resume).
	State string
	// From is, for Enter, the state the machine leaves ("" when Start
	// enters the initial state); for Resume, "".
	From string
	// Input is the input of the Start or Resume that moves the machine,
	// as JSON decodes it: objects map[string]any, arrays []any, numbers
	// int64 when integral and float64 otherwise. Never nil.
	Input map[string]any
	// Tx is the engine's transaction (a *gorm.DB), for the host's own
	// writes: they commit with the move, or roll back with it.
	Tx *gorm.DB

	vars       map[string]any // the machine's variables, by name
	declared   map[string]bool
	changed    map[string]any
	performers []string
	assigned   bool
}

// Var returns the value of a machine variable (Definition.Vars) in its Go
// form (an INTEGER is an int64, ...), with the changes made by Set so far;
// nil for a name that is not one.
func (c *StateContext) Var(name string) any {
	if v, ok := c.changed[name]; ok {
		return v
	}
	return c.vars[name]
}

// Vars returns a copy of every machine variable, by name, with the
// changes made by Set so far.
func (c *StateContext) Vars() map[string]any {
	out := maps.Clone(c.vars)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, c.changed)
	return out
}

// Set sets a machine variable when the call returns without an error. A
// name the Definition does not declare, or a value its type does not
// take, refuses the move (engine.ErrUnknownVariable, engine.ErrWrongType)
// and nothing changes.
func (c *StateContext) Set(name string, value any) {
	if c.changed == nil {
		c.changed = map[string]any{}
	}
	c.changed[name] = value
}

// Assign offers the work item of the state being entered to these role
// names (Definition.Roles) and user ids instead of the state's
// Performers; with none, to no one (the state waits for the host). Only
// Enter assigns: in Resume it changes nothing.
func (c *StateContext) Assign(performers ...string) {
	c.performers, c.assigned = nil, true
	for _, p := range performers {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(c.performers, p) {
			c.performers = append(c.performers, p)
		}
	}
}
