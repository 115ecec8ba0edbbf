package gormstore

import (
	"database/sql"
	"strings"

	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store"
)

// isolationParams are the session variables a go-sql-driver DSN may set
// to choose the transaction isolation of every connection: MySQL 8 and
// MariaDB 11.1 know transaction_isolation, MariaDB before 11.1 only
// tx_isolation.
var isolationParams = []string{"transaction_isolation", "tx_isolation"}

// readCommittedSessions reports whether every connection of db's pool
// runs at READ COMMITTED already because its DSN says so (the driver sets
// DSN parameters on each new connection). The store then begins its
// transactions without SET TRANSACTION ISOLATION LEVEL, one round trip
// less per transaction. A pool whose sessions get READ COMMITTED some
// other way (the server's global default) is not recognised and keeps the
// per-transaction statement, which is correct, only slower.
func readCommittedSessions(db *gorm.DB) bool {
	d, ok := db.Dialector.(*gormmysql.Dialector)
	if !ok || d.Config == nil || d.DSNConfig == nil {
		return false
	}
	for _, name := range isolationParams {
		if v, ok := d.DSNConfig.Params[name]; ok && isReadCommitted(v) {
			return true
		}
	}
	return false
}

// isReadCommitted reports whether v, the value of a DSN's isolation
// parameter, names READ COMMITTED: 'READ-COMMITTED' with or without
// quotes, in any case.
func isReadCommitted(v string) bool {
	v = strings.Trim(strings.TrimSpace(v), `'"`)
	return strings.EqualFold(strings.ReplaceAll(v, " ", "-"), "READ-COMMITTED")
}

// txOptions are the options of a transaction the store begins over a
// pool: on MySQL READ COMMITTED (see InTx), unless the sessions run at it
// already; on PostgreSQL READ COMMITTED, which costs nothing (BEGIN says
// it).
func (s *Store) txOptions() []*sql.TxOptions {
	if s.dialect == store.DialectPostgres {
		return pgTxOptions
	}
	if s.dialect != store.DialectMySQL || s.readCommitted {
		return nil
	}
	return []*sql.TxOptions{{Isolation: sql.LevelReadCommitted}}
}

// pipelinedSessions reports whether db is a MySQL pool whose DSN lets a
// statement text hold several statements (multiStatements) with their
// arguments written into the text by the driver (interpolateParams), as
// a pipeline's batches need (pipeline.go).
func pipelinedSessions(db *gorm.DB) bool {
	d, ok := db.Dialector.(*gormmysql.Dialector)
	if !ok || d.Config == nil {
		return false
	}
	cfg := d.DSNConfig
	if cfg == nil {
		var err error
		if cfg, err = mysql.ParseDSN(d.DSN); err != nil {
			return false
		}
	}
	return cfg.MultiStatements && cfg.InterpolateParams
}
