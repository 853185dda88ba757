package storage

import (
	"context"
	"fmt"

	"github.com/argo-retry/argo/argotype"
)

// MaxErrorCode is the most bytes of an error code stored
// (argo_task.error_code, argo_task_attempt.error_code: VARCHAR(64) ASCII).
const MaxErrorCode = argotype.MaxErrorCode

// StorableErrorCode returns code if argotype.CheckErrorCode accepts it,
// and "" otherwise. The runtime never passes an invalid code (Coded and
// the runtime's Config.ErrorCode check refuse it, and the attempt's error
// text says so); this keeps a finish, which carries it, from being refused
// by a strict-mode server, which would cost the attempt's outcome.
func StorableErrorCode(code string) string {
	if code == "" || argotype.CheckErrorCode(code) != nil {
		return ""
	}
	return code
}

// finishErrorCode is the SET of the finish of an attempt that returned an
// error (its History is an attempt not succeeded): the task row keeps that
// attempt's code ("" for none), as its history row does. A finish without
// such an attempt (a success, a fallback's, a give-back) leaves the task's
// code alone: it stays the code of its last failed attempt.
func finishErrorCode(f Finishing) (string, any) {
	a := f.History
	if a == nil || a.Kind != "attempt" || a.Outcome == OutcomeSucceeded || f.UndoAttempt {
		return "", nil
	}
	return ", error_code = ?", StorableErrorCode(a.ErrorCode)
}

// RefusedTransition is the count of one kind of refused operator change
// (see argotype).
type RefusedTransition = argotype.RefusedTransition

// MaxRefusalSource is the most bytes of a refusal's source (VARCHAR(16)).
const MaxRefusalSource = 16

// CountRefusedTransition adds one to the count of refused operator
// changes from → to made through source, in its own statement (an
// upsert). source must be 1 to MaxRefusalSource bytes of
// CheckErrorCode's characters; from and to are task states.
func (s *Store) CountRefusedTransition(ctx context.Context, source string, from, to State) error {
	if len(source) > MaxRefusalSource || argotype.CheckErrorCode(source) != nil {
		return fmt.Errorf("argo: refusal source %q: 1 to %d characters of A-Z a-z 0-9 _ . - :", source, MaxRefusalSource)
	}
	if _, err := s.db.ExecContext(ctx, s.sql.CountRefusedTransition, source, from.String(), to.String()); err != nil {
		return fmt.Errorf("argo: counting a refused transition: %w", err)
	}
	return nil
}

// RefusedTransitions reads every count of refused operator changes,
// ordered by source, from and to.
func (s *Store) RefusedTransitions(ctx context.Context) ([]RefusedTransition, error) {
	var out []RefusedTransition
	if err := s.db.SelectContext(ctx, &out, s.sql.RefusedTransitions); err != nil {
		return nil, fmt.Errorf("argo: reading refused transitions: %w", err)
	}
	return out, nil
}
