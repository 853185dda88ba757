// Package testdb gives tests real databases: a fresh SQLite file per test, and
// a fresh MariaDB/MySQL database per test on the server named by
// ARGO_TEST_MYSQL_DSN.
//
// ARGO_TEST_MYSQL_DSN is a go-sql-driver DSN without a database name, such as
// "root:pw@tcp(127.0.0.1:3306)/"; its user needs CREATE DATABASE rights.
// `make test` starts a throwaway MariaDB server and sets it. When it is unset,
// MySQL tests are skipped, except under CI (CI set), where they fail.
//
// The 3-node Galera cluster `make test` also starts (scripts/galera.sh) is
// reached through ARGO_TEST_GALERA_DSNS and friends (galera.go): a fresh
// database on it, each node's DSN, a node killed and brought back, the
// cluster's conflict counters. It is treated like the MySQL server when
// missing.
//
// DSNs returned here carry a driver prefix: "sqlite:PATH" or "mysql:DSN".
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// EnvMySQLDSN names the environment variable holding the server DSN.
const EnvMySQLDSN = "ARGO_TEST_MYSQL_DSN"

const missingHint = EnvMySQLDSN + " is not set: run the tests with `make test`, " +
	"which starts a throwaway MariaDB server, or point them at a server of your own " +
	"(its user needs CREATE DATABASE): " +
	EnvMySQLDSN + "='user:pw@tcp(127.0.0.1:3306)/' go test ./..."

// SQLiteDSN returns "sqlite:" and the path of a not yet existing database file
// in a temporary directory that is removed when the test ends.
func SQLiteDSN(t testing.TB) string {
	t.Helper()
	return "sqlite:" + filepath.Join(t.TempDir(), "argo.db")
}

// MySQLServerDSN returns the raw server DSN from ARGO_TEST_MYSQL_DSN (no
// prefix, no database). If it is unset the test is skipped, or fails under CI.
func MySQLServerDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvMySQLDSN)
	if dsn == "" {
		skipOrFail(t, missingHint)
	}
	return dsn
}

// MySQLDSN creates an empty database named argo_t_<random> on the server from
// ARGO_TEST_MYSQL_DSN, drops it when the test ends, and returns "mysql:" and
// the server DSN with that database name (the server DSN's parameters are
// kept, and ids are handed out in steps: see IDStep). If ARGO_TEST_MYSQL_DSN is unset the test is skipped, or fails under
// CI.
func MySQLDSN(t testing.TB) string {
	t.Helper()
	return newDatabase(t, MySQLServerDSN(t))
}

// Backend is one database a table-driven suite runs against.
type Backend struct {
	Name string // "sqlite", "mysql" or "galera" (ConformanceBackends only)
	DSN  string // with its driver prefix, as from SQLiteDSN or MySQLDSN
}

// Backends returns a fresh SQLite database and, when ARGO_TEST_MYSQL_DSN is
// set, a fresh MySQL database, both dropped when t ends. Without the server
// the MySQL entry is left out (and noted in the test log), or under CI the
// test fails. The databases are shared by everything that uses the returned
// DSNs; call Backends (or SQLiteDSN/MySQLDSN) inside each subtest for one per
// subtest.
func Backends(t *testing.T) []Backend {
	t.Helper()
	backends := []Backend{{Name: "sqlite", DSN: SQLiteDSN(t)}}
	if os.Getenv(EnvMySQLDSN) == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(missingHint)
		}
		t.Log("mysql backend left out: " + missingHint)
		return backends
	}
	return append(backends, Backend{Name: "mysql", DSN: MySQLDSN(t)})
}

func skipOrFail(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// adminDBs caches one connection pool per server DSN, used to create and
// drop the per-test databases.
var adminDBs sync.Map // server DSN -> *sql.DB

func adminDB(serverDSN string) (*sql.DB, *mysql.Config, error) {
	cfg, err := mysql.ParseDSN(serverDSN)
	if err != nil {
		return nil, nil, fmt.Errorf("parse %s: %w", EnvMySQLDSN, err)
	}
	if v, ok := adminDBs.Load(serverDSN); ok {
		return v.(*sql.DB), cfg, nil
	}
	admin := cfg.Clone()
	admin.DBName = ""
	db, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		return nil, nil, err
	}
	// Idle connections would go stale when a test restarts the server.
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(5 * time.Second)
	if v, loaded := adminDBs.LoadOrStore(serverDSN, db); loaded {
		db.Close()
		return v.(*sql.DB), cfg, nil
	}
	return db, cfg, nil
}

// newDatabase creates a fresh database on the server and returns its
// "mysql:" DSN, handing out ids in steps (see IDStep); the database is
// dropped when t ends.
func newDatabase(t testing.TB, serverDSN string) string {
	t.Helper()
	cfg := createDatabase(t, serverDSN)
	steppedIDs(cfg)
	return "mysql:" + cfg.FormatDSN()
}

// createDatabase creates an empty database argo_t_<random> on the server,
// drops it when t ends, and returns the server DSN's config with that
// database name.
func createDatabase(t testing.TB, serverDSN string) *mysql.Config {
	t.Helper()
	db, cfg, err := adminDB(serverDSN)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var name string
	for attempt := 0; ; attempt++ {
		name = "argo_t_" + randomHex(5)
		_, err = db.ExecContext(ctx, "CREATE DATABASE `"+name+"`")
		var myErr *mysql.MySQLError
		if err == nil || attempt >= 3 || !errors.As(err, &myErr) || myErr.Number != 1007 { // 1007: database exists
			break
		}
	}
	if err != nil {
		t.Fatalf("testdb: create database on %s: %v", redact(cfg), err)
	}
	t.Cleanup(func() { dropDatabase(t, db, name) })

	cfg = cfg.Clone()
	cfg.DBName = name
	return cfg
}

// IDStep and IDOffset are how the MySQL databases from MySQLDSN and
// MySQLServer.DSN hand out auto-increment ids: offset, offset+step, … (2, 5,
// 8, …), as a Galera cluster of three nodes does (1, 4, 7 on one node). Set
// per connection (session variables auto_increment_increment and
// auto_increment_offset, through the DSN), so nothing changes for other users
// of the server. A test that assumes ids 1, 2, 3 fails on MySQL; take ids from
// what the code returned instead.
const (
	IDStep   = 3
	IDOffset = 2
)

// steppedIDs adds the session variables of IDStep and IDOffset to cfg, unless
// the server DSN already sets them.
func steppedIDs(cfg *mysql.Config) {
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	if _, set := cfg.Params["auto_increment_increment"]; !set {
		cfg.Params["auto_increment_increment"] = strconv.Itoa(IDStep)
	}
	if _, set := cfg.Params["auto_increment_offset"]; !set {
		cfg.Params["auto_increment_offset"] = strconv.Itoa(IDOffset)
	}
}

// dropDatabase drops name, retrying for a while (a test may have just
// restarted the server). A failure is logged, not fatal: the test's own
// result matters more than a leftover database.
func dropDatabase(t testing.TB, db *sql.DB, name string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("testdb: could not drop database %s: %v", name, err)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// redact formats cfg without its password, for error messages.
func redact(cfg *mysql.Config) string {
	c := cfg.Clone()
	if c.Passwd != "" {
		c.Passwd = "xxx"
	}
	return c.FormatDSN()
}
