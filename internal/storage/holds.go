package storage

import (
	"cmp"
	"context"
	"slices"
)

// StartHeld starts the next attempt of held retries (and held scheduled
// calls): per task, a fenced UPDATE by primary key (still retrying, or
// still pending for a scheduled call; same owner, attempt and hold) to
// running, all in one READ COMMITTED transaction; on MySQL one round trip
// (execRowwise); a single hold (the usual case: one retry's timer) is its
// one UPDATE, autocommitted. started[i] reports whether holds[i] was still this owner's
// to start (an operator may have discarded it, or another instance claimed
// it after the hold ran out): exactly the rows this call changed. No
// statement reads through a secondary index, so the start locks only the
// rows it starts.
func (s *Store) StartHeld(ctx context.Context, owner string, holds []HeldStart, leaseUntil, now Millis) (started []bool, err error) {
	started = make([]bool, len(holds))
	if len(holds) == 0 {
		return started, nil
	}
	// In id order: concurrent writers lock shared rows in the same order.
	order := make([]int, len(holds))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(holds[a].ID, holds[b].ID) })
	rows := make([][]any, len(holds))
	for k, i := range order {
		h := holds[i]
		from := StateRetrying
		if h.Scheduled {
			from = StatePending
		}
		rows[k] = []any{leaseUntil, now, h.ID, h.Shard, from, owner, h.Attempt, h.HoldUntil}
	}
	if len(rows) == 1 {
		// One row: its fenced UPDATE alone, autocommitted, is all the
		// transaction would be (one statement changes the one row or
		// nothing; by primary key and autocommitted it locks that row,
		// only while it runs): no BEGIN, COMMIT or isolation level to send
		// (issue #23: on MySQL without the one-trip pool the isolation
		// level was a round trip of its own).
		n, err := s.exec(ctx, s.sql.StartHeld, rows[0]...)
		if err != nil {
			return nil, err
		}
		started[0] = n == 1
		return started, nil
	}
	changed, err := s.execRowwise(ctx, s.sql.StartHeld, rows)
	if err != nil {
		return nil, err
	}
	for k, i := range order {
		started[i] = changed[k]
	}
	return started, nil
}

// HeldStartSQL starts one held retry (Statements.StartHeld): arguments
// lease_until, now, then the fence (id, shard, state, owner, attempt, hold).
func (s *Store) HeldStartSQL() string { return s.sql.StartHeld }

// HeldStart fences the start of one held retry.
type HeldStart struct {
	ID        int64
	Shard     int
	Attempt   int    // execute_times of the failed attempt
	HoldUntil Millis // lease_until written with the hold
	// Scheduled marks a held scheduled call (pending, its first attempt
	// not yet run: HoldScheduled) rather than a held retry (retrying).
	Scheduled bool
}

// ReleaseHolds gives held retries and held scheduled calls back to every
// instance (at Stop): they stay retrying or pending and due, with no owner. By primary key: only those rows
// are locked.
func (s *Store) ReleaseHolds(ctx context.Context, owner string, keys []RowKey) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := s.exec(ctx, s.sql.ReleaseHolds(len(keys)), append([]any{owner}, RowKeyArgs(keys)...)...)
	return err
}
