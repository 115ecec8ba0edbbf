package gormstore

// Settings says what New made of a pool: whether it has a SQLite write
// gate, runs MySQL sessions at READ COMMITTED and pipelines.
func Settings(s *Store) [3]bool {
	return [3]bool{s.gate != nil, s.readCommitted, s.pipelined}
}

// Translate is translate, for tests of the errors of a real server.
var Translate = translate

// PgText is (*Store).pgText on a Store of dialect.
func PgText(dialect, q string, numbered bool) string {
	return (&Store{dialect: dialect}).pgText(q, numbered)
}
