package runtime

import (
	"fmt"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// Permanent wraps err so that the runtime skips the remaining retries and
// goes straight to the fallback (or the dead letter). Use it for errors that
// no retry can fix: validation failures, 4xx answers, refused credentials.
// Permanent(nil) is nil. It is argotype.Permanent.
func Permanent(err error) error { return argotype.Permanent(err) }

// IsPermanent reports whether err, or an error it wraps, was made by Permanent.
func IsPermanent(err error) bool { return argotype.IsPermanent(err) }

// Undecodable wraps a decoding error from a generated handler. The runtime
// does not count it as an attempt: the task stays visible with the error and
// is tried again later (after a deploy that can decode it), never dropped.
// Undecodable(nil) is nil. It is argotype.Undecodable.
func Undecodable(err error) error { return argotype.Undecodable(err) }

// IsUndecodable reports whether err, or an error it wraps, was made by Undecodable.
func IsUndecodable(err error) bool { return argotype.IsUndecodable(err) }

// ErrNotPersisted wraps every error of a submit whose row was not written:
// the call did not happen and will not happen; the caller decides. A submit
// returns it only when that is certain (the database refused the INSERT, or
// a write whose answer was lost was found not to have landed); see
// ErrOutcomeUnknown for the rest.
var ErrNotPersisted = argotype.ErrNotPersisted

func notPersisted(name string, err error) error { return storage.NotPersisted(name, err) }

// ErrOutcomeUnknown wraps the error of a submit whose INSERT may or may not
// have been committed, and that the runtime could not settle because the
// database stayed unreachable until the caller's deadline (and at least
// 5 s after the failure). The call may or may not happen: a caller that
// submits again may create a second task (a UniqueKey prevents that). A row
// this instance wrote leased for its first attempt keeps being looked up in
// the background for a lease's duration, and runs as its first attempt if
// it turns out to exist.
var ErrOutcomeUnknown = argotype.ErrOutcomeUnknown

func outcomeUnknown(name string, err error) error { return storage.OutcomeUnknown(name, err) }

// ErrLeaseLost is returned by a fenced write whose lease was taken over
// (the task was rescued, requeued or discarded meanwhile). The write is refused.
var ErrLeaseLost = argotype.ErrLeaseLost

// ErrCancelled is the cause (context.Cause) of the context of an attempt
// whose task an operator cancelled while it ran (Inspector.Cancel); a sync
// caller gets an *AttemptError wrapping it, WillRetry false. Its outcome is
// not written: the cancel recorded the attempt as cancelled.
var ErrCancelled = argotype.ErrCancelled

// AttemptError is what a sync wrapper returns when the attempt it ran in the
// caller's goroutine failed. The task is persisted: WillRetry says whether the
// runtime will try it again (else it went to the fallback or the dead letter).
type AttemptError struct {
	TaskID    int64
	Attempt   int
	WillRetry bool
	Err       error
}

func (e *AttemptError) Error() string {
	next := "no retry left"
	if e.WillRetry {
		next = "will retry"
	}
	return fmt.Sprintf("argo: task %d attempt %d failed (%s): %v", e.TaskID, e.Attempt, next, e.Err)
}

func (e *AttemptError) Unwrap() error { return e.Err }

// PanicError is recorded for an attempt that panicked.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

// ErrDuplicate is returned (with the existing task's id) by a submit whose
// UniqueKey was already used for the same task name.
var ErrDuplicate = argotype.ErrDuplicate

// ErrDuplicateIDUnknown wraps ErrDuplicate, returned with id 0, when the
// unique key's task exists but its id could not be read back (the
// connection broke on every read, a few tries, or ctx ended first): the
// existing task is stored and runs as submitted, nothing was written for
// this call. Submit again with the same unique key (it writes nothing) to
// get its id.
var ErrDuplicateIDUnknown = argotype.ErrDuplicateIDUnknown

// ErrNotFound is returned for a task id that is not in argo_task.
var ErrNotFound = argotype.ErrNotFound

// MaxErrorTextBytes is the most bytes argo stores of one error text
// (argo_task.error_msg and fallback_error_msg, argo_task_attempt.error_msg):
// 16 KiB (argotype.MaxErrorTextBytes says why).
const MaxErrorTextBytes = argotype.MaxErrorTextBytes
