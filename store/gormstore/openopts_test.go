package gormstore_test

import (
	"database/sql/driver"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// TestOpenOptsWrapsConnector checks that both dialects open their pool
// through OpenOpts.WrapConnectorFunc, and that a store over it keeps what
// the plain pool has: the SQLite write gate and MySQL's session settings
// (READ COMMITTED and pipelining from the DSN).
func TestOpenOptsWrapsConnector(t *testing.T) {
	t.Parallel()
	for _, d := range []struct {
		name string
		open func(testing.TB, gormstore.OpenOpts) *gorm.DB
	}{{"SQLite", dbtest.OpenSQLiteOpts}, {"MySQL", dbtest.OpenMySQLOpts}} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			var opened atomic.Int64
			db := d.open(t, gormstore.OpenOpts{WrapConnectorFunc: func(c driver.Connector) driver.Connector {
				return countingConnector{Connector: c, opened: &opened}
			}})
			s, err := gormstore.New(db)
			require.NoError(t, err)
			require.NoError(t, s.Migrate(t.Context()))
			require.Positive(t, opened.Load(), "no connection went through the wrapper")
			var plain *gorm.DB
			if d.name == "SQLite" {
				plain = dbtest.OpenSQLite(t)
			} else {
				plain = dbtest.OpenMySQL(t)
			}
			ps, err := gormstore.New(plain)
			require.NoError(t, err)
			require.Equal(t, gormstore.Settings(ps), gormstore.Settings(s))
			require.Equal(t, store.DialectSQLite == s.Capabilities().Dialect, d.name == "SQLite")
		})
	}
}
