package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"

	"github.com/argo-retry/argo/argotype"
)

// ActionTransientFail is the operator trail's record of a transient-fail
// request (seed 001's run?transient_fail=true): the task's next attempt
// fails as transient without calling its function, on an instance started
// with fault injection enabled (runtime.Config.FaultInjection).
const ActionTransientFail = argotype.ActionTransientFail

// InjectedFailurePrefix starts the error text of every attempt failed by a
// transient-fail request; an attempt with it in the history consumed one
// request.
const InjectedFailurePrefix = "argo: transient failure injected"

// TransientFailableStates may receive a transient-fail request: those with
// a next attempt to come (pending, blocked, running: the attempt after the
// running one, retrying).
var TransientFailableStates = []State{StatePending, StateBlocked, StateRunning, StateRetrying}

// transientFailPending counts the requests not yet consumed: requests in
// the trail less attempts failed by injection (arguments task id, task id,
// the prefix pattern). Both tables are read by their task index.
const transientFailPending = `SELECT (SELECT COUNT(*) FROM argo_operator_action WHERE task_pk = ? AND action = '` + ActionTransientFail + `') -
 (SELECT COUNT(*) FROM argo_task_attempt WHERE task_pk = ? AND kind = 'attempt' AND error_msg LIKE ?)`

// RequestTransientFail records a transient-fail request for task id, with
// who and why (required), if the task is in TransientFailableStates; any
// other state is refused with an error naming it. The task row is not
// changed: an instance with fault injection enabled reads the request
// before the task's next attempt (TransientFailsPending).
func (s *Store) RequestTransientFail(ctx context.Context, id int64, reason, who string, now Millis) error {
	if err := checkReason("transient-fail reason", reason); err != nil {
		return err
	}
	if err := checkOptionalOperatorName(who); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sqlx.Tx) error {
		var t Task
		if err := tx.GetContext(ctx, &t, s.sql.GetTask, id); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %d", ErrNotFound, id)
		} else if err != nil {
			return err
		}
		if !slices.Contains(TransientFailableStates, t.State) {
			return fmt.Errorf("argo: task %d is %s: transient-fail makes the next attempt fail, and it has none to come (pending, blocked, running or retrying tasks only)", id, t.State)
		}
		return s.insertAction(ctx, tx, OperatorAction{TaskPK: id, Action: ActionTransientFail, Operator: who, Reason: reason, At: now})
	})
}

// TransientFailsPending returns how many transient-fail requests of task
// id no attempt has consumed yet.
func (s *Store) TransientFailsPending(ctx context.Context, id int64) (int, error) {
	var n int
	if err := s.db.GetContext(ctx, &n, transientFailPending, id, id, InjectedFailurePrefix+"%"); err != nil {
		return 0, fmt.Errorf("argo: transient-fail requests of task %d: %w", id, err)
	}
	return n, nil
}
