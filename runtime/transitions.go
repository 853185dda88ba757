package runtime

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/argo-retry/argo/argotype"
)

// spanTraceID is the trace id (hex) of the span an attempt or fallback
// runs in, recorded on its history row with the move its finish makes
// (issue #26; migration 000024, docs/semantics.md "The transitions of a
// task"): the trace where the callee's own spans are. "" when the span is
// not valid (the default no-op provider outside a caller's span): nothing
// is stored then.
func spanTraceID(span trace.Span) string {
	sc := span.SpanContext()
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// Transition is one recorded change of a task (argotype.Transition
// documents its fields): an attempt's or fallback's move from its history
// row, or an operator's action from the trail.
type Transition = argotype.Transition

// StateUnrecorded is the From and To of a history row written before
// migration 000024, and of a move not known.
const StateUnrecorded = argotype.StateUnrecorded

// TransitionKindOperator is the Kind of a Transition from the operator trail.
const TransitionKindOperator = argotype.TransitionKindOperator

// TaskTransitions merges a task's history and trail into one list by time
// (argotype.TaskTransitions); initial is the state it was written in
// (InitialState).
func TaskTransitions(history []Attempt, trail []OperatorAction, initial State) []Transition {
	return argotype.TaskTransitions(history, trail, initial)
}

// InitialState is the state a task with these dependencies was written
// in, as far as it is known: pending for a task with no upstream task;
// StateUnrecorded for one with upstream tasks (blocked, or pending if they
// had all finished when it was submitted).
func InitialState(deps TaskDependencies) State {
	if len(deps.Upstream) == 0 {
		return StatePending
	}
	return StateUnrecorded
}

// Transitions returns the recorded changes of task id, oldest first: its
// attempt history (each failed attempt's and fallback's move and trace id,
// the success from the task row) and its operator trail, in one list
// (docs/semantics.md "The transitions of a task").
func (in *Inspector) Transitions(ctx context.Context, id int64) ([]Transition, error) {
	history, err := in.Attempts(ctx, id)
	if err != nil {
		return nil, err
	}
	trail, err := in.Trail(ctx, id)
	if err != nil {
		return nil, err
	}
	deps, err := in.Dependencies(ctx, id)
	if err != nil {
		return nil, err
	}
	return TaskTransitions(history, trail, InitialState(deps)), nil
}
