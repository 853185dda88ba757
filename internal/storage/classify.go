package storage

import "database/sql"

// The error classifiers a caller without a Store asks: each asks every
// registered engine, which recognises only its own errors. A Store asks its
// own driver (Driver documents each class).

// IsRetryableLockError reports a transaction rolled back for a lock
// conflict (Driver.IsRetryableLockError).
func IsRetryableLockError(err error) bool {
	return err != nil && eachDriver(func(d Driver) bool { return d.IsRetryableLockError(err) })
}

// IsSubmitLockError reports a submit refused for concurrency
// (Driver.IsSubmitLockError).
func IsSubmitLockError(err error) bool {
	return err != nil && eachDriver(func(d Driver) bool { return d.IsSubmitLockError(err) })
}

// IsDataError reports a statement refused for the data it carries
// (Driver.IsDataError).
func IsDataError(err error) bool {
	return err != nil && eachDriver(func(d Driver) bool { return d.IsDataError(err) })
}

// IsDuplicate reports a unique-key violation (Driver.IsDuplicate).
func IsDuplicate(err error) bool {
	return err != nil && eachDriver(func(d Driver) bool { return d.IsDuplicate(err) })
}

// IsLastingRefusal reports a refusal the same statement meets every time
// (Driver.IsLastingRefusal).
func IsLastingRefusal(err error) bool {
	return err != nil && (isRowTooLarge(err) || eachDriver(func(d Driver) bool { return d.IsLastingRefusal(err) }))
}

// OutcomeKnown reports whether a failed write certainly changed nothing
// (Driver.OutcomeKnown).
func OutcomeKnown(err error) bool {
	return err != nil && (isRowTooLarge(err) || eachDriver(func(d Driver) bool { return d.OutcomeKnown(err) }))
}

// DescribeLockRefusal explains a lock refusal of an INSERT written into the
// caller's transaction (Driver.DescribeLockRefusal).
func DescribeLockRefusal(err error) error {
	driversMu.RLock()
	defer driversMu.RUnlock()
	for _, d := range classifiers {
		if described := d.DescribeLockRefusal(err); described != err {
			return described
		}
	}
	return err
}

// RuntimeGrantError says which grant the runtime lacked at start, and the
// GRANT it needs; any other error is returned as it is (Driver.GrantError).
func RuntimeGrantError(db *sql.DB, err error) error {
	driversMu.RLock()
	defer driversMu.RUnlock()
	for _, d := range classifiers {
		if gerr := d.GrantError(db, err, ""); gerr != nil {
			return gerr
		}
	}
	return err
}

// OutcomeKnown reports whether a failed write certainly changed nothing on
// the Store's engine (Driver.OutcomeKnown; a row refused as too large
// before it was sent, RowTooLargeError, changed nothing either).
func (s *Store) OutcomeKnown(err error) bool { return isRowTooLarge(err) || s.d.OutcomeKnown(err) }
