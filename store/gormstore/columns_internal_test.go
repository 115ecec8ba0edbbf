package gormstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/goxpdl/goxpdl/store"
)

// The column lists of the plain INSERTs must name every column of their
// model but the id, or a field added to the model would silently not be
// written on SQLite.
func TestPlainInsertColumnsMatchTheirModels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model   any
		columns []string
	}{
		{eventModel{}, eventColumns},
		{activityInstanceModel{}, activityInstanceColumns},
		{historyModel{}, historyColumns},
		{processInstanceModel{}, processInstanceColumns},
		{auditModel{}, auditColumns},
	} {
		sch, err := schema.Parse(tc.model, &sync.Map{}, schema.NamingStrategy{})
		require.NoError(t, err)
		var want []string
		for _, f := range sch.Fields {
			if f.DBName != "" && f.DBName != "id" {
				want = append(want, f.DBName)
			}
		}
		require.ElementsMatch(t, want, tc.columns, "%s", sch.Table)
	}
}

// values gives one value per column, in the same order as the columns.
func TestPlainInsertValuesMatchTheirColumns(t *testing.T) {
	t.Parallel()
	require.Len(t, eventModel{}.values(), len(eventColumns))
	require.Len(t, activityInstanceModel{}.values(), len(activityInstanceColumns))
	require.Len(t, processInstanceModel{}.values(), len(processInstanceColumns))
}

// Multi-row INSERTs and UPDATEs of the tables the engine writes on every
// step run as INSERT OR FAIL and UPDATE OR FAIL inside a SQLite
// transaction (no statement journal), and plain everywhere else: outside
// a transaction, on tables with unique keys, and on MySQL.
func TestStatementVerb(t *testing.T) {
	t.Parallel()
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "verb.db"))
	require.NoError(t, err)
	t.Cleanup(func() { closeGorm(db) })
	s, err := New(db)
	require.NoError(t, err)

	require.Equal(t, "INSERT", s.statementVerb("INSERT", tableHistory), "outside a transaction")
	err = s.InTx(t.Context(), func(_ context.Context, tx store.Tx) error {
		in := tx.(*Store)
		require.Equal(t, "INSERT OR FAIL", in.statementVerb("INSERT", tableHistory))
		require.Equal(t, "INSERT OR FAIL", in.statementVerb("INSERT", tableActivityInstances))
		require.Equal(t, "UPDATE OR FAIL", in.statementVerb("UPDATE", tableActivityInstances))
		require.Equal(t, "INSERT", in.statementVerb("INSERT", tableEvents), "event_id is unique")
		require.Equal(t, "INSERT", in.statementVerb("INSERT", tableProcessInstances), "start_key is unique")
		return nil
	})
	require.NoError(t, err)

	mysqlTx := &Store{db: db, dialect: store.DialectMySQL}
	require.NoError(t, db.Transaction(func(tx *gorm.DB) error {
		mysqlTx.db = tx
		require.Equal(t, "INSERT", mysqlTx.statementVerb("INSERT", tableHistory), "MySQL")
		return nil
	}))
}

// A MySQL pool whose DSN sets READ COMMITTED for every session needs no
// isolation level per transaction; any other pool gets READ COMMITTED
// per transaction; SQLite never.
func TestTxOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		params map[string]string
		perTx  bool
	}{
		{nil, true},
		{map[string]string{"transaction_isolation": "'READ-COMMITTED'"}, false},
		{map[string]string{"tx_isolation": "read committed"}, false},
		{map[string]string{"tx_isolation": "'REPEATABLE-READ'"}, true},
		{map[string]string{"autocommit": "1"}, true},
	} {
		cfg := mysql.NewConfig()
		cfg.Addr, cfg.Params = "127.0.0.1:1", tc.params
		db, err := gorm.Open(gormmysql.New(gormmysql.Config{DSNConfig: cfg, SkipInitializeWithVersion: true}), &gorm.Config{DisableAutomaticPing: true})
		require.NoError(t, err, "no connection is made")
		s, err := New(db)
		require.NoError(t, err)
		if tc.perTx {
			require.Equal(t, []*sql.TxOptions{{Isolation: sql.LevelReadCommitted}}, s.txOptions(), "%v", tc.params)
		} else {
			require.Empty(t, s.txOptions(), "%v", tc.params)
		}
		closeGorm(db)
	}
	db, err := OpenSQLite(filepath.Join(t.TempDir(), "opts.db"))
	require.NoError(t, err)
	t.Cleanup(func() { closeGorm(db) })
	s, err := New(db)
	require.NoError(t, err)
	require.Empty(t, s.txOptions())
}

// The schema's fingerprint (schema.go) changes with any field's tag or
// type, embedded structs included, and with the dialect.
func TestSchemaFingerprintSeesEveryField(t *testing.T) {
	t.Parallel()
	type inner struct {
		Y string `gorm:"column:y;size:64"`
	}
	type plain struct {
		X int `gorm:"column:x"`
		inner
	}
	type indexed struct {
		X int `gorm:"column:x;index:i"`
		inner
	}
	type wider struct {
		X int64 `gorm:"column:x"`
		inner
	}
	fields := func(v any) string { return string(appendFields(nil, reflect.TypeOf(v))) }
	require.Contains(t, fields(plain{}), `field Y string "gorm:\"column:y;size:64\""`)
	require.NotEqual(t, fields(plain{}), fields(indexed{}))
	require.NotEqual(t, fields(plain{}), fields(wider{}))
	require.Len(t, schemaFingerprint(store.DialectMySQL), 64)
	require.NotEqual(t, schemaFingerprint(store.DialectSQLite), schemaFingerprint(store.DialectPostgres))
}
