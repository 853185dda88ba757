package argotype

import (
	"errors"
	"fmt"
)

// State is the lifecycle state of a task, stored as an integer in the
// task_status column of argo_task. Codes 0–3 keep the meaning of the Java
// Argo starter's task_status (0 init, 1 start, 2 fail, 3 success) so that
// rows and dashboards carry over; 4–8 are argo's additions.
//
// The seed task-system spec (queued, running, retrying, succeeded,
// dlq_pending, dlq_recorded, failed) maps as the state table in docs/semantics.md says:
// queued=pending, dlq_pending=exhausted/falling_back, and dlq_recorded
// followed by failed collapse into dead, because the task row itself, with
// its attempt history, is the dead-letter record.
type State int

const (
	// StatePending: persisted, waiting for its first attempt (Argo 0 init, seed queued).
	StatePending State = 0
	// StateRunning: an attempt holds a lease on the row (Argo 1 start, seed running).
	StateRunning State = 1
	// StateRetrying: the last attempt failed; the next is due at execute_time (Argo 2 fail, seed retrying).
	StateRetrying State = 2
	// StateSucceeded: an attempt succeeded. Terminal (Argo 3 success, seed succeeded).
	StateSucceeded State = 3
	// StateExhausted: no attempts left; the fallback (or the dead-letter write) is due (seed dlq_pending).
	StateExhausted State = 4
	// StateFallingBack: the fallback runs under a lease (seed dlq_pending).
	StateFallingBack State = 5
	// StateRecovered: attempts were exhausted and the fallback succeeded. Terminal.
	StateRecovered State = 6
	// StateDead: attempts were exhausted and there is no fallback or it failed: the dead letter
	// (seed dlq_recorded then failed). Stays visible; an operator may requeue or discard it.
	StateDead State = 7
	// StateDiscarded: an operator discarded or cancelled the task with a reason
	// (a cancel ends a running task too: docs/cancel.md). May be requeued.
	StateDiscarded State = 8
	// StateBlocked: waits for the tasks it depends on (argo_task_dep); not
	// claimable (no due_at, outside every claim's state set). It becomes
	// pending in the transaction in which its last upstream task succeeds or
	// recovers, or skipped in the one in which an upstream ends dead or discarded.
	StateBlocked State = 9
	// StateSkipped: an upstream task (directly or transitively) ended dead or
	// discarded, so this task never ran; error_msg names the upstream task. Terminal.
	StateSkipped State = 10
)

// StateUnrecorded is no state: the from and to of an attempt history row
// written before its move was recorded (migration 000024). It is never a
// task's state.
const StateUnrecorded State = -1

var stateNames = [...]string{"pending", "running", "retrying", "succeeded", "exhausted", "falling_back", "recovered", "dead", "discarded", "blocked", "skipped"}

// AllStates lists every state in code order.
var AllStates = []State{StatePending, StateRunning, StateRetrying, StateSucceeded, StateExhausted, StateFallingBack, StateRecovered, StateDead, StateDiscarded, StateBlocked, StateSkipped}

// String returns the state's lower-case name, as argoctl and the metrics show it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// ParseState maps a state name (as String returns it) back to its State.
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("unknown task state %q (want one of %v)", name, stateNames)
}

// Terminal reports whether no worker will touch a task in this state again.
// Dead and discarded tasks are terminal too; only an operator requeue moves them.
func (s State) Terminal() bool {
	switch s {
	case StateSucceeded, StateRecovered, StateDead, StateDiscarded, StateSkipped:
		return true
	}
	return false
}

// Leased reports whether a task in this state is held by a worker's lease.
func (s State) Leased() bool { return s == StateRunning || s == StateFallingBack }

// transitions is the whole state machine: from → allowed targets.
// Every state write in the store names its expected from-state in its WHERE
// clause, so the database enforces this table too, not only this process.
var transitions = map[State][]State{
	StatePending:     {StateRunning, StateDiscarded, StateDead},                                     // → dead: an operator's force-fail
	StateRunning:     {StateSucceeded, StateRetrying, StateExhausted, StatePending, StateDiscarded}, // → discarded: an operator's cancel
	StateRetrying:    {StateRunning, StateDiscarded, StateDead},                                     // → dead: an operator's force-fail
	StateExhausted:   {StateFallingBack, StateDiscarded, StateDead},                                 // → dead: force-fail (no fallback run)
	StateFallingBack: {StateRecovered, StateDead, StateExhausted},
	StateSucceeded:   nil,
	StateRecovered:   nil,
	StateDead:        {StatePending, StateDiscarded},
	StateDiscarded:   {StatePending},
	StateBlocked:     {StatePending, StateSkipped, StateDiscarded, StateDead}, // released, skipped by the cascade, discarded, or force-failed
	StateSkipped:     {StateBlocked},                                          // its upstream task requeued as a new task
}

// CanTransition reports whether the state machine allows from → to.
func CanTransition(from, to State) bool {
	for _, t := range transitions[from] {
		if t == to {
			return true
		}
	}
	return false
}

// Transitions returns the targets allowed from s (a copy).
func Transitions(s State) []State { return append([]State(nil), transitions[s]...) }

// CodeTransitionInvalid is the error code carried by a refused transition.
const CodeTransitionInvalid = "WF_STATE_TRANSITION_INVALID"

// ErrTransitionInvalid matches every *TransitionError with errors.Is.
var ErrTransitionInvalid = errors.New(CodeTransitionInvalid)

// TransitionError is returned when a state change is not allowed by the state
// machine, or when the row was no longer in the expected state when written.
type TransitionError struct {
	TaskID int64
	From   State
	To     State
	Code   string // always CodeTransitionInvalid
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("%s: task %d cannot go from %s to %s (allowed from %s: %v)", e.Code, e.TaskID, e.From, e.To, e.From, transitions[e.From])
}

// Is makes errors.Is(err, ErrTransitionInvalid) true.
func (e *TransitionError) Is(target error) bool { return target == ErrTransitionInvalid }

// CheckTransition returns a *TransitionError if from → to is not allowed.
func CheckTransition(taskID int64, from, to State) error {
	if CanTransition(from, to) {
		return nil
	}
	return &TransitionError{TaskID: taskID, From: from, To: to, Code: CodeTransitionInvalid}
}
