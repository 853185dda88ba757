package storage

import (
	"context"
	"errors"

	"github.com/jmoiron/sqlx"
)

// A requeue is recorded in argo_task_attempt as a row of this kind and
// outcome: attempt is the task's attempt count before the requeue (the
// count restarts at 0), worker who requeued it, error_msg the reason (empty
// when none was given), started_at and finished_at when.
const (
	AttemptKindRequeue = "requeue"
	OutcomeRequeued    = "requeued"
)

// maxWorkerRunes is the width of argo_task_attempt.worker (VARCHAR(128)).
const maxWorkerRunes = 128

// errRequeueRaced rolls back the record of a requeue whose task changed
// state between the record and the update.
var errRequeueRaced = errors.New("argo: requeue raced")

// RequeueRecorded moves a dead or discarded task back to pending with a
// fresh attempt budget, due at now, and records who requeued it and why,
// in the same transaction.
func (s *Store) RequeueRecorded(ctx context.Context, id int64, reason, who string, now Millis) error {
	if r := []rune(who); len(r) > maxWorkerRunes {
		who = string(r[:maxWorkerRunes])
	}
	var changed int64
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		changed = 0
		// The record first: it reads the attempt count the update resets.
		res, err := tx.ExecContext(ctx, s.sql.RecordRequeue,
			AttemptKindRequeue, who, now, now, OutcomeRequeued, SanitizeErrorText(reason), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // not dead or discarded: stateChanged says why
		}
		res, err = tx.ExecContext(ctx, s.sql.Requeue, now, now, id)
		if err != nil {
			return err
		}
		if changed, _ = res.RowsAffected(); changed == 0 {
			return errRequeueRaced
		}
		return nil
	})
	if errors.Is(err, errRequeueRaced) {
		err = nil
	}
	return s.stateChanged(ctx, id, StatePending, changed, err)
}
