package main

import (
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/gormstore"
)

// dbUsage documents the --db flag's forms.
const dbUsage = `sqlite:PATH | mysql://USER:PASS@tcp(HOST:PORT)/DB`

// openDB opens the database a --db flag names; "" is a private in-memory
// SQLite database. The returned close function closes it.
func openDB(dsn string) (*gorm.DB, func(), error) {
	var db *gorm.DB
	var err error
	switch {
	case dsn == "":
		db, err = gormstore.OpenSQLite(gormstore.MemoryPath)
	case strings.HasPrefix(dsn, "sqlite:"):
		path := strings.TrimPrefix(dsn, "sqlite:")
		if path == "" {
			return nil, nil, fmt.Errorf("--db %q: sqlite needs a file path", dsn)
		}
		db, err = gormstore.OpenSQLite(path)
	case strings.HasPrefix(dsn, "mysql://"):
		db, err = gormstore.OpenMySQL(strings.TrimPrefix(dsn, "mysql://"))
	default:
		return nil, nil, fmt.Errorf("--db %q: want %s", dsn, dbUsage)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--db %q: %w", dsn, err)
	}
	return db, func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close() // nothing left to lose: the engine stopped
		}
	}, nil
}

// describeDB names the database for reports, without a password.
func describeDB(dsn string) string {
	switch {
	case dsn == "":
		return "sqlite::memory:"
	case strings.HasPrefix(dsn, "mysql://"):
		rest := strings.TrimPrefix(dsn, "mysql://")
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			user, _, _ := strings.Cut(rest[:at], ":")
			return "mysql://" + user + "@" + rest[at+1:]
		}
		return dsn
	}
	return dsn
}
