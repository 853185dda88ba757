package argotype

import (
	"cmp"
	"slices"
)

// TransitionKindOperator is the Kind of a Transition from the operator
// trail (the others are an attempt history row's kind: "attempt",
// "fallback").
const TransitionKindOperator = "operator"

// Transition is one recorded change of a task, in the one ordered list
// TaskTransitions makes of its attempt history and its operator trail
// (issue #26, seed 001 §6: trace id, job id, retry count, from → to;
// docs/semantics.md "The transitions of a task").
type Transition struct {
	At Millis `json:"at"` // when: the attempt's end, the operator's action
	// Attempt is the task's attempt count at that point: the attempt that
	// ended, or for an operator action the last attempt before it (0:
	// none yet). The seed's retry_count is Attempt − 1.
	Attempt int `json:"attempt"`
	// From and To are the move. On a history row they are recorded with
	// it (StateUnrecorded on rows written before migration 000024); on an
	// operator action To is the state the action leads to and From the
	// state the moves before it left the task in (the trail records the
	// action, not the states); From == To: the action moved nothing itself
	// (a cancel whose stopped attempt's row records running → discarded,
	// a run-now, a requeue into a new task, a discard request ...).
	From State `json:"from"`
	To   State `json:"to"`
	// Kind is "attempt" or "fallback" (a history row) or "operator".
	Kind string `json:"kind"`
	// What is the attempt's outcome or the operator's action.
	What string `json:"what"`
	// By is the worker (instance) or the operator.
	By string `json:"by"`
	// TraceID is, for an attempt or fallback, the trace id of the span it
	// ran in ("" when none was recorded).
	TraceID string `json:"trace_id,omitempty"`
	// OtherTask is the task a requeue created (0: none).
	OtherTask int64 `json:"other_task,omitempty"`
}

// Moved reports whether t changed the task's state itself.
func (t Transition) Moved() bool { return t.From != t.To }

// operatorTarget is the state an operator action leads a task to, and
// whether it leads anywhere (a request, a rejection, a run-now, a
// transient-fail request and a requeue into a new task leave the task's
// state as it was).
func operatorTarget(action string) (State, bool) {
	switch action {
	case ActionDiscard, ActionDiscardApprove, ActionCancel:
		return StateDiscarded, true
	case ActionForceFail:
		return StateDead, true
	}
	return StateUnrecorded, false
}

// TaskTransitions merges a task's attempt history (Inspector.Attempts,
// oldest first, the success read from the task row included) and its
// operator trail (oldest first) into one list ordered by time (history
// first at the same millisecond: a cancel's stopped attempt before the
// cancel). initial is the state the task was written in (StatePending, or
// StateBlocked for a task with upstream tasks; StateUnrecorded when not
// known): the From of an operator action taken before any recorded move.
// A requeue row of the old history (kind requeue, before migration 000005)
// is no attempt: it is listed as an operator's requeue, dead → pending.
func TaskTransitions(history []Attempt, trail []OperatorAction, initial State) []Transition {
	out := make([]Transition, 0, len(history)+len(trail))
	for _, a := range history {
		tr := Transition{At: a.FinishedAt, Attempt: a.Attempt, From: a.From, To: a.To, Kind: a.Kind, What: a.Outcome, By: a.Worker, TraceID: a.TraceID}
		if a.Kind == AttemptKindRequeue {
			tr = Transition{At: a.StartedAt, From: StateUnrecorded, To: StatePending, Kind: TransitionKindOperator, What: ActionRequeue, By: a.Worker}
		}
		out = append(out, tr)
	}
	for _, o := range trail {
		out = append(out, Transition{At: o.At, From: StateUnrecorded, To: StateUnrecorded, Kind: TransitionKindOperator, What: o.Action, By: o.Operator, OtherTask: o.OtherTask.Int64})
	}
	slices.SortStableFunc(out, func(a, b Transition) int { return cmp.Compare(a.At, b.At) })
	state, attempt := initial, 0
	for i := range out {
		tr := &out[i]
		switch {
		case tr.Kind != TransitionKindOperator: // a history row: its own move
			attempt = tr.Attempt
		case tr.To == StatePending: // an old in-place requeue: the count restarts
			tr.From, attempt = state, 0
		default:
			tr.Attempt, tr.From, tr.To = attempt, state, state
			if to, ok := operatorTarget(tr.What); ok {
				tr.To = to
			}
		}
		state = tr.To
	}
	return out
}
