package gormstore

// WithoutReturning makes s insert on MySQL as it does on a server without
// INSERT … RETURNING (MySQL 8), so that the tests run that path on MariaDB.
func WithoutReturning(s *Store) { s.returning = false }

// Settings says what New made of a pool: whether it has a SQLite write
// gate, runs MySQL sessions at READ COMMITTED, pipelines and returns
// insert ids.
func Settings(s *Store) [4]bool {
	return [4]bool{s.gate != nil, s.readCommitted, s.pipelined, s.returning}
}

// Translate is translate, for tests of the errors of a real server.
var Translate = translate

// PgText is (*Store).pgText on a Store of dialect.
func PgText(dialect, q string, numbered bool) string {
	return (&Store{dialect: dialect}).pgText(q, numbered)
}
