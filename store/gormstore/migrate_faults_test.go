package gormstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/internal/faultdb"
	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// TestMigrateUnderFaults runs Migrate again on a migrated database with
// instances whose counts are not folded yet, with one statement failing
// at each place in turn (every place on SQLite, every sixtieth of some
// 300 on MySQL/MariaDB, where a run costs more): Migrate succeeds or
// answers the database's passing error (gormstore.Transient), never a
// misleading one (a table or index "already exists" because a probe's
// error was lost), the next Migrate succeeds, and the counts per state
// are what they were (a lost probe of goxpdl_instance_counts made
// Migrate seed them again on top of the deltas: every instance counted
// twice).
func TestMigrateUnderFaults(t *testing.T) {
	t.Parallel()
	for _, d := range []struct {
		name, dialect string
		open          func(testing.TB, gormstore.OpenOpts) *gorm.DB
		every         int64
	}{
		{"SQLite", store.DialectSQLite, dbtest.OpenSQLiteOpts, 1},
		{"MySQL", store.DialectMySQL, dbtest.OpenMySQLOpts, 60},
	} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			if d.dialect == store.DialectMySQL {
				mysqlDSN(t)
			}
			ctx := context.Background()
			in := faultdb.New()
			db := d.open(t, in.OpenOpts())
			s := newStore(t, db)
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			for i := range 2 {
				_, err := s.InsertProcessInstance(ctx, store.ProcessInstance{ID: int64(i + 1), ProcessDefID: "p", State: "Initiated", CreatedAt: now, UpdatedAt: now})
				require.NoError(t, err)
			}
			want, err := s.CountProcessInstancesByState(ctx)
			require.NoError(t, err)
			require.Equal(t, map[string]int64{"Initiated": 2}, want)

			before := in.Stats().Statements
			require.NoError(t, s.Migrate(ctx))
			n := in.Stats().Statements - before
			require.Positive(t, n)
			for _, fault := range []error{faultdb.Deadlock(d.dialect), faultdb.ConnectionLost(d.dialect)} {
				for at := int64(1); at <= n; at += d.every {
					t.Run(fmt.Sprintf("%T@%d", fault, at), func(t *testing.T) {
						in.FailNth(at, fault)
						err := s.Migrate(ctx)
						in.Clear()
						require.True(t, err == nil || gormstore.Transient(err), "Migrate with statement %d of %d failing: %v", at, n, err)
						require.NoError(t, s.Migrate(ctx), "Migrate after the fault")
						got, err := s.CountProcessInstancesByState(ctx)
						require.NoError(t, err)
						require.Equal(t, want, got, "counts per state")
					})
				}
			}
		})
	}
}
