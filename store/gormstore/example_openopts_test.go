package gormstore_test

import (
	"context"
	"database/sql/driver"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/goxpdl/goxpdl/store/gormstore"
)

// countingConnector counts the connections its driver's connector makes:
// the smallest connector wrapper. It hands the driver's connections back
// unchanged, so they keep every optional interface database/sql uses.
type countingConnector struct {
	driver.Connector
	opened *atomic.Int64
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.opened.Add(1)
	return c.Connector.Connect(ctx)
}

// ExampleOpenSQLiteOpts opens a SQLite database through a connector
// wrapper, the place for instrumentation below GORM.
func ExampleOpenSQLiteOpts() {
	dir, err := os.MkdirTemp("", "goxpdl-example")
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()

	var opened atomic.Int64
	db, err := gormstore.OpenSQLiteOpts(filepath.Join(dir, "goxpdl.db"), gormstore.OpenOpts{
		WrapConnectorFunc: func(c driver.Connector) driver.Connector {
			return countingConnector{Connector: c, opened: &opened}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = sqlDB.Close() }()

	s, err := gormstore.New(db)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("connections made through the wrapper:", opened.Load() > 0)
	// Output: connections made through the wrapper: true
}
