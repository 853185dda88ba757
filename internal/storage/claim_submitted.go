package storage

import "context"

// ClaimSubmitted leases, for owner, the row one submit wrote: the row with
// id and the submit's token, still pending, due, neither leased nor held,
// and without an order key (a keyed row starts only through the claim's
// order gate). It returns the claimed row, or nil if that row is not
// claimable or not (or no longer, or not yet) the submit's: an id given up
// by a rolled-back transaction may be handed to another call's row (SQLite
// reuses the largest rowid), which this claim never takes.
//
// If the claim's outcome is unknown (its answer lost), or it took the row
// and the row could not be read back, the row may be leased to owner with
// no attempt to run: it returns a *ClaimUnknownError naming the row as the
// claim wrote it, which this Store remembers to give back
// (GiveBackPendingClaims), as for any claim whose outcome is unknown.
// shard is the row's shard_key as the submit wrote it (Task.ShardKey).
func (s *Store) ClaimSubmitted(ctx context.Context, id int64, shard int, token []byte, owner string, now, leaseUntil Millis) (*Task, error) {
	// The row as the submit wrote it: pending, no attempt yet.
	asSubmitted := []*Task{{ID: id, ShardKey: shard, State: StatePending}}
	leaseUntil = s.claimLease(leaseUntil) // claim_unknown.go
	n, err := s.exec(ctx, s.sql.ClaimSubmitted, owner, leaseUntil, now, id, shard, token, now, now)
	if err != nil {
		return nil, s.noteClaim(ClaimUnknown(s.d, err, owner, now, leaseUntil, asSubmitted))
	}
	if n == 0 {
		return nil, nil
	}
	t, err := s.getOnShard(ctx, id, shard)
	if err != nil { // taken, but not read back: nothing will run it
		taken := MaybeClaimed{ID: id, Shard: shard, From: StatePending, Owner: owner, LeaseUntil: leaseUntil, Modified: now}
		return nil, s.noteClaim(&ClaimUnknownError{Rows: []MaybeClaimed{taken}, Err: err})
	}
	if t.LeaseOwner != owner || !t.State.Leased() {
		return nil, nil
	}
	return t, nil
}
