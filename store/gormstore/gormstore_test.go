package gormstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
	"github.com/goxpdl/goxpdl/store/storetest"
)

// TestConformance runs the store contract on every dialect: SQLite in a
// file (WAL, several connections), SQLite in memory (one connection) and
// MySQL/MariaDB when GOXPDL_MYSQL_DSN is set.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			switch d.name {
			case "MySQL":
				mysqlDSN(t) // skip here, visibly, rather than in every test
			case "Postgres":
				dbtest.PostgresDSN(t)
			}
			storetest.Run(t, func(t *testing.T) store.Store {
				return newStore(t, d.open(t))
			})
		})
	}
}

// hostOrder is a business table of the host, written in the same
// transaction as the engine's rows.
type hostOrder struct {
	ID    int64 `gorm:"primaryKey"`
	Title string
}

// TestHostTransaction checks the gormstore side of the transactions a
// host shares with the engine (docs/architecture.md, "Transactions shared
// with the host"): a Store built over the host's transaction writes in
// it, and InTx on it nests with a savepoint.
func TestHostTransaction(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	instance := func(id int64) store.ProcessInstance {
		return store.ProcessInstance{ID: id, ProcessDefID: "main", State: "Initiated", CreatedAt: t0, UpdatedAt: t0}
	}

	setup := func(t *testing.T, d dialect) (context.Context, *gorm.DB, *gormstore.Store) {
		t.Helper()
		db := d.open(t)
		s := newStore(t, db)
		require.NoError(t, db.AutoMigrate(&hostOrder{}))
		return t.Context(), db, s
	}
	countOrders := func(t *testing.T, db *gorm.DB) int64 {
		t.Helper()
		var n int64
		require.NoError(t, db.Model(&hostOrder{}).Count(&n).Error)
		return n
	}
	countInstances := func(t *testing.T, ctx context.Context, s *gormstore.Store) int64 {
		t.Helper()
		list, err := s.ListProcessInstances(ctx, store.ListProcessInstancesParams{})
		require.NoError(t, err)
		return int64(len(list))
	}

	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()

			t.Run("CommitTogether", func(t *testing.T) {
				t.Parallel()
				ctx, db, s := setup(t, d)
				err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
					require.NoError(t, tx.Create(&hostOrder{Title: "order 1"}).Error)
					ts, err := gormstore.New(tx)
					require.NoError(t, err)
					_, err = ts.InsertProcessInstance(ctx, instance(1))
					return err
				})
				require.NoError(t, err)
				require.Equal(t, int64(1), countOrders(t, db))
				require.Equal(t, int64(1), countInstances(t, ctx, s))
			})

			t.Run("RollbackTogether", func(t *testing.T) {
				t.Parallel()
				ctx, db, s := setup(t, d)
				errHost := errors.New("host says no")
				err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
					require.NoError(t, tx.Create(&hostOrder{Title: "order 1"}).Error)
					ts, err := gormstore.New(tx)
					require.NoError(t, err)
					// The engine's own InTx inside the host's transaction
					// succeeds, yet the host's rollback undoes it.
					require.NoError(t, ts.InTx(ctx, func(ctx context.Context, etx store.Tx) error {
						_, err := etx.InsertProcessInstance(ctx, instance(1))
						return err
					}))
					_, err = ts.InsertEvents(ctx, []store.Event{{ID: 1, EventID: "e1", Kind: "k", CreatedAt: t0, AvailableAt: t0}})
					require.NoError(t, err)
					return errHost
				})
				require.ErrorIs(t, err, errHost)
				require.Zero(t, countOrders(t, db))
				require.Zero(t, countInstances(t, ctx, s))
				evs, err := s.ClaimEvents(ctx, store.ClaimEventsParams{Owner: "o", Now: t0, LeaseUntil: t0.Add(time.Minute), Limit: 10})
				require.NoError(t, err)
				require.Empty(t, evs)
			})

			t.Run("InTxNestsWithSavepoint", func(t *testing.T) {
				t.Parallel()
				ctx, db, s := setup(t, d)
				errEngine := errors.New("engine step failed")
				err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
					require.NoError(t, tx.Create(&hostOrder{Title: "order 1"}).Error)
					ts, err := gormstore.New(tx)
					require.NoError(t, err)
					kept, err := ts.InsertProcessInstance(ctx, instance(1))
					require.NoError(t, err)

					var dropped store.ProcessInstance
					err = ts.InTx(ctx, func(ctx context.Context, etx store.Tx) error {
						dropped, err = etx.InsertProcessInstance(ctx, instance(2))
						require.NoError(t, err)
						return errEngine
					})
					require.ErrorIs(t, err, errEngine)
					require.Panics(t, func() {
						_ = ts.InTx(ctx, func(ctx context.Context, etx store.Tx) error {
							_, err := etx.InsertProcessInstance(ctx, instance(3))
							require.NoError(t, err)
							panic("engine bug")
						})
					})

					// Only the savepoints were rolled back: the host's
					// transaction goes on with its earlier writes.
					_, err = ts.GetProcessInstance(ctx, kept.ID)
					require.NoError(t, err)
					_, err = ts.GetProcessInstance(ctx, dropped.ID)
					require.ErrorIs(t, err, store.ErrNotFound)
					return tx.Create(&hostOrder{Title: "order 2"}).Error
				})
				require.NoError(t, err)
				require.Equal(t, int64(2), countOrders(t, db))
				require.Equal(t, int64(1), countInstances(t, ctx, s))
			})

			t.Run("MigrateRefusedInTx", func(t *testing.T) {
				t.Parallel()
				ctx, db, _ := setup(t, d)
				err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
					ts, err := gormstore.New(tx)
					require.NoError(t, err)
					return ts.Migrate(ctx)
				})
				require.Error(t, err)
			})
		})
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := newStore(t, d.open(t))
			_, err := s.InsertDefinition(ctx, store.InsertDefinitionParams{ID: 1, PackageID: "p", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
			require.NoError(t, err)
			require.NoError(t, s.Migrate(ctx))
			require.NoError(t, s.Migrate(ctx))
			latest, err := s.LatestDefinition(ctx, "p")
			require.NoError(t, err)
			require.Equal(t, 1, latest.Version)
		})
	}
}

// Migrate records the fingerprint of the schema it made, and a Migrate
// that finds it sends one query; a database whose fingerprint is another
// (an earlier version's) or missing is migrated in full.
func TestMigrateSkipsACurrentSchema(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := d.open(t)
			rec := &gormstore.SQLRecorder{Interface: logger.Discard}
			s := newStore(t, db.Session(&gorm.Session{Logger: rec}))
			rec.Take()
			require.NoError(t, s.Migrate(ctx))
			read := rec.Take()
			require.Len(t, read, 1, "a current schema: one read of its fingerprint")
			require.Contains(t, read[0], "goxpdl_schema")

			// Another version's fingerprint: a full migration, which
			// puts back what that version lacks.
			require.NoError(t, db.Exec("UPDATE goxpdl_schema SET fingerprint = 'earlier'").Error)
			require.NoError(t, db.Migrator().DropColumn("goxpdl_process_instances", "depth"))
			require.NoError(t, s.Migrate(ctx))
			require.True(t, db.Migrator().HasColumn("goxpdl_process_instances", "depth"))
			require.Greater(t, len(rec.Take()), 10)
			require.NoError(t, s.Migrate(ctx))
			require.Len(t, rec.Take(), 1, "current again")
		})
	}
}

// A database of the earlier schema claimed through goxpdl_events_claim
// (processed_at, id); Migrate replaces it with goxpdl_events_unclaimed.
func TestMigrateReplacesTheClaimIndex(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := d.open(t)
			s := newStore(t, db)
			require.NoError(t, db.Exec("DELETE FROM goxpdl_schema").Error) // a database of the earlier schema
			require.NoError(t, db.Exec("DROP INDEX goxpdl_events_unclaimed"+onEvents(db)).Error)
			require.NoError(t, db.Exec("CREATE INDEX goxpdl_events_claim ON goxpdl_events (processed_at, id)").Error)
			require.NoError(t, s.Migrate(ctx))
			require.False(t, db.Migrator().HasIndex("goxpdl_events", "goxpdl_events_claim"))
			require.True(t, db.Migrator().HasIndex("goxpdl_events", "goxpdl_events_unclaimed"))
		})
	}
}

// onEvents is what DROP INDEX needs after the index's name: MySQL names
// the table.
func onEvents(db *gorm.DB) string {
	if db.Name() == "mysql" {
		return " ON goxpdl_events"
	}
	return ""
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	want := map[string]store.Capabilities{
		"SQLite":       {Dialect: store.DialectSQLite, DeferredSavepoints: true},
		"SQLiteMemory": {Dialect: store.DialectSQLite, DeferredSavepoints: true},
		"MySQL":        {Dialect: store.DialectMySQL, SupportsSkipLocked: true, DeferredSavepoints: true},
		"Postgres":     {Dialect: store.DialectPostgres, SupportsSkipLocked: true},
	}
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			s, err := gormstore.New(d.open(t))
			require.NoError(t, err)
			require.Equal(t, want[d.name], s.Capabilities())
		})
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	_, err := gormstore.New(nil)
	require.Error(t, err)
	_, err = gormstore.New(&gorm.DB{Config: &gorm.Config{}})
	require.Error(t, err)
}

// otherTx is a store.Tx that is not gormstore's.
type otherTx struct{ store.Tx }

// TestDBOf: the *gorm.DB of a Store is its pool, and inside InTx the
// transaction, whose writes commit or roll back with the store's; a
// store.Tx of another implementation is an error, not a panic.
func TestDBOf(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) { testDBOf(t, db) })
}

func testDBOf(t *testing.T, db *gorm.DB) {
	ctx := t.Context()
	s := newStore(t, db)
	require.NoError(t, db.AutoMigrate(&hostOrder{}))
	got, err := gormstore.DBOf(s)
	require.NoError(t, err)
	require.Same(t, s.DB(), got)

	errRefused := errors.New("refused")
	for _, title := range []string{"kept", "rolled back"} {
		err := s.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			txDB, err := gormstore.DBOf(tx)
			require.NoError(t, err)
			require.NotSame(t, db, txDB, "the transaction, not the pool")
			require.NoError(t, txDB.WithContext(ctx).Create(&hostOrder{Title: title}).Error)
			if title == "rolled back" {
				return errRefused
			}
			return nil
		})
		if title == "rolled back" {
			require.ErrorIs(t, err, errRefused)
		} else {
			require.NoError(t, err)
		}
	}
	var titles []string
	require.NoError(t, db.Model(&hostOrder{}).Pluck("title", &titles).Error)
	require.Equal(t, []string{"kept"}, titles)

	_, err = gormstore.DBOf(otherTx{s})
	require.ErrorContains(t, err, "not a store of package gormstore")
	_, err = gormstore.DBOf(nil)
	require.Error(t, err)
	var none *gormstore.Store
	_, err = gormstore.DBOf(none)
	require.Error(t, err)
}

func TestOpenSQLiteSettings(t *testing.T) {
	t.Parallel()
	t.Run("File", func(t *testing.T) {
		t.Parallel()
		db := openSQLiteFile(t)
		// Every connection of the pool has the settings: hold one open in
		// a transaction and check another.
		ctx := t.Context()
		require.NoError(t, db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			for _, conn := range []*gorm.DB{tx, db.WithContext(ctx)} {
				pragmas := map[string]string{}
				for _, p := range []string{"journal_mode", "synchronous", "foreign_keys", "busy_timeout"} {
					var v string
					require.NoError(t, conn.Raw("PRAGMA "+p).Scan(&v).Error)
					pragmas[p] = v
				}
				require.Equal(t, map[string]string{
					"journal_mode": "wal",
					"synchronous":  "2", // FULL
					"foreign_keys": "1",
					"busy_timeout": "5000",
				}, pragmas)
			}
			return nil
		}))
	})
	t.Run("Memory", func(t *testing.T) {
		t.Parallel()
		db := openSQLiteMemory(t)
		sqlDB, err := db.DB()
		require.NoError(t, err)
		require.Equal(t, 1, sqlDB.Stats().MaxOpenConnections, "every connection to :memory: is a new database")
	})
	t.Run("RejectsURIs", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{"", "file:x.db", "x.db?mode=ro"} {
			_, err := gormstore.OpenSQLite(path)
			require.Error(t, err, path)
		}
	})
}

func TestOpenMySQLBadDSN(t *testing.T) {
	t.Parallel()
	_, err := gormstore.OpenMySQL("not a dsn")
	require.Error(t, err)
}

// TestMigrateAddsLoopColumns upgrades a database made before activity
// instances had loop columns: Migrate adds them to a table with rows,
// and the old rows read back as no loop.
func TestMigrateAddsLoopColumns(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := d.open(t)
			s := newStore(t, db)
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			rows, err := s.InsertActivityInstances(ctx, []store.ActivityInstance{
				{ID: 1, ProcessInstanceID: 1, ActivityDefID: "A", State: "Initiated", CreatedAt: t0, UpdatedAt: t0},
			})
			require.NoError(t, err)
			for _, col := range []string{"loop_parent_id", "loop_index", "loop_state"} {
				require.NoError(t, db.Exec("ALTER TABLE goxpdl_activity_instances DROP COLUMN "+col).Error)
			}
			require.NoError(t, db.Exec("DELETE FROM goxpdl_schema").Error) // the earlier schema had none
			require.NoError(t, s.Migrate(ctx))
			got, err := s.GetActivityInstance(ctx, rows[0].ID)
			require.NoError(t, err)
			require.Nil(t, got.LoopParentID)
			require.Zero(t, got.LoopIndex)
			require.Nil(t, got.LoopState)
		})
	}
}

// sessionIsolation returns the isolation level of conn's session, under
// whichever name the server knows it (MySQL 8 and MariaDB 11.1:
// transaction_isolation; older MariaDB: tx_isolation), and that name.
func sessionIsolation(t *testing.T, conn *gorm.DB) (level, name string) {
	t.Helper()
	for _, name := range []string{"transaction_isolation", "tx_isolation"} {
		if err := conn.Raw("SELECT @@SESSION." + name).Scan(&level).Error; err == nil {
			return level, name
		}
	}
	t.Fatal("the server knows neither transaction_isolation nor tx_isolation")
	return "", ""
}

// OpenMySQL's sessions run at READ COMMITTED, the level of the store's
// transactions, so that those need no SET TRANSACTION; a DSN that
// chooses a level keeps it.
func TestOpenMySQLSessionIsolation(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openMySQL(t)
	var name string
	require.NoError(t, db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, conn := range []*gorm.DB{tx, db.WithContext(ctx)} {
			var level string
			level, name = sessionIsolation(t, conn)
			require.Equal(t, "READ-COMMITTED", level)
		}
		return nil
	}))

	cfg, err := mysql.ParseDSN(mysqlDSN(t))
	require.NoError(t, err)
	cfg.Params = map[string]string{name: "'REPEATABLE-READ'"}
	own, err := gormstore.OpenMySQL(cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() {
		sqlDB, err := own.DB()
		require.NoError(t, err)
		require.NoError(t, sqlDB.Close())
	})
	level, _ := sessionIsolation(t, own.WithContext(ctx))
	require.Equal(t, "REPEATABLE-READ", level)
}

// Migrate adds the depth column to a table of instances written before
// it existed: they read depth 0, and new instances keep theirs.
func TestMigrateAddsDepthToStoredInstances(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := d.open(t)
			s := newStore(t, db)
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			old, err := s.InsertProcessInstance(ctx, store.ProcessInstance{ID: 1, ProcessDefID: "main", State: "Running", Depth: 5, CreatedAt: t0, UpdatedAt: t0})
			require.NoError(t, err)
			require.NoError(t, db.Migrator().DropColumn("goxpdl_process_instances", "depth"))
			require.False(t, db.Migrator().HasColumn("goxpdl_process_instances", "depth"))
			require.NoError(t, db.Exec("DELETE FROM goxpdl_schema").Error) // the earlier schema had none

			require.NoError(t, s.Migrate(ctx))
			got, err := s.GetProcessInstance(ctx, old.ID)
			require.NoError(t, err)
			require.Zero(t, got.Depth)
			sub, err := s.InsertProcessInstance(ctx, store.ProcessInstance{ID: 2, ProcessDefID: "sub", ParentInstanceID: &old.ID, State: "Running", Depth: 1, CreatedAt: t0, UpdatedAt: t0})
			require.NoError(t, err)
			got, err = s.GetProcessInstance(ctx, sub.ID)
			require.NoError(t, err)
			require.Equal(t, 1, got.Depth)
		})
	}
}
