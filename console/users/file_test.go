package users_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/crypto/bcrypt"

	"github.com/goxpdl/goxpdl/console/users"
)

func TestMain(m *testing.M) {
	// ants (linked in through the console's engine, which one test
	// imports for its action names) starts a default pool when its
	// package is initialised.
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// hash is a bcrypt hash of password at the lowest cost, so tests run
// fast.
func hash(t testing.TB, password string) string {
	t.Helper()
	h, err := users.Hash([]byte(password), bcrypt.MinCost)
	require.NoError(t, err)
	return string(h)
}

// writeFile writes a users file into a temporary directory.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.txt")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func TestLoad(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "# the team\n\nalice:admin:"+hash(t, "a")+"\r\n  # indented comment\nbob:operator:"+hash(t, "b")+"\ncarol:viewer:"+hash(t, "c"))
	f, err := users.Load(path)
	require.NoError(t, err)
	require.Equal(t, path, f.Path())
	var got []string
	for _, u := range f.Users() {
		got = append(got, u.Name+"="+string(u.Role))
	}
	require.Equal(t, []string{"alice=admin", "bob=operator", "carol=viewer"}, got)
	u, ok := f.User("bob")
	require.True(t, ok)
	require.Equal(t, users.RoleOperator, u.Role)
	_, ok = f.User("dave")
	require.False(t, ok)
}

func TestLoadRefusesBadFiles(t *testing.T) {
	t.Parallel()
	h := hash(t, "pw")
	for _, tc := range []struct {
		name, text string
		line       int
		msg        string
	}{
		{"two fields", "alice:admin\n", 1, "want NAME:ROLE:BCRYPT-HASH"},
		{"four fields", "# c\nalice:admin:" + h + ":x\n", 2, "want NAME:ROLE:BCRYPT-HASH"},
		{"unknown role", "alice:root:" + h + "\n", 1, `user "alice": unknown role "root": want viewer, operator or admin`},
		{"not a hash", "alice:admin:secret\n", 1, `user "alice": not a bcrypt hash`},
		{"empty name", ":admin:" + h + "\n", 1, "bad user name: empty"},
		{"space in name", "al ice:admin:" + h + "\n", 1, `bad user name "al ice"`},
		{"duplicate", "alice:admin:" + h + "\nbob:viewer:" + h + "\nalice:viewer:" + h + "\n", 3, `user "alice" is listed twice`},
		{"long name", strings.Repeat("x", users.MaxNameLen+1) + ":admin:" + h + "\n", 1, "longer than 64 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeFile(t, tc.text)
			_, err := users.Load(path)
			require.ErrorIs(t, err, users.ErrInvalidFile)
			fe, ok := errors.AsType[*users.FileError](err)
			require.True(t, ok)
			require.Equal(t, tc.line, fe.Line)
			require.Equal(t, path, fe.Path)
			require.Contains(t, fe.Msg, tc.msg)
		})
	}
}

func TestLoadMissingAndHugeFiles(t *testing.T) {
	t.Parallel()
	_, err := users.Load(filepath.Join(t.TempDir(), "none.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)

	path := writeFile(t, strings.Repeat("#\n", users.MaxFileSize/2+1))
	_, err = users.Load(path)
	require.ErrorIs(t, err, users.ErrInvalidFile)
	require.ErrorContains(t, err, "larger than")
}

// A hash htpasswd -B wrote ($2y$) is accepted.
func TestLoadAcceptsHtpasswdHashes(t *testing.T) {
	t.Parallel()
	h := hash(t, "pw")
	f, err := users.Parse(strings.NewReader("alice:viewer:$2y$"+h[4:]+"\n"), "users")
	require.NoError(t, err)
	_, err = f.Check("alice", "pw")
	require.NoError(t, err)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	f, err := users.Parse(strings.NewReader("alice:admin:"+hash(t, "right horse")+"\n"), "users")
	require.NoError(t, err)
	u, err := f.Check("alice", "right horse")
	require.NoError(t, err)
	require.Equal(t, "alice", u.Name)
	require.Equal(t, users.RoleAdmin, u.Role)

	for _, tc := range [][2]string{{"alice", "wrong"}, {"alice", ""}, {"alice", "right horse "}, {"mallory", "right horse"}, {"", ""}} {
		_, err := f.Check(tc[0], tc[1])
		require.ErrorIs(t, err, users.ErrBadCredentials, "%q/%q", tc[0], tc[1])
	}
}

// An unknown name is checked against a dummy hash of the file's highest
// cost, so it costs as much as a wrong password.
func TestDummyHashHasTheFilesCost(t *testing.T) {
	t.Parallel()
	h5, err := users.Hash([]byte("x"), 5)
	require.NoError(t, err)
	f, err := users.Parse(strings.NewReader("a:viewer:"+hash(t, "y")+"\nb:viewer:"+string(h5)+"\n"), "users")
	require.NoError(t, err)
	require.Equal(t, 5, users.DummyCost(f))

	empty, err := users.Parse(strings.NewReader("# nobody\n"), "users")
	require.NoError(t, err)
	require.Equal(t, bcrypt.MinCost, users.DummyCost(empty), "every name is unknown: no cost to match")
	_, err = empty.Check("anyone", "x")
	require.ErrorIs(t, err, users.ErrBadCredentials)
}

func TestHash(t *testing.T) {
	t.Parallel()
	_, err := users.Hash(nil, bcrypt.MinCost)
	require.ErrorIs(t, err, users.ErrBadPassword)
	_, err = users.Hash([]byte(strings.Repeat("x", 73)), bcrypt.MinCost)
	require.ErrorIs(t, err, users.ErrBadPassword)
	h, err := users.Hash([]byte(strings.Repeat("x", 72)), bcrypt.MinCost)
	require.NoError(t, err)
	require.NoError(t, bcrypt.CompareHashAndPassword(h, []byte(strings.Repeat("x", 72))))
}

func TestParseRole(t *testing.T) {
	t.Parallel()
	for _, r := range users.Roles {
		got, err := users.ParseRole(string(r))
		require.NoError(t, err)
		require.Equal(t, r, got)
	}
	_, err := users.ParseRole("Admin")
	require.ErrorIs(t, err, users.ErrBadRole)
}

func TestPutAndRemove(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "users.txt")
	replaced, err := users.Put(path, "alice", users.RoleViewer, []byte(hash(t, "one")))
	require.NoError(t, err)
	require.False(t, replaced)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a new users file is private")

	// Comments and other users stay as they were.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append([]byte("# keep me\n"), data...), 0o600))
	require.NoError(t, os.Chmod(path, 0o640))
	_, err = users.Put(path, "bob", users.RoleOperator, []byte(hash(t, "two")))
	require.NoError(t, err)
	replaced, err = users.Put(path, "alice", users.RoleAdmin, []byte(hash(t, "three")))
	require.NoError(t, err)
	require.True(t, replaced)

	data, err = os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, "# keep me", lines[0])
	require.True(t, strings.HasPrefix(lines[1], "alice:admin:$2a$"), lines[1])
	require.True(t, strings.HasPrefix(lines[2], "bob:operator:$2a$"), lines[2])
	fi, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "the file keeps its mode")

	f, err := users.Load(path)
	require.NoError(t, err)
	_, err = f.Check("alice", "three")
	require.NoError(t, err)
	_, err = f.Check("alice", "one")
	require.ErrorIs(t, err, users.ErrBadCredentials)

	require.NoError(t, users.Remove(path, "alice"))
	require.ErrorIs(t, users.Remove(path, "alice"), users.ErrUnknownUser)
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Regexp(t, `^# keep me\nbob:operator:\S+\n$`, string(data))
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

func TestPutRefusesBadInput(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "users.txt")
	h := []byte(hash(t, "pw"))
	_, err := users.Put(path, "a:b", users.RoleViewer, h)
	require.ErrorIs(t, err, users.ErrBadName)
	_, err = users.Put(path, "a", "root", h)
	require.ErrorIs(t, err, users.ErrBadRole)
	_, err = users.Put(path, "a", users.RoleViewer, []byte("plain"))
	require.Error(t, err)
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing was written")

	// A broken file is not edited.
	require.NoError(t, os.WriteFile(path, []byte("garbage\n"), 0o600))
	_, err = users.Put(path, "a", users.RoleViewer, h)
	require.ErrorIs(t, err, users.ErrInvalidFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "garbage\n", string(data))
	require.ErrorIs(t, users.Remove(path, "a"), users.ErrInvalidFile)
}
