package users_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/console"
	"github.com/goxpdl/goxpdl/console/users"
)

// The console's actions (console.Action…) and who may take them.
var actionTable = []struct {
	action                  string
	viewer, operator, admin bool
}{
	{"read", true, true, true},
	{"instance.start", false, true, true},
	{"instance.suspend", false, true, true},
	{"instance.resume", false, true, true},
	{"instance.terminate", false, true, true},
	{"instance.jump", false, true, true},
	{"instance.rollback", false, true, true},
	{"instance.variables", false, true, true},
	{"activity.retry", false, true, true},
	{"activity.skip", false, true, true},
	{"workitem.claim", false, true, true},
	{"workitem.complete", false, true, true},
	{"workitem.reassign", false, true, true},
	{"incident.retry", false, true, true},
	{"instance.migrate", false, false, true},
	{"instance.purge", false, false, true},
	{"instance.bulk-terminate", false, false, true},
	{"definition.deploy", false, false, true},
	{"batch.start", false, false, true},
	{"batch.cancel", false, false, true},
	{"engine.recover", false, false, true},
	{"lock.release", false, false, true},
	{"something.new", false, false, true},
	{"instance.", false, false, true},
	{"", false, false, true},
}

func TestRoleAllows(t *testing.T) {
	t.Parallel()
	for _, tc := range actionTable {
		require.Equal(t, tc.viewer, users.RoleViewer.Allows(tc.action), "viewer %q", tc.action)
		require.Equal(t, tc.operator, users.RoleOperator.Allows(tc.action), "operator %q", tc.action)
		require.Equal(t, tc.admin, users.RoleAdmin.Allows(tc.action), "admin %q", tc.action)
		require.False(t, users.Role("root").Allows(tc.action), "unknown role %q", tc.action)
	}
}

func TestAuthorizeAndActor(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodPost, "/instances/7/suspend", nil)
	require.ErrorIs(t, users.Authorize(r, "read", "page/dashboard"), users.ErrUnauthenticated)
	require.Empty(t, users.Actor(r))

	r = r.WithContext(users.NewContext(r.Context(), users.User{Name: "carol", Role: users.RoleViewer}))
	require.NoError(t, users.Authorize(r, "read", "instance/7"))
	err := users.Authorize(r, "instance.suspend", "instance/7")
	require.ErrorIs(t, err, users.ErrForbidden)
	fe, ok := errors.AsType[*users.ForbiddenError](err)
	require.True(t, ok)
	require.Equal(t, users.ForbiddenError{User: "carol", Role: users.RoleViewer, Action: "instance.suspend", Target: "instance/7"}, *fe)
	require.EqualError(t, err, "carol (viewer) may not instance.suspend instance/7")
	require.Equal(t, "carol", users.Actor(r))

	r = r.WithContext(users.NewContext(r.Context(), users.User{Name: "bob", Role: users.RoleOperator}))
	require.NoError(t, users.Authorize(r, "instance.suspend", "instance/7"))
	require.ErrorIs(t, users.Authorize(r, "definition.deploy", "definition/order"), users.ErrForbidden)
	require.Equal(t, "bob", users.Actor(r))
}

// Every action the console asks about is classified as intended: the
// console's constants, by the least role that may take them.
func TestConsoleActions(t *testing.T) {
	t.Parallel()
	require.Equal(t, console.ActionRead, users.ActionRead)
	least := map[string]users.Role{
		console.ActionRead: users.RoleViewer,

		console.ActionStart: users.RoleOperator, console.ActionSuspend: users.RoleOperator,
		console.ActionResume: users.RoleOperator, console.ActionTerminate: users.RoleOperator,
		console.ActionJump: users.RoleOperator, console.ActionRollback: users.RoleOperator,
		console.ActionVariables: users.RoleOperator, console.ActionRetry: users.RoleOperator,
		console.ActionSkip: users.RoleOperator, console.ActionWorkItemClaim: users.RoleOperator,
		console.ActionWorkItemRelease: users.RoleOperator, console.ActionWorkItemReassign: users.RoleOperator,
		console.ActionWorkItemDelegate: users.RoleOperator, console.ActionWorkItemComplete: users.RoleOperator,

		console.ActionDeploy: users.RoleAdmin, console.ActionMigrate: users.RoleAdmin,
		console.ActionBatchStart: users.RoleAdmin, console.ActionBatchCancel: users.RoleAdmin,
		console.ActionBatchPause: users.RoleAdmin, console.ActionBatchResume: users.RoleAdmin,
		console.ActionRecover: users.RoleAdmin, console.ActionLockRelease: users.RoleAdmin,
	}
	for action, role := range least {
		rank := slices.Index(users.Roles, role)
		for i, r := range users.Roles {
			require.Equal(t, i >= rank, r.Allows(action), "%s %s", r, action)
		}
	}
}
