package faultdb_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"gorm.io/gorm"
	"modernc.org/sqlite"

	"github.com/goxpdl/goxpdl/internal/faultdb"
	"github.com/goxpdl/goxpdl/store"
)

// ExampleOpen opens a SQLite database with an injector, makes the next
// COMMIT fail with SQLITE_BUSY, and shows that the transaction's write is
// gone and the next one commits.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "faultdb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	db, in, err := faultdb.Open(store.DialectSQLite, filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		defer func() { _ = sqlDB.Close() }()
	}
	if err := db.Exec("CREATE TABLE orders (id INT)").Error; err != nil {
		log.Fatal(err)
	}
	write := func(id int) error {
		return db.Transaction(func(tx *gorm.DB) error { return tx.Exec("INSERT INTO orders (id) VALUES (?)", id).Error })
	}

	in.FailCommit(faultdb.SQLiteBusy())
	err = write(1)
	var busy *sqlite.Error
	fmt.Println("first:", errors.As(err, &busy) && busy.Code() == 5)
	fmt.Println("second:", write(2))
	var ids []int
	db.Raw("SELECT id FROM orders").Scan(&ids)
	fmt.Println("stored:", ids, "faults:", in.Stats().Total())
	// Output:
	// first: true
	// second: <nil>
	// stored: [2] faults: 1
}
