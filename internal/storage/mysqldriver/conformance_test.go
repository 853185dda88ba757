package mysqldriver_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/storage/mysqldriver"
	"github.com/argo-retry/argo/internal/storage/storagetest"
	"github.com/argo-retry/argo/internal/testdb"
)

// TestConformance runs the storage conformance suite on MariaDB (strict
// mode) on both write paths: the one-trip path (batches of writes, the
// claim's takes and held starts as one multi-statement query each) and the
// transaction path (statement by statement; the claim takes its candidates
// row by row); and, when one is there, on the Galera cluster on the
// transaction path, the only one used there (galera.go).
func TestConformance(t *testing.T) {
	for _, b := range testdb.ConformanceBackends(t) {
		if b.Name == "sqlite" {
			continue // the sqlitedriver package runs it there
		}
		for _, onetrip := range []bool{true, false} {
			if onetrip && b.Name == "galera" {
				continue // no one-trip path there (galera.go, TestOneTripNotOnGalera)
			}
			path := "onetrip"
			if !onetrip {
				path = "transaction"
			}
			t.Run(b.Name+"/"+path, func(t *testing.T) {
				storagetest.Run(t, storagetest.Engine{
					Open:                   func(t *testing.T) *storage.Store { return openStore(t, b.FreshDSN(t), onetrip) },
					RefusesOversizedValues: true,
					LimitErrorTexts:        limitErrorTexts,
					NarrowErrorTextCharset: narrowErrorTextCharset,
				})
			})
		}
	}
}

// openStore opens a Store on the "mysql:" database dsn, migrated (twice:
// migrations are idempotent), with the handle settings argo's OpenDB uses
// (arguments interpolated client-side) and, if onetrip, the one-trip path's
// multi-statement pool.
func openStore(t *testing.T, dsn string, onetrip bool) *storage.Store {
	t.Helper()
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql:"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.InterpolateParams = true
	db := openPool(t, cfg, 64)
	ctx := context.Background()
	for range 2 {
		if _, err := storage.Migrate(ctx, db, mysqldriver.Name); err != nil {
			t.Fatal(err)
		}
	}
	var opts storage.Options
	if onetrip {
		opts.OpenMultiStatement = func() *sql.DB {
			multi := cfg.Clone()
			multi.MultiStatements = true
			return openPool(t, multi, 16)
		}
	}
	s := storage.New(db, mysqldriver.Name, opts)
	t.Cleanup(s.Close)
	if want := onetrip && !onGalera(t, db); s.OnetripInUse() != want {
		t.Fatalf("one-trip path in use: %v, want %v (offered: %v; never on Galera)", s.OnetripInUse(), want, onetrip)
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// openPool opens a pool of at most max connections on cfg, closed when t ends.
func openPool(t *testing.T, cfg *mysql.Config, max int) *sql.DB {
	t.Helper()
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(max)
	db.SetMaxIdleConns(max)
	t.Cleanup(func() { db.Close() })
	return db
}

// errorTextColumns are argo's error-text columns, by table.
var errorTextColumns = map[string][]string{
	"argo_task":         {"error_msg", "fallback_error_msg"},
	"argo_task_attempt": {"error_msg"},
}

// alterErrorTexts gives every error-text column the type typ.
func alterErrorTexts(t *testing.T, s *storage.Store, typ string) {
	t.Helper()
	for table, cols := range errorTextColumns {
		var mods []string
		for _, c := range cols {
			mods = append(mods, "MODIFY "+c+" "+typ+" NOT NULL")
		}
		if _, err := s.DB().Exec("ALTER TABLE " + table + " " + strings.Join(mods, ", ")); err != nil {
			t.Fatal(err)
		}
	}
}

// limitErrorTexts makes the error-text columns VARCHAR(maxChars): strict
// mode refuses a longer text (1406).
func limitErrorTexts(t *testing.T, s *storage.Store, maxChars int) {
	alterErrorTexts(t, s, fmt.Sprintf("VARCHAR(%d)", maxChars))
}

// narrowErrorTextCharset makes the error-text columns utf8mb3, which has no
// 4-byte characters: strict mode refuses one (1366).
func narrowErrorTextCharset(t *testing.T, s *storage.Store) {
	alterErrorTexts(t, s, "TEXT CHARACTER SET utf8mb3")
}

// onGalera reports whether db's server is a Galera node (wsrep_on = ON).
func onGalera(t *testing.T, db *sql.DB) bool {
	t.Helper()
	var name, value string
	err := db.QueryRow("SHOW VARIABLES LIKE 'wsrep_on'").Scan(&name, &value)
	if err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	return value == "ON"
}
