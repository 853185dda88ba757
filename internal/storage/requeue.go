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

// A requeue was recorded, before migration 000005, in argo_task_attempt as
// a row of this kind and outcome (the task row itself went back to
// pending). Such rows stay in the histories they are in; a requeue now
// writes a new task and a record of the operator trail (ActionRequeue).
const (
	AttemptKindRequeue = argotype.AttemptKindRequeue
	OutcomeRequeued    = argotype.OutcomeRequeued
)

// maxWorkerRunes is the width of argo_task_attempt.worker and of the
// operator columns (VARCHAR(128)).
const maxWorkerRunes = 128

// ErrAlreadyRequeued is returned for a task that was requeued before: its
// row stays as it was, and the task it was requeued into is the one to act on.
var ErrAlreadyRequeued = argotype.ErrAlreadyRequeued

// errRequeueRaced rolls back a requeue whose task changed between the read
// and the update.
var errRequeueRaced = errors.New("argo: requeue raced")

// RequeueLinks are the links of a task row to the tasks it was requeued
// from and into (see argotype).
type RequeueLinks = argotype.RequeueLinks

// Links reads the requeue links of task id.
func (s *Store) Links(ctx context.Context, id int64) (RequeueLinks, error) {
	var row struct {
		From sql.NullInt64 `db:"requeued_from"`
		To   sql.NullInt64 `db:"requeued_to"`
	}
	err := s.db.GetContext(ctx, &row, s.sql.RequeueLinks, id)
	if errors.Is(err, sql.ErrNoRows) {
		return RequeueLinks{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	return RequeueLinks{From: row.From.Int64, To: row.To.Int64}, err
}

// RequeueRecorded is RequeueAsNew, returning only the error.
func (s *Store) RequeueRecorded(ctx context.Context, id int64, reason, who string, now Millis) error {
	_, err := s.RequeueAsNew(ctx, id, reason, who, now)
	return err
}

// RequeueAsNew requeues a dead or discarded task as a new task, and returns
// the new task's id. In one transaction it writes a new row with the old
// one's call (name, arguments, policy, shard, alert, fallback, order key),
// pending and due at now — or blocked, when one of the old task's upstream
// tasks has not yet succeeded — with no attempts, requeued_from set to id
// and the old task's dependencies (requeueDependencies: an upstream task
// that failed and was requeued is replaced by its newest task; one that
// failed for good refuses the requeue with ErrDependency); it sets the old
// row's requeued_to to the new id, which is all it changes there (its
// state, error texts and history stay); it moves the old row's unique key,
// if any, to the new row (so that the key still names the call's live
// task, and no submit can take it in between); and it records the requeue
// in the operator trail (who, when, why, the new task). A task requeued
// before is refused with ErrAlreadyRequeued (requeue its newest task
// instead); another state with a TransitionError; an unknown id with
// ErrNotFound. A COMMIT whose answer is lost is resolved by the new row's
// submit token: the new id if the requeue was committed, the COMMIT's error
// if not, *UnresolvedError if the database could not be reached to tell
// before ctx's deadline (and at least SubmitResolveFloor).
func (s *Store) RequeueAsNew(ctx context.Context, id int64, reason, who string, now Millis) (int64, error) {
	if err := CheckOperatorText("requeue reason", reason); err != nil {
		return 0, err
	}
	who = operatorName(who)
	var newID int64
	found := false
	// committing: the try's work is done and its COMMIT sent; a failure
	// whose outcome is unknown is the COMMIT's, resolved by the new row's
	// submit token (resolveCommit).
	committing := false
	token := NewSubmitToken()
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		newID, found, committing = 0, false, false
		var old Task
		if err := tx.GetContext(ctx, &old, s.sql.RequeueSource, id); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil // no such task: said below
			}
			return err
		}
		found = true
		fresh := requeuedTask(&old, now)
		deps, blocked, err := s.requeueDependencies(ctx, tx, id) // requeue_deps.go
		if err != nil {
			return err
		}
		if blocked {
			fresh.State = StateBlocked
		}
		if err := s.InsertToken(ctx, tx, fresh, token); err != nil {
			return err
		}
		if err := s.insertRequeueEdges(ctx, tx, fresh.ID, deps, now); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.sql.MarkRequeued, fresh.ID, id, old.ShardKey)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errRequeueRaced
		}
		if _, err := tx.ExecContext(ctx, s.sql.LinkRequeued, id, old.UniqueKey, fresh.ID, fresh.ShardKey); err != nil {
			return err
		}
		newID = fresh.ID
		if err := s.unskipDownstream(ctx, tx, id, fresh.ID, now); err != nil {
			return err
		}
		if err := s.insertAction(ctx, tx, OperatorAction{TaskPK: id, Action: ActionRequeue, Operator: who, Reason: reason, At: now, OtherTask: sql.NullInt64{Int64: fresh.ID, Valid: true}}); err != nil {
			return err
		}
		committing = true
		return nil
	})
	if err != nil && committing && !s.OutcomeKnown(err) {
		ids, rerr := s.resolveCommit(ctx, [][]byte{token}, err) // group_resolve.go
		if rerr != nil {
			return 0, rerr
		}
		return ids[0], nil
	}
	if errors.Is(err, errRequeueRaced) {
		err, found = nil, false
	}
	if err != nil || found {
		return newID, err
	}
	return 0, s.requeueRefused(ctx, id)
}

// requeueRefused says why task id could not be requeued.
func (s *Store) requeueRefused(ctx context.Context, id int64) error {
	t, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	links, err := s.Links(ctx, id)
	if err != nil {
		return err
	}
	if links.To != 0 {
		return fmt.Errorf("%w: task %d was requeued as task %d; act on that one", ErrAlreadyRequeued, id, links.To)
	}
	if !slices.Contains(RequeueableStates, t.State) {
		return &argotype.TransitionError{TaskID: id, From: t.State, To: StatePending, Code: argotype.CodeTransitionInvalid}
	}
	return fmt.Errorf("argo: task %d changed meanwhile (now %s); try again", id, t.State)
}

// requeuedTask is the new row of a requeue of old: the same call, pending,
// due now, no attempts, no error texts, no lease, no unique key yet (it is
// moved over once the old row let go of it).
func requeuedTask(old *Task, now Millis) *Task {
	t := *old
	t.ID = 0
	t.State = StatePending
	t.ExecuteTimes = 0
	t.ExecuteTime = now
	t.ErrorMsg, t.FallbackErrorMsg, t.DiscardReason = "", "", ""
	t.LeaseOwner, t.LeaseUntil = "", 0
	t.UniqueKey = sql.NullString{}
	t.AttemptStartedAt, t.AttemptWorker = 0, ""
	t.GmtCreate, t.GmtModified = now, now
	return &t
}

// operatorName cuts who to the width of the operator columns.
func operatorName(who string) string {
	if r := []rune(who); len(r) > maxWorkerRunes {
		return string(r[:maxWorkerRunes])
	}
	return who
}
