package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// go-workflows v1.2.0's MySQL backend picks the next workflow task with
//
//	SELECT ... FROM instances i INNER JOIN pending_events pe ON ...
//	WHERE ... LIMIT 1 FOR UPDATE OF i SKIP LOCKED
//
// MariaDB (10.6 and later have SKIP LOCKED) does not know the "OF i"
// clause and refuses the statement (error 1064), so no workflow task is
// ever picked and every instance waits forever. The fix used here leaves
// their code as it is: the connections of the go-workflows process go
// through a net.Conn that, in the one text-protocol query that has the
// clause, drops " OF i" before it goes out. Without "OF i" the row locks
// are taken on both joined rows (the instance and its pending events)
// rather than on the instance alone; SKIP LOCKED still makes concurrent
// pollers pass over an instance another one holds, and the lock lasts
// only for the short transaction that marks the instance locked.
// docs/benchmarks.md has the change we suggest upstream (EXISTS instead
// of the join, which locks the instance row alone).
//
// Under load go-workflows on MariaDB meets deadlocks (error 1213) between
// this poll and CompleteWorkflowTask; a task whose completion failed is
// taken again after the one-minute workflow lock timeout. A trial with
// the EXISTS form instead of dropping "OF i" deadlocked too (in
// "unlocking instance"), so they are not this rewrite's doing.
var (
	forUpdateOf = []byte("FOR UPDATE OF i SKIP LOCKED")
	forUpdate   = []byte("FOR UPDATE SKIP LOCKED")
)

// comQuery is the MySQL protocol's COM_QUERY command byte.
const comQuery = 0x03

var installOnce sync.Once

// installMariaDBFix routes this process's MySQL TCP connections through
// rewriteConn. It is installed only in the process that runs
// go-workflows on MariaDB (each measurement runs in its own process).
func installMariaDBFix() error {
	installOnce.Do(func() {
		mysqldriver.RegisterDialContext("tcp", func(ctx context.Context, addr string) (net.Conn, error) {
			d := net.Dialer{KeepAlive: 30 * time.Second}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return &rewriteConn{Conn: c}, nil
		})
	})
	return nil
}

// rewriteConn rewrites outgoing COM_QUERY packets (see forUpdateOf).
type rewriteConn struct {
	net.Conn
	rewrites int
}

// Write sends p, rewritten when it is one whole COM_QUERY packet that
// holds forUpdateOf. The driver writes a packet (4-byte header: 3-byte
// length, sequence number; then the command) in one call.
func (c *rewriteConn) Write(p []byte) (int, error) {
	if out, ok := rewritePacket(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		c.rewrites++
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// rewritePacket returns p with forUpdateOf replaced by forUpdate and its
// length header fixed, when p is a single COM_QUERY packet (sequence 0)
// that holds it.
func rewritePacket(p []byte) ([]byte, bool) {
	if len(p) < 5 || p[3] != 0 || p[4] != comQuery {
		return nil, false
	}
	n := int(p[0]) | int(p[1])<<8 | int(p[2])<<16
	if n != len(p)-4 || !bytes.Contains(p[5:], forUpdateOf) {
		return nil, false
	}
	body := bytes.ReplaceAll(p[4:], forUpdateOf, forUpdate)
	out := make([]byte, 4, 4+len(body))
	out[0], out[1], out[2], out[3] = byte(len(body)), byte(len(body)>>8), byte(len(body)>>16), 0
	return append(out, body...), true
}

// mariadbBytes is the data and index length of m's tables, after
// ANALYZE TABLE so that InnoDB's figures are fresh.
func mariadbBytes(ctx context.Context, m mysqlTarget) (int64, error) {
	db, err := sql.Open("mysql", m.goDSN())
	if err != nil {
		return 0, err
	}
	defer closeDB(db)
	rows, err := db.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", m.Database)
	if err != nil {
		return 0, err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return 0, errors.Join(err, rows.Close())
		}
		tables = append(tables, t)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, err
	}
	for _, t := range tables {
		if _, err := db.ExecContext(ctx, "ANALYZE TABLE `"+t+"`"); err != nil {
			return 0, err
		}
	}
	var total sql.NullInt64
	err = db.QueryRowContext(ctx, "SELECT SUM(data_length + index_length) FROM information_schema.tables WHERE table_schema = ?", m.Database).Scan(&total)
	return total.Int64, err
}

// closeDB closes an administrative connection pool; it wrote nothing
// that a failed close could lose.
func closeDB(db *sql.DB) { _ = db.Close() }

// createDatabase makes a fresh database for one run; dropDatabase drops it.
func createDatabase(ctx context.Context, m mysqlTarget) error {
	return adminExec(ctx, m, "CREATE DATABASE `"+m.Database+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
}

func dropDatabase(ctx context.Context, m mysqlTarget) error {
	return adminExec(ctx, m, "DROP DATABASE IF EXISTS `"+m.Database+"`")
}

func adminExec(ctx context.Context, m mysqlTarget, stmt string) error {
	admin := m
	admin.Database = ""
	db, err := sql.Open("mysql", admin.goDSN())
	if err != nil {
		return err
	}
	defer closeDB(db)
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// mariadbVersion is the server's version.
func mariadbVersion(ctx context.Context, m mysqlTarget) (string, error) {
	admin := m
	admin.Database = ""
	db, err := sql.Open("mysql", admin.goDSN())
	if err != nil {
		return "", err
	}
	defer closeDB(db)
	var v string
	err = db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v)
	return v, err
}
