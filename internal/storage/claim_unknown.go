package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Claims whose outcome is unknown. A claim takes rows in a transaction; if
// the answer to its COMMIT is lost (the connection dropped, the context
// ended mid-commit), the rows may be taken (running under this owner, one
// more attempt counted) although no attempt will start: left alone, their
// lease runs out and the rescuer charges a lease_expired attempt that
// never ran (a task with no retry left ends dead without running). Such a
// claim returns a *ClaimUnknownError naming the rows it may have taken,
// exactly as it would have written them; the claiming instance gives them
// back (GiveBackUnclaimed) as soon as the database answers again, undoing
// the attempt as a give-back at Stop does. The give-back is fenced on the
// row exactly as the claim wrote it (state, owner, attempt count, lease
// end and modification time, all of which the claim set): a row the claim
// did not take, or that anything wrote since, is left alone.

// MaybeClaimed is a row a claim whose outcome is unknown may have taken:
// as read before the claim (From, Attempt) and as the claim would have
// written it.
type MaybeClaimed struct {
	ID         int64
	Shard      int    // the row's shard_key
	From       State  // the row's state as read: pending, retrying or exhausted
	Attempt    int    // execute_times as read
	Owner      string // the claim's owner
	LeaseUntil Millis // the claim's lease end
	Modified   Millis // the claim's time (gmt_modified)
}

// claimed is the state and attempt count the claim writes.
func (m MaybeClaimed) claimed() (State, int) {
	if m.From == StateExhausted {
		return StateFallingBack, m.Attempt
	}
	return StateRunning, m.Attempt + 1
}

// ClaimUnknownError is a claim whose outcome is unknown: Rows are the rows
// it may have taken (none of them is returned as claimed), Err the failure.
type ClaimUnknownError struct {
	Rows []MaybeClaimed
	Err  error
}

func (e *ClaimUnknownError) Error() string {
	return fmt.Sprintf("argo: a claim of %d rows may have committed, its answer was lost (they are given back once the database answers): %v", len(e.Rows), e.Err)
}

func (e *ClaimUnknownError) Unwrap() error { return e.Err }

// ClaimUnknown returns err as a *ClaimUnknownError for cands (candidates
// as read, taken by owner at now until leaseUntil) when d cannot tell that
// it changed nothing, else err itself. A nil err stays nil.
func ClaimUnknown(d Driver, err error, owner string, now, leaseUntil Millis, cands []*Task) error {
	var cu *ClaimUnknownError
	if err == nil || errors.As(err, &cu) || d.OutcomeKnown(err) || len(cands) == 0 {
		return err
	}
	rows := make([]MaybeClaimed, len(cands))
	for i, t := range cands {
		rows[i] = MaybeClaimed{ID: t.ID, Shard: t.ShardKey, From: t.State, Attempt: t.ExecuteTimes, Owner: owner, LeaseUntil: leaseUntil, Modified: now}
	}
	return &ClaimUnknownError{Rows: rows, Err: err}
}

// giveBackUnclaimed is the fenced UPDATE of GiveBackUnclaimed: it puts a
// row back as it was before the claim (its state and attempt count), not
// leased, only while it is exactly as the claim wrote it.
const giveBackUnclaimed = "UPDATE argo_task SET task_status = ?, execute_times = ?, lease_owner = '', lease_until = 0, gmt_modified = ?" +
	" WHERE id = ? AND shard_key = ? AND task_status = ? AND lease_owner = ? AND execute_times = ? AND lease_until = ? AND gmt_modified = ?"

// GiveBackUnclaimed gives back the rows of a claim whose outcome was
// unknown that it did take (see above), at now, and returns how many it
// gave back. A row not exactly as the claim wrote it is left alone (the
// claim did not take it, or it was rescued, finished or changed since). On
// an error, the rows not yet given back are returned in left (each
// statement is idempotent: they can be given again).
func (s *Store) GiveBackUnclaimed(ctx context.Context, rows []MaybeClaimed, now Millis) (gave int, left []MaybeClaimed, err error) {
	for i, m := range rows {
		state, attempt := m.claimed()
		n, err := s.exec(ctx, giveBackUnclaimed, m.From, m.Attempt, now,
			m.ID, m.Shard, state, m.Owner, attempt, m.LeaseUntil, m.Modified)
		if err != nil {
			return gave, rows[i:], err
		}
		gave += int(n)
	}
	return gave, nil, nil
}

// unclaimedRows are the rows of this Store's claims whose outcome was
// unknown, not given back yet; lastLease is the lease end of this Store's
// last claim (claimLease).
type unclaimedRows struct {
	mu        sync.Mutex
	rows      []MaybeClaimed
	lastLease atomic.Int64
}

// claimLease returns the lease end a claim of this Store writes for
// leaseUntil: leaseUntil, or one millisecond after the last claim's if
// that is not before it. No two claims of one Store write the same lease
// end, so a give-back fenced on a claim whose outcome was unknown never
// matches a later claim of the same row by the same owner: with both at
// one time, a give-back undid the later claim, whose attempt had run, and
// the attempt ran again under its number (a claim of the poller's own
// shards lost its answer, and the steal claim of the same poll, dated the
// same, took the row: the fault checker's exec-once on MariaDB, one
// attempt run twice on one worker). A lease at most a few milliseconds
// longer is the whole cost.
func (s *Store) claimLease(leaseUntil Millis) Millis {
	for {
		last := s.unclaimed.lastLease.Load()
		next := max(int64(leaseUntil), last+1)
		if s.unclaimed.lastLease.CompareAndSwap(last, next) {
			return Millis(next)
		}
	}
}

// maxPendingClaims bounds the rows remembered for a give-back (claims
// failing one after another through a long outage): the oldest are
// dropped first, left to the rescuer.
const maxPendingClaims = 10_000

// noteClaim remembers the rows of err if it is a *ClaimUnknownError, to be
// given back (GiveBackPendingClaims), and returns err.
func (s *Store) noteClaim(err error) error {
	var cu *ClaimUnknownError
	if errors.As(err, &cu) {
		s.unclaimed.mu.Lock()
		s.unclaimed.rows = append(s.unclaimed.rows, cu.Rows...)
		if over := len(s.unclaimed.rows) - maxPendingClaims; over > 0 {
			s.unclaimed.rows = append([]MaybeClaimed(nil), s.unclaimed.rows[over:]...)
		}
		s.unclaimed.mu.Unlock()
	}
	return err
}

// PendingClaims returns how many rows of claims whose outcome was unknown
// are still to be given back.
func (s *Store) PendingClaims() int {
	s.unclaimed.mu.Lock()
	defer s.unclaimed.mu.Unlock()
	return len(s.unclaimed.rows)
}

// GiveBackPendingClaims gives back the rows this Store's claims whose
// outcome was unknown may have taken (GiveBackUnclaimed), at now; the rows
// it could not reach stay for the next call. It returns how many rows it
// gave back (rows the claims had taken).
func (s *Store) GiveBackPendingClaims(ctx context.Context, now Millis) (int, error) {
	s.unclaimed.mu.Lock()
	rows := s.unclaimed.rows
	s.unclaimed.rows = nil
	s.unclaimed.mu.Unlock()
	if len(rows) == 0 {
		return 0, nil
	}
	gave, left, err := s.GiveBackUnclaimed(ctx, rows, now)
	if len(left) > 0 {
		s.unclaimed.mu.Lock()
		s.unclaimed.rows = append(s.unclaimed.rows, left...)
		s.unclaimed.mu.Unlock()
	}
	return gave, err
}
