package sqlitedialect

import (
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/migrator"
	"gorm.io/gorm/schema"
)

// ErrNotSupported is returned by the schema changes SQLite cannot make in
// place: changing a column's type and adding or dropping a constraint of
// an existing table (SQLite would need the table copied).
var ErrNotSupported = errors.New("sqlitedialect: not supported by SQLite without copying the table")

// Migrator is GORM's generic migrator with SQLite's catalogue
// (sqlite_master and the table-valued pragma functions) in place of
// information_schema.
type Migrator struct {
	migrator.Migrator
}

// CurrentDatabase returns "main", SQLite's name for the opened database.
func (Migrator) CurrentDatabase() string { return "main" }

// HasTable reports whether the table of value exists.
func (m Migrator) HasTable(value any) bool {
	var count int64
	_ = m.RunWithValue(value, func(stmt *gorm.Statement) error {
		return m.DB.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", stmt.Table).Row().Scan(&count)
	})
	return count > 0
}

// GetTables returns the names of the database's tables, SQLite's own
// excepted.
func (m Migrator) GetTables() ([]string, error) {
	var names []string
	err := m.DB.Raw("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").Scan(&names).Error
	return names, err
}

// HasColumn reports whether the table of value has the column of the
// field or column name.
func (m Migrator) HasColumn(value any, name string) bool {
	var count int64
	_ = m.RunWithValue(value, func(stmt *gorm.Statement) error {
		if stmt.Schema != nil {
			if field := stmt.Schema.LookUpField(name); field != nil {
				name = field.DBName
			}
		}
		return m.DB.Raw("SELECT count(*) FROM pragma_table_info(?) WHERE name = ?", stmt.Table, name).Row().Scan(&count)
	})
	return count > 0
}

// ColumnTypes returns the table's columns as SQLite declared them: name,
// declared type, primary key, and whether NULL is allowed (a primary key
// column reports what was declared, not SQLite's rowid rules).
func (m Migrator) ColumnTypes(value any) ([]gorm.ColumnType, error) {
	var columns []gorm.ColumnType
	err := m.RunWithValue(value, func(stmt *gorm.Statement) error {
		rows, err := m.DB.Raw(`SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid`, stmt.Table).Rows()
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var (
				name, declared string
				notNull, pk    int
				dflt           sql.NullString
			)
			if err := rows.Scan(&name, &declared, &notNull, &dflt, &pk); err != nil {
				return err
			}
			declared = strings.ToLower(declared)
			columns = append(columns, migrator.ColumnType{
				NameValue:         sql.NullString{String: name, Valid: true},
				DataTypeValue:     sql.NullString{String: baseType(declared), Valid: true},
				ColumnTypeValue:   sql.NullString{String: declared, Valid: true},
				PrimaryKeyValue:   sql.NullBool{Bool: pk > 0, Valid: true},
				NullableValue:     sql.NullBool{Bool: notNull == 0 && pk == 0, Valid: pk == 0},
				DefaultValueValue: columnDefault(dflt),
			})
		}
		return rows.Err()
	})
	return columns, err
}

// columnDefault turns the default pragma_table_info reports into the
// form GORM's tags write, so that AutoMigrate finds an unchanged column
// unchanged: a string literal ('it”s') becomes its value (it's), NULL no
// default, and an expression, which SQLite reports without the
// parentheses it was declared in, gets them back. Numbers and keywords
// (CURRENT_TIMESTAMP, TRUE) stay as they are.
func columnDefault(dflt sql.NullString) sql.NullString {
	if !dflt.Valid {
		return dflt
	}
	v := strings.TrimSpace(dflt.String)
	switch {
	case strings.EqualFold(v, "null"):
		return sql.NullString{}
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		return sql.NullString{String: strings.ReplaceAll(v[1:len(v)-1], "''", "'"), Valid: true}
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		return sql.NullString{String: strings.ReplaceAll(v[1:len(v)-1], `""`, `"`), Valid: true}
	case isLiteral(v):
		return sql.NullString{String: v, Valid: true}
	}
	return sql.NullString{String: "(" + v + ")", Valid: true}
}

// isLiteral reports whether a default is a number or a bare word such as
// CURRENT_TIMESTAMP or TRUE, rather than an expression.
func isLiteral(v string) bool {
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return true
	}
	for _, r := range v {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return v != ""
}

// baseType is a declared type without its size: "varchar(64)" → "varchar".
func baseType(declared string) string {
	if i := strings.IndexByte(declared, '('); i >= 0 {
		return strings.TrimSpace(declared[:i])
	}
	return declared
}

// AlterColumn returns ErrNotSupported: SQLite changes a column's type
// only by copying the table.
func (Migrator) AlterColumn(_ any, name string) error {
	return fmt.Errorf("alter column %q: %w", name, ErrNotSupported)
}

// HasConstraint reports whether the table of value was created with the
// named constraint.
func (m Migrator) HasConstraint(value any, name string) bool {
	var count int64
	_ = m.RunWithValue(value, func(stmt *gorm.Statement) error {
		constraint, _ := m.GuessConstraintInterfaceAndTable(stmt, name)
		if constraint != nil {
			name = constraint.GetName()
		}
		return m.DB.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ? AND (sql LIKE ? OR sql LIKE ?)",
			stmt.Table, "%CONSTRAINT `"+name+"`%", "%CONSTRAINT \""+name+"\"%").Row().Scan(&count)
	})
	return count > 0
}

// CreateConstraint returns ErrNotSupported: constraints come with
// CREATE TABLE on SQLite.
func (Migrator) CreateConstraint(_ any, name string) error {
	return fmt.Errorf("create constraint %q: %w", name, ErrNotSupported)
}

// DropConstraint returns ErrNotSupported.
func (Migrator) DropConstraint(_ any, name string) error {
	return fmt.Errorf("drop constraint %q: %w", name, ErrNotSupported)
}

// BuildIndexOptions writes an index's columns as GORM's generic migrator
// does, without a prefix length: SQLite indexes whole values, and reads
// "value(255)" as a call of a function named value.
func (Migrator) BuildIndexOptions(opts []schema.IndexOption, stmt *gorm.Statement) []any {
	results := make([]any, 0, len(opts))
	for _, opt := range opts {
		str := stmt.Quote(opt.DBName)
		if opt.Expression != "" {
			str = opt.Expression
		}
		if opt.Collate != "" {
			str += " COLLATE " + opt.Collate
		}
		if opt.Sort != "" {
			str += " " + opt.Sort
		}
		results = append(results, clause.Expr{SQL: str})
	}
	return results
}

// HasIndex reports whether the index of the field or name exists on the
// table of value.
func (m Migrator) HasIndex(value any, name string) bool {
	var count int64
	_ = m.RunWithValue(value, func(stmt *gorm.Statement) error {
		if stmt.Schema != nil {
			if idx := stmt.Schema.LookIndex(name); idx != nil {
				name = idx.Name
			}
		}
		return m.DB.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name = ?", stmt.Table, name).Row().Scan(&count)
	})
	return count > 0
}

// DropIndex drops the index of the field or name.
func (m Migrator) DropIndex(value any, name string) error {
	return m.RunWithValue(value, func(stmt *gorm.Statement) error {
		if stmt.Schema != nil {
			if idx := stmt.Schema.LookIndex(name); idx != nil {
				name = idx.Name
			}
		}
		return m.DB.Exec("DROP INDEX ?", clause.Column{Name: name}).Error
	})
}

// RenameIndex renames an index: SQLite has no ALTER INDEX, so the index
// is created again under the new name from its own definition.
func (m Migrator) RenameIndex(value any, oldName, newName string) error {
	return m.RunWithValue(value, func(stmt *gorm.Statement) error {
		var ddl string
		if err := m.DB.Raw("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name = ?", stmt.Table, oldName).Row().Scan(&ddl); err != nil {
			return fmt.Errorf("rename index %q: %w", oldName, err)
		}
		quotedOld := "`" + strings.ReplaceAll(oldName, "`", "``") + "`"
		quotedNew := "`" + strings.ReplaceAll(newName, "`", "``") + "`"
		renamed := strings.Replace(ddl, quotedOld, quotedNew, 1)
		if renamed == ddl {
			renamed = strings.Replace(ddl, `"`+oldName+`"`, quotedNew, 1)
		}
		if renamed == ddl {
			return fmt.Errorf("rename index %q: cannot find its name in %q", oldName, ddl)
		}
		return m.DB.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("DROP INDEX ?", clause.Column{Name: oldName}).Error; err != nil {
				return err
			}
			return tx.Exec(renamed).Error
		})
	})
}

// GetIndexes returns the indexes of the table of value, the automatic
// ones SQLite makes for UNIQUE and PRIMARY KEY constraints included.
func (m Migrator) GetIndexes(value any) ([]gorm.Index, error) {
	var indexes []gorm.Index
	err := m.RunWithValue(value, func(stmt *gorm.Statement) error {
		type listed struct {
			Name   string
			Unique bool
			Origin string
		}
		var list []listed
		if err := m.DB.Raw(`SELECT name, "unique", origin FROM pragma_index_list(?) ORDER BY seq`, stmt.Table).Scan(&list).Error; err != nil {
			return err
		}
		for _, l := range list {
			var columns []string
			if err := m.DB.Raw("SELECT name FROM pragma_index_info(?) ORDER BY seqno", l.Name).Scan(&columns).Error; err != nil {
				return err
			}
			indexes = append(indexes, &migrator.Index{
				TableName:       stmt.Table,
				NameValue:       l.Name,
				ColumnList:      columns,
				PrimaryKeyValue: sql.NullBool{Bool: l.Origin == "pk", Valid: true},
				UniqueValue:     sql.NullBool{Bool: l.Unique, Valid: true},
			})
		}
		return nil
	})
	return indexes, err
}
