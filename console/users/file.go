package users

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// Role is what a user may do in the console: RoleViewer, RoleOperator or
// RoleAdmin (see Role.Allows).
type Role string

// The roles, from least to most allowed.
const (
	// RoleViewer reads every page and API resource and changes nothing.
	RoleViewer Role = "viewer"
	// RoleOperator also acts on instances, activities, work items and
	// incidents.
	RoleOperator Role = "operator"
	// RoleAdmin may do everything: also deploy, migrate, bulk (batch)
	// actions, purge, recover and release locks.
	RoleAdmin Role = "admin"
)

// Roles lists the roles, from least to most allowed.
var Roles = []Role{RoleViewer, RoleOperator, RoleAdmin}

// ParseRole returns the role named s, or an error matching ErrBadRole.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !slices.Contains(Roles, r) {
		return "", fmt.Errorf("%w %q: want viewer, operator or admin", ErrBadRole, s)
	}
	return r, nil
}

// MaxNameLen is the longest user name, in bytes.
const MaxNameLen = 64

// MaxFileSize is the largest users file Load reads.
const MaxFileSize = 1 << 20

// Errors of the users file and of checking a password.
var (
	// ErrInvalidFile matches every *FileError.
	ErrInvalidFile = errors.New("invalid users file")
	// ErrBadRole is a role name that is none of Roles.
	ErrBadRole = errors.New("unknown role")
	// ErrBadName is a user name the file cannot hold (empty, too long,
	// with a colon, white space or a control character).
	ErrBadName = errors.New("bad user name")
	// ErrBadPassword is a password that cannot be hashed: empty, or
	// longer than bcrypt's 72 bytes.
	ErrBadPassword = errors.New("bad password")
	// ErrUnknownUser is a user the file does not hold (Remove).
	ErrUnknownUser = errors.New("unknown user")
	// ErrBadCredentials is a failed login: an unknown user or a wrong
	// password, which are not told apart.
	ErrBadCredentials = errors.New("wrong user name or password")
)

// FileError is a problem of a users file, at a line (0 when it is about
// the file as a whole).
type FileError struct {
	Path string
	Line int
	Msg  string
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return e.Path + ": " + e.Msg
}

// Is makes every FileError match ErrInvalidFile.
func (e *FileError) Is(target error) bool { return target == ErrInvalidFile }

// User is one entry of a users file.
type User struct {
	Name string
	Role Role
	hash []byte
}

// File is the content of a users file: the users by name. It is not
// changed after Load or Parse, and is safe for concurrent use.
type File struct {
	path  string
	users map[string]User
	names []string // in file order

	dummyOnce sync.Once
	dummy     []byte
}

// Load reads the users file at path (the format is in the package
// documentation). Every problem is a *FileError (matching ErrInvalidFile)
// naming the line; an I/O error is returned wrapped.
func Load(path string) (*File, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	return Parse(bytes.NewReader(data), path)
}

// readLimited reads the file at path, refusing one larger than
// MaxFileSize.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load users file: %w", err)
	}
	// Closing a file opened for reading cannot lose data.
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("load users file %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, &FileError{Path: path, Msg: fmt.Sprintf("larger than %d bytes", MaxFileSize)}
	}
	return data, nil
}

// Parse reads a users file from r; name is the file's name in errors.
func Parse(r io.Reader, name string) (*File, error) {
	f := &File{path: name, users: map[string]User{}}
	sc := bufio.NewScanner(io.LimitReader(r, MaxFileSize+1))
	sc.Buffer(make([]byte, 0, 4096), MaxFileSize+1)
	for n := 1; sc.Scan(); n++ {
		u, ok, err := parseLine(sc.Text())
		if err != nil {
			return nil, &FileError{Path: name, Line: n, Msg: err.Error()}
		}
		if !ok {
			continue
		}
		if _, dup := f.users[u.Name]; dup {
			return nil, &FileError{Path: name, Line: n, Msg: fmt.Sprintf("user %q is listed twice", u.Name)}
		}
		f.users[u.Name] = u
		f.names = append(f.names, u.Name)
	}
	if err := sc.Err(); err != nil {
		return nil, &FileError{Path: name, Msg: err.Error()}
	}
	return f, nil
}

// parseLine reads one line: false for a blank line or a comment.
func parseLine(line string) (User, bool, error) {
	line = strings.TrimRight(line, "\r")
	if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
		return User{}, false, nil
	}
	parts := strings.Split(line, ":")
	if len(parts) != 3 {
		return User{}, false, errors.New("want NAME:ROLE:BCRYPT-HASH")
	}
	name, roleText, hash := parts[0], parts[1], []byte(parts[2])
	if err := CheckName(name); err != nil {
		return User{}, false, err
	}
	role, err := ParseRole(roleText)
	if err != nil {
		return User{}, false, fmt.Errorf("user %q: %w", name, err)
	}
	if _, err := bcrypt.Cost(hash); err != nil {
		return User{}, false, fmt.Errorf("user %q: not a bcrypt hash: %w", name, err)
	}
	return User{Name: name, Role: role, hash: hash}, true, nil
}

// CheckName returns an error matching ErrBadName unless name can be a
// user name: 1 to MaxNameLen bytes of UTF-8 without colons, white space
// or control characters.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrBadName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w %q: longer than %d bytes", ErrBadName, name, MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w %q: not UTF-8", ErrBadName, name)
	case strings.ContainsFunc(name, func(r rune) bool { return r == ':' || unicode.IsSpace(r) || unicode.IsControl(r) }):
		return fmt.Errorf("%w %q: no colons, spaces or control characters", ErrBadName, name)
	}
	return nil
}

// Path is the name the file was loaded from.
func (f *File) Path() string { return f.path }

// Users returns the users in file order.
func (f *File) Users() []User {
	out := make([]User, len(f.names))
	for i, n := range f.names {
		out[i] = f.users[n]
	}
	return out
}

// User returns the user called name.
func (f *File) User(name string) (User, bool) {
	u, ok := f.users[name]
	return u, ok
}

// Check returns the user called name when password is theirs, and an
// error matching ErrBadCredentials otherwise. A name the file does not
// hold costs the same bcrypt comparison as a wrong password (against a
// dummy hash of the file's highest cost), so the time taken does not
// tell which names exist.
func (f *File) Check(name, password string) (User, error) {
	u, ok := f.users[name]
	hash := u.hash
	if !ok {
		hash = f.dummyHash()
	}
	// bcrypt compares the hashes in constant time.
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	if !ok || err != nil {
		return User{}, ErrBadCredentials
	}
	return u, nil
}

// dummyHash is a hash of a random password at the highest cost among the
// file's hashes, made once. (An empty file has no cost to match: every
// name is unknown, so bcrypt's lowest cost serves.)
func (f *File) dummyHash() []byte {
	f.dummyOnce.Do(func() {
		cost := bcrypt.MinCost
		for _, u := range f.users {
			if c, err := bcrypt.Cost(u.hash); err == nil && c > cost {
				cost = c
			}
		}
		pw := make([]byte, 16)
		randomBytes(pw)
		h, err := bcrypt.GenerateFromPassword(pw, cost)
		if err != nil {
			// The cost came from a valid hash and the password is 16
			// bytes: bcrypt cannot refuse them.
			panic(fmt.Sprintf("users: dummy hash: %v", err))
		}
		f.dummy = h
	})
	return f.dummy
}

// Hash hashes password with bcrypt at cost (0: bcrypt.DefaultCost), for a
// users file entry. An empty password, or one longer than 72 bytes, is
// refused with an error matching ErrBadPassword.
func Hash(password []byte, cost int) ([]byte, error) {
	if len(password) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadPassword)
	}
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	h, err := bcrypt.GenerateFromPassword(password, cost)
	if errors.Is(err, bcrypt.ErrPasswordTooLong) {
		return nil, fmt.Errorf("%w: longer than 72 bytes", ErrBadPassword)
	}
	if err != nil {
		return nil, fmt.Errorf("hash password: %w", err)
	}
	return h, nil
}

// Put writes the user name with role and bcrypt hash (from Hash) into
// the users file at path: it replaces the user's line when the file has
// one, and appends a line otherwise, leaving every other line (comments
// included) as it was. A missing file is created with mode 0600. The
// file must parse before the change; it is replaced atomically (a
// temporary file renamed over it). replaced says whether the user was
// there before.
func Put(path, name string, role Role, hash []byte) (replaced bool, err error) {
	if err := CheckName(name); err != nil {
		return false, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return false, err
	}
	if _, err := bcrypt.Cost(hash); err != nil {
		return false, fmt.Errorf("user %q: not a bcrypt hash: %w", name, err)
	}
	lines, mode, err := readForEdit(path)
	if err != nil {
		return false, err
	}
	entry := name + ":" + string(role) + ":" + string(hash)
	i := findLine(lines, name)
	if i >= 0 {
		lines[i] = entry
	} else {
		lines = append(lines, entry)
	}
	return i >= 0, writeAtomic(path, lines, mode)
}

// Remove deletes the user name from the users file at path, leaving the
// other lines as they were; a user the file does not hold is an error
// matching ErrUnknownUser.
func Remove(path, name string) error {
	lines, mode, err := readForEdit(path)
	if err != nil {
		return err
	}
	i := findLine(lines, name)
	if i < 0 {
		return fmt.Errorf("%s: %w %q", path, ErrUnknownUser, name)
	}
	return writeAtomic(path, slices.Delete(lines, i, i+1), mode)
}

// readForEdit reads the lines of the users file at path, which must
// parse; a missing file has none and mode 0600.
func readForEdit(path string) ([]string, os.FileMode, error) {
	data, err := readLimited(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0o600, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if _, err := Parse(bytes.NewReader(data), path); err != nil {
		return nil, 0, err
	}
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return nil, mode, nil
	}
	return strings.Split(text, "\n"), mode, nil
}

// findLine returns the index of the line of user name, or -1.
func findLine(lines []string, name string) int {
	return slices.IndexFunc(lines, func(l string) bool {
		u, ok, err := parseLine(l)
		return err == nil && ok && u.Name == name
	})
}

// writeAtomic writes lines to a temporary file next to path and renames
// it over path.
func writeAtomic(path string, lines []string, mode os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write users file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()           // already failed; the first error is reported
			_ = os.Remove(tmp.Name()) // and the temporary file goes
		}
	}()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if _, err := tmp.WriteString(b.String()); err != nil {
		return fmt.Errorf("write users file: %w", err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write users file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write users file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write users file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write users file: %w", err)
	}
	return nil
}
