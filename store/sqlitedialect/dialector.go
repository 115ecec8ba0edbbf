// Package sqlitedialect is a GORM dialector for SQLite over
// modernc.org/sqlite, the pure-Go (no cgo) translation of SQLite's C
// source, whose connections keep their prepared statements.
//
// goxpdl's engine writes a handful of short statements per activity.
// Through database/sql, modernc.org/sqlite prepares and finalizes a
// statement on every ExecContext and QueryContext, and SQLite's parser
// then costs about as much as the statement itself. This dialector's
// connections keep the statements they prepared (see OpenDB), so GORM's
// and the engine's raw statements alike run without being parsed again.
//
// It speaks the same SQL and data types as the common SQLite dialectors
// (integer, real, text, blob, numeric, datetime; INSERT … RETURNING), so
// it opens databases they created, and GORM's AutoMigrate creates tables,
// adds columns and indexes. It does not change a column's type: SQLite
// would need the table copied, and AlterColumn says so.
//
// modernc.org/sqlite registers the database/sql driver name "sqlite";
// github.com/glebarez/go-sqlite registers the same name, so a program
// cannot link both.
package sqlitedialect

import (
	"errors"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/callbacks"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/migrator"
	"gorm.io/gorm/schema"
)

// MemoryDSN opens a private in-memory database. Each connection to it is
// a different database, so a pool over it must keep a single connection.
const MemoryDSN = ":memory:"

// Dialector is the GORM dialector. Open and New make one.
type Dialector struct {
	// DSN is modernc.org/sqlite's data source name: a file path or
	// MemoryDSN, with query parameters such as _pragma and _txlock.
	DSN string
	// StatementCacheSize is how many prepared statements each connection
	// keeps: DefaultStatementCacheSize when 0, none when negative.
	StatementCacheSize int
	// Conn, when set, is used instead of opening DSN.
	Conn gorm.ConnPool
}

// Open returns a dialector for the database dsn names.
func Open(dsn string) gorm.Dialector {
	return &Dialector{DSN: dsn}
}

// Name implements gorm.Dialector: "sqlite", as every SQLite dialector.
func (*Dialector) Name() string { return "sqlite" }

// Initialize implements gorm.Dialector.
func (d *Dialector) Initialize(db *gorm.DB) error {
	callbacks.RegisterDefaultCallbacks(db, &callbacks.Config{
		CreateClauses: []string{"INSERT", "VALUES", "ON CONFLICT", "RETURNING"},
		UpdateClauses: []string{"UPDATE", "SET", "FROM", "WHERE", "RETURNING"},
		DeleteClauses: []string{"DELETE", "FROM", "WHERE", "RETURNING"},
		// Without RETURNING (a model with no database default), the
		// last insert id of a multi-row INSERT is its last row's.
		LastInsertIDReversed: true,
	})
	if d.Conn != nil {
		db.ConnPool = d.Conn
	} else {
		db.ConnPool = OpenDB(d.DSN, d.StatementCacheSize)
	}
	for name, build := range d.ClauseBuilders() {
		db.ClauseBuilders[name] = build
	}
	return nil
}

// ClauseBuilders returns the builders of the clauses SQLite writes its
// own way: LIMIT with only an OFFSET, and row locks, which SQLite has no
// syntax for (a write transaction locks the whole database).
//
// The row count of a LIMIT is written into the SQL, not bound: SQLite
// reads a bound LIMIT while planning (its ORDER BY ... LIMIT
// optimisation) and then marks the statement to be compiled again
// whenever the binding changes, which a cached statement's every run
// does, so a cached "LIMIT ?" was parsed and planned anew each time.
func (*Dialector) ClauseBuilders() map[string]clause.ClauseBuilder {
	return map[string]clause.ClauseBuilder{
		"LIMIT": func(c clause.Clause, b clause.Builder) {
			limit, ok := c.Expression.(clause.Limit)
			if !ok {
				c.Build(b)
				return
			}
			if limit.Limit == nil || *limit.Limit < 0 {
				if limit.Offset > 0 {
					_, _ = b.WriteString("LIMIT -1 OFFSET ")
					b.AddVar(b, limit.Offset)
				}
				return
			}
			_, _ = b.WriteString("LIMIT " + strconv.Itoa(*limit.Limit))
			if limit.Offset > 0 {
				_, _ = b.WriteString(" OFFSET ")
				b.AddVar(b, limit.Offset)
			}
		},
		"FOR": func(c clause.Clause, b clause.Builder) {
			if _, ok := c.Expression.(clause.Locking); ok {
				return
			}
			c.Build(b)
		},
	}
}

// DefaultValueOf implements gorm.Dialector: a column with no value in a
// multi-row INSERT gets NULL (SQLite has no DEFAULT keyword there).
func (*Dialector) DefaultValueOf(*schema.Field) clause.Expression {
	return clause.Expr{SQL: "NULL"}
}

// Migrator implements gorm.Dialector.
func (d *Dialector) Migrator(db *gorm.DB) gorm.Migrator {
	return Migrator{migrator.Migrator{Config: migrator.Config{
		DB:                          db,
		Dialector:                   d,
		CreateIndexAfterCreateTable: true,
	}}}
}

// BindVarTo implements gorm.Dialector.
func (*Dialector) BindVarTo(w clause.Writer, _ *gorm.Statement, _ any) {
	_ = w.WriteByte('?')
}

// QuoteTo implements gorm.Dialector: each dot-separated part in
// backquotes, a backquote inside doubled.
func (*Dialector) QuoteTo(w clause.Writer, name string) {
	for i, part := range strings.Split(name, ".") {
		if i > 0 {
			_ = w.WriteByte('.')
		}
		_ = w.WriteByte('`')
		_, _ = w.WriteString(strings.ReplaceAll(part, "`", "``"))
		_ = w.WriteByte('`')
	}
}

// Explain implements gorm.Dialector.
func (*Dialector) Explain(sql string, vars ...any) string {
	// Strings as SQL string literals: GORM writes a column's DEFAULT
	// with Explain, and SQLite reads "x" as an identifier.
	return logger.ExplainSQL(sql, nil, `'`, vars...)
}

// DataTypeOf implements gorm.Dialector with SQLite's type affinities.
func (*Dialector) DataTypeOf(field *schema.Field) string {
	switch field.DataType {
	case schema.Bool:
		return "numeric"
	case schema.Int, schema.Uint:
		if field.AutoIncrement && field.PrimaryKey {
			// The rowid itself; AUTOINCREMENT never reuses a deleted id.
			return "integer PRIMARY KEY AUTOINCREMENT"
		}
		return "integer"
	case schema.Float:
		return "real"
	case schema.String:
		return "text"
	case schema.Time:
		return "datetime"
	case schema.Bytes:
		return "blob"
	}
	return string(field.DataType)
}

// SavePoint implements gorm.SavePointerDialectorInterface.
func (*Dialector) SavePoint(tx *gorm.DB, name string) error {
	return tx.Exec("SAVEPOINT " + name).Error
}

// RollbackTo implements gorm.SavePointerDialectorInterface.
func (*Dialector) RollbackTo(tx *gorm.DB, name string) error {
	return tx.Exec("ROLLBACK TO SAVEPOINT " + name).Error
}

// SQLite's extended result codes that Translate maps.
const (
	constraintForeignKey = 787  // SQLITE_CONSTRAINT_FOREIGNKEY
	constraintPrimaryKey = 1555 // SQLITE_CONSTRAINT_PRIMARYKEY
	constraintUnique     = 2067 // SQLITE_CONSTRAINT_UNIQUE
)

// Translate implements gorm.ErrorTranslator (used when gorm.Config has
// TranslateError): duplicate keys and foreign-key violations become
// gorm's errors.
func (*Dialector) Translate(err error) error {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return err
	}
	switch coded.Code() {
	case constraintUnique, constraintPrimaryKey:
		return gorm.ErrDuplicatedKey
	case constraintForeignKey:
		return gorm.ErrForeignKeyViolated
	}
	return err
}
