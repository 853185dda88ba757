package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// RequeueWithReason requeues a dead or discarded task as a new task
// (RequeueAsNew), dropping the new task's id.
func (in *Inspector) RequeueWithReason(ctx context.Context, id int64, reason string) error {
	_, err := in.RequeueAsNew(ctx, id, reason)
	return err
}

// RequeueAsNew requeues a dead or discarded task as a new task and returns
// its id: the same call (name, arguments, policy, order key), pending, due
// now, with fresh ids and so fresh idempotency keys, linked to the old task
// (Links: requeued_from on the new row, requeued_to on the old). A task
// with upstream tasks keeps them: the new task is blocked while one has not
// yet succeeded (an upstream task that was requeued counts as its newest
// task), and the requeue is refused with an error wrapping ErrDependency
// while one is dead, discarded or skipped (docs/dependencies.md, "Requeue").
// The old row keeps its state and history; its unique key, if any, moves to
// the new row. The requeue is recorded in the operator trail (who:
// in.Operator; reason may be empty). A succeeded or recovered task is
// refused with a *FinishedError; a task requeued before with
// ErrAlreadyRequeued; any other state with a *TransitionError. All three
// match ErrTransitionInvalid. A COMMIT whose answer is lost is resolved by
// the new row's submit token (the new id, or the COMMIT's error if nothing
// was written); if the database cannot be reached to tell before ctx's
// deadline (and at least storage.SubmitResolveFloor), the error wraps
// ErrOutcomeUnknown: look at the task's Links before requeueing again.
func (in *Inspector) RequeueAsNew(ctx context.Context, id int64, reason string) (int64, error) {
	if err := storage.CheckOperatorText("requeue reason", reason); err != nil {
		return 0, err
	}
	newID, err := in.store.RequeueAsNew(ctx, id, reason, in.operator(), toMillis(in.now()))
	var te *TransitionError
	if errors.As(err, &te) {
		return 0, in.refused(ctx, CheckRequeue(id, te.From))
	}
	if errors.Is(err, storage.ErrAlreadyRequeued) {
		return 0, &alreadyRequeuedError{err}
	}
	var unresolved *storage.UnresolvedError
	if errors.As(err, &unresolved) {
		return 0, outcomeUnknown(fmt.Sprintf("requeue of task %d", id), unresolved.Last)
	}
	return newID, err
}

// alreadyRequeuedError matches ErrAlreadyRequeued and ErrTransitionInvalid
// (so that RequeueWhere skips such a task as it skips others that moved).
type alreadyRequeuedError struct{ err error }

func (e *alreadyRequeuedError) Error() string { return e.err.Error() }
func (e *alreadyRequeuedError) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrTransitionInvalid) true.
func (e *alreadyRequeuedError) Is(target error) bool { return target == ErrTransitionInvalid }

// operator is who in's changes are recorded as made by (in.Operator,
// DefaultOperator when empty).
func (in *Inspector) operator() string {
	if in.Operator == "" {
		return DefaultOperator
	}
	return in.Operator
}

// DefaultOperator is who an Inspector's changes are recorded as made by
// when Inspector.Operator is empty.
const DefaultOperator = "inspector"

// CheckRequeue says whether a task in state from may be requeued: nil for
// dead and discarded, a *FinishedError for succeeded and recovered, a
// *TransitionError otherwise.
func CheckRequeue(id int64, from State) error {
	switch from {
	case StateSucceeded, StateRecovered:
		return &FinishedError{TaskID: id, State: from}
	case StateDead, StateDiscarded:
		return nil
	}
	return &TransitionError{TaskID: id, From: from, To: StatePending, Code: CodeTransitionInvalid}
}

// FinishedError refuses to requeue a task that finished (succeeded or
// recovered): its call is done, and running it again is a new call.
type FinishedError struct {
	TaskID int64
	State  State
}

func (e *FinishedError) Error() string {
	return fmt.Sprintf("task %d %s: finished tasks cannot be requeued; to run the call again, submit it again (call the wrapper with the same arguments)", e.TaskID, e.State)
}

// Is makes errors.Is(err, ErrTransitionInvalid) true.
func (e *FinishedError) Is(target error) bool { return target == ErrTransitionInvalid }

// Before migration 000005, a requeue was recorded in argo_task_attempt as
// a row of this kind and outcome (worker who, error_msg why); such rows stay
// in the histories of the tasks requeued then. A requeue now writes a new
// task and a record of the operator trail (ActionRequeue).
const (
	AttemptKindRequeue = argotype.AttemptKindRequeue
	OutcomeRequeued    = argotype.OutcomeRequeued
)
