package gormstore

// WithoutReturning makes s insert on MySQL as it does on a server without
// INSERT … RETURNING (MySQL 8), so that the tests run that path on MariaDB.
func WithoutReturning(s *Store) { s.returning = false }
