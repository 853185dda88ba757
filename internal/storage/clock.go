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
	var micros int64
	if err := s.db.QueryRowContext(ctx, s.sql.DatabaseTime).Scan(&micros); err != nil {
		return time.Time{}, err
	}
	return time.UnixMicro(micros), nil
}
