package gormstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// Open an in-memory SQLite database, create the tables, deploy two versions
// of a package and read back the latest.
func Example() {
	ctx := context.Background()

	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := sqlDB.Close(); err != nil {
			log.Fatal(err)
		}
	}()

	s, err := gormstore.New(db)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	// The store never reads a clock: the caller passes every timestamp.
	deployed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, name := range []string{"Order handling", "Order handling (fixed)"} {
		_, err := s.InsertDefinition(ctx, store.InsertDefinitionParams{
			ID:        int64(i + 1), // the caller's (the engine's, package idgen)
			PackageID: "orders",
			Name:      name,
			Source:    []byte(`<Package Id="orders"/>`),
			CreatedAt: deployed.Add(time.Duration(i) * time.Hour),
		})
		if err != nil {
			log.Fatal(err)
		}
	}

	latest, err := s.LatestDefinition(ctx, "orders")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s v%d %q deployed %s\n", latest.PackageID, latest.Version, latest.Name, latest.CreatedAt.Format(time.RFC3339))
	// Output: orders v2 "Order handling (fixed)" deployed 2026-01-02T04:04:05Z
}
