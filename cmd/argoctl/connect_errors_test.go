package main

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/go-sql-driver/mysql"
)

// TestUnknownDatabase: a DSN naming a database the MySQL server lacks
// (error 1049) is not reported as a database out of reach: argoctl says the
// database does not exist, how to create it, and that migrate creates
// tables, not databases; migrate itself creates nothing.
func TestUnknownDatabase(t *testing.T) {
	cfg, err := mysql.ParseDSN(testdb.MySQLServerDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 6)
	rand.Read(suffix)
	cfg.DBName = "argo_missing_" + hex.EncodeToString(suffix)
	dsn := "mysql:" + cfg.FormatDSN()
	for _, args := range [][]string{{"stats"}, {"list"}, {"show", "1"}, {"migrate"}} {
		_, errOut, _ := ctl(t, dsn, args...)
		failCtl(t, dsn, 1, "the database "+cfg.DBName+" does not exist on the server", args...)
		for _, want := range []string{
			"Unknown database",
			"CREATE DATABASE `" + cfg.DBName + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
			"argoctl migrate (it creates argo's tables, not the database)",
			"correct the database name in the DSN",
		} {
			if !strings.Contains(errOut, want) {
				t.Errorf("argoctl %s: stderr %q lacks %q", strings.Join(args, " "), errOut, want)
			}
		}
		if strings.Contains(errOut, "unreachable") || strings.Contains(errOut, "cannot reach") {
			t.Errorf("argoctl %s calls a missing database out of reach: %q", strings.Join(args, " "), errOut)
		}
	}
	// migrate did not create the database: the same error again.
	failCtl(t, dsn, 1, "does not exist on the server", "stats")
}

// TestDatabaseAccessDenied: a user with no right on the database (error
// 1044) is told which GRANT it needs, not that the database is out of reach.
func TestDatabaseAccessDenied(t *testing.T) {
	dsn := testdb.MySQLUser(t, testdb.MySQLDSN(t), "")
	name := mysqlDatabaseName(dsn)
	for _, args := range [][]string{{"stats"}, {"migrate"}} {
		failCtl(t, dsn, 1, "the MySQL user may not use the database "+name, args...)
		failCtl(t, dsn, 1, "GRANT SELECT, INSERT, UPDATE, DELETE ON `"+name+"`.* TO the user", args...)
	}
}
