package main

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/gormstore"
)

// dbUsage documents the --db flag's forms.
const dbUsage = gormstore.DSNForms

// memoryDSN is the database of an empty --db: a private in-memory SQLite
// database.
const memoryDSN = gormstore.SQLiteScheme + gormstore.MemoryPath

// openDB opens the database a --db flag names; "" is a private in-memory
// SQLite database. The returned close function closes it. Errors name the
// database without its password.
func openDB(dsn string) (*gorm.DB, func(), error) {
	if dsn == "" {
		dsn = memoryDSN
	}
	db, err := gormstore.OpenDSN(dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("--db %w", err)
	}
	return db, func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close() // nothing left to lose: the engine stopped
		}
	}, nil
}

// describeDB names the database for reports, without a password.
func describeDB(dsn string) string {
	if dsn == "" {
		return memoryDSN
	}
	return gormstore.RedactDSN(dsn)
}
