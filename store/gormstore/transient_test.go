package gormstore_test

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/internal/faultdb"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{faultdb.MySQLDeadlock(), true},
		{faultdb.MySQLLockWaitTimeout(), true},
		{faultdb.SQLiteBusy(), true},
		{fmt.Errorf("insert: %w", driver.ErrBadConn), true},
		{mysql.ErrInvalidConn, true},
		{&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, false},
		{errors.New("declined"), false},
		{nil, false},
	} {
		require.Equal(t, tc.want, gormstore.Transient(tc.err), "%v", tc.err)
	}
}
