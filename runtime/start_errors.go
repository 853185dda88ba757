package runtime

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/argo-retry/argo/internal/storage/sqlitedriver"
	"github.com/go-sql-driver/mysql"
)

// sqliteFile returns the file a "sqlite:" DSN names, without its
// parameters; "" for another DSN or an in-memory database.
func sqliteFile(dsn string) string {
	if !strings.HasPrefix(dsn, "sqlite:") {
		return ""
	}
	path, params, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "//"), "?")
	if path == ":memory:" || strings.Contains(params, "mode=memory") {
		return ""
	}
	return path
}

// checkSQLiteDir fails, naming the directory and the reason, when the
// directory of a SQLite file does not exist or is not a directory: SQLite
// would only say "unable to open database file".
func checkSQLiteDir(dsn, path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err == nil && fi.IsDir() {
		return nil
	}
	if err == nil {
		return fmt.Errorf("argo: DSN %q: %s is a file, not a directory: name a file in an existing directory, such as sqlite:%s", dsn, dir, filepath.Join(filepath.Dir(dir), "argo.db"))
	}
	reason := err.Error()
	var pe *os.PathError
	if errors.As(err, &pe) {
		reason = pe.Err.Error()
	}
	return fmt.Errorf("argo: DSN %q: the SQLite file's directory %s cannot be used (%s): create it (mkdir -p %s) or name a file in an existing directory", dsn, dir, reason, dir)
}

// newSQLiteFile returns the file of a "sqlite:" DSN when it does not exist
// yet (opening it will create it), else "".
func newSQLiteFile(dsn string) string {
	path := sqliteFile(dsn)
	if path == "" {
		return ""
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		return ""
	}
	return path
}

// closeRefused closes the handle of a refused Start and, when opening it
// created the SQLite file created (not "") and the file still holds no table
// (none written meanwhile, as by a migrate in another process), removes it:
// a refused start leaves no empty database file behind.
func closeRefused(db *sql.DB, created string) {
	empty := created != "" && sqlitedriver.HoldsNoTable(db, created)
	db.Close()
	if empty {
		removeSQLiteFile(created)
	}
}

// removeSQLiteFile removes a SQLite file that a refused Start created, with
// the write-ahead log and shared-memory files SQLite keeps beside it.
func removeSQLiteFile(path string) {
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		_ = os.Remove(p)
	}
}

// startPingError says why the first connection at Start failed, and what to
// do: a missing MySQL database or a user without rights on it is not a
// database out of reach, and a SQLite file that cannot be opened is named.
func startPingError(db *sql.DB, dsn string, err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		name := "<database>"
		if h := mysqlHandleOf(db); h != nil && h.cfg.DBName != "" {
			name = h.cfg.DBName
		}
		switch me.Number {
		case 1049: // ER_BAD_DB_ERROR
			return fmt.Errorf("argo: the database does not exist on the server (%w): create it (CREATE DATABASE `%s` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin), then apply the schema (`argoctl migrate -dsn ...`, or Config.AutoMigrate), or correct the database name in the DSN", err, name)
		case 1044: // ER_DBACCESS_DENIED_ERROR
			return fmt.Errorf("argo: the MySQL user may not use the database (%w): GRANT SELECT, INSERT, UPDATE, DELETE ON `%s`.* TO the user (docs/mysql.md lists the grants)", err, name)
		}
	}
	if path := sqliteFile(dsn); path != "" {
		return fmt.Errorf("argo: cannot open the SQLite file %s (%w): it must be a file (not a directory) this process may read and write, in a directory it may write", path, err)
	}
	return fmt.Errorf("argo: cannot reach the database: %w", err)
}
