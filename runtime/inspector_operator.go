package runtime

import (
	"context"
	"errors"
	"slices"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// OperatorAction is one record of the operator trail: who did what to a
// task, when and why (argotype.OperatorAction documents its fields).
type OperatorAction = argotype.OperatorAction

// DiscardRequest is a discard awaiting (or decided by) a second operator
// (argotype.DiscardRequest documents its fields).
type DiscardRequest = argotype.DiscardRequest

// RequeueLinks are a task's links to the tasks it was requeued from and
// into (0 for none).
type RequeueLinks = argotype.RequeueLinks

// The actions of the operator trail (OperatorAction.Action; argotype
// documents each).
const (
	ActionRequeue        = argotype.ActionRequeue
	ActionDiscard        = argotype.ActionDiscard
	ActionDiscardRequest = argotype.ActionDiscardRequest
	ActionDiscardApprove = argotype.ActionDiscardApprove
	ActionDiscardReject  = argotype.ActionDiscardReject
	ActionForceFail      = argotype.ActionForceFail
	ActionRunNow         = argotype.ActionRunNow
	ActionBreakerOpen    = argotype.ActionBreakerOpen
	ActionBreakerClose   = argotype.ActionBreakerClose
)

// Errors of the operators' changes.
var (
	// ErrAlreadyRequeued: the task was requeued before; act on its new task.
	ErrAlreadyRequeued = argotype.ErrAlreadyRequeued
	// ErrNoDiscardRequest: no discard request of the task awaits a decision.
	ErrNoDiscardRequest = argotype.ErrNoDiscardRequest
	// ErrDiscardRequestOpen: a discard request of the task awaits a decision already.
	ErrDiscardRequestOpen = argotype.ErrDiscardRequestOpen
	// ErrSameOperator: the operator who asked for a discard cannot decide it.
	ErrSameOperator = argotype.ErrSameOperator
	// ErrSameAccount: a discard request cannot be approved from the
	// database account that made it (Inspector.SameAccountApproval).
	ErrSameAccount = argotype.ErrSameAccount
	// ErrNoOperator: the change needs the operator's name.
	ErrNoOperator = argotype.ErrNoOperator
	// ErrOperatorName: the operator's name has white space before or after
	// it, or is too long; names are compared byte for byte.
	ErrOperatorName = argotype.ErrOperatorName
	// ErrDiscardNeedsApproval: discards need a second operator (the
	// default; Inspector.SingleOperatorDiscard turns it off); use
	// RequestDiscard.
	ErrDiscardNeedsApproval = errors.New("argo: a discard needs a second operator's approval: request it (argoctl discard-request), then another operator approves it (argoctl discard-approve); where one operator may discard alone, set Inspector.SingleOperatorDiscard (argoctl -single-operator-discard), which the trail records as a discard without review")
)

// Trail returns the operator trail of task id, oldest first: every
// requeue, discard, discard request and decision, force-fail and run-now,
// with who, when and why.
func (in *Inspector) Trail(ctx context.Context, id int64) ([]OperatorAction, error) {
	return in.store.OperatorActions(ctx, id)
}

// DiscardRequests returns the discard requests of task id, oldest first.
func (in *Inspector) DiscardRequests(ctx context.Context, id int64) ([]DiscardRequest, error) {
	return in.store.DiscardRequests(ctx, id)
}

// Links returns the tasks task id was requeued from and into.
func (in *Inspector) Links(ctx context.Context, id int64) (RequeueLinks, error) {
	return in.store.Links(ctx, id)
}

// RequestDiscard asks for the discard of a pending, retrying, exhausted or
// dead task, as in.Operator, with a reason (required). The task is not
// touched until a different operator approves (ApproveDiscard). It returns
// the request's id.
func (in *Inspector) RequestDiscard(ctx context.Context, id int64, reason string) (int64, error) {
	reqID, err := in.store.RequestDiscard(ctx, id, reason, in.operator(), toMillis(in.now()))
	return reqID, in.refused(ctx, err)
}

// ApproveDiscard approves the open discard request of task id, as
// in.Operator, who must not be the one who made it (ErrSameOperator), and
// discards the task with the request's reason in the same transaction.
// reason (why approved) is optional. On MySQL the approval must also come
// from another database account than the request's (ErrSameAccount)
// unless in.SameAccountApproval is set.
func (in *Inspector) ApproveDiscard(ctx context.Context, id int64, reason string) error {
	return in.refused(ctx, in.store.DecideDiscard(ctx, id, true, reason, in.operator(), toMillis(in.now()), !in.SameAccountApproval))
}

// RejectDiscard rejects the open discard request of task id, as
// in.Operator (not its requester); the task stays as it is.
func (in *Inspector) RejectDiscard(ctx context.Context, id int64, reason string) error {
	return in.store.DecideDiscard(ctx, id, false, reason, in.operator(), toMillis(in.now()), false)
}

// ForceFail sends a task no worker holds (pending, blocked, retrying or
// exhausted) to the dead letter now, without running its fallback, with a
// reason (required) recorded in the trail; its dependent tasks are
// skipped. A running or falling_back task (its worker holds the lease and
// will write the outcome: force-fail it once it waits again, or use
// TransientFail), and a final one, are refused with a *TransitionError.
func (in *Inspector) ForceFail(ctx context.Context, id int64, reason string) error {
	return in.refused(ctx, in.store.ForceFail(ctx, id, reason, in.operator(), toMillis(in.now())))
}

// ForceFailable reports whether ForceFail accepts a task in state s:
// pending, blocked, retrying or exhausted (neither final nor held by a
// worker's lease).
func ForceFailable(s State) bool { return slices.Contains(storage.ForceFailableStates, s) }

// RunNow makes a pending or retrying task due now, so that the next claim
// of any instance takes it (a retry held by an instance is given back).
// reason is optional. Any other state is refused with a *TransitionError.
func (in *Inspector) RunNow(ctx context.Context, id int64, reason string) error {
	return in.refused(ctx, in.store.RunNow(ctx, id, reason, in.operator(), toMillis(in.now())))
}

// CountDeadLetters returns how many dead tasks await an operator (dead and
// not requeued; CountByState counts requeued dead rows too).
func (in *Inspector) CountDeadLetters(ctx context.Context) (int, error) {
	return in.store.CountDeadLetters(ctx)
}
