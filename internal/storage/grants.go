package storage

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// deniedGrant returns the privilege a MySQL error says the user lacks
// (1142, a command denied on a table; 1044, access to the database denied:
// orElse), the server's error, and the session's database and account for
// a GRANT statement; ok is false for any other error.
func deniedGrant(db *sql.DB, err error, orElse string) (grant string, me *mysql.MySQLError, database, user string, ok bool) {
	if !errors.As(err, &me) || (me.Number != 1142 && me.Number != 1044) {
		return "", nil, "", "", false
	}
	grant = orElse
	if cmd, _, found := strings.Cut(me.Message, " command denied"); found && me.Number == 1142 {
		grant = cmd
	}
	database, user = "<database>", "<user>"
	var d, u sql.NullString
	if db.QueryRow("SELECT DATABASE(), CURRENT_USER()").Scan(&d, &u) == nil {
		if d.Valid {
			database = d.String
		}
		if i := strings.LastIndex(u.String, "@"); u.Valid && i > 0 {
			user = "'" + u.String[:i] + "'@'" + u.String[i+1:] + "'"
		}
	}
	return grant, me, database, user, true
}

// migrateGrantError says which grant a migration statement lacked, and
// the GRANT that migrating needs, or returns nil for another error.
func migrateGrantError(db *sql.DB, file string, err error) error {
	grant, me, database, user, ok := deniedGrant(db, err, "CREATE")
	if !ok {
		return nil
	}
	return fmt.Errorf("argo: migrate %s: the MySQL user lacks the %s grant (%w): GRANT SELECT, INSERT, CREATE, ALTER, INDEX ON `%s`.* TO %s for migrating (docs/mysql.md), or have a DBA apply sql/mysql/*.up.sql in order and start without Config.AutoMigrate", file, grant, me, database, user)
}

// RuntimeGrantError says which grant the runtime lacked at start, and the
// GRANT it needs (not a SchemaError: the tables may well be there); any
// other error is returned as it is.
func RuntimeGrantError(db *sql.DB, err error) error {
	grant, me, database, user, ok := deniedGrant(db, err, "SELECT")
	if !ok {
		return err
	}
	return fmt.Errorf("argo: the MySQL user lacks the %s grant (%w): GRANT SELECT, INSERT, UPDATE, DELETE ON `%s`.* TO %s, what the runtime needs (docs/mysql.md)", grant, me, database, user)
}

// SQLiteHoldsNoTable reports whether the SQLite database of db has no table
// at all (a file that opening it created and nothing wrote to).
func SQLiteHoldsNoTable(db *sql.DB, path string) bool {
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM sqlite_master").Scan(&n); err != nil {
		fi, serr := os.Stat(path)
		return serr == nil && fi.Size() == 0
	}
	return n == 0
}
