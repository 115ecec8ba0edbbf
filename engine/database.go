package engine

import (
	"context"
	"database/sql"
	"fmt"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
	"github.com/goxpdl/goxpdl/store/gormstore"
)

// This file is where the host's *gorm.DB meets the engine's store: the
// only file of the engine that imports store/gormstore or calls gorm
// (a lint rule, depguard's engine-store-seam, keeps it so). Everything
// else works through store.Store and store.Tx; a host's *gorm.DB (its
// pool in Config.DB, its transaction in a …Tx command) becomes a store
// here, and the engine's transaction becomes a *gorm.DB again here for
// the host's applications and hooks.

// openStore returns the engine's store over the host's database (its
// pool, Config.DB), with the schema created or upgraded unless
// skipMigrate.
func openStore(db *gorm.DB, skipMigrate bool) (store.Store, error) {
	st, err := gormstore.New(db)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if !skipMigrate {
		if err := st.Migrate(context.Background()); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	return st, nil
}

// hostStore is the one way a host's *gorm.DB becomes a store: every …Tx
// command runs on the store it returns over the command's tx. Over a
// transaction, every method runs in it and commits or rolls back with it,
// and InTx nests with a savepoint (gormstore.New).
func hostStore(tx *gorm.DB) (store.Store, error) {
	return gormstore.New(tx)
}

// hostDB is the way back: the *gorm.DB tx works on, for the host's code
// that runs in the engine's transaction (ApplicationContext.Tx, hooks).
func hostDB(ctx context.Context, tx store.Tx) (*gorm.DB, error) {
	return gormstore.HostDB(ctx, tx)
}

// transientDBError reports whether err is the database's passing trouble
// (a deadlock, a lock wait timeout, SQLite's BUSY, a lost connection),
// also when the host's own statement in the engine's transaction met it:
// the step is rolled back and tried again rather than failed.
func transientDBError(err error) bool {
	return gormstore.Transient(err)
}

// Transaction runs fn in a transaction of the host's database db, as
// db.Transaction does (committed when fn returns nil, rolled back
// otherwise), and tells the engine when it has committed. The engine
// cannot see the commit of a transaction it did not begin: a …Tx command
// asks for an outbox poll as it returns, and that poll usually runs after
// the commit, which is quicker, and finds the work the command left (a
// started instance to schedule, a completed work item's next activities,
// a signal). When the poll runs first, the work waits for the next one,
// up to Config.PollInterval. After Transaction it starts at once.
//
// db is the host's pool. Inside a transaction of the host's own, fn runs
// in a savepoint, and the engine learns of nothing until the host's
// commit: call the …Tx commands directly there instead.
func (e *Engine) Transaction(ctx context.Context, db *gorm.DB, fn func(tx *gorm.DB) error, opts ...*sql.TxOptions) error {
	if db == nil {
		return fmt.Errorf("%w: Transaction with a nil database", ErrBadArgument)
	}
	_, nested := db.Statement.ConnPool.(gorm.TxCommitter)
	if err := db.WithContext(ctx).Transaction(fn, opts...); err != nil {
		return err
	}
	if !nested {
		e.bus.Nudge()
		e.publisher.nudge()
	}
	return nil
}
