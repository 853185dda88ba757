package storage

import "context"

// DeadHold is the retries one gone instance still holds: how many, and when
// the last of its holds runs out.
type DeadHold struct {
	Owner string `db:"lease_owner"`
	Tasks int    `db:"tasks"`
	Until Millis `db:"until_ms"`
}

// DeadHolds returns, per owner, the held retries (retrying, leased, the
// hold not run out at now) of instances that have not heartbeated since
// cutoff. self counts as gone: at Start, a hold of self is one of a previous
// run of this instance, which nothing starts before it runs out. Sorted by
// owner.
//
// Bounded: the range (retrying, lease_until > now) of idx_lease holds
// only live holds, at most 10,000 per instance that held them within the
// last RetryHold + LeaseDuration, and the result has one row per such
// instance.
func (s *Store) DeadHolds(ctx context.Context, self string, cutoff, now Millis) ([]DeadHold, error) {
	var rows []DeadHold
	err := s.db.SelectContext(ctx, &rows, s.sql.DeadHolds, now, cutoff, self)
	return rows, err
}
