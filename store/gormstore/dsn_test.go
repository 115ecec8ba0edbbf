package gormstore_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goxpdl/goxpdl/store/dbtest"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// secret is the password of the DSNs below; no message may show it.
const secret = "s3cr3t-Pa55"

func TestRedactDSN(t *testing.T) {
	t.Parallel()
	tests := []struct{ dsn, want string }{
		{"mysql://app:" + secret + "@tcp(db:3306)/goxpdl?parseTime=true", "mysql://app:xxxxx@tcp(db:3306)/goxpdl?parseTime=true"},
		{"app:" + secret + "@tcp(db:3306)/goxpdl", "app:xxxxx@tcp(db:3306)/goxpdl"},
		{"app:" + secret + "@/goxpdl", "app:xxxxx@tcp(127.0.0.1:3306)/goxpdl"},
		// A password may hold '@', ':' and '/'; the driver splits at the
		// last '@' before the last '/'.
		{"mysql://app:a@b:c/" + secret + "@tcp(db)/x", "mysql://app:xxxxx@tcp(db:3306)/x"},
		// Names the driver cannot read still lose their password.
		{"mysql://app:" + secret + "@tcp(db:3306/goxpdl", "mysql://app:xxxxx@tcp(db:3306/goxpdl"},
		{"postgres://app:" + secret + "@db/goxpdl", "postgres://app:xxxxx@db/goxpdl"},
		// Nothing to hide.
		{"mysql://root:@tcp(127.0.0.1:3306)/test", "mysql://root:@tcp(127.0.0.1:3306)/test"},
		{"mysql://root@tcp(127.0.0.1:3306)/test", "mysql://root@tcp(127.0.0.1:3306)/test"},
		{"sqlite:/var/lib/app.db", "sqlite:/var/lib/app.db"},
		{"sqlite::memory:", "sqlite::memory:"},
		{"oracle:x", "oracle:x"},
		{"", ""},
	}
	for _, tt := range tests {
		got := gormstore.RedactDSN(tt.dsn)
		require.Equal(t, tt.want, got, "RedactDSN(%q)", tt.dsn)
		require.NotContains(t, got, secret)
	}
}

// No error of OpenDSN, OpenMySQL or ParseMySQLDSN shows the password,
// whatever is wrong with the name; a name of no known form is ErrBadDSN.
func TestDSNErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	bad := []string{
		"oracle://app:" + secret + "@db/x",
		"app:" + secret + "@tcp(db:3306)/x", // --db wants the mysql:// scheme
		"mysql://app:" + secret + "@tcp(db:3306/x",
		"mysql://app:" + secret + "@tcp(db:3306)/x?parseTime=maybe",
		"mysql://app:" + secret + "@tcp(127.0.0.1:1)/x", // nothing listens on port 1
	}
	for _, dsn := range bad {
		db, err := gormstore.OpenDSN(dsn)
		require.Error(t, err, dsn)
		require.Nil(t, db)
		require.NotContains(t, err.Error(), secret)
		if !strings.HasPrefix(dsn, gormstore.MySQLScheme) {
			require.ErrorIs(t, err, gormstore.ErrBadDSN, dsn)
		}
		_, err = gormstore.OpenMySQL(dsn)
		require.Error(t, err, dsn)
		require.NotContains(t, err.Error(), secret)
	}
	_, err := gormstore.ParseMySQLDSN("mysql://app:" + secret + "@tcp(db:3306)/x?parseTime=maybe")
	require.ErrorIs(t, err, gormstore.ErrBadDSN)
	require.NotContains(t, err.Error(), secret)
	_, err = gormstore.OpenDSN("sqlite:")
	require.ErrorIs(t, err, gormstore.ErrBadDSN)
}

// A server that refuses the password: its error names the user, not the
// password.
func TestDSNWrongPasswordIsHidden(t *testing.T) {
	t.Parallel()
	cfg, err := gormstore.ParseMySQLDSN(dbtest.MySQLDSN(t))
	require.NoError(t, err)
	cfg.Passwd = secret
	db, err := gormstore.OpenDSN(gormstore.MySQLScheme + cfg.FormatDSN())
	require.Error(t, err)
	require.Nil(t, db)
	require.Contains(t, err.Error(), "Access denied")
	require.NotContains(t, err.Error(), secret)
}

// GOXPDL_MYSQL_DSN and --db share one reader: the driver's DSN with or
// without mysql:// in front.
func TestParseMySQLDSNForms(t *testing.T) {
	t.Parallel()
	plain, err := gormstore.ParseMySQLDSN("root:pw@tcp(127.0.0.1:3306)/test?parseTime=true&multiStatements=true")
	require.NoError(t, err)
	schemed, err := gormstore.ParseMySQLDSN("mysql://root:pw@tcp(127.0.0.1:3306)/test?parseTime=true&multiStatements=true")
	require.NoError(t, err)
	require.Equal(t, plain.FormatDSN(), schemed.FormatDSN())
	require.Equal(t, "test", schemed.DBName)
	require.Equal(t, "127.0.0.1:3306", schemed.Addr)
	require.True(t, schemed.MultiStatements)
}
