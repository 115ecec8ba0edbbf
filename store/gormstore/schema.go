package gormstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/goxpdl/goxpdl/store"
)

// Migrate's AutoMigrate asks the database about every table, column and
// index it knows (on MariaDB over a hundred queries of information_schema,
// 60-90 ms), and an engine migrates every time it opens a database: a
// restarted node waited for that before it did any work. So Migrate
// records a fingerprint of the schema it made, and a later Migrate that
// finds the same fingerprint has nothing to do.
//
// The fingerprint is a hash of what decides the schema: every model's
// table name and fields with their Go types and gorm tags (which name
// the columns, sizes, defaults and indexes), the indexes Migrate drops,
// PostgreSQL's expression index, and schemaRevision for anything else.
// A version of goxpdl whose schema differs (newer or older) sees another
// fingerprint and migrates. A schema changed by hand behind goxpdl's back
// is not seen: delete the row of goxpdl_schema to make the next Migrate
// look at everything again.

// schemaRevision is part of the fingerprint: bump it when Migrate comes
// to do something the models do not show (a backfill, a raw statement).
const schemaRevision = 1

// tableSchema is the table of the fingerprint.
const tableSchema = "goxpdl_schema"

// schemaModel is the one row of goxpdl_schema: the fingerprint of the
// schema the last successful Migrate made.
type schemaModel struct {
	ID          int    `gorm:"column:id;primaryKey;autoIncrement:false"`
	Fingerprint string `gorm:"column:fingerprint;size:64;not null"`
}

func (schemaModel) TableName() string { return tableSchema }

// modelsFor returns the models Migrate creates on dialect.
func modelsFor(dialect string) []any {
	models := slices.Clone(allModels)
	if dialect == store.DialectPostgres {
		models[slices.IndexFunc(models, func(m any) bool { _, ok := m.(*variableModel); return ok })] = &pgVariableModel{}
	}
	return append(models, &schemaModel{})
}

// schemaFingerprint is the fingerprint of the schema Migrate makes on
// dialect.
func schemaFingerprint(dialect string) string {
	text := fmt.Appendf(nil, "revision %d %s\n", schemaRevision, dialect)
	for _, m := range modelsFor(dialect) {
		name := ""
		if t, ok := m.(interface{ TableName() string }); ok {
			name = t.TableName()
		}
		text = fmt.Appendf(text, "table %s\n", name)
		text = appendFields(text, reflect.TypeOf(m).Elem())
	}
	for _, x := range droppedIndexes {
		text = fmt.Appendf(text, "dropped %s\n", x.name)
	}
	text = fmt.Appendf(text, "postgres %s\n", pgVariablesIndex)
	sum := sha256.Sum256(text)
	return hex.EncodeToString(sum[:])
}

// appendFields appends a line for every field of struct type t to text,
// those of an embedded struct in its place.
func appendFields(text []byte, t reflect.Type) []byte {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			text = appendFields(text, f.Type)
			continue
		}
		text = fmt.Appendf(text, "field %s %s %q\n", f.Name, f.Type, f.Tag)
	}
	return text
}

// schemaCurrent reports whether the database holds the fingerprint of
// the schema Migrate makes on dialect. Any failure to read it (no such
// table yet, the database's trouble) reads as "no": Migrate then does
// all its work, as it did before fingerprints.
func schemaCurrent(db *gorm.DB, dialect string) bool {
	var fp []string
	// A session of its own: Migrate's db on MySQL is one statement
	// (db.Set), and a failed read would leave its error there.
	err := db.Session(&gorm.Session{NewDB: true}).Model(&schemaModel{}).Where("id = ?", 1).Limit(1).Pluck("fingerprint", &fp).Error
	return err == nil && len(fp) == 1 && fp[0] == schemaFingerprint(dialect)
}

// recordSchema stores the fingerprint of the schema Migrate made.
// Nodes migrating at once all write the same row: the last write wins,
// with the same value when they run the same version.
func recordSchema(db *gorm.DB, dialect string) error {
	row := schemaModel{ID: 1, Fingerprint: schemaFingerprint(dialect)}
	return db.Session(&gorm.Session{NewDB: true}).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"fingerprint"}),
	}).Create(&row).Error
}
