package runtime

import (
	"context"
	"errors"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// RefusedTransition is the count of one kind of refused operator change:
// where it came from (Inspector.Source: argoctl, console, api), the task's
// state and the state asked for, and how many times (docs/errors.md).
type RefusedTransition = argotype.RefusedTransition

// DefaultSource is the Source of an Inspector that sets none.
const DefaultSource = "api"

// refused counts err in the database when it is a refused state change
// (a *TransitionError, or a *FinishedError of a requeue), and returns err
// unchanged. The count is one upsert of argo_refused_transition in its own
// statement, after the refusal (which wrote nothing); a count that fails
// (a database before migration 000021, say) is not reported: the
// operator's answer is the refusal, as it would be without it. The
// runtime's own refused writes are counted in process instead
// (TransitionRefusedObserver, argo_transitions_refused_total).
func (in *Inspector) refused(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var from, to State
	var te *TransitionError
	var fe *FinishedError
	switch {
	case errors.As(err, &te):
		from, to = te.From, te.To
	case errors.As(err, &fe):
		from, to = fe.State, StatePending
	default:
		return err
	}
	_ = in.store.CountRefusedTransition(ctx, in.source(), from, to)
	return err
}

// source is in.Source, DefaultSource when empty, "other" when outside
// the rule (Inspector.Source).
func (in *Inspector) source() string {
	switch {
	case in.Source == "":
		return DefaultSource
	case len(in.Source) > storage.MaxRefusalSource || CheckErrorCode(in.Source) != nil:
		return "other"
	}
	return in.Source
}

// RefusedTransitions returns the counts of refused operator changes, made
// through any process on this database (argoctl, the console, programs
// using an Inspector), ordered by source, from and to: the state machine
// refused them and nothing was written. The metrics package reports them
// as argo_operator_transitions_refused_total.
func (in *Inspector) RefusedTransitions(ctx context.Context) ([]RefusedTransition, error) {
	return in.store.RefusedTransitions(ctx)
}
