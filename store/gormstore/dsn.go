package gormstore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
)

// The schemes of a database name as goxpdl's command line (--db) and
// GOXPDL_MYSQL_DSN write it.
const (
	// SQLiteScheme prefixes a SQLite file path, or MemoryPath.
	SQLiteScheme = "sqlite:"
	// MySQLScheme prefixes a github.com/go-sql-driver/mysql DSN.
	MySQLScheme = "mysql://"
)

// DSNForms describes the database names OpenDSN accepts, for usage texts
// and errors.
const DSNForms = "sqlite:PATH | mysql://USER:PASS@tcp(HOST:PORT)/DB | postgres://USER:PASS@HOST:PORT/DB"

// ErrBadDSN is matched by the error of a database name OpenDSN or
// ParseMySQLDSN cannot read (a *DSNError).
var ErrBadDSN = errors.New("unusable database name")

// DSNError says why a database name cannot be read. It matches ErrBadDSN.
type DSNError struct {
	// DSN is the name, its password redacted (RedactDSN).
	DSN string
	// Msg says what is wrong.
	Msg string
	// Err is the driver's error, if any.
	Err error
}

func (e *DSNError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%q: %s: %v", e.DSN, e.Msg, e.Err)
	}
	return fmt.Sprintf("%q: %s", e.DSN, e.Msg)
}

// Unwrap returns the driver's error.
func (e *DSNError) Unwrap() error { return e.Err }

// Is matches ErrBadDSN.
func (e *DSNError) Is(target error) bool { return target == ErrBadDSN }

// redactedPassword stands for a password in RedactDSN's result, as in
// net/url's URL.Redacted.
const redactedPassword = "xxxxx"

// OpenDSN opens the database a goxpdl database name says:
//
//   - "sqlite:PATH": OpenSQLite(PATH); "sqlite::memory:" is a private
//     in-memory database;
//   - "mysql://USER:PASS@tcp(HOST:PORT)/DB?PARAMS": OpenMySQL with the
//     go-sql-driver/mysql DSN that follows the scheme;
//   - "postgres://USER:PASS@HOST:PORT/DB?PARAMS" (or postgresql://):
//     OpenPostgres with that URL.
//
// A name of another form is refused with ErrBadDSN. No error of OpenDSN
// holds the password: it names the database with RedactDSN.
func OpenDSN(dsn string) (*gorm.DB, error) {
	var db *gorm.DB
	var err error
	switch {
	case strings.HasPrefix(dsn, SQLiteScheme):
		path := strings.TrimPrefix(dsn, SQLiteScheme)
		if path == "" {
			return nil, &DSNError{DSN: dsn, Msg: "sqlite needs a file path"}
		}
		db, err = OpenSQLite(path)
	case strings.HasPrefix(dsn, MySQLScheme):
		db, err = OpenMySQL(dsn)
	case isPostgresDSN(dsn):
		db, err = OpenPostgres(dsn)
	default:
		return nil, &DSNError{DSN: RedactDSN(dsn), Msg: "want " + DSNForms}
	}
	if err != nil {
		var bad *DSNError
		if errors.As(err, &bad) {
			return nil, bad
		}
		return nil, fmt.Errorf("%s: %w", RedactDSN(dsn), err)
	}
	return db, nil
}

// ParseMySQLDSN reads a MySQL or MariaDB DSN in either form goxpdl
// accepts: the go-sql-driver/mysql DSN "USER:PASS@tcp(HOST:PORT)/DB?PARAMS",
// or the same after MySQLScheme, as --db writes it. GOXPDL_MYSQL_DSN is
// read with it. An error matches ErrBadDSN and never holds the password.
func ParseMySQLDSN(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, MySQLScheme))
	if err != nil {
		// The driver's messages name the part they could not read (an
		// address, a parameter's value), never the password.
		return nil, &DSNError{DSN: RedactDSN(dsn), Msg: "not a MySQL DSN", Err: err}
	}
	return cfg, nil
}

// RedactDSN returns dsn, a database name in any of the forms above (or a
// URL), with its password replaced by "xxxxx", for messages, logs and
// reports. SQLite names have no password and come back unchanged.
func RedactDSN(dsn string) string {
	switch {
	case strings.HasPrefix(dsn, SQLiteScheme):
		return dsn
	case strings.HasPrefix(dsn, MySQLScheme):
		return MySQLScheme + redactMySQL(strings.TrimPrefix(dsn, MySQLScheme))
	}
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return redactMySQL(dsn)
}

// redactMySQL redacts a go-sql-driver/mysql DSN. One the driver cannot
// read keeps only what precedes the first ':' before the last '@' (the
// user) and what follows that '@'.
func redactMySQL(dsn string) string {
	if cfg, err := mysql.ParseDSN(dsn); err == nil {
		if cfg.Passwd == "" {
			return dsn
		}
		cfg.Passwd = redactedPassword
		return cfg.FormatDSN()
	}
	at := strings.LastIndex(dsn, "@")
	if at < 0 {
		return dsn
	}
	user, _, hasPassword := strings.Cut(dsn[:at], ":")
	if !hasPassword {
		return dsn
	}
	return user + ":" + redactedPassword + "@" + dsn[at+1:]
}
