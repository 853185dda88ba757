package storage

import (
	"fmt"

	"github.com/argo-retry/argo/argotype"
)

// ErrDuplicate is returned (with the existing task's id) by a submit whose
// UniqueKey was already used for the same task name; wrapped in
// ErrDuplicateIDUnknown (duplicate_id.go), with no id, when that id could
// not be read back.
var ErrDuplicate = argotype.ErrDuplicate

// ErrNotFound is returned for a task id that is not in argo_task.
var ErrNotFound = argotype.ErrNotFound

// ErrLeaseLost is returned by a fenced write whose lease was taken over
// (the task was rescued, requeued or discarded meanwhile). The write is refused.
var ErrLeaseLost = argotype.ErrLeaseLost

// ErrNotPersisted wraps every error of a submit whose row was not written:
// the call did not happen and will not happen; the caller decides. A submit
// returns it only when that is certain (the database refused the INSERT, or
// a write whose answer was lost was found not to have landed); see
// ErrOutcomeUnknown for the rest.
var ErrNotPersisted = argotype.ErrNotPersisted

// NotPersisted wraps err of the submit of task name in ErrNotPersisted.
func NotPersisted(name string, err error) error {
	return fmt.Errorf("%w: task %s: %w", ErrNotPersisted, name, err)
}

// ErrOutcomeUnknown wraps the error of a submit whose INSERT may or may not
// have been committed, and that could not be settled because the database
// stayed unreachable until the caller's deadline (and at least a few
// seconds, SubmitResolveFloor, after the failure). The call may or may not
// happen: a caller that submits again may create a second task (a UniqueKey
// prevents that). A row an instance wrote leased for its first attempt
// keeps being looked up in the background for a lease's duration, and runs
// as its first attempt if it turns out to exist.
var ErrOutcomeUnknown = argotype.ErrOutcomeUnknown

// OutcomeUnknown wraps err of the submit of task name in ErrOutcomeUnknown.
func OutcomeUnknown(name string, err error) error {
	return fmt.Errorf("%w: task %s: the database could not be reached to tell: %w", ErrOutcomeUnknown, name, err)
}
