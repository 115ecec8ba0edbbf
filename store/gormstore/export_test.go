package gormstore

import (
	"reflect"
	"strings"

	"gorm.io/gorm"
)

// Settings says what New made of a pool: whether it has a SQLite write
// gate, runs MySQL sessions at READ COMMITTED and pipelines.
func Settings(s *Store) [3]bool {
	return [3]bool{s.gate != nil, s.readCommitted, s.pipelined}
}

// Translate is translate, for tests of the errors of a real server.
var Translate = translate

// PgText is (*Store).pgText on a Store of dialect.
func PgText(dialect, q string, numbered bool) string {
	return (&Store{dialect: dialect}).pgText(q, numbered)
}

// CreateAutoIncrementTables creates the tables whose rows carry a
// surrogate id as a version of the store before the engine made every id
// did: the id column AUTO_INCREMENT on MySQL, a bigserial on PostgreSQL,
// INTEGER PRIMARY KEY AUTOINCREMENT on SQLite. The other tables are left
// to Migrate. It returns their names.
func CreateAutoIncrementTables(db *gorm.DB) ([]string, error) {
	if db.Name() == "mysql" {
		db = db.Set("gorm:table_options", "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin")
	}
	var names []string
	for _, m := range allModels {
		t := reflect.TypeOf(m).Elem()
		id, ok := t.FieldByName("ID")
		if !ok || id.Type.Kind() != reflect.Int64 || !strings.Contains(string(id.Tag), "autoIncrement:false") {
			continue
		}
		fields := make([]reflect.StructField, t.NumField())
		for i := range fields {
			fields[i] = t.Field(i)
			if fields[i].Name == "ID" {
				fields[i].Tag = reflect.StructTag(strings.Replace(string(id.Tag), "autoIncrement:false", "autoIncrement", 1))
			}
		}
		name := m.(interface{ TableName() string }).TableName()
		if err := db.Table(name).Migrator().CreateTable(reflect.New(reflect.StructOf(fields)).Interface()); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// SQLRecorder is sqlRecorder (plan_internal_test.go), for the external
// tests.
type SQLRecorder = sqlRecorder

// Take returns the statements kept since the last Take.
func (r *sqlRecorder) Take() []string { return r.take() }
