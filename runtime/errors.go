package runtime

import (
	"errors"
	"fmt"
)

// permanentError marks an error that must not be retried.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent wraps err so that the runtime skips the remaining retries and
// goes straight to the fallback (or the dead letter). Use it for errors that
// no retry can fix: validation failures, 4xx answers, refused credentials.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or an error it wraps, was made by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// undecodableError marks stored arguments that no longer decode into the
// function's parameters (the code changed since the task was written).
type undecodableError struct{ err error }

func (e *undecodableError) Error() string { return "arguments do not decode: " + e.err.Error() }
func (e *undecodableError) Unwrap() error { return e.err }

// Undecodable wraps a decoding error from a generated handler. The runtime
// does not count it as an attempt: the task stays visible with the error and
// is tried again later (after a deploy that can decode it), never dropped.
func Undecodable(err error) error {
	if err == nil {
		return nil
	}
	return &undecodableError{err: err}
}

// IsUndecodable reports whether err was made by Undecodable.
func IsUndecodable(err error) bool {
	var u *undecodableError
	return errors.As(err, &u)
}

// ErrNotPersisted wraps every error of a submit whose row could not be
// written: the call did not happen and will not happen; the caller decides.
var ErrNotPersisted = errors.New("argo: call not persisted")

func notPersisted(name string, err error) error {
	return fmt.Errorf("%w: task %s: %w", ErrNotPersisted, name, err)
}

// ErrLeaseLost is returned by a fenced write whose lease was taken over
// (the task was rescued, requeued or discarded meanwhile). The write is refused.
var ErrLeaseLost = errors.New("argo: lease lost: the task was rescued or changed by another worker; this write is refused")

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
