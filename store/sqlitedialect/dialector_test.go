package sqlitedialect_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/goxpdl/goxpdl/store/sqlitedialect"
)

// item is a model with an autoincrement id.
type item struct {
	ID   uint64 `gorm:"primaryKey;autoIncrement"`
	Name string `gorm:"uniqueIndex"`
	N    int
}

// openItems opens a new database file with the item table.
func openItems(t *testing.T, config *gorm.Config) *gorm.DB {
	t.Helper()
	db := openGorm(t, sqlitedialect.Open(tempPath(t)+pragmas), config)
	require.NoError(t, db.AutoMigrate(&item{}))
	return db
}

// TestDialectorName checks the dialector's name.
func TestDialectorName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "sqlite", sqlitedialect.Open("x.db").Name())
	db := openFile(t, tempPath(t))
	require.Equal(t, "sqlite", db.Name())
}

// TestCreateFillsID creates one row and a batch of three: gorm sets the
// autoincrement ids, consecutive and in order.
func TestCreateFillsID(t *testing.T) {
	t.Parallel()
	db := openItems(t, nil)

	one := item{Name: "one", N: 1}
	require.NoError(t, db.Create(&one).Error)
	require.Equal(t, uint64(1), one.ID)

	batch := []item{{Name: "a", N: 2}, {Name: "b", N: 3}, {Name: "c", N: 4}}
	res := db.Create(&batch)
	require.NoError(t, res.Error)
	require.Equal(t, int64(3), res.RowsAffected)
	require.Equal(t, []uint64{2, 3, 4}, []uint64{batch[0].ID, batch[1].ID, batch[2].ID})

	// Pointers, in batches of two.
	ptrs := []*item{{Name: "d"}, {Name: "e"}, {Name: "f"}}
	require.NoError(t, db.CreateInBatches(ptrs, 2).Error)
	require.Equal(t, []uint64{5, 6, 7}, []uint64{ptrs[0].ID, ptrs[1].ID, ptrs[2].ID})

	var got []item
	require.NoError(t, db.Order("id").Find(&got).Error)
	require.Len(t, got, 7)
	for i, it := range got {
		require.Equal(t, uint64(i+1), it.ID)
	}
	require.Equal(t, "b", got[2].Name)
	require.Equal(t, 3, got[2].N)
}

// TestCreateBatchMixedIDs creates a batch where one row has its id and
// the next has none: the row without gets NULL (DefaultValueOf), so
// SQLite picks the next id.
func TestCreateBatchMixedIDs(t *testing.T) {
	t.Parallel()
	db := openItems(t, nil)
	batch := []item{{ID: 10, Name: "ten"}, {Name: "next"}}
	require.NoError(t, db.Create(&batch).Error)
	require.Equal(t, uint64(10), batch[0].ID)
	require.Equal(t, uint64(11), batch[1].ID)

	var next item
	require.NoError(t, db.First(&next, "name = ?", "next").Error)
	require.Equal(t, uint64(11), next.ID)
}

// TestCreateMapsLastInsertID creates rows from maps on a table without a
// model, so gorm reads the last insert id instead of RETURNING: the
// multi-row INSERT's last insert id is its last row's.
func TestCreateMapsLastInsertID(t *testing.T) {
	t.Parallel()
	db := openItems(t, nil)
	require.NoError(t, db.Create(&item{Name: "first"}).Error)
	rows := []map[string]any{{"name": "x"}, {"name": "y"}, {"name": "z"}}
	require.NoError(t, db.Table("items").Create(&rows).Error)
	require.Equal(t, []any{int64(2), int64(3), int64(4)}, []any{rows[0]["@id"], rows[1]["@id"], rows[2]["@id"]})

	var z item
	require.NoError(t, db.First(&z, "name = ?", "z").Error)
	require.Equal(t, uint64(4), z.ID)
}

// TestLimitOffset reads with an offset alone, a limit alone and both.
func TestLimitOffset(t *testing.T) {
	t.Parallel()
	db := openItems(t, nil)
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		require.NoError(t, db.Create(&item{Name: name}).Error)
	}
	names := func(tx *gorm.DB) []string {
		var got []item
		require.NoError(t, tx.Order("id").Find(&got).Error)
		out := []string{}
		for _, it := range got {
			out = append(out, it.Name)
		}
		return out
	}
	require.Equal(t, []string{"c", "d", "e"}, names(db.Offset(2)))
	require.Equal(t, []string{"a", "b"}, names(db.Limit(2)))
	require.Equal(t, []string{"b", "c"}, names(db.Limit(2).Offset(1)))
	require.Equal(t, []string{}, names(db.Offset(5)))
	require.Equal(t, []string{}, names(db.Limit(0)))
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, names(db.Limit(-1)))
	require.Equal(t, []string{"e"}, names(db.Limit(-1).Offset(4)))

	sql := db.ToSQL(func(tx *gorm.DB) *gorm.DB { return tx.Offset(2).Find(&[]item{}) })
	require.Contains(t, sql, "LIMIT -1 OFFSET 2")

	// The row count is in the SQL, not bound (a bound LIMIT makes SQLite
	// compile a cached statement again on every run); the offset is bound.
	stmt := db.Session(&gorm.Session{DryRun: true}).Limit(7).Offset(3).Find(&[]item{}).Statement
	require.Contains(t, stmt.SQL.String(), "LIMIT 7 OFFSET ?")
	require.Equal(t, []any{3}, stmt.Vars)
}

// TestLockingClauseDropped reads with FOR UPDATE, which SQLite has no
// syntax for: the clause is left out and the query returns rows.
func TestLockingClauseDropped(t *testing.T) {
	t.Parallel()
	db := openItems(t, nil)
	require.NoError(t, db.Create(&[]item{{Name: "a"}, {Name: "b"}}).Error)

	sql := db.ToSQL(func(tx *gorm.DB) *gorm.DB {
		return tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Find(&[]item{})
	})
	require.NotContains(t, strings.ToUpper(sql), "FOR ")
	require.NotContains(t, strings.ToUpper(sql), "UPDATE")

	var got []item
	require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
		return tx.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).Order("id").Find(&got).Error
	}))
	require.Len(t, got, 2)
	require.Equal(t, "a", got[0].Name)

	var one item
	require.NoError(t, db.Clauses(clause.Locking{Strength: clause.LockingStrengthShare, Options: clause.LockingOptionsNoWait}).
		Where("name = ?", "b").First(&one).Error)
	require.Equal(t, uint64(2), one.ID)
}

// TestTranslateErrors maps constraint violations to gorm's errors when
// gorm.Config has TranslateError, and leaves them alone otherwise.
func TestTranslateErrors(t *testing.T) {
	t.Parallel()
	t.Run("unique", func(t *testing.T) {
		t.Parallel()
		db := openItems(t, &gorm.Config{TranslateError: true})
		require.NoError(t, db.Create(&item{Name: "a"}).Error)
		err := db.Create(&item{Name: "a"}).Error
		require.ErrorIs(t, err, gorm.ErrDuplicatedKey)
	})
	t.Run("primary key", func(t *testing.T) {
		t.Parallel()
		db := openItems(t, &gorm.Config{TranslateError: true})
		require.NoError(t, db.Create(&item{ID: 5, Name: "a"}).Error)
		err := db.Create(&item{ID: 5, Name: "b"}).Error
		require.ErrorIs(t, err, gorm.ErrDuplicatedKey)
	})
	t.Run("foreign key", func(t *testing.T) {
		t.Parallel()
		type parent struct {
			ID uint64
		}
		type child struct {
			ID       uint64
			ParentID uint64
			Parent   parent
		}
		db := openGorm(t, sqlitedialect.Open(tempPath(t)+pragmas+"&_pragma=foreign_keys(1)"),
			&gorm.Config{TranslateError: true})
		require.NoError(t, db.AutoMigrate(&parent{}, &child{}))
		err := db.Omit(clause.Associations).Create(&child{ParentID: 42}).Error
		require.ErrorIs(t, err, gorm.ErrForeignKeyViolated)
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		db := openItems(t, nil)
		require.NoError(t, db.Create(&item{Name: "a"}).Error)
		err := db.Create(&item{Name: "a"}).Error
		require.Error(t, err)
		require.NotErrorIs(t, err, gorm.ErrDuplicatedKey)
		require.Contains(t, err.Error(), "UNIQUE constraint failed")
	})
	t.Run("other errors", func(t *testing.T) {
		t.Parallel()
		d := &sqlitedialect.Dialector{}
		plain := errors.New("plain")
		require.Same(t, plain, d.Translate(plain))

		db := openItems(t, &gorm.Config{TranslateError: true})
		err := db.Exec("SELECT * FROM missing").Error
		require.Error(t, err)
		require.NotErrorIs(t, err, gorm.ErrDuplicatedKey)
		require.Contains(t, err.Error(), "no such table")
	})
}

// TestQuoteTo quotes names in backquotes, part by part, with backquotes
// inside doubled.
func TestQuoteTo(t *testing.T) {
	t.Parallel()
	d := &sqlitedialect.Dialector{}
	for name, want := range map[string]string{
		"a":     "`a`",
		"a.b":   "`a`.`b`",
		"a`b":   "`a``b`",
		"x.y`z": "`x`.`y``z`",
		"":      "``",
	} {
		var b strings.Builder
		d.QuoteTo(&b, name)
		require.Equal(t, want, b.String(), name)
	}

	// A column name with a backquote and a schema-qualified table name
	// work end to end.
	type odd struct {
		ID uint64
		V  string "gorm:\"column:we`ird\""
	}
	db := openFile(t, tempPath(t))
	require.NoError(t, db.AutoMigrate(&odd{}))
	require.True(t, db.Migrator().HasColumn(&odd{}, "we`ird"))
	require.NoError(t, db.Table("main.odds").Create(&odd{V: "x"}).Error)
	var got odd
	require.NoError(t, db.Table("main.odds").First(&got).Error)
	require.Equal(t, "x", got.V)
}

// TestExplainAndBindVar writes ? for each variable, and Explain puts the
// values in.
func TestExplainAndBindVar(t *testing.T) {
	t.Parallel()
	d := &sqlitedialect.Dialector{}
	// A string literal in single quotes or (as now) double quotes.
	require.Regexp(t, `^SELECT 1, ("a""b"|'a"b')$`, d.Explain("SELECT ?, ?", 1, `a"b`))

	db := openItems(t, nil)
	sql := db.ToSQL(func(tx *gorm.DB) *gorm.DB { return tx.Where("n = ? AND name = ?", 3, "x").Find(&[]item{}) })
	require.Regexp(t, "^SELECT \\* FROM `items` WHERE n = 3 AND name = (\"x\"|'x')$", sql)
}

// typed has a field of each of gorm's data types.
type typed struct {
	ID      uint64 `gorm:"primaryKey;autoIncrement"`
	Flag    bool
	Int     int
	Uint    uint32
	Float   float64
	Text    string
	When    time.Time
	Data    []byte
	Sized   string `gorm:"type:varchar(64)"`
	NotNull string `gorm:"not null"`
}

// TestDataTypeOf checks the type written for each of gorm's data types,
// both from DataTypeOf and as SQLite reports the created table.
func TestDataTypeOf(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"id":       "integer PRIMARY KEY AUTOINCREMENT",
		"flag":     "numeric",
		"int":      "integer",
		"uint":     "integer",
		"float":    "real",
		"text":     "text",
		"when":     "datetime",
		"data":     "blob",
		"sized":    "varchar(64)",
		"not_null": "text",
	}
	s, err := schema.Parse(&typed{}, &sync.Map{}, schema.NamingStrategy{})
	require.NoError(t, err)
	d := &sqlitedialect.Dialector{}
	for _, f := range s.Fields {
		require.Equal(t, want[f.DBName], d.DataTypeOf(f), f.DBName)
	}

	db := openFile(t, tempPath(t))
	require.NoError(t, db.AutoMigrate(&typed{}))
	cols, err := db.Migrator().ColumnTypes(&typed{})
	require.NoError(t, err)
	got := map[string]string{}
	for _, c := range cols {
		got[c.Name()] = c.DatabaseTypeName()
	}
	require.Equal(t, map[string]string{
		"id":       "integer",
		"flag":     "numeric",
		"int":      "integer",
		"uint":     "integer",
		"float":    "real",
		"text":     "text",
		"when":     "datetime",
		"data":     "blob",
		"sized":    "varchar",
		"not_null": "text",
	}, got)

	// Values of every type go in and come back.
	when := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	in := typed{Flag: true, Int: -5, Uint: 7, Float: 1.5, Text: "t", When: when, Data: []byte{0, 1, 2}, Sized: "s", NotNull: "n"}
	require.NoError(t, db.Create(&in).Error)
	var out typed
	require.NoError(t, db.First(&out, in.ID).Error)
	require.True(t, out.When.Equal(when), "%v != %v", out.When, when)
	out.When = when
	require.Equal(t, in, out)
}

// TestNestedTransactionRollsBackToSavepoint rolls back an inner
// transaction (a savepoint) and keeps the outer one's work.
func TestNestedTransactionRollsBackToSavepoint(t *testing.T) {
	t.Parallel()
	db := openItems(t, nil)
	errInner := errors.New("inner fails")
	require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&item{Name: "outer"}).Error; err != nil {
			return err
		}
		err := tx.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&item{Name: "inner"}).Error; err != nil {
				return err
			}
			return errInner
		})
		require.ErrorIs(t, err, errInner)
		require.NoError(t, tx.Transaction(func(tx *gorm.DB) error {
			return tx.Create(&item{Name: "kept"}).Error
		}))
		return tx.Create(&item{Name: "after"}).Error
	}))
	var names []string
	require.NoError(t, db.Model(&item{}).Order("id").Pluck("name", &names).Error)
	require.Equal(t, []string{"outer", "kept", "after"}, names)

	// SavePoint and RollbackTo called directly.
	tx := db.Begin()
	require.NoError(t, tx.Error)
	require.NoError(t, tx.Create(&item{Name: "x"}).Error)
	require.NoError(t, tx.SavePoint("sp1").Error)
	require.NoError(t, tx.Create(&item{Name: "y"}).Error)
	require.NoError(t, tx.RollbackTo("sp1").Error)
	require.NoError(t, tx.Commit().Error)
	names = nil
	require.NoError(t, db.Model(&item{}).Order("id").Pluck("name", &names).Error)
	require.Equal(t, []string{"outer", "kept", "after", "x"}, names)
}

// TestUpsertAndReturning runs an INSERT … ON CONFLICT and an UPDATE …
// RETURNING.
func TestUpsertAndReturning(t *testing.T) {
	t.Parallel()
	db := openItems(t, nil)
	require.NoError(t, db.Create(&item{Name: "a", N: 1}).Error)
	require.NoError(t, db.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "name"}},
		DoUpdates: clause.AssignmentColumns([]string{"n"}),
	}).Create(&item{Name: "a", N: 2}).Error)
	res := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&item{Name: "a", N: 3})
	require.NoError(t, res.Error)
	require.Equal(t, int64(0), res.RowsAffected)

	var all []item
	require.NoError(t, db.Find(&all).Error)
	require.Len(t, all, 1)
	require.Equal(t, 2, all[0].N)

	var updated []item
	require.NoError(t, db.Model(&updated).Clauses(clause.Returning{}).Where("name = ?", "a").Update("n", 9).Error)
	require.Len(t, updated, 1)
	require.Equal(t, 9, updated[0].N)
	require.Equal(t, "a", updated[0].Name)

	var deleted []item
	require.NoError(t, db.Clauses(clause.Returning{}).Where("name = ?", "a").Delete(&deleted).Error)
	require.Len(t, deleted, 1)
	require.Equal(t, uint64(1), deleted[0].ID)
}

// TestDialectorConn uses a pool given in Conn instead of opening DSN.
func TestDialectorConn(t *testing.T) {
	t.Parallel()
	pool := sqlitedialect.OpenDB(sqlitedialect.MemoryDSN, 0)
	pool.SetMaxOpenConns(1)
	db := openGorm(t, &sqlitedialect.Dialector{Conn: pool}, nil)
	got, err := db.DB()
	require.NoError(t, err)
	require.Same(t, pool, got)
	require.NoError(t, db.AutoMigrate(&item{}))
	require.NoError(t, db.Create(&item{Name: "m"}).Error)
	var n int64
	require.NoError(t, pool.QueryRow("SELECT count(*) FROM items").Scan(&n))
	require.Equal(t, int64(1), n)
}
