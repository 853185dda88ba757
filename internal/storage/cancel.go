package storage

import (
	"context"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"

	"github.com/argo-retry/argo/argotype"
)

// Cancel (docs/cancel.md).
//
// A cancel ends a task discarded, whatever it was doing short of a
// fallback: a waiting task (pending, retrying — held by an instance or
// not —, exhausted, blocked) never runs again, and a running one loses its
// lease. The cancel's UPDATE is fenced on the row as read (state, lease
// owner, attempt number), so it either lands on the attempt it saw or
// changes nothing and is tried again on the row as it now is; the finish
// of the attempt is fenced on the same columns, so exactly one of the two
// lands. The instance running a cancelled attempt learns it from its next
// lease renewal (the renewal UPDATE no longer matches the row, and the
// read that follows a short renewal shows the row discarded at the same
// attempt): it cancels the attempt's context with cause ErrCancelled and
// writes no outcome, so no retry and no fallback follow. The cancel writes
// the attempt's history row itself (outcome cancelled), and adds 1 to the
// cancel_seq of the instance holding the lease, whose next heartbeat
// (fenced on it: instance_cancel.go) then renews its leases at once: the
// attempt is stopped within a HeartbeatInterval, not LeaseDuration/3.

// CancellableStates may be cancelled: every state that is neither final
// nor falling_back (a fallback already runs: it ends recovered or dead).
var CancellableStates = []State{StatePending, StateRunning, StateRetrying, StateExhausted, StateBlocked}

// CancelReasonPrefix starts the discard_reason of a cancelled task.
const CancelReasonPrefix = "cancelled: "

// maxCancelTries bounds the reads and fenced UPDATEs of one cancel whose
// row keeps changing between the two (a task retried very fast).
const maxCancelTries = 8

// Cancelled is what a cancel ended: the state it found, and for a running
// task the attempt it stopped and the instance that ran it.
type Cancelled struct {
	From    State
	Attempt int
	Worker  string
}

// Cancel ends task id discarded with reason (required) and records who
// cancelled it in the operator trail, in one transaction that also skips
// its dependent tasks (as a discard does) and, for a running task, writes
// the running attempt's history row with outcome cancelled. A task already
// finished (or falling back, or requeued) is refused with an error that
// matches argotype.ErrTransitionInvalid and says so; an unknown id with
// ErrNotFound.
func (s *Store) Cancel(ctx context.Context, id int64, reason, who string, now Millis) (Cancelled, error) {
	if err := checkReason("cancel reason", reason); err != nil {
		return Cancelled{}, err
	}
	if err := checkOptionalOperatorName(who); err != nil {
		return Cancelled{}, err
	}
	stored := CancelReasonPrefix + reason
	if err := CheckOperatorText("cancel reason", stored); err != nil {
		return Cancelled{}, err
	}
	for range maxCancelTries {
		t, err := s.Get(ctx, id)
		if err != nil {
			return Cancelled{}, err
		}
		if !slices.Contains(CancellableStates, t.State) || runningKeyed(t) {
			return Cancelled{}, cancelRefused(t)
		}
		var n int64
		err = s.write(ctx, func(tx *sqlx.Tx) error {
			res, err := tx.ExecContext(ctx, s.sql.Cancel, stored, now, id, t.ShardKey, t.State, t.LeaseOwner, t.ExecuteTimes)
			if err != nil {
				return err
			}
			if n, _ = res.RowsAffected(); n == 0 {
				return nil
			}
			if t.State == StateRunning && t.LeaseOwner != "" {
				// The lease's owner learns it at its next heartbeat
				// (instance_cancel.go). No transaction locks an
				// argo_instance row and then a task's: no lock cycle.
				if err := s.bumpCancelSeq(ctx, tx, t.LeaseOwner); err != nil {
					return err
				}
			}
			if t.State == StateRunning {
				// A row written leased by its submit (or whose function had not
				// started) has no start yet: its lease began at gmt_modified.
				started := t.AttemptStartedAt
				if started == 0 {
					started = min(t.GmtModified, now)
				}
				a := &Attempt{TaskPK: id, Attempt: t.ExecuteTimes, Kind: "attempt", Worker: t.LeaseOwner, StartedAt: started,
					FinishedAt: now, Outcome: argotype.OutcomeCancelled, Error: "cancelled by " + operatorName(who) + ": " + reason,
					From: StateRunning, To: StateDiscarded}
				if t.ProgressAttempt == t.ExecuteTimes && t.ProgressAt > 0 {
					// The attempt's last progress a renewal stored is kept
					// in its history, as a finish keeps it (docs/progress.md).
					a.Progress, a.ProgressNote, a.ProgressAt = t.Progress, t.ProgressNote, t.ProgressAt
				}
				if err := s.InsertAttempt(ctx, tx, a); err != nil {
					return err
				}
			}
			if err := s.settleDownstream(ctx, tx, id, StateDiscarded, now); err != nil {
				return err
			}
			return s.insertAction(ctx, tx, OperatorAction{TaskPK: id, Action: argotype.ActionCancel, Operator: who, Reason: reason, At: now})
		})
		if err != nil {
			return Cancelled{}, err
		}
		if n > 0 {
			c := Cancelled{From: t.State}
			if t.State == StateRunning {
				c.Attempt, c.Worker = t.ExecuteTimes, t.LeaseOwner
			}
			return c, nil
		}
	}
	if links, err := s.Links(ctx, id); err == nil && links.To != 0 {
		return Cancelled{}, fmt.Errorf("%w: task %d was requeued as task %d; act on that one", ErrAlreadyRequeued, id, links.To)
	}
	return Cancelled{}, fmt.Errorf("argo: task %d changed %d times while being cancelled; try again", id, maxCancelTries)
}

// cancelRefused says why t cannot be cancelled.
func cancelRefused(t *Task) error {
	te := &argotype.TransitionError{TaskID: t.ID, From: t.State, To: StateDiscarded, Code: argotype.CodeTransitionInvalid}
	switch {
	case t.State == StateFallingBack:
		return fmt.Errorf("argo: task %d cannot be cancelled: its fallback is running (it ends recovered or dead): %w", t.ID, te)
	case t.State.Terminal():
		return fmt.Errorf("argo: task %d already finished (%s): nothing to cancel: %w", t.ID, t.State, te)
	case runningKeyed(t):
		return fmt.Errorf("argo: task %d is running and holds order key %q: cancelled now, the next call of its key would start while this attempt still runs (until its instance learns of the cancel); cancel it once this attempt ends (it then waits as retrying, or has finished), or stop the work it calls: %w", t.ID, t.OrderKey.String, te)
	}
	return te
}

// runningKeyed reports whether t is a running attempt of a call with an
// order key, which a cancel refuses: the discard would pass the key on at
// its commit, while the attempt runs on until its instance learns of it
// (fault checker, SQLite seed 93329711766727: the next call of the key
// started 16 ms before the cancelled attempt ended, order-overlap).
func runningKeyed(t *Task) bool { return t.State == StateRunning && t.OrderKey.Valid }

// cancelledLease reports whether a row found in state after a renewal
// missed its lease ended by a cancel: discarded (a discard takes no row a
// function runs under; a cancel does). The caller matches the row's attempt
// number to the lease's.
func cancelledLease(state State) bool { return state == StateDiscarded }
