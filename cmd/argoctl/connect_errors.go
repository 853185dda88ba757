package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/argo-retry/argo/runtime"
	"github.com/go-sql-driver/mysql"
)

// MySQL server errors a first connection can end with that are not a
// database out of reach.
const (
	mysqlUnknownDatabase    = 1049 // ER_BAD_DB_ERROR
	mysqlDatabaseAccessDeny = 1044 // ER_DBACCESS_DENIED_ERROR
)

// connectError says why argoctl's first connection to dsn failed, and what
// to do: a MySQL database the server lacks, or one the user may not use, is
// not a database out of reach. The wording follows the runtime's at Start.
func connectError(dsn string, err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		name := mysqlDatabaseName(dsn)
		switch me.Number {
		case mysqlUnknownDatabase:
			return fmt.Errorf("the database %s does not exist on the server (%s): %w: create it (CREATE DATABASE `%s` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin), then apply the schema with argoctl migrate (it creates argo's tables, not the database), or correct the database name in the DSN",
				name, runtime.RedactDSN(dsn), err, name)
		case mysqlDatabaseAccessDeny:
			return fmt.Errorf("the MySQL user may not use the database %s (%s): %w: GRANT SELECT, INSERT, UPDATE, DELETE ON `%s`.* TO the user (and CREATE, ALTER, INDEX for argoctl migrate; docs/mysql.md lists the grants)",
				name, runtime.RedactDSN(dsn), err, name)
		}
	}
	return fmt.Errorf("database unreachable (%s): %w", runtime.RedactDSN(dsn), err)
}

// mysqlDatabaseName is the database a "mysql:" DSN names, or "<database>"
// when it cannot be read (connectError is only called once runtime.OpenDB
// accepted the DSN).
func mysqlDatabaseName(dsn string) string {
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(strings.TrimPrefix(dsn, "mysql:"), "//"))
	if err != nil || cfg.DBName == "" {
		return "<database>"
	}
	return cfg.DBName
}
