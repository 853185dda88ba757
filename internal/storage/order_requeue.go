package storage

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"
)

// A keyed task skipped because an upstream task failed has passed its
// order key on (skipped is terminal): the key's later calls may have
// started since. A requeue of that upstream task therefore does not bring
// it back to blocked, where it would hold the key again ahead of calls that
// already run, and then run beside them. It stays skipped, and is requeued
// as a new call, at the end of its key (behind every call of the key
// submitted before), blocked after its upstream tasks (requeueDependencies:
// the failed one's new task among them); the tasks brought back after it
// now run after the new call. docs/semantics.md, "Ordered keys".

// keyedAmong splits ids into those of tasks without an order key and those
// with one (ascending), read in tx.
func (s *Store) keyedAmong(ctx context.Context, tx *sqlx.Tx, ids []int64) (plain, keyed []int64, err error) {
	q := "SELECT id FROM argo_task WHERE order_key IS NOT NULL AND id IN " + Placeholders(len(ids))
	if err := tx.SelectContext(ctx, &keyed, q, anySlice(ids)...); err != nil {
		return nil, nil, err
	}
	slices.Sort(keyed)
	for _, id := range ids {
		if _, found := slices.BinarySearch(keyed, id); !found {
			plain = append(plain, id)
		}
	}
	return plain, keyed, nil
}

// requeueSkippedKeyed, in the transaction that requeues task old as task
// fresh, requeues each keyed task of keyed (skipped because old failed, in
// ascending id order: an upstream task before its downstream tasks) as a
// new call: its new row (blocked after its upstream tasks), its links, its
// unique key moved over, the operator trail; and repoints to the new row
// the edges of the tasks of back (those brought back) that ran after it.
func (s *Store) requeueSkippedKeyed(ctx context.Context, tx *sqlx.Tx, old, fresh int64, keyed, back []int64, now Millis) error {
	skipped := StateValue(StateSkipped)
	for _, id := range keyed {
		var row Task
		if err := tx.GetContext(ctx, &row, s.sql.RequeueSource, id); err != nil {
			return err
		}
		task := requeuedTask(&row, now)
		deps, blocked, err := s.requeueDependencies(ctx, tx, id)
		if err != nil {
			return err
		}
		if blocked {
			task.State = StateBlocked
		}
		if err := s.InsertToken(ctx, tx, task, NewSubmitToken()); err != nil {
			return err
		}
		if err := s.insertRequeueEdges(ctx, tx, task.ID, deps, now); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "UPDATE argo_task SET requeued_to = ?, unique_key = NULL WHERE id = ? AND shard_key = ? AND task_status = "+skipped+" AND requeued_to IS NULL", task.ID, id, row.ShardKey)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return errRequeueRaced
		}
		if _, err := tx.ExecContext(ctx, s.sql.LinkRequeued, id, row.UniqueKey, task.ID, task.ShardKey); err != nil {
			return err
		}
		if err := s.repointEdges(ctx, tx, task.ID, id, back); err != nil {
			return err
		}
		reason := fmt.Sprintf("keyed task skipped after upstream task %d failed: requeued at the end of its order key with task %d's requeue as task %d", old, old, fresh)
		if err := s.insertAction(ctx, tx, OperatorAction{TaskPK: id, Action: ActionRequeue, Operator: "argo", Reason: reason, At: now, OtherTask: sql.NullInt64{Int64: task.ID, Valid: true}}); err != nil {
			return err
		}
	}
	return nil
}
