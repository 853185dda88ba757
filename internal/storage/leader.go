package storage

import "context"

// TryLead makes holder the holder of the named role until expiresAt if it
// holds it already or the role is free or expired at now, and reports
// whether holder holds it.
func (s *Store) TryLead(ctx context.Context, name, holder string, now, expiresAt Millis) (bool, error) {
	n, err := s.exec(ctx, s.sql.TakeLeader,
		holder, expiresAt, name, holder, now)
	if err != nil {
		return false, err
	}
	if n > 0 {
		return true, nil
	}
	_, err = s.exec(ctx, s.sql.InsertLeader, name, holder, expiresAt)
	if err == nil {
		return true, nil
	}
	if s.d.IsDuplicate(err) {
		return false, nil
	}
	return false, err
}

// ReleaseLeader hands the named role over at once if holder holds it: the
// next instance to ask takes it without waiting for it to expire.
func (s *Store) ReleaseLeader(ctx context.Context, name, holder string) error {
	_, err := s.exec(ctx, s.sql.DeleteLeader, name, holder)
	return err
}
