package argotype

import (
	"errors"
	"fmt"
)

// ErrDuplicate is returned (with the existing task's id) by a submit whose
// UniqueKey was already used for the same task name.
var ErrDuplicate = errors.New("argo: a task with this name and unique key already exists")

// ErrDuplicateIDUnknown wraps ErrDuplicate, returned with id 0, when the
// unique key's task certainly exists but its id could not be read back (the
// connection broke on every read, a few tries, or the caller's context ended
// first): the existing task is stored and runs as submitted; nothing was
// written for this call. Submit again with the same name and unique key (it
// writes nothing and answers ErrDuplicate with the id) to learn its id.
var ErrDuplicateIDUnknown = fmt.Errorf("%w, but its id could not be read", ErrDuplicate)

// ErrNotFound is returned for a task id that is not in argo_task.
var ErrNotFound = errors.New("argo: no such task")

// ErrLeaseLost is returned by a fenced write whose lease was taken over
// (the task was rescued, requeued or discarded meanwhile). The write is refused.
var ErrLeaseLost = errors.New("argo: lease lost: the task was rescued or changed by another worker; this write is refused")

// ErrCancelled is the cause (context.Cause) of the context of an attempt
// whose task an operator cancelled while it ran (docs/cancel.md): its
// outcome is not written; the cancel wrote it.
var ErrCancelled = errors.New("argo: task cancelled by an operator: this attempt's outcome is not recorded")

// ErrNotPersisted wraps every error of a submit whose row was not written:
// the call did not happen and will not happen; the caller decides. A submit
// returns it only when that is certain (the database refused the INSERT, or
// a write whose answer was lost was found not to have landed); see
// ErrOutcomeUnknown for the rest.
var ErrNotPersisted = errors.New("argo: call not persisted")

// ErrOutcomeUnknown wraps the error of a submit whose INSERT may or may not
// have been committed, and that could not be settled because the database
// stayed unreachable until the caller's deadline (and at least 5 s after
// the failure). The call may or may not happen: a caller that
// submits again may create a second task (a UniqueKey prevents that). A row
// an instance wrote leased for its first attempt keeps being looked up in
// the background for a lease's duration, and runs as its first attempt if
// it turns out to exist.
var ErrOutcomeUnknown = errors.New("argo: outcome unknown: the call may or may not have been persisted")

// ErrDependency wraps every refusal of a submit's dependencies (a cycle in
// a group, an upstream task unknown, dead, discarded or skipped, an index
// out of range); nothing was written.
var ErrDependency = errors.New("argo: dependency refused")

// ErrAlreadyRequeued is returned for a task that was requeued before: its
// row stays as it was, and the task it was requeued into is the one to act on.
var ErrAlreadyRequeued = errors.New("argo: requeued already")

// ErrNoDiscardRequest is returned when approving or rejecting the discard
// of a task that has no open request.
var ErrNoDiscardRequest = errors.New("argo: no discard request awaits a decision for this task")

// ErrDiscardRequestOpen is returned when asking again for the discard of a
// task whose discard awaits a decision already.
var ErrDiscardRequestOpen = errors.New("argo: a discard request for this task awaits a decision already")

// ErrSameOperator is returned when the operator who asked for a discard
// tries to approve or reject it: a second operator must.
var ErrSameOperator = errors.New("argo: a discard request must be decided by another operator than the one who made it")

// ErrSameAccount is returned when a discard request is approved from the
// database account that made it, where approvals must come from another
// account (argoctl: each operator connects as themselves).
var ErrSameAccount = errors.New("argo: a discard request must be approved from another database account than the one that made it")

// ErrNoOperator is returned by an operator action that needs to know who
// made it and was given no name.
var ErrNoOperator = errors.New("argo: the operator's name is required (argoctl -operator NAME, or the OS user)")

// ErrOperatorName is returned for an operator name argo would not store
// and compare as given: one with white space before or after it, or one
// longer than the trail keeps (128 characters).
var ErrOperatorName = errors.New("argo: unusable operator name")
