package sqlitedriver

import (
	"database/sql"
	"errors"
	"strings"

	"modernc.org/sqlite"
)

// SQLite primary result codes argo reads.
const (
	codeBusy      = 5 // SQLITE_BUSY
	codeLocked    = 6 // SQLITE_LOCKED
	codeInterrupt = 9 // SQLITE_INTERRUPT: a canceled context
)

func primaryCode(err error) (int, bool) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return 0, false
	}
	return se.Code() & 0xff, true
}

// IsRetryableLockError returns false: writers queue on the write lock and
// busy_timeout; a transaction is never rolled back for a lock conflict.
func (d *Driver) IsRetryableLockError(error) bool { return false }

// IsSubmitLockError reports SQLite busy or locked.
func (d *Driver) IsSubmitLockError(err error) bool {
	code, ok := primaryCode(err)
	return ok && (code == codeBusy || code == codeLocked)
}

// IsDataError reports a NOT NULL or CHECK constraint, or a text over
// SQLite's size limit.
func (d *Driver) IsDataError(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "NOT NULL constraint failed") || strings.Contains(msg, "CHECK constraint failed") || strings.Contains(msg, "string or blob too big")
}

// IsDuplicate reports a unique-key violation.
func (d *Driver) IsDuplicate(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// IsDuplicateColumn reports an ADD COLUMN of a column that exists.
func (d *Driver) IsDuplicateColumn(err error) bool {
	return err != nil && strings.Contains(err.Error(), "duplicate column name")
}

// IsLastingRefusal reports any SQLite error but busy, locked and an
// interrupt.
func (d *Driver) IsLastingRefusal(err error) bool {
	if d.IsSubmitLockError(err) {
		return false
	}
	code, ok := primaryCode(err)
	return ok && code != codeInterrupt
}

// OutcomeKnown reports an error from SQLite other than an interrupt: the
// statement, and its transaction if autocommit, did not happen.
func (d *Driver) OutcomeKnown(err error) bool {
	code, ok := primaryCode(err)
	return ok && code != codeInterrupt
}

// DescribeLockRefusal returns err: SQLite refuses no INSERT for locks in a
// way that changes the caller's transaction.
func (d *Driver) DescribeLockRefusal(err error) error { return err }

// GrantError returns nil: SQLite has no privileges.
func (d *Driver) GrantError(*sql.DB, error, string) error { return nil }
