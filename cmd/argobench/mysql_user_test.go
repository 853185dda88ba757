package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/go-sql-driver/mysql"
)

// argobench -dsn mysql:… runs with a user that has rights on its own
// database only (none on the mysql schema).
func TestBenchMySQLUserOfOneDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a benchmark workload on MySQL")
	}
	dsn := testdb.MySQLUser(t, testdb.MySQLDSN(t), "ALL PRIVILEGES")
	var out, log bytes.Buffer
	code := run([]string{"-dsn", dsn, "-scale", "0.001", "-runs", "1", "-only", "insert", "-workers", "2", "-submitters", "2", "-o", "json"}, &out, &log)
	if code != 0 {
		t.Fatalf("argobench exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), log.String())
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not a JSON report: %v\n%s", err, out.String())
	}
	if len(rep.Errors) > 0 || len(rep.Rows) == 0 {
		t.Fatalf("errors %v, %d rows", rep.Errors, len(rep.Rows))
	}
}

// A missing database is created by a user whose grant names it (and
// nothing else): through a connection without a database, not the mysql
// schema.
func TestBenchCreatesItsDatabase(t *testing.T) {
	dsn := testdb.MySQLUser(t, testdb.MySQLDSN(t), "ALL PRIVILEGES")
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql:"))
	if err != nil {
		t.Fatal(err)
	}
	root := rootDB(t)
	if _, err := root.Exec("DROP DATABASE `" + cfg.DBName + "`"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ensureMySQLDatabase(ctx, dsn); err != nil {
		t.Fatalf("creating the database as its own user: %v", err)
	}
	if err := ensureMySQLDatabase(ctx, dsn); err != nil {
		t.Fatalf("again, the database there: %v", err)
	}
	var n int
	if err := root.QueryRow("SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", cfg.DBName).Scan(&n); err != nil || n != 1 {
		t.Fatalf("database %s: %d, %v", cfg.DBName, n, err)
	}
}

// rootDB opens the test server as ARGO_TEST_MYSQL_DSN's user.
func rootDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", testdb.MySQLServerDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
