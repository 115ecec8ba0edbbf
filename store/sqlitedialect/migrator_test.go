package sqlitedialect_test

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/sqlitedialect"
)

// task is a model with an index, a unique index, a composite index, a
// unique column and a check constraint.
type task struct {
	ID       uint64 `gorm:"primaryKey;autoIncrement"`
	Name     string `gorm:"not null;uniqueIndex"`
	State    string `gorm:"index:idx_task_state_due,priority:1"`
	Due      int64  `gorm:"index:idx_task_state_due,priority:2"`
	Owner    string `gorm:"index"`
	Code     string `gorm:"unique"`
	Priority int    `gorm:"check:priority_range,priority >= 0"`
	Note     *string
}

func (task) TableName() string { return "tasks" }

// taskV2 is task with one more column, as the model grows.
type taskV2 struct {
	ID       uint64 `gorm:"primaryKey;autoIncrement"`
	Name     string `gorm:"not null;uniqueIndex:idx_tasks_name"`
	State    string `gorm:"index:idx_task_state_due,priority:1"`
	Due      int64  `gorm:"index:idx_task_state_due,priority:2"`
	Owner    string `gorm:"index:idx_tasks_owner"`
	Code     string `gorm:"unique"`
	Priority int    `gorm:"check:priority_range,priority >= 0"`
	Note     *string
	Retries  int `gorm:"not null;default:3;index"`
}

func (taskV2) TableName() string { return "tasks" }

// schemaObject is a row of sqlite_master.
type schemaObject struct {
	Type    string
	Name    string
	TblName string
	SQL     *string
}

// schemaOf returns every object of the database's schema.
func schemaOf(t *testing.T, db *gorm.DB) []schemaObject {
	t.Helper()
	var objs []schemaObject
	require.NoError(t, db.Raw("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").Scan(&objs).Error)
	require.NotEmpty(t, objs)
	return objs
}

// indexNames returns the names of the indexes of the table of model.
func indexNames(t *testing.T, db *gorm.DB, model any) []string {
	t.Helper()
	indexes, err := db.Migrator().GetIndexes(model)
	require.NoError(t, err)
	names := make([]string, 0, len(indexes))
	for _, idx := range indexes {
		names = append(names, idx.Name())
	}
	sort.Strings(names)
	return names
}

// TestAutoMigrateCreates creates the table with its indexes and
// constraints.
func TestAutoMigrateCreates(t *testing.T) {
	t.Parallel()
	db := openFile(t, tempPath(t))
	require.NoError(t, db.AutoMigrate(&task{}))

	m := db.Migrator()
	require.True(t, m.HasTable(&task{}))
	require.True(t, m.HasTable("tasks"))
	require.False(t, m.HasTable("missing"))
	for _, idx := range []string{"idx_tasks_name", "idx_task_state_due", "idx_tasks_owner"} {
		require.True(t, m.HasIndex(&task{}, idx), idx)
	}
	// By field name too.
	require.True(t, m.HasIndex(&task{}, "Owner"))
	require.True(t, m.HasConstraint(&task{}, "priority_range"))
	require.True(t, m.HasConstraint(&task{}, "uni_tasks_code"))
	require.False(t, m.HasConstraint(&task{}, "nope"))

	// The constraints hold.
	require.NoError(t, db.Create(&task{Name: "a", Code: "a"}).Error)
	require.Error(t, db.Create(&task{Name: "b", Code: "b", Priority: -1}).Error)
	require.Error(t, db.Create(&task{Name: "a", Code: "c"}).Error)
	require.Error(t, db.Create(&task{Name: "d", Code: "a"}).Error)
}

// TestAutoMigrateTwiceChangesNothing runs AutoMigrate again on the same
// gorm.DB and on a new one over the same file: it succeeds and the schema
// stays as it was.
func TestAutoMigrateTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	db := openFile(t, path)
	require.NoError(t, db.AutoMigrate(&task{}))
	require.NoError(t, db.Create(&task{Name: "a", Code: "a"}).Error)
	before := schemaOf(t, db)

	require.NoError(t, db.AutoMigrate(&task{}))
	require.Equal(t, before, schemaOf(t, db))

	again := openFile(t, path)
	require.NoError(t, again.AutoMigrate(&task{}))
	require.Equal(t, before, schemaOf(t, again))
	require.NoError(t, again.AutoMigrate(&task{}))
	require.Equal(t, before, schemaOf(t, again))

	var n int64
	require.NoError(t, again.Model(&task{}).Count(&n).Error)
	require.Equal(t, int64(1), n)
}

// TestAutoMigrateAddsColumn migrates a model that grew a column: the
// column and its index are added, existing rows get the default.
func TestAutoMigrateAddsColumn(t *testing.T) {
	t.Parallel()
	path := tempPath(t)
	db := openFile(t, path)
	require.NoError(t, db.AutoMigrate(&task{}))
	require.NoError(t, db.Create(&task{Name: "old", Code: "old"}).Error)
	require.False(t, db.Migrator().HasColumn(&taskV2{}, "retries"))

	require.NoError(t, db.AutoMigrate(&taskV2{}))
	require.True(t, db.Migrator().HasColumn(&taskV2{}, "retries"))
	require.True(t, db.Migrator().HasColumn(&taskV2{}, "Retries"))
	require.True(t, db.Migrator().HasIndex(&taskV2{}, "idx_tasks_retries"))

	var old taskV2
	require.NoError(t, db.First(&old, "name = ?", "old").Error)
	require.Equal(t, 3, old.Retries)

	// Migrated again, over a new gorm.DB: nothing changes.
	after := schemaOf(t, db)
	again := openFile(t, path)
	require.NoError(t, again.AutoMigrate(&taskV2{}))
	require.Equal(t, after, schemaOf(t, again))
	// The old model still migrates: a column the model lacks is kept.
	require.NoError(t, again.AutoMigrate(&task{}))
	require.Equal(t, after, schemaOf(t, again))
}

// TestMigratorQueries checks HasTable, HasColumn, HasIndex, GetTables,
// GetIndexes and ColumnTypes.
func TestMigratorQueries(t *testing.T) {
	t.Parallel()
	db := openFile(t, tempPath(t))
	require.NoError(t, db.AutoMigrate(&task{}, &item{}))
	m := db.Migrator()

	tables, err := m.GetTables()
	require.NoError(t, err)
	require.Equal(t, []string{"items", "tasks"}, tables) // no sqlite_sequence

	require.True(t, m.HasColumn(&task{}, "name"))
	require.True(t, m.HasColumn(&task{}, "Name"))
	require.True(t, m.HasColumn(&task{}, "note"))
	require.False(t, m.HasColumn(&task{}, "missing"))
	require.False(t, m.HasColumn(&item{}, "state"))
	require.False(t, m.HasIndex(&item{}, "idx_task_state_due"))

	require.Equal(t, "main", m.CurrentDatabase())

	// The id is the rowid, so the only index SQLite makes itself is the
	// one of the unique column's constraint.
	require.Equal(t, []string{"idx_task_state_due", "idx_tasks_name", "idx_tasks_owner", "sqlite_autoindex_tasks_1"},
		indexNames(t, db, &task{}))
	indexes, err := m.GetIndexes(&task{})
	require.NoError(t, err)
	for _, idx := range indexes {
		require.Equal(t, "tasks", idx.Table())
		unique, ok := idx.Unique()
		require.True(t, ok)
		pk, ok := idx.PrimaryKey()
		require.True(t, ok)
		require.False(t, pk, idx.Name())
		switch idx.Name() {
		case "idx_task_state_due":
			require.Equal(t, []string{"state", "due"}, idx.Columns())
			require.False(t, unique)
		case "idx_tasks_name":
			require.Equal(t, []string{"name"}, idx.Columns())
			require.True(t, unique)
		case "idx_tasks_owner":
			require.Equal(t, []string{"owner"}, idx.Columns())
			require.False(t, unique)
		case "sqlite_autoindex_tasks_1":
			require.Equal(t, []string{"code"}, idx.Columns())
			require.True(t, unique)
		}
	}

	type column struct {
		Type     string
		PK       bool
		Nullable bool
		NullOK   bool
	}
	cols, err := m.ColumnTypes(&task{})
	require.NoError(t, err)
	got := map[string]column{}
	var order []string
	for _, c := range cols {
		pk, ok := c.PrimaryKey()
		require.True(t, ok)
		nullable, nullOK := c.Nullable()
		got[c.Name()] = column{c.DatabaseTypeName(), pk, nullable, nullOK}
		order = append(order, c.Name())
	}
	require.Equal(t, []string{"id", "name", "state", "due", "owner", "code", "priority", "note"}, order)
	require.Equal(t, map[string]column{
		"id":       {"integer", true, false, false},
		"name":     {"text", false, false, true},
		"state":    {"text", false, true, true},
		"due":      {"integer", false, true, true},
		"owner":    {"text", false, true, true},
		"code":     {"text", false, true, true},
		"priority": {"integer", false, true, true},
		"note":     {"text", false, true, true},
	}, got)

	// A table that does not exist has no columns or indexes.
	type ghost struct{ ID uint64 }
	cols, err = m.ColumnTypes(&ghost{})
	require.NoError(t, err)
	require.Empty(t, cols)
	indexes, err = m.GetIndexes(&ghost{})
	require.NoError(t, err)
	require.Empty(t, indexes)
}

// TestIndexPrefixLength creates an index whose tag has a prefix length,
// which SQLite has no syntax for: the index covers the whole column.
func TestIndexPrefixLength(t *testing.T) {
	t.Parallel()
	type prefixed struct {
		ID uint64
		V  string `gorm:"index:idx_v,length:10"`
		W  string `gorm:"index:idx_w,sort:desc,collate:nocase"`
	}
	db := openFile(t, tempPath(t))
	require.NoError(t, db.AutoMigrate(&prefixed{}))
	require.True(t, db.Migrator().HasIndex(&prefixed{}, "idx_v"))
	require.True(t, db.Migrator().HasIndex(&prefixed{}, "idx_w"))

	var ddl string
	require.NoError(t, db.Raw("SELECT sql FROM sqlite_master WHERE name = 'idx_v'").Scan(&ddl).Error)
	require.Equal(t, "CREATE INDEX `idx_v` ON `prefixeds`(`v`)", ddl)
	require.NoError(t, db.Raw("SELECT sql FROM sqlite_master WHERE name = 'idx_w'").Scan(&ddl).Error)
	require.Equal(t, "CREATE INDEX `idx_w` ON `prefixeds`(`w` COLLATE nocase desc)", ddl)

	before := schemaOf(t, db)
	require.NoError(t, db.AutoMigrate(&prefixed{}))
	require.Equal(t, before, schemaOf(t, db))
}

// withDefaults has a default for each kind of column.
type withDefaults struct {
	ID      uint64
	Status  string  `gorm:"default:'pending'"`
	Quote   string  `gorm:"default:it's"`
	Plain   string  `gorm:"default:plain"`
	Count   int     `gorm:"default:3"`
	Ratio   float64 `gorm:"default:1.5"`
	Enabled bool    `gorm:"default:true"`
	Off     bool    `gorm:"default:false"`
}

// migrateTwice migrates model into a new database twice and returns the
// second run's error; the schema must not change.
func migrateTwice(t *testing.T, model any) error {
	t.Helper()
	db := openFile(t, tempPath(t)).Table("defaults")
	require.NoError(t, db.AutoMigrate(model))
	before := schemaOf(t, db)
	err := db.AutoMigrate(model)
	require.Equal(t, before, schemaOf(t, db))
	return err
}

// TestAutoMigrateDefaults migrates models with column defaults twice:
// the second run finds the defaults as declared and alters nothing
// (AlterColumn would fail). String defaults: see
// TestAutoMigrateDefaultsKnownBug.
func TestAutoMigrateDefaults(t *testing.T) {
	t.Parallel()
	for _, model := range []struct {
		name  string
		value any
	}{
		{"int", &struct {
			ID    uint64
			Count int `gorm:"default:3"`
		}{}},
		{"bool", &struct {
			ID      uint64
			Enabled bool `gorm:"default:true"`
			Off     bool `gorm:"default:false"`
		}{}},
		{"float", &struct {
			ID    uint64
			Ratio float64 `gorm:"default:1.5"`
		}{}},
		{"negative int", &struct {
			ID    uint64
			Count int64 `gorm:"default:-1"`
		}{}},
		{"time keyword", &struct {
			ID      uint64
			Created time.Time `gorm:"default:CURRENT_TIMESTAMP"`
		}{}},
		{"not null with default", &struct {
			ID    uint64
			Count int `gorm:"not null;default:0"`
		}{}},
	} {
		t.Run(model.name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, migrateTwice(t, model.value))
		})
	}

	t.Run("values", func(t *testing.T) {
		t.Parallel()
		// The defaults apply to rows inserted without the columns.
		db := openFile(t, tempPath(t))
		require.NoError(t, db.AutoMigrate(&withDefaults{}))
		require.NoError(t, db.Exec("INSERT INTO with_defaults (id) VALUES (1)").Error)
		var got withDefaults
		require.NoError(t, db.First(&got, 1).Error)
		require.Equal(t, withDefaults{ID: 1, Status: "pending", Quote: "it's", Plain: "plain", Count: 3, Ratio: 1.5, Enabled: true}, got)
	})
}

// TestAutoMigrateKeepsDefaults migrates models with string, NULL and
// expression defaults twice: the second AutoMigrate must find the columns
// unchanged (gorm compares the default ColumnTypes reports with the tag,
// and would call AlterColumn, which SQLite cannot do).
func TestAutoMigrateKeepsDefaults(t *testing.T) {
	t.Parallel()
	for _, model := range []struct {
		name  string
		value any
	}{
		{"string quoted", &struct {
			ID     uint64
			Status string `gorm:"default:'pending'"`
		}{}},
		{"string with quote", &struct {
			ID    uint64
			Quote string `gorm:"default:it's"`
		}{}},
		{"string plain", &struct {
			ID    uint64
			Plain string `gorm:"default:plain"`
		}{}},
		{"string in a model of all kinds", &withDefaults{}},
		{"null", &struct {
			ID   uint64
			Note *string `gorm:"default:null"`
		}{}},
		{"expression", &struct {
			ID      uint64
			Created string `gorm:"type:text;default:(datetime('now'))"`
		}{}},
	} {
		t.Run(model.name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, migrateTwice(t, model.value))
		})
	}
}

// TestAlterColumnNotSupported changes a column's type: SQLite cannot.
func TestAlterColumnNotSupported(t *testing.T) {
	t.Parallel()
	db := openFile(t, tempPath(t))
	require.NoError(t, db.AutoMigrate(&item{}))
	err := db.Migrator().AlterColumn(&item{}, "name")
	require.ErrorIs(t, err, sqlitedialect.ErrNotSupported)

	// AutoMigrate of a model whose column changed type says so too.
	type itemIntName struct {
		ID   uint64 `gorm:"primaryKey;autoIncrement"`
		Name int    `gorm:"uniqueIndex"`
		N    int
	}
	err = db.Table("items").AutoMigrate(&itemIntName{})
	require.ErrorIs(t, err, sqlitedialect.ErrNotSupported)
}

// TestConstraintsNotSupported adds and drops a constraint of an existing
// table: SQLite cannot.
func TestConstraintsNotSupported(t *testing.T) {
	t.Parallel()
	db := openFile(t, tempPath(t))
	require.NoError(t, db.AutoMigrate(&task{}))
	require.ErrorIs(t, db.Migrator().CreateConstraint(&task{}, "priority_range"), sqlitedialect.ErrNotSupported)
	require.ErrorIs(t, db.Migrator().DropConstraint(&task{}, "priority_range"), sqlitedialect.ErrNotSupported)
	require.True(t, db.Migrator().HasConstraint(&task{}, "priority_range"))
}

// TestAutoMigrateForeignKey migrates related models twice: the foreign
// key constraint comes with CREATE TABLE and is found the second time.
func TestAutoMigrateForeignKey(t *testing.T) {
	t.Parallel()
	type customer struct {
		ID   uint64
		Name string
	}
	type order struct {
		ID         uint64
		CustomerID uint64
		Customer   customer
	}
	path := tempPath(t)
	db := openGorm(t, sqlitedialect.Open(path+pragmas+"&_pragma=foreign_keys(1)"), nil)
	require.NoError(t, db.AutoMigrate(&customer{}, &order{}))
	require.True(t, db.Migrator().HasConstraint(&order{}, "Customer"))
	require.True(t, db.Migrator().HasConstraint(&order{}, "fk_orders_customer"))
	before := schemaOf(t, db)
	require.NoError(t, db.AutoMigrate(&customer{}, &order{}))
	require.Equal(t, before, schemaOf(t, db))

	require.Error(t, db.Omit("Customer").Create(&order{CustomerID: 9}).Error)
	require.NoError(t, db.Create(&order{Customer: customer{Name: "c"}}).Error)
}

// TestDropAndRenameIndex drops one index and renames another.
func TestDropAndRenameIndex(t *testing.T) {
	t.Parallel()
	db := openFile(t, tempPath(t))
	require.NoError(t, db.AutoMigrate(&task{}))
	m := db.Migrator()

	require.True(t, m.HasIndex(&task{}, "idx_tasks_owner"))
	require.NoError(t, m.DropIndex(&task{}, "idx_tasks_owner"))
	require.False(t, m.HasIndex(&task{}, "idx_tasks_owner"))
	// By field name.
	require.True(t, m.HasIndex(&task{}, "Name"))
	require.NoError(t, m.DropIndex(&task{}, "Name"))
	require.False(t, m.HasIndex(&task{}, "idx_tasks_name"))
	require.Error(t, m.DropIndex(&task{}, "idx_missing"))

	require.NoError(t, m.RenameIndex(&task{}, "idx_task_state_due", "idx_state_due"))
	require.False(t, m.HasIndex(&task{}, "idx_task_state_due"))
	require.True(t, m.HasIndex(&task{}, "idx_state_due"))
	indexes, err := m.GetIndexes(&task{})
	require.NoError(t, err)
	var columns []string
	for _, idx := range indexes {
		if idx.Name() == "idx_state_due" {
			columns = idx.Columns()
		}
	}
	require.Equal(t, []string{"state", "due"}, columns)
	require.Error(t, m.RenameIndex(&task{}, "idx_missing", "idx_other"))

	// A unique index stays unique under its new name.
	require.NoError(t, m.CreateIndex(&task{}, "Name"))
	require.NoError(t, m.RenameIndex(&task{}, "idx_tasks_name", "idx_name_unique"))
	require.True(t, m.HasIndex(&task{}, "idx_name_unique"))
	require.NoError(t, db.Create(&task{Name: "a", Code: "a"}).Error)
	require.Error(t, db.Create(&task{Name: "a", Code: "b"}).Error)

	// AutoMigrate creates the dropped and renamed indexes again.
	require.NoError(t, db.AutoMigrate(&task{}))
	require.True(t, m.HasIndex(&task{}, "idx_tasks_owner"))
	require.True(t, m.HasIndex(&task{}, "idx_task_state_due"))
}

// TestTableAndColumnChanges drops, renames and adds tables and columns
// with gorm's generic migrator on SQLite.
func TestTableAndColumnChanges(t *testing.T) {
	t.Parallel()
	db := openFile(t, tempPath(t))
	m := db.Migrator()
	require.NoError(t, m.CreateTable(&item{}))
	require.True(t, m.HasTable(&item{}))

	require.NoError(t, m.RenameColumn(&item{}, "n", "count"))
	require.True(t, m.HasColumn(&item{}, "count"))
	require.False(t, m.HasColumn(&item{}, "n"))
	require.NoError(t, m.DropColumn(&item{}, "count"))
	require.False(t, m.HasColumn(&item{}, "count"))
	require.NoError(t, m.AddColumn(&item{}, "N"))
	require.True(t, m.HasColumn(&item{}, "n"))

	require.NoError(t, m.RenameTable("items", "things"))
	require.False(t, m.HasTable(&item{}))
	require.True(t, m.HasTable("things"))
	require.NoError(t, m.DropTable("things"))
	require.False(t, m.HasTable("things"))
	tables, err := m.GetTables()
	require.NoError(t, err)
	require.Empty(t, tables)
}

// TestGetIndexesPrimaryKey lists the index SQLite makes for a primary key
// that is not the rowid.
func TestGetIndexesPrimaryKey(t *testing.T) {
	t.Parallel()
	type code struct {
		Code  string `gorm:"primaryKey"`
		Label string
	}
	db := openFile(t, tempPath(t))
	require.NoError(t, db.AutoMigrate(&code{}))
	indexes, err := db.Migrator().GetIndexes(&code{})
	require.NoError(t, err)
	require.Len(t, indexes, 1)
	pk, ok := indexes[0].PrimaryKey()
	require.True(t, ok)
	require.True(t, pk)
	unique, ok := indexes[0].Unique()
	require.True(t, ok)
	require.True(t, unique)
	require.Equal(t, []string{"code"}, indexes[0].Columns())

	cols, err := db.Migrator().ColumnTypes(&code{})
	require.NoError(t, err)
	require.Len(t, cols, 2)
	pk, ok = cols[0].PrimaryKey()
	require.True(t, ok)
	require.True(t, pk)
	require.Equal(t, "code", cols[0].Name())
	require.NoError(t, db.AutoMigrate(&code{}))
}
