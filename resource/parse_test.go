package resource_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/resource"
)

// The bad organisation files, each with every problem it must report.
// The documents start on line 1 right after the backquote, so the line
// numbers can be counted.
var badOrgs = []struct {
	name   string
	format resource.Format
	doc    string
	want   []resource.Problem
}{
	{
		name:   "unknown fields at every level, with the references still checked",
		format: resource.FormatYAML,
		doc: `users:
  - id: alice
    role: [clerk]
    roles: [clark]
roles:
  - id: clerk
    title: Clerk
units:
  - id: sales
    boss: alice
participants:
  Approver: {rol: clerk}
groups: []
`,
		want: []resource.Problem{
			{Line: 3, Code: "unknown-field", Msg: `unknown field "role" in a user`},
			{Line: 4, Path: "users[0].roles[0]", Code: "unknown-role", Msg: `user "alice" has role "clark", which is not declared under roles`},
			{Line: 7, Code: "unknown-field", Msg: `unknown field "title" in a role`},
			{Line: 10, Code: "unknown-field", Msg: `unknown field "boss" in a unit`},
			{Line: 12, Code: "unknown-field", Msg: `unknown field "rol" in a participant mapping`},
			{Line: 12, Path: "participants.Approver", Code: "mapping-target", Msg: `participant "Approver" maps to nothing; give one of role, unit or user`},
			{Line: 13, Code: "unknown-field", Msg: `unknown field "groups" at the top level`},
		},
	},
	{
		name:   "missing and duplicate ids",
		format: resource.FormatYAML,
		doc: `users:
  - id: alice
  - name: Nobody
  - id: alice
roles:
  - id: clerk
  - id: clerk
  - id: clerk
units:
  - {id: sales}
  - {id: ""}
  - {id: sales, parent: sales}
`,
		want: []resource.Problem{
			{Line: 3, Path: "users[1]", Code: "missing-id", Msg: "user without an id"},
			{Line: 4, Path: "users[2].id", Code: "duplicate-id", Msg: `duplicate user id "alice" (first at line 2)`},
			{Line: 7, Path: "roles[1].id", Code: "duplicate-id", Msg: `duplicate role id "clerk" (first at line 6)`},
			{Line: 8, Path: "roles[2].id", Code: "duplicate-id", Msg: `duplicate role id "clerk" (first at line 6)`},
			{Line: 11, Path: "units[1]", Code: "missing-id", Msg: "unit without an id"},
			{Line: 12, Path: "units[2].id", Code: "duplicate-id", Msg: `duplicate unit id "sales" (first at line 10)`},
		},
	},
	{
		name:   "users referring to unknown roles and units",
		format: resource.FormatYAML,
		doc: `users:
  - id: alice
    roles: [clerk, manager]
    units:
      - sales
      - north
  - id: bob
    roles: [pilot]
roles:
  - id: clerk
units:
  - id: sales
`,
		want: []resource.Problem{
			{Line: 3, Path: "users[0].roles[1]", Code: "unknown-role", Msg: `user "alice" has role "manager", which is not declared under roles`},
			{Line: 6, Path: "users[0].units[1]", Code: "unknown-unit", Msg: `user "alice" is in unit "north", which is not declared under units`},
			{Line: 8, Path: "users[1].roles[0]", Code: "unknown-role", Msg: `user "bob" has role "pilot", which is not declared under roles`},
		},
	},
	{
		name:   "unknown parents and managers",
		format: resource.FormatYAML,
		doc: `users:
  - id: alice
units:
  - id: sales
    manager: alice
  - id: sales-east
    parent: sale
    manager: carol
`,
		want: []resource.Problem{
			{Line: 7, Path: "units[1].parent", Code: "unknown-parent", Msg: `unit "sales-east" has parent "sale", which is not declared under units`},
			{Line: 8, Path: "units[1].manager", Code: "unknown-user", Msg: `unit "sales-east" has manager "carol", which is not declared under users`},
		},
	},
	{
		name:   "parent cycles, each reported once at its first unit",
		format: resource.FormatYAML,
		doc: `units:
  - id: tail
    parent: b
  - id: a
    parent: c
  - id: b
    parent: a
  - id: c
    parent: b
  - id: self
    parent: self
  - id: x
    parent: "y"
  - id: "y"
    parent: x
  - id: fine
`,
		want: []resource.Problem{
			{Line: 5, Path: "units[1].parent", Code: "parent-cycle", Msg: "unit parents form a cycle: a -> c -> b -> a"},
			{Line: 11, Path: "units[4].parent", Code: "parent-cycle", Msg: "unit parents form a cycle: self -> self"},
			{Line: 13, Path: "units[5].parent", Code: "parent-cycle", Msg: "unit parents form a cycle: x -> y -> x"},
		},
	},
	{
		name:   "participant mappings",
		format: resource.FormatYAML,
		doc: `users:
  - id: alice
roles:
  - id: clerk
units:
  - id: sales
participants:
  Good: {role: clerk}
  NoRole: {role: pilot}
  NoUnit:
    unit: north
  NoUser: {user: zed}
  Nothing: {}
  Two: {role: clerk, user: alice}
  Three: {role: clerk, unit: sales, user: zed}
  "": {user: alice}
`,
		want: []resource.Problem{
			{Line: 9, Path: "participants.NoRole.role", Code: "unknown-role", Msg: `participant "NoRole" maps to role "pilot", which is not declared under roles`},
			{Line: 11, Path: "participants.NoUnit.unit", Code: "unknown-unit", Msg: `participant "NoUnit" maps to unit "north", which is not declared under units`},
			{Line: 12, Path: "participants.NoUser.user", Code: "unknown-user", Msg: `participant "NoUser" maps to user "zed", which is not declared under users`},
			{Line: 13, Path: "participants.Nothing", Code: "mapping-target", Msg: `participant "Nothing" maps to nothing; give one of role, unit or user`},
			{Line: 14, Path: "participants.Two", Code: "mapping-target", Msg: `participant "Two" maps to role "clerk" and user "alice"; give only one of role, unit or user`},
			{Line: 15, Path: "participants.Three.user", Code: "unknown-user", Msg: `participant "Three" maps to user "zed", which is not declared under users`},
			{Line: 15, Path: "participants.Three", Code: "mapping-target", Msg: `participant "Three" maps to role "clerk" and unit "sales" and user "zed"; give only one of role, unit or user`},
			{Line: 16, Path: `participants[""]`, Code: "missing-id", Msg: "a participant mapping has an empty participant id"},
		},
	},
	{
		name:   "type mismatches stop the reference checks",
		format: resource.FormatYAML,
		doc: `users:
  - id: alice
    roles: clerk
  - id: [bob]
    roles: [pilot]
participants:
  Approver: manager
`,
		want: []resource.Problem{
			{Line: 3, Code: "type", Msg: `found a string "clerk", want a list of ids`},
			{Line: 4, Code: "type", Msg: "found a list, want a string"},
			{Line: 7, Code: "type", Msg: `found a string "manager", want a target such as {role: manager}`},
		},
	},
	{
		name:   "repeated keys",
		format: resource.FormatYAML,
		doc: `users:
  - id: alice
    id: bob
participants:
  Approver: {role: clerk}
  Approver: {role: manager}
`,
		want: []resource.Problem{
			{Line: 3, Code: "duplicate-key", Msg: `mapping key "id" already defined at line 2`},
			{Line: 6, Code: "duplicate-key", Msg: `mapping key "Approver" already defined at line 5`},
		},
	},
	{
		name:   "aliases are refused: a billion laughs",
		format: resource.FormatYAML,
		doc: `roles:
  - id: &lol lol
  - id: *lol
units: &units [{id: a}, {id: b}]
users:
  - id: alice
    units: [a]
laughs:
  a: &a [lol, lol]
  b: &b [*a, *a]
  c: [*b, *b]
base: &base {roles: [x]}
more:
  <<: *base
`,
		want: []resource.Problem{
			{Line: 3, Code: "alias", Msg: "alias *lol: YAML aliases are not accepted (they can expand a small file into a huge one); write the value out"},
			{Line: 10, Code: "alias", Msg: "alias *a: YAML aliases are not accepted (they can expand a small file into a huge one); write the value out"},
			{Line: 10, Code: "alias", Msg: "alias *a: YAML aliases are not accepted (they can expand a small file into a huge one); write the value out"},
			{Line: 11, Code: "alias", Msg: "alias *b: YAML aliases are not accepted (they can expand a small file into a huge one); write the value out"},
			{Line: 11, Code: "alias", Msg: "alias *b: YAML aliases are not accepted (they can expand a small file into a huge one); write the value out"},
			{Line: 14, Code: "alias", Msg: "alias *base: YAML aliases are not accepted (they can expand a small file into a huge one); write the value out"},
		},
	},
	{
		name:   "YAML parser error, at the line of the open bracket",
		format: resource.FormatYAML,
		doc: `users:
  - id: alice
    roles: [clerk
roles: []
`,
		want: []resource.Problem{
			{Line: 3, Code: "syntax", Msg: "did not find expected ',' or ']'"},
		},
	},
	{
		name:   "YAML scanner error",
		format: resource.FormatYAML,
		doc: `users:
  - id: alice
    name: Alice: Smith
`,
		want: []resource.Problem{
			{Line: 3, Code: "syntax", Msg: "mapping values are not allowed in this context"},
		},
	},
	{
		name:   "empty YAML",
		format: resource.FormatYAML,
		doc:    "# nothing but a comment\n",
		want:   []resource.Problem{{Code: "empty", Msg: "the document is empty"}},
	},
	{
		name:   "empty YAML document",
		format: resource.FormatYAML,
		doc:    "---\n",
		want:   []resource.Problem{{Code: "empty", Msg: "the document is empty"}},
	},
	{
		name:   "YAML that is not a mapping",
		format: resource.FormatYAML,
		doc:    "\n- id: alice\n",
		want:   []resource.Problem{{Line: 2, Code: "type", Msg: "the document must be a mapping of users, roles, units and participants"}},
	},
	{
		name:   "two YAML documents",
		format: resource.FormatYAML,
		doc:    "users: []\n---\nroles: []\n",
		want:   []resource.Problem{{Line: 2, Code: "syntax", Msg: "more than one YAML document; an organisation file holds one"}},
	},
	{
		name:   "JSON reference problems have paths, not lines",
		format: resource.FormatJSON,
		doc: `{
  "users": [
    {"id": "alice", "roles": ["clerk"], "units": ["north"]},
    {"id": "alice"}
  ],
  "units": [{"id": "a", "parent": "b"}, {"id": "b", "parent": "a"}],
  "participants": {"Approver": {"role": "clerk", "user": "bob"}}
}`,
		want: []resource.Problem{
			{Path: "users[1].id", Code: "duplicate-id", Msg: `duplicate user id "alice" (first at users[0])`},
			{Path: "users[0].roles[0]", Code: "unknown-role", Msg: `user "alice" has role "clerk", which is not declared under roles`},
			{Path: "users[0].units[0]", Code: "unknown-unit", Msg: `user "alice" is in unit "north", which is not declared under units`},
			{Path: "units[0].parent", Code: "parent-cycle", Msg: "unit parents form a cycle: a -> b -> a"},
			{Path: "participants.Approver.role", Code: "unknown-role", Msg: `participant "Approver" maps to role "clerk", which is not declared under roles`},
			{Path: "participants.Approver.user", Code: "unknown-user", Msg: `participant "Approver" maps to user "bob", which is not declared under users`},
			{Path: "participants.Approver", Code: "mapping-target", Msg: `participant "Approver" maps to role "clerk" and user "bob"; give only one of role, unit or user`},
		},
	},
	{
		name:   "JSON unknown field",
		format: resource.FormatJSON,
		doc:    `{"users": [{"id": "alice", "roles": ["nope"], "role": "clerk"}]}`,
		want:   []resource.Problem{{Code: "unknown-field", Msg: `unknown field "role"`}},
	},
	{
		name:   "JSON type mismatch",
		format: resource.FormatJSON,
		doc:    "{\n  \"users\": [\n    {\"id\": \"alice\", \"roles\": \"clerk\"}\n  ]\n}",
		want:   []resource.Problem{{Line: 3, Path: "users.roles", Code: "type", Msg: "found a JSON string, want a list"}},
	},
	{
		name:   "JSON syntax error",
		format: resource.FormatJSON,
		doc:    "{\n  \"users\": [\n    {\"id\": \"alice\",}\n  ]\n}",
		want:   []resource.Problem{{Line: 3, Code: "syntax", Msg: "invalid character '}' looking for beginning of object key string"}},
	},
	{
		name:   "JSON cut short",
		format: resource.FormatJSON,
		doc:    "{\n  \"users\": [",
		want:   []resource.Problem{{Line: 2, Code: "syntax", Msg: "unexpected end of JSON input"}},
	},
	{
		name:   "JSON that is not an object",
		format: resource.FormatJSON,
		doc:    `["alice"]`,
		want:   []resource.Problem{{Line: 1, Code: "type", Msg: "found a JSON array, want an object"}},
	},
	{
		name:   "two JSON documents",
		format: resource.FormatJSON,
		doc:    "{}\n{}",
		want:   []resource.Problem{{Line: 2, Code: "syntax", Msg: "data after the JSON document"}},
	},
	{
		name:   "empty JSON",
		format: resource.FormatJSON,
		doc:    " \n",
		want:   []resource.Problem{{Code: "empty", Msg: "the document is empty"}},
	},
}

func TestParseOrgRefusesBadDocuments(t *testing.T) {
	t.Parallel()
	for _, tt := range badOrgs {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := resource.ParseOrg([]byte(tt.doc), tt.format)
			require.ErrorIs(t, err, resource.ErrInvalidOrg)
			require.Nil(t, d)
			var orgErr *resource.OrgError
			require.ErrorAs(t, err, &orgErr)
			require.Equal(t, tt.want, orgErr.Problems)
		})
	}
}

func TestOrgErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := resource.ParseOrg([]byte("users:\n  - id: alice\n    roles: [clerk]\n  - id: alice\n"), resource.FormatYAML)
	require.EqualError(t, err, `invalid organisation file: 2 problems:
	line 3: users[0].roles[0]: user "alice" has role "clerk", which is not declared under roles
	line 4: users[1].id: duplicate user id "alice" (first at line 2)`)

	_, err = resource.ParseOrg([]byte(`{"roles": [{"id": "a"}, {}]}`), resource.FormatJSON)
	require.EqualError(t, err, "invalid organisation file: roles[1]: role without an id")
}

func TestParseOrgSizeLimit(t *testing.T) {
	t.Parallel()
	for _, format := range []resource.Format{resource.FormatYAML, resource.FormatJSON} {
		// Exactly at the limit is read: a valid document padded with
		// blanks.
		doc := `{"users": [{"id": "alice"}]}`
		atLimit := []byte(doc + strings.Repeat(" ", resource.MaxOrgFileSize-len(doc)))
		d, err := resource.ParseOrg(atLimit, format)
		require.NoError(t, err, format)
		require.NotNil(t, d, format)

		// One byte more is refused, before parsing: the content is not
		// even valid.
		_, err = resource.ParseOrg(make([]byte, resource.MaxOrgFileSize+1), format)
		require.ErrorIs(t, err, resource.ErrInvalidOrg)
		var orgErr *resource.OrgError
		require.ErrorAs(t, err, &orgErr)
		require.Equal(t, []resource.Problem{{
			Code: "too-large",
			Msg:  "the file is 4194305 bytes, more than the limit of 4194304 (4 MiB)",
		}}, orgErr.Problems)
	}
}

func TestParseOrgAcceptsAnchorsWithoutAliases(t *testing.T) {
	t.Parallel()
	// An anchor alone expands nothing; only aliases are refused.
	d, err := resource.ParseOrg([]byte("roles:\n  - &clerk {id: clerk}\n"), resource.FormatYAML)
	require.NoError(t, err)
	require.NotNil(t, d)
}

func TestParseOrgUnknownFormat(t *testing.T) {
	t.Parallel()
	_, err := resource.ParseOrg([]byte("{}"), "toml")
	require.EqualError(t, err, `parse organisation file: unknown format "toml", want "yaml" or "json"`)
	require.NotErrorIs(t, err, resource.ErrInvalidOrg)
}

func TestProblemString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "line 3: users[0]: bad", resource.Problem{Line: 3, Path: "users[0]", Msg: "bad"}.String())
	require.Equal(t, "users[0]: bad", resource.Problem{Path: "users[0]", Msg: "bad"}.String())
	require.Equal(t, "line 3: bad", resource.Problem{Line: 3, Msg: "bad"}.String())
	require.Equal(t, "bad", resource.Problem{Msg: "bad"}.String())
}
