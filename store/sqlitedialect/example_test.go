package sqlitedialect_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/goxpdl/goxpdl/store/sqlitedialect"
)

// Example opens a database file, creates a table for a model, and writes
// and reads a row.
func Example() {
	dir, err := os.MkdirTemp("", "sqlitedialect-example")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()

	dsn := filepath.Join(dir, "example.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)"
	db, err := gorm.Open(sqlitedialect.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = sqlDB.Close() }()

	type Greeting struct {
		ID   uint64
		Text string
	}
	if err := db.AutoMigrate(&Greeting{}); err != nil {
		log.Fatal(err)
	}
	if err := db.Create(&Greeting{Text: "hello, sqlite"}).Error; err != nil {
		log.Fatal(err)
	}
	var g Greeting
	if err := db.First(&g).Error; err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.ID, g.Text)
	// Output: 1 hello, sqlite
}
