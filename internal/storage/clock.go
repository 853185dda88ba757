package storage

import (
	"context"
	"time"
)

// DatabaseTime returns the database server's current time. MySQL: UTC
// (no session time zone, so no ambiguous hour at a DST change), to the
// microsecond. SQLite: the operating system's clock (SQLite reads it to the
// millisecond).
func (s *Store) DatabaseTime(ctx context.Context) (time.Time, error) {
	q := "SELECT CAST(ROUND((julianday('now') - 2440587.5) * 86400000000.0) AS INTEGER)"
	if s.dialect == DialectMySQL {
		q = "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))"
	}
	var micros int64
	if err := s.db.QueryRowContext(ctx, q).Scan(&micros); err != nil {
		return time.Time{}, err
	}
	return time.UnixMicro(micros), nil
}
