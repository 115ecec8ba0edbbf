package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver of freshPostgres
	"gorm.io/gorm"

	"github.com/goxpdl/goxpdl/store/gormstore"
)

// The forms of a database name on the nodes' command line.
const (
	sqlitePrefix = gormstore.SQLiteScheme
	mysqlPrefix  = gormstore.MySQLScheme
)

// openDB opens "sqlite:PATH", "mysql://DSN" or "postgres://URL"
// (gormstore.OpenDSN).
func openDB(dsn string) (*gorm.DB, error) { return gormstore.OpenDSN(dsn) }

// closeDB closes db's pool; there is nothing to do about a failure.
func closeDB(db *gorm.DB) {
	if db == nil {
		return
	}
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}

// databases are the two databases of a run, as the nodes name them: the
// engine's, and the application-call journal's.
type databases struct {
	engine, journal string
	// about describes them for the report, without a password.
	about string
}

// prepareDatabases makes empty databases for the scenario: SQLite files
// in workDir, or a fresh MySQL or PostgreSQL database.
func prepareDatabases(ctx context.Context, cfg config, workDir string) (databases, error) {
	if cfg.scenario == scenarioSQLite {
		engineDB := filepath.Join(workDir, "engine.db")
		return databases{
			engine:  sqlitePrefix + engineDB,
			journal: sqlitePrefix + filepath.Join(workDir, "journal.db"),
			about:   "sqlite:" + engineDB,
		}, nil
	}
	if isPostgres(cfg.scenario) {
		u, err := freshPostgres(ctx, cfg.pg, cfg.scenario)
		if err != nil {
			return databases{}, err
		}
		return databases{engine: u, journal: u, about: gormstore.RedactDSN(u)}, nil
	}
	dsn, err := freshMySQL(ctx, strings.TrimPrefix(cfg.db, mysqlPrefix), cfg.scenario)
	if err != nil {
		return databases{}, err
	}
	return databases{engine: mysqlPrefix + dsn, journal: mysqlPrefix + dsn, about: gormstore.RedactDSN(mysqlPrefix + dsn)}, nil
}

// freshMySQL returns the DSN of an empty database for scenario: a new
// database named after the DSN's with "_ct_" and the scenario appended
// (dropped first when it exists), or, when the user may not create
// databases, the DSN's own database with its goxpdl_* and crash_* tables
// dropped.
func freshMySQL(ctx context.Context, dsn, scenario string) (string, error) {
	cfg, err := gormstore.ParseMySQLDSN(dsn)
	if err != nil {
		return "", err
	}
	base := cfg.DBName
	if base == "" {
		base = "goxpdl"
	}
	name := base + "_ct_" + strings.ReplaceAll(scenario, "-", "_")
	server := cfg.Clone()
	server.DBName = ""
	conn, err := sql.Open("mysql", server.FormatDSN())
	if err != nil {
		return "", fmt.Errorf("mysql %s: %w", cfg.Addr, err)
	}
	defer func() { _ = conn.Close() }()
	_, err = conn.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
	if err == nil {
		_, err = conn.ExecContext(ctx, "CREATE DATABASE `"+name+"`")
	}
	if err == nil {
		cfg.DBName = name
		return cfg.FormatDSN(), nil
	}
	var myErr *mysql.MySQLError
	if !errors.As(err, &myErr) || (myErr.Number != 1044 && myErr.Number != 1045) { // access denied
		return "", fmt.Errorf("mysql %s: create database %s: %w", cfg.Addr, name, err)
	}
	if cfg.DBName == "" {
		return "", fmt.Errorf("mysql %s: may not create database %s, and the DSN names none to use instead: %w", cfg.Addr, name, err)
	}
	if err := dropTables(ctx, dsn); err != nil {
		return "", err
	}
	return dsn, nil
}

// dropTables drops the goxpdl_* and crash_* tables of dsn's database.
func dropTables(ctx context.Context, dsn string) error {
	conn, err := sql.Open("mysql", dsn)
	if err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	defer func() { _ = conn.Close() }()
	rows, err := conn.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = DATABASE() AND (table_name LIKE 'goxpdl\_%' OR table_name LIKE 'crash\_%')`)
	if err != nil {
		return fmt.Errorf("mysql: list tables: %w", err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			_ = rows.Close()
			return fmt.Errorf("mysql: list tables: %w", err)
		}
		tables = append(tables, "`"+t+"`")
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("mysql: list tables: %w", err)
	}
	if len(tables) == 0 {
		return nil
	}
	if _, err := conn.ExecContext(ctx, "DROP TABLE "+strings.Join(tables, ", ")); err != nil {
		return fmt.Errorf("mysql: drop %s: %w", strings.Join(tables, ", "), err)
	}
	return nil
}

// freshPostgres returns the URL of an empty database for scenario: a new
// database on the server pg names, called after pg's database with
// "_ct_" and the scenario appended (dropped first when it exists).
func freshPostgres(ctx context.Context, pg, scenario string) (string, error) {
	u, err := url.Parse(pg)
	if err != nil || !strings.HasPrefix(pg, gormstore.PostgresScheme) && !strings.HasPrefix(pg, gormstore.PostgresqlScheme) {
		return "", fmt.Errorf("-pg %s: not a postgres:// URL", gormstore.RedactDSN(pg))
	}
	base := strings.TrimPrefix(u.Path, "/")
	if base == "" {
		base = "goxpdl"
	}
	name := base + "_ct_" + strings.ReplaceAll(scenario, "-", "_")
	conn, err := sql.Open("pgx", pg)
	if err != nil {
		return "", fmt.Errorf("postgres %s: %w", u.Host, err)
	}
	defer func() { _ = conn.Close() }()
	for _, stmt := range []string{
		`DROP DATABASE IF EXISTS "` + name + `" WITH (FORCE)`,
		`CREATE DATABASE "` + name + `" TEMPLATE template0 ENCODING 'UTF8'`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return "", fmt.Errorf("postgres %s: %s: %w", u.Host, stmt, err)
		}
	}
	u.Path = "/" + name
	return u.String(), nil
}
