package adversary_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/goxpdl/goxpdl/internal/adversary"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// A run of 100 operations on an in-memory SQLite database. A test runs
// many seeds, on every database; a failure is a *adversary.Failure that
// names its seed.
func ExampleRun() {
	db, err := gormstore.OpenSQLite(gormstore.MemoryPath)
	if err != nil {
		panic(err)
	}
	defer func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}()
	rep, err := adversary.Run(context.Background(), adversary.Config{DB: db, Seed: 7, Ops: 100})
	var f *adversary.Failure
	if errors.As(err, &f) {
		fmt.Println(f) // the seed, the step, what differed, the operations
		return
	}
	if err != nil {
		panic(err)
	}
	fmt.Printf("seed %d: %d operations, %d faults\n", rep.Seed, rep.Ops, rep.Faults)
	// Output: seed 7: 100 operations, 0 faults
}
