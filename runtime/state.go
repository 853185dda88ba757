package runtime

import "github.com/argo-retry/argo/argotype"

// State is the lifecycle state of a task, stored as an integer in the
// task_status column of argo_task: argotype.State, where the states, their
// names and the state machine are documented.
type State = argotype.State

// The task states (see argotype.State).
const (
	StatePending     = argotype.StatePending
	StateRunning     = argotype.StateRunning
	StateRetrying    = argotype.StateRetrying
	StateSucceeded   = argotype.StateSucceeded
	StateExhausted   = argotype.StateExhausted
	StateFallingBack = argotype.StateFallingBack
	StateRecovered   = argotype.StateRecovered
	StateDead        = argotype.StateDead
	StateDiscarded   = argotype.StateDiscarded
	StateBlocked     = argotype.StateBlocked
	StateSkipped     = argotype.StateSkipped
)

// AllStates lists every state in code order (the same slice as argotype.AllStates).
var AllStates = argotype.AllStates

// ParseState maps a state name (as State.String returns it) back to its State.
func ParseState(name string) (State, error) { return argotype.ParseState(name) }

// CanTransition reports whether the state machine allows from → to.
func CanTransition(from, to State) bool { return argotype.CanTransition(from, to) }

// Transitions returns the targets allowed from s (a copy).
func Transitions(s State) []State { return argotype.Transitions(s) }

// CodeTransitionInvalid is the error code carried by a refused transition.
const CodeTransitionInvalid = argotype.CodeTransitionInvalid

// ErrTransitionInvalid matches every *TransitionError with errors.Is.
var ErrTransitionInvalid = argotype.ErrTransitionInvalid

// TransitionError is returned when a state change is not allowed by the state
// machine, or when the row was no longer in the expected state when written.
type TransitionError = argotype.TransitionError

// CheckTransition returns a *TransitionError if from → to is not allowed.
func CheckTransition(taskID int64, from, to State) error {
	return argotype.CheckTransition(taskID, from, to)
}
