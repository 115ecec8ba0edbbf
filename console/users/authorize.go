package users

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ActionRead is the action of every page and API read (the console's
// console.ActionRead); every role may do it.
const ActionRead = "read"

// operatorDomains are the kinds of target an operator acts on: an action
// "KIND.VERB" whose kind is one of these is an operator's, unless
// adminActions names it.
var operatorDomains = []string{"instance.", "activity.", "workitem.", "incident."}

// adminActions are actions on an operator's kinds of target that only an
// admin may take: moving an instance to another version, and deleting
// instances.
var adminActions = map[string]bool{
	"instance.migrate": true,
	"instance.purge":   true,
}

// Errors of Authorize.
var (
	// ErrForbidden matches every *ForbiddenError.
	ErrForbidden = errors.New("forbidden")
	// ErrUnauthenticated is a request without an authenticated user
	// (Handler did not run before Authorize).
	ErrUnauthenticated = errors.New("not logged in")
)

// ForbiddenError is an action the user's role does not allow.
type ForbiddenError struct {
	User   string
	Role   Role
	Action string
	Target string
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("%s (%s) may not %s %s", e.User, e.Role, e.Action, e.Target)
}

// Is makes every ForbiddenError match ErrForbidden.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// Allows says whether role r may take action. Actions are named
// "KIND.VERB" (the console's Action… constants: "instance.suspend",
// "workitem.complete", "definition.deploy", "batch.start"), and ActionRead
// covers every read:
//
//   - a viewer may only read;
//   - an operator may also take every action on an instance, an activity,
//     a work item or an incident, except migrating and purging instances;
//   - an admin may take every action: also deploying definitions,
//     migrating, batches (bulk actions), purging, recovery and releasing
//     locks, and any action this list does not know yet.
//
// An unknown role may do nothing.
func (r Role) Allows(action string) bool {
	switch r {
	case RoleAdmin:
		return true
	case RoleOperator:
		if action == ActionRead {
			return true
		}
		if adminActions[action] || strings.Contains(action, "bulk") {
			return false
		}
		for _, d := range operatorDomains {
			if strings.HasPrefix(action, d) && len(action) > len(d) {
				return true
			}
		}
		return false
	case RoleViewer:
		return action == ActionRead
	}
	return false
}

// Authorize allows action on target when the request's user (put there
// by Handler) has a role that allows it (Role.Allows); it fits the
// console's Options.Authorize. It refuses with a *ForbiddenError
// (ErrForbidden), or ErrUnauthenticated when the request has no user.
func Authorize(r *http.Request, action, target string) error {
	u, ok := FromContext(r.Context())
	if !ok {
		return ErrUnauthenticated
	}
	if !u.Role.Allows(action) {
		return &ForbiddenError{User: u.Name, Role: u.Role, Action: action, Target: target}
	}
	return nil
}

// Actor is the name of the request's user (put there by Handler), ""
// when it has none; it fits the console's Options.Actor.
func Actor(r *http.Request) string {
	u, _ := FromContext(r.Context())
	return u.Name
}
