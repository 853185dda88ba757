package storage

import (
	"cmp"
	"context"
	"database/sql/driver"
	"slices"
	"strings"
)

// The MySQL claim takes only the rows it claims. It reads candidates with a
// plain consistent read (no lock: the due index is scanned, in due order,
// without locking the rows it passes, in any shard), then takes each with a
// fenced UPDATE by primary key that changes the row only if it is still as
// read and still claimable (same state and execute_times, due, not leased
// or held). Exactly the rows whose UPDATE changed them are returned: a
// candidate another claimer took meanwhile is left to it. This does not
// depend on SKIP LOCKED (which some MySQL-compatible servers accept without
// locking anything).

// claimRounds bounds the candidate reads of one claim: when concurrent
// claimers took some of a full page of candidates, the claim reads again
// for the rest of its limit.
const claimRounds = 3

// claimFenceSQL takes one candidate (see claimCandidates for its arguments).
func (s *Store) ClaimFenceSQL() string {
	return "UPDATE " + s.byID() + " SET " + claimSet + " WHERE id = ? AND task_status = ? AND execute_times = ? AND execute_time <= ? AND lease_until <= ?"
}

// claimMySQL claims up to limit rows matching where (with args, in due
// order) and returns them as claimed, oldest due first.
func (s *Store) claimMySQL(ctx context.Context, owner string, now, dueBy, leaseUntil Millis, limit int, where, order string, args []any) ([]*Task, error) {
	var won []*Task
	for round := 0; round < claimRounds && len(won) < limit; round++ {
		want := limit - len(won)
		var cands []*Task
		q := "SELECT " + TaskColumns + " FROM argo_task WHERE " + where + " ORDER BY " + order + " LIMIT ?"
		if err := s.db.SelectContext(ctx, &cands, q, append(slices.Clip(args), want)...); err != nil {
			if len(won) > 0 {
				break // keep what this claim took; the next claim meets the error
			}
			return nil, err
		}
		took, err := s.TakeCandidates(ctx, owner, now, dueBy, leaseUntil, cands)
		if err != nil {
			if len(won) > 0 {
				break
			}
			return nil, err
		}
		won = append(won, took...)
		if len(took) == len(cands) || len(cands) < want {
			break // nothing lost to another claimer, or no more due rows
		}
	}
	slices.SortFunc(won, func(a, b *Task) int {
		return cmp.Or(cmp.Compare(a.ExecuteTime, b.ExecuteTime), cmp.Compare(a.ID, b.ID))
	})
	for _, t := range won {
		if t.State == StateExhausted {
			t.State = StateFallingBack
		} else {
			t.ExecuteTimes++
			t.State = StateRunning
		}
		t.LeaseOwner, t.LeaseUntil, t.GmtModified = owner, leaseUntil, now
	}
	return won, nil
}

// takeCandidates takes the candidates whose row is still as read and
// returns them (as read, before the claim). On MySQL with the onetrip pool
// it first tries them all with one fenced UPDATE (takeAllOnetrip), which is
// exact only when it changes every candidate; otherwise, and on the
// transaction path, each is taken with its own claimFenceSQL (execRowwise),
// in id order.
func (s *Store) TakeCandidates(ctx context.Context, owner string, now, dueBy, leaseUntil Millis, cands []*Task) ([]*Task, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	byID := slices.Clone(cands)
	slices.SortFunc(byID, func(a, b *Task) int { return cmp.Compare(a.ID, b.ID) })
	if s.onetripDB() != nil {
		all, err := s.takeAllOnetrip(ctx, owner, now, dueBy, leaseUntil, byID)
		if err != nil && !IsRetryableLockError(err) {
			return nil, err
		}
		if all {
			return byID, nil
		}
	}
	rows := make([][]any, len(byID))
	for i, t := range byID {
		rows[i] = []any{owner, leaseUntil, now, t.ID, t.State, t.ExecuteTimes, dueBy, now}
	}
	changed, err := s.execRowwise(ctx, s.ClaimFenceSQL(), rows)
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

// takeAllOnetrip runs, in one READ COMMITTED transaction on the onetrip
// pool, one UPDATE by primary key of every candidate with each row's own
// Fence (claimFenceSQL's, as a tuple list), and commits it only if it
// changed every candidate: then this claim took them all, exactly. If any
// candidate had changed (another claimer took it), the transaction is
// rolled back, all is false, and the caller takes the candidates row by
// row. Two round trips: the UPDATE, then COMMIT or ROLLBACK.
func (s *Store) takeAllOnetrip(ctx context.Context, owner string, now, dueBy, leaseUntil Millis, byID []*Task) (all bool, err error) {
	ids := make([]int64, len(byID))
	var tuples []string
	var targs []any
	for i, t := range byID {
		ids[i] = t.ID
		tuples = append(tuples, "(?, ?, ?)")
		targs = append(targs, t.ID, t.State, t.ExecuteTimes)
	}
	in, idArgs := InList(ids)
	q := "SET TRANSACTION ISOLATION LEVEL " + RowwiseIsolation + "; START TRANSACTION; UPDATE " + s.byID() + " SET " + claimSet +
		" WHERE id IN " + in + " AND (id, task_status, execute_times) IN (" + strings.Join(tuples, ", ") + ") AND execute_time <= ? AND lease_until <= ?"
	args := append(append(append([]any{owner, leaseUntil, now}, idArgs...), targs...), dueBy, now)
	conn, err := s.onetrip.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	// A connection left mid-transaction is discarded, which rolls it back.
	discard := func() { _ = conn.Raw(func(any) error { return driver.ErrBadConn }) }
	res, err := conn.ExecContext(ctx, q, args...)
	if err != nil {
		discard()
		return false, err
	}
	n, err := res.RowsAffected() // of the last statement: the UPDATE
	if err != nil {
		discard()
		return false, err
	}
	end := "COMMIT"
	if n != int64(len(byID)) {
		end = "ROLLBACK"
	}
	if _, err := conn.ExecContext(ctx, end); err != nil {
		discard()
		return false, err
	}
	return end == "COMMIT", nil
}
