package gormstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
)

// batchSize is the most rows one INSERT carries. It keeps statements below
// the placeholder limits (32766 in SQLite, 65535 in MySQL and PostgreSQL) for the widest
// table. A larger batch is inserted in a transaction of its own (a savepoint
// inside an enclosing one), so it still succeeds or fails as a whole.
const batchSize = 500

// Store implements store.Store over a *gorm.DB.
//
// A Store built by New over a connection pool runs each data method in its
// own transaction where the method needs more than one statement. A Store
// built over a transaction handle (a *gorm.DB returned by db.Begin, or the
// tx inside db.Transaction) runs every method inside that transaction: this
// is how the engine writes in the host's transaction. InTx on such a Store
// does not start a new transaction; it sets a savepoint, runs fn, and rolls
// back to the savepoint when fn fails or panics, leaving the host's
// transaction usable and its earlier writes in place (unless the host's
// gorm.Config sets DisableNestedTransaction, in which case fn's writes stay
// in the host's transaction and only the host can roll them back).
//
// A Store holds no request context; every method takes ctx. It is safe for
// concurrent use when the *gorm.DB is a pool; a Store over a transaction is
// as concurrent as the transaction, that is not at all.
type Store struct {
	db      *gorm.DB
	dialect string
	gate    writeGate // nil unless db is a pool over a SQLite file
	// readCommitted: every MySQL session of the pool runs at READ
	// COMMITTED already (mysqlsession.go).
	readCommitted bool
	// pipelined: the pool's MySQL sessions take several statements in
	// one text, so transactions begun by InTx pipeline their writes
	// (pipeline.go).
	pipelined bool
}

var _ store.Store = (*Store)(nil)

// New returns a Store over db, which may be a connection pool or a
// transaction. The dialect must be SQLite, MySQL/MariaDB or PostgreSQL;
// New does no IO,
// so it is cheap to call once per host transaction.
func New(db *gorm.DB) (*Store, error) {
	if db == nil {
		return nil, errors.New("gormstore: nil *gorm.DB")
	}
	var dialect string
	if db.Dialector == nil {
		return nil, errors.New("gormstore: *gorm.DB has no dialector")
	}
	switch name := db.Name(); name {
	case "sqlite":
		dialect = store.DialectSQLite
	case "mysql":
		dialect = store.DialectMySQL
	case "postgres":
		dialect = store.DialectPostgres
	default:
		return nil, fmt.Errorf("gormstore: unsupported dialect %q (want sqlite, mysql or postgres)", name)
	}
	return &Store{
		db: db, dialect: dialect, gate: gateFor(db),
		readCommitted: readCommittedSessions(db), pipelined: pipelinedSessions(db),
	}, nil
}

// Capabilities implements store.Store. MySQL means MySQL 8.0.1 or MariaDB
// 10.6 and later, which have SKIP LOCKED, as PostgreSQL has.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{
		Dialect:            s.dialect,
		SupportsSkipLocked: s.rowLocks(),
		DeferredSavepoints: s.pipelined || s.dialect == store.DialectSQLite,
	}
}

// InTx implements store.Store. Over a pool it begins a transaction; over a
// transaction it nests with a savepoint (see Store).
//
// On MySQL the transactions it begins run at READ COMMITTED (set per
// transaction unless the pool's DSN sets it for every session, as
// OpenMySQL's does), as Camunda also requires of MySQL: every write of the engine is guarded by a row
// version or a state condition, so it needs no gap locks, and the gap
// locks of REPEATABLE READ would make claims and timer firings that skip
// each other's rows (FOR UPDATE SKIP LOCKED) wait for each other after all
// when they change an indexed column. On PostgreSQL they run at READ
// COMMITTED too, asked for in BEGIN (postgres.go says why).
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	var opts []*sql.TxOptions
	nested := s.inTx()
	if !nested {
		opts = s.txOptions()
	}
	if err := s.gate.enter(ctx); err != nil {
		return wrap(err, "transaction")
	}
	defer s.gate.leave()
	if _, pool := s.db.Statement.ConnPool.(*sql.DB); pool && s.pipelined && !nested && len(opts) == 0 {
		// A pool the host wrapped in a gorm.ConnPool of its own begins
		// its transactions through it, as gorm does.
		return s.inPipelinedTx(ctx, fn)
	}
	var fnErr error
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if sqlTx, ok := tx.Statement.ConnPool.(*sql.Tx); ok && (s.pipelined || s.dialect == store.DialectSQLite) && !nested {
			pool, _ := tx.ConnPool.(*sql.DB)
			tx.Statement.ConnPool = &pipeline{tx: sqlTx, pool: pool, oneByOne: !s.pipelined}
		}
		fnErr = fn(ctx, &Store{db: tx, dialect: s.dialect, readCommitted: s.readCommitted, pipelined: s.pipelined})
		return fnErr
	}, opts...)
	if err == nil || err == fnErr { //nolint:errorlint // identity: fn's own error goes back unchanged
		return err
	}
	// Begin, savepoint or commit failed.
	return wrap(err, "transaction")
}

// Migrate creates or updates goxpdl's tables and indexes (GORM
// AutoMigrate). It must run on a Store over a pool, not inside a
// transaction: MySQL commits an open transaction on DDL. Running it again
// is harmless, and cheap: it records a fingerprint of the schema it made
// (goxpdl_schema) and does nothing while the fingerprint is that of the
// schema this version makes (schema.go).
//
// A failure is the database's passing trouble (Transient) when that is
// what it met: GORM's migrator loses the errors of its probes (HasTable,
// HasColumn, HasIndex), so that a probe that failed reads as "missing"
// and the CREATE that follows fails with "already exists", as it does
// when another node migrates at the same moment; Migrate then looks again
// (twice at most) before it answers with such an error.
func (s *Store) Migrate(ctx context.Context) error {
	if s.inTx() {
		return errors.New("gormstore: migrate inside a transaction (MySQL would commit it); use a Store over the pool")
	}
	db := s.db.WithContext(ctx)
	if s.dialect == store.DialectMySQL {
		// Binary collation whatever the database's default: ids are
		// case-sensitive (XPDL ids, EventIDs, variable names), as they
		// are in SQLite. With a _ci collation "E1" and "e1" would be one
		// unique key.
		db = db.Set("gorm:table_options", "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin")
	}
	if schemaCurrent(db, s.dialect) {
		return nil // schema.go
	}
	err := migrate(db, s.dialect)
	for tries := 0; err != nil && !Transient(err) && ctx.Err() == nil && tries < 2; tries++ {
		err = migrate(db, s.dialect)
	}
	return err
}

// hasTable reports whether the database has table name, from one
// statement whose error is not lost. (GORM's GetTables on MySQL asks for
// the current database in a probe whose error it drops, and then lists
// the tables of whichever database on the server sorts first: under a
// fault the counts were seeded a second time.)
func hasTable(db *gorm.DB, name string) (bool, error) {
	var q string
	switch db.Name() {
	case "mysql":
		q = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?"
	case "postgres":
		q = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?"
	case "sqlite":
		q = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
	default:
		return false, fmt.Errorf("unsupported dialect %q", db.Name())
	}
	var n int64
	err := db.Raw(q, name).Scan(&n).Error
	return n > 0, err
}

// migrate is one pass of Migrate.
func migrate(db *gorm.DB, dialect string) error {
	// Whether the counts per state are there already, from a probe whose
	// error is not lost (HasTable's is): seeding them again would count
	// every instance twice.
	hadCounts, err := hasTable(db, tableInstanceCounts)
	if err != nil {
		return fmt.Errorf("migrate: look for table %s: %w", tableInstanceCounts, translate(err))
	}
	if err := db.AutoMigrate(modelsFor(dialect)...); err != nil {
		return fmt.Errorf("migrate: %w", translate(err))
	}
	if dialect == store.DialectPostgres {
		if err := db.Exec(pgVariablesIndex).Error; err != nil {
			return fmt.Errorf("migrate: index variables' values: %w", translate(err))
		}
	}
	for _, x := range droppedIndexes {
		if db.Migrator().HasIndex(x.model, x.name) {
			if err := db.Migrator().DropIndex(x.model, x.name); err != nil {
				return fmt.Errorf("migrate: drop index %s: %w", x.name, translate(err))
			}
		}
	}
	if !hadCounts {
		// The counts per state (counts.go) start from the instances
		// there are. Engines of an earlier version writing meanwhile do
		// not keep them: upgrade every node of a database together.
		if err := seedInstanceCounts(db); err != nil {
			return fmt.Errorf("migrate: count process instances: %w", translate(err))
		}
	}
	if err := recordSchema(db, dialect); err != nil {
		return fmt.Errorf("migrate: record the schema's fingerprint: %w", translate(err))
	}
	return nil
}

// droppedIndexes are indexes of earlier schemas that a newer one
// replaced; Migrate drops them where it finds them.
var droppedIndexes = []struct {
	model any
	name  string
}{
	{&incidentModel{}, "goxpdl_incidents_state"}, // now goxpdl_incidents_cause
	{&eventModel{}, "goxpdl_events_claim"},       // now goxpdl_events_unclaimed
}

// inTx reports whether s runs inside a transaction.
func (s *Store) inTx() bool {
	c, ok := s.db.Statement.ConnPool.(gorm.TxCommitter)
	return ok && c != nil
}

// atomic runs fn in a transaction: its own when s is over a pool, else the
// enclosing one (without a savepoint; fn must leave nothing half-written
// when it fails, or the caller's rollback must cover it). opts apply only
// to a transaction of its own.
func (s *Store) atomic(ctx context.Context, fn func(db *gorm.DB) error, opts ...*sql.TxOptions) error {
	db := s.db.WithContext(ctx)
	if s.inTx() {
		return fn(db)
	}
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	if len(opts) == 0 && s.dialect == store.DialectPostgres {
		opts = pgTxOptions
	}
	return db.Transaction(fn, opts...)
}

// createBatch inserts models (a slice of model structs) as one statement,
// or, when longer than batchSize, in chunks inside a transaction (a
// savepoint when nested) so that the batch is all or nothing.
func createBatch[M any](ctx context.Context, s *Store, models []M) error {
	if len(models) == 0 {
		return nil
	}
	db := s.db.WithContext(ctx)
	if len(models) <= batchSize {
		return db.Create(&models).Error
	}
	return db.Transaction(func(tx *gorm.DB) error {
		for start := 0; start < len(models); start += batchSize {
			chunk := models[start:min(start+batchSize, len(models))]
			if err := tx.Create(&chunk).Error; err != nil {
				return err
			}
		}
		return nil
	})
}

// insertRows inserts rows (values in the order of columns) into table
// with multi-row INSERT statements of at most batchSize rows, straight
// through the connection or transaction underneath gorm: for the rows the
// engine writes on every step (history), gorm's per-row reflection costs
// more than the statement itself. More than one chunk runs inside a
// transaction (a savepoint when nested), so that the rows are all or
// nothing.
//
// One chunk is a write that needs no result, queued on a pipelined
// transaction (pipeline.go).
func insertRows(ctx context.Context, s *Store, table string, columns []string, rows [][]any) error {
	if len(rows) == 0 || len(rows) > batchSize {
		return insertChunks(ctx, s, table, columns, rows, func(db *gorm.DB, query string, args []any, _ int) error {
			_, err := db.Statement.ConnPool.ExecContext(ctx, s.native(query), args...)
			return err
		})
	}
	return s.write(ctx, insertWrite(s, table, columns, rows))
}

// insertStatement is the multi-row INSERT (verb) of rows into table.
func insertStatement(verb, table string, columns []string, rows [][]any) (string, []any) {
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", len(columns)), ",") + ")"
	var q strings.Builder
	q.WriteString(verb + " INTO `" + table + "` (`" + strings.Join(columns, "`,`") + "`) VALUES ")
	args := make([]any, 0, len(rows)*len(columns))
	for i, r := range rows {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString(one)
		args = append(args, r...)
	}
	return q.String(), args
}

// insertChunks runs the multi-row INSERTs of rows into table, at most
// batchSize rows each, through insert (which runs one and reads what it
// needs of its result). More than one runs in a transaction of its own (a
// savepoint when nested), so that the rows are all or nothing.
func insertChunks(ctx context.Context, s *Store, table string, columns []string, rows [][]any, insert func(db *gorm.DB, query string, args []any, n int) error) error {
	if len(rows) == 0 {
		return nil
	}
	all := func(db *gorm.DB) error {
		for start := 0; start < len(rows); start += batchSize {
			chunk := rows[start:min(start+batchSize, len(rows))]
			query, args := insertStatement(s.statementVerb("INSERT", table), table, columns, chunk)
			if err := insert(db, query, args, len(chunk)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(rows) <= batchSize {
		return all(s.db)
	}
	return s.db.WithContext(ctx).Transaction(all)
}

// statementVerb is verb (INSERT or UPDATE) as a multi-row statement on
// table begins. Inside a SQLite transaction, a table that has no unique
// key besides its primary key, and whose primary keys the store assigns,
// takes verb OR FAIL: a multi-row statement with ABORT, the default, makes
// SQLite keep a statement journal, a copy of every page the statement
// changes, so that a constraint failure on a later row can undo the
// earlier ones. Such a failure here means a broken row (a NULL in a NOT
// NULL column), and the caller rolls back the transaction or savepoint on
// any error, as the engine does; OR FAIL leaves that undo to the
// rollback. Outside a transaction SQLite keeps no statement journal, and
// the statement stays all or nothing on its own.
func (s *Store) statementVerb(verb, table string) string {
	if s.dialect == store.DialectSQLite && failFastTables[table] && s.inTx() {
		return verb + " OR FAIL"
	}
	return verb
}

// failFastTables are the tables statementVerb may write with OR FAIL:
// the engine appends to them on every step, and they have no unique key
// a caller could expect to collide with (history and count delta IDs are
// generated; activity instance IDs are made by the engine's allocator,
// unique by construction; so are publication IDs, and their order keys
// by the instance's version fence).
var failFastTables = map[string]bool{tableHistory: true, tableActivityInstances: true, tableInstanceCountDeltas: true, tablePublications: true}

// requireTime rejects the zero time, which MySQL in strict mode refuses
// and SQLite would keep: a zero timestamp is a caller that forgot its
// clock.
func requireTime(what string, t time.Time) error {
	if t.IsZero() {
		return fmt.Errorf("gormstore: %s is the zero time", what)
	}
	return nil
}

// requireID refuses a row without the ID its caller must give it.
func requireID(what string, id int64) error {
	if id <= 0 {
		return fmt.Errorf("gormstore: %s: id %d, want the caller's positive id", what, id)
	}
	return nil
}

// DB returns the *gorm.DB the store works on: the pool, or within InTx the
// transaction, so that callers can hand the transaction to code that
// writes its own tables in it (the engine's applications).
func (s *Store) DB() *gorm.DB { return s.db }

// DBOf returns the *gorm.DB a store.Tx of this package works on, as DB
// does: the pool, or inside InTx the transaction. It is the way back from
// a store.Tx to gorm for code that only has the interface. A store.Tx of
// another implementation is an error. For a host's code in the
// transaction, use HostDB.
func DBOf(tx store.Tx) (*gorm.DB, error) {
	s, ok := tx.(*Store)
	if !ok || s == nil {
		return nil, fmt.Errorf("gormstore: %T is not a store of package gormstore", tx)
	}
	return s.db, nil
}

// HostDB returns the *gorm.DB of tx, with ctx, for a host's code that runs inside
// it (the engine hands its transaction to the host's applications and
// hooks through it). On a pipelined transaction the writes tx holds
// back are sent, in a round trip of their own, before the first statement
// of the host's code, and not at all when it sends none (an application
// that does not touch the database). When one of them fails, that
// statement fails with its error (store.ErrHeldWrite), and so does every
// later statement of the transaction and its commit: the engine's
// transaction cannot commit without its writes, whatever the host's code
// does with the error. A store.Tx of another implementation is an error.
func HostDB(ctx context.Context, tx store.Tx) (*gorm.DB, error) {
	db, err := DBOf(tx)
	if err != nil {
		return nil, err
	}
	host := db.WithContext(ctx) // a copy of the statement, whose pool may change
	if p, ok := db.Statement.ConnPool.(*pipeline); ok {
		host.Statement.ConnPool = &hostPool{p}
	}
	return host, nil
}
