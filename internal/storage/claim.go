package storage

import (
	"cmp"
	"context"
	"slices"
)

// ClaimFenceSQL is the engine's statement that takes one claim candidate
// still as read (Statements.ClaimTake).
func (s *Store) ClaimFenceSQL() string { return s.sql.ClaimTake }

// CandidateTaker is implemented by drivers whose claim reads candidates
// first and then takes them (MySQL): TakeCandidates takes those of cands
// still as read and returns them, as read.
type CandidateTaker interface {
	TakeCandidates(ctx context.Context, conn Conn, owner string, now, dueBy, leaseUntil Millis, cands []*Task) ([]*Task, error)
}

// TakeCandidates takes the candidates whose row is still as read and
// returns them (as read, before the claim): the driver's way on engines
// whose claim reads candidates first (CandidateTaker), else TakeRowwise.
func (s *Store) TakeCandidates(ctx context.Context, owner string, now, dueBy, leaseUntil Millis, cands []*Task) ([]*Task, error) {
	if ct, ok := s.d.(CandidateTaker); ok {
		return ct.TakeCandidates(ctx, conn{s}, owner, now, dueBy, leaseUntil, cands)
	}
	return TakeRowwise(ctx, s.d, conn{s}, owner, now, dueBy, leaseUntil, SortedByID(cands))
}

// SortedByID returns a copy of tasks in ascending id order: the order in
// which row-wise writers lock rows, so that two of them never deadlock.
func SortedByID(tasks []*Task) []*Task {
	byID := slices.Clone(tasks)
	slices.SortFunc(byID, func(a, b *Task) int { return cmp.Compare(a.ID, b.ID) })
	return byID
}

// TakeRowwise takes each of byID (candidates in ascending id order) with
// its own Statements.ClaimTake, in one transaction (Driver.ExecRowwise),
// and returns those still as read, which it took.
func TakeRowwise(ctx context.Context, d Driver, conn Conn, owner string, now, dueBy, leaseUntil Millis, byID []*Task) ([]*Task, error) {
	if len(byID) == 0 {
		return nil, nil
	}
	rows := make([][]any, len(byID))
	for i, t := range byID {
		rows[i] = []any{owner, leaseUntil, now, t.ID, t.ShardKey, t.State, t.ExecuteTimes, dueBy, now}
	}
	changed, err := d.ExecRowwise(ctx, conn, d.SQL().ClaimTake, rows)
	if err != nil {
		return nil, err
	}
	var took []*Task
	for i, t := range byID {
		if changed[i] {
			took = append(took, t)
		}
	}
	return took, nil
}
