package storage

import "context"

// ClaimSubmitted leases, for owner, the row one submit wrote: the row with
// id and the submit's token, still pending, due, neither leased nor held,
// and without an order key (a keyed row starts only through the claim's
// order gate). It returns the claimed row, or nil if that row is not
// claimable or not (or no longer, or not yet) the submit's: an id given up
// by a rolled-back transaction may be handed to another call's row (SQLite
// reuses the largest rowid), which this claim never takes.
func (s *Store) ClaimSubmitted(ctx context.Context, id int64, token []byte, owner string, now, leaseUntil Millis) (*Task, error) {
	n, err := s.exec(ctx, s.sql.ClaimSubmitted, owner, leaseUntil, now, id, token, now, now)
	if err != nil || n == 0 {
		return nil, err
	}
	t, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if t.LeaseOwner != owner || !t.State.Leased() {
		return nil, nil
	}
	return t, nil
}
