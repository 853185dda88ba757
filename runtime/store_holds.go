package runtime

import (
	"context"
	"strings"

	"github.com/jmoiron/sqlx"
)

// startHeld starts the next attempt of held retries: per task, a fenced
// UPDATE (still retrying, same owner, attempt and hold) to running, all in
// one transaction; on MySQL one round trip. started[i] reports whether
// holds[i] was still this owner's to start (an operator may have discarded
// it, or another instance claimed it after the hold ran out).
func (s *store) startHeld(ctx context.Context, owner string, holds []heldStart, leaseUntil, now Millis) (started []bool, err error) {
	started = make([]bool, len(holds))
	if s.onetripDB() != nil {
		return s.startHeldMySQL(ctx, owner, holds, leaseUntil, now)
	}
	const q = "UPDATE argo_task SET execute_times = execute_times + 1, task_status = 1, lease_until = ?, gmt_modified = ? WHERE id = ? AND shard_key = ? AND task_status = 2 AND lease_owner = ? AND execute_times = ? AND lease_until = ?"
	err = s.write(ctx, func(tx *sqlx.Tx) error {
		for i, h := range holds {
			res, err := tx.ExecContext(ctx, q, leaseUntil, now, h.id, h.shard, owner, h.attempt, h.holdUntil)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			started[i] = n == 1
		}
		return nil
	})
	return started, err
}

// startHeldMySQL is startHeld in one round trip: the SELECT … FOR UPDATE
// returns (and locks) exactly the rows whose fence holds, and the UPDATE,
// with the same condition, changes exactly those.
//
//	START TRANSACTION;
//	SELECT id … WHERE <fences> FOR UPDATE;
//	UPDATE argo_task SET <running> WHERE <fences>;
//	COMMIT
func (s *store) startHeldMySQL(ctx context.Context, owner string, holds []heldStart, leaseUntil, now Millis) ([]bool, error) {
	ids := make([]int64, len(holds))
	var tuples []string
	var targs []any
	for i, h := range holds {
		ids[i] = h.id
		tuples = append(tuples, "(?, ?, ?, ?)")
		targs = append(targs, h.id, h.shard, h.attempt, h.holdUntil)
	}
	in, idArgs := inList(ids)
	where := "id IN " + in + " AND (id, shard_key, execute_times, lease_until) IN (" + strings.Join(tuples, ", ") + ") AND task_status = 2 AND lease_owner = ?"
	wargs := append(append(idArgs, targs...), owner)
	query := "START TRANSACTION; SELECT id FROM argo_task WHERE " + where + " FOR UPDATE; " +
		"UPDATE argo_task SET execute_times = execute_times + 1, task_status = 1, lease_until = ?, gmt_modified = ? WHERE " + where + "; COMMIT"
	args := append(append(append([]any{}, wargs...), leaseUntil, now), wargs...)
	for try := 1; ; try++ {
		got, err := s.queryMultiIDs(ctx, query, args)
		if err == nil {
			ok := make(map[int64]bool, len(got))
			for _, id := range got {
				ok[id] = true
			}
			started := make([]bool, len(holds))
			for i, h := range holds {
				started[i] = ok[h.id]
			}
			return started, nil
		}
		if try == 5 || !isRetryableLockError(err) {
			return nil, err
		}
	}
}

// heldStart fences the start of one held retry.
type heldStart struct {
	id        int64
	shard     int
	attempt   int    // execute_times of the failed attempt
	holdUntil Millis // lease_until written with the hold
}

// releaseHolds gives held retries back to every instance (at Stop): they
// stay retrying and due, with no owner.
func (s *store) releaseHolds(ctx context.Context, owner string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	in, args := inList(ids)
	_, err := s.exec(ctx, "UPDATE argo_task SET lease_owner = '', lease_until = 0 WHERE task_status = 2 AND lease_owner = ? AND id IN "+in, append([]any{owner}, args...)...)
	return err
}
