package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/argo-retry/argo/internal/storage"
)

// RequeueWithReason moves a dead or discarded task back to pending with a
// fresh attempt budget, due now, and records the requeue in its attempt
// history (a row of kind AttemptKindRequeue: when, in.Operator, and reason,
// which may be empty). A succeeded or recovered task is refused with a
// *FinishedError; any other state with a *TransitionError. Both match
// ErrTransitionInvalid.
func (in *Inspector) RequeueWithReason(ctx context.Context, id int64, reason string) error {
	if err := storage.CheckOperatorText("requeue reason", reason); err != nil {
		return err
	}
	who := in.Operator
	if who == "" {
		who = "inspector"
	}
	err := in.store.RequeueRecorded(ctx, id, reason, who, toMillis(in.now()))
	var te *TransitionError
	if errors.As(err, &te) {
		return CheckRequeue(id, te.From)
	}
	return err
}

// CheckRequeue says whether a task in state from may be requeued: nil for
// dead and discarded, a *FinishedError for succeeded and recovered, a
// *TransitionError otherwise.
func CheckRequeue(id int64, from State) error {
	if from == StateSucceeded || from == StateRecovered {
		return &FinishedError{TaskID: id, State: from}
	}
	return CheckTransition(id, from, StatePending)
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

// A requeue is recorded in argo_task_attempt as a row of this kind and
// outcome: attempt is the task's attempt count before the requeue (the
// count restarts at 0), worker who requeued it, error_msg the reason (empty
// when none was given), started_at and finished_at when.
const (
	AttemptKindRequeue = storage.AttemptKindRequeue
	OutcomeRequeued    = storage.OutcomeRequeued
)
