package runtime

import (
	"context"
	"errors"
	"strings"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// ActionCancel is the operator trail's record of a cancel (Inspector.Cancel).
const ActionCancel = argotype.ActionCancel

// OutcomeCancelled is the outcome of an attempt that was running when its
// task was cancelled (written by the cancel).
const OutcomeCancelled = argotype.OutcomeCancelled

// CancelResult is what Inspector.Cancel ended: the state it found the task
// in, and for a running task the attempt it stopped and the instance
// running it (which cancels the attempt's context at its next heartbeat,
// within HeartbeatInterval, 2 s by default, plus a round trip).
type CancelResult struct {
	From    State
	Attempt int    // the running attempt cancelled (0 if the task was not running)
	Worker  string // the instance running it ("" if none)
}

// Cancel ends task id discarded, with reason (required) recorded in its
// discard_reason ("cancelled: " + reason) and, with who (in.Operator), in the
// operator trail (ActionCancel), so that it never runs again
// (docs/cancel.md):
//
//   - a pending, retrying (held by an instance or not), exhausted (its
//     fallback does not run) or blocked task ends at once;
//   - a running task ends at once in the database, its attempt recorded with
//     outcome cancelled; the instance running it finds out at its next
//     heartbeat (every HeartbeatInterval, 2 s by default: the heartbeat is
//     fenced on a count the cancel moves, no extra statement) and renews
//     its leases at once, which cancels the attempt's context with cause
//     ErrCancelled; whatever the function returns then is not written: no
//     retry, no fallback.
//
// Its dependent tasks are skipped, its order key passes on and the flow
// slot its attempt held is given back, as for a discard. A task already
// finished (an attempt that succeeded before the cancel landed: its
// success stands), falling back, or requeued is refused with an error
// matching ErrTransitionInvalid that says so; an unknown id with
// ErrNotFound. Cancel needs no second operator, whatever
// SingleOperatorDiscard says: it is for stopping work now (the trail
// records it as a cancel, by its one operator).
func (in *Inspector) Cancel(ctx context.Context, id int64, reason string) (CancelResult, error) {
	if strings.TrimSpace(reason) == "" {
		return CancelResult{}, errors.New("argo: cancel needs a reason (it is recorded in the operator trail and discard_reason)")
	}
	c, err := in.store.Cancel(ctx, id, reason, in.operator(), toMillis(in.now()))
	return CancelResult(c), in.refused(ctx, err)
}

// Cancellable reports whether Cancel accepts a task in state s: pending,
// running, retrying, exhausted or blocked.
func Cancellable(s State) bool {
	for _, c := range storage.CancellableStates {
		if c == s {
			return true
		}
	}
	return false
}

// CancelWhere cancels (as Cancel does, with reason) every cancellable task f
// selects, oldest first, at most f.Limit of them when f.Limit > 0 (the
// console passes its BulkCap), and returns how many it cancelled; with
// dryRun it changes nothing and says how many it would. A task that changed
// meanwhile (finished, requeued, purged) is skipped. An empty Filter
// matches every cancellable task: callers that take filters from users
// should refuse it unless asked explicitly. To cancel a flow group's tasks
// set f.Names to the group's members (FlowGroups); a tenant's, f.Tenant.
func (in *Inspector) CancelWhere(ctx context.Context, f Filter, reason string, dryRun bool) (int, error) {
	if strings.TrimSpace(reason) == "" {
		return 0, errors.New("argo: cancel needs a reason (it is recorded in the operator trail and discard_reason)")
	}
	if err := storage.CheckOperatorText("cancel reason", reason); err != nil {
		return 0, err
	}
	f.NotRequeued = true
	return in.changeWhere(ctx, restrict(f, storage.CancellableStates), dryRun, func(ctx context.Context, id int64) error {
		_, err := in.Cancel(ctx, id, reason)
		return err
	})
}

// leaseCancelled stops what runs under lease k, whose task a renewal found
// cancelled: the function's context is cancelled with cause ErrCancelled
// (its outcome is not written), and no function starts under k later.
func (rt *Runtime) leaseCancelled(k leaseKey) {
	if r := rt.leases.cancelled(k); r != nil {
		rt.log.Warn("argo: task cancelled by an operator: "+r.kind+" canceled, its outcome will not be recorded", "task_id", k.ID, "task", r.name, "attempt", k.Attempt)
	}
}

// cancelled marks lease k cancelled and cancels the function running
// under it (returned; nil if none runs yet: start then cancels it before
// it runs).
func (l *leaseSet) cancelled(k leaseKey) *leaseRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[k]
	if h == nil {
		return nil
	}
	h.cancelled = true
	if h.run == nil {
		return nil
	}
	h.run.lost.Store(true)
	h.run.cancel(ErrCancelled)
	return h.run
}
