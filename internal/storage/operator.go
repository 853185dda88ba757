package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/argo-retry/argo/argotype"
)

// The actions of the operator trail (see argotype).
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

// The decisions of a discard request (argo_discard_request.decision).
const (
	DecisionApproved = "approved"
	DecisionRejected = "rejected"
)

// The records of the operator trail and of discard requests (see argotype).
type (
	OperatorAction = argotype.OperatorAction
	DiscardRequest = argotype.DiscardRequest
)

// ErrNoDiscardRequest is returned when approving or rejecting the discard
// of a task that has no open request.
var ErrNoDiscardRequest = argotype.ErrNoDiscardRequest

// ErrDiscardRequestOpen is returned when asking again for the discard of a
// task whose discard awaits a decision already.
var ErrDiscardRequestOpen = argotype.ErrDiscardRequestOpen

// ErrSameOperator is returned when the operator who asked for a discard
// tries to approve or reject it: a second operator must.
var ErrSameOperator = argotype.ErrSameOperator

// ErrSameAccount is returned when a discard request is approved from the
// database account that made it, where that is refused (DecideDiscard).
var ErrSameAccount = argotype.ErrSameAccount

// ErrNoOperator is returned by an operator action that needs to know who
// made it and was given no name.
var ErrNoOperator = argotype.ErrNoOperator

// insertAction writes one record of the operator trail through ex.
func (s *Store) insertAction(ctx context.Context, ex Execer, a OperatorAction) error {
	_, err := ex.ExecContext(ctx, s.sql.InsertOperatorAction, a.TaskPK, a.Action, operatorName(a.Operator), SanitizeErrorText(a.Reason), a.At, a.OtherTask)
	return err
}

// OperatorActions reads the operator trail of task id, oldest first.
func (s *Store) OperatorActions(ctx context.Context, id int64) ([]OperatorAction, error) {
	var out []OperatorAction
	if err := s.db.SelectContext(ctx, &out, s.sql.OperatorActions, id); err != nil {
		return nil, fmt.Errorf("argo: operator trail of task %d: %w", id, err)
	}
	return out, nil
}

// DiscardRequests reads the discard requests of task id, oldest first.
func (s *Store) DiscardRequests(ctx context.Context, id int64) ([]DiscardRequest, error) {
	var out []DiscardRequest
	if err := s.db.SelectContext(ctx, &out, s.sql.DiscardRequests, id); err != nil {
		return nil, fmt.Errorf("argo: discard requests of task %d: %w", id, err)
	}
	return out, nil
}

// checkReason refuses an empty reason or one argo cannot store unaltered.
func checkReason(what, reason string) error {
	if strings.TrimSpace(reason) == "" {
		return fmt.Errorf("argo: %s is required (it is recorded in the operator trail)", what)
	}
	return CheckOperatorText(what, reason)
}

// DiscardRecorded ends a pending, retrying, exhausted or dead task (not
// requeued) with a reason, and records who did it in the operator trail, in
// one transaction. It is the discard without review.
func (s *Store) DiscardRecorded(ctx context.Context, id int64, reason, who string, now Millis) error {
	if err := checkReason("discard reason", reason); err != nil {
		return err
	}
	if err := checkOptionalOperatorName(who); err != nil {
		return err
	}
	var n int64
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, s.sql.Discard, reason, now, id)
		if err != nil {
			return err
		}
		if n, _ = res.RowsAffected(); n == 0 {
			return nil
		}
		if err := s.settleDownstream(ctx, tx, id, StateDiscarded, now); err != nil {
			return err
		}
		return s.insertAction(ctx, tx, OperatorAction{TaskPK: id, Action: ActionDiscard, Operator: who, Reason: reason, At: now})
	})
	if err != nil || n > 0 {
		return err
	}
	return s.discardRefused(ctx, id)
}

// RequestDiscard opens a discard request for a pending, retrying, exhausted
// or dead task (not requeued) and records it in the trail; the task is not
// touched until another operator approves (DecideDiscard). A task with an
// open request is refused with ErrDiscardRequestOpen. It returns the
// request's id.
func (s *Store) RequestDiscard(ctx context.Context, id int64, reason, who string, now Millis) (int64, error) {
	if err := checkReason("discard reason", reason); err != nil {
		return 0, err
	}
	if err := checkOperatorName(who); err != nil {
		return 0, err
	}
	var reqID, n int64
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, s.sql.InsertDiscardRequest, who, reason, now, id)
		if err != nil {
			if s.d.IsDuplicate(err) {
				return fmt.Errorf("%w: task %d (approve or reject it first)", ErrDiscardRequestOpen, id)
			}
			return err
		}
		if n, _ = res.RowsAffected(); n == 0 {
			return nil
		}
		if reqID, err = res.LastInsertId(); err != nil {
			return err
		}
		return s.insertAction(ctx, tx, OperatorAction{TaskPK: id, Action: ActionDiscardRequest, Operator: who, Reason: reason, At: now})
	})
	if err != nil || n > 0 {
		return reqID, err
	}
	return 0, s.discardRefused(ctx, id)
}

// discardRefused says why task id cannot be discarded.
func (s *Store) discardRefused(ctx context.Context, id int64) error {
	links, err := s.Links(ctx, id)
	if err != nil {
		return err
	}
	if links.To != 0 {
		return fmt.Errorf("%w: task %d was requeued as task %d; act on that one", ErrAlreadyRequeued, id, links.To)
	}
	t, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if !slices.Contains(DiscardableStates, t.State) {
		// Not the state machine's table: running → discarded is a cancel's
		// move (cancel.go), never a discard's.
		te := &argotype.TransitionError{TaskID: id, From: t.State, To: StateDiscarded, Code: argotype.CodeTransitionInvalid}
		if t.State == StateRunning {
			return fmt.Errorf("%w; a discard waits for the running attempt to end: cancel the task to stop it (argoctl cancel)", te)
		}
		return te
	}
	return fmt.Errorf("argo: task %d changed state meanwhile (now %s); try again", id, t.State)
}

// DecideDiscard approves or rejects the open discard request of task id,
// as operator who, who must not be the one who made the request
// (ErrSameOperator). With distinctAccounts, an approval from the database
// account that made the request (MySQL's CURRENT_USER(); SQLite has none)
// is refused too (ErrSameAccount); a rejection is not. An approval
// discards the task with the request's reason in the same transaction; if
// the task can no longer be discarded (it ran meanwhile), nothing changes
// and the request stays open (reject it). Either decision is recorded in
// the trail with its reason (optional).
func (s *Store) DecideDiscard(ctx context.Context, id int64, approve bool, reason, who string, now Millis, distinctAccounts bool) error {
	if err := CheckOperatorText("decision reason", reason); err != nil {
		return err
	}
	if err := checkOperatorName(who); err != nil {
		return err
	}
	decision, action := DecisionRejected, ActionDiscardReject
	if approve {
		decision, action = DecisionApproved, ActionDiscardApprove
	}
	var discarded int64 = 1
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		discarded = 1
		var req struct {
			DiscardRequest
			Current string `db:"current_account"` // the account this transaction runs as
		}
		if err := tx.GetContext(ctx, &req, s.sql.OpenDiscardRequest, id); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: task %d", ErrNoDiscardRequest, id)
			}
			return err
		}
		// Operator names are compared byte for byte (operator_name.go),
		// here and in the statement, which compares them as bytes on every
		// engine (not by a collation that ignores case or trailing spaces):
		// the requester, as read, can never decide. The statement is the
		// guard that the request is still open.
		if req.RequestedBy == who {
			return fmt.Errorf("%w: the discard of task %d was requested by %s", ErrSameOperator, id, who)
		}
		// Two people, by the server's account too (docs/operations.md): a
		// name is what the operator's tool says; the account is what the
		// server authenticated. The request's row is locked (or, on SQLite,
		// the file), so it cannot change before the statement.
		if approve && distinctAccounts && req.RequestedAccount != "" && req.RequestedAccount == req.Current {
			return fmt.Errorf("%w: the discard of task %d was requested from account %s, and this approval comes from it too: approve it connected as another account (a second person's own)",
				ErrSameAccount, id, req.Current)
		}
		res, err := tx.ExecContext(ctx, s.sql.DecideDiscardRequest, decision, who, now, SanitizeErrorText(reason), req.ID, who)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: task %d (decided meanwhile)", ErrNoDiscardRequest, id)
		}
		if approve {
			res, err := tx.ExecContext(ctx, s.sql.Discard, req.Reason, now, id)
			if err != nil {
				return err
			}
			if discarded, _ = res.RowsAffected(); discarded == 0 {
				return errDiscardRaced
			}
			if err := s.settleDownstream(ctx, tx, id, StateDiscarded, now); err != nil {
				return err
			}
		}
		return s.insertAction(ctx, tx, OperatorAction{TaskPK: id, Action: action, Operator: who, Reason: reason, At: now})
	})
	if errors.Is(err, errDiscardRaced) {
		return s.discardRefused(ctx, id)
	}
	return err
}

// errDiscardRaced rolls back an approval whose task can no longer be discarded.
var errDiscardRaced = errors.New("argo: discard raced")

// ForceFailableStates may be force-failed by an operator: every state that
// is neither final nor held by a worker's lease (pending, blocked, retrying,
// exhausted). A running or falling_back task is refused: its worker holds
// the lease and will write its outcome.
var ForceFailableStates = []State{StatePending, StateBlocked, StateRetrying, StateExhausted}

// ForceFail sends a task in ForceFailableStates to the dead letter now
// (seed 001's force_fail), unleased (a held retry's or scheduled call's
// hold ends with it), without running its fallback, skipping its
// dependent tasks, and records who and why in the trail. Any other state is
// refused with a TransitionError.
func (s *Store) ForceFail(ctx context.Context, id int64, reason, who string, now Millis) error {
	if err := checkReason("force-fail reason", reason); err != nil {
		return err
	}
	if err := checkOptionalOperatorName(who); err != nil {
		return err
	}
	var n int64
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, s.sql.ForceFail, now, id)
		if err != nil {
			return err
		}
		if n, _ = res.RowsAffected(); n == 0 {
			return nil
		}
		if err := s.settleDownstream(ctx, tx, id, StateDead, now); err != nil {
			return err
		}
		return s.insertAction(ctx, tx, OperatorAction{TaskPK: id, Action: ActionForceFail, Operator: who, Reason: reason, At: now})
	})
	if err != nil || n > 0 {
		return err
	}
	t, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if !slices.Contains(ForceFailableStates, t.State) {
		return &argotype.TransitionError{TaskID: id, From: t.State, To: StateDead, Code: argotype.CodeTransitionInvalid}
	}
	return fmt.Errorf("argo: task %d changed meanwhile; try again", id)
}

// RunNow makes a pending or retrying task due now (a held retry is given
// back to the claim), and records who and why (optional) in the trail. Any
// other state is refused with a TransitionError (to running: the move it
// asks for).
func (s *Store) RunNow(ctx context.Context, id int64, reason, who string, now Millis) error {
	if err := CheckOperatorText("run reason", reason); err != nil {
		return err
	}
	if err := checkOptionalOperatorName(who); err != nil {
		return err
	}
	var n int64
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, s.sql.RunNow, now, id)
		if err != nil {
			return err
		}
		if n, _ = res.RowsAffected(); n == 0 {
			return nil
		}
		return s.insertAction(ctx, tx, OperatorAction{TaskPK: id, Action: ActionRunNow, Operator: who, Reason: reason, At: now})
	})
	if err != nil || n > 0 {
		return err
	}
	t, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	return &argotype.TransitionError{TaskID: id, From: t.State, To: StateRunning, Code: argotype.CodeTransitionInvalid}
}

// CountDeadLetters returns how many dead tasks await an operator: dead rows
// not requeued (a requeued row stays dead, beside its new task).
func (s *Store) CountDeadLetters(ctx context.Context) (int, error) {
	var n int
	if err := s.db.GetContext(ctx, &n, s.sql.CountDeadLetters); err != nil {
		return 0, fmt.Errorf("argo: count dead letters: %w", err)
	}
	return n, nil
}
