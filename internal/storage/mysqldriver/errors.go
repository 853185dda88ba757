package mysqldriver

import (
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/argo-retry/argo/internal/failover"
)

// Server error numbers argo reads.
const (
	errDeadlock        = 1213 // ER_LOCK_DEADLOCK, also Galera's certification failure
	errLockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT
	errGroupRollback   = 3101 // Group Replication rolled the transaction back
	errDuplicateKey    = 1062 // ER_DUP_ENTRY
	errDuplicateColumn = 1060 // ER_DUP_FIELDNAME
	errDuplicateIndex  = 1061 // ER_DUP_KEYNAME
	errTableDenied     = 1142 // ER_TABLEACCESS_DENIED_ERROR
	errDatabaseDenied  = 1044 // ER_DBACCESS_DENIED_ERROR
)

func serverError(err error) (*mysql.MySQLError, bool) {
	var me *mysql.MySQLError
	return me, errors.As(err, &me)
}

// IsRetryableLockError reports a deadlock (1213) or lock-wait timeout (1205).
func (d *Driver) IsRetryableLockError(err error) bool {
	me, ok := serverError(err)
	return ok && (me.Number == errDeadlock || me.Number == errLockWaitTimeout)
}

// IsSubmitLockError reports a refusal caused by concurrent locking, after
// which the whole transaction was rolled back and trying again is right:
// deadlock or Galera certification failure (1213), lock wait timeout
// (1205), Group Replication's rollback (3101).
func (d *Driver) IsSubmitLockError(err error) bool {
	me, ok := serverError(err)
	return ok && (me.Number == errDeadlock || me.Number == errLockWaitTimeout || me.Number == errGroupRollback)
}

// IsDataError reports a statement refused for the data it carries. MySQL
// and MariaDB (strict mode): 1406 data too long, 1366 incorrect string value
// (invalid UTF-8, or a character the column's charset lacks), 1300 invalid
// character string, 1292 and 1265 value truncated, 1264 and 1690 out of
// range, 1048 NULL in a NOT NULL column, 1364 no default value, 3140
// invalid JSON, 3819 (MySQL) and 4025 (MariaDB) CHECK constraint violated.
func (d *Driver) IsDataError(err error) bool {
	me, ok := serverError(err)
	if !ok {
		return false
	}
	switch me.Number {
	case 1406, 1366, 1300, 1292, 1265, 1264, 1690, 1048, 1364, 3140, 3819, 4025:
		return true
	}
	return false
}

// IsDuplicate reports a unique-key violation (1062).
func (d *Driver) IsDuplicate(err error) bool {
	me, ok := serverError(err)
	return ok && me.Number == errDuplicateKey
}

// IsDuplicateColumn reports an ADD COLUMN of a column that exists (1060),
// or an ADD KEY of an index that exists (1061): another process applied the
// same migration meanwhile (MySQL has no ADD COLUMN IF NOT EXISTS, nor ADD
// KEY IF NOT EXISTS).
func (d *Driver) IsDuplicateColumn(err error) bool {
	me, ok := serverError(err)
	return ok && (me.Number == errDuplicateColumn || me.Number == errDuplicateIndex)
}

// IsLastingRefusal reports any refusal by the server but lock conflicts
// and the server's passing states (too many connections, shutting down,
// connection killed, read-only during a failover, interrupted), and the
// driver's refusal of a packet over the DSN's maxAllowedPacket. A failure
// to connect is no refusal: the server may be back later.
func (d *Driver) IsLastingRefusal(err error) bool {
	if errors.Is(err, mysql.ErrPktTooLarge) {
		return true
	}
	if d.IsSubmitLockError(err) {
		return false
	}
	me, ok := serverError(err)
	if !ok {
		return false
	}
	switch me.Number {
	case 1040, 1053, 1152, 1184, 1290, 1317, 1836, 1927, 4031:
		return false
	}
	return true
}

// OutcomeKnown reports whether a failed write certainly changed nothing:
// the server refused it (an error packet, which means the statement, and
// an autocommit or failed COMMIT, rolled back), no connection could be
// opened to send it (a dial error, or a *failover.NoServerError: no listed
// server was up and writable, or one was but is replaced), or the driver
// refused a packet over the DSN's
// maxAllowedPacket before sending it (ErrPktTooLarge; a statement's long
// parameters sent before it are not executed). Everything else (network errors on an open
// connection, driver.ErrBadConn, context errors, io errors) may have come
// after the commit.
func (d *Driver) OutcomeKnown(err error) bool {
	if _, ok := serverError(err); ok || errors.Is(err, mysql.ErrPktTooLarge) {
		return true
	}
	var ns *failover.NoServerError
	if errors.As(err, &ns) {
		return true // no connection: nothing was sent
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial" // nothing was sent
}

// DescribeLockRefusal explains a lock refusal of an INSERT written into
// the caller's transaction, which argo cannot retry.
func (d *Driver) DescribeLockRefusal(err error) error {
	me, ok := serverError(err)
	if !ok {
		return err
	}
	switch me.Number {
	case errDeadlock, errGroupRollback:
		return fmt.Errorf("%w (the database rolled back your whole transaction: run it again from BEGIN)", err)
	case errLockWaitTimeout:
		return fmt.Errorf("%w (the INSERT was rolled back; your transaction is rolled back too if innodb_rollback_on_timeout is ON: run it again from BEGIN)", err)
	}
	return err
}

// GrantError explains a refusal for lack of a privilege (1142, a command
// denied on a table; 1044, access to the database denied) with the GRANT
// migrating (file not "") or the runtime (file "") needs.
func (d *Driver) GrantError(db *sql.DB, err error, file string) error {
	me, ok := serverError(err)
	if !ok || (me.Number != errTableDenied && me.Number != errDatabaseDenied) {
		return nil
	}
	grant := "SELECT"
	if file != "" {
		grant = "CREATE"
	}
	if cmd, _, found := strings.Cut(me.Message, " command denied"); found && me.Number == errTableDenied {
		grant = cmd
	}
	database, user := sessionAccount(db)
	if file != "" {
		return fmt.Errorf("argo: migrate %s: the MySQL user lacks the %s grant (%w): GRANT SELECT, INSERT, UPDATE, CREATE, ALTER, INDEX ON `%s`.* TO %s for migrating (docs/mysql.md), or have a DBA apply sql/mysql/*.up.sql in order and start without Config.AutoMigrate", file, grant, me, database, user)
	}
	return fmt.Errorf("argo: the MySQL user lacks the %s grant (%w): GRANT SELECT, INSERT, UPDATE, DELETE ON `%s`.* TO %s, what the runtime needs (docs/mysql.md)", grant, me, database, user)
}

// sessionAccount returns the session's database and account, quoted for
// a GRANT statement, or placeholders when they cannot be read.
func sessionAccount(db *sql.DB) (database, user string) {
	database, user = "<database>", "<user>"
	if db == nil {
		return database, user
	}
	var dbName, account sql.NullString
	if db.QueryRow("SELECT DATABASE(), CURRENT_USER()").Scan(&dbName, &account) == nil {
		if dbName.Valid {
			database = dbName.String
		}
		if i := strings.LastIndex(account.String, "@"); account.Valid && i > 0 {
			user = "'" + account.String[:i] + "'@'" + account.String[i+1:] + "'"
		}
	}
	return database, user
}
