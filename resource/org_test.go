package resource_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/resource"
)

// loadBoth loads testdata/org.yaml and testdata/org.json, the same
// organisation in both formats, so that every directory test runs on
// both.
func loadBoth(t *testing.T) map[string]*resource.OrgDirectory {
	t.Helper()
	dirs := map[string]*resource.OrgDirectory{}
	for _, name := range []string{"org.yaml", "org.json"} {
		d, err := resource.LoadOrgFile(filepath.Join("testdata", name))
		require.NoError(t, err, name)
		dirs[name] = d
	}
	return dirs
}

func TestYAMLAndJSONLoadTheSameDirectory(t *testing.T) {
	t.Parallel()
	dirs := loadBoth(t)
	require.Equal(t, dirs["org.yaml"], dirs["org.json"])
}

func p(kind resource.ParticipantKind, id string) resource.Participant {
	return resource.Participant{ID: id, Kind: kind}
}

func TestOrgDirectoryResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    resource.Participant
		want []string
	}{
		{"human is the user", p(resource.KindHuman, "alice"), []string{"alice"}},
		{"human mapped to a user", p(resource.KindHuman, "Boss"), []string{"carol"}},
		{"role members, repeats collapsed", p(resource.KindRole, "clerk"), []string{"alice", "bob", "carol"}},
		{"role mapped to a role", p(resource.KindRole, "Approver"), []string{"alice", "carol"}},
		{"a mapping wins over a role of the same id", p(resource.KindRole, "auditor"), []string{"dave"}},
		{"a role nobody holds", p(resource.KindRole, "vacant"), nil},
		{"resource is read as a role", p(resource.KindResource, "printer"), []string{"frank"}},
		{"resource set is read as a role", p(resource.KindResourceSet, "printer"), []string{"frank"}},
		{"unit with sub-units two levels deep", p(resource.KindOrgUnit, "sales"), []string{"alice", "bob", "carol", "frank"}},
		{"unit with a sub-unit", p(resource.KindOrgUnit, "sales-east"), []string{"alice", "frank"}},
		{"leaf unit", p(resource.KindOrgUnit, "east-field"), []string{"frank"}},
		{"unit mapped to a unit", p(resource.KindOrgUnit, "SalesDept"), []string{"alice", "bob", "carol", "frank"}},
		{"a mapping wins whatever the kind", p(resource.KindHuman, "SalesDept"), []string{"alice", "bob", "carol", "frank"}},
		{"system resolves to nobody", p(resource.KindSystem, "engine"), nil},
		{"system resolves to nobody even when mapped", p(resource.KindSystem, "Boss"), nil},
	}
	for format, d := range loadBoth(t) {
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				got, err := d.Resolve(context.Background(), tt.p)
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
			})
		}
	}
}

func TestOrgDirectoryResolveUnknown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		p       resource.Participant
		wantMsg string
	}{
		{"no such user", p(resource.KindHuman, "zed"),
			`participant "zed" (HUMAN): its id names user "zed", which the organisation lacks: unknown participant`},
		{"no such role", p(resource.KindRole, "pilot"),
			`participant "pilot" (ROLE): its id names role "pilot", which the organisation lacks: unknown participant`},
		{"no such resource", p(resource.KindResource, "crane"),
			`participant "crane" (RESOURCE): its id names role "crane", which the organisation lacks: unknown participant`},
		{"no such unit", p(resource.KindOrgUnit, "north"),
			`participant "north" (ORGANIZATIONAL_UNIT): its id names unit "north", which the organisation lacks: unknown participant`},
		{"a user id is not a unit", p(resource.KindOrgUnit, "alice"),
			`participant "alice" (ORGANIZATIONAL_UNIT): its id names unit "alice", which the organisation lacks: unknown participant`},
		{"no kind", p("", "alice"), `participant "alice": invalid kind "": unknown participant`},
		{"an invented kind", p("ROBOT", "alice"), `participant "alice": invalid kind "ROBOT": unknown participant`},
	}
	for format, d := range loadBoth(t) {
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				got, err := d.Resolve(context.Background(), tt.p)
				require.ErrorIs(t, err, resource.ErrUnknownParticipant)
				require.EqualError(t, err, tt.wantMsg)
				require.Nil(t, got)
			})
		}
	}
}

func TestOrgDirectoryMemberships(t *testing.T) {
	t.Parallel()
	tests := []struct {
		user string
		want resource.Memberships
	}{
		{"alice", resource.Memberships{Roles: []string{"clerk", "manager"}, Units: []string{"sales", "sales-east"}}},
		{"carol", resource.Memberships{Roles: []string{"clerk", "manager"}, Units: []string{"sales"}}},
		{"frank", resource.Memberships{Roles: []string{"printer"}, Units: []string{"east-field", "sales", "sales-east"}}},
		{"dave", resource.Memberships{Units: []string{"support"}}},
		{"erin", resource.Memberships{}},
	}
	for format, d := range loadBoth(t) {
		for _, tt := range tests {
			t.Run(format+"/"+tt.user, func(t *testing.T) {
				t.Parallel()
				got, err := d.Memberships(context.Background(), tt.user)
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
			})
		}
		t.Run(format+"/unknown user", func(t *testing.T) {
			t.Parallel()
			_, err := d.Memberships(context.Background(), "zed")
			require.ErrorIs(t, err, resource.ErrUnknownUser)
			require.EqualError(t, err, `memberships of "zed": unknown user`)
		})
	}
}

func TestOrgDirectoryIsMember(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		user string
		p    resource.Participant
		want bool
	}{
		{"the human himself", "alice", p(resource.KindHuman, "alice"), true},
		{"another human", "bob", p(resource.KindHuman, "alice"), false},
		{"mapped human", "carol", p(resource.KindHuman, "Boss"), true},
		{"not the mapped human", "alice", p(resource.KindHuman, "Boss"), false},
		{"holds the role", "bob", p(resource.KindRole, "clerk"), true},
		{"lacks the role", "dave", p(resource.KindRole, "clerk"), false},
		{"holds the mapped role", "alice", p(resource.KindRole, "Approver"), true},
		{"lacks the mapped role", "bob", p(resource.KindRole, "Approver"), false},
		{"mapping wins over the role of the same id", "dave", p(resource.KindRole, "auditor"), true},
		{"nobody holds a vacant role", "erin", p(resource.KindRole, "vacant"), false},
		{"resource", "frank", p(resource.KindResource, "printer"), true},
		{"resource set", "alice", p(resource.KindResourceSet, "printer"), false},
		{"direct unit", "bob", p(resource.KindOrgUnit, "sales-west"), true},
		{"parent unit", "alice", p(resource.KindOrgUnit, "sales"), true},
		{"grandparent unit", "frank", p(resource.KindOrgUnit, "sales"), true},
		{"sibling unit", "frank", p(resource.KindOrgUnit, "sales-west"), false},
		{"a sub-unit is not membership", "carol", p(resource.KindOrgUnit, "sales-east"), false},
		{"mapped unit", "frank", p(resource.KindOrgUnit, "SalesDept"), true},
		{"not in the mapped unit", "dave", p(resource.KindOrgUnit, "SalesDept"), false},
		{"nobody acts as the system", "alice", p(resource.KindSystem, "engine"), false},
	}
	for format, d := range loadBoth(t) {
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				got, err := d.IsMember(context.Background(), tt.user, tt.p)
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
			})
		}
	}
}

func TestOrgDirectoryIsMemberErrors(t *testing.T) {
	t.Parallel()
	d := loadBoth(t)["org.yaml"]
	ctx := context.Background()

	ok, err := d.IsMember(ctx, "zed", p(resource.KindRole, "clerk"))
	require.ErrorIs(t, err, resource.ErrUnknownUser)
	require.EqualError(t, err, `is "zed" a member of participant "clerk": unknown user`)
	require.False(t, ok)

	ok, err = d.IsMember(ctx, "zed", p(resource.KindSystem, "engine"))
	require.ErrorIs(t, err, resource.ErrUnknownUser)
	require.False(t, ok)

	ok, err = d.IsMember(ctx, "alice", p(resource.KindRole, "pilot"))
	require.ErrorIs(t, err, resource.ErrUnknownParticipant)
	require.False(t, ok)

	ok, err = d.IsMember(ctx, "alice", p("ROBOT", "clerk"))
	require.ErrorIs(t, err, resource.ErrUnknownParticipant)
	require.False(t, ok)
}

// TestOrgDirectoryIsMemberAgreesWithResolve checks, for every user and
// every participant the organisation can name, that a user is a member
// exactly when Resolve lists them.
func TestOrgDirectoryIsMemberAgreesWithResolve(t *testing.T) {
	t.Parallel()
	d := loadBoth(t)["org.yaml"]
	ctx := context.Background()
	users := []string{"alice", "bob", "carol", "dave", "erin", "frank"}
	ids := []string{
		"alice", "bob", "carol", "dave", "erin", "frank", "clerk", "manager", "auditor", "vacant", "printer",
		"sales", "sales-east", "sales-west", "east-field", "support", "Approver", "SalesDept", "Boss",
	}
	checked := 0
	for _, kind := range resource.ParticipantKinds {
		for _, id := range ids {
			members, err := d.Resolve(ctx, p(kind, id))
			if err != nil {
				require.ErrorIs(t, err, resource.ErrUnknownParticipant)
				continue
			}
			for _, u := range users {
				ok, err := d.IsMember(ctx, u, p(kind, id))
				require.NoError(t, err)
				require.Equal(t, slices.Contains(members, u), ok, "%s %s %s", u, kind, id)
				checked++
			}
		}
	}
	require.Greater(t, checked, 300)
}

func TestOrgDirectoryReturnsCopies(t *testing.T) {
	t.Parallel()
	d := loadBoth(t)["org.yaml"]
	ctx := context.Background()

	got, err := d.Resolve(ctx, p(resource.KindRole, "clerk"))
	require.NoError(t, err)
	got[0] = "mallory"
	m, err := d.Memberships(ctx, "alice")
	require.NoError(t, err)
	m.Roles[0], m.Units[0] = "mallory", "mallory"

	got, err = d.Resolve(ctx, p(resource.KindRole, "clerk"))
	require.NoError(t, err)
	require.Equal(t, []string{"alice", "bob", "carol"}, got)
	m, err = d.Memberships(ctx, "alice")
	require.NoError(t, err)
	require.Equal(t, resource.Memberships{Roles: []string{"clerk", "manager"}, Units: []string{"sales", "sales-east"}}, m)
}

func TestOrgDirectoryManager(t *testing.T) {
	t.Parallel()
	d := loadBoth(t)["org.yaml"]
	m, ok := d.Manager("sales-east")
	require.True(t, ok)
	require.Equal(t, "carol", m)
	for _, unit := range []string{"sales", "north"} {
		m, ok = d.Manager(unit)
		require.False(t, ok, unit)
		require.Empty(t, m, unit)
	}
}

// TestOrgDirectoryConcurrentUse runs under the race detector (make test):
// a loaded directory is read from many goroutines without locks.
func TestOrgDirectoryConcurrentUse(t *testing.T) {
	t.Parallel()
	d := loadBoth(t)["org.yaml"]
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = d.Resolve(ctx, p(resource.KindOrgUnit, "sales"))
				_, _ = d.Memberships(ctx, "frank")
				_, _ = d.IsMember(ctx, "alice", p(resource.KindRole, "Approver"))
			}
		})
	}
	wg.Wait()
	got, err := d.Resolve(ctx, p(resource.KindOrgUnit, "sales"))
	require.NoError(t, err)
	require.Equal(t, []string{"alice", "bob", "carol", "frank"}, got)
}

func TestLoadOrgFile(t *testing.T) {
	t.Parallel()
	yamlData, err := os.ReadFile(filepath.Join("testdata", "org.yaml"))
	require.NoError(t, err)
	jsonData, err := os.ReadFile(filepath.Join("testdata", "org.json"))
	require.NoError(t, err)
	want, err := resource.ParseOrg(yamlData, resource.FormatYAML)
	require.NoError(t, err)

	dir := t.TempDir()
	for name, data := range map[string][]byte{"org.yml": yamlData, "org.YAML": yamlData, "org.Json": jsonData} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o600))
		got, err := resource.LoadOrgFile(path)
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
	}

	t.Run("unknown extension", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(dir, "org.txt")
		require.NoError(t, os.WriteFile(path, yamlData, 0o600))
		_, err := resource.LoadOrgFile(path)
		require.EqualError(t, err, "load organisation file "+path+`: unknown extension ".txt", want .yaml, .yml or .json`)
		require.NotErrorIs(t, err, resource.ErrInvalidOrg)
	})
	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		_, err := resource.LoadOrgFile(filepath.Join(dir, "missing.yaml"))
		require.ErrorIs(t, err, fs.ErrNotExist)
	})
	t.Run("invalid file names the file", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(dir, "bad.json")
		require.NoError(t, os.WriteFile(path, []byte(`{"users": [{"id": "a", "roles": ["x"]}]}`), 0o600))
		_, err := resource.LoadOrgFile(path)
		require.ErrorIs(t, err, resource.ErrInvalidOrg)
		require.EqualError(t, err, "load organisation file "+path+
			`: invalid organisation file: users[0].roles[0]: user "a" has role "x", which is not declared under roles`)
	})
	t.Run("too large is refused before reading", func(t *testing.T) {
		t.Parallel()
		// A sparse file of zeros: were it read, it would be a YAML syntax
		// error, not this one.
		path := filepath.Join(dir, "huge.yaml")
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(resource.MaxOrgFileSize+1))
		require.NoError(t, f.Close())
		_, err = resource.LoadOrgFile(path)
		require.ErrorIs(t, err, resource.ErrInvalidOrg)
		require.EqualError(t, err, "load organisation file "+path+
			": invalid organisation file: the file is 4194305 bytes, more than the limit of 4194304 (4 MiB)")
	})
}

func TestMapNamesWhatAParticipantStandsFor(t *testing.T) {
	t.Parallel()
	d, err := resource.ParseOrg([]byte(`
users:
  - id: alice
    roles: [manager]
    units: [sales]
roles:
  - id: manager
units:
  - id: sales
participants:
  Approver: {role: manager}
  Dept: {unit: sales}
  Boss: {user: alice}
`), resource.FormatYAML)
	require.NoError(t, err)
	for _, tc := range []struct {
		in, want resource.Participant
	}{
		{resource.Participant{ID: "Approver", Kind: resource.KindRole}, resource.Participant{ID: "manager", Kind: resource.KindRole}},
		{resource.Participant{ID: "Dept", Kind: resource.KindOrgUnit}, resource.Participant{ID: "sales", Kind: resource.KindOrgUnit}},
		{resource.Participant{ID: "Boss", Kind: resource.KindRole}, resource.Participant{ID: "alice", Kind: resource.KindHuman}},
		{resource.Participant{ID: "manager", Kind: resource.KindRole}, resource.Participant{ID: "manager", Kind: resource.KindRole}},
		{resource.Participant{ID: "alice", Kind: resource.KindHuman}, resource.Participant{ID: "alice", Kind: resource.KindHuman}},
		{resource.Participant{ID: "robot", Kind: resource.KindSystem}, resource.Participant{ID: "robot", Kind: resource.KindSystem}},
	} {
		got, err := d.Map(t.Context(), tc.in)
		require.NoError(t, err, tc.in.ID)
		require.Equal(t, tc.want, got, tc.in.ID)
	}
	_, err = d.Map(t.Context(), resource.Participant{ID: "nobody", Kind: resource.KindRole})
	require.ErrorIs(t, err, resource.ErrUnknownParticipant)
}
